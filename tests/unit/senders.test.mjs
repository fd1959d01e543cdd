// Who may open the worker's Ports (extension/senders.js): the main Port, this extension's own
// pages at the top of their window or tab, never a content script (same extension id, but the
// web page's URL), another extension, a frame inside a page or the in-page panel; the panel's
// Port, only our panel document in a frame of the tab it names.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isOwnExtensionPage, panelRun } from '../../extension/senders.js';

const ID = 'abcdefghijklmnopabcdefghijklmnop';
const runtime = { id: ID, getURL: (path) => `chrome-extension://${ID}/${path}` };

test("this extension's pages may connect", () => {
  for (const page of ['popup.html', 'popup.html?tab=4', 'sidepanel.html', 'options.html?provider=ollama']) {
    assert.equal(isOwnExtensionPage({ id: ID, url: `chrome-extension://${ID}/${page}` }, runtime), true, page);
  }
  // An extension page opened in a tab (or a window) has a tab, and is still ours.
  assert.equal(isOwnExtensionPage({ id: ID, url: `chrome-extension://${ID}/popup.html`, tab: { id: 3 } }, runtime), true);
  assert.equal(isOwnExtensionPage({ id: ID, url: `chrome-extension://${ID}/popup.html?tab=4`, tab: { id: 3 }, frameId: 0 }, runtime), true);
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
    // Our pages in a frame inside a page (web-accessible pages can be framed by any site).
    { id: ID, url: `chrome-extension://${ID}/popup.html`, tab: { id: 3 }, frameId: 5 },
    // The in-page panel, at its dynamic origin or ours, framed or not.
    { id: ID, url: 'chrome-extension://0f1e2d3c-aaaa-bbbb-cccc-000000000000/panel.html?tab=3&run=2', tab: { id: 3 }, frameId: 5 },
    { id: ID, url: `chrome-extension://${ID}/panel.html?tab=3&run=2`, frameId: 0 },
  ];
  for (const sender of refused) {
    assert.equal(isOwnExtensionPage(sender, runtime), false, JSON.stringify(sender));
  }
});

test('the panel Port: our panel document in a frame of the tab it names, with its run', () => {
  const dynamic = 'chrome-extension://0f1e2d3c-aaaa-bbbb-cccc-000000000000';
  assert.deepEqual(panelRun({ id: ID, url: `${dynamic}/panel.html?tab=3&run=2`, tab: { id: 3 }, frameId: 5 }, runtime), { tabId: 3, run: 2 });
  assert.deepEqual(panelRun({ id: ID, url: `chrome-extension://${ID}/panel.html?tab=3&run=0`, tab: { id: 3 }, frameId: 1 }, runtime), { tabId: 3, run: 0 });
  // A panel that follows the run its action started names it in `run` (panel-frame.js follow).
  assert.deepEqual(panelRun({ id: ID, url: `chrome-extension://${ID}/panel.html?tab=3&run=7&key=k&opened=2`, tab: { id: 3 }, frameId: 1 }, runtime), { tabId: 3, run: 7 });
  const refused = [
    undefined,
    // A content script (the page's URL), another extension's panel, another page of ours.
    { id: ID, url: 'https://example.com/panel.html?tab=3&run=2', tab: { id: 3 }, frameId: 5 },
    { id: 'otherextensionidotherextensionid', url: `${dynamic}/panel.html?tab=3&run=2`, tab: { id: 3 }, frameId: 5 },
    { id: ID, url: `${dynamic}/popup.html?tab=3&run=2`, tab: { id: 3 }, frameId: 5 },
    // Not in a frame, not in a tab, another tab than it names, no run.
    { id: ID, url: `${dynamic}/panel.html?tab=3&run=2`, tab: { id: 3 }, frameId: 0 },
    { id: ID, url: `${dynamic}/panel.html?tab=3&run=2`, frameId: 5 },
    { id: ID, url: `${dynamic}/panel.html?tab=4&run=2`, tab: { id: 3 }, frameId: 5 },
    { id: ID, url: `${dynamic}/panel.html?tab=3`, tab: { id: 3 }, frameId: 5 },
    { id: ID, url: `${dynamic}/panel.html?tab=3&run=-1`, tab: { id: 3 }, frameId: 5 },
  ];
  for (const sender of refused) assert.equal(panelRun(sender, runtime), null, JSON.stringify(sender));
});
