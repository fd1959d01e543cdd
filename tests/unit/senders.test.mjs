// Who may open the worker's main Port (extension/senders.js): this extension's own pages,
// never a content script (same extension id, but the web page's URL) or another extension.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isOwnExtensionPage } from '../../extension/senders.js';

const ID = 'abcdefghijklmnopabcdefghijklmnop';
const runtime = { id: ID, getURL: (path) => `chrome-extension://${ID}/${path}` };

test("this extension's pages may connect", () => {
  for (const page of ['popup.html', 'popup.html?tab=4', 'sidepanel.html', 'options.html?provider=ollama']) {
    assert.equal(isOwnExtensionPage({ id: ID, url: `chrome-extension://${ID}/${page}` }, runtime), true, page);
  }
  // An extension page opened in a tab has a tab, and is still ours.
  assert.equal(isOwnExtensionPage({ id: ID, url: `chrome-extension://${ID}/popup.html`, tab: { id: 3 } }, runtime), true);
});

test('content scripts, other extensions and odd senders may not', () => {
  const refused = [
    undefined,
    null,
    {},
    // Our own content script: our id, but a web page's URL and a tab.
    { id: ID, url: 'https://example.com/', tab: { id: 3 }, frameId: 0 },
    { id: ID, url: 'http://127.0.0.1:8080/article.html', tab: { id: 3 }, frameId: 2 },
    // A page of another extension.
    { id: 'otherextensionidotherextensionid', url: 'chrome-extension://otherextensionidotherextensionid/popup.html' },
    // Our URL claimed by a sender with another id, or our id without a URL.
    { id: 'otherextensionidotherextensionid', url: `chrome-extension://${ID}/popup.html` },
    { id: ID },
    { id: ID, url: `chrome-extension://${ID}evil/popup.html` },
    { id: ID, url: `https://evil.example/chrome-extension://${ID}/` },
  ];
  for (const sender of refused) {
    assert.equal(isOwnExtensionPage(sender, runtime), false, JSON.stringify(sender));
  }
});
