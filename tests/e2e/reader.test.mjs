// The page reader (Readability, content/visible.js and content/extract.js) reads only text the
// user can see: on a page with an invisible article longer than the visible one and one of each
// kind of hidden text, no hidden marker reaches the model, and the visible article does, through
// Readability (reader "readability") or, when the main content is short, the visible-text walk.
// Text that is faint, grey, small or in a clipping box but still readable (KEPT_ markers, the
// WCAG AA grey #767676 among them) reaches it too. Of a text node partly hidden (lines past a
// line clamp or below a one-line box, text past an ellipsis) only the part that shows does. The
// reader stays cheap: one getComputedStyle per element at most.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { REPO_ROOT, openPopup, tabIdOf } from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';

// The scripts the backend injects to read a page, in order (EXTRACT_SCRIPTS in src/web/pages.rs).
const READER_FILES = /EXTRACT_SCRIPTS: \[&str; \d+\] = \[([^\]]+)\]/
  .exec(readFileSync(`${REPO_ROOT}/src/web/pages.rs`, 'utf8'))[1]
  .match(/"([^"]+)"/g)
  .map((quoted) => quoted.slice(1, -1));
const READER = READER_FILES.map((file) => readFileSync(`${REPO_ROOT}/extension/${file}`, 'utf8'));
const FIXTURE = readFileSync(new URL('./fixtures/hidden.html', import.meta.url), 'utf8');
// Every marker in the fixture: HIDDEN_ followed by capitals and underscores.
const MARKERS = [...new Set(FIXTURE.match(/HIDDEN_[A-Z_]+/g))];
// The readable look-alikes of hidden text (low contrast but AA, faint, small print, clipped
// boxes the text fits in): each must reach the model.
const KEPT = [...new Set(FIXTURE.match(/KEPT_[A-Z_]+/g))];
const VISIBLE = [
  'The Tide Tables of Port Anselm',
  'nine metres',
  'Miriam Okafor',
  'Spring tide',
  "Okafor's forty",
];

let harness;

before(async () => {
  harness = await startHarness('reader');
});

after(async () => {
  await harness?.close();
});

// Whole markers only (HIDDEN_OPACITY is not a leak of HIDDEN_OPACITY_PRODUCT).
const leaked = (text) => [...new Set(text.match(/HIDDEN_[A-Z_]+/g))];
const dropped = (text) => KEPT.filter((m) => !text.includes(m));

test('the fixture has a marker for each kind of hidden text', () => {
  for (const kind of ['DISPLAY_NONE', 'VISIBILITY_HIDDEN', 'VISIBILITY_COLLAPSE', 'ATTRIBUTE', 'ARIA', 'ZERO_SIZE',
    'CLIP_RECT', 'CLIP_PATH', 'OFFSCREEN', 'OPACITY', 'OPACITY_ANCESTOR', 'TINY_FONT', 'SAME_COLOUR',
    'SAME_COLOUR_DARK', 'SCRIPT', 'SCRIPT_BODY', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'LONG_ARTICLE', 'FOOTER',
    'LOW_OPACITY', 'OPACITY_PRODUCT', 'FILTER_OPACITY', 'LOW_CONTRAST', 'LOW_CONTRAST_ALPHA', 'TEXT_FILL',
    'OKLCH_COLOUR', 'SMALL_FONT', 'CLIP_INSET', 'CLIP_SLIVER', 'TEXT_INDENT', 'OVERFLOW', 'LINE_CLAMP', 'ONE_LINE_BOX',
    'ELLIPSIS', 'MASK_IMAGE', 'GRADIENT_BACKGROUND']) {
    assert.ok(MARKERS.includes(`HIDDEN_${kind}`), `no HIDDEN_${kind} in hidden.html`);
  }
  for (const kind of ['AA_GREY', 'FAINT', 'SMALL_PRINT', 'LIGHT_ON_DARK', 'CLIP_INSET', 'OVERFLOW_FITS', 'FIRST_LINE',
    'CLAMP_FIRST_LINE', 'ONE_LINE_BOX', 'ELLIPSIS_START', 'HERO_IMAGE', 'DARK_GRADIENT']) {
    assert.ok(KEPT.includes(`KEPT_${kind}`), `no KEPT_${kind} in hidden.html`);
  }
});

