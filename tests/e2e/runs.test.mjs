// Runs that cannot wait forever, through the real extension: closing a tab stops the run
// waiting on its question (the session goes, and so does the keep-alive alarm); a lone
// surrogate in a question sent over the real Port is accepted (replaced by U+FFFD); saved
// settings that cannot be read make the popup say so and lead to Options, which says so too.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, inExtensionPage, launchExtension, openOptions, openPopup, optionsStatus, screenshot, tabIdOf,
  waitUntil,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { openWorkerPort } from './support/port.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const QUESTION = 'Do you mean the first lighthouse or the one rebuilt later?';
const KEEPALIVE = 'knowledgelens-keepalive';
const END = ['completed', 'failed', 'stopped', 'timed_out'];

let kl;
let llm;
let pages;
let worker;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'runs' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  worker = await openWorkerPort(kl.context);
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

/** The extension's storage keys (session area) that belong to `session`. */
function sessionKeys(session) {
  return worker.page.evaluate(
    async (s) => Object.keys(await chrome.storage.session.get(null)).filter((k) => k.includes(s)),
    session,
  );
}

function keepAlive() {
  return worker.page.evaluate(async (name) => Boolean(await chrome.alarms.get(name)), KEEPALIVE);
}

test('closing a tab stops the run waiting on its question and removes its session', async () => {
  llm.queue.length = 0;
  // The question, then (as after Stop) the answer written from what the run has.
  llm.script(
    { tool_calls: [{ name: 'request_input', arguments: { question: QUESTION } }] },
    { content: 'Stopped: Bellhaven Light was first lit in 1861.' },
  );
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, page);
  const session = `tab:${tabId}`;
  const from = (await worker.events(session)).length;
  const asked = await worker.request({ type: 'ask', session, question: 'When was it built?', tab_id: tabId });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  await worker.waitForEvent(session, 'awaiting_input', { from });
  // Shown and acknowledged, as a popup does: the run now waits for the answer.
  const view = (await worker.request({ type: 'snapshot', session })).data;
  const acked = await worker.request({ type: 'ack_input', session, request_id: view.pending_input.request_id });
  assert.equal(acked.ok, true, JSON.stringify(acked));
  assert.ok(await keepAlive(), 'the keep-alive alarm is set while the run waits');
  assert.ok((await sessionKeys(session)).length > 0);

  const closedAt = Date.now();
  await page.close();
  const end = await worker.waitForEvent(session, END, { from });
  assert.equal(end.type, 'stopped', JSON.stringify(end));
  const stopMs = Date.now() - closedAt;
  await waitUntil(async () => (await sessionKeys(session)).length === 0, {
    message: 'the closed tab\'s session to be removed',
  });
  // The keep-alive loop looks every 20 s; with no run left it clears the alarm.
  await waitUntil(async () => !(await keepAlive()), { timeout: 30_000, interval: 250, message: 'the keep-alive alarm to go' });
  console.log(`# closed tab -> run stopped in ${stopMs} ms; keep-alive gone ${Date.now() - closedAt} ms after the close`);
});

test('a lone surrogate in a question sent over the real Port is replaced, not refused', async () => {
  llm.queue.length = 0;
  llm.script({ content: 'It is half of an emoji.' });
  const from = (await worker.events('popup')).length;
  // Built in the page, so the string really holds a lone surrogate when it is posted.
  const reply = await worker.page.evaluate(
    () =>
      new Promise((resolve) => {
        const port = chrome.runtime.connect({ name: 'knowledgelens' });
        port.onMessage.addListener((message) => {
          if (message?.id !== 4242) return;
          port.disconnect();
          resolve(message);
        });
        const question = `What is ${String.fromCharCode(0xd800)}?`;
        port.postMessage({ id: 4242, type: 'ask', session: 'popup', question });
      }),
  );
  assert.equal(reply.ok, true, JSON.stringify(reply));
  assert.equal(reply.data.question, 'What is \uFFFD?');
  const end = await worker.waitForEvent('popup', END, { from });
  assert.equal(end.type, 'completed', JSON.stringify(end));
  const sent = JSON.stringify(llm.chatRequests.at(-1).body.messages);
  assert.ok(sent.includes('What is \uFFFD?'), 'the model got the question with U+FFFD');
});

test('unreadable saved settings: the popup says runs use the defaults and leads to Options', async () => {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, page);
  // Options opens in a new tab only when none is open (else Chrome shows that one).
  await worker.page.close();
  try {
    await inExtensionPage(kl.context, () => chrome.storage.local.set({ settings: '{"version": 3, "token_budget": "lots' }));
    const popup = await openPopup(kl.context, kl.extId, tabId);
    const alert = popup.getByRole('alert');
    await alert.waitFor({ state: 'visible' });
    const text = await alert.textContent();
    assert.match(text, /saved settings are unreadable/);
    assert.match(text, /default model server \(http:\/\/localhost:11434\/v1\)/);
    assert.match(text, /Open Options/);
    await screenshot(popup, 'runs-settings-unreadable.png');
    const opened = kl.context.waitForEvent('page', { predicate: (p) => p.url().includes('/options.html') });
    await alert.getByRole('button', { name: 'Check the provider in Options', exact: true }).click();
    const options = await opened;
    await options.waitForLoadState();
    const status = await optionsStatus(options);
    assert.match(status, /saved settings are unreadable/);
    await options.close();
    await popup.close();
  } finally {
    await page.close();
    // Saving again replaces the unreadable record.
    await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
    worker = await openWorkerPort(kl.context);
  }
});

test('Options shows the finite answer timeout: 60 s to a day, 30 minutes by default', async () => {
  const options = await openOptions(kl.context, kl.extId);
  try {
    const field = options.getByRole('spinbutton', { name: 'Time to answer a question', exact: true });
    assert.equal(await field.inputValue(), '1800');
    assert.equal(await field.getAttribute('min'), '60');
    assert.equal(await field.getAttribute('max'), '86400');
    await field.fill('0');
    await options.getByRole('button', { name: 'Save' }).click();
    const refused = await optionsStatus(options);
    assert.match(refused, /from 60 to 86,400, e\.g\. 1,800/);
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    await field.fill('600');
    await options.getByRole('button', { name: 'Save' }).click();
    assert.equal(await optionsStatus(options, { not: [refused] }), 'Saved.');
    const saved = await worker.request({ type: 'get_settings' });
    assert.equal(saved.data.input_answer_timeout_secs, 600);
  } finally {
    await options.close();
  }
});
