// @ts-check
// The in-page panel's document (panel.html): the explanation of a selection, shown on the
// page it was made on, in a frame of the extension's origin that content/panel.js puts in a
// closed shadow root of the page. The page's scripts can neither read this document nor
// select in it (another origin, another process).
//
// - It shows one run: the one whose `explain` opened it (`?tab=<id>&run=<n>`). Its Port
//   (PANEL_PORT_NAME) carries `snapshot` and `stop` of that run, and the worker sends it
//   that run's events and nothing else of the tab's session. The action buttons
//   (Summarize, Translate, …) send `run_action`: the worker applies it to the run's
//   selection (which stays in the worker) and replies with the new run, which the panel
//   then shows instead (the worker moves the Port's events to it too, and notes the run for
//   the panel's Port after a restart of the worker, background.js). A snapshot is asked on every
//   (re)connect (the port drops when the worker stops, and the reconnect wakes it), and
//   events apply in (rev, seq) order on top of it, as in the popup's view-state.js.
// - Model output is untrusted: only textContent, never innerHTML.
// - To the content script in the page's top frame (chrome.tabs.sendMessage, which the page
//   cannot hear), with the key from this frame's address: that it is ready (for focus), the
//   panel's height, and Close.
// - "Ask a follow-up" opens the side panel from this click (Chrome asks for the gesture).

import { BUILTIN_BUTTONS, browserLanguage, mountActionButtons } from './ui/actions.js';
import { openSidePanel } from './ui/panel.js';
import { PANEL_PORT_NAME, TERMINAL_STATUSES } from './protocol.gen.js';

/** @typedef {import('./protocol.gen.js').PanelView} PanelView */
/** @typedef {import('./protocol.gen.js').PanelReplies} PanelReplies */
/** @typedef {import('./protocol.gen.js').RunEvent} RunEvent */

const TERMINAL = new Set(TERMINAL_STATUSES);
const params = new URLSearchParams(location.search);
const tabId = Number(params.get('tab'));
/** The run that opened the panel (the content script knows the panel by it). */
const openedRun = Number(params.get('run'));
/** The run the panel shows: the opening one, then each one its action buttons start. */
let run = openedRun;
const key = params.get('key') ?? '';
const session = `tab:${tabId}`;

const order = (item) => ({ rev: Number(item?.rev) || 0, seq: Number(item?.seq) || 0 });
const newer = (a, b) => { const x = order(a); const y = order(b); return x.rev - y.rev || x.seq - y.seq; };

/**
 * The part of view-state.js's reducer the panel needs: status, answer, draft, error.
 * @param {PanelView} view
 * @param {RunEvent} event
 * @returns {PanelView}
 */
const applyEvent = (view, event) => {
  const next = { ...view, ...order(event) };
  switch (event.type) {
    case 'run_started': Object.assign(next, { status: 'running', answer: '', draft: '', error: null }); break;
    case 'answer_delta': next.draft = (next.draft || '') + (event.text ?? ''); break;
    case 'answer_reset': next.draft = ''; break;
    case 'completed': case 'stopped': next.answer = event.answer ?? ''; break;
    case 'failed': case 'timed_out': Object.assign(next, { error: event.error ?? null, answer: event.answer ?? '' }); break;
    default: break;
  }
  if (TERMINAL.has(event.type)) Object.assign(next, { status: event.type, draft: '' });
  return next;
};

const region = /** @type {HTMLElement} */ (document.querySelector('.answer-region'));
const status = document.querySelector('.status');
const answer = document.querySelector('.answer');
/** @returns {HTMLButtonElement} */
const button = (action) => document.querySelector(`button[data-action="${action}"]`);
const [stopButton, copyButton, followButton, closeButton] = ['stop', 'copy', 'follow-up', 'close'].map(button);

/** @type {{view: PanelView | null, buffer: RunEvent[], port: chrome.runtime.Port | null, nextId: number, pending: Map<number, {resolve: Function, reject: Function}>, retryMs: number, note: string, over: boolean, starting: boolean, early: any[]}} */
const state = { view: null, buffer: [], port: null, nextId: 1, pending: new Map(), retryMs: 200, note: '', over: false, starting: false, early: [] };
const actionsBox = /** @type {HTMLElement} */ (document.querySelector('[data-role="selection-actions"]'));
let disableActions = mountActionButtons(actionsBox, BUILTIN_BUTTONS, (id) => void runAction(id));
let shownActions = JSON.stringify(BUILTIN_BUTTONS);
/** The buttons of the actions a snapshot says the panel shows (Options, section Actions). */
function showActions(actions) {
  if (!Array.isArray(actions) || JSON.stringify(actions) === shownActions) return;
  shownActions = JSON.stringify(actions);
  disableActions = mountActionButtons(actionsBox, actions, (id) => void runAction(id));
}

/** Tells the content script in the page's top frame (`action`: size or close). */
function toPage(action, extra = {}) {
  chrome.tabs.sendMessage(tabId, { type: 'knowledgelens-panel', run: openedRun, key, action, ...extra }, { frameId: 0 }).catch(() => {});
}

const shownText = () => {
  const v = state.view;
  if (!v) return '';
  return v.status === 'running' ? v.draft || v.answer || '' : v.answer || '';
};

const statusText = () => {
  if (state.note) return state.note;
  const v = state.view;
  if (!state.port && !state.over) return 'Reconnecting…';
  if (!v) return 'Loading…';
  switch (v.status) {
    case 'running': return shownText() ? 'Explaining…' : 'Thinking…';
    case 'completed': return 'Done.';
    case 'stopped': return 'Stopped.';
    case 'failed': return `The run failed: ${v.error?.message ?? 'unknown error'}`;
    case 'timed_out': return 'Ended: a question to you went unanswered.';
    default: return '';
  }
};

