// Page passage citations, end to end: the scripted model reads the page (`read_page` from
// offset 0) and answers citing [p1], the page's first passage. The fixture (cite.html) has no
// text before a 3,200 px spacer, so that passage starts far below the fold. In the popup:
// - hovering or focusing the citation shows the passage in a tooltip (role "tooltip", named
//   by aria-describedby; no serious axe violation while it shows), Escape hides it;
// - activating it (Enter, a click, or the source's "Show on page" button) scrolls the page's
//   tab until the passage's element is in the viewport and highlights it (the CSS Custom
//   Highlight API), and the highlight is gone again about 2 s later;
// - once the page's DOM no longer has the passage, activating it says so in the alert.

import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { OUTPUT_DIR, openPopup, screenshot, tabIdOf, waitUntil } from './support/browser.mjs';
import { seriousViolations } from './support/axe.mjs';
import { startHarness } from './support/harness.mjs';
import { askQuestion, checkAccessibleNames, readPopup, waitForRunEnd } from './support/popup.mjs';

const ANSWER = 'Agnes Tull kept the light for thirty-one years and blamed the salt [p1].';
const GONE = 'This passage is no longer on the page.';
const HIGHLIGHT = 'knowledgelens-passage';

let harness;

before(async () => {
  harness = await startHarness('cite');
});

after(async () => {
  await harness?.close();
});

/** Where the fixture tab is: its scroll position and whether `#first` is in its viewport. */
const where = (page) => page.evaluate(() => {
  const box = document.getElementById('first')?.getBoundingClientRect();
  return {
    scrollY: Math.round(window.scrollY),
    inView: Boolean(box) && box.top >= 0 && box.top < window.innerHeight,
  };
});

/** Whether the passage highlight is registered in the fixture tab. */
const highlighted = (page) => page.evaluate((name) => CSS.highlights.has(name), HIGHLIGHT);

/** Waits until activating the citation scrolled the tab to the passage and highlighted it. */
async function expectShown(page, popup, what, { capture = null } = {}) {
  await waitUntil(async () => (await popup.evaluate(() => document.documentElement.dataset.located)) === 'found:p1', {
    message: () => `${what}: the worker to say the passage was found`,
  });
  // The highlight is set before the worker answers, and stays about 2 s.
  assert.equal(await highlighted(page), true, `${what}: no highlight`);
  let last;
  await waitUntil(async () => {
    last = await where(page);
    return last.inView && last.scrollY > 2000;
  }, { message: () => `${what}: the page to scroll to the passage (${JSON.stringify(last)})` });
  if (capture) {
    // A background tab keeps its last paint: bring it to the front for the picture.
    await page.bringToFront();
    await mkdir(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: join(OUTPUT_DIR, capture) });
    await popup.bringToFront();
  }
  await waitUntil(async () => !(await highlighted(page)), { timeout: 6000, message: () => `${what}: the highlight to go` });
  assert.equal((await readPopup(popup)).error, '', `${what}: an alert shows`);
}

test('a [p1] citation previews its passage, shows it in the page, and says when it is gone', async () => {
  const { kl, llm, pages } = harness;
  const page = await kl.context.newPage();
  await page.setViewportSize({ width: 900, height: 700 });
  await page.goto(pages.url('cite.html'));
  assert.deepEqual(await where(page), { scrollY: 0, inView: false }, 'the passage starts below the fold');

  llm.script(
    { content: 'Reading the page.', tool_calls: [{ name: 'read_page', arguments: { offset: 0 } }] },
    { content: JSON.stringify({ should_continue: false, final_answer: ANSWER }), json: true },
  );
  const popup = await openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
  await askQuestion(popup, 'Who kept the light, and what did she blame?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);

  const cite = popup.locator('#answer a.md-citation');
  assert.equal(await cite.count(), 1, 'one citation link');
  assert.equal(await cite.textContent(), '[p1]');
  const tooltip = popup.getByRole('tooltip');

  // Hover: the preview shows the passage's text, and describes the link.
  assert.equal(await tooltip.count(), 0, 'no preview before hovering');
  await cite.hover();
  await tooltip.waitFor({ state: 'visible' });
  const preview = await tooltip.textContent();
  assert.match(preview, /Agnes Tull kept Bellhaven Light for thirty-one years/);
  assert.match(preview, /\[p1\]/);
  assert.equal(await cite.getAttribute('aria-describedby'), await tooltip.getAttribute('id'));
  await popup.mouse.move(5, 5);
  await tooltip.waitFor({ state: 'hidden' });
  assert.equal(await cite.getAttribute('aria-describedby'), null);

  // Keyboard focus: the same preview; Escape hides it.
  await cite.focus();
  await tooltip.waitFor({ state: 'visible' });
  assert.match(await tooltip.textContent(), /Agnes Tull kept Bellhaven Light/);
  await checkAccessibleNames(popup, { present: [['region', 'Sources'], ['button', 'Show on page: passage p1']] });
  assert.deepEqual(await seriousViolations(popup), [], 'axe, with the preview open');
  await screenshot(popup, 'popup-citation-preview.png');
  await popup.emulateMedia({ colorScheme: 'dark' });
  assert.deepEqual(await seriousViolations(popup), [], 'axe, dark theme, with the preview open');
  await screenshot(popup, 'popup-citation-preview-dark.png');
  await popup.emulateMedia({ colorScheme: 'light' });
  await popup.keyboard.press('Escape');
  await tooltip.waitFor({ state: 'hidden' });

  // Enter on the focused citation: the tab scrolls to the passage and highlights it briefly.
  await cite.focus();
  await popup.keyboard.press('Enter');
  await expectShown(page, popup, 'Enter on the citation', { capture: 'page-citation-highlight.png' });

  // The source list's button does the same.
  await page.evaluate(() => window.scrollTo(0, 0));
  await waitUntil(async () => (await where(page)).scrollY === 0, { message: 'the page to scroll back up' });
  await popup.evaluate(() => { delete document.documentElement.dataset.located; });
  await popup.getByRole('button', { name: 'Show on page: passage p1', exact: true }).click();
  await expectShown(page, popup, 'Show on page');

  // The passage removed from the page: activating the citation says it is gone.
  await page.evaluate(() => document.getElementById('first').remove());
  await cite.click();
  let shown;
  await waitUntil(async () => {
    shown = await readPopup(popup);
    return shown.error.includes(GONE);
  }, { message: () => `the popup to say the passage is gone (${JSON.stringify(shown)})` });
  assert.equal(await popup.evaluate(() => document.documentElement.dataset.located), 'gone:p1');
  assert.equal(await highlighted(page), false);
  await screenshot(popup, 'popup-citation-gone.png');
  assert.equal(llm.queue.length, 0);
  await popup.close();
  await page.close();
});
