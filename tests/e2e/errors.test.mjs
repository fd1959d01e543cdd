// Bad input: a provider that is not there, a rejected API key, a page that cannot be read.
// Each run must end with an actionable message, and the popup must be usable again.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf } from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';
import { closedPort, serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'errors' });
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

test('an unreachable provider fails the run with a message pointing at the URL or Options', async () => {
  const port = await closedPort();
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  await configureProvider(kl.context, kl.extId, { baseUrl });

  const popup = await popupForFixture();
  await askQuestion(popup, 'When was Bellhaven Light first lit?');
  const done = await waitForRunEnd(popup, { timeout: 90_000, diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'failed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  const message = done.errorMessage;
  assert.ok(done.error.includes(message), 'the error is not in the alert');
  assert.ok(
    message.includes(`127.0.0.1:${port}`) || /options/i.test(message),
    `the error does not say where to look: "${message}"`,
  );
  assert.ok(done.askEnabled, 'Ask should be enabled again');
  assert.ok(!done.stopEnabled, 'Stop should be disabled after the run');
  await screenshot(popup, 'popup-unreachable.png');
});

test('a 401 from the provider says the API key is the problem', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, apiKey: 'sk-wrong-key' });
  llm.script({
    status: 401,
    body: {
      error: {
        message: 'Incorrect API key provided: sk-wron*****key.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    },
  });

  const popup = await popupForFixture();
  await askQuestion(popup, 'Who was Agnes Tull?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'failed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  const message = done.errorMessage;
  assert.ok(done.error.includes(message), 'the error is not in the alert');
  assert.match(message, /api key/i, `the error does not mention the API key: "${message}"`);
  assert.equal(llm.chatRequests.at(-1).headers.authorization, 'Bearer sk-wrong-key');
  assert.equal(llm.queue.length, 0);
  assert.ok(done.askEnabled, 'Ask should be enabled again');
});

test('a page that cannot be read still gets an answer, with a notice', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  const answer = 'Without the page I can only say that lighthouses guide ships.';
  llm.script({ content: answer });

  const page = await kl.context.newPage();
  await page.goto('chrome://version');
  const tabId = await tabIdOf(kl.context, page);
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'What is this page about?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(answer), `Answer region shows: ${done.answerText}`);
  assert.ok(done.notices.length > 0, 'no notice was shown');
  assert.match(done.notices.join(' '), /page/i, `the notice does not talk about the page: ${done.notices}`);
  assert.equal(llm.queue.length, 0);
  await screenshot(popup, 'popup-unreadable-page.png');
});
