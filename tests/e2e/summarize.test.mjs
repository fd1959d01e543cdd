// "Summarize this page" through the real extension, in one browser: on the long
// fixture article (about 100 KB, served on loopback) with a 4,096-token context window, the
// scripted model calls summarize_page_content; the engine summarises the page section by
// section (the popup's status line says "Summarizing section k of n"), combines the section
// summaries, and the run completes inside its token budget. With the worker force-stopped
// while a section's call is in flight, the run still completes, and only that section is
// asked for twice (counted at the model server).
//
// The model is an oracle: its reply depends only on the request (its kind, and for a section
// which section), so a call redone after a worker stop gets the same reply. It holds back the
// first request of the keys in `toHold` until the test releases it; the test waits on those
// requests and on the popup, never on time.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, launchExtension, openPopup, screenshot, stopServiceWorker, tabIdOf, waitForWorkerRunning,
  waitUntil, workerBootId,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, readPopup, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const WINDOW = 4_096;
const BUDGET = 100_000;
const RUN_TIMEOUT_MS = 120_000;
const ANSWER = 'The Harrow Canal was surveyed in 1792, carried coal for decades and was reopened in 2004.';

let kl;
let llm;
let pages;
let probe;

before(async () => {
  llm = await startScriptedOpenAI();
  llm.respondWith(oracle);
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'summarize' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, contextWindow: WINDOW, tokenBudget: BUDGET });
  probe = await kl.context.newPage();
  await probe.goto(`chrome-extension://${kl.extId}/options.html`);
});

after(async () => {
  for (const h of held) h.release();
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

const systemOf = (body) => String(body?.messages?.find((m) => m.role === 'system')?.content ?? '');
const lastUser = (body) => String(body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '');

/** Questions end with a tag, `[run-a]`, which names the run in the keys. */
const tagOf = (body) => /\[run-(\w+)\]/.exec((body?.messages ?? []).map((m) => String(m.content)).join('\n'))?.[1] ?? '-';

/** What a request asks, as a key: `a:section/3/9`, `a:combine`, `a:observe`, `a:reason/0`. */
function keyOf(body) {
  return `${tagOf(body)}:${kindOf(body)}`;
}

function kindOf(body) {
  const system = systemOf(body);
  if (system.startsWith('You summarize one section')) {
    const [, k, n] = /Section (\d+) of (\d+)/.exec(lastUser(body)) ?? [];
    return `section/${k}/${n}`;
  }
  if (system.startsWith('You summarize a web page')) return 'page';
  if (system.startsWith('You combine summaries')) return 'combine';
  if (body?.response_format?.json_schema?.name === 'control') return 'observe';
  const results = (body?.messages ?? []).filter((m) => m.role === 'tool').length;
  return body?.tools?.length ? `reason/${results}` : 'synthesis';
}

function reply(tagged) {
  const key = tagged.split(':')[1];
  if (key === 'reason/0') {
    return {
      content: 'I will summarize the page.',
      tool_calls: [{ name: 'summarize_page_content', arguments: { reasoning: 'the user asked for a summary' } }],
    };
  }
  if (key.startsWith('section/')) return { content: `Summary of section ${key.split('/')[1]}: the canal's story goes on.` };
  if (key === 'combine') return { content: 'The canal was surveyed, built, busy, sold and reopened.' };
  if (key === 'observe') return { content: JSON.stringify({ should_continue: false, final_answer: ANSWER }), json: true };
  return { status: 500, body: { error: { message: `unexpected request ${key}` } } };
}

/** Requests held back (the first whose key starts with a prefix in `toHold`), in arrival order. */
const held = [];
const toHold = new Set();

function oracle(body, record) {
  record.key = keyOf(body);
  const answer = reply(record.key);
  const prefix = [...toHold].find((p) => record.key.startsWith(p));
  if (prefix === undefined) return answer;
  toHold.delete(prefix);
  return new Promise((release) => held.push({ key: record.key, release: () => release(answer) }));
}

/** Waits until a held request whose key matches `pattern` reached the server; returns it. */
function waitForHeld(pattern) {
  return waitUntil(() => held.find((h) => pattern.test(h.key)), {
    timeout: RUN_TIMEOUT_MS,
    message: () => `a request ${pattern} to reach the server\n${keys().join(', ')}\n${kl.recentLogs(20)}`,
  });
}

const keys = (from = 0) => llm.chatRequests.slice(from).map((r) => r.key);

/** A new tab on the long article and a popup for it. */
async function tabWithPopup() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('long-article.html'));
  const tabId = await tabIdOf(kl.context, page);
  const popup = await openPopup(kl.context, kl.extId, tabId);
  return { page, tabId, session: `tab:${tabId}`, popup };
}

