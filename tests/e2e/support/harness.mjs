// One browser per test file with the scripted OpenAI-compatible model configured and the
// fixture pages served: the set-up the UI tests share.

import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, tabIdOf } from './browser.mjs';
import { startScriptedOpenAI } from './openai-server.mjs';
import { serveDirectory } from './static-server.mjs';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

/**
 * Starts the model server (`startModel`, the scripted OpenAI-compatible one unless given), the
 * fixture server and Chromium (with more flags `args`), with the model configured (and
 * `provider`'s other settings); `close()` stops all three.
 */
export async function startHarness(logName, { startModel = startScriptedOpenAI, provider = {}, args = [] } = {}) {
  const llm = await startModel();
  const pages = await serveDirectory(FIXTURES);
  const kl = await launchExtension({ logName, args });
  await configureProvider(kl.context, kl.extId, { ...provider, baseUrl: llm.baseUrl });
  return {
    llm,
    pages,
    kl,
    /** Opens the fixture article in a new tab: its page and chrome.tabs id. */
    async fixtureTab() {
      const page = await kl.context.newPage();
      await page.goto(pages.url('article.html'));
      return { page, tabId: await tabIdOf(kl.context, page) };
    },
    async close() {
      await kl.close();
      await llm.close();
      await pages.close();
    },
  };
}
