// The passage locator (extension/content/locate.js, with content/visible.js) in jsdom, with a
// layout stand-in (jsdom has none: every box is 100x20 at the origin): how a passage is
// normalised, matches that span several text nodes and ignore whitespace and case, hidden text
// left out, not-found cases, and the highlight's undo. The e2e tier (tests/e2e/cite.test.mjs)
// runs the same scripts in Chromium through the worker.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';

const read = (path) => readFileSync(new URL(`../../extension/${path}`, import.meta.url), 'utf8');
const SCRIPTS = ['content/constants.gen.js', 'content/visible.js', 'content/locate.js'].map(read);

/** A jsdom window on `html` with boxes and the locator's scripts run in it. */
function pageOf(html) {
  const dom = new JSDOM(html, { url: 'https://example.test/a', runScripts: 'outside-only', pretendToBeVisual: true });
  const { window } = dom;
  window.Element.prototype.getBoundingClientRect = () => ({ left: 0, top: 0, right: 100, bottom: 20, width: 100, height: 20, x: 0, y: 0 });
  window.Range.prototype.getClientRects = () => [{ left: 0, top: 0, right: 100, bottom: 20, width: 100, height: 20 }];
  window.Element.prototype.scrollIntoView = function scrollIntoView(options) {
    window.scrolledTo = { element: this, options };
  };
  for (const script of SCRIPTS) window.eval(script);
  return window;
}

const locator = (window) => window.__klLocator;
const findIn = (window, text) => {
  const vis = window.__klVisibility();
  return locator(window).find(window.document.body, text, vis.visibleTextNode);
};

const ARTICLE = `<!doctype html><html><head>
  <!-- jsdom reports the em sizes of its default style sheet, not pixels: give headings pixels. -->
  <style>h2 { font-size: 24px; }</style></head><body>
  <h2>Tides of   Port
    Anselm</h2>
  <p id="a">Port Anselm sits at the head of a <em>narrow</em> estuary where the spring
    tides rise <strong>more than nine</strong> metres.</p>
  <p id="b">The table was computed by <span hidden>HIDDEN</span>Miriam Okafor.</p>
</body></html>`;

test('normalisation: whitespace removed, case folded, heading markers dropped', () => {
  const window = pageOf(ARTICLE);
  const { fold, passageKey, NEEDLE_CHARS } = locator(window);
  assert.equal(fold('  A b\n\tC\u00a0d '), 'abcd');
  assert.equal(passageKey('## Tides of Port Anselm\n\nPort Anselm sits'), 'tidesofportanselmportanselmsits');
  assert.equal(passageKey('#hashtag stays'), '#hashtagstays');
  assert.equal(NEEDLE_CHARS, 80);
});

test('a passage spanning several text nodes is found, whatever its whitespace and case', () => {
  const window = pageOf(ARTICLE);
  const range = findIn(window, 'port anselm sits at the head of a narrow estuary where the spring tides rise more than nine metres.');
  assert.ok(range, 'not found');
  assert.equal(range.startContainer.parentElement.id, 'a');
  assert.equal(range.startOffset, 0);
  // The range covers the whole passage across <em> and <strong>, original whitespace kept.
  assert.equal(range.toString().replace(/\s+/g, ' '), 'Port Anselm sits at the head of a narrow estuary where the spring tides rise more than nine metres.');
  assert.equal(range.endContainer.nodeValue.slice(range.endOffset - 1, range.endOffset), '.');
});

test('a passage that begins with its heading (the excerpt form) starts at the heading', () => {
  const window = pageOf(ARTICLE);
  const range = findIn(window, 'Tides of Port Anselm\n\nPort Anselm sits at the head');
  assert.ok(range);
  assert.equal(range.startContainer.parentElement.tagName, 'H2');
  assert.match(range.toString(), /^Tides of\s+Port\s+Anselm[\s\S]*sits at the head$/);
  // The page text's own form, with its "## " marker, finds the same place.
  const marked = findIn(window, '## Tides of Port Anselm\n\nPort Anselm sits at the head');
  assert.equal(marked.toString(), range.toString());
});

test('only the first 80 characters must match; the rest extends the range while it agrees', () => {
  const window = pageOf(ARTICLE);
  const start = 'Port Anselm sits at the head of a narrow estuary where the spring tides rise more than nine metres.';
  const range = findIn(window, `${start} And then something the page no longer says.`);
  assert.ok(range, 'a passage whose end changed is still found by its beginning');
  assert.match(range.toString(), /nine<?\/?\w*>?\s*metres\.$/);
  // A change inside the first 80 characters: not found.
  assert.equal(findIn(window, 'Port Anselm sits at the foot of a narrow estuary where the spring tides rise more'), null);
});

test('hidden text is not part of the page: a match across it is made without it', () => {
  const window = pageOf(ARTICLE);
  assert.ok(findIn(window, 'The table was computed by Miriam Okafor.'));
  assert.equal(findIn(window, 'computed by HIDDEN Miriam'), null);
});

test('not found: removed text, empty passages, whitespace only', () => {
  const window = pageOf(ARTICLE);
  window.document.getElementById('b').remove();
  assert.equal(findIn(window, 'The table was computed by Miriam Okafor.'), null);
  assert.equal(findIn(window, ''), null);
  assert.equal(findIn(window, ' \n\t '), null);
  assert.equal(locator(window).locate('The table was computed by Miriam Okafor.'), false);
});

test('locate scrolls the passage into view, centred and smooth, and highlights it briefly', async () => {
  const window = pageOf(ARTICLE);
  // jsdom has no Custom Highlight API: the overlay fallback is used, and removed afterwards.
  assert.equal(locator(window).locate('the spring tides rise more than nine metres'), true);
  assert.equal(window.scrolledTo.element.id, 'a');
  assert.deepEqual({ ...window.scrolledTo.options }, { behavior: 'smooth', block: 'center', inline: 'nearest' });
  const boxes = () => window.document.querySelectorAll('[data-knowledgelens="passage-highlight"]').length;
  assert.ok(boxes() > 0, 'no highlight');
  // A second locate replaces the first highlight instead of stacking it.
  const before = boxes();
  locator(window).locate('the spring tides rise more than nine metres');
  assert.equal(boxes(), before);
  window.__klLocateUndo();
  assert.equal(boxes(), 0, 'the highlight was left behind');
});
