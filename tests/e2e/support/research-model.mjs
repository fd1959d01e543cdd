// A scripted model for research mode, for ScriptedOpenAI's `respondWith`: it answers each
// Chat Completions request by what the request is (the JS twin of src/testing/research.rs's
// `ResearchScript::reply`), so a call redone after the worker was stopped gets the same
// reply. Replies are assistant messages in the Chat Completions format
// (https://platform.openai.com/docs/api-reference/chat/object); openai-server.mjs sends them
// as JSON or SSE, as the request asked.
//
// - planning (response_format json_schema "subtopics"): `{"subtopics": [...]}` with a
//   duplicate and one too many (the engine keeps the first distinct ones it asked for);
// - subtopic k (tools offered): a web search, then a page query, then its findings, citing
//   the relevant web result and the first page passage exactly as the tools listed them;
// - the report (no tools, no schema): one "## " section per subtopic with its findings, and a
//   "## Synthesis" with a made-up citation [7] and an unsupported sentence citing [9];
// - the review (json_schema "review"): a fix that removes the unsupported sentence;
// - grading: a result whose title names a hotel is not relevant; a rewrite is unexpected.
// Anything else is answered with a 500 naming it, so an unexpected call fails the test.
// `hold(key)` holds the next request of `key` back until the test releases it.

/** The subtopics the planning call names (a duplicate, and more than a test asks for). */
export const SUBTOPICS = ['The keepers', 'The keepers', 'The salt', 'Automation'];
/** The web results per subtopic search: one relevant, one not. */
export const RESULTS = {
  1: [
    { title: 'Bellhaven Harbour Hotel', url: 'https://hotel.example/bellhaven', content: 'Rooms with a sea view.' },
    { title: 'Keepers of Bellhaven Light', url: 'https://history.example/keepers', content: 'Agnes Tull kept the light from 1902 to 1931.' },
  ],
  2: [
    { title: 'Salt Flats Hotel', url: 'https://hotel.example/salt', content: 'A hotel by the salt flats.' },
    { title: 'Salt and lantern glass', url: 'https://glass.example/salt', content: 'Salt clouds lantern glass within hours of a storm.' },
  ],
};
/** What each subtopic finds. */
const FACTS = {
  1: 'Agnes Tull kept Bellhaven Light from 1902 to 1931',
  2: 'Salt clouded the lantern glass within hours of a storm',
};
/** The sentence of the report no finding supports (the review removes it). */
export const UNSUPPORTED = 'The light was made of cheese [9].';
/** The query subtopic `n` searches. */
export const queryOf = (n) => `bellhaven ${n === 1 ? 'keepers' : 'salt'}`;

const systemOf = (body) => String(body?.messages?.[0]?.role === 'system' ? body.messages[0].content : '');
/** The user message that opened the request's context. */
export const openingOf = (body) => String(body?.messages?.find((m) => m.role === 'user')?.content ?? '');
const toolResults = (body) => (body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content ?? ''));

/** What a request is: {kind, n?, round?} (kind: plan, subtopic, report, review, grade, rewrite, other). */
export function classify(body) {
  const system = systemOf(body);
  if (system.startsWith('You grade web search results')) return { kind: 'grade' };
  if (system.startsWith('You rewrite web search queries')) return { kind: 'rewrite' };
  const schema = body?.response_format?.json_schema?.name ?? null;
  if (schema === 'subtopics') return { kind: 'plan' };
  if (schema === 'review') return { kind: 'review' };
  if (schema) return { kind: 'other', schema };
  const n = Number(/Research subtopic (\d+) of \d+/.exec(openingOf(body))?.[1]);
  if (body?.tools?.length) return Number.isInteger(n) && n > 0 ? { kind: 'subtopic', n, round: toolResults(body).length } : { kind: 'other' };
  return { kind: 'report' };
}

/** The key of a request, as `hold` and the counts name it: 'plan', 'subtopic 1/0', ... */
export const keyOf = ({ kind, n, round }) => (kind === 'subtopic' ? `subtopic ${n}/${round}` : kind);

