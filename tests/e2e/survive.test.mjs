// State that survives the service worker being stopped, in real Chromium with the real
// chrome.storage.session; the only stand-in is the model server at the network edge.
//
// The model here is an oracle (`respondWith`): its reply depends only on the request (which
// phase asks, how many tool results it has seen, which question), so a call redone after the
// worker was stopped gets the same reply as the first time. Every reply is delayed. To stop
// the worker inside a phase, the oracle holds that phase's first request back; the test waits
// until the server has it and the session's head record shows the phase, then force-stops the
// worker over the DevTools protocol. The held reply is then released into a dead connection.
//
// - a three-phase-kind run (tool call, observation, tool call, final answer) stopped at four
//   points ends with the answer and trajectory of an uninterrupted run, and a popup reopened
//   afterwards shows it (status, answer; the trajectory through its Export button);
// - two tabs asking at once keep separate sessions, also across a worker stop;
// - a corrupted head record is quarantined and the popup says where it was kept;
// - a full storage: older sessions are removed to make room (before a question's first save
//   and in the middle of a run), the popup says so, and the run completes;
// - a 1 MB page (the page cap is 2,000,000 characters): its whole text is saved, a full
//   storage makes room for it with the same notice, and the run survives a worker stop.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider,
  launchExtension,
  openPopup,
  screenshot,
  stopServiceWorker,
  tabIdOf,
  waitForWorkerRunning,
  waitUntil,
  workerBootId,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, readPopup, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
/** Every reply of the oracle is this late. */
const REPLY_DELAY_MS = 400;
/** Tool results the oracle reads before it answers. */
const READS = 2;
/** Generous: the machine is small and shared. */
const RUN_TIMEOUT_MS = 120_000;

let kl;
let llm;
let pages;
/** An extension page kept open to read and write chrome.storage.session directly. */
let probe;

// ---------------------------------------------------------------------------------------------
// The oracle model.

/** Questions carry a tag, `Q[tag] ...`, which names the run in the oracle's replies. */
const tagOf = (question) => /^Q\[([\w-]+)\]/.exec(question)?.[1] ?? null;
const answerFor = (tag) => `Final answer for ${tag}: the keeper kept the light, and she blamed the salt.`;

/** What a chat request asks: its phase, the tool results it carries and its question's tag. */
function classify(body) {
  const messages = body?.messages ?? [];
  const tools = messages.filter((m) => m.role === 'tool').length;
  // A Reason request about a page shown whole offers no tools: the synthesis request is the
  // one whose last message asks for the final answer (the synthesis template's openings).
  const last = String(messages.at(-1)?.content ?? '');
  const synthesis = /^(Write the final answer|You have used all your steps|The user asked you to stop|You were stopped from repeating)/.test(last);
  const kind = body?.response_format ? 'observe' : synthesis ? 'synthesize' : 'reason';
  const question = messages.filter((m) => m.role === 'user').map((m) => String(m.content)).find(tagOf);
  return { kind, tools, tag: tagOf(question ?? '') };
}

const keyOf = ({ tag, kind, tools }) => `${tag}/${kind}/${tools}`;

function oracleReply({ kind, tools, tag }) {
  if (kind === 'reason' && tools < READS) {
    return {
      content: `Reading part ${tools + 1} for ${tag}.`,
      tool_calls: [{ id: `call_${tag}_${tools}`, name: 'read_page', arguments: { offset: tools * 300, max_chars: 300 } }],
      delayMs: REPLY_DELAY_MS,
    };
  }
  if (kind === 'observe') {
    const done = tools >= READS;
    return {
      content: JSON.stringify({ should_continue: !done, final_answer: done ? answerFor(tag) : null }),
      json: true,
      delayMs: REPLY_DELAY_MS,
    };
  }
  return { content: `Unexpected ${kind} call for ${tag}.`, delayMs: REPLY_DELAY_MS };
}

/** Requests held back (the first request of each key in `toHold`), in arrival order. */
const held = [];
const toHold = new Set();

function oracle(body, record) {
  const what = classify(body);
  record.key = keyOf(what);
  const reply = oracleReply(what);
  if (!toHold.has(record.key)) return reply;
  toHold.delete(record.key);
  return new Promise((release) => held.push({ key: record.key, release: () => release(reply) }));
}