let rendered = null;
function render() {
  const text = shownText();
  if (text !== rendered) {
    rendered = text;
    const paragraphs = text.split(/\n{2,}/).filter((p) => p.trim());
    answer.replaceChildren(...paragraphs.map((p) => {
      const node = document.createElement('p');
      node.textContent = p;
      return node;
    }));
  }
  const running = state.view?.status === 'running' && !state.over;
  region.setAttribute('aria-busy', String(running));
  stopButton.hidden = !running;
  disableActions(running || state.starting || !state.view);
  copyButton.disabled = !text;
  status.textContent = statusText();
}

/** @param {PanelView} snapshot */
function adopt(snapshot) {
  if (!snapshot || (state.view && newer(snapshot, state.view) < 0)) return;
  showActions(snapshot.actions);
  let view = snapshot;
  for (const event of state.buffer) if (newer(event, view) > 0) view = applyEvent(view, event);
  state.buffer = state.buffer.filter((event) => newer(event, view) > 0);
  state.view = view;
  render();
}

/**
 * @template {keyof PanelReplies} T
 * @param {T} type
 * @returns {Promise<PanelReplies[T]>}
 */
function request(type, fields = {}) {
  return new Promise((resolve, reject) => {
    const port = state.port;
    if (!port) { reject(new Error('The KnowledgeLens worker is restarting; try again.')); return; }
    const id = state.nextId++;
    state.pending.set(id, { resolve, reject });
    try { port.postMessage({ id, type, session, run, ...fields }); } catch (err) { state.pending.delete(id); reject(err); }
  });
}

/** An action button: the worker starts it on this run's selection; the panel follows the
 * new run (by the id in the reply), one run at a time. */
async function runAction(action) {
  if (state.starting) return;
  state.starting = true;
  state.early = [];
  state.note = '';
  render();
  try {
    const view = /** @type {PanelView} */ (await request('run_action', { action, language: browserLanguage() }));
    run = view.run;
    state.view = null;
    state.buffer = state.early.filter((m) => m.run === run).map((m) => m.event);
    adopt(view);
  } catch (err) {
    state.note = err.message;
  } finally {
    state.starting = false;
    render();
  }
}

const refresh = () => request('snapshot').then(adopt, (err) => {
  if (err.kind === 'not_found') {
    // The tab went on to another run: this one's panel keeps what it showed.
    state.over = true;
    state.note = err.message;
    render();
  } else {
    console.warn('KnowledgeLens panel:', err.message);
  }
});

/** @param {import('./protocol.gen.js').EventEnvelope} message */
function onEvent(message) {
  if (message.session !== session || !message.event) return;
  if (message.run !== run) {
    // The run an action button is starting: kept until its reply names it.
    if (state.starting && message.run > run) state.early = [...state.early, message].slice(-256);
    return;
  }
  const event = message.event;
  state.buffer = [...state.buffer, event].slice(-256);
  if (state.view && newer(event, state.view) > 0) {
    state.view = applyEvent(state.view, event);
    render();
  }
  // The terminal event is sent after the final save: read the authoritative view.
  if (event.type === 'run_started' || TERMINAL.has(event.type)) void refresh();
}

function connect() {
  let port;
  try {
    port = chrome.runtime.connect({ name: PANEL_PORT_NAME });
  } catch {
    state.note = 'KnowledgeLens was updated or removed; close this panel.';
    render();
    return;
  }
  state.port = port;
  port.onMessage.addListener((message) => {
    if (message?.type === 'event') { onEvent(message); return; }
    const pending = state.pending.get(message?.id);
    if (!pending) return;
    state.pending.delete(message.id);
    if (message.ok) pending.resolve(message.data);
    else pending.reject(Object.assign(new Error(message.error?.message ?? 'The request failed.'), { kind: message.error?.kind }));
  });
  port.onDisconnect.addListener(() => {
    void chrome.runtime.lastError;
    if (state.port !== port) return;
    state.port = null;
    state.buffer = []; // the old worker's events are history
    for (const p of state.pending.values()) p.reject(new Error('disconnected'));
    state.pending.clear();
    render();
    if (state.over) return;
    const delay = state.retryMs;
    state.retryMs = Math.min(state.retryMs * 2, 3000);
    setTimeout(connect, delay);
  });
  state.retryMs = 200;
  render();
  void refresh();
}

stopButton.addEventListener('click', () => {
  request('stop').catch((err) => { state.note = err.message; render(); });
});
copyButton.addEventListener('click', () => {
  navigator.clipboard.writeText(shownText()).then(
    () => { state.note = 'Copied.'; render(); setTimeout(() => { state.note = ''; render(); }, 2000); },
    () => { state.note = 'Could not copy: select the text and copy it yourself.'; render(); },
  );
});
followButton.addEventListener('click', () => {
  openSidePanel(tabId).catch((err) => { state.note = `Could not open the side panel: ${err.message}`; render(); });
});
closeButton.addEventListener('click', () => toPage('close'));
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape') {
    event.stopPropagation();
    toPage('close');
  }
});
// Focus that comes to the frame (the content script focuses it when the panel opens) goes
// to the region, so a screen reader starts there.
addEventListener('focus', () => {
  if (!document.activeElement || document.activeElement === document.body) region.focus({ preventScroll: true });
});

const panel = document.querySelector('.panel');
new ResizeObserver(() => toPage('size', { height: Math.ceil(panel.getBoundingClientRect().height) })).observe(panel);

toPage('ready');
if (Number.isInteger(tabId) && tabId >= 0 && Number.isInteger(run) && run >= 0) connect();
else { state.note = 'This panel was opened without its tab or run.'; state.over = true; render(); }
