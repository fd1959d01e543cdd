// Settings: the options page (load, validate, save, normalize), and the storage access level:
// content scripts (which share a process with untrusted pages) must not read the extension's
// storage, where the API key and the runs live.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, inExtensionPage, launchExtension, optionsStatus as statusOf, tabIdOf, waitUntil,
} from './support/browser.mjs';
import { requestBackend } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SECRET = 'sk-e2e-storage-secret-7f3a';

let kl;
let pages;

before(async () => {
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'settings' });
});

after(async () => {
  await kl?.close();
  await pages?.close();
});

test('the options page loads the defaults, refuses a bad URL, and saves normalized settings', async () => {
  const page = await kl.context.newPage();
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  const baseUrl = page.getByRole('textbox', { name: 'Base URL', exact: true });
  await waitUntil(async () => (await baseUrl.inputValue()) !== '', { message: 'the settings to load' });
  assert.equal(await baseUrl.inputValue(), 'http://localhost:11434/v1');
  const provider = page.getByRole('combobox', { name: 'Provider', exact: true });
  assert.deepEqual(await provider.locator('option').allTextContents(), ['OpenAI-compatible', 'Ollama', 'Anthropic', 'Gemini', 'Chrome built-in']);
  assert.equal(await page.getByLabel('API key', { exact: true }).getAttribute('type'), 'password');

  await baseUrl.fill('localhost:11434/v1');
  await page.getByRole('button', { name: 'Save' }).click();
  const refused = await statusOf(page);
  assert.match(refused, /not a valid URL|must start with http/i, refused);
  const stored = await requestBackend(page, { type: 'get_settings' });
  assert.equal(stored.data.base_url, 'http://localhost:11434/v1', 'a refused URL was saved');

  await baseUrl.fill('http://127.0.0.1:8080/v1/');
  await page.getByRole('combobox', { name: 'Model' }).fill('  llama3.2  ');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await statusOf(page, { not: [refused] }), 'Saved.');
  assert.equal(await baseUrl.inputValue(), 'http://127.0.0.1:8080/v1', 'the normalized URL is not shown');

  await page.reload();
  await waitUntil(async () => (await baseUrl.inputValue()) === 'http://127.0.0.1:8080/v1', {
    message: 'the saved Base URL after a reload',
  });
  assert.equal(await page.getByRole('combobox', { name: 'Model' }).inputValue(), 'llama3.2');
  await page.close();
});

test('a content script cannot read chrome.storage.local or chrome.storage.session', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: 'http://127.0.0.1:9/v1', apiKey: SECRET });
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, page);

  const result = await inExtensionPage(
    kl.context,
    async ({ tabId: target }) => {
      // Control: the extension itself does see the settings (so the probe below is not vacuous).
      const own = JSON.stringify(await chrome.storage.local.get(null));
      const [injection] = await chrome.scripting.executeScript({
        target: { tabId: target },
        world: 'ISOLATED',
        func: async () => {
          const probe = {};
          for (const area of ['local', 'session']) {
            try {
              const items = await chrome.storage[area].get(null);
              probe[area] = { ok: true, dump: JSON.stringify(items) };
            } catch (err) {
              probe[area] = { ok: false, error: String(err?.message ?? err) };
            }
          }
          return probe;
        },
      });
      return { own, probe: injection.result };
    },
    { tabId },
  );

  assert.ok(result.own.includes(SECRET), 'control failed: the saved API key is not in chrome.storage.local');
  for (const area of ['local', 'session']) {
    const seen = result.probe[area];
    assert.ok(seen, `no probe result for ${area}`);
    if (seen.ok) {
      assert.equal(seen.dump, '{}', `a content script read chrome.storage.${area}: ${seen.dump}`);
    } else {
      assert.match(seen.error, /not allowed|undefined|Cannot read/i, `unexpected failure for ${area}: ${seen.error}`);
    }
  }
});

test('the Token budget is loaded, refused out of range with the backend message, and saved', async () => {
  const page = await kl.context.newPage();
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  const budget = page.getByRole('spinbutton', { name: 'Token budget', exact: true });
  await waitUntil(async () => (await budget.inputValue()) !== '', { message: 'the settings to load' });
  const saved = (await requestBackend(page, { type: 'get_settings' })).data.token_budget;
  assert.equal(await budget.inputValue(), String(saved));
  assert.deepEqual(
    await budget.evaluate((input) => [input.min, input.max, input.step]),
    ['1000', '10000000', '1000'],
  );
  // Every control keeps a unique name next to the new one.
  for (const [role, name] of [['combobox', 'Provider'], ['textbox', 'Base URL'], ['combobox', 'Model'],
    ['button', 'Save'], ['spinbutton', 'Token budget'], ['spinbutton', 'Context window'],
    ['button', 'Test connection'], ['combobox', 'Search provider'], ['textbox', 'Search base URL'],
    ['button', 'Test search']]) {
    assert.equal(await page.getByRole(role, { name, exact: true }).count(), 1, `${role} "${name}"`);
  }
  for (const label of ['API key', 'Search API key']) {
    assert.equal(await page.getByLabel(label, { exact: true }).count(), 1, `the field "${label}"`);
  }
  assert.equal(await page.getByRole('group', { name: 'Web search', exact: true }).count(), 1);

  // Out of range: the backend refuses it and its message is shown; nothing is saved.
  await budget.fill('500');
  await page.getByRole('button', { name: 'Save' }).click();
  const refused = await statusOf(page);
  assert.match(refused, /^Token budget must be between 1,000 and 10,000,000 \(got 500\)\.$/, refused);
  assert.equal(await budget.getAttribute('aria-invalid'), 'true');
  assert.equal((await requestBackend(page, { type: 'get_settings' })).data.token_budget, saved);

  // Not a whole number: refused before it reaches the backend.
  await budget.fill('');
  await page.getByRole('button', { name: 'Save' }).click();
  const whole = await statusOf(page, { not: [refused] });
  assert.match(whole, /whole number/i);
  assert.equal(await budget.getAttribute('aria-invalid'), 'true');

  await budget.fill('50000');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await statusOf(page, { not: [refused, whole] }), 'Saved.');
  assert.equal(await budget.getAttribute('aria-invalid'), null);
  assert.equal((await requestBackend(page, { type: 'get_settings' })).data.token_budget, 50000);
  await page.reload();
  await waitUntil(async () => (await budget.inputValue()) === '50000', { message: 'the saved budget after a reload' });
  await page.close();
});