/** Waits until the request `key` is held; returns it. */
function waitForHeld(key) {
  return waitUntil(() => held.find((h) => h.key === key), {
    timeout: RUN_TIMEOUT_MS,
    message: () => `the request ${key} to reach the server\n${requestsLine()}\n${kl.recentLogs(20)}`,
  });
}

const requestsLine = (from = 0) => `requests: ${llm.chatRequests.slice(from).map((r) => r.key).join(', ')}`;

// ---------------------------------------------------------------------------------------------
// Setup and helpers.

before(async () => {
  llm = await startScriptedOpenAI();
  llm.respondWith(oracle);
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'survive' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  probe = await kl.context.newPage();
  await probe.goto(`chrome-extension://${kl.extId}/options.html`);
});

after(async () => {
  for (const h of held) h.release();
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

/** A new tab on the fixture article (a new session) and a popup for it. */
async function tabWithPopup() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, page);
  const popup = await openPopup(kl.context, kl.extId, tabId);
  return { page, tabId, session: `tab:${tabId}`, popup };
}

/** chrome.storage.session items (all when `keys` is null). */
const storage = (keys = null) => probe.evaluate((k) => chrome.storage.session.get(k), keys);

/** The parsed head record of `session`, or null. */
async function headOf(session) {
  const key = `session:${session}`;
  const text = (await storage(key))[key];
  return text === undefined ? null : JSON.parse(text);
}

/** The phase a head record says the run does next: 'reason', 'act', 'observe', ... */
const phaseOf = (head) => {
  const next = head?.state?.next;
  return typeof next === 'string' ? next : next ? Object.keys(next)[0] : null;
};

/** Stops the worker and waits until a new one runs (the open popups reconnect and wake it). */
async function stopAndRestartWorker() {
  const before = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  const after = await waitForWorkerRunning(kl.context, { timeout: 60_000 });
  assert.notEqual(after, before, 'the service worker did not restart');
}

/** A trajectory without its timestamps. */
const withoutTimes = (trajectory) => trajectory.map(({ at_ms: _at, ...entry }) => entry);

/** The export of `session` as the backend gives it. */
async function exported(session) {
  const reply = await requestBackend(probe, { type: 'export', session });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  return JSON.parse(reply.data.json);
}

/** Fills chrome.storage.session with `key` until about `leave` bytes of its quota are free. */
function fillStorage(key, leave) {
  return probe.evaluate(
    async ({ key: k, leave: free }) => {
      const area = chrome.storage.session;
      const quota = area.QUOTA_BYTES;
      const before = await area.getBytesInUse(null);
      // Chrome counts the memory a value takes (a string: its length rounded up to 8 bytes;
      // short ones nothing), not its JSON: measure and correct, never going over the quota.
      let length = quota - free - before + (await area.getBytesInUse(k)) - k.length - 2;
      for (let round = 0; round < 4; round += 1) {
        await area.set({ [k]: 'x'.repeat(length) });
        const used = await area.getBytesInUse(null);
        if (used <= quota - free && used > quota - free - 20) break;
        length += quota - free - used - 5;
      }
      return { quota, before, after: await area.getBytesInUse(null) };
    },
    { key, leave },
  );
}

// ---------------------------------------------------------------------------------------------