/** The results a grading request lists ("[n] Title" lines). */
function graded(body) {
  const text = String(body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  return [...text.matchAll(/^\[(\d+)\] (.+)$/gm)].map(([, n, title]) => ({ n: Number(n), title }));
}

const unexpected = (what) => ({ status: 500, body: { error: { message: `research model: unexpected ${what}`, type: 'server_error' } } });

/** Subtopic `n`'s findings from its tool results: the relevant web result's and the first passage's citations. */
function findings(n, body) {
  const results = toolResults(body);
  const title = RESULTS[n][1].title;
  const web = results.map((r) => new RegExp(`^\\[(\\d+)\\] ${title} — `, 'm').exec(r)?.[1]).find(Boolean);
  const passage = results.map((r) => /\[p(\d+)\]/.exec(r)?.[1]).find(Boolean);
  const cites = [web ? `[${web}]` : '', passage ? `[p${passage}]` : ''].filter(Boolean).join(' ');
  return `Finding ${n}: ${FACTS[n]} ${cites}.`;
}

/** The reply to `body` (what `classify` says it is). */
export function reply(body) {
  const what = classify(body);
  const opening = openingOf(body);
  switch (what.kind) {
    case 'plan':
      if (!opening.includes('Split the question')) return unexpected(`planning request: ${opening.slice(-200)}`);
      return { content: JSON.stringify({ subtopics: SUBTOPICS }) };
    case 'grade': {
      const grades = graded(body).map(({ n, title }) => {
        const relevant = !title.includes('Hotel');
        return { index: n, relevant, confidence: 0.9, reason: relevant ? 'about the light' : 'a hotel, not the light' };
      });
      return { content: JSON.stringify({ grades }) };
    }
    case 'subtopic': {
      const { n, round } = what;
      if (!RESULTS[n]) return unexpected(`subtopic ${n}`);
      if (round === 0) {
        return { content: `Searching for subtopic ${n}.`, tool_calls: [{ id: `s${n}_0`, name: 'search_web_for_info', arguments: { query: queryOf(n) } }] };
      }
      if (round === 1) {
        return { content: `Reading the page for subtopic ${n}.`, tool_calls: [{ id: `s${n}_1`, name: 'query_page', arguments: { query: FACTS[n] } }] };
      }
      return { content: findings(n, body) };
    }
    case 'report': {
      if (!opening.includes('Write the report')) return unexpected(`call without tools: ${opening.slice(-200)}`);
      const found = [1, 2].map((n) => new RegExp(`Finding ${n}: [^\\n]*`).exec(opening)?.[0] ?? `Nothing found for subtopic ${n}.`);
      const web = [...found.join(' ').matchAll(/\[(\d+)\]/g)].map((m) => m[0]);
      return {
        content: `## The keepers\n${found[0]}\n\n## The salt\n${found[1]}\n\n## Synthesis\n`
          + `The keepers fought the salt on the lantern glass ${web.join(' ')} [7]. ${UNSUPPORTED}`,
      };
    }
    case 'review':
      return { content: JSON.stringify({ fixes: [{ find: UNSUPPORTED, replace: '' }] }) };
    default:
      return unexpected(`${what.kind} request${what.schema ? ` (schema ${what.schema})` : ''}`);
  }
}

/**
 * A research model to pass to `respondWith`: `counts` (requests by key), `hold(key)` (holds
 * the next request of `key` back: a handle whose `arrived` turns true when it came, and whose
 * `release()` lets its reply go), `log` (keys in arrival order).
 */
export function researchModel() {
  const counts = new Map();
  const log = [];
  const holds = new Map();
  const respond = async (body, record) => {
    const key = keyOf(classify(body));
    record.key = key;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    log.push(key);
    const answer = reply(body);
    const hold = holds.get(key);
    if (hold) {
      holds.delete(key);
      await new Promise((release) => {
        hold.release = release;
        hold.arrived = true;
      });
    }
    return answer;
  };
  return {
    respond,
    counts,
    log,
    /** How many requests of `key` arrived. */
    count: (key) => counts.get(key) ?? 0,
    hold(key) {
      const hold = { arrived: false, release: () => {} };
      holds.set(key, hold);
      return hold;
    },
    /** Forgets the counts (a new test). */
    reset() {
      counts.clear();
      log.length = 0;
    },
  };
}
