// @ts-check
// KnowledgeLens popup: ask about the page, watch the agent work, read the answer.
//
// The popup holds no run state of its own: it renders the backend's SessionView (from a
// `snapshot`), applies the events of its own session on top in (rev, seq) order
// (view-state.js), and re-reads a snapshot after every reconnect and at the edges of a run.
// Page text and model output are untrusted: they are only ever written with textContent, or
// as DOM nodes built by markdown.js's parser.
//
// The same page and code run as the side panel (sidepanel.html: html[data-mode="sidepanel"]).
// The views of the steps, the answer, History and the side panel live in ui/*.js.

import { captureSelection } from './capture.js';
import { BackendError, Connection } from './messaging.js';
import { MAX_STEPS_DEFAULT, MAX_STEPS_LIMIT, REQUESTS, SETTINGS_ERROR_KINDS } from './protocol.gen.js';
import {
  TERMINAL, disconnected, emptyView, initialState, knownText, normalizeView, receiveEvent,
  receiveSnapshot, shownAnswer, sourceUrls,
} from './view-state.js';
import { createAddPages, showAddedPassage } from './ui/add-pages.js';
import { BUILTIN_BUTTONS, actionsFor, browserLanguage, mountActionButtons } from './ui/actions.js';
import { createAnswerView, renderSources } from './ui/answer.js';
import { PASSAGE_GONE_KIND, createPassageCitations } from './ui/passages.js';
import { renderConversations } from './ui/conversations.js';
import { openSidePanel, pageAccess, requestOrigin } from './ui/panel.js';
import { createResearchControls, runningStatus } from './ui/research.js';
import { createLocalModels, settingsUsing } from './ui/local-models.js';
import { createSearchOffer } from './ui/search-offer.js';
import { createStepsView, stepCounts } from './ui/steps.js';

/**
 * The popup's elements by id (popup.html), its form controls typed as such.
 * @typedef {Record<string, HTMLElement> & {
 *  'ask-form': HTMLFormElement,
 *  question: HTMLTextAreaElement,
 *  'max-steps': HTMLInputElement,
 *  ask: HTMLButtonElement,
 *  stop: HTMLButtonElement,
 *  'error-options': HTMLButtonElement,
 *  export: HTMLButtonElement,
 *  'open-options': HTMLButtonElement,
 *  'input-form': HTMLFormElement,
 *  'input-answer': HTMLInputElement,
 *  'input-send': HTMLButtonElement,
 *  'setup-provider': HTMLSelectElement,
 *  'setup-continue': HTMLButtonElement,
 *  'open-panel': HTMLButtonElement,
 *  'allow-site': HTMLButtonElement,
 *  'readonly-back': HTMLButtonElement,
 *  'steps-toggle': HTMLButtonElement,
 *  'new-conversation': HTMLButtonElement,
 *  'archive-toggle': HTMLButtonElement,
 *  'copy-answer': HTMLButtonElement,
 *  'clear-history': HTMLButtonElement,
 *  'explain-form': HTMLFormElement,
 *  selection: HTMLTextAreaElement,
 *  explain: HTMLButtonElement,
 *  'search-offer-on': HTMLButtonElement,
 *  'search-offer-later': HTMLButtonElement,
 *  research: HTMLInputElement,
 *  subtopics: HTMLInputElement,
 * }} PopupElements
 */

const el = /** @type {PopupElements} */ (Object.fromEntries(
  [
    'page', 'ask-form', 'question', 'max-steps', 'ask', 'stop', 'status', 'tokens', 'error',
    'error-message', 'error-options', 'notices', 'history', 'turns', 'answer-section', 'asked',
    'answer', 'answer-empty', 'answer-partial', 'export', 'open-options', 'input-request',
    'input-question', 'input-form', 'input-answer', 'input-send', 'setup', 'setup-provider',
    'setup-continue', 'setup-found', 'setup-note', 'open-panel', 'access', 'access-text', 'allow-site', 'readonly',
    'readonly-back', 'cost', 'context-share', 'steps-section', 'steps-toggle', 'steps-count', 'steps',
    'step-list', 'sources-section', 'sources', 'new-conversation', 'archive-toggle', 'copy-done',
    'copy-answer', 'archive', 'clear-history', 'archive-empty', 'archive-list', 'explain-form',
    'selection', 'explain', 'explain-note', 'search-offer', 'search-offer-on', 'search-offer-later',
    'search-offer-done', 'research', 'subtopics', 'research-bound',
  ].map((id) => [id, document.getElementById(id)]),
));

