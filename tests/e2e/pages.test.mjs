// Questions across pages, end to end (issue 40): two fixture pages on different origins
// (Leaves on 127.0.0.1, the Bellhaven article on localhost) are read with KnowledgeLens; a
// question on the second with the first added ("Add pages", the checkbox "Leaves
// (127.0.0.1)", "Add"):
// - the scripted model server's request holds both pages' text, the first page's passages
//   numbered in their own block ([p101]);
// - the answer's sources name both pages, and "Show on page" for the added page's passage
//   switches to its tab and highlights it there;
// - once that tab is closed, its page still answers (the read pages outlive tabs), and
//   "Show on page" opens its URL in a new tab;
// - "Also using: Leaves (127.0.0.1)" is shown, and "Remove" takes it out.
// And the store's cap (lowered to 2 by the test build's hook, __klReadPagesCap): the least
// recently used page goes first, never one the asking conversation uses (also natively, with
// the real caps, in tests/native/read_pages.rs).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openPopup, screenshot, tabIdOf, waitUntil } from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { askQuestion, readPopup, waitForRunEnd } from './support/popup.mjs';

const LEAVES_TEXT = 'sugar maples of the Marrow valley turn crimson';
const ARTICLE_TEXT = 'Keeper Agnes Tull';
const ANSWER = 'Agnes Tull kept Bellhaven Light and blamed the salt [p1], and in autumn the Marrow valley maples turn crimson [p101].';
const HIGHLIGHT = 'knowledgelens-passage';

let harness;

before(async () => {
  harness = await startHarness('pages');
});

after(async () => {
  await harness?.close();
});

/** The active tab's id, as the worker sees it. */
const activeTabId = (kl) => kl.worker.evaluate(async () => (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0]?.id ?? null);

test('a question on one page uses a page read in another tab, cites both, and shows each', async () => {
  const { kl, llm, pages } = harness;
  const leavesUrl = pages.url('leaves.html');
  const articleUrl = pages.url('article.html').replace('//127.0.0.1:', '//localhost:');

  // Leaves is read once (a question about it in its own tab).
  const leaves = await kl.context.newPage();
  await leaves.goto(leavesUrl);
  const leavesTab = await tabIdOf(kl.context, leaves);
  llm.script({ content: 'They turn crimson [p1].' });
  const first = await openPopup(kl.context, kl.extId, leavesTab);
  await askQuestion(first, 'What colour do the maples turn?');
  assert.equal((await waitForRunEnd(first, { diagnostics: () => kl.recentLogs() })).state, 'completed');
  await first.close();

  // On the article: "Add pages" lists Leaves by title and site; "Add" adds it.
  const article = await kl.context.newPage();
  await article.goto(articleUrl);
  const articleTab = await tabIdOf(kl.context, article);
  const popup = await openPopup(kl.context, kl.extId, articleTab);
  await popup.getByRole('button', { name: 'Add pages', exact: true }).click();
  const box = popup.getByRole('checkbox', { name: 'Leaves (127.0.0.1)', exact: true });
  await box.waitFor();
  assert.equal(await popup.locator('#add-pages-list').getByRole('checkbox').count(), 1, 'only the page read (not this one)');
  await box.check();
  await screenshot(popup, 'popup-add-pages.png');
  await popup.getByRole('button', { name: 'Add', exact: true }).click();
  const also = popup.locator('#also-using');
  await waitUntil(async () => (await also.isVisible()) && /Also using: Leaves \(127\.0\.0\.1\)/.test(await also.textContent()), {
    message: async () => `"Also using" to name Leaves: ${await also.textContent()}`,
  });

  // The question: the model's request holds both pages' text; the answer cites both.
  const before = llm.chatRequests.length;
  llm.script({ content: ANSWER });
  await askQuestion(popup, 'Who kept the light, and what colour do the valley maples turn?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  const sent = JSON.stringify(llm.chatRequests[before].body.messages);
  assert.ok(sent.includes(ARTICLE_TEXT), 'the request holds the article');
  assert.ok(sent.includes(LEAVES_TEXT), 'the request holds the added page');
  assert.match(sent, /\[p101\]/, 'the added page is numbered in its own block');
  const sources = await popup.locator('#sources li').allTextContents();
  assert.equal(sources.length, 2, JSON.stringify(sources));
  assert.match(sources[0], /^\[p1\] The Keepers of Bellhaven Light/);
  assert.match(sources[1], /^\[p101\] Leaves/);
  await screenshot(popup, 'popup-two-page-answer.png');

  // "Show on page" for the added page's passage: its tab comes to the front, highlighted.
  await popup.getByRole('button', { name: 'Show on page: passage p101', exact: true }).click();
  await waitUntil(async () => (await activeTabId(kl)) === leavesTab, { message: 'the Leaves tab to become active' });
  await waitUntil(() => leaves.evaluate((name) => CSS.highlights.has(name), HIGHLIGHT), { message: 'the passage to be highlighted' });
  await popup.bringToFront();

  // The Leaves tab closed: its page still answers, and "Show on page" opens its URL.
  await leaves.close();
  llm.script({ content: 'They turn crimson [p101].' });
  const again = llm.chatRequests.length;
  await askQuestion(popup, 'And the maples?');
  assert.equal((await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() })).state, 'completed');
  assert.ok(JSON.stringify(llm.chatRequests[again].body.messages).includes(LEAVES_TEXT), 'the closed tab\'s page is still used');
  const opened = kl.context.waitForEvent('page', { predicate: (p) => p.url().startsWith(leavesUrl) });
  await popup.getByRole('button', { name: 'Show on page: passage p101', exact: true }).click();
  await (await opened).close();
  await popup.bringToFront();

  // "Remove": the page is no longer used.
  await popup.getByRole('button', { name: 'Remove Leaves (127.0.0.1)', exact: true }).click();
  await waitUntil(async () => !(await also.isVisible()), { message: '"Also using" to go' });
  assert.equal((await readPopup(popup)).error, '');
  await popup.close();
  await article.close();
});

