// Selection capture: extension/content/selection.js (with content/visible.js) run in jsdom,
// with a layout stand-in (jsdom has none: every box and line box is 100x20 at the origin),
// and the frame choice and error mapping of extension/capture.js against a stand-in `chrome`.
// The e2e tier (tests/e2e/explain.test.mjs) runs the same scripts in Chromium.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';
import {
  NOT_SCRIPTABLE_MESSAGE, PDF_SELECTION_MESSAGE, captureSelection, pdfSelection, pickFrame, scriptError, selectionOf,
} from '../../extension/capture.js';
import * as protocol from '../../extension/protocol.gen.js';

const read = (path) => readFileSync(new URL(`../../extension/${path}`, import.meta.url), 'utf8');
const VISIBLE = read('content/visible.js');
const SELECTION = read('content/selection.js');

/** A jsdom window on `html` at `url`, with boxes. */
function pageOf(html, url = 'https://example.test/guide/tides?session=secret#part-2') {
  const dom = new JSDOM(html, { url, runScripts: 'outside-only', pretendToBeVisual: true });
  const { window } = dom;
  window.Element.prototype.getBoundingClientRect = () => ({ left: 0, top: 0, right: 100, bottom: 20, width: 100, height: 20, x: 0, y: 0 });
  window.Range.prototype.getClientRects = () => [{ left: 0, top: 0, right: 100, bottom: 20, width: 100, height: 20 }];
  return window;
}

/** Selects from the start of `from`'s text to the end of `to`'s text (text nodes' parents). */
function select(window, from, to = from) {
  const { document } = window;
  const range = document.createRange();
  range.setStart(document.querySelector(from).firstChild, 0);
  const end = document.querySelector(to).lastChild;
  range.setEnd(end, end.nodeValue.length);
  window.getSelection().removeAllRanges();
  window.getSelection().addRange(range);
}

/** Runs the scripts in `window`; the result as plain data of this realm. */
const capture = (window) => {
  window.eval(VISIBLE);
  return JSON.parse(JSON.stringify(window.eval(SELECTION)));
};

const ARTICLE = `<!doctype html><html lang="en"><head><title>  Tides
  of Port Anselm </title>
  <!-- jsdom reports the em sizes of its default style sheet, not pixels: give headings pixels. -->
  <style>h1, h2, h3 { font-size: 24px; }</style></head><body>
  <h1>Tides</h1>
  <h2>History</h2><p>Old text.</p>
  <h2>Computing the table</h2>
  <h3>The schoolteacher</h3>
  <p id="para">Miriam Okafor kept a gauge on the quay <span id="sel">for eleven years</span>, and
    <span hidden>HIDDEN_IN_BLOCK</span>found the second high water ran late.</p>
  <h2>Later</h2><p>Not above the selection.</p>
  <div lang="fr"><p id="fr">La marée monte.</p></div>
  <textarea id="notes">first line. the part to explain. last line.</textarea>
</body></html>`;

test('a selection in a paragraph: text, block context, heading path, title, bare URL, lang', () => {
  const window = pageOf(ARTICLE);
  select(window, '#sel');
  const result = capture(window);
  assert.equal(result.text, 'for eleven years');
  assert.equal(result.full_length, 16);
  assert.match(result.context, /^Miriam Okafor kept a gauge on the quay for eleven years, and found the second high water ran late\.$/);
  assert.ok(!result.context.includes('HIDDEN_IN_BLOCK'), 'hidden text in the context');
  assert.deepEqual(result.headings, ['Tides', 'Computing the table', 'The schoolteacher']);
  assert.equal(result.title, 'Tides of Port Anselm');
  assert.equal(result.url, 'https://example.test/guide/tides');
  assert.equal(result.lang, 'en');
  assert.equal(result.top, true);
});

test('hidden text inside the selection is left out; the closest [lang] wins', () => {
  const window = pageOf(ARTICLE);
  select(window, '#para');
  const result = capture(window);
  assert.ok(!result.text.includes('HIDDEN_IN_BLOCK'), result.text);
  assert.match(result.text, /quay for eleven years, and found/);
  select(window, '#fr');
  assert.equal(capture(window).lang, 'fr');
});

