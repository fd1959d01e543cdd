// The offer to search the web: web search is off by default, so the first question
// asked in the popup (not an explanation) shows a card "Search the web with Wikipedia?" while
// the question is answered as usual. "Not now" dismisses it for good; "Turn on" saves
// Wikipedia as the search provider and says so. One browser for the file; the settings are
// reset between the two tests.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seriousViolations } from './support/axe.mjs';
import { openPopup, screenshot, waitUntil } from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { startScriptedMediaWiki } from './support/mediawiki-server.mjs';
import { askQuestion, checkAccessibleNames, requestBackend, waitForRunEnd } from './support/popup.mjs';

const OFFER = 'Search the web with Wikipedia?';
const ANSWER = 'The page is about a lighthouse.';
const SEARCH_ON = 'Web search is on (Wikipedia). Ask again to search the web.';

let h;
let wiki;

before(async () => {
  h = await startHarness('search-offer');
  wiki = await startScriptedMediaWiki();
  // Every model call gets the same plain answer: these tests are about the card.
  h.llm.respondWith(() => ({ content: ANSWER }));
});

after(async () => {
  await h?.close();
  await wiki?.close();
});

/** The saved settings, read through the worker from an extension page. */
async function settingsFrom(page) {
  const reply = await requestBackend(page, { type: 'get_settings' });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  return reply.data;
}

/** A popup on a fresh fixture tab, and its offer card (a locator). */
async function popupOnFixture() {
  const { tabId } = await h.fixtureTab();
  const popup = await openPopup(h.kl.context, h.kl.extId, tabId);
  return { popup, card: popup.getByRole('region', { name: OFFER, exact: true }) };
}

/** Asks `question` and waits for the run to complete with the scripted answer. */
async function askAndWait(popup, question) {
  await askQuestion(popup, question);
  const done = await waitForRunEnd(popup, { diagnostics: () => `${h.llm.timeline()}\n${h.kl.recentLogs()}` });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  assert.equal(done.answerText, ANSWER, `${h.llm.timeline()}\n${JSON.stringify(done)}`);
  return done;
}

test('a question offers web search and is still answered; Not now ends the offer for good', async () => {
  const { popup, card } = await popupOnFixture();
  assert.equal(await card.count(), 0, 'no card before a question');
  await askQuestion(popup, 'What is this page about?');
  await card.waitFor({ state: 'visible' });
  assert.match(await card.textContent(), /sends your questions to\s+Wikipedia/);
  await checkAccessibleNames(popup, {
    present: [['region', OFFER], ['button', 'Turn on'], ['button', 'Not now']],
  });
  const done = await waitForRunEnd(popup);
  assert.equal(done.state, 'completed', JSON.stringify(done));
  assert.equal(done.answerText, ANSWER, 'the question was answered without waiting for the card');
  assert.equal(await card.isVisible(), true, 'the card stays until answered');
  assert.deepEqual(await seriousViolations(popup), [], 'axe on the popup with the card');
  await screenshot(popup, 'search-offer.png');
  await popup.emulateMedia({ colorScheme: 'dark' });
  assert.deepEqual(await seriousViolations(popup), [], 'axe on the card in the dark theme');
  await screenshot(popup, 'search-offer-dark.png');
  await popup.emulateMedia({ colorScheme: 'light' });

  await card.getByRole('button', { name: 'Not now', exact: true }).click();
  await card.waitFor({ state: 'hidden' });
  assert.equal(
    await popup.evaluate(() => document.activeElement?.id),
    'question',
    'focus goes back to the question',
  );
  const saved = await settingsFrom(popup);
  assert.deepEqual([saved.search_provider, saved.search_offered], ['off', true]);

  await askAndWait(popup, 'And who built it?');
  assert.equal(await card.count(), 0, 'no card after Not now');
  // Nor in another popup.
  const other = await popupOnFixture();
  await askAndWait(other.popup, 'When was it built?');
  assert.equal(await other.card.count(), 0);
  await other.popup.close();
  await popup.close();
});

test('Turn on saves Wikipedia search, says so, and the offer is not made again', async () => {
  // Reset: search off and the offer never answered, as on a fresh install.
  const options = await h.kl.context.newPage();
  await options.goto(`chrome-extension://${h.kl.extId}/options.html`);
  const reset = await requestBackend(options, {
    type: 'save_settings',
    settings: { ...(await settingsFrom(options)), search_provider: 'off', search_offered: false },
  });
  assert.equal(reset.ok, true, JSON.stringify(reset));

  const { popup, card } = await popupOnFixture();
  await askQuestion(popup, 'What is this page about?');
  await card.waitFor({ state: 'visible' });
  await card.getByRole('button', { name: 'Turn on', exact: true }).click();
  await card.waitFor({ state: 'hidden' });
  const done = popup.locator('#search-offer-done');
  await waitUntil(async () => (await done.textContent()) === SEARCH_ON, { message: 'the search-on status' });
  assert.equal(await done.getAttribute('aria-live'), 'polite');
  assert.equal(await done.isVisible(), true);
  await waitForRunEnd(popup);
  await screenshot(popup, 'search-offer-on.png');

  const saved = await settingsFrom(popup);
  assert.deepEqual([saved.search_provider, saved.search_offered], ['wikipedia', true]);
  await options.reload();
  const provider = options.getByRole('combobox', { name: 'Search provider', exact: true });
  await waitUntil(async () => (await provider.inputValue()) === 'wikipedia', {
    message: 'Options to show Wikipedia as the search provider',
  });
  // Searches go to the scripted wiki, never to the real one.
  const routed = await requestBackend(options, {
    type: 'save_settings',
    settings: { ...saved, search_base_url: wiki.url },
  });
  assert.equal(routed.ok, true, JSON.stringify(routed));

  await askAndWait(popup, 'Who built it?');
  assert.equal(await card.count(), 0, 'no card once search is on');
  await options.close();
  await popup.close();
});
