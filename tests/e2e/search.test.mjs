// Agentic web search through the real extension, in one browser: the scripted model calls
// search_web_for_info; the engine searches a scripted MediaWiki or SearXNG on loopback, has
// the model grade the results (and rewrite a query whose results were not relevant), and the
// answer cites the relevant results, listed as its sources. A failing search server leaves a
// notice and an answer from the model alone; "Test search" in Options checks SearXNG; the
// Steps view shows the queries and the graded results.
//
// The model replies by what each request is (see `kindOf`), not by position, so a request
// the flow did not expect fails its test with a clear message.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  configureProvider, launchExtension, openOptions as openOptionsPage, openPopup, optionsStatus, runSearchCheck,
  screenshot, stopServiceWorker, waitForWorkerRunning, waitUntil, workerBootId,
} from './support/browser.mjs';
import { startScriptedMediaWiki } from './support/mediawiki-server.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, requestBackend, sourcesOf, waitForRunEnd } from './support/popup.mjs';
import { startScriptedSearxng } from './support/searxng-server.mjs';
import { closedPort } from './support/static-server.mjs';

let kl;
let llm;
let wiki;
let searx;

before(async () => {
  [llm, wiki, searx] = await Promise.all([startScriptedOpenAI(), startScriptedMediaWiki(), startScriptedSearxng()]);
  kl = await launchExtension({ logName: 'search' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
});

after(async () => {
  await kl?.close();
  await Promise.all([llm?.close(), wiki?.close(), searx?.close()]);
});

const systemOf = (body) => String(body?.messages?.find((m) => m.role === 'system')?.content ?? '');
const lastUser = (body) => String(body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '');

/** What a chat request is: 'grade', 'rewrite', 'observe' (schema "control") or 'reason'. */
function kindOf(body) {
  if (systemOf(body).startsWith('You grade web search results')) return 'grade';
  if (systemOf(body).startsWith('You rewrite web search queries')) return 'rewrite';
  if (body?.response_format?.json_schema?.name === 'control') return 'observe';
  return 'reason';
}

/** The results a grading request lists ("[n] Title\nURL"), in order. */
function gradedResults(body) {
  return [...lastUser(body).matchAll(/^\[(\d+)\] (.+)\n(\S+)$/gm)].map(([, n, title, url]) => ({ n: Number(n), title, url }));
}

/**
 * Makes the model answer by request kind: `reason` the first Reason call (a tool call), a
 * grader that finds relevant exactly the titles in `relevant`, `rewrites` (queries, in
 * order) for the rewrite calls, and `answer` as the Observe call's final answer; the first
 * grading reply waits for `holdFirstGrade` when given. Returns the requests seen by kind.
 */
function scriptModel({ query, relevant = [], rewrites = [], answer, holdFirstGrade = null, gradeReply = null }) {
  const seen = { reason: [], grade: [], rewrite: [], observe: [] };
  const queue = [...rewrites];
  llm.respondWith(async (body) => {
    const kind = kindOf(body);
    seen[kind].push(body);
    if (kind === 'grade' && seen.grade.length === 1 && holdFirstGrade) await holdFirstGrade;
    if (kind === 'reason') {
      if (seen.reason.length > 1) return { status: 500, body: { error: { message: 'unexpected second Reason call' } } };
      return { content: 'I will search the web.', tool_calls: [{ name: 'search_web_for_info', arguments: { query } }] };
    }
    if (kind === 'grade' && gradeReply) return gradeReply;
    if (kind === 'grade') {
      const grades = gradedResults(body).map(({ n, title }) => ({
        index: n,
        relevant: relevant.includes(title),
        confidence: 0.9,
        reason: relevant.includes(title) ? `${title} answers the question` : `${title} is off topic`,
      }));
      return { content: JSON.stringify({ grades }), json: true };
    }
    if (kind === 'rewrite') {
      const next = queue.shift();
      if (!next) return { status: 500, body: { error: { message: 'unexpected rewrite call' } } };
      return { content: JSON.stringify({ query: next }), json: true };
    }
    return { content: JSON.stringify({ should_continue: false, final_answer: answer }), json: true };
  });
  return seen;
}

const openOptions = () => openOptionsPage(kl.context, kl.extId);

/** Chooses the search provider and its base URL in Options and saves them. */
async function configureSearch(provider, baseUrl) {
  const page = await openOptions();
  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption(provider);
  await page.getByRole('textbox', { name: 'Search base URL', exact: true }).fill(baseUrl);
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await optionsStatus(page), 'Saved.');
  await page.close();
}

/** Asks `question` in the popup's own session (no tab, so no page text) and waits for the end. */
async function ask(question) {
  const popup = await openPopup(kl.context, kl.extId, null);
  await askQuestion(popup, question);
  const done = await waitForRunEnd(popup, { diagnostics: () => `${llm.timeline()}\n${kl.recentLogs()}` });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${llm.timeline()}\n${kl.recentLogs()}`);
  return { popup, done };
}

test('Wikipedia search from the popup: searched, graded, the answer cites the relevant result', async () => {
  await configureSearch('wikipedia', wiki.url);
  const query = 'chromium browser project';
  const answer = 'Chromium is the free and open-source browser project behind Chrome [1].';
  const seen = scriptModel({ query, relevant: ['Chromium'], answer });
  const wikiBefore = wiki.requests.length;

  const { popup, done } = await ask('Who makes the Chromium browser?');

  assert.ok(seen.reason[0].tools.some((t) => t.function?.name === 'search_web_for_info'), 'search_web_for_info was not offered');
  const asked = wiki.requests.slice(wikiBefore);
  assert.equal(asked.length, 2, asked.map(String).join('\n'));
  assert.equal(asked[0].searchParams.get('list'), 'search');
  assert.equal(asked[0].searchParams.get('srsearch'), query);
  assert.equal(asked[0].searchParams.get('origin'), '*');
  assert.equal(asked[1].searchParams.get('prop'), 'extracts');
  assert.equal(asked[1].searchParams.get('origin'), '*');

  assert.equal(seen.grade.length, 1, 'one grading call');
  assert.deepEqual(gradedResults(seen.grade[0]).map((r) => r.title), ['Web browser', 'Chromium']);
  assert.match(lastUser(seen.grade[0]), /Chromium is a free and open-source web browser project\./);
  assert.equal(seen.rewrite.length, 0, 'half the results were relevant: no rewrite');
  const tool = seen.observe[0].messages.find((m) => m.role === 'tool');
  assert.match(tool.content, /\[1\] Chromium — http:\/\/127\.0\.0\.1:\d+\/wiki\/Chromium/, tool.content);
  assert.ok(!tool.content.includes('Web browser —'), 'a result graded not relevant reached the loop');

  assert.match(done.answerText, /behind Chrome \[1\]/, done.answerText);
  assert.deepEqual(done.notices, []);
  const sources = await sourcesOf(popup);
  assert.deepEqual(sources, [{ id: '[1]', title: 'Chromium', href: `${wiki.url}/wiki/Chromium` }]);
  await screenshot(popup, 'search-answer.png');
  await popup.close();
});

test('SearXNG: irrelevant results are rewritten and searched again; only the relevant result is cited; the Steps view shows the grades', async () => {
  await configureSearch('searxng', searx.url);
  const first = 'bellhaven keeper';
  const second = 'Bellhaven Light keepers history';
  searx.answer(first, [
    { title: 'Bellhaven Hotel', url: 'https://hotel.example/bellhaven', content: 'Rooms with a sea view.' },
    { title: 'Goalkeeper gloves', url: 'https://shop.example/gloves', content: 'Keeper gloves on sale.' },
  ]);
  searx.answer(second, [
    { title: 'Keepers of Bellhaven Light', url: 'https://history.example/bellhaven', content: 'Agnes Tull kept the light from 1902 to 1931.' },
    { title: 'Lighthouse postcards', url: 'https://cards.example/lights', content: 'Postcards of lighthouses.' },
  ]);
  const answer = 'Agnes Tull kept Bellhaven Light from 1902 [1], as the parish records say [3].';
  const seen = scriptModel({ query: first, relevant: ['Keepers of Bellhaven Light'], rewrites: [second], answer });
  const before = searx.queries().length;

  const { popup, done } = await ask('Who kept Bellhaven Light?');

  assert.deepEqual(searx.queries().slice(before), [first, second]);
  assert.ok(searx.requests.slice(before).every((u) => u.searchParams.get('format') === 'json'));
  assert.equal(seen.grade.length, 2);
  assert.deepEqual(gradedResults(seen.grade[0]).map((r) => r.title), ['Bellhaven Hotel', 'Goalkeeper gloves']);
  assert.deepEqual(gradedResults(seen.grade[1]).map((r) => r.title), ['Keepers of Bellhaven Light', 'Lighthouse postcards']);
  assert.equal(seen.rewrite.length, 1);
  assert.match(lastUser(seen.rewrite[0]), new RegExp(first), 'the rewrite call lists the query tried');
  const tool = seen.observe[0].messages.find((m) => m.role === 'tool');
  assert.match(tool.content, /\[1\] Keepers of Bellhaven Light — https:\/\/history\.example\/bellhaven/, tool.content);
  assert.ok(!/Hotel|gloves|postcards/i.test(tool.content), tool.content);

  assert.match(done.answerText, /from 1902 \[1\]/, done.answerText);
  assert.ok(!done.answerText.includes('[3]'), `a citation of nothing was kept: ${done.answerText}`);
  assert.deepEqual(await sourcesOf(popup), [
    { id: '[1]', title: 'Keepers of Bellhaven Light', href: 'https://history.example/bellhaven' },
  ]);

  // The Steps view: both queries, the rewrite, and the graded results.
  const toggle = popup.getByRole('button', { name: 'Steps', exact: true });
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.press('Enter');
  const region = popup.getByRole('region', { name: 'Steps', exact: true });
  const text = await region.innerText();
  for (const expected of [
    `Searched for "${first}"`,
    `0 of 2 results for "${first}" relevant`,
    `Rewrote "${first}" as "${second}"`,
    `Searched for "${second}"`,
    `1 of 2 results for "${second}" relevant`,
  ]) {
    assert.ok(text.includes(expected), `the Steps view lacks "${expected}":\n${text}`);
  }
  // Each grading is a list "Result grades": every result's mark, title and confidence.
  const lists = region.getByRole('list', { name: 'Result grades', exact: true });
  assert.equal(await lists.count(), 2);
  const items = async (i) => (await lists.nth(i).getByRole('listitem').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
  const [firstGrades, secondGrades] = [await items(0), await items(1)];
  assert.equal(firstGrades.length, 2);
  assert.match(firstGrades[0], /not relevant.*Bellhaven Hotel.*confidence \d+%/i, firstGrades[0]);
  assert.match(secondGrades[0], /^relevant.*Keepers of Bellhaven Light.*confidence \d+%/i, secondGrades[0]);
  assert.match(secondGrades[1], /not relevant.*Lighthouse postcards/i, secondGrades[1]);
  // The region scrolls (max-height): show the second grading.
  await lists.nth(1).scrollIntoViewIfNeeded();
  await screenshot(popup, 'search-steps.png');
  // And the data behind it (StepView.grades), in order.
  const view = (await requestBackend(popup, { type: 'snapshot', session: 'popup' })).data;
  const grades = view.steps.filter((s) => s.kind === 'grades').map((s) => s.grades.map((g) => [g.title, g.grade]));
  assert.deepEqual(grades, [
    [['Bellhaven Hotel', 'not_relevant'], ['Goalkeeper gloves', 'not_relevant']],
    [['Keepers of Bellhaven Light', 'relevant'], ['Lighthouse postcards', 'not_relevant']],
  ], JSON.stringify(view.steps.filter((s) => s.kind === 'grades')));
  await popup.close();
});

test('a search server that keeps failing leaves a notice, and the model answers alone', async () => {
  await configureSearch('searxng', searx.url);
  const query = 'colza oil lamps';
  searx.fail(query, 'server_error', 'server_error');
  const answer = 'Colza oil, pressed from rapeseed, burned in lighthouse lamps.';
  const seen = scriptModel({ query, answer });
  const before = searx.queries().length;

  const { popup, done } = await ask('What oil did lighthouse lamps burn?');

  assert.deepEqual(searx.queries().slice(before), [query, query], 'one retry after a 500');
  assert.equal(seen.grade.length, 0);
  assert.equal(done.answerText, answer);
  const notice = done.notices.find((n) => n.startsWith('Web search failed'));
  assert.ok(notice, `no disclaimer among the notices: ${JSON.stringify(done.notices)}`);
  assert.match(notice, /^Web search failed, so this answer comes from the model alone, without web sources\. /);
  assert.ok(await popup.locator('#notices li', { hasText: 'Web search failed' }).isVisible(), 'the disclaimer is not visible');
  // The error page's title and text stay apart in the message.
  assert.match(notice, /\(HTTP 500: SearXNG Internal Server Error\)/, notice);
  await screenshot(popup, 'search-failed.png');
  await popup.close();
});

test('results the grader cannot grade are used unchecked, uncited, with a notice; a non-JSON page fails the search', async () => {
  await configureSearch('searxng', searx.url);
  const query = 'bellhaven lens';
  searx.answer(query, [
    { title: 'The Bellhaven lens', url: 'https://history.example/lens', content: 'A second-order Fresnel lens from 1861.' },
  ]);
  const answer = 'It had a second-order Fresnel lens [1].';
  const seen = scriptModel({ query, answer, gradeReply: { content: 'Sure! The first one looks good.' } });
  const { popup, done } = await ask('What lens did Bellhaven Light have?');
  assert.equal(seen.rewrite.length, 0, 'unreadable grades are no reason to rewrite');
  const tool = seen.observe[0].messages.find((m) => m.role === 'tool');
  assert.match(tool.content, /could not be checked for relevance; use them with care and do not cite them/, tool.content);
  assert.match(tool.content, /The Bellhaven lens/, tool.content);
  assert.ok(!done.answerText.includes('[1]'), `an unchecked result was cited: ${done.answerText}`);
  assert.match(done.notices.join('\n'), /The web results for "bellhaven lens" could not be checked for relevance/, JSON.stringify(done.notices));
  assert.equal(await popup.getByRole('region', { name: 'Sources', exact: true }).count(), 0, 'sources listed for an unchecked answer');
  await popup.close();

  // A page that is not JSON is not worth a retry: one request, then the disclaimer.
  const broken = 'bellhaven keepers cottage';
  searx.fail(broken, 'not_json');
  scriptModel({ query: broken, answer: 'The keepers lived in a cottage by the tower.' });
  const before = searx.queries().length;
  const second = await ask('Where did the keepers live?');
  assert.deepEqual(searx.queries().slice(before), [broken]);
  assert.ok(second.done.notices.some((n) => n.startsWith('Web search failed, so this answer comes from the model alone')),
    JSON.stringify(second.done.notices));
  await second.popup.close();
});

test('a worker stopped while the results are graded resumes the search where it was', async () => {
  await configureSearch('searxng', searx.url);
  const query = 'bellhaven fog signal';
  searx.answer(query, [
    { title: 'The Bellhaven fog signal', url: 'https://history.example/fog', content: 'The fog signal was a reed horn, sounded every 30 seconds.' },
  ]);
  let release;
  const held = new Promise((done) => { release = done; });
  const answer = 'A reed horn, sounded every 30 seconds [1].';
  const seen = scriptModel({ query, relevant: ['The Bellhaven fog signal'], answer, holdFirstGrade: held });
  const before = searx.queries().length;

  const popup = await openPopup(kl.context, kl.extId, null);
  await askQuestion(popup, 'What was the Bellhaven fog signal?');
  await waitUntil(() => seen.grade.length === 1, { message: 'the grading call to reach the model' });
  let next = null;
  await waitUntil(async () => {
    const text = (await popup.evaluate(() => chrome.storage.session.get('session:popup')))['session:popup'];
    next = JSON.parse(text ?? 'null')?.state?.next ?? null;
    return next?.search?.stage?.grade !== undefined;
  }, { message: () => `the saved run to be grading (next: ${JSON.stringify(next)})` });
  const bootBefore = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  release();
  assert.notEqual(await waitForWorkerRunning(kl.context, { timeout: 30_000 }), bootBefore, 'the worker did not restart');
  const done = await waitForRunEnd(popup, { diagnostics: () => `${llm.timeline()}\n${kl.recentLogs()}` });

  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${llm.timeline()}`);
  assert.equal(done.answerText, answer);
  assert.deepEqual(searx.queries().slice(before), [query], 'the search was not repeated');
  assert.equal(seen.grade.length, 2, 'the grading call was made again');
  assert.equal(seen.reason.length, 1);
  assert.deepEqual(await sourcesOf(popup), [
    { id: '[1]', title: 'The Bellhaven fog signal', href: 'https://history.example/fog' },
  ]);
  await popup.close();
});

