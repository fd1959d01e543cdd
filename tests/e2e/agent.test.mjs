// The agent loop through the real extension: a streamed tool call, the tool result going back
// to the model, the model's judgement ending the run; and Stop ending a run with what it has.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, tabIdOf, waitUntil } from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, readPopup, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'agent' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

async function popupForFixture() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
}

test('a streamed tool call runs read_page, and the observation ends the run with its answer', async () => {
  const answer = 'Agnes Tull kept the light from 1902 to 1931 and blamed the salt, not the wind.';
  const before = llm.chatRequests.length;
  llm.script(
    { content: 'Let me read the page.', tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 2000 } }] },
    { content: JSON.stringify({ should_continue: false, final_answer: answer }), json: true },
  );

  const popup = await popupForFixture();
  await askQuestion(popup, 'What did Agnes Tull think was the worst enemy of the light?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answer);
  assert.ok(!done.answerText.includes('Let me read the page.'), 'the thought before the tool call stayed in the answer');
  const [reason, observe] = llm.chatRequests.slice(before).map((r) => r.body);
  // The fixture page is shown whole, so read_page is not offered; a model that calls it anyway
  // still gets the page.
  assert.ok(!reason.tools?.some((t) => t.function?.name === 'read_page'), 'read_page offered for a page shown whole');
  const toolMessage = observe.messages.find((m) => m.role === 'tool');
  assert.ok(toolMessage, `the tool result was not sent back: ${JSON.stringify(observe.messages.map((m) => m.role))}`);
  assert.ok(toolMessage.content.includes('412 litres of colza oil'), 'read_page did not return the page text');
  assert.equal(llm.queue.length, 0);
});

test('Stop ends a run with the best answer it can write', async () => {
  const partial = 'From what I read so far: Bellhaven Light was first lit in 1861.';
  llm.script(
    // Slow enough to press Stop while the model is thinking.
    { tool_calls: [{ name: 'read_page', arguments: { offset: 0 } }], delayMs: 3000 },
    { content: partial },
  );

  const popup = await popupForFixture();
  const start = llm.chatRequests.length;
  await askQuestion(popup, 'Tell me everything about the keepers.');
  const stop = popup.getByRole('button', { name: 'Stop' });
  await waitUntil(() => stop.isEnabled(), { message: 'Stop to be enabled' });
  // Stop while the slow Reason call is in flight (it has reached the server).
  await waitUntil(() => llm.chatRequests.length - start === 1, { message: 'the Reason call to reach the server' });
  await stop.click();
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'stopped', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.match(done.status, /Stopped/);
  assert.ok(done.answerText.includes(partial), `Answer region shows: ${done.answerText}`);
  assert.ok(!done.stopEnabled, 'Stop should be disabled once the run has stopped');
  assert.equal(llm.queue.length, 0);
  // The hung Reason call was abandoned: the tool it would have chosen never ran, and the
  // next request was the synthesis asked for by Stop.
  const after = llm.chatRequests.slice(start);
  assert.equal(after.length, 2, `requests: ${after.length}`);
  const last = after[1].body.messages.at(-1).content;
  assert.match(last, /asked you to stop/);
  assert.ok(!after[1].body.messages.some((m) => m.role === 'tool'), 'no tool ran after Stop');
});
