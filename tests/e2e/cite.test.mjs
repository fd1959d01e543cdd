// Page passage citations, end to end: the scripted model reads the page (`read_page` from
// offset 0) and answers citing [p1], the page's first passage. The fixture (cite.html) has no
// text before a 3,200 px spacer, so that passage starts far below the fold. In the popup:
// - hovering or focusing the citation shows the passage in a tooltip (role "tooltip", named
//   by aria-describedby; no serious axe violation while it shows), Escape hides it;
// - activating it (Enter, a click, or the source's "Show on page" button) scrolls the page's
//   tab until the passage's element is in the viewport and highlights it (the CSS Custom
//   Highlight API), and the highlight is gone again about 2 s later;
// - once the page's DOM no longer has the passage, activating it says so in the alert.
// And on a 1 MB page: the passage holding a fact near its end reaches the model's
// first request (chosen for the question, not read by paging), the saved answer cites its id,
// the answer says how much of the page it rests on, and the citation scrolls the page to it.

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

test('a fact near the end of a 1 MB page: its passage is retrieved, cited, and shown on the page', async () => {
  const { kl, llm, pages } = harness;
  const page = await kl.context.newPage();
  await page.setViewportSize({ width: 900, height: 700 });
  await page.goto(pages.url('cite.html'));
  // About 1 MB of sections, the fact near the end, one more section after it.
  const chars = await page.evaluate(() => {
    const sentence = 'The keeper wrote about the fog, the tide and the lamp in a green ledger every night. ';
    const article = document.createElement('article');
    const section = (title, text, id) => {
      const h = document.createElement('h2');
      h.textContent = title;
      const p = document.createElement('p');
      p.textContent = text;
      if (id) p.id = id;
      article.append(h, p);
      return title.length + text.length + 4;
    };
    let made = 0;
    for (let n = 1; made < 1_000_000; n += 1) made += section(`Ledger ${n}`, sentence.repeat(8));
    made += section('The cat', 'The keeper\'s cat was called Marmalade and slept on the lamp room stairs.', 'fact');
    made += section('Afterword', sentence.repeat(8));
    document.body.replaceChildren(article);
    return made;
  });
  assert.ok(chars > 1_000_000, `${chars} characters`);

  // The model answers from what its first request holds: it cites the label of the passage
  // that has the fact (the last label before "Marmalade"), or says it was not given.
  let cited = null;
  llm.respondWith((body) => {
    const block = body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const at = block.indexOf('Marmalade');
    if (at < 0) return { content: 'The page I was given does not say.' };
    cited = block.slice(0, at).match(/\[(p\d+)\]/g)?.pop()?.slice(1, -1) ?? null;
    return { content: `The keeper's cat was called Marmalade [${cited}].` };
  });
  const from = llm.chatRequests.length;
  try {
    const popup = await openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
    await askQuestion(popup, "What was the keeper's cat called?");
    const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
    assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
    assert.equal(llm.chatRequests.length - from, 1, 'answered from the first request, without paging');
    assert.match(cited ?? '', /^p\d{3,}$/, 'a passage far into the page was in the request');
    assert.equal(done.answerText, `The keeper's cat was called Marmalade [${cited}].`);
    const notice = done.notices.find((n) => n.startsWith('Based on '));
    assert.match(notice ?? '', /^Based on \d+ of the page's \d{4,} passages, chosen for the question\.$/, JSON.stringify(done.notices));
    // The saved answer keeps the citation, and its source is that passage.
    const saved = await popup.evaluate(async () => {
      const all = await chrome.storage.session.get(null);
      const key = Object.keys(all).find((k) => k.startsWith('session:tab:') && all[k].includes('Marmalade'));
      return JSON.parse(all[key]).state;
    });
    assert.equal(saved.answer, done.answerText);
    assert.deepEqual(saved.sources.map((s) => s.id), [cited]);
    assert.match(saved.sources[0].excerpt, /^The cat\n+The keeper's cat was called Marmalade/);

    // Activating the citation scrolls the page to the fact.
    const fact = () => page.evaluate(() => {
      const box = document.getElementById('fact').getBoundingClientRect();
      return { top: Math.round(box.top), inView: box.top >= 0 && box.bottom <= window.innerHeight };
    });
    assert.equal((await fact()).inView, false, 'the fact starts out of view');
    await popup.locator('#answer a.md-citation').click();
    let last;
    await waitUntil(async () => {
      last = await fact();
      return last.inView;
    }, { timeout: 15_000, message: () => `the page to scroll to the fact (${JSON.stringify(last)})` });
    await popup.close();
  } finally {
    llm.respondWith(null);
    await page.close();
  }
});
