// The quality benchmark's runner for one model: asks every item of questions.json through the
// built extension in Chromium the way a user does (Question + Ask; Selected text + Explain
// selection), then the same question in one request the way a "chat with page" extension
// does (the baseline), both against the local model server at KL_BASE_URL, and scores both.
// pkg-scripts/bench-quality.sh starts the server and calls this once per model; see
// bench/quality/README.md for the scoring.
//
//   node bench/quality/run.mjs --pages DIR --out FILE --server-log FILE
//       [--limit N] [--only ID,ID] [--label NAME] [--model-file PATH] [--model-sha256 HEX] [--dist DIR]
//       [--update EARLIER.json]   (the rows of the items run replace theirs in EARLIER's report)
//       [--follow-up]   (instead: each page's questions asked one after the other in one
//                        conversation, and each follow-up's time to first token against the
//                        baseline's request for it; see followUps)
//
// Environment: KL_BASE_URL (…/v1) and KL_MODEL, as pkg-scripts/run.sh sets them.

import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import {
  configureProvider,
  launchExtension,
  openPopup,
  tabIdOf,
  waitUntil,
} from '../../tests/e2e/support/browser.mjs';
import { askQuestion, readPopup, requestBackend, waitForRunEnd } from '../../tests/e2e/support/popup.mjs';
import { serveDirectory } from '../../tests/e2e/support/static-server.mjs';
import { normalise } from './validate.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The phrase both prompts would need for "the page does not say" (the baseline's asks for it). */
export const ABSTAIN_PHRASE = 'The page does not say.';
/** The one fixed system line of the baseline. */
export const BASELINE_SYSTEM = `Answer the user's question using the web page below. If the page does not say, answer exactly: ${ABSTAIN_PHRASE}`;
/** What the benchmark's reader replies when the agent asks them a question (request_input). */
export const USER_REPLY = 'Please answer from the page.';
/** Shortest run of a request's own text that counts as an echo when an answer repeats it. */
export const ECHO_CHARS = 24;
const RUN_TIMEOUT_MS = 20 * 60_000;

// ---- scoring --------------------------------------------------------------------------------

/** Whether `answer` holds one of `spans` as whole words, case and punctuation aside. */
export function holdsSpan(answer, spans) {
  const a = ` ${normalise(answer)} `;
  return spans.some((s) => a.includes(` ${normalise(s)} `));
}

/** Whether `answer` says the page does not say, in the phrase the prompt names. */
export function abstains(answer) {
  return ` ${normalise(answer)} `.includes(` ${normalise(ABSTAIN_PHRASE).replace(/^the /, '')} `);
}

/**
 * The request's own words: every system and user message with the page's fenced blocks, the
 * user's question and selection taken out (those are the user's and the page's words, not
 * ours). Tool results are page data and are left out.
 */
export function ownText(messages, { userWords = [], pageText = '' } = {}) {
  const text = (c) => (typeof c === 'string' ? c : Array.isArray(c) ? c.map((p) => p?.text ?? '').join('') : '');
  let own = messages
    .filter((m) => m.role === 'system' || m.role === 'user')
    .map((m) => text(m.content).replace(/<(page-[A-Za-z0-9_-]+)>[\s\S]*?<\/\1>/g, '\n'))
    .join('\n');
  for (const words of [...userWords, pageText]) {
    if (words) own = own.split(words).join('\n');
  }
  return own;
}

/** The first run of `ECHO_CHARS` or more characters of `own` that `answer` repeats, or null. */
export function echoIn(answer, own) {
  const squash = (s) => s.replace(/\s+/g, ' ');
  const a = squash(answer);
  const o = squash(own);
  const seen = new Set();
  for (let i = 0; i + ECHO_CHARS <= o.length; i++) seen.add(o.slice(i, i + ECHO_CHARS));
  for (let i = 0; i + ECHO_CHARS <= a.length; i++) {
    const piece = a.slice(i, i + ECHO_CHARS);
    if (seen.has(piece) && piece.trim().length === ECHO_CHARS) return piece;
  }
  return null;
}

/** Scores one answer to `item`. */
export function score(item, answer, own) {
  const echo = echoIn(answer, own);
  if (item.kind === 'explain') {
    const hits = item.key_facts.filter((alts) => holdsSpan(answer, alts)).length;
    return { facts: hits, facts_total: item.key_facts.length, echo };
  }
  if (item.answerable) return { correct: holdsSpan(answer, item.answers), echo };
  return { abstained: abstains(answer), echo };
}

