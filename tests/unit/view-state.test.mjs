// The popup's state reducer (extension/view-state.js): events and snapshots ordered by
// (rev, seq), with no guessing. Pure functions: runs under plain `node --test`.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  disconnected, initialState, knownText, phaseLabel, receiveEvent, receiveSnapshot, shownAnswer, sourceUrls,
} from '../../extension/view-state.js';
import { EVENTS, TERMINAL_STATUSES } from '../../extension/protocol.gen.js';

const SESSION = 'tab:4';

function event(type, rev, seq, fields = {}) {
  return { type, step: 1, max_steps: 5, usage: { input: 10, output: seq, budget: 32000 }, rev, seq, ...fields };
}

function snapshot(rev, seq, fields = {}) {
  return { session: SESSION, status: 'running', question: 'Why?', answer: '', draft: '', step: 1, max_steps: 5, rev, seq, ...fields };
}

const delta = (rev, seq, text) => event('answer_delta', rev, seq, { text });

test('the events the reducer knows are the events Rust emits', () => {
  for (const name of ['run_started', 'answer_delta', 'answer_reset', 'awaiting_input', 'step_item', ...TERMINAL_STATUSES]) {
    assert.ok(EVENTS.includes(name), name);
  }
});

test('a delta before the snapshot it is in is not applied twice; one after it is applied', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(2, 3));
  s = receiveEvent(s, delta(2, 4, 'Moon'));
  assert.equal(shownAnswer(s.view), 'Moon');
  // The snapshot was taken after the delta: its draft has it already.
  s = receiveSnapshot(s, snapshot(2, 4, { draft: 'Moon' }));
  assert.equal(shownAnswer(s.view), 'Moon');
  s = receiveEvent(s, delta(2, 5, ' pulls'));
  assert.equal(shownAnswer(s.view), 'Moon pulls');
  assert.deepEqual([s.view.rev, s.view.seq], [2, 5]);
});

test('a delta that arrives while the snapshot is on its way is applied again on top of it', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(2, 3));
  s = receiveEvent(s, delta(2, 4, 'Moon'));
  s = receiveEvent(s, delta(2, 5, ' pulls'));
  // Taken between the two deltas.
  s = receiveSnapshot(s, snapshot(2, 4, { draft: 'Moon', step: 2 }));
  assert.equal(shownAnswer(s.view), 'Moon pulls');
  assert.equal(s.view.step, 1, 'the later event carries the exact step');
  assert.deepEqual([s.view.rev, s.view.seq], [2, 5]);
});

test('a stale snapshot does not roll the view back', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(3, 1));
  s = receiveEvent(s, event('completed', 3, 2, { answer: 'Moon.', partial: false }));
  assert.equal(s.view.status, 'completed');
  s = receiveSnapshot(s, snapshot(3, 1, { status: 'running', draft: 'Mo' }));
  assert.equal(s.view.status, 'completed');
  assert.equal(shownAnswer(s.view), 'Moon.');
  // As new as the view: it replaces it (it is the authoritative copy).
  s = receiveSnapshot(s, snapshot(3, 2, { status: 'completed', answer: 'Moon.', turns: [{ question: 'a' }] }));
  assert.equal(s.view.turns.length, 1);
});

test('a duplicate event changes nothing', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1));
  s = receiveEvent(s, delta(1, 2, 'ab'));
  const once = s.view;
  s = receiveEvent(s, delta(1, 2, 'ab'));
  assert.deepEqual(s.view, once);
  assert.equal(shownAnswer(s.view), 'ab');
  s = receiveEvent(s, delta(1, 1, 'old'));
  assert.equal(shownAnswer(s.view), 'ab', 'an older event is ignored too');
});

test('a worker restart: the new snapshot has a higher rev and wins; late events of the old worker lose', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(3, 8));
  s = receiveEvent(s, delta(3, 9, 'Half an ans'));
  s = receiveEvent(s, delta(3, 10, 'wer'));
  s = disconnected(s);
  // The new worker resumed the run from storage (no draft) and raised rev.
  s = receiveSnapshot(s, snapshot(4, 2, { step: 2 }));
  assert.deepEqual([s.view.rev, s.view.seq], [4, 2]);
  assert.equal(shownAnswer(s.view), '');
  assert.equal(s.view.step, 2);
  s = receiveEvent(s, delta(3, 11, 'stale'));
  assert.equal(shownAnswer(s.view), '');
  s = receiveEvent(s, delta(4, 3, 'Fresh'));
  assert.equal(shownAnswer(s.view), 'Fresh');
});