/** Error kinds for which the fix is usually in the provider settings. */
const SETTINGS_KINDS = new Set(SETTINGS_ERROR_KINDS);

const state = {
  /** @type {string|null} */ session: null,
  /** @type {number|null} */ tabId: null,
  /** The view being shown and the recent events (view-state.js); null before the first. */
  /** @type {import('./view-state.js').ViewState|null} */ shown: null,
  /** @type {import('./view-state.js').View|null} the SessionView being shown (state.shown.view) */
  get view() {
    return this.shown?.view ?? null;
  },
  connected: false,
  askPending: false,
  stopping: false,
  /** An error from a request (not from the run itself), e.g. `busy`. */
  /** @type {{kind: string, message: string}|null} */ requestError: null,
  /** Snapshots rendered so far (exposed as data-snapshots, handy when debugging reconnects). */
  snapshots: 0,
  /** Request ids of questions this popup has acknowledged showing (once each). */
  acknowledged: new Set(),
  /** The answer being sent, for the question with this request id. */
  /** @type {string|null} */ sendingAnswerFor: null,
  /** 'popup' or 'sidepanel' (the same page in Chrome's side panel, per tab). */
  mode: document.documentElement.dataset.mode === 'sidepanel' ? 'sidepanel' : 'popup',
  /** An archived conversation opened from History (read-only), shown instead of the session. */
  /** @type {object|null} */ archived: null,
  /** The side panel's access to its tab: null (fine or unknown) or {origin} when it has none. */
  /** @type {{origin: string|null}|null} */ access: null,
  /**
   * The target tab's selection as captured when the popup opened ({selection} from capture.js),
   * or {error} when the page cannot be scripted; null before the capture (or without a tab).
   */
  /** @type {{selection?: object, error?: {kind: string, message: string}}|null} */ capture: null,
};

/** The conversation requests exist once the worker speaks them (protocol.gen.js). */

const stepsView = createStepsView(el['step-list']);
const localModels = createLocalModels(el['setup-found'], {
  request: (type, fields) => connection.request(type, fields),
  onUse: (choice) => void useLocalModel(choice),
});
const research = createResearchControls({
  checkbox: el.research, subtopics: el.subtopics, bound: el['research-bound'], maxSteps: el['max-steps'],
});
const answerView = createAnswerView(el.answer);
const passages = createPassageCitations({
  answer: el.answer,
  list: el.sources,
  preview: document.getElementById('passage-preview'),
  sources: () => (state.archived ?? state.view)?.sources ?? [],
  locate: (text, source) => (source?.added
    ? showAddedPassage(source, state.view, text, (t, page) => connection.request(REQUESTS.LOCATE_PASSAGE, { session: state.session, text: t, page }))
    : connection.request(REQUESTS.LOCATE_PASSAGE, { session: state.session, text })),
  // A PDF passage: the session's tab opens at the page. Chrome's viewer reads `#page=N` when
  // it loads, not when only the fragment changes (Chromium 156, measured in pdf.test.mjs):
  // a tab already showing the PDF is reloaded at the new address.
  openPage: async (url) => {
    if (state.tabId === null) throw new Error('This conversation has no tab to show the PDF in.');
    const tabId = state.tabId;
    const shown = await chrome.tabs.get(tabId);
    const same = (a) => String(a ?? '').split('#')[0] === url.split('#')[0];
    await chrome.tabs.update(tabId, { url });
    if (!same(shown.url) && !same(shown.pendingUrl)) return;
    // Reloaded once the tab is at the new address (else the reload would load the old one).
    for (let tries = 0; tries < 40 && (await chrome.tabs.get(tabId)).url !== url; tries += 1) {
      await new Promise((done) => { setTimeout(done, 50); });
    }
    await chrome.tabs.reload(tabId);
  },
  onResult: (error) => {
    if (error) showRequestError(error);
    else if (state.requestError?.kind === PASSAGE_GONE_KIND) showRequestError(null);
  },
});
const addPages = createAddPages(document.getElementById('added-pages'), {
  request: (type, fields) => connection.request(type, fields),
  session: () => state.session,
  onView: (view) => { adopt(view); render(); },
  onError: (err) => showRequestError(err),
});
const searchOffer = createSearchOffer(
  {
    section: el['search-offer'], turnOn: el['search-offer-on'], notNow: el['search-offer-later'],
    done: el['search-offer-done'], after: el.question,
  },
  (type, fields) => connection.request(type, fields),
  (err) => showRequestError(err),
);

function stepsInput() {
  return Number(el['max-steps'].value) || MAX_STEPS_DEFAULT;
}

function reducerState() {
  state.shown ??= initialState(state.session, stepsInput());
  return state.shown;
}

