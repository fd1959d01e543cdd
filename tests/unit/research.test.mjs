// Research mode in the popup (extension/ui/research.js, and the stages of ui/steps.js) in
// jsdom: the bound text, the status line of a research run, the controls (Subtopics enabled
// only in research mode, Max steps disabled in it, what an ask sends), and the Steps view
// grouped by stage, with a run without stages rendered exactly as before.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';
import { RESEARCH_SUBTOPICS, RESEARCH_SUBTOPIC_ROUNDS } from '../../extension/protocol.gen.js';

const { window } = new JSDOM('<!doctype html><body></body>');
globalThis.document = window.document;
const {
  boundText, clampSubtopics, createResearchControls, currentStage, researchBound, runningStatus,
} = await import('../../extension/ui/research.js');
const { createStepsView, stagesOf, stepCounts } = await import('../../extension/ui/steps.js');

const text = (node) => node?.textContent.replace(/\s+/g, ' ').trim();

test('the bound is 1 + subtopics × 3 + 2 rounds, from the generated constants', () => {
  assert.deepEqual(RESEARCH_SUBTOPICS, { min: 2, default: 4, max: 6 });
  assert.equal(RESEARCH_SUBTOPIC_ROUNDS, 3);
  assert.deepEqual([2, 3, 4, 5, 6].map(researchBound), [9, 12, 15, 18, 21]);
  assert.equal(boundText(4), 'Up to 15 rounds');
  assert.equal(boundText('2'), 'Up to 9 rounds');
  // Out of range or not a number: what would be sent.
  assert.deepEqual([1, 0, -3, 7, 99, 3.4, 4.6, '', 'x', null].map(clampSubtopics), [2, 2, 2, 6, 6, 3, 5, 4, 4, 4]);
  assert.equal(boundText(9), 'Up to 21 rounds');
});

const step = (index, stepNo, kind, fields = {}) => ({ index, step: stepNo, kind, text: '', ...fields });
const phase = (index, stepNo, heading) => step(index, stepNo, 'phase', { text: heading });

test('the current stage is the last phase entry; none in an ordinary run', () => {
  assert.equal(currentStage([]), null);
  assert.equal(currentStage(undefined), null);
  assert.equal(currentStage([step(0, 1, 'thought'), step(1, 1, 'tool_call')]), null);
  const steps = [
    phase(0, 0, 'Planning the subtopics'), step(1, 1, 'thought'),
    phase(2, 1, 'Subtopic 1 of 2: Keepers'), step(3, 2, 'tool_call'),
  ];
  assert.equal(currentStage(steps), 'Subtopic 1 of 2: Keepers');
});

test('the status line of a research run names its stage with the activity, and its step of the research bound', () => {
  const running = (fields) => ({ status: 'running', step: 0, max_steps: 5, phase: null, activity: null, tool: null, steps: [], ...fields });
  // An ordinary run: as before.
  assert.equal(runningStatus(running({ phase: 'thinking', step: 2 })), 'Thinking · Step 2 of 5');
  assert.equal(runningStatus(running({ phase: 'executing', step: 2, tool: 'read_page' })), 'Using a tool · Step 2 of 5 · using read_page');
  assert.equal(runningStatus(running({ phase: 'thinking', step: 2 }), true), 'Stopping… · Step 2 of 5');
  const steps = [phase(0, 0, 'Planning the subtopics'), phase(1, 1, 'Subtopic 2 of 4: The sun')];
  assert.equal(
    runningStatus(running({ phase: 'searching', activity: { query: 'solar tides' }, step: 5, max_steps: 15, steps })),
    'Subtopic 2 of 4: The sun — Searching the web for "solar tides" · Step 5 of 15',
  );
  assert.equal(runningStatus(running({ steps: steps.slice(0, 1) })), 'Planning the subtopics — Starting');
  assert.equal(
    runningStatus(running({ phase: 'thinking', step: 3, max_steps: 15, steps }), true),
    'Subtopic 2 of 4: The sun — Stopping… · Step 3 of 15',
  );
});

