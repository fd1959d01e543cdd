// The Steps view (extension/ui/steps.js) in jsdom: the web search entries (search, grades,
// rewrite, search_fallback), the grades list, and that page and model data stay text.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><body><ol id="steps"></ol></body>');
// ui/dom.js builds nodes with the global `document`, as in the popup.
globalThis.document = window.document;
const { createStepsView } = await import('../../extension/ui/steps.js');

/** Renders `steps` into a fresh list; returns the list element. */
function rendered(steps) {
  const list = window.document.createElement('ol');
  createStepsView(list).render(steps);
  return list;
}

const entry = (index, kind, fields) => ({ index, step: 1, kind, text: '', ...fields });
const text = (node) => node?.textContent.replace(/\s+/g, ' ').trim();

test('a web search, a rewrite and a fallback show their label, text and marks', () => {
  const list = rendered([
    entry(0, 'search', { text: 'Searched Wikipedia for "tides" (query 1 of at most 3): 5 results' }),
    entry(1, 'search', { text: 'Wikipedia did not answer (network).', failed: true, retrying: true }),
    entry(2, 'rewrite', { text: 'Rewrote "q1" as "q2": only 1 of 5 results was relevant' }),
    entry(3, 'search_fallback', { text: 'No relevant web results: this answer comes from the model alone.', failed: true }),
  ]);
  const entries = [...list.querySelectorAll('.entry')];
  assert.equal(entries.length, 4);
  assert.equal(text(entries[0].querySelector('.entry-label')), 'Web search');
  assert.equal(text(entries[0].querySelector('.entry-text')), 'Searched Wikipedia for "tides" (query 1 of at most 3): 5 results');
  assert.ok(entries[0].classList.contains('entry-search'));
  const marks = (node) => [...node.querySelectorAll('.entry-label .mark')].map(text);
  assert.deepEqual(marks(entries[0]), []);
  assert.deepEqual(marks(entries[1]), ['failed', 'retrying']);
  assert.ok(entries[1].classList.contains('is-failed') && entries[1].classList.contains('is-retrying'));
  assert.equal(text(entries[2].querySelector('.entry-label')), 'Rewritten query');
  assert.equal(text(entries[2].querySelector('.entry-text')), 'Rewrote "q1" as "q2": only 1 of 5 results was relevant');
  assert.equal(text(entries[3].querySelector('.entry-label').firstChild), 'Search fallback');
  assert.deepEqual(marks(entries[3]), ['failed']);
  assert.match(text(entries[3]), /comes from the model alone/);
});

test('grades show the summary and one item per result with its mark, URL, confidence and reason', () => {
  const list = rendered([
    entry(0, 'grades', {
      text: '2 of 3 results relevant (67%; threshold 50%)',
      grades: [
        { title: 'Tide', url: 'https://en.wikipedia.org/wiki/Tide', grade: 'relevant', confidence: 0.853, reason: 'Defines tides.' },
        { title: 'Moon', url: 'http://example.org/moon', grade: 'not_relevant', confidence: 0.2, reason: 'About the Moon.' },
        { title: 'Sea', url: 'https://example.org/sea', grade: 'ungraded', confidence: null, reason: 'The grader did not answer.' },
      ],
    }),
  ]);
  const item = list.querySelector('.entry-grades');
  assert.equal(text(item.querySelector('.entry-label')), 'Grades');
  assert.equal(text(item.querySelector('.entry-text')), '2 of 3 results relevant (67%; threshold 50%)');
  const grades = item.querySelector('ul[aria-label="Result grades"]');
  assert.ok(grades, 'the list has its accessible name');
  const rows = [...grades.children];
  assert.deepEqual(rows.map((row) => text(row.querySelector('.mark'))), ['relevant', 'not relevant', 'ungraded']);
  assert.deepEqual(rows.map((row) => row.querySelector('.mark').className), [
    'mark mark-relevant', 'mark mark-not-relevant', 'mark mark-ungraded',
  ]);
  assert.deepEqual(rows.map((row) => text(row.querySelector('.grade-title'))), ['Tide', 'Moon', 'Sea']);
  const link = rows[0].querySelector('a.grade-url');
  assert.equal(link.getAttribute('href'), 'https://en.wikipedia.org/wiki/Tide');
  assert.equal(text(link), 'https://en.wikipedia.org/wiki/Tide');
  assert.equal(link.getAttribute('target'), '_blank');
  assert.equal(link.getAttribute('rel'), 'noopener noreferrer');
  assert.ok(rows[1].querySelector('a.grade-url'), 'http is a link too');
  assert.equal(text(rows[0].querySelector('.grade-confidence')), 'confidence 85%');
  assert.equal(text(rows[0].querySelector('.grade-reason')), 'Defines tides.');
  assert.equal(rows[2].querySelector('.grade-confidence'), null, 'no confidence: none shown');
  assert.equal(text(rows[2].querySelector('.grade-reason')), 'The grader did not answer.');
});