test('a run force-stopped at four phases completes with the answer and trajectory of an uninterrupted run', async () => {
  const question = 'Q[keeper] Who kept Bellhaven Light, and what did they blame for its troubles?';
  const answer = answerFor('keeper');

  // The uninterrupted run, in its own tab.
  const reference = await tabWithPopup();
  let start = llm.chatRequests.length;
  await askQuestion(reference.popup, question);
  const refDone = await waitForRunEnd(reference.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(refDone.state, 'completed', `${JSON.stringify(refDone)}\n${requestsLine(start)}`);
  assert.equal(refDone.answerText, answer);
  const refRequests = llm.chatRequests.slice(start).map((r) => r.key);
  assert.deepEqual(refRequests, [
    'keeper/reason/0', 'keeper/observe/1', 'keeper/reason/1', 'keeper/observe/2',
  ]);
  const refExport = await exported(reference.session);

  // The same question, with the worker stopped inside each of its four model calls.
  const cuts = ['keeper/reason/0', 'keeper/observe/1', 'keeper/reason/1', 'keeper/observe/2'];
  cuts.forEach((key) => toHold.add(key));
  const run = await tabWithPopup();
  start = llm.chatRequests.length;
  await askQuestion(run.popup, question);
  const phases = [];
  for (const key of cuts) {
    const request = await waitForHeld(key);
    const head = await headOf(run.session);
    phases.push(`${phaseOf(head)} (attempt ${head?.state?.attempts}, step ${head?.state?.step})`);
    await stopAndRestartWorker();
    request.release();
  }
  // The head record showed each phase as saved just before its call: Reason of step 1,
  // Observe of step 1, Reason of step 2, Observe of step 2, first attempt each.
  assert.deepEqual(phases, [
    'reason (attempt 1, step 1)', 'observe (attempt 1, step 1)',
    'reason (attempt 1, step 2)', 'observe (attempt 1, step 2)',
  ]);
  const done = await waitForRunEnd(run.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${requestsLine(start)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, refDone.answerText, 'the same answer as the uninterrupted run');

  // Each cut call was made once more, and nothing else twice: no phase lost or repeated.
  const requests = llm.chatRequests.slice(start).map((r) => r.key);
  assert.deepEqual(requests, cuts.flatMap((key) => [key, key]), requestsLine(start));

  // A popup opened afterwards shows the run: its status, question and answer. It does not
  // list the trajectory; its Export button downloads it, and that is the uninterrupted one.
  const reopened = await openPopup(kl.context, kl.extId, run.tabId);
  const shown = await readPopup(reopened);
  assert.equal(shown.state, 'completed', JSON.stringify(shown));
  assert.equal(shown.status, 'Completed in 2 steps.');
  assert.equal(shown.answerText, answer);
  assert.ok(shown.answer.includes(question.slice(0, 40)), `the question is not shown: ${shown.answer}`);
  const [download] = await Promise.all([
    reopened.waitForEvent('download'),
    reopened.getByRole('button', { name: 'Export trajectory' }).click(),
  ]);
  const doc = JSON.parse(await readFile(await download.path(), 'utf8'));
  assert.equal(doc.status, 'completed');
  assert.equal(doc.answer, answer);
  assert.deepEqual(withoutTimes(doc.trajectory), withoutTimes(refExport.trajectory));
  const kinds = doc.trajectory.map((e) => Object.keys(e.item)[0]);
  assert.deepEqual(kinds, [
    'thought', 'tool_call', 'tool_result', 'observation',
    'thought', 'tool_call', 'tool_result', 'observation', 'answer',
  ]);
  assert.equal(doc.metrics.steps, 2);
  assert.equal(doc.metrics.model_calls, requests.length, 'every attempt, cut ones included, is counted');
  await screenshot(reopened, 'popup-survive.png');
});

test('two tabs asking at once keep separate sessions, also across a worker stop', async () => {
  const a = await tabWithPopup();
  const b = await tabWithPopup();
  // Both runs are held in their first Observe call at the same time, and stopped together.
  toHold.add('tideA/observe/1');
  toHold.add('tideB/observe/1');
  const start = llm.chatRequests.length;
  await askQuestion(a.popup, 'Q[tideA] When was Bellhaven Light first lit?');
  await askQuestion(b.popup, 'Q[tideB] What did the lamp burn each winter?');
  const heldA = await waitForHeld('tideA/observe/1');
  const heldB = await waitForHeld('tideB/observe/1');
  assert.equal(phaseOf(await headOf(a.session)), 'observe');
  assert.equal(phaseOf(await headOf(b.session)), 'observe');
  await stopAndRestartWorker();
  heldA.release();
  heldB.release();

  const [doneA, doneB] = await Promise.all(
    [a, b].map((t) => waitForRunEnd(t.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() })),
  );
  const context = () => `${requestsLine(start)}\n${kl.recentLogs()}`;
  assert.equal(doneA.state, 'completed', `${JSON.stringify(doneA)}\n${context()}`);
  assert.equal(doneB.state, 'completed', `${JSON.stringify(doneB)}\n${context()}`);
  assert.equal(doneA.answerText, answerFor('tideA'));
  assert.equal(doneB.answerText, answerFor('tideB'));
  assert.match(doneA.answer, /first lit/);
  assert.doesNotMatch(doneA.answer, /each winter/);
  assert.match(doneB.answer, /each winter/);

  // Two head records, each with its own question and answer.
  const all = await storage();
  for (const [t, tag] of [[a, 'tideA'], [b, 'tideB']]) {
    const head = JSON.parse(all[`session:${t.session}`]);
    assert.equal(head.state.session, t.session);
    assert.equal(head.state.status, 'completed');
    assert.equal(tagOf(head.state.question), tag);
    assert.equal(head.state.answer, answerFor(tag));
  }
  // Each run made its own calls: 4 phases each, plus the one cut call each redid.
  const keys = llm.chatRequests.slice(start).map((r) => r.key);
  for (const tag of ['tideA', 'tideB']) {
    assert.equal(keys.filter((k) => k.startsWith(`${tag}/`)).length, 5, context());
  }
});

test('a corrupted session record is quarantined and the popup says where it was kept', async () => {
  const t = await tabWithPopup();
  await askQuestion(t.popup, 'Q[salt] What did the keeper blame?');
  const done = await waitForRunEnd(t.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  await t.popup.close();

  // Damage the head record from an extension page, as a bad write or a bad build could.
  const garbage = '{"version": 2, "entries": 9, "state": {"session": "tab:';
  await probe.evaluate(([key, value]) => chrome.storage.session.set({ [key]: value }), [`session:${t.session}`, garbage]);

  const popup = await openPopup(kl.context, kl.extId, t.tabId);
  const shown = await readPopup(popup);
  assert.equal(shown.notices.length, 1, JSON.stringify(shown));
  const [notice] = shown.notices;
  assert.match(notice, /^The saved session is corrupted \(.+\); a fresh session was started\. /);
  const kept = /kept under "(quarantine:[^"]+)" in the extension's session storage\.$/.exec(notice)?.[1];
  assert.ok(kept?.startsWith(`quarantine:${t.session}:`), `the notice does not say where: ${notice}`);
  assert.equal(shown.state, 'idle', 'a fresh session');
  assert.equal(shown.answerText, '');
  assert.ok(shown.askEnabled);

  const all = await storage();
  assert.equal(all[kept], garbage, 'the damaged record is kept as it was');
  const leftovers = Object.keys(all).filter((k) => k.endsWith(`:${t.session}`) || k.includes(`:${t.session}:`));
  assert.deepEqual(leftovers.filter((k) => !k.startsWith('quarantine:')), [], 'the damaged session was removed');
  await screenshot(popup, 'popup-corrupted.png');
});