// ---------------------------------------------------------------------------------------------
// Target tab and session key (see the contract).

function isExtensionUrl(url) {
  return typeof url === 'string' && url.startsWith(`chrome-extension://`);
}

async function resolveTarget() {
  const param = new URLSearchParams(location.search).get('tab');
  if (param !== null && /^\d+$/.test(param)) {
    const tabId = Number(param);
    return { session: `tab:${tabId}`, tabId };
  }
  try {
    const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    const self = await chrome.tabs.getCurrent(); // set when this page is itself a tab
    const url = tab?.url || tab?.pendingUrl;
    if (tab && typeof tab.id === 'number' && tab.id >= 0 && tab.id !== self?.id && !isExtensionUrl(url)) {
      return { session: `tab:${tab.id}`, tabId: tab.id };
    }
  } catch (err) {
    console.warn('KnowledgeLens: could not find the active tab:', err);
  }
  return { session: 'popup', tabId: null };
}

// ---------------------------------------------------------------------------------------------
// Events and snapshots (ordered by view-state.js).

/** Adopts a snapshot (reply to `snapshot` or `ask`). */
function adopt(view) {
  state.shown = receiveSnapshot(reducerState(), view);
}

function onEvent(message) {
  if (message.session !== state.session || !message.event) return;
  const { type } = message.event;
  state.shown = receiveEvent(reducerState(), message.event);
  if (type === 'run_started' || TERMINAL.has(type)) state.stopping = false;
  render();
  // Re-read the authoritative view at the edges of a run (turns, page, notices); the final
  // event is sent once the final state is saved.
  if (type === 'run_started' || TERMINAL.has(type)) void refresh();
}

async function refresh() {
  try {
    const view = await connection.request(REQUESTS.SNAPSHOT, { session: state.session });
    adopt(view);
    state.snapshots += 1;
    // Exposed for debugging reconnects: how many snapshots, and on which connection.
    document.documentElement.dataset.snapshots = String(state.snapshots);
    document.documentElement.dataset.snapshotConnection = String(connection.connects);
    if (state.requestError?.kind === 'disconnected') state.requestError = null;
    if (state.view.status !== 'running') state.stopping = false;
  } catch (err) {
    if (!(err instanceof BackendError && err.kind === 'disconnected')) showRequestError(err);
  }
  render();
}

// ---------------------------------------------------------------------------------------------
// Actions.

/** Shows `err` in the alert (null clears it). */
function showRequestError(err) {
  state.requestError = err === null ? null : {
    kind: err?.kind ?? 'internal',
    message: err?.message || String(err),
  };
  render();
}

function maxSteps() {
  const text = el['max-steps'].value.trim();
  const value = Number(text);
  if (!text || !Number.isFinite(value)) return null;
  return Math.min(MAX_STEPS_LIMIT, Math.max(1, Math.round(value)));
}

/**
 * Starts a run in this popup's session with request `type` (`ask` or `explain`) and `fields`;
 * resolves to whether it started. A run already going (or starting) is left alone.
 */
async function startRun(type, fields) {
  if (state.askPending || state.view?.status === 'running') return false;
  state.archived = null;
  const steps = maxSteps();
  if (steps !== null) el['max-steps'].value = String(steps);
  state.askPending = true;
  state.requestError = null;
  render();
  const askedAt = Date.now();
  const send = () => connection.request(type, { session: state.session, tab_id: state.tabId, max_steps: steps, ...fields });
  try {
    let view;
    try {
      view = await send();
    } catch (err) {
      if (/** @type {any} */ (err)?.kind !== 'disconnected') throw err;
      view = await sendAgainAfterRestart(send, askedAt);
    }
    adopt(view);
    searchOffer.offer(view);
    return true;
  } catch (err) {
    showRequestError(err);
    return false;
  } finally {
    state.askPending = false;
    render();
  }
}

/**
 * After the worker stopped before answering a run's request: once this page has reconnected,
 * the run itself if the worker saved it before it stopped (the next worker goes on with it),
 * else the request sent once more. A run is saved once its page is read, so a worker stopped
 * while a long page (a PDF) is read loses the question: asked again, the page's reading still
 * under way in the tab is joined, not begun again.
 * @template T
 * @param {() => Promise<T>} send
 * @param {number} askedAt Date.now() when the request was first sent
 * @returns {Promise<T | import('./protocol.gen.js').SessionView>}
 */