/** The question form's research controls in a fresh document. */
function controls() {
  const dom = new JSDOM(`<!doctype html><body>
    <input id="research" type="checkbox">
    <input id="subtopics" type="number" aria-describedby="research-bound">
    <span id="research-bound" hidden></span>
    <input id="max-steps" type="number" value="5">
  </body>`);
  const byId = (id) => dom.window.document.getElementById(id);
  const el = { checkbox: byId('research'), subtopics: byId('subtopics'), bound: byId('research-bound'), maxSteps: byId('max-steps') };
  const view = createResearchControls(el);
  view.render(false);
  const change = (node, type) => node.dispatchEvent(new dom.window.Event(type));
  return { el, view, change };
}

test('Subtopics is enabled only in research mode, Max steps only outside it, and the bound follows Subtopics', () => {
  const { el, view, change } = controls();
  assert.equal(el.subtopics.value, '4');
  assert.equal(el.subtopics.min, '2');
  assert.equal(el.subtopics.max, '6');
  assert.equal(el.subtopics.disabled, true);
  assert.equal(el.maxSteps.disabled, false);
  assert.equal(el.bound.hidden, true);
  assert.equal(view.request(), null, 'no research field outside research mode');

  el.checkbox.checked = true;
  change(el.checkbox, 'change');
  assert.equal(el.subtopics.disabled, false);
  assert.equal(el.maxSteps.disabled, true);
  assert.equal(el.bound.hidden, false);
  assert.equal(text(el.bound), 'Up to 15 rounds');
  el.subtopics.value = '2';
  change(el.subtopics, 'input');
  assert.equal(text(el.bound), 'Up to 9 rounds');
  assert.deepEqual(view.request(), { subtopics: 2 });

  // Out of range: clamped, and the box shows what was sent.
  el.subtopics.value = '9';
  assert.deepEqual(view.request(), { subtopics: 6 });
  assert.equal(el.subtopics.value, '6');
  assert.equal(text(el.bound), 'Up to 21 rounds');

  // While a run goes, nothing can change; after it, research mode is as it was.
  view.render(true);
  assert.deepEqual([el.checkbox.disabled, el.subtopics.disabled, el.maxSteps.disabled], [true, true, true]);
  view.render(false);
  assert.deepEqual([el.checkbox.disabled, el.subtopics.disabled, el.maxSteps.disabled], [false, false, true]);

  el.checkbox.checked = false;
  change(el.checkbox, 'change');
  assert.deepEqual([el.subtopics.disabled, el.maxSteps.disabled, el.bound.hidden], [true, false, true]);
});

const researchSteps = [
  phase(0, 0, 'Planning the subtopics'),
  step(1, 1, 'thought', { text: '{"subtopics": ["Keepers", "Salt"]}' }),
  phase(2, 1, 'Subtopic 1 of 2: Keepers'),
  step(3, 2, 'thought', { text: 'Searching.' }),
  step(4, 2, 'tool_call', { tool: 'search_web_for_info', arguments: '{"query":"keepers"}' }),
  step(5, 2, 'tool_result', { tool: 'search_web_for_info', text: '[1] Keepers' }),
  step(6, 3, 'thought', { text: 'Findings [1].' }),
  phase(7, 3, 'Subtopic 2 of 2: Salt'),
  step(8, 4, 'thought', { text: 'Findings [p1].' }),
  phase(9, 4, 'Writing the report'),
  step(10, 5, 'thought', { text: '## Keepers' }),
  phase(11, 5, 'Reviewing the report'),
  step(12, 6, 'thought', { text: '{"fixes": []}' }),
  step(13, 6, 'answer', { text: 'The report.' }),
];