const median = (xs) => quantile(xs, 0.5);
function quantile(xs, q) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
}

/** The summary of one system's results (ours or the baseline). */
export function summarise(rows) {
  const q = rows.filter((r) => r.kind === 'question');
  const answerable = q.filter((r) => r.answerable);
  const unanswerable = q.filter((r) => !r.answerable);
  const past = answerable.filter((r) => r.past_excerpt);
  const within = answerable.filter((r) => !r.past_excerpt);
  const explain = rows.filter((r) => r.kind === 'explain');
  const share = (n, d) => (d ? Math.round((n / d) * 1000) / 1000 : null);
  return {
    answered: rows.filter((r) => r.ok).length,
    items: rows.length,
    answerable: answerable.length,
    correct: answerable.filter((r) => r.correct).length,
    accuracy: share(answerable.filter((r) => r.correct).length, answerable.length),
    // The target of a question answered within the first excerpt: one model call, and
    // prompt tokens near the baseline's.
    within_excerpt: {
      n: within.length,
      correct: within.filter((r) => r.correct).length,
      model_calls_mean: share(within.reduce((s, r) => s + (r.model_calls ?? 0), 0), within.length),
      prompt_tokens_median: median(within.map((r) => r.prompt_tokens)),
    },
    answer_in_first_request: answerable.filter((r) => r.answer_in_first_request).length,
    past_excerpt: { n: past.length, correct: past.filter((r) => r.correct).length },
    unanswerable: unanswerable.length,
    abstained: unanswerable.filter((r) => r.abstained).length,
    abstain_share: share(unanswerable.filter((r) => r.abstained).length, unanswerable.length),
    explain: explain.length,
    explain_facts: share(explain.reduce((s, r) => s + (r.facts ?? 0), 0), explain.reduce((s, r) => s + r.facts_total, 0)),
    echoes: rows.filter((r) => r.echo).length,
    model_calls_mean: share(rows.reduce((s, r) => s + (r.model_calls ?? 0), 0), rows.length),
    prompt_tokens_median: median(rows.map((r) => r.prompt_tokens)),
    first_request_tokens_median: median(rows.map((r) => r.first_request_tokens)),
    first_token_s: { median: median(rows.map((r) => r.first_token_s)), p90: quantile(rows.map((r) => r.first_token_s), 0.9) },
    seconds: { median: median(rows.map((r) => r.seconds)), p90: quantile(rows.map((r) => r.seconds), 0.9) },
  };
}

// ---- the server's request log ----------------------------------------------------------------

function readLog(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Requests the server finished that started at or after `from` (epoch ms). */
const requestsSince = (path, from) => readLog(path).filter((r) => r.started_at >= from - 50);

// ---- the page -------------------------------------------------------------------------------

/**
 * Shows the page as its readers see it once its scripts ran: a saved page may keep an
 * "anti-flicker" style that hides the whole body until a script from its site removes it
 * (seattletimes-1: ChartBeat's `body { visibility: hidden !important; }`), and no script
 * from the web runs here. Returns how many such styles were removed.
 */
function unhide(page) {
  return page.evaluate(() => {
    let removed = 0;
    for (const style of document.querySelectorAll('style')) {
      if (/(^|[}\s])(html|body)\s*\{[^}]*(visibility\s*:\s*hidden|display\s*:\s*none|opacity\s*:\s*0)/i.test(style.textContent)) {
        style.remove();
        removed += 1;
      }
    }
    return removed;
  });
}

/** Selects `sentence` in the page (whitespace aside, across elements); returns the selected text. */
function selectSentence(page, sentence) {
  return page.evaluate((wanted) => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement?.closest('script, style, noscript, template') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    let flat = '';
    const map = [];
    let lastSpace = true;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const t = node.nodeValue;
      for (let i = 0; i < t.length; i++) {
        const space = /\s/.test(t[i]);
        if (space && lastSpace) continue;
        flat += space ? ' ' : t[i];
        map.push([node, i]);
        lastSpace = space;
      }
    }
    const want = wanted.replace(/\s+/g, ' ').trim();
    const at = flat.indexOf(want);
    if (at < 0) return null;
    const [startNode, startOffset] = map[at];
    const [endNode, endOffset] = map[at + want.length - 1];
    const range = document.createRange();
    range.setStart(startNode, startOffset);
    range.setEnd(endNode, endOffset + 1);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    return getSelection().toString();
  }, sentence);
}