test('"Test search" passes against SearXNG, explains JSON output turned off, and diagnoses a refused port', async () => {
  searx.answer('web browser', [
    { title: 'Web browser', url: 'https://en.wikipedia.org/wiki/Web_browser', content: 'An application for the web.' },
    { title: 'Chromium', url: 'https://www.chromium.org/', content: 'An open-source browser project.' },
  ]);
  const page = await openOptions();
  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('searxng');
  const baseUrl = page.getByRole('textbox', { name: 'Search base URL', exact: true });
  await baseUrl.fill(searx.url);
  const region = page.locator('#search-check');
  const check = () => runSearchCheck(page);
  const ok = await check();
  assert.match(ok, /SearXNG found 2 results for “web browser” in [\d,]+ ms\./, ok);
  assert.equal(await region.getAttribute('data-result'), 'ok');

  searx.fail('web browser', 'json_disabled');
  const forbidden = await check();
  assert.match(forbidden, /does not allow JSON output \(HTTP 403\)\. Add json to search\.formats/, forbidden);
  assert.equal(await region.getAttribute('data-result'), 'json_disabled');

  await baseUrl.fill(`http://127.0.0.1:${await closedPort()}`);
  const refused = await check();
  assert.match(refused, /Could not reach SearXNG \(.+\)\. Check the connection, and the Search base URL in Options\./, refused);
  assert.equal(await region.getAttribute('data-result'), 'network');
  await page.close();
});
