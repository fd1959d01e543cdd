// Storage access level: content scripts (which share a process with untrusted pages) must not
// read the extension's storage, where the API key and the runs live.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, inExtensionPage, launchExtension, tabIdOf } from './support/browser.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SECRET = 'sk-e2e-storage-secret-7f3a';

let kl;
let pages;

before(async () => {
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'storage' });
});

after(async () => {
  await kl?.close();
  await pages?.close();
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