/** The run's stored records: the page text and the run's page excerpt size. */
async function storedRun(popup, session, run) {
  const all = await popup.evaluate(() => chrome.storage.session.get(null));
  const parse = (v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  };
  // The page record is the page's text (docs/architecture.md, "Persistence"); the head has its title.
  const page = parse(all[`page:${session}:${run}`]);
  const head = parse(all[`session:${session}`]);
  const state = head?.state ?? head;
  return {
    text: typeof page === 'string' ? page : page?.text ?? '',
    title: state?.page?.title ?? page?.title ?? '',
    excerptChars: state?.config?.page_excerpt_chars,
    maxTokens: state?.config?.max_output_tokens,
  };
}

// ---- ours -----------------------------------------------------------------------------------

async function askOurs(kl, site, item, serverLog) {
  const page = await kl.context.newPage();
  try {
    await page.goto(site.url(`${item.pageFile}`), { waitUntil: 'domcontentloaded' });
    await unhide(page);
    const tabId = await tabIdOf(kl.context, page);
    const session = `tab:${tabId}`;
    let userWords = [];
    if (item.kind === 'explain') {
      const selected = await selectSentence(page, item.selection);
      if (!selected) throw new Error(`the selection is not on the page: ${item.selection}`);
      userWords = [selected.trim(), item.selection];
    }
    const popup = await openPopup(kl.context, kl.extId, tabId);
    const started = Date.now();
    if (item.kind === 'explain') {
      await waitUntil(() => popup.evaluate(() => document.documentElement.dataset.selection), { message: 'the popup to read the selection' });
      await popup.getByRole('button', { name: 'Explain selection' }).click();
    } else {
      userWords = [item.question];
      await askQuestion(popup, item.question);
    }
    let firstToken = null;
    let asked = 0;
    const question = popup.getByRole('region', { name: 'Question from KnowledgeLens', exact: true });
    const done = await waitUntil(async () => {
      // A model that asks the user (request_input) gets the answer a reader in a hurry gives.
      if (await question.isVisible()) {
        asked += 1;
        await popup.getByRole('textbox', { name: 'Your answer', exact: true }).fill(USER_REPLY);
        await question.getByRole('button', { name: 'Send', exact: true }).click();
        await question.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {});
      }
      const p = await readPopup(popup);
      if (firstToken === null && p.answerText) firstToken = Date.now();
      return ['completed', 'failed', 'stopped', 'timed_out'].includes(p.state) && p.askEnabled ? p : null;
    }, { timeout: RUN_TIMEOUT_MS, interval: 100, message: `run of ${item.id}` });
    const ended = Date.now();
    const exported = await requestBackend(popup, { type: 'export', session });
    const doc = exported.ok ? JSON.parse(exported.data.json) : null;
    const stored = doc ? await storedRun(popup, session, doc.run) : {};
    const requests = requestsSince(serverLog, started).filter((r) => r.started_at <= ended);
    const answer = doc?.answer ?? done.answerText ?? '';
    const own = requests.map((r) => ownText(r.messages ?? [], { userWords: [...userWords, USER_REPLY], pageText: stored.text })).join('\n');
    await popup.close();
    // Whether the first request already carried the answer (the agent's first excerpt is
    // chosen for the question, so a fact past the page's first characters may be in it).
    const firstText = normalise((requests[0]?.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join(' '));
    return {
      ok: done.state === 'completed',
      answer_in_first_request: item.answers ? item.answers.some((a) => ` ${firstText} `.includes(` ${normalise(a)} `)) : undefined,
      state: done.state,
      error: done.errorMessage || undefined,
      answer,
      own,
      model_calls: doc?.metrics?.model_calls ?? requests.length,
      asked_user: asked,
      tools_called: (doc?.trajectory ?? []).filter((e) => e.item.tool_call).map((e) => e.item.tool_call.call.name),
      prompt_tokens: doc?.metrics?.input_tokens ?? requests.reduce((s, r) => s + r.prompt_tokens, 0),
      first_request_tokens: requests[0]?.prompt_tokens ?? null,
      first_token_s: firstToken === null ? null : (firstToken - started) / 1000,
      seconds: (ended - started) / 1000,
      stored,
    };
  } finally {
    await page.close();
  }
}

