// Local models just work, end to end. A scripted Ollama that answers 403 to
// chrome-extension:// origins, as Ollama does until OLLAMA_ORIGINS allows them
// (tests/e2e/support/ollama-server.mjs, `lockOrigins`), and a scripted OpenAI-compatible
// server are added to the local-server probe list (the test build's
// globalThis.__klLocalServers, pkg-scripts/lib/test-hooks.js). The setup card lists both
// with their models, and one "Use <model> (<server>)" click answers a question without
// Options; Options' Test connection gets through the 403 too. The declarativeNetRequest
// session rules name only the origin in use, and another provider's save takes it away.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider, launchExtension, openOptions, openPopup, runConnectionCheck, screenshot, tabIdOf, waitUntil,
} from './support/browser.mjs';
import { startScriptedOllama } from './support/ollama-server.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let kl;
let pages;
let ollama;
let openai;

before(async () => {
  pages = await serveDirectory(FIXTURES);
  ollama = await startScriptedOllama({ lockOrigins: true });
  openai = await startScriptedOpenAI();
  kl = await launchExtension({ logName: 'local-models' });
});

after(async () => {
  await kl?.close();
  await Promise.all([pages?.close(), ollama?.close(), openai?.close()]);
});

const portOf = (server) => Number(new URL(server.baseUrl).port);

/** Adds the scripted servers to the worker's probe list (the test build's hook). */
async function probeScriptedServers() {
  const servers = [
    { name: 'Ollama', provider: 'ollama', port: portOf(ollama) },
    { name: 'LM Studio', provider: 'openai_compatible', port: portOf(openai) },
  ];
  await kl.worker.evaluate((added) => {
    globalThis.__klLocalServers.splice(0, Infinity, ...added);
  }, servers);
}

/** The origins the extension's session rules let through without its Origin header. */
async function ruledOrigins() {
  const rules = await kl.worker.evaluate(() => chrome.declarativeNetRequest.getSessionRules());
  return rules.map((rule) => {
    assert.deepEqual(rule.condition.initiatorDomains, [kl.extId]);
    assert.deepEqual(rule.action.requestHeaders, [{ header: 'origin', operation: 'remove' }]);
    const match = /^\^\((.*)\)\/$/.exec(rule.condition.regexFilter);
    assert.ok(match, rule.condition.regexFilter);
    return match[1].split('|').map((origin) => origin.replace(/\\(.)/g, '$1'));
  }).flat();
}

async function popupForFixture() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
}

test('the setup card lists the local servers with their models; "Use llama3.2:latest (Ollama)" answers a question', async () => {
  await probeScriptedServers();
  const popup = await popupForFixture();
  const card = popup.getByRole('region', { name: 'Connect a model' });
  await waitUntil(() => card.isVisible(), { message: 'the setup card' });
  const found = popup.locator('#setup-found');
  await waitUntil(async () => (await found.getAttribute('data-state')) === 'done', { message: 'the probe' });
  const text = (await found.textContent()).replace(/\s+/g, ' ');
  assert.ok(text.includes('Ollama on this computer: llama3.2:latest, qwen2.5:7b'), text);
  assert.ok(text.includes('LM Studio on this computer: scripted-model'), text);
  for (const name of ['Use llama3.2:latest (Ollama)', 'Use qwen2.5:7b (Ollama)', 'Use scripted-model (LM Studio)']) {
    assert.equal(await popup.getByRole('button', { name, exact: true }).count(), 1, name);
  }
  // Only the model lists were asked for, and Ollama's origin check was not in the way.
  const asked = (server) => [...new Set(server.requests.map((r) => `${r.method} ${r.path} ${r.origin ?? r.headers?.origin ?? '(no origin)'}`))];
  assert.deepEqual(asked(ollama), ['GET /api/tags (no origin)']);
  assert.deepEqual(asked(openai), ['GET /v1/models (no origin)']);
  const probed = [ollama.baseUrl, new URL(openai.baseUrl).origin];
  const left = (await ruledOrigins()).filter((origin) => probed.includes(origin));
  assert.deepEqual(left, [], 'the probe left a rule behind');
  await screenshot(popup, 'popup-setup-found.png');

  const answer = 'The lighthouse was first lit in 1861, and Agnes Tull kept it.';
  ollama.script({ content: 'OK' }, { content: answer });
  await popup.getByRole('button', { name: 'Use llama3.2:latest (Ollama)', exact: true }).click();
  const question = popup.getByRole('textbox', { name: 'Question' });
  await waitUntil(() => question.isVisible(), { message: 'the question form after the setup' });
  assert.equal(await card.isVisible(), false);
  await askQuestion(popup, 'When was the light first lit?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.equal(done.answerText, answer);
  const chats = ollama.chatRequests;
  assert.deepEqual(chats.map((r) => [r.body.stream, r.origin]), [[false, undefined], [true, undefined]]);
  assert.equal(chats[1].body.model, 'llama3.2:latest');
  assert.equal(kl.context.pages().some((p) => p.url().includes('options.html')), false, 'Options opened');
  assert.deepEqual([...new Set(await ruledOrigins())], [ollama.baseUrl]);
  await popup.close();
});

test('Ollama refusing extension origins: Options finds it, Test connection succeeds, and the rule goes with another provider', async () => {
  await probeScriptedServers();
  await configureProvider(kl.context, kl.extId, { provider: 'ollama', baseUrl: ollama.baseUrl, model: 'llama3.2' });
  const page = await openOptions(kl.context, kl.extId);
  const found = page.locator('#found-list');
  await waitUntil(async () => (await found.getAttribute('data-state')) === 'done', { message: 'the probe in Options' });
  assert.match((await found.textContent()).replace(/\s+/g, ' '), /Ollama on this computer: llama3\.2:latest, qwen2\.5:7b/);
  ollama.script({ content: 'OK' });
  const check = await runConnectionCheck(page);
  assert.equal(check.result, 'ok', JSON.stringify(check));
  assert.equal(ollama.chatRequests.at(-1).origin, undefined);
  assert.deepEqual([...new Set(await ruledOrigins())], [ollama.baseUrl]);
  await screenshot(page, 'options-found.png');
  await page.close();

  await configureProvider(kl.context, kl.extId, { provider: 'openai_compatible', baseUrl: openai.baseUrl });
  const origins = await ruledOrigins();
  assert.ok(!origins.includes(ollama.baseUrl), `the Ollama rule stayed: ${origins}`);
  assert.deepEqual([...new Set(origins)], [new URL(openai.baseUrl).origin]);
});