/** Session keys in storage. */
const sessionKeys = async () => Object.keys(await storage()).filter((k) => k.startsWith('session:')).sort();

/**
 * Makes the least recently updated finished session huge (its page text), so that storage
 * has `leave` to `leave + 20` bytes free (less than any save needs). Returns that session's key.
 */
async function fillWithOldestSession(leave) {
  const all = await storage();
  const finished = Object.entries(all)
    .filter(([k]) => k.startsWith('session:'))
    .map(([, v]) => JSON.parse(v).state)
    .filter((s) => s.status !== 'running' && s.page)
    .sort((x, y) => x.updated_at - y.updated_at);
  assert.ok(finished.length > 0, 'a finished session to fill the storage with');
  const [oldest] = finished;
  const fill = await fillStorage(`page:${oldest.session}:${oldest.run_id}`, leave);
  const free = fill.quota - fill.after;
  assert.ok(free >= leave && free < leave + 20, `${free} bytes left: ${JSON.stringify(fill)}`);
  return `session:${oldest.session}`;
}

const STORAGE_FULL =
  'Browser storage for KnowledgeLens was full: pages read earlier, the oldest archived conversations or finished sessions were removed, and if that was not enough, long tool results of earlier steps were shortened, to make room.';

test('storage full before a question: the oldest session makes room, the popup says so, the run completes', async () => {
  // At least one finished session besides those of earlier tests.
  const earlier = await tabWithPopup();
  await askQuestion(earlier.popup, 'Q[earlierA] When was the light automated?');
  assert.equal((await waitForRunEnd(earlier.popup, { timeout: RUN_TIMEOUT_MS })).state, 'completed');
  const filled = await fillWithOldestSession(16);
  const before = await sessionKeys();

  const t = await tabWithPopup();
  await askQuestion(t.popup, 'Q[fullA] Who rowed ashore in 1955?');
  const done = await waitForRunEnd(t.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answerFor('fullA'));
  assert.deepEqual(done.notices, [STORAGE_FULL], 'one notice, and none saying the run is not saved');
  // Only the oldest finished session went (it freed enough); the new run is saved.
  const expected = [...before.filter((k) => k !== filled), `session:${t.session}`].sort();
  assert.deepEqual(await sessionKeys(), expected);
  const all = await storage();
  assert.ok(!Object.keys(all).some((k) => k.includes(`:${filled.slice('session:'.length)}:`)), 'its page and steps went too');
  assert.equal(JSON.parse(all[`session:${t.session}`]).state.status, 'completed', 'the run was saved');
  await screenshot(t.popup, 'popup-storage-full.png');
});