// ---- the baseline ---------------------------------------------------------------------------

/** One streamed request: the fixed system line, the page cut to the excerpt, the question. */
async function askBaseline(item, { baseUrl, model, pageTitle, pageText, excerptChars, maxTokens }) {
  const cut = pageText.slice(0, excerptChars);
  const ask = item.kind === 'explain' ? `Explain this passage from the page: "${item.selection}"` : item.question;
  const messages = [
    { role: 'system', content: BASELINE_SYSTEM },
    { role: 'user', content: `Page: ${pageTitle}\n\n${cut}\n\n${ask}` },
  ];
  const started = Date.now();
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages, stream: true, stream_options: { include_usage: true }, max_tokens: maxTokens }),
  });
  if (!res.ok) throw new Error(`the baseline request got HTTP ${res.status}: ${await res.text()}`);
  let answer = '';
  let firstToken = null;
  let usage = null;
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('');
      if (!data || data === '[DONE]') continue;
      const body = JSON.parse(data);
      const delta = body.choices?.[0]?.delta?.content;
      if (delta) {
        firstToken ??= Date.now();
        answer += delta;
      }
      if (body.usage) usage = body.usage;
    }
  }
  const ended = Date.now();
  return {
    ok: true,
    state: 'completed',
    answer,
    own: ownText(messages, { userWords: [item.question ?? item.selection], pageText: cut }),
    model_calls: 1,
    prompt_tokens: usage?.prompt_tokens ?? null,
    first_request_tokens: usage?.prompt_tokens ?? null,
    first_token_s: firstToken === null ? null : (firstToken - started) / 1000,
    seconds: (ended - started) / 1000,
  };
}

// ---- a second question on the same page ---------------------------------------------------

/** The server's record of a request: time to its first token and the prompt it read. */
const served = (r) => (r ? {
  first_token_ms: r.first_token_ms,
  prompt_tokens: r.prompt_tokens,
  prompt_tokens_evaluated: r.prompt_tokens_evaluated,
} : null);

/** Whether a logged request of ours gives passages after its last assistant message: the
 * question's best passages were not in the conversation yet. */
const addsPassages = (r) => {
  const messages = r?.messages ?? [];
  const last = messages.findLastIndex((m) => m.role === 'assistant');
  return messages.slice(last + 1).some((m) => m.role === 'user' && (m.content ?? '').startsWith('Passages from further on in the page'));
};

/**
 * The prompt cache on follow-ups: on each page, its questions (those --only keeps) asked one
 * after the other in one popup (each after the first is a follow-up in the same
 * conversation), then the same ones in baseline requests, one after the other. Measured on
 * each follow-up's first request, as the server logged it: time to the first token, prompt
 * tokens, how many of them it evaluated (the rest came from its cache), and whether it gave
 * passages the conversation did not have yet (those are read whatever the cache holds).
 */