test('a selection inside a textarea comes from selectionStart/End', () => {
  const window = pageOf(ARTICLE);
  const box = window.document.getElementById('notes');
  box.focus();
  const start = box.value.indexOf('the part');
  box.setSelectionRange(start, start + 'the part to explain.'.length);
  const result = capture(window);
  assert.equal(result.text, 'the part to explain.');
  assert.match(result.context, /first line\. the part to explain\. last line\./);
});

test('a long selection is cut at MAX_SELECTION_CHARS and reports its full length', () => {
  const long = 'word '.repeat(1200).trim(); // 5999 characters
  const window = pageOf(`<!doctype html><body><p id="p">${long}</p></body>`);
  select(window, '#p');
  const result = capture(window);
  assert.equal(result.text.length, 4000);
  assert.equal(result.full_length, long.length);
  assert.ok(result.context.length <= 4000);
  assert.deepEqual(result.headings, []);
  assert.equal(result.lang, '');
});

test('no selection: empty text, and injecting twice is harmless', () => {
  const window = pageOf(ARTICLE);
  assert.equal(capture(window).text, '');
  assert.equal(capture(window).text, '');
});

test("the scripts' caps are the protocol's", () => {
  assert.equal(protocol.MAX_SELECTION_CHARS, Number(/MAX_SELECTION_CHARS = (\d+)/.exec(SELECTION)[1]));
  assert.equal(protocol.MAX_CONTEXT_CHARS, Number(/MAX_CONTEXT_CHARS = (\d+)/.exec(SELECTION)[1]));
});

test('the frame with the selection is picked: a focused subframe, else the top frame', () => {
  const frame = (frameId, text, focused = false) => ({ frameId, result: { text, focused } });
  assert.equal(pickFrame([frame(0, 'top'), frame(3, 'inner', true)]).frameId, 3);
  assert.equal(pickFrame([frame(0, 'top', false), frame(3, 'inner', false)]).frameId, 0);
  assert.equal(pickFrame([frame(0, ''), frame(3, 'inner')]).frameId, 3);
  assert.equal(pickFrame([frame(0, ''), frame(3, '  ')]).frameId, 0);
  assert.equal(pickFrame([]), null);
  assert.deepEqual(Object.keys(selectionOf({ text: 'a', focused: true, top: true })),
    ['text', 'full_length', 'context', 'headings', 'title', 'url', 'lang']);
});

test('refused pages are not_scriptable, and a PDF says how to explain its selection', async () => {
  assert.deepEqual(scriptError(new Error('Cannot access a chrome:// URL')).message, NOT_SCRIPTABLE_MESSAGE);
  assert.equal(scriptError(new Error('The extensions gallery cannot be scripted.')).kind, 'not_scriptable');
  assert.match(scriptError(new Error('Cannot access contents of the page. Extension manifest must request permission to access the respective host.')).message, /no access/);
  assert.equal(scriptError(new Error('No tab with id: 5.')).kind, 'not_found');
  globalThis.chrome = { scripting: { executeScript: async () => { throw new Error('Cannot access a chrome:// URL'); } } };
  assert.deepEqual(await captureSelection(4), { ok: false, error: scriptError(new Error('Cannot access a chrome:// URL')) });
  globalThis.chrome = { scripting: { executeScript: async () => [{ frameId: 0, result: { text: '', pdf: true } }] } };
  const pdf = { ok: false, pdf: true, error: { kind: 'not_scriptable', message: PDF_SELECTION_MESSAGE } };
  assert.deepEqual(await captureSelection(4), pdf);
  // The viewer's frames refuse scripts; the top frame alone says it shows a PDF.
  globalThis.chrome = { scripting: { executeScript: async ({ target, func }) => {
    if (target.allFrames) throw new Error('Cannot access contents of url "chrome-extension://viewer/index.html".');
    return [{ frameId: 0, result: func === undefined ? null : true }];
  } } };
  assert.deepEqual(await captureSelection(4), pdf);
  assert.deepEqual(pdfSelection('The \uFB01rst   line mea- sured', { title: 'Paper', url: 'https://example.org/p' }), {
    text: 'The first line mea- sured', full_length: 25, context: '', headings: [], title: 'Paper', url: 'https://example.org/p', lang: '',
  });
  globalThis.chrome = { scripting: { executeScript: async () => [{ frameId: 0, result: { text: 'x', title: 't' } }] } };
  const ok = await captureSelection(4);
  assert.equal(ok.ok, true);
  assert.equal(ok.selection.text, 'x');
  delete globalThis.chrome;
});