test('a grades entry without results is its summary alone; an unknown grade is ungraded', () => {
  const list = rendered([
    entry(0, 'grades', { text: '0 of 0 results relevant' }),
    entry(1, 'grades', { text: '1 result', grades: [{ title: '', url: '', grade: 'maybe', confidence: 7, reason: '' }] }),
  ]);
  const [bare, odd] = list.querySelectorAll('.entry-grades');
  assert.equal(bare.querySelector('ul'), null);
  const row = odd.querySelector('.grade');
  assert.equal(text(row.querySelector('.mark')), 'ungraded');
  assert.equal(text(row.querySelector('.grade-title')), '(untitled)');
  assert.equal(text(row.querySelector('.grade-confidence')), 'confidence 100%', 'clamped to [0, 1]');
});

test('only http(s) URLs are links, and HTML in titles and reasons is text', () => {
  const list = rendered([
    entry(0, 'grades', {
      text: '<b>summary</b>',
      grades: [
        { title: '<img src=x onerror=alert(1)>', url: 'javascript:alert(1)', grade: 'relevant', confidence: 0.5, reason: '<script>alert(2)</script>' },
        { title: 'Data', url: 'data:text/html,<p>hi</p>', grade: 'relevant', confidence: 0.5, reason: 'r' },
        { title: 'Relative', url: '/wiki/Tide', grade: 'relevant', confidence: 0.5, reason: 'r' },
      ],
    }),
  ]);
  assert.equal(list.querySelectorAll('a').length, 0, 'no links');
  assert.equal(list.querySelectorAll('img, script, b').length, 0, 'no markup parsed');
  const [first, second] = list.querySelectorAll('.grade');
  assert.equal(text(first.querySelector('.grade-url')), 'javascript:alert(1)');
  assert.equal(text(first.querySelector('.grade-title')), '<img src=x onerror=alert(1)>');
  assert.equal(text(first.querySelector('.grade-reason')), '<script>alert(2)</script>');
  assert.equal(text(second.querySelector('.grade-url')), 'data:text/html,<p>hi</p>');
  assert.equal(text(list.querySelector('.entry-text')), '<b>summary</b>');
});

test('entries are built once per content: an unchanged grades entry keeps its node', () => {
  const list = window.document.createElement('ol');
  const view = createStepsView(list);
  const grades = entry(1, 'grades', { text: '1 of 1', grades: [{ title: 'T', url: 'https://a.test/', grade: 'relevant', confidence: 1, reason: 'r' }] });
  view.render([entry(0, 'search', { text: 'Searched' }), grades]);
  const before = list.querySelector('.entry-grades');
  view.render([entry(0, 'search', { text: 'Searched' }), grades, entry(2, 'rewrite', { text: 'Rewrote' })]);
  assert.equal(list.querySelector('.entry-grades'), before, 'same node');
  view.render([entry(0, 'search', { text: 'Searched' }), { ...grades, text: '0 of 1' }]);
  assert.notEqual(list.querySelector('.entry-grades'), before, 'rebuilt when it changed');
  assert.equal(list.querySelectorAll('.entry').length, 2);
});

test('a section summary shows its label and text', () => {
  const list = rendered([
    entry(0, 'section_summary', { text: 'Section 3 of 12 (Part 3): The harbour grew.' }),
  ]);
  const [only] = list.querySelectorAll('.entry');
  assert.ok(only.classList.contains('entry-section_summary'));
  assert.equal(text(only.querySelector('.entry-label')), 'Section summary');
  assert.equal(text(only.querySelector('.entry-text')), 'Section 3 of 12 (Part 3): The harbour grew.');
});
