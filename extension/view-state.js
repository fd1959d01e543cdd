// @ts-check
// KnowledgeLens popup state: the SessionView being shown, kept in step with the worker by
// the order `(rev, seq)` that every snapshot and event carries. Pure functions, no DOM:
// popup.js renders what they return; tests/unit/view-state.test.mjs tests them.
//
// Rules:
// - The view holds the `(rev, seq)` it reflects. An event applies only if its `(rev, seq)` is
//   newer (lexicographically); an older or duplicate event changes nothing.
// - A snapshot (the reply to `snapshot` or `ask`) replaces the view when it is at least as new.
// - Events received while a snapshot was on its way and newer than it are applied again on
//   top of it (a small buffer of recent events).
// - A worker restart (the port disconnects) leads to a new snapshot: the worker raises `rev`
//   when it starts again, so that snapshot is newer than anything the old worker sent.
// - Nothing is guessed: the snapshot carries the streamed `draft` and the exact counters, and
//   events carry the exact step and usage.
// - The steps list is the snapshot's `steps` extended by `step_item` events: an item goes in
//   at its trajectory `index` (replacing one with the same index), so a snapshot plus later
//   items give the same list as a later snapshot.

import { TERMINAL_STATUSES } from './protocol.gen.js';

/** @typedef {import('./protocol.gen.js').SessionView} SessionView */
/** @typedef {import('./protocol.gen.js').RunEvent} RunEvent */
/**
 * The view the popup shows: a `SessionView` (the type generated from the Rust one), possibly
 * built here before any snapshot came (without the fields only the worker knows), with what the
 * last phase event said about its work (`activity`: the query, the results being graded, the
 * section being summarised).
 * @typedef {Omit<SessionView, 'run' | 'trajectory_len'> & Partial<Pick<SessionView, 'run' | 'trajectory_len'>>
 *   & {activity?: {query?: string, count?: number, section?: number | null, of?: number} | null}} View
 */
/** @typedef {{view: View, buffer: RunEvent[]}} ViewState */

const TERMINAL = new Set(TERMINAL_STATUSES);

/** Most recent events kept for re-applying on top of a snapshot. */
export const BUFFER_LIMIT = 256;

/**
 * The view of a session nothing is known about yet.
 * @param {string} session
 * @returns {View}
 */
export function emptyView(session, maxSteps = 0) {
  return {
    session,
    status: 'idle',
    phase: null,
    activity: null,
    tool: null,
    step: 0,
    max_steps: maxSteps,
    usage: { input: 0, output: 0, budget: 0 },
    budget_warned: false,
    question: '',
    answer: '',
    draft: '',
    partial: false,
    error: null,
    notices: [],
    page: null,
    turns: [],
    steps: [],
    sources: [],
    cost: null,
    context_share: null,
    archived: false,
    pending_input: null,
    updated_at: 0,
    setup_needed: false,
    rev: 0,
    seq: 0,
  };
}

/** The status line's words for each phase (see `phaseLabel`). */
export const PHASE_LABELS = {
  thinking: 'Thinking',
  executing: 'Using a tool',
  analyzing: 'Analyzing',
  synthesizing: 'Writing the answer',
  reflecting: 'Reflecting',
  awaiting_input: 'Waiting for your answer',
  compacting: 'Compacting the conversation',
  searching: 'Searching the web',
  grading: 'Grading the results',
  rewriting: 'Rewriting the search query',
  summarizing: 'Summarizing the page',
};

/**
 * What the run is doing, for the status line: the phase's words, with the search query, the
 * number of results being graded or the section being summarised when the event said so
 * ('Starting' before any phase).
 */
export function phaseLabel(view) {
  const activity = view?.activity ?? {};
  if (view?.phase === 'searching' && activity.query) return `Searching the web for "${activity.query}"`;
  if (view?.phase === 'grading' && Number.isInteger(activity.count)) {
    return `Grading ${activity.count} result${activity.count === 1 ? '' : 's'}`;
  }
  if (view?.phase === 'summarizing' && Number.isInteger(activity.of) && activity.of > 1) {
    return Number.isInteger(activity.section)
      ? `Summarizing section ${activity.section} of ${activity.of}`
      : `Combining the summaries of ${activity.of} sections`;
  }
  return PHASE_LABELS[view?.phase] ?? 'Starting';
}