test('the draft from a snapshot is continued by deltas, and reset or ended by events', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(5, 20, { draft: 'The moon ' }));
  assert.equal(shownAnswer(s.view), 'The moon ');
  s = receiveEvent(s, delta(5, 21, 'pulls.'));
  assert.equal(shownAnswer(s.view), 'The moon pulls.');
  s = receiveEvent(s, event('answer_reset', 5, 22));
  assert.equal(shownAnswer(s.view), '');
  s = receiveEvent(s, delta(5, 23, 'Tides'));
  s = receiveEvent(s, event('completed', 5, 24, { answer: 'Tides come from the moon.', partial: false }));
  assert.equal(s.view.status, 'completed');
  assert.equal(s.view.draft, '');
  assert.equal(shownAnswer(s.view), 'Tides come from the moon.');
});

test('events carry the exact step and usage; a question waits until the run moves on', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1));
  s = receiveEvent(s, event('awaiting_input', 1, 2, { request_id: 'r1', question: 'Which one?', step: 3 }));
  assert.equal(s.view.step, 3);
  assert.deepEqual(s.view.usage, { input: 10, output: 2, budget: 32000 });
  assert.equal(s.view.pending_input.request_id, 'r1');
  s = receiveEvent(s, event('notice', 1, 3, { message: 'n' }));
  assert.equal(s.view.pending_input.request_id, 'r1');
  s = receiveEvent(s, event('thinking', 1, 4));
  assert.equal(s.view.pending_input, null);
  assert.equal(s.view.phase, 'thinking');
});

test('a session that never ran: its snapshot (0, 0) is shown, and the first run is numbered from seq 1', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(0, 0, { setup_needed: true }));
  assert.equal(s.view.setup_needed, true);
  s = receiveEvent(s, event('run_started', 0, 1, { question: 'q' }));
  assert.equal(s.view.status, 'running');
  s = receiveEvent(s, delta(1, 2, 'a'));
  // The question's snapshot, saved before run_started, is older and does not roll back.
  s = receiveSnapshot(s, snapshot(0, 0, { status: 'running', draft: '' }));
  assert.equal(s.view.draft, 'a');
});

const item = (index, fields = {}) => ({ index, step: 1, kind: 'thought', text: `entry ${index}`, failed: false, ...fields });
const stepItem = (rev, seq, it) => event('step_item', rev, seq, { item: it });

test('step items extend the snapshot steps by index: appended, replaced, never duplicated', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(2, 5, { steps: [item(0), item(1, { kind: 'tool_call' })] }));
  s = receiveEvent(s, stepItem(2, 6, item(2, { kind: 'tool_result' })));
  assert.deepEqual(s.view.steps.map((x) => x.index), [0, 1, 2]);
  // The same entry again (e.g. re-sent with a longer text): replaced in place.
  s = receiveEvent(s, stepItem(2, 7, item(1, { kind: 'tool_call', text: 'again' })));
  assert.deepEqual(s.view.steps.map((x) => [x.index, x.text]), [[0, 'entry 0'], [1, 'again'], [2, 'entry 2']]);
  // An older event (already in the snapshot) changes nothing.
  const before = s.view.steps;
  s = receiveEvent(s, stepItem(2, 4, item(9)));
  assert.equal(s.view.steps, before);
});

test('a snapshot plus later step items equals a later snapshot, also across a worker restart', () => {
  const all = [item(0), item(1, { kind: 'tool_call', tool: 'read_page', arguments: '{"offset":0}' }),
    item(2, { kind: 'tool_result', failed: true }), item(3, { kind: 'observation' })];
  let live = initialState(SESSION);
  live = receiveSnapshot(live, snapshot(3, 1, { steps: all.slice(0, 1) }));
  live = receiveEvent(live, stepItem(3, 2, all[1]));
  // Arrives while a snapshot taken before it is on its way: re-applied on top.
  live = receiveEvent(live, stepItem(3, 3, all[2]));
  live = receiveSnapshot(live, snapshot(3, 2, { steps: all.slice(0, 2) }));
  live = disconnected(live);
  live = receiveSnapshot(live, snapshot(4, 1, { steps: all.slice(0, 3) }));
  live = receiveEvent(live, stepItem(4, 2, all[3]));

  let reopened = initialState(SESSION);
  reopened = receiveSnapshot(reopened, snapshot(4, 2, { steps: all }));
  assert.deepEqual(live.view.steps, reopened.view.steps);
  assert.deepEqual(live.view.steps, all);
});

