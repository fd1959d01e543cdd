// Keys that never leak, in the real browser: Options sends the typed key nowhere until Save or
// Test connection; a key over plain http:// to another computer is refused with the reason; a
// model server that redirects to another origin gets the run ended with a message naming the
// redirect, and the other origin never sees the request or its key; a content script that
// opens the worker's main Port is disconnected and hears no events, while extension pages do.
// Tricky addresses (tests/fixtures/urls.json) get the same answers from Save, Test connection,
// a run and the options page as from the native and unit tests.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, inExtensionPage, launchExtension, openOptions, optionsStatus, runConnectionCheck, tabIdOf,
  waitUntil,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { openWorkerPort } from './support/port.mjs';
import { startRecordingServer } from './support/recording-server.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SECRET = 'sk-e2e-keys-4b1d9c7e2f';
// Tricky addresses and what happens to a key for each (the table the Rust and unit tests read).
const URL_ROWS = JSON.parse(readFileSync(new URL('../fixtures/urls.json', import.meta.url), 'utf8')).rows;

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'keys' });
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

test('Options sends the typed key nowhere until Test connection or Save', async () => {
  const page = await openOptions(kl.context, kl.extId);
  const from = llm.requests.length;
  // Type the address and the key, leave each field (a change event), switch providers and back.
  await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill(llm.baseUrl);
  await page.getByRole('textbox', { name: 'Base URL', exact: true }).press('Tab');
  await page.getByLabel('API key', { exact: true }).fill(SECRET);
  await page.getByLabel('API key', { exact: true }).press('Tab');
  await page.getByRole('combobox', { name: 'Model' }).fill('scripted-model');
  const provider = page.getByRole('combobox', { name: 'Provider', exact: true });
  await provider.selectOption('ollama');
  await provider.selectOption('openai_compatible');
  // The test is the first thing the server hears; the model list comes after it worked.
  llm.script({ content: 'OK' });
  const { text: check } = await runConnectionCheck(page);
  assert.match(check, /Connected in/, check);
  await waitUntil(() => llm.requests.slice(from).some((r) => r.path === '/v1/models'), {
    message: 'the model list after the connection test',
  });
  const seen = llm.requests.slice(from).map((r) => `${r.method} ${r.path}`);
  assert.equal(seen[0], 'POST /v1/chat/completions', `requests in order: ${seen.join(', ')}`);
  assert.equal(llm.requests[from].headers.authorization, `Bearer ${SECRET}`);
  await page.close();
});

test('a key over plain http:// to another computer is refused on Save and on Test connection', async () => {
  const page = await openOptions(kl.context, kl.extId);
  const base = 'http://192.0.2.10:8000/v1';
  await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill(base);
  await page.getByLabel('API key', { exact: true }).fill(SECRET);
  await page.getByRole('combobox', { name: 'Model' }).fill('scripted-model');
  await page.getByRole('button', { name: 'Save' }).click();
  const refused = await optionsStatus(page);
  assert.match(refused, /will not send the API key to http:\/\/192\.0\.2\.10:8000/, refused);
  assert.match(refused, /plain http:\/\/.*https:\/\/.*remove the API key/, refused);
  assert.equal(await page.getByLabel('API key', { exact: true }).getAttribute('aria-invalid'), 'true');
  const { text: check } = await runConnectionCheck(page);
  assert.match(check, /will not send the API key/, check);
  assert.match(check, /https:\/\/192\.0\.2\.10:8000\/v1/, check);
  // Nothing was saved.
  await page.reload();
  await waitUntil(async () => (await page.getByRole('textbox', { name: 'Base URL', exact: true }).inputValue()) !== '', {
    message: 'the settings to load again',
  });
  assert.notEqual(await page.getByRole('textbox', { name: 'Base URL', exact: true }).inputValue(), base);
  await page.close();
});

test('a redirect to another origin ends the run with a message naming it; the key never reaches that origin', async () => {
  const elsewhere = await startRecordingServer(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }));
  // Anthropic's key travels in x-api-key, which fetch would carry across origins on a redirect.
  const redirecting = await startRecordingServer((req) => ({
    status: 307,
    headers: { location: `http://localhost:${elsewhere.port}${req.url}` },
  }));
  try {
    await configureProvider(kl.context, kl.extId, {
      provider: 'anthropic',
      baseUrl: `http://127.0.0.1:${redirecting.port}/v1`,
      model: 'claude-sonnet-4-5',
      apiKey: SECRET,
    });
    const port = await openWorkerPort(kl.context);
    const asked = await port.request({ type: 'ask', session: 'popup', question: 'Where does this go?' });
    assert.equal(asked.ok, true, JSON.stringify(asked));
    await port.waitForEvent('popup', ['failed', 'completed']);
    const snap = await port.request({ type: 'snapshot', session: 'popup' });
    assert.equal(snap.data.status, 'failed', JSON.stringify(snap.data));
    assert.match(snap.data.error.message, /answered with a redirect/, snap.data.error.message);
    assert.match(snap.data.error.message, /Base URL/, snap.data.error.message);
    // Options may also have asked it for the model list after Save (refused the same way).
    const calls = redirecting.requests.filter((r) => r.method === 'POST');
    assert.equal(calls.length, 1, `the redirect is not retried: ${JSON.stringify(redirecting.requests)}`);
    assert.equal(calls[0].path, '/v1/messages');
    assert.equal(calls[0].headers['x-api-key'], SECRET);
    assert.deepEqual(elsewhere.requests, [], 'the other origin was reached');
    await port.page.close();
  } finally {
    await redirecting.close();
    await elsewhere.close();
  }
});