/** `(rev, seq)` of a view or an event. */
export function orderOf(item) {
  return { rev: Number(item?.rev) || 0, seq: Number(item?.seq) || 0 };
}

/** Negative, zero or positive as `a` is older than, as new as, or newer than `b`. */
export function compareOrder(a, b) {
  const x = orderOf(a);
  const y = orderOf(b);
  return x.rev - y.rev || x.seq - y.seq;
}

/**
 * The reducer's state for `session`: the view and the recent events.
 * @param {string} session
 * @returns {ViewState}
 */
export function initialState(session, maxSteps = 0) {
  return { view: emptyView(session, maxSteps), buffer: [] };
}

/** The text to show as the answer: the streamed draft while running, else the answer. */
export function shownAnswer(view) {
  if (view.status === 'running') return view.draft || view.answer || '';
  return view.answer || '';
}

/** Steps holding what a tool read (the page, the web, the user's replies) or a page section's summary. */
const READ_STEPS = new Set(['tool_result', 'section_summary']);

/** `text` without the addresses in it (a model's answer: its own links are not known text). */
const withoutAddresses = (text) => String(text ?? '').replace(/(?:https?:\/\/|mailto:)\S+/gi, ' ');

/**
 * The page and conversation text `view` holds, which no link in its answer may carry away
 * (markdown.js's `known`): the question, the earlier questions and answers (without their
 * addresses), the page's title, the cited sources' titles and passages, and what the tools
 * read. `more`: other text the caller shows (a captured selection and its paragraph).
 * @param {object} view
 * @param {(string|undefined|null)[]} [more]
 */
export function knownText(view, more = []) {
  const parts = [view?.question, view?.page?.title, ...more];
  for (const turn of view?.turns ?? []) parts.push(turn?.question, withoutAddresses(turn?.answer));
  for (const source of view?.sources ?? []) parts.push(source?.title, source?.excerpt);
  for (const step of view?.steps ?? []) {
    if (READ_STEPS.has(step?.kind)) parts.push(step.kind === 'tool_result' ? step.text : withoutAddresses(step.text));
  }
  return parts.filter((part) => typeof part === 'string' && part).join('\n');
}

/**
 * The session's own addresses, which a link in its answer may always use whatever its path
 * says (markdown.js's `urls`): the page's, the cited web sources', and every graded search
 * result's.
 * @param {object} view
 */
export function sourceUrls(view) {
  const urls = [view?.page?.url, ...(view?.sources ?? []).map((source) => source?.url)];
  for (const step of view?.steps ?? []) {
    for (const result of Array.isArray(step?.grades) ? step.grades : []) urls.push(result?.url);
  }
  return [...new Set(urls.filter((url) => typeof url === 'string' && url))];
}

/**
 * `steps` with `item` in place: replacing the entry with the same `index`, else inserted in
 * `index` order (a new array; `steps` is not changed). An item without an index is ignored.
 */
export function withStepItem(steps, item) {
  if (!item || !Number.isInteger(item.index)) return steps;
  const at = steps.findIndex((s) => s.index >= item.index);
  if (at === -1) return [...steps, item];
  if (steps[at].index === item.index) return steps.map((s, i) => (i === at ? item : s));
  return [...steps.slice(0, at), item, ...steps.slice(at)];
}

/**
 * `view` with `event` applied (a new object; `view` is not changed).
 * @param {View} view
 * @param {RunEvent} event
 * @returns {View}
 */