test('storage full in the middle of a run: the oldest session makes room, the popup says so, the run completes', async () => {
  const earlier = await tabWithPopup();
  await askQuestion(earlier.popup, 'Q[earlierB] When was the light automated?');
  assert.equal((await waitForRunEnd(earlier.popup, { timeout: RUN_TIMEOUT_MS })).state, 'completed');

  // The run is saved as started and waits for its first reply; then the storage fills up.
  toHold.add('fullB/reason/0');
  const t = await tabWithPopup();
  await askQuestion(t.popup, 'Q[fullB] Who rowed ashore in 1955?');
  const request = await waitForHeld('fullB/reason/0');
  const filled = await fillWithOldestSession(16);
  const before = await sessionKeys();
  request.release();

  const done = await waitForRunEnd(t.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answerFor('fullB'));
  assert.deepEqual(done.notices, [STORAGE_FULL]);
  assert.deepEqual(await sessionKeys(), before.filter((k) => k !== filled));
  const saved = JSON.parse((await storage())[`session:${t.session}`]);
  assert.equal(saved.state.status, 'completed', 'the run was saved to its end');
  assert.equal(saved.entries, 9);
});

/**
 * Replaces the content of `page` with visible paragraphs of about `chars` characters in all;
 * returns the last paragraph's label (`Part <n>.`).
 */
const fillPage = (page, chars) => page.evaluate((total) => {
  const sentence = 'The keeper wrote about the fog, the salt and the lamp in a green ledger every night. ';
  const main = document.createElement('main');
  let made = 0;
  let n = 0;
  while (made < total) {
    n += 1;
    const p = document.createElement('p');
    p.textContent = `Part ${n}. ${sentence.repeat(6)}`;
    made += p.textContent.length + 2;
    main.append(p);
  }
  document.body.replaceChildren(main);
  return `Part ${n}.`;
}, chars);

test('a 1 MB page: its whole text is saved, full storage makes room for it, and the run survives a worker stop', async () => {
  const earlier = await tabWithPopup();
  await askQuestion(earlier.popup, 'Q[earlierC] When was the light automated?');
  assert.equal((await waitForRunEnd(earlier.popup, { timeout: RUN_TIMEOUT_MS })).state, 'completed');
  const filled = await fillWithOldestSession(16);
  const before = await sessionKeys();

  // The question's first save needs about 1 MB more than storage has free.
  toHold.add('huge/reason/0');
  const t = await tabWithPopup();
  const last = await fillPage(t.page, 1_000_000);
  await askQuestion(t.popup, 'Q[huge] Who rowed ashore in 1955?');
  const request = await waitForHeld('huge/reason/0');
  const head = await headOf(t.session);
  const pageKey = `page:${t.session}:${head.state.run_id}`;
  const text = (await storage(pageKey))[pageKey];
  assert.ok(text.length > 990_000 && text.length <= 2_000_000, `page text of ${text.length} characters`);
  assert.ok(text.trimEnd().includes(last), 'the page text was cut before its last paragraph');
  assert.equal(phaseOf(head), 'reason');

  // The worker stops while the first call waits; the new one resumes from the saved state.
  await stopAndRestartWorker();
  request.release();
  const done = await waitForRunEnd(t.popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answerFor('huge'));
  // The storage notice, once, nothing about an unsaved run; and what the answer rests on.
  assert.equal(done.notices.length, 2, JSON.stringify(done.notices));
  assert.equal(done.notices[0], STORAGE_FULL);
  assert.match(done.notices[1], /^Based on \d+ of the page's \d{4} passages, chosen for the question\.$/);
  assert.deepEqual(await sessionKeys(), [...before.filter((k) => k !== filled), `session:${t.session}`].sort());
  const all = await storage();
  assert.equal(JSON.parse(all[`session:${t.session}`]).state.status, 'completed', 'the run was saved to its end');
  assert.equal(all[pageKey], text, 'the page text is kept whole with the finished run');
  await screenshot(t.popup, 'popup-storage-1mb.png');
});