async function sendAgainAfterRestart(send, askedAt) {
  for (let waited = 0; !state.connected; waited += 100) {
    if (waited > 30_000) throw new Error('KnowledgeLens could not reconnect to its background worker; ask again.');
    await new Promise((done) => { setTimeout(done, 100); });
  }
  // Saved since it was asked: a run under way or over (a session never saved shows as idle,
  // with the time it was read as its own).
  const now = await connection.request(REQUESTS.SNAPSHOT, { session: state.session });
  if (now.status !== 'idle' && now.updated_at >= askedAt) return now;
  return send();
}

async function ask() {
  const question = el.question.value.trim();
  if (!question) {
    showRequestError({ kind: 'bad_request', message: 'Type a question first.' });
    el.question.focus();
    return;
  }
  // Research mode: its bound is the research bound, so no Max steps is sent.
  const asked = research.request();
  const fields = asked ? { question, research: asked, max_steps: null } : { question };
  if (await startRun(REQUESTS.ASK, fields)) el.question.value = '';
}

/** Reads the target tab's selection into the "Selected text" box (once, when the popup opens). */
async function readSelection() {
  if (state.tabId === null || state.mode !== 'popup') return;
  const captured = await captureSelection(state.tabId);
  state.capture = captured.ok === true ? { selection: captured.selection } : { error: captured.error };
  if (captured.ok && !el.selection.value) el.selection.value = captured.selection.text;
  document.documentElement.dataset.selection = captured.ok === true ? 'captured' : captured.error.kind;
  render();
  if (captured.ok && captured.selection.text) el.explain.focus();
}

/** The `selection` of an explain request: the captured context with the (edited) box's text. */
function selectionToSend(text) {
  const captured = state.capture?.selection ?? {};
  const edited = text !== captured.text;
  return {
    text,
    full_length: edited ? Array.from(text).length : captured.full_length ?? Array.from(text).length,
    context: captured.context ?? '',
    headings: captured.headings ?? [],
    title: captured.title ?? '',
    url: captured.url ?? '',
    lang: captured.lang ?? '',
  };
}

async function explain() {
  const text = el.selection.value.trim();
  if (text) await startRun(REQUESTS.EXPLAIN, { selection: selectionToSend(text) });
}

/** A selection action's button (ui/actions.js): the same selection, another action. */
async function runAction(action) {
  const text = el.selection.value.trim();
  if (text) await startRun(REQUESTS.RUN_ACTION, { selection: selectionToSend(text), action, language: browserLanguage() });
}
const actionButtons = /** @type {HTMLElement} */ (document.getElementById('action-buttons'));
let disableActions = mountActionButtons(actionButtons, BUILTIN_BUTTONS, runAction);
/** The buttons of the actions saved for the popup (Options, section Actions), once connected. */
async function loadActions() {
  const shown = actionsFor(await connection.request(REQUESTS.GET_ACTIONS), 'popup').filter((a) => a.id !== 'explain');
  disableActions = mountActionButtons(actionButtons, shown, runAction);
  render();
}

/** The "Selected text" box, or why the page cannot be explained. */
function renderExplain(view, readOnly) {
  const error = state.capture?.error;
  const usable = state.mode === 'popup' && state.tabId !== null && !readOnly && !error;
  el['explain-form'].hidden = !usable || !state.capture;
  el.explain.disabled = !el.selection.value.trim() || view.status === 'running' || state.askPending;
  disableActions(el.explain.disabled);
  el['explain-note'].hidden = !error;
  el['explain-note'].textContent = error?.message ?? '';
}

async function stop() {
  state.stopping = true;
  render();
  try {
    const result = await connection.request(REQUESTS.STOP, { session: state.session });
    if (!result?.stopping) state.stopping = false;
  } catch (err) {
    state.stopping = false;
    showRequestError(err);
  }
  render();
}