export function applyEvent(view, event) {
  const next = { ...view, ...orderOf(event) };
  if (typeof event.max_steps === 'number' && event.max_steps > 0) {
    next.max_steps = event.max_steps;
    if (typeof event.step === 'number') next.step = event.step;
    if (event.usage) next.usage = { ...event.usage };
  }
  switch (event.type) {
    case 'run_started':
      Object.assign(next, {
        status: 'running', phase: null, tool: null, question: event.question ?? '', answer: '',
        draft: '', partial: false, error: null, budget_warned: false, pending_input: null,
        steps: [], sources: [],
      });
      break;
    case 'step_item':
      next.steps = withStepItem(next.steps, event.item);
      break;
    case 'step_started':
      Object.assign(next, { status: 'running', tool: null });
      break;
    case 'thinking':
    case 'analyzing':
    case 'synthesizing':
    case 'compacting':
    case 'reflecting':
    case 'rewriting':
      Object.assign(next, { phase: event.type, tool: null, activity: null });
      break;
    case 'searching':
      Object.assign(next, { phase: 'searching', tool: null, activity: { query: event.query ?? '' } });
      break;
    case 'grading':
      Object.assign(next, { phase: 'grading', tool: null, activity: { count: event.count } });
      break;
    case 'summarizing':
      Object.assign(next, {
        phase: 'summarizing', tool: null, activity: { section: event.section ?? null, of: event.of },
      });
      break;
    case 'executing':
      Object.assign(next, { phase: 'executing', tool: event.tool ?? null, activity: null });
      break;
    case 'tool_completed':
    case 'tool_failed':
      next.tool = null;
      break;
    case 'answer_delta':
      next.draft = (next.draft || '') + (event.text ?? '');
      break;
    case 'answer_reset':
      next.draft = '';
      break;
    case 'budget_warning':
      next.budget_warned = true;
      break;
    case 'notice':
      // The run's first notices are in the snapshot of the question too.
      if (event.message && !next.notices.includes(event.message)) {
        next.notices = [...next.notices, event.message];
      }
      break;
    case 'completed':
      Object.assign(next, { answer: event.answer ?? '', partial: Boolean(event.partial) });
      break;
    case 'stopped':
      next.answer = event.answer ?? '';
      break;
    case 'failed':
    case 'timed_out':
      Object.assign(next, { error: event.error ?? null, answer: event.answer ?? '' });
      break;
    case 'awaiting_input':
      Object.assign(next, {
        phase: 'awaiting_input',
        tool: null,
        pending_input: { request_id: event.request_id, question: event.question ?? '', acknowledged: false },
      });
      break;
    default:
      break;
  }
  if (next.pending_input && !['awaiting_input', 'notice', 'budget_warning'].includes(event.type)) {
    // Anything else the run does means the question is no longer waiting.
    next.pending_input = null;
  }
  if (TERMINAL.has(event.type)) {
    // The answer's sources come with it, so its citations link as soon as it shows.
    if ('sources' in event && Array.isArray(event.sources)) next.sources = event.sources;
    Object.assign(next, { status: event.type, phase: null, activity: null, tool: null, draft: '', pending_input: null });
  }
  return next;
}

/**
 * A snapshot as a complete view (missing fields from the empty view).
 * @param {Partial<SessionView> | null | undefined} snapshot
 * @param {string} session
 * @returns {View}
 */
export function normalizeView(snapshot, session) {
  const base = emptyView(session);
  const view = { ...base, ...(snapshot || {}) };
  view.usage = { ...base.usage, ...(view.usage || {}) };
  for (const list of ['notices', 'turns', 'steps', 'sources']) {
    if (!Array.isArray(view[list])) view[list] = [];
  }
  // Snapshots from before step items carried an index list in trajectory order.
  view.steps = view.steps.map((s, i) => (Number.isInteger(s?.index) ? s : { ...s, index: i }));
  view.answer = view.answer ?? '';
  view.draft = view.draft ?? '';
  view.question = view.question ?? '';
  return view;
}

/**
 * `state` after `event` arrived: applied if newer than the view, and kept in the buffer.
 * @param {ViewState} state
 * @param {RunEvent} event
 * @returns {ViewState}
 */
export function receiveEvent(state, event) {
  const buffer = [...state.buffer, event].slice(-BUFFER_LIMIT);
  const view = compareOrder(event, state.view) > 0 ? applyEvent(state.view, event) : state.view;
  return { view, buffer };
}

/**
 * `state` after `snapshot` arrived (the reply to `snapshot` or `ask`).
 * @param {ViewState} state
 * @param {Partial<SessionView> | null | undefined} snapshot
 * @returns {ViewState}
 */
export function receiveSnapshot(state, snapshot) {
  const incoming = normalizeView(snapshot, state.view.session);
  if (compareOrder(incoming, state.view) < 0) return state;
  let view = incoming;
  for (const event of state.buffer) {
    if (compareOrder(event, view) > 0) view = applyEvent(view, event);
  }
  const buffer = state.buffer.filter((event) => compareOrder(event, view) > 0);
  return { ...state, view, buffer };
}

/** `state` once the port to the worker is lost: the old worker's events are history. */
export function disconnected(state) {
  return { ...state, buffer: [] };
}

export { TERMINAL };