test('items out of order are kept in index order; a new run starts an empty list', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1));
  s = receiveEvent(s, stepItem(1, 2, item(1)));
  s = receiveEvent(s, stepItem(1, 3, item(0)));
  s = receiveEvent(s, stepItem(1, 4, { kind: 'thought', text: 'no index' }));
  assert.deepEqual(s.view.steps.map((x) => x.index), [0, 1]);
  s = receiveEvent(s, event('run_started', 1, 5, { question: 'next' }));
  assert.deepEqual(s.view.steps, []);
});

test('snapshot steps without an index (older worker) are numbered by position', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1, { steps: [{ step: 1, kind: 'thought', text: 'a' }, { step: 1, kind: 'answer', text: 'b' }] }));
  assert.deepEqual(s.view.steps.map((x) => x.index), [0, 1]);
  assert.deepEqual(s.view.sources, []);
});

test('a reflection phase shows as reflecting, and a reflection entry joins the steps', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1));
  s = receiveEvent(s, event('reflecting', 1, 2));
  assert.equal(s.view.phase, 'reflecting');
  assert.equal(s.view.tool, null);
  s = receiveEvent(s, event('step_item', 1, 3, {
    item: { index: 0, step: 1, kind: 'reflection', text: 'not_found: a Suggested fix: f', text_chars: 29,
      failed: false, retrying: false, tool: 'read_page', arguments: null, arguments_chars: null, at_ms: 5 },
  }));
  assert.equal(s.view.steps.at(-1).kind, 'reflection');
  s = receiveEvent(s, event('thinking', 1, 4));
  assert.equal(s.view.phase, 'thinking');
});

test('web search phases say what is searched and graded on the status line', () => {
  for (const name of ['searching', 'grading', 'rewriting']) assert.ok(EVENTS.includes(name), name);
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1));
  assert.equal(phaseLabel(s.view), 'Starting');
  s = receiveEvent(s, event('searching', 1, 2, { query: 'bellhaven light keeper' }));
  assert.equal(s.view.phase, 'searching');
  assert.equal(phaseLabel(s.view), 'Searching the web for "bellhaven light keeper"');
  s = receiveEvent(s, event('grading', 1, 3, { count: 5 }));
  assert.equal(phaseLabel(s.view), 'Grading 5 results');
  s = receiveEvent(s, event('grading', 1, 4, { count: 1 }));
  assert.equal(phaseLabel(s.view), 'Grading 1 result');
  s = receiveEvent(s, event('rewriting', 1, 5));
  assert.equal(phaseLabel(s.view), 'Rewriting the search query');
  assert.equal(s.view.activity, null);
  // An older event changes nothing; the next phase forgets the query.
  s = receiveEvent(s, event('searching', 1, 4, { query: 'stale' }));
  assert.equal(phaseLabel(s.view), 'Rewriting the search query');
  s = receiveEvent(s, event('searching', 1, 6, { query: 'keepers of bellhaven' }));
  assert.equal(phaseLabel(s.view), 'Searching the web for "keepers of bellhaven"');
  s = receiveEvent(s, event('analyzing', 1, 7));
  assert.equal(phaseLabel(s.view), 'Analyzing');
  assert.equal(s.view.activity, null);
});

test('a snapshot taken while searching shows the phase without the query it does not carry', () => {
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1, { phase: 'searching' }));
  assert.equal(phaseLabel(s.view), 'Searching the web');
  s = receiveSnapshot(s, snapshot(1, 2, { phase: 'grading' }));
  assert.equal(phaseLabel(s.view), 'Grading the results');
  s = receiveEvent(s, event('completed', 1, 3, { answer: 'done' }));
  assert.equal(phaseLabel(s.view), 'Starting');
  assert.equal(s.view.activity, null);
});

