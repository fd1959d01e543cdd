// The answer view (extension/ui/answer.js) on jsdom: a draft's render still waiting for its
// animation frame when the answer completes (or the draft starts over) must not write into
// the container afterwards. Under load the frame can come late: it once doubled a finished
// answer in the e2e tier ("X.X."). A draft's links are text until the answer is complete.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><body><div id="answer"></div></body>');
globalThis.document = window.document;
const frames = new Map();
let nextFrame = 1;
globalThis.requestAnimationFrame = (cb) => {
  const id = nextFrame++;
  frames.set(id, cb);
  return id;
};
globalThis.cancelAnimationFrame = (id) => frames.delete(id);
const runFrames = () => {
  const due = [...frames.values()];
  frames.clear();
  for (const cb of due) cb();
};

const { createAnswerView } = await import('../../extension/ui/answer.js');

test('a frame still pending when the answer completes does not add the draft again', () => {
  const container = document.getElementById('answer');
  const view = createAnswerView(container);
  view.render('The tide is high.', { streaming: true, sources: [] });
  // The run completes before the draft's first frame.
  view.render('The tide is high.', { streaming: false, sources: [] });
  runFrames();
  assert.equal(container.textContent, 'The tide is high.');
  assert.equal(container.children.length, 1);
});

test('a draft that starts over is not written into by the old draft\'s frame', () => {
  const container = document.getElementById('answer');
  const view = createAnswerView(container);
  view.render('First try', { streaming: true, sources: [] });
  view.render('Second', { streaming: true, sources: [] });
  runFrames();
  assert.equal(container.textContent, 'Second');
  view.render('Second answer.', { streaming: true, sources: [] });
  runFrames();
  assert.equal(container.textContent, 'Second answer.');
});

test('a draft\'s links are text with their host; the complete answer\'s are links, checked against the known text', () => {
  const container = document.getElementById('answer');
  const view = createAnswerView(container);
  const known = 'The lamp at Bellhaven burned 412 litres of colza oil each winter.';
  const text = '[Docs](https://docs.example.org/a) and [log](https://collect.example/?d=lamp+at+Bellhaven+burned+412+litres+of+colza).';
  view.render(text, { streaming: true, sources: [], known });
  runFrames();
  assert.equal(container.querySelector('a'), null);
  assert.match(container.textContent, /^Docs \(docs\.example\.org\) and log \(link to collect\.example removed/);
  view.render(text, { streaming: false, sources: [], known });
  assert.deepEqual([...container.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]),
    [['Docs (docs.example.org)', 'https://docs.example.org/a']]);
  // The same answer once the known text no longer holds the run: both are links.
  view.render(text, { streaming: false, sources: [], known: 'Something else.' });
  assert.equal(container.querySelectorAll('a').length, 2);
});