async function followUps(kl, site, items, serverLog, set) {
  const byPage = new Map();
  for (const it of items.filter((i) => i.kind === 'question')) byPage.set(it.page, [...(byPage.get(it.page) ?? []), it]);
  const rows = [];
  for (const [pageId, pageItems] of byPage) {
    if (pageItems.length < 2) continue;
    const page = await kl.context.newPage();
    const ours = [];
    let stored = null;
    try {
      await page.goto(site.url(pageItems[0].pageFile), { waitUntil: 'domcontentloaded' });
      await unhide(page);
      const tabId = await tabIdOf(kl.context, page);
      const popup = await openPopup(kl.context, kl.extId, tabId);
      for (const [i, item] of pageItems.entries()) {
        const asked = Date.now();
        await askQuestion(popup, item.question);
        // The previous run's end still shows until this one starts.
        if (i > 0) await waitUntil(async () => !['completed', 'failed', 'stopped', 'timed_out'].includes((await readPopup(popup)).state), { timeout: 30_000, interval: 50, message: 'the follow-up to start' });
        const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS });
        const first = requestsSince(serverLog, asked)[0];
        ours.push({ state: done.state, answer: done.answerText, ...served(first), adds_passages: addsPassages(first) });
      }
      const session = `tab:${tabId}`;
      const exported = await requestBackend(popup, { type: 'export', session });
      const doc = exported.ok ? JSON.parse(exported.data.json) : null;
      stored = doc ? await storedRun(popup, session, doc.run) : null;
      await popup.close();
    } finally {
      await page.close();
    }
    if (!stored?.text) throw new Error(`no run on ${pageId} stored its page text`);
    const options = {
      baseUrl: process.env.KL_BASE_URL, model: process.env.KL_MODEL || 'local-model', pageTitle: stored.title, pageText: stored.text,
      excerptChars: stored.excerptChars ?? set.excerpt_chars, maxTokens: stored.maxTokens ?? 512,
    };
    for (const [i, item] of pageItems.entries()) {
      const asked = Date.now();
      const b = await askBaseline(item, options);
      if (i === 0) continue;
      const baseline = { state: b.state, answer: b.answer, ...served(requestsSince(serverLog, asked)[0]) };
      const o = ours[i];
      const ratio = o?.first_token_ms && baseline.first_token_ms ? Math.round((o.first_token_ms / baseline.first_token_ms) * 100) / 100 : null;
      rows.push({ page: pageId, first: pageItems[i - 1].id, second: item.id, ours: o, baseline, ratio });
      log(`follow-up ${item.id.padEnd(22)} ours ${fmt(o.first_token_ms / 1000)} s to the first token (${o.prompt_tokens_evaluated} of ${o.prompt_tokens} prompt tokens read${o.adds_passages ? ', new passages' : ''}), baseline ${fmt(baseline.first_token_ms / 1000)} s (${baseline.prompt_tokens_evaluated} of ${baseline.prompt_tokens}): ${ratio}x`);
    }
  }
  const summary = (subset) => ({
    count: subset.length,
    ours_first_token_ms_median: median(subset.map((r) => r.ours.first_token_ms)),
    baseline_first_token_ms_median: median(subset.map((r) => r.baseline.first_token_ms)),
    ours_evaluated_median: median(subset.map((r) => r.ours.prompt_tokens_evaluated)),
    baseline_evaluated_median: median(subset.map((r) => r.baseline.prompt_tokens_evaluated)),
    ratio_median: median(subset.map((r) => r.ratio)),
  });
  return {
    rows,
    ...summary(rows),
    without_new_passages: summary(rows.filter((r) => !r.ours.adds_passages)),
    with_new_passages: summary(rows.filter((r) => r.ours.adds_passages)),
  };
}

// ---- main -----------------------------------------------------------------------------------

