// The cost meter's inputs: the options page's "Price per million tokens" fieldset
// (three spinbuttons, remembered per provider, checked before saving), and the session view's
// cost and context share after a run through the popup: from the built-in price table for a
// priced model, from the user's prices when set, and null for an unpriced model.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf, waitUntil } from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const NAMES = ['Input price', 'Output price', 'Cached input price'];

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'cost' });
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

async function openOptions() {
  const page = await kl.context.newPage();
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  const baseUrl = page.getByRole('textbox', { name: 'Base URL', exact: true });
  await waitUntil(async () => (await baseUrl.inputValue()) !== '', { message: 'the settings to load' });
  return page;
}

async function saveAndRead(page, previous = '') {
  await page.getByRole('button', { name: 'Save' }).click();
  return waitUntil(
    async () => {
      const text = ((await page.getByRole('status').textContent()) ?? '').trim();
      return text && !['Loading…', 'Saving…', previous].includes(text) ? text : null;
    },
    { message: 'the options status line' },
  );
}

const price = (page, name) => page.getByRole('spinbutton', { name, exact: true });

test('the options page has the price fieldset, checks it, and keeps prices per provider', async () => {
  const page = await openOptions();
  const group = page.getByRole('group', { name: 'Price per million tokens' });
  assert.equal(await group.count(), 1);
  for (const name of NAMES) {
    assert.equal(await group.getByRole('spinbutton', { name, exact: true }).count(), 1, name);
    assert.equal(await page.getByRole('spinbutton', { name, exact: true }).count(), 1, `${name} is unique`);
    assert.equal(await price(page, name).inputValue(), '', `${name} starts empty`);
  }

  // Input without Output is refused, and the status says which field to fix.
  await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill('http://127.0.0.1:9/v1');
  await price(page, 'Input price').fill('0.5');
  const refused = await saveAndRead(page);
  assert.match(refused, /Output price/, refused);
  assert.equal(await price(page, 'Output price').getAttribute('aria-invalid'), 'true');
  const stored = await requestBackend(page, { type: 'get_settings' });
  assert.equal(stored.data.prices?.input ?? null, null, 'refused prices were saved');

  await price(page, 'Output price').fill('1.5');
  await price(page, 'Cached input price').fill('0.05');
  assert.equal(await saveAndRead(page, refused), 'Saved.');
  const saved = await requestBackend(page, { type: 'get_settings' });
  assert.deepEqual(saved.data.prices, { input: 0.5, output: 1.5, cached_input: 0.05 });

  // Another provider has its own (empty) prices; switching back shows the saved ones.
  const provider = page.getByRole('combobox', { name: 'Provider', exact: true });
  await provider.selectOption('anthropic');
  assert.equal(await price(page, 'Input price').inputValue(), '');
  await provider.selectOption('openai_compatible');
  assert.equal(await price(page, 'Input price').inputValue(), '0.5');

  await page.reload();
  await waitUntil(async () => (await price(page, 'Output price').inputValue()) === '1.5', {
    message: 'the saved Output price after a reload',
  });
  assert.equal(await price(page, 'Cached input price').inputValue(), '0.05');

  // Emptying all three goes back to the built-in prices.
  for (const name of NAMES) await price(page, name).fill('');
  assert.equal(await saveAndRead(page), 'Saved.');
  const cleared = await requestBackend(page, { type: 'get_settings' });
  assert.deepEqual(cleared.data.prices, { input: null, output: null, cached_input: null });
  await page.close();
});

/**
 * Asks one question answered in one call with `usage`; returns the session view (and, in
 * `shown`, what the popup showed when the run ended).
 */
async function runAndSnapshot(usage = { prompt_tokens: 12_800, completion_tokens: 1_000 }, shown = {}) {
  llm.script({ content: 'Keepers trimmed the wick.', usage });
  const tab = await kl.context.newPage();
  await tab.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, tab);
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'What did the keepers do?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  shown.tokens = done.tokens;
  shown.costTitle = await popup.locator('#cost').getAttribute('title');
  if (shown.capture) await screenshot(popup, shown.capture);
  const reply = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
  await popup.close();
  await tab.close();
  return reply.data;
}

test('a run on a priced model carries its cost and context share; unpriced gives null', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'gpt-4o-mini' });
  const table = await runAndSnapshot();
  // 12,800 x $0.15/M + 1,000 x $0.60/M = $0.00252; gpt-4o-mini's window is 128,000 tokens.
  assert.equal(table.cost?.source, 'table', JSON.stringify(table.cost));
  assert.ok(Math.abs(table.cost.usd - 0.00252) < 1e-9, String(table.cost.usd));
  assert.ok(Math.abs(table.context_share - 0.1) < 1e-9, String(table.context_share));

  const options = await openOptions();
  await price(options, 'Input price').fill('1');
  await price(options, 'Output price').fill('2');
  assert.equal(await saveAndRead(options), 'Saved.');
  await options.close();
  const mine = await runAndSnapshot();
  assert.equal(mine.cost?.source, 'settings');
  assert.ok(Math.abs(mine.cost.usd - 0.0148) < 1e-9, String(mine.cost.usd));

  const clear = await openOptions();
  for (const name of NAMES) await price(clear, name).fill('');
  assert.equal(await saveAndRead(clear), 'Saved.');
  await clear.close();
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'scripted-model' });
  const unpriced = await runAndSnapshot();
  assert.equal(unpriced.cost, null);
  assert.equal(llm.queue.length, 0);
});

test('cached prompt tokens are shown and priced at the cached rate; every call names the run cache key', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'gpt-4o-mini' });
  const from = llm.chatRequests.length;
  // OpenAI's usage with cached prompt tokens (https://platform.openai.com/docs/api-reference/chat/object).
  const shown = { capture: 'popup-cost-cached.png' };
  const view = await runAndSnapshot(
    { prompt_tokens: 12_800, completion_tokens: 1_000, prompt_tokens_details: { cached_tokens: 10_000 } },
    shown,
  );
  assert.equal(view.usage.cached_input, 10_000, JSON.stringify(view.usage));
  // 2,800 x $0.15/M + 10,000 x $0.075/M (gpt-4o-mini's cached rate) + 1,000 x $0.60/M.
  assert.ok(Math.abs(view.cost.usd - 0.00177) < 1e-9, String(view.cost.usd));
  assert.match(shown.tokens, /^Tokens: 13,800 \/ [\d,]+ \(10,000 cached\)$/);
  assert.match(shown.costTitle, /10,000 prompt tokens were read from the provider's cache/);
  const sent = llm.chatRequests.slice(from);
  assert.ok(sent.length >= 1);
  const keys = new Set(sent.map((r) => r.body.prompt_cache_key));
  assert.equal(keys.size, 1, JSON.stringify([...keys]));
  assert.match([...keys][0], /^kl-[0-9a-f]{16}$/);

  // Without cached tokens the line is as before.
  const plain = {};
  await runAndSnapshot(undefined, plain);
  assert.match(plain.tokens, /^Tokens: [\d,]+ \/ [\d,]+$/);
  const next = llm.chatRequests.at(-1).body.prompt_cache_key;
  assert.ok(next && !keys.has(next), 'a run in another tab (another session) has a key of its own');
  assert.equal(llm.queue.length, 0);
});
