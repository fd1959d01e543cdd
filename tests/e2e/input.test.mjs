// request_input through the real extension: the model asks the user a question, the popup
// shows it (and acknowledges that it did), the user's answer goes back to the model as the
// tool result, and the run completes with it. With the popup closed, nothing acknowledges
// the question, so the first timeout (set to 2 s here) ends the run as timed out.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, inExtensionPage, launchExtension, openPopup, screenshot, tabIdOf, waitUntil,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const QUESTION = 'Do you mean the first lighthouse or the one rebuilt later?';

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'input' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  // The question may wait 2 s to be shown (the default is 300 s).
  const current = await backend({ type: 'get_settings' });
  const saved = await backend({ type: 'save_settings', settings: { ...current.data, input_ack_timeout_secs: 2 } });
  assert.equal(saved.ok, true, JSON.stringify(saved));
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

async function fixtureTab() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return { page, tabId: await tabIdOf(kl.context, page) };
}

const asks = { tool_calls: [{ name: 'request_input', arguments: { question: QUESTION } }] };

test('the model asks, the popup shows the question, the answer completes the run', async () => {
  const answer = 'Bellhaven Light was first lit in 1861; you asked about the first one.';
  llm.queue.length = 0;
  llm.script(asks, { content: JSON.stringify({ should_continue: false, final_answer: answer }) });
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const start = llm.chatRequests.length;
  await askQuestion(popup, 'When was the lighthouse built?');

  const region = popup.getByRole('region', { name: 'Question from KnowledgeLens', exact: true });
  await region.waitFor({ state: 'visible', timeout: 15_000 });
  assert.equal((await region.getByText(QUESTION, { exact: true }).count()), 1, 'the question is shown');
  const status = await popup.getByRole('status').textContent();
  assert.match(status, /Waiting for your answer/);
  // The popup acknowledged showing it: the worker's view says so (and the 2 s limit is off).
  const seen = await waitUntil(
    async () => {
      const reply = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
      return reply.data?.pending_input?.acknowledged ? reply.data : null;
    },
    { message: 'the acknowledgement to reach the worker' },
  );
  assert.equal(seen.pending_input.question, QUESTION);
  await screenshot(popup, 'input-question.png');
  // Past the first timeout, the run still waits for the answer.
  await new Promise((done) => setTimeout(done, 2_500));
  assert.equal(llm.chatRequests.length - start, 1, 'nothing more was asked of the model while waiting');

  await popup.getByRole('textbox', { name: 'Your answer', exact: true }).fill('The first one, from 1861.');
  await region.getByRole('button', { name: 'Send', exact: true }).click();
  const done = await waitForRunEnd(popup, { diagnostics: () => `${llm.timeline(start)}\n${kl.recentLogs()}` });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  assert.equal(done.answerText, answer);
  assert.ok(await region.isHidden(), 'the question is gone once answered');

  const observe = llm.chatRequests[start + 1].body;
  const toolMessage = observe.messages.find((m) => m.role === 'tool');
  assert.equal(toolMessage?.content, 'The user answered: The first one, from 1861.');
  assert.equal(llm.chatRequests.length - start, 2);
});

/** One request to the worker from a throwaway extension page that never shows questions. */
function backend(message) {
  return inExtensionPage(
    kl.context,
    (m) =>
      new Promise((resolve) => {
        const port = chrome.runtime.connect({ name: 'knowledgelens' });
        port.onMessage.addListener((reply) => {
          if (reply?.id !== m.id) return;
          port.disconnect();
          resolve(reply);
        });
        port.postMessage(m);
      }),
    { id: 7, ...message },
  );
}

test('with the popup closed, the question times out and the run ends with that status', async () => {
  llm.queue.length = 0;
  llm.script(asks);
  const { tabId } = await fixtureTab();
  const session = `tab:${tabId}`;
  const start = llm.chatRequests.length;
  const asked = await backend({ type: 'ask', session, question: 'When was the lighthouse built?', tab_id: tabId });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  const view = await waitUntil(
    async () => {
      const reply = await backend({ type: 'snapshot', session });
      return reply.data?.status && reply.data.status !== 'running' ? reply.data : null;
    },
    { timeout: 20_000, interval: 500, message: 'the run to time out' },
  );
  assert.equal(view.status, 'timed_out', JSON.stringify(view));
  assert.equal(view.error?.kind, 'input_timeout');
  assert.match(view.error.message, /within 2 s/);
  assert.equal(view.pending_input, null);
  assert.equal(llm.chatRequests.length - start, 1, 'no model call after the question');

  // A popup opened afterwards shows how the run ended.
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const status = await popup.getByRole('status').textContent();
  assert.match(status, /unanswered/);
  const alert = await popup.getByRole('alert').textContent();
  assert.match(alert, /within 2 s/);
  assert.ok(await popup.getByRole('region', { name: 'Question from KnowledgeLens' }).isHidden());
  await screenshot(popup, 'input-timed-out.png');
});