test('stages split the entries at each phase entry; counts leave the headings out', () => {
  const stages = stagesOf(researchSteps);
  assert.deepEqual(stages.map((s) => s.phase?.text), [
    'Planning the subtopics', 'Subtopic 1 of 2: Keepers', 'Subtopic 2 of 2: Salt', 'Writing the report', 'Reviewing the report',
  ]);
  assert.deepEqual(stages.map((s) => s.items.map((i) => i.index)), [[1], [3, 4, 5, 6], [8], [10], [12, 13]]);
  assert.deepEqual(stepCounts(researchSteps), { steps: 6, entries: 9 });
  const plain = [step(0, 1, 'thought'), step(1, 1, 'tool_call'), step(2, 2, 'answer')];
  assert.deepEqual(stagesOf(plain), [{ phase: null, items: plain }]);
  assert.deepEqual(stepCounts(plain), { steps: 2, entries: 3 });
  assert.deepEqual(stagesOf([]), []);
});

test('the Steps view shows each stage as a list item with a heading, its steps inside', () => {
  const list = window.document.createElement('ol');
  const view = createStepsView(list);
  view.render(researchSteps);
  const stages = [...list.children];
  assert.ok(stages.every((li) => li.tagName === 'LI' && li.classList.contains('stage')));
  assert.deepEqual(stages.map((li) => text(li.querySelector(':scope > h3'))), [
    'Planning the subtopics', 'Subtopic 1 of 2: Keepers', 'Subtopic 2 of 2: Salt', 'Writing the report', 'Reviewing the report',
  ]);
  const stepsOf = (li) => [...li.querySelectorAll(':scope > ol > li.step')].map((s) => s.dataset.step);
  assert.deepEqual(stages.map(stepsOf), [['1'], ['2', '3'], ['4'], ['5'], ['6']]);
  assert.equal(list.querySelectorAll('.entry').length, 9, 'a phase entry is a heading, not an entry');
  assert.equal(text(stages[1].querySelector('.step[data-step="2"] .entry-tool_call .entry-label')), 'Tool call: search_web_for_info');

  // Later entries keep the nodes already shown (an open result stays open).
  const kept = stages[1].querySelector('.entry-tool_result');
  view.render([...researchSteps, step(14, 6, 'observation', { text: 'done' })]);
  assert.equal(list.children[1].querySelector('.entry-tool_result'), kept);
  assert.equal(list.children[4].querySelectorAll('.entry').length, 3);

  // A new run (a new question) replaces the stages.
  view.render([phase(0, 0, 'Planning the subtopics')]);
  assert.equal(list.children.length, 1);
  assert.equal(list.querySelectorAll('.entry').length, 0);
});

test('a run without phase entries renders exactly as a list of steps (as before stages)', () => {
  const plain = [
    step(0, 1, 'thought', { text: 'Reading.' }),
    step(1, 1, 'tool_call', { tool: 'read_page', arguments: '{}' }),
    step(2, 2, 'answer', { text: 'Done.' }),
  ];
  const list = window.document.createElement('ol');
  createStepsView(list).render(plain);
  assert.equal(
    list.innerHTML,
    '<li class="step" data-step="1"><p class="step-head"><span class="step-badge">1</span>Step 1</p><ol class="entries">'
      + '<li class="entry entry-thought" data-index="0"><p class="entry-label">Reasoning</p><p class="entry-text">Reading.</p></li>'
      + '<li class="entry entry-tool_call" data-index="1"><p class="entry-label">Tool call: read_page</p>'
      + '<p class="entry-sub">Arguments</p><pre class="entry-code">{}</pre></li></ol></li>'
      + '<li class="step" data-step="2"><p class="step-head"><span class="step-badge">2</span>Step 2</p><ol class="entries">'
      + '<li class="entry entry-answer" data-index="2"><p class="entry-label">Answer</p><p class="entry-text">Done.</p></li></ol></li>',
  );
  assert.equal(list.querySelectorAll('h3').length, 0);
});

test('page and model text in a stage heading stays text', () => {
  const list = window.document.createElement('ol');
  createStepsView(list).render([phase(0, 1, 'Subtopic 1 of 2: <img src=x onerror=alert(1)>'), step(1, 1, 'thought')]);
  const heading = list.querySelector('h3');
  assert.equal(heading.textContent, 'Subtopic 1 of 2: <img src=x onerror=alert(1)>');
  assert.equal(list.querySelector('img'), null);
});
