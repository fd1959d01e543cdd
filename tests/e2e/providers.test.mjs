// Providers and the connection doctor, end to end: the first-run setup card; Ollama's native
// API (NDJSON) and the OpenAI-compatible API answering questions; "Test connection" reporting
// success, and the doctor's diagnosis for a 403 from Ollama that the extension's origin rule
// cannot get past (see local-models.test.mjs for the 403 it does), a refused port, a
// 401 and a 404 with the nearest model names; Chrome's built-in model unavailable (Debian's
// Chromium has no on-device model); and the API key never reaching the worker's log.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, launchExtension, openPopup, runConnectionCheck, screenshot, tabIdOf, waitUntil,
} from './support/browser.mjs';
import { startScriptedOllama } from './support/ollama-server.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { closedPort, serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SECRET = 'sk-e2e-provider-secret-51c9';

let kl;
let pages;
let openai;
let ollama;
let locked;

before(async () => {
  pages = await serveDirectory(FIXTURES);
  openai = await startScriptedOpenAI();
  ollama = await startScriptedOllama();
  locked = await startScriptedOllama({ lockOrigins: 'always' });
  kl = await launchExtension({ logName: 'providers' });
});

after(async () => {
  await kl?.close();
  await Promise.all([pages?.close(), openai?.close(), ollama?.close(), locked?.close()]);
});

async function popupForFixture() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
}

/** Opens the options page with the form ready (settings loaded). */
async function optionsPage() {
  const page = await kl.context.newPage();
  await page.setViewportSize({ width: 900, height: 1000 });
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  await waitUntil(async () => page.getByRole('button', { name: 'Test connection' }).isEnabled(), {
    message: 'the options page to load',
  });
  return page;
}

/** Fills the provider fields shown by the options page. */
async function fillProvider(page, { provider, baseUrl, model, apiKey = '' }) {
  await page.getByRole('combobox', { name: 'Provider', exact: true }).selectOption(provider);
  if (baseUrl !== undefined) await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill(baseUrl);
  if (model !== undefined) await page.getByRole('combobox', { name: 'Model' }).fill(model);
  if (provider !== 'chrome_builtin') await page.getByLabel('API key', { exact: true }).fill(apiKey);
}

test('a fresh install shows the setup card, which opens Options with the chosen provider', async () => {
  const popup = await popupForFixture();
  const card = popup.getByRole('region', { name: 'Connect a model' });
  await waitUntil(() => card.isVisible(), { message: 'the setup card' });
  assert.equal(await popup.getByRole('textbox', { name: 'Question' }).isVisible(), false,
    'the question box shows before a model is set up');
  await screenshot(popup, 'popup-setup-card.png');
  await popup.getByRole('combobox', { name: 'Choose a provider' }).selectOption('ollama');
  const opened = kl.context.waitForEvent('page');
  await popup.getByRole('button', { name: 'Set up and test' }).click();
  const options = await opened;
  await options.waitForLoadState();
  assert.match(options.url(), /options\.html\?provider=ollama$/);
  const provider = options.getByRole('combobox', { name: 'Provider', exact: true });
  await waitUntil(async () => (await provider.inputValue()) === 'ollama', { message: 'Ollama preselected' });
  assert.equal(await options.getByRole('textbox', { name: 'Base URL', exact: true }).inputValue(), 'http://localhost:11434');
  await options.close();
});

test('Ollama (native API): Test connection succeeds, the model list fills, and a question is answered', async () => {
  const page = await optionsPage();
  await fillProvider(page, { provider: 'ollama', baseUrl: ollama.baseUrl, model: 'llama3.2' });
  ollama.script({ content: 'OK' });
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'ok', JSON.stringify(check));
  assert.match(check.text, /Connected in [\d,]+ ms\. The model replied: “OK”/, check.text);
  const chat = ollama.chatRequests.at(-1);
  assert.equal(chat.body.stream, false);
  // The extension's session rule removes its Origin from requests to a loopback server.
  assert.equal(chat.origin, undefined, `origin ${chat.origin}`);
  // The Model list is filled from /api/tags.
  await waitUntil(
    async () => (await page.locator('#model-list option').count()) === ollama.models.length,
    { message: 'the Model list from /api/tags' },
  );
  await screenshot(page, 'options-ollama-ok.png');
  await page.getByRole('button', { name: 'Save' }).click();
  await waitUntil(async () => (await page.getByRole('status').textContent()).trim() === 'Saved.', { message: 'Saved.' });
  await page.close();

  const answer = 'The lighthouse was first lit in 1861, and Agnes Tull kept it.';
  ollama.script({ content: answer });
  const popup = await popupForFixture();
  await askQuestion(popup, 'When was the light first lit?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answer);
  const asked = ollama.chatRequests.at(-1).body;
  assert.equal(asked.model, 'llama3.2');
  assert.equal(asked.stream, true, 'the run streams (NDJSON)');
  assert.equal(asked.options?.num_ctx, 8192, 'Ollama is asked for the context window');
  // The fixture page is shown whole, so the tools are sized to it: none (no tokens for them).
  assert.equal(asked.tools, undefined, JSON.stringify(asked.tools));
  assert.equal(ollama.queue.length, 0);
});

