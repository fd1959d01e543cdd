// The answer view (extension/ui/answer.js) on jsdom: a draft's render still waiting for its
// animation frame when the answer completes (or the draft starts over) must not write into
// the container afterwards. Under load the frame can come late: it once doubled a finished
// answer in the e2e tier ("X.X.").

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