test("a content script's Port is disconnected and hears no events; extension pages still do", async () => {
  await configureProvider(kl.context, kl.extId, { provider: 'openai_compatible', baseUrl: llm.baseUrl });
  const article = await kl.context.newPage();
  await article.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, article);
  // Runs one step in the extension's isolated world in the page: where a content script runs.
  const inContentScript = (step) => inExtensionPage(kl.context, async ({ tabId: id, step: name }) => {
    const steps = {
      connect: () => {
        globalThis.__klHeard = [];
        globalThis.__klClosed = false;
        const p = chrome.runtime.connect({ name: 'knowledgelens' });
        p.onMessage.addListener((message) => globalThis.__klHeard.push(message));
        p.onDisconnect.addListener(() => { globalThis.__klClosed = true; });
        p.postMessage({ id: 1, type: 'snapshot', session: 'popup' });
        return true;
      },
      closed: () => globalThis.__klClosed,
      heard: () => globalThis.__klHeard,
    };
    const [{ result }] = await chrome.scripting.executeScript({ target: { tabId: id }, func: steps[name] });
    return result;
  }, { tabId, step });
  await inContentScript('connect');
  await waitUntil(() => inContentScript('closed'), {
    message: "the worker to disconnect the content script's Port",
  });
  // An extension page runs a question and hears its events.
  const port = await openWorkerPort(kl.context);
  llm.script({ content: 'Heard.' });
  const asked = await port.request({ type: 'ask', session: 'popup', question: 'Who hears this?' });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  const end = await port.waitForEvent('popup', ['completed', 'failed']);
  assert.equal(end.type, 'completed', JSON.stringify(end));
  assert.deepEqual(await inContentScript('heard'), []);
  await port.page.close();
  await article.close();
});

test('tricky addresses: Save, Test connection and a run send a key only where the browser connects to this computer', async () => {
  const port = await openWorkerPort(kl.context);
  const settings = (base) => ({ provider: 'openai_compatible', base_url: base, model: 'm', api_key: SECRET });
  const outcomes = [];
  for (const row of URL_ROWS) {
    const saved = await port.request({ type: 'save_settings', settings: settings(row.url) });
    const refused = !saved.ok && /will not send the API key/.test(saved.error?.message ?? '');
    const outcome = saved.ok ? 'allowed' : refused ? 'refused' : 'invalid';
    outcomes.push(`${row.url} -> ${outcome}`);
    assert.equal(outcome, row.key, `${row.url}: ${JSON.stringify(saved)}`);
    if (row.key === 'refused') {
      const tested = await port.request({ type: 'test_connection', settings: settings(row.url) });
      assert.equal(tested.data?.diagnosis?.problem, 'config', `${row.url}: ${JSON.stringify(tested)}`);
      assert.match(tested.data.diagnosis.summary, /will not send the API key/);
    }
  }
  // A run from settings stored without Save's check (an older version, or by hand) refuses too.
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'scripted-model', apiKey: SECRET });
  const from = llm.requests.length;
  const sneaky = `http://evil.example\\@127.0.0.1:${new URL(llm.baseUrl).port}/v1`;
  await inExtensionPage(kl.context, async (base) => {
    const { settings: stored } = await chrome.storage.local.get('settings');
    const value = typeof stored === 'string' ? JSON.parse(stored) : stored;
    value.base_url = base;
    await chrome.storage.local.set({ settings: typeof stored === 'string' ? JSON.stringify(value) : value });
  }, sneaky);
  const asked = await port.request({ type: 'ask', session: 'popup', question: 'Where does the key go?' });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  await port.waitForEvent('popup', ['failed', 'completed']);
  const snap = await port.request({ type: 'snapshot', session: 'popup' });
  assert.equal(snap.data.status, 'failed', JSON.stringify(snap.data));
  assert.match(snap.data.error.message, /will not send the API key to http:\/\/evil\.example/, snap.data.error.message);
  // (Options may list the models of the address configured first; no chat call goes out.)
  const calls = llm.requests.slice(from).filter((r) => r.path.endsWith('/chat/completions'));
  assert.deepEqual(calls, [], 'a chat request went out');
  await port.page.close();
  // In the options page, the two addresses of the issue: refused with the host fetch would use.
  for (const row of URL_ROWS.filter((r) => r.url.includes('\\') && r.key === 'refused')) {
    const page = await openOptions(kl.context, kl.extId);
    await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill(row.url);
    await page.getByLabel('API key', { exact: true }).fill(SECRET);
    await page.getByRole('button', { name: 'Save' }).click();
    const status = await optionsStatus(page);
    assert.match(status, /will not send the API key to http:\/\/evil\.example/, `${row.url}: ${status}`);
    await page.close();
  }
});
