// Hostile and broken model servers (support/hostile-server.mjs), one fault per test, with the
// "Model call deadline" shortened to 10 s (its minimum) in Options. For each fault the run
// ends within its deadline with a clear message in the popup, the worker answers a normal
// question in another tab (while the fault is still holding its call where it can), and no
// panic reaches the worker's log.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openPopup } from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { startHostileOpenAI } from './support/hostile-server.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';

const DEADLINE_S = 10;
/** Time a run may take past its deadline: the popup's polling, retries' back-off, the UI. */
const SLACK_MS = 6_000;
const ANSWER = 'Bellhaven Light was first lit in 1861.';

let harness;
let kl;
let llm;

before(async () => {
  harness = await startHarness('hostile', {
    startModel: async () => {
      const server = await startHostileOpenAI({ lateMs: 15_000 });
      server.respondWith(() => ({ content: ANSWER }));
      return server;
    },
    provider: { modelDeadline: DEADLINE_S },
  });
  ({ kl, llm } = harness);
});

after(async () => {
  await harness?.close();
});

async function popupForFixture() {
  const { tabId } = await harness.fixtureTab();
  return openPopup(kl.context, kl.extId, tabId);
}

/** Asks a question that triggers `mode`; the popup and when it was asked. */
async function askFault(mode) {
  const popup = await popupForFixture();
  const started = Date.now();
  await askQuestion(popup, `When was Bellhaven Light first lit? fault:${mode}`);
  return { popup, started };
}

/** Waits for the fault's run to end; checks it failed in time with a message in the alert. */
async function faultEnded({ popup, started }, mode) {
  const done = await waitForRunEnd(popup, {
    timeout: DEADLINE_S * 1000 + SLACK_MS + 10_000,
    diagnostics: () => `${llm.timeline()}\n${kl.recentLogs()}`,
  });
  const elapsed = Date.now() - started;
  assert.equal(done.state, 'failed', `${mode}: ${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.error.includes(done.errorMessage), `${mode}: the error is not in the alert`);
  assert.ok(elapsed < DEADLINE_S * 1000 + SLACK_MS, `${mode}: the run took ${elapsed} ms`);
  assert.ok(done.askEnabled, `${mode}: Ask should be enabled again`);
  await popup.close();
  return { ...done, elapsed };
}

/** A normal question in another tab is answered while (or after) a fault ran. */
async function normalQuestionAnswered() {
  const popup = await popupForFixture();
  await askQuestion(popup, 'When was Bellhaven Light first lit?');
  const done = await waitForRunEnd(popup, { timeout: 20_000, diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(ANSWER), `the answer shows: ${done.answerText}`);
  await popup.close();
}

function assertNoPanic() {
  const bad = kl.logs.filter((l) => /panicked|RuntimeError|unreachable executed|Aborted\(/i.test(l));
  assert.deepEqual(bad, [], 'the worker logged a panic or trap');
}

test('a tool-call index of 4294967295 is a protocol error, not an allocation', async () => {
  const run = await askFault('huge-index');
  const done = await faultEnded(run, 'huge-index');
  assert.match(done.errorMessage, /tool call numbered 4294967295; a reply may carry at most 64/);
  assert.equal(llm.faults['huge-index'], 1, 'a protocol error is not retried');
  await normalQuestionAnswered();
  assertNoPanic();
});

test('endless keep-alive comments end at the model call deadline; the worker answers meanwhile', async () => {
  const run = await askFault('keep-alive');
  await normalQuestionAnswered();
  const done = await faultEnded(run, 'keep-alive');
  assert.match(done.errorMessage, new RegExp(`model call deadline \\(${DEADLINE_S} s\\)`));
  assert.match(done.errorMessage, /"Model call deadline" in Options/);
  assert.ok(done.elapsed >= DEADLINE_S * 1000 - 500, `ended after ${done.elapsed} ms, before the deadline`);
  assert.equal(llm.faults['keep-alive'], 1, 'a call past its deadline is not retried');
  assertNoPanic();
});

test('a 50 MB streamed body is abandoned at the reply cap', async () => {
  const run = await askFault('big-body');
  const done = await faultEnded(run, 'big-body');
  assert.match(done.errorMessage, /sent more than \d+(\.\d)? MB for one reply/);
  assert.ok(llm.bigBodySent < 20 * 1024 * 1024, `the server got to send ${llm.bigBodySent} bytes`);
  assert.equal(llm.closedEarly['big-body'], 1, 'the client dropped the body');
  await normalQuestionAnswered();
  assertNoPanic();
});

test('a stream cut before [DONE] is retried, then fails saying the reply was cut off', async () => {
  const run = await askFault('cut');
  const done = await faultEnded(run, 'cut');
  assert.match(done.errorMessage, /was cut off before it ended \(no `\[DONE\]` arrived\)/);
  assert.match(done.errorMessage, /Gave up after \d+ attempts/);
  assert.ok(llm.faults.cut > 1, `the cut reply was not retried (${llm.faults.cut} request)`);
  assert.ok(!done.answerText.includes('The keeper lit the'), 'the cut text was shown as the answer');
  await normalQuestionAnswered();
  assertNoPanic();
});

test('an HTML page answering 200 is named, never shown as the answer', async () => {
  const run = await askFault('html');
  const done = await faultEnded(run, 'html');
  assert.equal(
    done.errorMessage.split(' Open Options')[0],
    `The server at ${llm.baseUrl} answered with an HTML page, not an OpenAI-compatible reply: ` +
      'check the Base URL in Options (a proxy or sign-in page may be in the way).',
  );
  assert.ok(!done.answerText.includes('Hotel Wi-Fi'), 'the page was shown as the answer');
  assert.equal(llm.faults.html, 1, 'a wrong Base URL is not retried');
  await normalQuestionAnswered();
  assertNoPanic();
});

test('a first byte later than the deadline ends the call at the deadline', async () => {
  const run = await askFault('late');
  await normalQuestionAnswered();
  const done = await faultEnded(run, 'late');
  assert.match(done.errorMessage, new RegExp(`model call deadline \\(${DEADLINE_S} s\\)`));
  assert.equal(llm.faults.late, 1);
  assertNoPanic();
});

test('malformed JSON in every field ends the run saying nothing could be read, not with garbage', async () => {
  const run = await askFault('bad-json');
  const done = await faultEnded(run, 'bad-json');
  assert.match(
    done.errorMessage,
    /sent a reply with no answer or tool call that could be read \(\d+ of its parts were not in the OpenAI-compatible format\)/,
  );
  assert.doesNotMatch(done.answerText, /hello|nested|unterminated|\[object/);
  assert.equal(llm.faults['bad-json'], 1, 'a server that speaks another format is not retried');
  await normalQuestionAnswered();
  assertNoPanic();
});