function row(item, result) {
  const { own, stored, ...rest } = result;
  return {
    id: item.id,
    page: item.page,
    kind: item.kind,
    answerable: item.answerable,
    past_excerpt: item.past_excerpt,
    ...rest,
    ...score(item, result.answer ?? '', own ?? ''),
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string' },
      out: { type: 'string' },
      'server-log': { type: 'string' },
      limit: { type: 'string' },
      only: { type: 'string' },
      label: { type: 'string' },
      'model-file': { type: 'string' },
      'model-sha256': { type: 'string' },
      dist: { type: 'string' },
      update: { type: 'string' },
      'follow-up': { type: 'boolean' },
    },
  });
  for (const need of ['pages', 'out', 'server-log']) if (!values[need]) throw new Error(`--${need} is required`);
  const baseUrl = process.env.KL_BASE_URL;
  const model = process.env.KL_MODEL || 'local-model';
  if (!baseUrl) throw new Error('KL_BASE_URL is not set (pkg-scripts/bench-quality.sh sets it)');
  const set = JSON.parse(readFileSync(join(HERE, 'questions.json'), 'utf8'));
  const files = new Map(set.pages.map((p) => [p.id, p.file]));
  let items = set.items.map((it) => ({ ...it, pageFile: files.get(it.page) }));
  if (values.only) {
    const ids = new Set(values.only.split(','));
    items = items.filter((it) => ids.has(it.id));
  }
  if (values.limit) items = spread(items, Number(values.limit));

  const site = await serveDirectory(values.pages);
  const kl = await launchExtension({ logName: `bench-quality-${values.label ?? 'model'}`, ...(values.dist ? { dist: values.dist } : {}) });
  if (values['follow-up']) {
    try {
      await configureProvider(kl.context, kl.extId, { baseUrl, model });
      const report = { label: values.label, model, model_file: values['model-file'], model_sha256: values['model-sha256'], follow_up: await followUps(kl, site, items, values['server-log'], set) };
      mkdirSync(dirname(values.out), { recursive: true });
      writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
      log(`wrote ${values.out}`);
    } finally {
      await kl.close();
      await site.close();
    }
    return;
  }
  const rows = { ours: [], baseline: [] };
  try {
    await configureProvider(kl.context, kl.extId, { baseUrl, model });
    // Page by page: our runs, then the baseline's (each system keeps its own prompt prefix
    // in the server's cache, as it would in use).
    const byPage = new Map();
    for (const it of items) byPage.set(it.page, [...(byPage.get(it.page) ?? []), it]);
    for (const [pageId, pageItems] of byPage) {
      const pageRuns = [];
      for (const item of pageItems) {
        let result;
        try {
          result = await askOurs(kl, site, item, values['server-log']);
        } catch (err) {
          result = { ok: false, state: 'error', error: err.message, answer: '', own: '' };
        }
        const r = row(item, result);
        rows.ours.push(r);
        pageRuns.push({ item, stored: result.stored });
        log(`ours     ${item.id.padEnd(22)} ${verdict(r)} ${fmt(r.seconds)} s, ${r.model_calls ?? '?'} call(s) ${r.tools_called?.length ? `[${r.tools_called.join(', ')}]` : ''}: ${clip(r.answer)}`);
      }
      const stored = pageRuns.find((p) => p.stored?.text)?.stored;
      for (const { item } of pageRuns) {
        let result;
        try {
          if (!stored) throw new Error(`no run on ${pageId} stored its page text`);
          result = await askBaseline(item, {
            baseUrl, model, pageTitle: stored.title, pageText: stored.text,
            excerptChars: stored.excerptChars ?? set.excerpt_chars, maxTokens: stored.maxTokens ?? 512,
          });
        } catch (err) {
          result = { ok: false, state: 'error', error: err.message, answer: '', own: '' };
        }
        const r = row(item, result);
        rows.baseline.push(r);
        log(`baseline ${item.id.padEnd(22)} ${verdict(r)} ${fmt(r.seconds)} s: ${clip(r.answer)}`);
      }
    }
  } finally {
    await kl.close();
    await site.close();
  }
  if (values.update) {
    // A rerun of some items: their rows replace the earlier ones of the same ids.
    const earlier = JSON.parse(readFileSync(values.update, 'utf8'));
    for (const system of ['ours', 'baseline']) {
      const fresh = new Map(rows[system].map((r) => [r.id, r]));
      rows[system] = [...earlier.rows[system].map((r) => fresh.get(r.id) ?? r),
        ...rows[system].filter((r) => !earlier.rows[system].some((e) => e.id === r.id))];
    }
    items = Array.from({ length: rows.ours.length });
  }
  const report = {
    label: values.label,
    model: model,
    model_file: values['model-file'],
    model_sha256: values['model-sha256'],
    items: items.length,
    ours: summarise(rows.ours),
    baseline: summarise(rows.baseline),
    rows,
  };
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  log(`wrote ${values.out}`);
}

/** `n` items spread over the set (every page and kind keep a share), in the set's order. */
function spread(items, n) {
  if (!(n > 0) || n >= items.length) return items;
  const step = items.length / n;
  return Array.from({ length: n }, (_, i) => items[Math.floor(i * step)]);
}

const log = (line) => process.stderr.write(`[bench-quality] ${line}\n`);
const fmt = (s) => (s === null || s === undefined ? '?' : s.toFixed(1));
const clip = (s) => JSON.stringify((s ?? '').slice(0, 100));
function verdict(r) {
  if (!r.ok) return `ERROR(${r.state}: ${r.error ?? ''})`.slice(0, 60);
  if (r.kind === 'explain') return `facts ${r.facts}/${r.facts_total}${r.echo ? ' ECHO' : ''}`;
  if (r.answerable) return `${r.correct ? 'right' : 'wrong'}${r.echo ? ' ECHO' : ''}`;
  return `${r.abstained ? 'abstained' : 'answered'}${r.echo ? ' ECHO' : ''}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    process.stderr.write(`[bench-quality] error: ${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