test("Ollama's 403 past the origin rule says what KnowledgeLens did and what remains, with OLLAMA_ORIGINS", async () => {
  const page = await optionsPage();
  await fillProvider(page, { provider: 'ollama', baseUrl: locked.baseUrl, model: 'llama3.2' });
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'ollama_origin', JSON.stringify(check));
  assert.ok(check.text.includes(`already sends its requests to ${locked.baseUrl} without the extension's origin`), check.text);
  assert.equal(locked.requests.at(-1).origin, undefined, 'the rule did not remove the Origin');
  const origin = `chrome-extension://${kl.extId}`;
  assert.ok(check.text.includes(`OLLAMA_ORIGINS=${origin} ollama serve`), check.text);
  for (const os of ['systemctl', 'launchctl setenv', 'setx OLLAMA_ORIGINS']) {
    assert.ok(check.text.includes(os), `no ${os} step: ${check.text}`);
  }
  await screenshot(page, 'options-ollama-403.png');
  await page.close();
});

test('a 404 for a missing Ollama model suggests the nearest model the server has', async () => {
  const page = await optionsPage();
  await fillProvider(page, { provider: 'ollama', baseUrl: ollama.baseUrl, model: 'llama3' });
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'not_found', JSON.stringify(check));
  assert.deepEqual(check.buttons, ['Use llama3.2:latest'], JSON.stringify(check));
  assert.match(check.text, /has no model named "llama3"/);
  await page.getByRole('button', { name: 'Use llama3.2:latest' }).click();
  assert.equal(await page.getByRole('combobox', { name: 'Model' }).inputValue(), 'llama3.2:latest');
  ollama.script({ content: 'OK' });
  assert.equal((await runConnectionCheck(page)).result, 'ok');
  await page.close();
});

test('a refused port says nothing is listening there', async () => {
  const port = await closedPort();
  const page = await optionsPage();
  await fillProvider(page, { provider: 'openai_compatible', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' });
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'unreachable', JSON.stringify(check));
  assert.ok(check.text.includes(`Nothing answered at http://127.0.0.1:${port}`), check.text);
  assert.ok(check.text.includes(`listening on port ${port}`), check.text);
  await page.close();
});

test('OpenAI-compatible: a 401 points at the key; a working key connects and answers', async () => {
  const page = await optionsPage();
  await fillProvider(page, { provider: 'openai_compatible', baseUrl: openai.baseUrl, model: 'scripted-model', apiKey: 'sk-wrong' });
  openai.script({ status: 401, body: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error' } } });
  let check = await runConnectionCheck(page);
  assert.equal(check.result, 'auth', JSON.stringify(check));
  assert.match(check.text, /API key was rejected \(HTTP 401\)/);
  assert.match(check.text, /The server said: Incorrect API key provided\./);

  await page.getByLabel('API key', { exact: true }).fill(SECRET);
  openai.script({ content: 'OK' });
  check = await runConnectionCheck(page);
  assert.equal(check.result, 'ok', JSON.stringify(check));
  assert.equal(openai.chatRequests.at(-1).headers.authorization, `Bearer ${SECRET}`);
  await page.close();

  await configureProvider(kl.context, kl.extId, { provider: 'openai_compatible', baseUrl: openai.baseUrl, apiKey: SECRET });
  openai.script({ content: 'Agnes Tull kept the light.' });
  const popup = await popupForFixture();
  await askQuestion(popup, 'Who kept the light?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  const exported = await requestBackend(popup, { type: 'export', session: await popup.evaluate(() => document.documentElement.dataset.session) });
  assert.equal(exported.ok, true);
  assert.ok(!exported.data.json.includes(SECRET), 'the key is in the trajectory export');
  assert.ok(!kl.logs.some((line) => line.includes(SECRET)), 'the key is in the browser log');
});

test("Chrome's built-in model: unavailable here, and the doctor says what it needs", async () => {
  const page = await optionsPage();
  await fillProvider(page, { provider: 'chrome_builtin' });
  assert.equal(await page.getByRole('textbox', { name: 'Base URL', exact: true }).isVisible(), false);
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'builtin_unavailable', JSON.stringify(check));
  assert.match(check.text, /Chrome 138|22 GB|download/, check.text);
  await screenshot(page, 'options-builtin-unavailable.png');
  await page.close();
});
