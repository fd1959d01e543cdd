// Web search in Options: the "Web search" fieldset (off by default), "Test search" running one
// real query against a scripted MediaWiki on loopback and showing the count in the region
// "Search check" (not in the status line), a refused port diagnosed there, the search
// settings validated on Save and kept across a reload, and a screenshot of the page.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  launchExtension, openOptions as openOptionsPage, optionsStatus as statusOf, runSearchCheck as testSearch, screenshot, waitUntil,
} from './support/browser.mjs';
import { startScriptedMediaWiki } from './support/mediawiki-server.mjs';
import { requestBackend } from './support/popup.mjs';
import { closedPort } from './support/static-server.mjs';

let kl;
let wiki;

const openOptions = () => openOptionsPage(kl.context, kl.extId);

before(async () => {
  wiki = await startScriptedMediaWiki();
  kl = await launchExtension({ logName: 'search-options' });
});

after(async () => {
  await kl?.close();
  await wiki?.close();
});

test('search is off by default and the page says why', async () => {
  const page = await openOptions();
  const provider = page.getByRole('combobox', { name: 'Search provider', exact: true });
  assert.equal(await provider.inputValue(), 'off');
  assert.deepEqual(
    await provider.locator('option').evaluateAll((options) => options.map((o) => o.value)),
    ['off', 'wikipedia', 'searxng', 'brave', 'tavily'],
  );
  assert.equal(await page.getByLabel('Search API key', { exact: true }).getAttribute('type'), 'password');
  assert.match(await page.locator('.lead').textContent(), /Web search is off by default, because it sends the question to a\s+third party/);
  const text = await testSearch(page);
  assert.match(text, /Web search is off: choose a Search provider/, text);
  await page.close();
});

test('"Test search" against a MediaWiki on loopback shows the count; Save keeps the search settings', async () => {
  const page = await openOptions();
  const statusBefore = ((await page.getByRole('status').textContent()) ?? '').trim();
  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('wikipedia');
  await page.getByRole('textbox', { name: 'Search base URL', exact: true }).fill(`${wiki.url}/`);
  const seen = wiki.requests.length;
  const text = await testSearch(page);
  assert.match(text, /^Search check\s*Wikipedia found 2 results for “web browser” in [\d,]+ ms\./, text);
  assert.match(text, /Web browser\s*Chromium/, text);
  assert.equal(await page.locator('#search-check').getAttribute('data-result'), 'ok');
  // The result is in the region, not in the status line.
  assert.equal(((await page.getByRole('status').textContent()) ?? '').trim(), statusBefore);
  const asked = wiki.requests.slice(seen);
  assert.equal(asked.length, 2, asked.map(String).join('\n'));
  assert.equal(asked[0].searchParams.get('list'), 'search');
  assert.equal(asked[0].searchParams.get('srsearch'), 'web browser');
  assert.equal(asked[0].searchParams.get('origin'), '*');
  assert.equal(asked[1].searchParams.get('prop'), 'extracts');
  await screenshot(page, 'search-options.png');

  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await statusOf(page), 'Saved.');
  const saved = (await requestBackend(page, { type: 'get_settings' })).data;
  assert.equal(saved.search_provider, 'wikipedia');
  assert.equal(saved.search_base_url, wiki.url, 'the trailing slash is dropped');
  await page.reload();
  const baseUrl = page.getByRole('textbox', { name: 'Search base URL', exact: true });
  await waitUntil(async () => (await baseUrl.inputValue()) === wiki.url, { message: 'the saved Search base URL after a reload' });
  assert.equal(await page.getByRole('combobox', { name: 'Search provider', exact: true }).inputValue(), 'wikipedia');
  await page.close();
});

test('a refused port is diagnosed in the Search check', async () => {
  const page = await openOptions();
  const port = await closedPort();
  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('wikipedia');
  await page.getByRole('textbox', { name: 'Search base URL', exact: true }).fill(`http://127.0.0.1:${port}`);
  const text = await testSearch(page);
  assert.match(text, /Could not reach Wikipedia \(.+\)\. Check the connection, and the Search base URL in Options\./, text);
  assert.equal(await page.locator('#search-check').getAttribute('data-result'), 'network');
  await screenshot(page, 'search-options-refused.png');
  await page.close();
});

test('Save refuses search settings that cannot work, naming the field', async () => {
  const page = await openOptions();
  const saved = (await requestBackend(page, { type: 'get_settings' })).data;
  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('searxng');
  const baseUrl = page.getByRole('textbox', { name: 'Search base URL', exact: true });
  await baseUrl.fill('');
  await page.getByRole('button', { name: 'Save' }).click();
  const refused = await statusOf(page);
  assert.match(refused, /SearXNG needs the address of your instance/, refused);
  assert.equal(await baseUrl.getAttribute('aria-invalid'), 'true');

  await baseUrl.fill('localhost:8888');
  await page.getByRole('button', { name: 'Save' }).click();
  const bad = await statusOf(page, { not: [refused] });
  assert.match(bad, /Search base URL/, bad);
  assert.equal(await baseUrl.getAttribute('aria-invalid'), 'true');

  await page.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('brave');
  await baseUrl.fill('');
  await page.getByRole('button', { name: 'Save' }).click();
  const key = await statusOf(page, { not: [refused, bad] });
  assert.match(key, /Brave Search needs an API key/, key);
  assert.equal(await page.getByLabel('Search API key', { exact: true }).getAttribute('aria-invalid'), 'true');
  const after = (await requestBackend(page, { type: 'get_settings' })).data;
  assert.equal(after.search_provider, saved.search_provider, 'refused settings were saved');
  await page.close();
});