/** The export of `session` as the backend gives it. */
async function exported(session) {
  const answer = await requestBackend(probe, { type: 'export', session });
  assert.equal(answer.ok, true, JSON.stringify(answer));
  return JSON.parse(answer.data.json);
}

/** The section summaries of an export: [[index, of], ...]. */
const sectionsOf = (doc) => doc.trajectory
  .map((e) => e.item.section_summary)
  .filter(Boolean)
  .map((s) => [s.index, s.of]);

test('"summarize this page" on a long page shows section progress and finishes inside the budget', async () => {
  // The second section's call waits until the status line names it.
  toHold.add('a:section/2/');
  const run = await tabWithPopup();
  const start = llm.chatRequests.length;
  await askQuestion(run.popup, 'Summarize this page [run-a]');
  const second = await waitForHeld(/^a:section\/2\//);
  const of = Number(second.key.split('/')[2]);
  assert.ok(of >= 3, `the page is several sections long: ${second.key}`);
  const shown = await waitUntil(async () => {
    const { status } = await readPopup(run.popup);
    return status.startsWith(`Summarizing section 2 of ${of}`) ? status : null;
  }, { message: 'the status line to show the section in progress' });
  await screenshot(run.popup, 'summarize-progress.png');
  second.release();
  const done = await waitForRunEnd(run.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => keys(start).join(', ') });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${keys(start).join(', ')}`);
  assert.equal(done.answerText, ANSWER);
  assert.ok(shown.includes('Step 1 of'), shown);

  // One call per section, in order, then the combination and the Observe call.
  const sections = Array.from({ length: of }, (_, i) => `a:section/${i + 1}/${of}`);
  assert.deepEqual(keys(start), ['a:reason/0', ...sections, 'a:combine', 'a:observe']);
  // Every request fitted the window; the run stayed inside its budget.
  const doc = await exported(run.session);
  assert.equal(doc.status, 'completed');
  assert.ok(doc.metrics.input_tokens + doc.metrics.output_tokens <= BUDGET, JSON.stringify(doc.metrics));
  assert.deepEqual(sectionsOf(doc), sections.map((_, i) => [i, of]));
  const result = doc.trajectory.map((e) => e.item.tool_result).find((r) => r?.name === 'summarize_page_content');
  assert.ok(result.content.startsWith(`Page summary (sections 1–${of} of ${of}).`), result.content);
  assert.deepEqual(doc.notices, []);

  // The Steps view lists the section summaries.
  await run.popup.getByRole('button', { name: 'Steps', exact: true }).click();
  const steps = run.popup.getByRole('region', { name: 'Steps', exact: true });
  await waitUntil(async () => (await steps.locator('.entry-section_summary').count()) === of, {
    message: 'the section summaries in the Steps view',
  });
  assert.match(await steps.locator('.entry-section_summary').first().textContent(), /Section summary.*Section 1 of/s);
  await run.page.close();
});

test('a worker stopped mid-summary redoes at most one section', async () => {
  toHold.add('b:section/3/');
  const run = await tabWithPopup();
  const start = llm.chatRequests.length;
  await askQuestion(run.popup, 'Summarize this page [run-b]');
  const third = await waitForHeld(/^b:section\/3\//);
  const of = Number(third.key.split('/')[2]);
  const before = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  const after = await waitForWorkerRunning(kl.context, { timeout: 60_000 });
  assert.notEqual(after, before, 'the service worker did not restart');
  third.release();
  const done = await waitForRunEnd(run.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => keys(start).join(', ') });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${keys(start).join(', ')}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, ANSWER);

  // Sections 1 and 2 were saved before the stop and not asked for again; section 3 was in
  // flight and is the only request made twice.
  const seen = keys(start).filter((key) => key.startsWith('b:'));
  const counts = {};
  for (const key of seen) counts[key] = (counts[key] ?? 0) + 1;
  const twice = Object.keys(counts).filter((key) => counts[key] > 1);
  assert.deepEqual(twice, [`b:section/3/${of}`], seen.join(', '));
  const sectionRequests = seen.filter((key) => key.startsWith('b:section/')).length;
  assert.equal(sectionRequests, of + 1, seen.join(', '));
  const doc = await exported(run.session);
  assert.deepEqual(sectionsOf(doc), Array.from({ length: of }, (_, i) => [i, of]), 'each section summarised once');
  await run.page.close();
});