test('a page summary says which section it is on, then that it combines them', () => {
  assert.ok(EVENTS.includes('summarizing'));
  let s = initialState(SESSION);
  s = receiveSnapshot(s, snapshot(1, 1, { phase: 'summarizing' }));
  assert.equal(phaseLabel(s.view), 'Summarizing the page');
  s = receiveEvent(s, event('summarizing', 1, 2, { section: 3, of: 12 }));
  assert.equal(s.view.phase, 'summarizing');
  assert.equal(phaseLabel(s.view), 'Summarizing section 3 of 12');
  s = receiveEvent(s, event('summarizing', 1, 3, { section: null, of: 12 }));
  assert.equal(phaseLabel(s.view), 'Combining the summaries of 12 sections');
  s = receiveEvent(s, event('summarizing', 1, 4, { section: 1, of: 1 }));
  assert.equal(phaseLabel(s.view), 'Summarizing the page');
  s = receiveEvent(s, event('analyzing', 1, 5));
  assert.equal(phaseLabel(s.view), 'Analyzing');
});

test('an answer arrives with its sources: the end event carries them, a new run clears them', () => {
  const source = { id: 'p1', kind: 'page', title: 'T', url: 'http://x/', excerpt: 'E', start: 0, end: 1 };
  for (const type of ['completed', 'stopped', 'failed', 'timed_out']) {
    let s = initialState(SESSION);
    s = receiveSnapshot(s, snapshot(1, 1));
    s = receiveEvent(s, event('run_started', 1, 2, { question: 'q' }));
    assert.deepEqual(s.view.sources, []);
    s = receiveEvent(s, event(type, 1, 3, { answer: 'A [p1].', sources: [source] }));
    assert.equal(s.view.status, type);
    assert.deepEqual(s.view.sources, [source], type);
    s = receiveEvent(s, event('run_started', 1, 4, { question: 'next' }));
    assert.deepEqual(s.view.sources, [], type);
  }
});

test('knownText: the questions, earlier answers without their addresses, the page title, sources and what tools read', () => {
  const view = {
    question: 'Which oil did the lamp burn?',
    answer: 'The current answer [x](https://current.example/?q=1)',
    draft: 'A draft',
    page: { title: 'The Keepers of Bellhaven Light', url: 'https://page.example/keepers' },
    turns: [{ question: 'Who kept the light?', answer: 'Agnes Tull, see [log](https://log.example/agnes?x=1) or mailto:a@b.example.' }],
    sources: [{ id: 'p1', kind: 'page', title: 'Passage title', url: 'https://page.example/keepers', excerpt: 'It burned colza oil.' }],
    steps: [
      { index: 0, kind: 'thought', text: 'I will read the page.' },
      { index: 1, kind: 'tool_call', text: 'read_page({})', arguments: '{"offset":0}' },
      { index: 2, kind: 'tool_result', text: 'Page text at https://page.example/p read by a tool.' },
      { index: 3, kind: 'observation', text: 'Model words.' },
      { index: 4, kind: 'section_summary', text: 'Section 1 of 2: a summary, https://made.example/up' },
      { index: 5, kind: 'answer', text: 'The answer step' },
    ],
    notices: ['A notice'],
  };
  const known = knownText(view, ['The selected text.', undefined, null, '']);
  for (const part of ['Which oil did the lamp burn?', 'The Keepers of Bellhaven Light', 'Who kept the light?',
    'Agnes Tull, see [log](', 'Passage title', 'It burned colza oil.', 'Page text at https://page.example/p read by a tool.',
    'Section 1 of 2: a summary,', 'The selected text.']) {
    assert.ok(known.includes(part), `known text lacks ${JSON.stringify(part)}:\n${known}`);
  }
  for (const part of ['current', 'A draft', 'log.example', 'a@b.example', 'made.example', 'https://page.example/keepers',
    'I will read', 'read_page', 'offset', 'Model words', 'The answer step', 'A notice']) {
    assert.ok(!known.includes(part), `known text holds ${JSON.stringify(part)}:\n${known}`);
  }
  assert.equal(knownText({}), '');
});

test('sourceUrls: the page\'s address, the sources\' and every graded search result\'s', () => {
  const view = {
    page: { title: 'P', url: 'https://page.example/a' },
    sources: [{ id: '1', kind: 'web', url: 'https://web.example/b' }, { id: 'p1', kind: 'page', url: 'https://page.example/a' }],
    steps: [{ index: 0, kind: 'grades', grades: [{ url: 'https://result.example/c' }, { url: '' }] }, { index: 1, kind: 'thought' }],
  };
  assert.deepEqual(sourceUrls(view), ['https://page.example/a', 'https://web.example/b', 'https://result.example/c']);
  assert.deepEqual(sourceUrls({}), []);
});
