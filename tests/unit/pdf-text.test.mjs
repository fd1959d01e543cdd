// extension/pdf-text.js on PDF.js-shaped text items: lines by baseline, paragraphs by gap,
// hyphenated line ends joined again, two columns read one after the other, running headers
// and footers dropped, whole pages kept under the cap.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PAGE_BREAK, documentText, dropRunningLines, pageLines, paragraphs } from '../../extension/pdf-text.js';

/** A text item as PDF.js gives it: `str` at (x, y), `size` pt, about 0.5 em a character. */
const item = (str, x, y, size = 10) => ({ str, transform: [size, 0, 0, size, x, y], width: str.length * size * 0.5, height: size });

/** Items for `lines` of one column starting at (x, top), 12 pt apart. */
const column = (lines, x, top) => lines.map((line, i) => (line === null ? null : item(line, x, top - i * 12))).filter(Boolean);

const texts = (lines) => lines.map((l) => l.text);

test('runs on one baseline are one line, with a space only where there is a gap', () => {
  const items = [item('Tides', 72, 700), item('rise', 72 + 5 * 5 + 3, 700), item('s', 72 + 5 * 5 + 3 + 20, 700), item('Second', 72, 688)];
  assert.deepEqual(texts(pageLines(items, 595)), ['Tides rises', 'Second']);
});

test('a hyphenated line end is one word again; a gap or a new size starts a paragraph', () => {
  const lines = pageLines([
    ...column(['The estuary rises fifteen metres, a height mea-', 'sured since 1850, and the well-', 'Known rule stays.'], 72, 700),
    ...column(['A new paragraph after a gap.'], 72, 640),
    item('Heading in large type', 72, 610, 16),
  ], 595);
  assert.deepEqual(paragraphs(lines), [
    'The estuary rises fifteen metres, a height measured since 1850, and the well- Known rule stays.',
    'A new paragraph after a gap.',
    'Heading in large type',
  ]);
});

test('a soft hyphen at a line end joins the word', () => {
  const lines = pageLines(column(['conti\u00ad', 'nental shelf'], 72, 700), 595);
  assert.deepEqual(paragraphs(lines), ['continental shelf']);
});

test('two columns are read left column first, whatever order the items come in', () => {
  const left = column(['Left one starts', 'and goes on.', null, 'Left two.'], 60, 700);
  const right = column(['Right one starts', 'and ends.'], 320, 700);
  // Interleaved, row by row, as some producers write them; and a title across both.
  const items = [item('A title across both columns of the page', 60, 740, 14)];
  for (let i = 0; i < Math.max(left.length, right.length); i += 1) {
    if (left[i]) items.push(left[i]);
    if (right[i]) items.push(right[i]);
  }
  const lines = pageLines(items, 595);
  assert.deepEqual(texts(lines), ['A title across both columns of the page', 'Left one starts', 'and goes on.', 'Left two.', 'Right one starts', 'and ends.']);
  assert.deepEqual(paragraphs(lines), ['A title across both columns of the page', 'Left one starts and goes on.', 'Left two.', 'Right one starts and ends.']);
});

test('headers and footers on most pages go, numbers aside; text that repeats once stays', () => {
  const page = (n, body) => pageLines([
    item('Journal of Tides, vol. 3', 72, 800, 8),
    ...column(body, 72, 700),
    item(`Page ${n} of 4`, 280, 40, 8),
  ], 595);
  const pages = [
    page(1, ['Abstract text.', 'Journal of Tides, vol. 3']),
    page(2, ['Methods text.']),
    page(3, ['Results text.']),
    page(4, ['Discussion text.']),
  ];
  const kept = dropRunningLines(pages).map(texts);
  assert.deepEqual(kept, [['Abstract text.', 'Journal of Tides, vol. 3'], ['Methods text.'], ['Results text.'], ['Discussion text.']]);
  // Long body lines at the edges that differ only in their numbers are text.
  const numbered = [1, 2, 3].map((n) => pageLines(column([`Station ${n} read its level at the quay at dawn and dusk.`, `Body ${'x'.repeat(n)}.`, `Station ${n} closed in 18${n}0 after the great storm of that year.`], 72, 700), 595));
  assert.deepEqual(dropRunningLines(numbered).map((lines) => lines.length), [3, 3, 3]);
  // Two pages are too few to tell a running header from the text.
  assert.equal(dropRunningLines(pages.slice(0, 2))[0].length, 4);
});

test('the document text starts each page with a page break, NFKC, whole pages under the cap', () => {
  const { text, pagesRead } = documentText([['The \uFB01rst page.'], [], ['Third page.']], 1000);
  assert.equal(text, `${PAGE_BREAK}The first page.\n\n${PAGE_BREAK}\n\n${PAGE_BREAK}Third page.\n\n`);
  assert.equal(pagesRead, 3);
  const cut = documentText([['a'.repeat(40)], ['b'.repeat(40)]], 60);
  assert.equal(cut.pagesRead, 1);
  assert.equal(cut.text, `${PAGE_BREAK}${'a'.repeat(40)}\n\n`);
});