/** The "Add pages" list's checkboxes in `popup`: [name, checked] in the order shown. */
async function listedPages(popup) {
  const open = popup.getByRole('button', { name: 'Add pages', exact: true });
  if ((await open.getAttribute('aria-expanded')) === 'true') await open.click();
  await open.click();
  const list = popup.locator('#add-pages-list');
  await list.waitFor();
  return list.evaluate((node) => [...node.querySelectorAll('li')].map((li) => [
    li.querySelector('label').textContent, li.querySelector('input').checked,
  ]));
}

test('the read pages are capped: the least recently used goes first, never a page the asking conversation uses', async () => {
  const { kl, llm, pages } = harness;
  // The test build's hook: keep 2 pages instead of 20. The store holds Leaves and the
  // article (localhost) from the test above, the article read last.
  await kl.worker.evaluate(() => { globalThis.__klReadPagesCap = 2; });
  const ARTICLE = 'The Keepers of Bellhaven Light (localhost)';
  const CITE = 'The Keepers of Bellhaven Light (127.0.0.1)';
  const LEAVES = 'Leaves (127.0.0.1)';

  const cite = await kl.context.newPage();
  await cite.goto(pages.url('cite.html'));
  const popup = await openPopup(kl.context, kl.extId, await tabIdOf(kl.context, cite));
  assert.deepEqual(await listedPages(popup), [[ARTICLE, false], [LEAVES, false]], 'most recently read first');
  await popup.getByRole('checkbox', { name: LEAVES, exact: true }).check();
  await popup.getByRole('button', { name: 'Add', exact: true }).click();
  await popup.getByRole('button', { name: `Remove ${LEAVES}`, exact: true }).waitFor();

  // Reading this page needs room: the article goes (least recently used), not Leaves,
  // which this conversation uses (though read earlier).
  llm.script({ content: 'Agnes Tull [p1].' });
  await askQuestion(popup, 'Who kept the light?');
  assert.equal((await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() })).state, 'completed');
  assert.deepEqual(await listedPages(popup), [[LEAVES, true]], 'the article was evicted; this page is not listed on itself');

  // Leaves removed from the conversation, the article read again in its own tab: now Leaves
  // (used before this page was read) goes first.
  await popup.getByRole('button', { name: `Remove ${LEAVES}`, exact: true }).click();
  await waitUntil(async () => !(await popup.locator('#also-using').isVisible()), { message: '"Also using" to go' });
  const article = await kl.context.newPage();
  await article.goto(pages.url('article.html').replace('//127.0.0.1:', '//localhost:'));
  const second = await openPopup(kl.context, kl.extId, await tabIdOf(kl.context, article));
  llm.script({ content: 'In 1861 [p1].' });
  await askQuestion(second, 'When was it first lit?');
  assert.equal((await waitForRunEnd(second, { diagnostics: () => kl.recentLogs() })).state, 'completed');
  assert.deepEqual(await listedPages(second), [[CITE, false]], 'Leaves, the least recently used, was evicted');
  await kl.worker.evaluate(() => { globalThis.__klReadPagesCap = 0; });
  for (const page of [second, article, popup, cite]) await page.close();
});