test('no hidden text reaches the model; the visible article does', async () => {
  const { kl, llm, pages } = harness;
  const page = await kl.context.newPage();
  await page.goto(pages.url('hidden.html'));
  const start = llm.chatRequests.length;
  llm.script(
    { content: 'Reading the page.', tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 8000 } }] },
    { content: JSON.stringify({ should_continue: false, final_answer: 'Miriam Okafor computed it.' }), json: true },
  );
  const popup = await openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
  await askQuestion(popup, 'Who computed the tide table?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);

  const requests = llm.requests.slice(0);
  const all = requests.map((r) => JSON.stringify(r.body ?? '')).join('\n');
  assert.deepEqual(leaked(all), [], 'hidden text reached the model server');
  const chats = llm.chatRequests.slice(start);
  assert.equal(chats.length, 2, `chat requests: ${chats.length}`);
  const tool = chats[1].body.messages.find((m) => m.role === 'tool');
  assert.ok(tool, 'the read_page result was not sent back');
  // The title is in the page block; read_page gives the text's passages.
  assert.ok(chats[0].body.messages[1].content.includes(VISIBLE[0]), 'the page block lacks the title');
  for (const expected of VISIBLE.slice(1)) assert.ok(tool.content.includes(expected), `read_page lacks "${expected}":\n${tool.content}`);
  assert.deepEqual(dropped(tool.content), [], `readable text did not reach the model:\n${tool.content}`);
  assert.equal(llm.queue.length, 0);
  await popup.close();
  await page.close();
});

/** Runs the reader's scripts in `page` and returns the last one's completion value. */
const readIn = (page) => page.evaluate((sources) => sources.map((src) => (0, eval)(src)).at(-1), READER);

test('the reader on the fixture: visible article only, paragraphs kept apart', async () => {
  const page = await harness.kl.context.newPage();
  await page.goto(harness.pages.url('hidden.html'));
  const { title, url, text, reader } = await readIn(page);
  assert.equal(reader, 'readability');
  assert.equal(title, 'The Tide Tables of Port Anselm');
  assert.match(url, /hidden\.html$/);
  assert.deepEqual(leaked(text), [], text);
  assert.deepEqual(dropped(text), [], text);
  // Readability drops the heading that repeats the title (the title comes on its own).
  for (const expected of VISIBLE.filter((v) => v !== title)) assert.ok(text.includes(expected), `lacks "${expected}":\n${text}`);
  // Headings are Markdown heading lines of their own paragraph, whitespace collapsed.
  assert.match(text, /since\.\n\n## How the table was made\n\nThe table was computed/, `paragraphs or headings run together:\n${text}`);
  // Re-injectable: a second run in the same world gives the same result.
  assert.equal((await readIn(page)).text, text);
  await page.close();
});

test('with no main content, the body fallback also drops hidden text', async () => {
  const page = await harness.kl.context.newPage();
  await page.goto(harness.pages.url('hidden.html'));
  // The visible article made short: the body is read instead (its footer too). The readable
  // look-alikes and the partly shown texts go too (the next test reads them with the same walk).
  await page.evaluate(() => {
    const visible = document.getElementById('visible');
    for (const p of [...visible.querySelectorAll('p')].slice(0, 2)) p.remove();
    visible.querySelector('table').remove();
    document.getElementById('kept').remove();
    document.getElementById('parts').remove();
  });
  const { text, reader } = await readIn(page);
  assert.equal(reader, 'visible-text');
  assert.deepEqual(leaked(text), [], text);
  assert.match(text, /Port Anselm Harbour Trust/, `the body was not read:\n${text}`);
  assert.match(text, /Okafor's forty/);
  // The walk writes headings as Markdown heading lines too (the hidden h2 stays out).
  assert.match(text, /(^|\n\n)# The Tide Tables of Port Anselm\n\n/, `no h1 heading line:\n${text}`);
  assert.match(text, /\n\n## How the table was made\n\n/, `no h2 heading line:\n${text}`);
  await page.close();
});

test('the visible-text walk drops each kind of hidden text and keeps the readable look-alikes', async () => {
  const page = await harness.kl.context.newPage();
  await page.goto(harness.pages.url('hidden.html'));
  await readIn(page);
  const text = await page.evaluate(() => globalThis.__klVisibility().visibleText(document.getElementById('visible')));
  assert.deepEqual(leaked(text), [], text);
  assert.deepEqual(dropped(text), [], text);
  await page.close();
});

test('the reader reads each element\'s computed style at most once', async () => {
  for (const fixture of ['hidden.html', 'long-article.html']) {
    const page = await harness.kl.context.newPage();
    await page.goto(harness.pages.url(fixture));
    const { calls, elements, styled } = await page.evaluate((sources) => {
      const seen = new Map();
      const real = window.getComputedStyle;
      window.getComputedStyle = (el, ...rest) => {
        seen.set(el, (seen.get(el) ?? 0) + 1);
        return real.call(window, el, ...rest);
      };
      try {
        sources.forEach((src) => (0, eval)(src));
      } finally {
        window.getComputedStyle = real;
      }
      return { calls: [...seen.values()].reduce((a, b) => a + b, 0), elements: document.getElementsByTagName('*').length, styled: seen.size };
    }, READER);
    assert.equal(calls, styled, `${fixture}: ${calls} calls for ${styled} elements`);
    assert.ok(styled <= elements, `${fixture}: ${styled} of ${elements}`);
    await page.close();
  }
});
