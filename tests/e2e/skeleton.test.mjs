// Walking skeleton: ask about a page through the real popup, a real service worker running the
// wasm backend, and a scripted OpenAI-compatible server; then kill the worker and check that
// the run is restored from storage.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  configureProvider,
  launchExtension,
  openPopup,
  screenshot,
  stopServiceWorker,
  tabIdOf,
  waitForSnapshot,
  waitForWorkerRunning,
  waitUntil,
  workerBootId,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, checkAccessibleNames, readPopup, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
/** A sentence only the fixture article contains. */
const FIXTURE_SENTENCE = 'The lamp at Bellhaven burned 412 litres of colza oil each winter.';

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'skeleton' });
  await configureProvider(kl.context, kl.extId, {
    baseUrl: llm.baseUrl,
    model: 'scripted-model',
    apiKey: 'scripted-model-key',
  });
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

async function openFixtureTab() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return { page, tabId: await tabIdOf(kl.context, page) };
}

function chatBodies() {
  return llm.chatRequests.map((r) => JSON.stringify(r.body));
}

test('answers a question about the page (streamed) and restores the run after the worker is stopped', async () => {
  const question = 'How much oil did the Bellhaven lamp burn each winter?';
  const answer = 'Each winter the Bellhaven lamp burned 412 litres of colza oil.';
  const before = llm.chatRequests.length;
  // A slow reply, so that the running state can be seen.
  llm.script({ content: answer, delayMs: 2500, usage: { prompt_tokens: 420, completion_tokens: 17 } });

  const { tabId } = await openFixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await checkAccessibleNames(popup);
  await askQuestion(popup, question);
  const diagnostics = () => kl.recentLogs();
  const running = await waitUntil(
    async () => {
      const now = await readPopup(popup);
      return now.state === 'running' && /Step 1 of 5/.test(now.status) ? now : null;
    },
    { message: 'the status line to show the running step' },
  );
  assert.match(running.status, /Thinking/);
  assert.ok(running.stopEnabled, 'Stop should be enabled while the run is going');
  assert.ok(!running.askEnabled, 'Ask should be disabled while the run is going');
  const done = await waitForRunEnd(popup, { diagnostics });

  assert.equal(done.state, 'completed', `run did not complete: ${JSON.stringify(done)}\n${diagnostics()}`);
  assert.match(done.status, /Completed/);
  assert.ok(done.answerText.includes(answer), `Answer region shows: ${done.answerText}`);
  assert.ok(done.answer.includes(question), `Answer region lacks the question: ${done.answer}`);
  assert.match(done.tokens, /^Tokens: [\d,]+ \/ [\d,]+$/);
  assert.ok(!done.tokens.startsWith('Tokens: 0 '), `usage was not counted: ${done.tokens}`);

  const sent = llm.chatRequests.slice(before);
  assert.ok(sent.length >= 1, 'the provider received no chat request');
  assert.equal(sent[0].body.stream, true, 'the first request did not ask for a stream');
  const bodies = chatBodies().slice(before);
  assert.ok(bodies.some((b) => b.includes(FIXTURE_SENTENCE)), `no request carried the page text:\n${bodies[0]}`);
  assert.ok(bodies.some((b) => b.includes(question)), 'no request carried the question');
  assert.equal(llm.queue.length, 0, 'the scripted reply was not used');

  // Kill the worker. The popup's port drops; it reconnects (which wakes the worker) and
  // renders a fresh snapshot.
  const bootBefore = await workerBootId(kl.context);
  const connectionBefore = (await readPopup(popup)).snapshotConnection;
  await stopServiceWorker(kl.context);
  const bootAfter = await waitForWorkerRunning(kl.context);
  assert.notEqual(bootAfter, bootBefore, 'the service worker did not restart');

  await waitUntil(async () => (await readPopup(popup)).snapshotConnection > connectionBefore, {
    message: 'the popup to reconnect and render a new snapshot',
  });
  const reconnected = await readPopup(popup);
  assert.equal(reconnected.state, 'completed', JSON.stringify(reconnected));
  assert.ok(reconnected.answerText.includes(answer), `after reconnect: ${reconnected.answerText}`);
  assert.ok(reconnected.answer.includes(question), `after reconnect: ${reconnected.answer}`);

  const fresh = await openPopup(kl.context, kl.extId, tabId);
  await waitForSnapshot(fresh);
  const restored = await readPopup(fresh);
  assert.equal(restored.state, 'completed', JSON.stringify(restored));
  assert.ok(restored.answerText.includes(answer), `fresh popup: ${restored.answerText}`);
  assert.ok(restored.answer.includes(question), `fresh popup: ${restored.answer}`);
  assert.match(restored.status, /Completed/);
  assert.equal(llm.chatRequests.length, before + sent.length, 'restoring the run called the provider again');
  await screenshot(fresh, 'popup-skeleton.png');

  // The trajectory download carries the run.
  const [download] = await Promise.all([
    fresh.waitForEvent('download'),
    fresh.getByRole('button', { name: 'Export trajectory' }).click(),
  ]);
  assert.match(download.suggestedFilename(), /\.json$/);
  const exported = JSON.parse(await readFile(await download.path(), 'utf8'));
  assert.equal(exported.question, question);
  assert.equal(exported.answer, answer);
  assert.ok(!JSON.stringify(exported).includes('scripted-model-key'), 'the export leaks the API key');
});

test('accepts a plain JSON reply when it asked for a stream (asked with Enter, 3 max steps)', async () => {
  const question = 'Who was the last keeper?';
  // Model output is untrusted: markup in it must show as text.
  const answer = 'The last keeper was <b>Tomas Verrell</b>, who rowed ashore in June 1955.<img src=x>';
  const before = llm.chatRequests.length;
  llm.script({ content: answer, json: true });

  const { tabId } = await openFixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, question, { maxSteps: 3, pressEnter: true });
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(answer), `Answer region shows: ${done.answerText}`);
  assert.equal(await popup.locator('#answer b, #answer img').count(), 0, 'the answer was parsed as HTML');
  assert.equal(llm.chatRequests[before].body.stream, true, 'the request should still ask for a stream');
  assert.equal(llm.queue.length, 0);
  const snapshot = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
  assert.equal(snapshot.ok, true, JSON.stringify(snapshot));
  assert.equal(snapshot.data.max_steps, 3, 'the Max steps field was not sent with the question');
});

test('a run interrupted by a worker stop is resumed and finishes', async () => {
  const question = 'When was Bellhaven Light automated?';
  const answer = 'It was automated in 1955, with an acetylene burner and a sun valve.';
  const before = llm.chatRequests.length;
  // The first call is still waiting when the worker dies; the resumed run asks again.
  llm.script({ content: 'never delivered', delayMs: 4000 }, { content: answer });

  const { tabId } = await openFixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, question);
  await waitUntil(() => llm.chatRequests.length > before, { message: 'the first model call' });
  const bootBefore = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  const bootAfter = await waitForWorkerRunning(kl.context);
  assert.notEqual(bootAfter, bootBefore, 'the service worker did not restart');

  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(answer), `Answer region shows: ${done.answerText}`);
  assert.ok(!done.answerText.includes('never delivered'));
  assert.equal(
    llm.chatRequests.length,
    before + 2,
    `the resumed run should call the model exactly once more:\n${llm.timeline(before)}`,
  );
});