async function exportTrajectory() {
  el.export.disabled = true;
  try {
    const { filename, json } = await connection.request(REQUESTS.EXPORT, { session: state.session });
    const url = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = filename || 'knowledgelens-trajectory.json';
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    showRequestError(err);
  } finally {
    el.export.disabled = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering (textContent only).

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function statusText(view) {
  if (!state.connected && !state.view) return 'Connecting…';
  if (state.askPending) return 'Starting…';
  switch (view.status) {
    case 'running':
      return runningStatus(view, state.stopping);
    case 'completed':
      return view.partial
        ? `Completed with a partial answer after ${plural(view.step, 'step')}.`
        : `Completed in ${plural(view.step, 'step')}.`;
    case 'stopped':
      return `Stopped after ${plural(view.step, 'step')}.`;
    case 'failed':
      return 'The run failed.';
    case 'timed_out':
      return 'Ended: the question to you went unanswered.';
    default:
      return state.connected ? 'Ready.' : 'Reconnecting…';
  }
}

function renderPage(view) {
  const page = view.page;
  if (page && (page.title || page.url)) {
    el.page.textContent = `Page: ${page.title || page.url}`;
    el.page.title = page.url || '';
  } else if (state.session === 'popup') {
    el.page.textContent = 'No page selected: answers will not use page text.';
    el.page.title = '';
  } else {
    el.page.textContent = 'Asks about the current tab.';
    el.page.title = '';
  }
}

function renderTokens(view) {
  const used = (view.usage.input ?? 0) + (view.usage.output ?? 0);
  const budget = view.usage.budget ?? 0;
  // Prompt tokens the provider read from its prompt cache (a part of the input), when any.
  const cached = Number(view.usage.cached_input ?? 0);
  const note = cached > 0 ? ` (${cached.toLocaleString('en-US')} cached)` : '';
  el.tokens.textContent = `Tokens: ${used.toLocaleString('en-US')} / ${budget.toLocaleString('en-US')}${note}`;
  const warn = Boolean(view.budget_warned);
  el.tokens.classList.toggle('warn', warn);
  el.tokens.title = warn ? 'Close to the token budget: the answer may be cut short.' : '';
}

/** The cost estimate and the share of the context window the last request used (not live). */
function renderCost(view) {
  const usd = Number(view.cost?.usd);
  el.cost.hidden = !Number.isFinite(usd);
  el.cost.textContent = Number.isFinite(usd) ? `Cost: $${usd.toFixed(4)} (estimate)` : '';
  const from = view.cost?.source === 'settings'
    ? 'From the prices entered in Options.'
    : 'From a dated price table for this model.';
  const cached = Number(view.usage?.cached_input ?? 0);
  el.cost.title = cached > 0
    ? `${from} ${cached.toLocaleString('en-US')} prompt tokens were read from the provider's cache and count at the cached input price.`
    : from;
  const share = Number(view.context_share);
  const shown = view.context_share !== null && view.context_share !== undefined && Number.isFinite(share);
  el['context-share'].hidden = !shown;
  const percent = share > 0 ? Math.max(1, Math.round(share * 100)) : 0;
  el['context-share'].textContent = shown ? `Context: ${percent}% of the window` : '';
}

/** The Steps disclosure and region: every trajectory entry of the run. */
function renderSteps(view) {
  const steps = view.steps ?? [];
  el['steps-section'].hidden = steps.length === 0;
  const count = stepCounts(steps);
  const entries = `${count.entries} ${count.entries === 1 ? 'entry' : 'entries'}`;
  el['steps-count'].textContent = steps.length ? `${plural(count.steps, 'step')}, ${entries}` : '';
  el.steps.hidden = el['steps-toggle'].getAttribute('aria-expanded') !== 'true';
  stepsView.render(steps);
}

function toggleSteps() {
  const open = el['steps-toggle'].getAttribute('aria-expanded') !== 'true';
  el['steps-toggle'].setAttribute('aria-expanded', String(open));
  el.steps.hidden = !open;
}

function renderError(view) {
  const runError = view.status === 'failed' || view.status === 'timed_out' ? view.error : null;
  // Saved settings that cannot be used (runs then use the defaults) are said in the same
  // alert, with its way to Options, when nothing more pressing is shown.
  const settingsError = view.settings_notice ? { kind: 'invalid_settings', message: view.settings_notice } : null;
  const error = state.requestError ?? runError ?? settingsError;
  el.error.hidden = !error;
  if (!error) return;
  el['error-message'].textContent = error.message || 'The run failed.';
  const settingsRelated = (view.status === 'failed' || SETTINGS_KINDS.has(error.kind))
    && error.kind !== 'input_timeout';
  el['error-options'].hidden = !settingsRelated || error.kind === 'busy' || error.kind === 'disconnected';
}

function renderNotices(view) {
  el.notices.replaceChildren(
    ...view.notices.map((text) => {
      const item = document.createElement('li');
      item.textContent = text;
      return item;
    }),
  );
  el.notices.hidden = view.notices.length === 0;
}

function renderTurns(view) {
  el.turns.replaceChildren(
    ...view.turns.map((turn) => {
      const item = document.createElement('li');
      const q = document.createElement('p');
      q.className = 'turn-question';
      q.textContent = turn.question ?? '';
      const a = document.createElement('p');
      a.className = 'turn-answer';
      a.textContent = turn.answer || (turn.status === 'failed' ? '(no answer: the run failed)' : '(no answer)');
      item.append(q, a);
      return item;
    }),
  );
  el.history.hidden = view.turns.length === 0;
}

function renderAnswer(view) {
  el.asked.hidden = !view.question;
  el.asked.textContent = view.question;
  const answer = shownAnswer(view);
  const running = view.status === 'running';
  const selection = state.capture?.selection;
  const known = knownText(view, [selection?.text, selection?.context]);
  answerView.render(answer, { streaming: running, sources: view.sources ?? [], known, urls: sourceUrls(view) });
  renderSources(el['sources-section'], el.sources, running ? [] : view.sources ?? []);
  passages.refresh();
  el['copy-answer'].hidden = !(answer && !running);
  el.answer.classList.toggle('streaming', running);
  el['answer-section'].setAttribute('aria-busy', String(running));
  let placeholder = '';
  if (!answer) {
    if (!view.question) {
      placeholder = state.session === 'popup'
        ? 'Ask a question to get an answer.'
        : 'Ask a question to get an answer grounded in this page.';
    } else if (view.status === 'failed') {
      placeholder = 'No answer: the run failed.';
    } else if (TERMINAL.has(view.status)) {
      placeholder = 'No answer.';
    }
  }
  el['answer-empty'].textContent = placeholder;
  el['answer-empty'].hidden = !placeholder;
  el['answer-partial'].hidden = !(view.partial && answer && TERMINAL.has(view.status));
}

/**
 * The model's question to the user: shown with an answer box, and acknowledged to the
 * worker once per request id (the run's first timeout stops when a UI has shown it).
 */
function renderInputRequest(view) {
  const pending = view.status === 'running' ? view.pending_input : null;
  const wasHidden = el['input-request'].hidden;
  el['input-request'].hidden = !pending;
  if (!pending) return;
  el['input-question'].textContent = pending.question;
  const sending = state.sendingAnswerFor === pending.request_id;
  el['input-answer'].disabled = sending;
  el['input-send'].disabled = sending;
  if (wasHidden) el['input-answer'].focus();
  if (!state.acknowledged.has(pending.request_id) && state.connected) {
    state.acknowledged.add(pending.request_id);
    connection
      .request(REQUESTS.ACK_INPUT, { session: state.session, request_id: pending.request_id })
      .catch((err) => {
        // Not shown to the worker after all: try again on the next render.
        state.acknowledged.delete(pending.request_id);
        console.warn('KnowledgeLens: could not acknowledge the question:', err);
      });
  }
}

async function sendAnswer() {
  const pending = state.view?.pending_input;
  if (!pending || state.sendingAnswerFor) return;
  const answer = el['input-answer'].value.trim();
  if (!answer) {
    showRequestError({ kind: 'bad_request', message: 'Type an answer first.' });
    el['input-answer'].focus();
    return;
  }
  state.sendingAnswerFor = pending.request_id;
  state.requestError = null;
  render();
  try {
    await connection.request(REQUESTS.ANSWER_INPUT, {
      session: state.session,
      request_id: pending.request_id,
      answer,
    });
    el['input-answer'].value = '';
    if (state.view?.pending_input?.request_id === pending.request_id) {
      state.shown = { ...state.shown, view: { ...state.view, pending_input: null } };
    }
  } catch (err) {
    showRequestError(err);
    if (err?.kind === 'not_found') void refresh();
  } finally {
    state.sendingAnswerFor = null;
    render();
  }
}

/** The setup card looked for local models (once per popup: reopening it looks again). */
let lookedForModels = false;

/** No model is set up and nothing was asked yet: the setup card replaces the question form.
 * The first time it shows, the models already running on this computer are looked for. */
function renderSetup(view) {
  const setup = Boolean(view.setup_needed) && view.status === 'idle' && !view.question;
  if (setup && !lookedForModels) {
    lookedForModels = true;
    void localModels.find();
  }
  el.setup.hidden = !setup;
  el['ask-form'].hidden = setup;
  el['answer-section'].hidden = setup;
  el.export.hidden = setup;
  el.tokens.hidden = setup;
  return setup;
}

/** "Use <model> (<server>)": saves that server and model as the provider, tests it, and
 * leaves the setup card for the question form when the model answers. */
async function useLocalModel({ provider, base_url: baseUrl, model, server }) {
  const label = `${model} (${server})`;
  const buttons = [...el['setup-found'].querySelectorAll('button')];
  for (const button of buttons) button.disabled = true;
  el['setup-note'].textContent = `Connecting to ${label}…`;
  try {
    const { configured: _configured, notice: _notice, ...current } = await connection.request(REQUESTS.GET_SETTINGS);
    const settings = settingsUsing(current, { provider, base_url: baseUrl, model });
    await connection.request(REQUESTS.SAVE_SETTINGS, { settings });
    const result = await connection.request(REQUESTS.TEST_CONNECTION, { settings });
    if (result.ok) {
      el['setup-note'].textContent = `Connected to ${label}. Ask your question.`;
      await refresh();
      el.question.focus();
    } else {
      // A failed test carries its diagnosis (`ok` is a plain boolean in the generated types).
      const summary = 'diagnosis' in result ? result.diagnosis.summary : 'The connection failed.';
      el['setup-note'].textContent = `${summary} Options → Test connection shows what to do.`;
    }
  } catch (err) {
    el['setup-note'].textContent = `Could not use ${label}: ${err.message}`;
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

async function continueSetup() {
  const provider = encodeURIComponent(el['setup-provider'].value);
  try {
    await chrome.tabs.create({ url: chrome.runtime.getURL(`options.html?provider=${provider}`) });
    window.close();
  } catch (err) {
    showRequestError(err);
  }
}

// ---------------------------------------------------------------------------------------------
// Copy, conversations and History, the side panel.

async function copyAnswer() {
  const view = state.archived ?? state.view;
  try {
    await navigator.clipboard.writeText(view?.answer ?? '');
    el['copy-done'].textContent = 'Copied.';
    setTimeout(() => {
      el['copy-done'].textContent = '';
    }, 2500);
  } catch (err) {
    showRequestError({ kind: 'internal', message: `Could not copy the answer: ${err?.message ?? err}` });
  }
}

async function newConversation() {
  el['new-conversation'].disabled = true;
  state.requestError = null;
  try {
    adopt(await connection.request(REQUESTS.NEW_CONVERSATION, { session: state.session }));
    state.archived = null;
    if (isOpen(el['archive-toggle'])) await loadHistory();
  } catch (err) {
    showRequestError(err);
  } finally {
    el['new-conversation'].disabled = false;
    render();
  }
}

const isOpen = (button) => button.getAttribute('aria-expanded') === 'true';

async function loadHistory() {
  const data = await connection.request(REQUESTS.HISTORY, {});
  renderConversations(el['archive-list'], el['archive-empty'], data?.conversations ?? [], (id) => void openConversation(id));
}

async function toggleHistory() {
  const open = !isOpen(el['archive-toggle']);
  el['archive-toggle'].setAttribute('aria-expanded', String(open));
  el.archive.hidden = !open;
  if (!open) return;
  try {
    await loadHistory();
  } catch (err) {
    showRequestError(err);
  }
}

async function openConversation(id) {
  try {
    const view = await connection.request(REQUESTS.OPEN_CONVERSATION, { conversation: id });
    state.archived = { ...normalizeView(view, view?.session ?? state.session), archived: true };
    state.requestError = null;
    render();
    el['readonly-back'].focus();
  } catch (err) {
    showRequestError(err);
    if (err?.kind === 'not_found') void loadHistory().catch(() => {});
  }
}

function closeArchived() {
  state.archived = null;
  render();
  el.question.focus();
}

async function clearHistory() {
  try {
    await connection.request(REQUESTS.CLEAR_HISTORY, {});
    state.archived = null;
    await loadHistory();
  } catch (err) {
    showRequestError(err);
  }
  render();
}

function renderConversationControls(view, readOnly) {
  el['new-conversation'].hidden = readOnly;
  el['new-conversation'].disabled = view.status === 'running' || state.askPending;
  el['archive-toggle'].hidden = false;
  el.readonly.hidden = !readOnly;
  el['ask-form'].hidden = readOnly;
  el.export.hidden = readOnly;
}

/** The side panel checks that it may read its tab, and offers to ask for the site if not. */
async function checkAccess() {
  if (state.mode !== 'sidepanel' || state.tabId === null) return;
  const access = await pageAccess(state.tabId, state.view?.page?.url);
  state.access = access.needsAccess ? { origin: access.origin } : null;
  render();
}

function renderAccess() {
  const access = state.mode === 'sidepanel' ? state.access : null;
  el.access.hidden = !access;
  if (!access) return;
  el['allow-site'].hidden = !access.origin;
  el['access-text'].textContent = access.origin
    ? `KnowledgeLens cannot read this page: it has no access to ${access.origin.replace('/*', '')}.`
    : 'KnowledgeLens cannot read this page. Click its toolbar icon on the page once to let it read it.';
}

async function allowSite() {
  const origin = state.access?.origin;
  if (!origin) return;
  try {
    if (await requestOrigin(origin)) await checkAccess();
  } catch (err) {
    showRequestError(err);
  }
}

function renderPanelButton() {
  el['open-panel'].hidden = state.mode !== 'popup' || state.tabId === null;
}

function render() {
  const live = state.view ?? emptyView(state.session, stepsInput());
  const readOnly = Boolean(state.archived);
  const view = state.archived ?? live;
  renderPanelButton();
  renderAccess();
  if (!readOnly && renderSetup(view)) {
    el.status.textContent = 'Set up a model to start.';
    el.status.dataset.state = 'idle';
    renderPage(view);
    renderError(view);
    renderNotices(view);
    renderExplain(view, true);
    addPages.render(null);
    return;
  }
  if (readOnly) renderSetup({ ...view, setup_needed: false });
  renderConversationControls(live, readOnly);
  addPages.render(readOnly ? null : live);
  renderExplain(live, readOnly);
  const running = view.status === 'running' || state.askPending;
  el.ask.disabled = running;
  el.stop.disabled = view.status !== 'running' || state.stopping;
  research.render(running);
  el.status.textContent = statusText(view);
  el.status.dataset.state = state.askPending ? 'running' : view.status;
  renderPage(view);
  renderTokens(view);
  renderCost(view);
  renderError(view);
  renderNotices(view);
  renderTurns(view);
  renderSteps(view);
  renderAnswer(view);
  renderInputRequest(readOnly ? { ...view, status: 'archived' } : view);
}

// ---------------------------------------------------------------------------------------------
// Wiring.

const connection = new Connection({
  onEvent,
  onConnect: () => {
    state.connected = true;
    document.documentElement.dataset.connection = 'connected';
    void refresh();
    loadActions().catch((err) => console.warn('KnowledgeLens: could not read the actions:', err));
  },
  onDisconnect: () => {
    state.connected = false;
    if (state.shown) state.shown = disconnected(state.shown);
    document.documentElement.dataset.connection = 'reconnecting';
    render();
  },
});

function openOptions() {
  chrome.runtime.openOptionsPage().catch((err) => showRequestError(err));
}

el['ask-form'].addEventListener('submit', (event) => {
  event.preventDefault();
  void ask();
});
el.question.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    el['ask-form'].requestSubmit();
  }
});
el.question.addEventListener('input', () => {
  if (state.requestError?.kind === 'bad_request' && el.question.value.trim()) {
    state.requestError = null;
    render();
  }
});
el['explain-form'].addEventListener('submit', (event) => {
  event.preventDefault();
  void explain();
});
el.selection.addEventListener('input', () => render());
el.stop.addEventListener('click', () => void stop());
el['input-form'].addEventListener('submit', (event) => {
  event.preventDefault();
  void sendAnswer();
});
el.export.addEventListener('click', () => void exportTrajectory());
el['open-options'].addEventListener('click', openOptions);
el['error-options'].addEventListener('click', openOptions);
el['setup-continue'].addEventListener('click', () => void continueSetup());
el['steps-toggle'].addEventListener('click', toggleSteps);
el['copy-answer'].addEventListener('click', () => void copyAnswer());
el['new-conversation'].addEventListener('click', () => void newConversation());
el['archive-toggle'].addEventListener('click', () => void toggleHistory());
el['clear-history'].addEventListener('click', () => void clearHistory());
el['readonly-back'].addEventListener('click', closeArchived);
el['allow-site'].addEventListener('click', () => void allowSite());
el['open-panel'].addEventListener('click', () => {
  // Called straight from the click: Chrome opens a side panel only inside a user gesture.
  openSidePanel(state.tabId)
    .then(async (where) => {
      document.documentElement.dataset.panel = where;
      // The toolbar popup closes itself; the same page opened as a tab stays.
      if (where === 'side_panel' && !(await chrome.tabs.getCurrent())) window.close();
    })
    .catch((err) => showRequestError(err));
});

async function main() {
  el['max-steps'].max = String(MAX_STEPS_LIMIT);
  el['max-steps'].value = String(MAX_STEPS_DEFAULT);
  const target = await resolveTarget();
  state.session = target.session;
  state.tabId = target.tabId;
  document.documentElement.dataset.session = state.session;
  render();
  connection.start();
  el.question.focus();
  readSelection().catch((err) => console.warn('KnowledgeLens: could not read the selection:', err));
  if (state.mode === 'sidepanel' && state.tabId !== null) {
    void checkAccess();
    // The tab navigated (no "tabs" permission needed for the event itself): check again.
    chrome.tabs.onUpdated.addListener((tabId, change) => {
      if (tabId === state.tabId && change.status === 'complete') void checkAccess();
    });
  }
}

main().catch((err) => showRequestError(err));
