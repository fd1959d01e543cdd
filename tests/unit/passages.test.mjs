// The popup's passage citations (extension/ui/passages.js) in jsdom: the preview shows the cited
// passage as text (never parsed as HTML) and describes its link while it shows; Escape hides
// it; activating a citation or a "Show on page" button asks `locate` with the passage's text
// and reports "no longer on the page" when it was not found. The e2e tier (cite.test.mjs)
// runs it in the real popup.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body><div id="answer"></div><ol id="sources"></ol><div id="preview" role="tooltip" hidden></div></body></html>', { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.ResizeObserver = class { observe() {} };
const { PASSAGE_GONE, PASSAGE_GONE_KIND, createPassageCitations, passageIdOf, readable } = await import('../../extension/ui/passages.js');

const EXCERPT = 'Agnes Tull <b>kept</b> the light\nfor thirty-one years.\n\nShe blamed the salt.';
const sources = [
  { id: 'p1', kind: 'page', title: 'Bellhaven Light', url: 'http://127.0.0.1/light', excerpt: EXCERPT, start: 0, end: 80 },
  { id: '1', kind: 'web', title: 'Elsewhere', url: 'https://example.com/', excerpt: 'web' },
];

function setUp(found = true) {
  const answer = document.getElementById('answer');
  const list = document.getElementById('sources');
  const preview = document.getElementById('preview');
  answer.replaceChildren();
  const link = document.createElement('a');
  link.className = 'md-citation';
  link.setAttribute('href', '#source-p1');
  link.textContent = '[p1]';
  answer.append(link);
  const button = document.createElement('button');
  button.dataset.passage = 'p1';
  list.replaceChildren(button);
  const asked = [];
  const results = [];
  createPassageCitations({
    answer, list, preview, sources: () => sources,
    locate: async (text) => { asked.push(text); return { found }; },
    onResult: (error) => results.push(error),
  });
  return { link, button, preview, asked, results };
}

const settle = () => new Promise((done) => setImmediate(done));

test('helpers: the passage id of a link, and an excerpt as paragraphs', () => {
  const a = document.createElement('a');
  a.setAttribute('href', '#source-p12');
  assert.equal(passageIdOf(a), 'p12');
  a.setAttribute('href', '#source-3');
  assert.equal(passageIdOf(a), null);
  assert.equal(readable('one\n  two\n\n\nthree  four'), 'one two\n\nthree four');
});

test('focus shows the passage as text and describes the link; Escape hides it', () => {
  const { link, preview } = setUp();
  link.dispatchEvent(new window.FocusEvent('focusin', { bubbles: true }));
  assert.equal(preview.hidden, false);
  assert.equal(link.getAttribute('aria-describedby'), 'preview');
  assert.match(preview.textContent, /\[p1\] Bellhaven Light/);
  assert.match(preview.textContent, /Agnes Tull <b>kept<\/b> the light for thirty-one years\./);
  assert.equal(preview.querySelector('b'), null, 'page text parsed as HTML');
  document.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'Escape' }));
  assert.equal(preview.hidden, true);
  assert.equal(link.getAttribute('aria-describedby'), null);
});

test('a click on the citation asks the worker with the passage text, and found clears the alert', async () => {
  const { link, asked, results } = setUp(true);
  const click = new window.MouseEvent('click', { bubbles: true, cancelable: true });
  link.dispatchEvent(click);
  assert.equal(click.defaultPrevented, true);
  await settle();
  assert.deepEqual(asked, [EXCERPT]);
  assert.deepEqual(results, [null]);
});

test('a passage gone from the page is reported, also from the Show on page button', async () => {
  const { button, results } = setUp(false);
  button.dispatchEvent(new window.MouseEvent('click', { bubbles: true }));
  await settle();
  assert.deepEqual(results, [{ kind: PASSAGE_GONE_KIND, message: PASSAGE_GONE }]);
  assert.equal(PASSAGE_GONE, 'This passage is no longer on the page.');
});
