// Walking skeleton: ask about a page through the real popup, a real service worker running the
// wasm backend, and a scripted OpenAI-compatible server; then kill the worker and check that
// the run is restored from storage.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
import { askQuestion, readPopup, waitForRunEnd } from './support/popup.mjs';
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
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'scripted-model' });
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
  llm.script({ content: answer, usage: { prompt_tokens: 420, completion_tokens: 17 } });

  const { tabId } = await openFixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, question);
  const diagnostics = () => kl.recentLogs();
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
  const snapshotsBefore = done.snapshots;
  await stopServiceWorker(kl.context);
  const bootAfter = await waitForWorkerRunning(kl.context);
  assert.notEqual(bootAfter, bootBefore, 'the service worker did not restart');

  await waitUntil(async () => (await readPopup(popup)).snapshots > snapshotsBefore, {
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
});

test('accepts a plain JSON reply when it asked for a stream', async () => {
  const question = 'Who was the last keeper?';
  const answer = 'The last keeper was Tomas Verrell, who rowed ashore in June 1955.';
  const before = llm.chatRequests.length;
  llm.script({ content: answer, json: true });

  const { tabId } = await openFixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, question);
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(answer), `Answer region shows: ${done.answerText}`);
  assert.equal(llm.chatRequests[before].body.stream, true, 'the request should still ask for a stream');
  assert.equal(llm.queue.length, 0);
});
