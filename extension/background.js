// @ts-check
// KnowledgeLens service worker: a thin bridge between extension pages and the wasm backend.
//
// All state and logic live in Rust (./wasm/knowledgelens.js). This file only:
// - starts the wasm module once, at top level, and keeps the promise (no top-level await and
//   no dynamic import: a module service worker allows neither);
// - registers every listener synchronously at top level, so events that wake a stopped worker
//   are delivered; each listener awaits the same `ready` promise;
// - relays Port requests to `backend.handle` and posts the envelope back to the asking port;
// - broadcasts what the backend emits to every connected port;
// - tells the backend which pages connect and disconnect, and which notification was clicked
//   (the backend decides what that means: a popup open, a question to notify, a popup to open);
// - for "explain selection" (context menu, keyboard command): captures the selection, sends
//   `explain` and injects the in-page panel (content/panel.js, which frames panel.html). The
//   panel's port (PANEL_PORT_NAME) is accepted only from our panel document in a frame of a
//   tab (senders.js), its requests go to `backend.handle_panel`, and it gets the events of
//   the run it shows, nothing else.
// - after a crash (a Rust panic aborts the wasm instance), answers the requests in flight,
//   resets the instance and starts a fresh backend (see "A crash" below).
// It keeps no run state: the worker can be stopped at any moment (see the Rust state module).

import { captureSelection, pdfSelection } from './capture.js';
import { isOwnExtensionPage, panelRun } from './senders.js';
import { MAX_STEPS_DEFAULT, PANEL_PORT_NAME, PDF_PORT_NAME, PORT_NAME, REQUESTS } from './protocol.gen.js';
import { BUILTIN, actionsFor, browserLanguage } from './ui/actions.js';
import init, { Backend, __wbg_reset_state } from './wasm/knowledgelens.js';

performance.mark('kl:script');

/** @type {Set<chrome.runtime.Port>} */
const ports = new Set();

/** Posts to one port; a port that closed in the meantime is dropped, never thrown from. */
function post(port, message) {
  try {
    port.postMessage(message);
  } catch {
    ports.delete(port);
  }
}

/** Connected in-page panels: each port with the tab and the run it shows (`following`: a
 * `run_action` it sent is starting a later run of its tab, which it will show). */
/** @type {Map<chrome.runtime.Port, {tabId: number, run: number, following?: boolean}>} */
const panels = new Map();

/**
 * Called by Rust with plain JSON-compatible objects: broadcast to every connected page, and
 * a run's events of a `tab:<N>` session to the panels of tab N that show that run.
 */
function emit(message) {
  for (const port of ports) post(port, message);
  for (const [port, shown] of panels) {
    const later = shown.following && message?.run > shown.run;
    if (message?.session === `tab:${shown.tabId}` && (message.run === shown.run || later)) {
      try {
        port.postMessage(message);
      } catch {
        panels.delete(port);
      }
    }
  }
}

/**
 * Fetches and compiles the wasm module, then instantiates it, as the glue's `init()` would in
 * one step. Apart, they can be marked: `performance.mark`s (a name and a time, nothing else)
 * split the cold start for the benchmark (pkg-scripts/bench-persist.mjs): `kl:script` (this
 * file runs), `kl:wasm-compiled`, `kl:wasm-instantiated`, then `kl:backend-built` in
 * Backend.start before it resumes the runs.
 */
async function startWasm() {
  const module = await WebAssembly.compileStreaming(fetch(new URL('./wasm/knowledgelens_bg.wasm', import.meta.url)));
  performance.mark('kl:wasm-compiled');
  await init({ module_or_path: module });
  performance.mark('kl:wasm-instantiated');
}

/** Resolves to the started Backend; every listener awaits it (a new one after a crash). */
let ready = startWasm().then(() => Backend.start(emit));
ready.catch((err) => console.error('KnowledgeLens: the backend failed to start:', err));

// ---- A crash: a Rust panic aborts the wasm instance (its hook has logged the message). ----
// The trap (a WebAssembly.RuntimeError) reaches the `error` and `unhandledrejection`
// listeners (a trap in a spawned future surfaces only there). Requests in flight are answered
// with an error (the dead instance never settles them), the instance is reset (the glue is
// built with wasm-bindgen's --experimental-reset-state-function) and a fresh backend starts,
// resuming the runs that were going on (one that keeps crashing it is failed: see
// src/state/mod.rs, MAX_DRIVE_ATTEMPTS). After MAX_RESTARTS resets this worker stops serving:
// requests are answered "restarting", the keep-alive alarm goes, Chrome stops the idle worker
// and the next event starts a clean one.
const MAX_RESTARTS = 5;
const CRASHED = 'KnowledgeLens crashed while handling this and has restarted: try again.';
let restarts = 0;
let recovering = false;
/** @returns {{promise: Promise<void>, fire: () => void}} */
const crashSignal = () => { let fire; const promise = new Promise((resolve) => { fire = resolve; }); return { promise, fire }; };
let crash = crashSignal();

/** `promise`, or a rejection when the backend crashes first. */
function unlessCrashed(promise) {
  return Promise.race([promise, crash.promise.then(() => { throw new Error(CRASHED); })]);
}

function crashed(trap) {
  if (recovering) return;
  recovering = true;
  console.error('KnowledgeLens: the backend crashed; restarting it:', trap);
  const fired = crash;
  crash = crashSignal();
  fired.fire();
  setTimeout(restart, 0); // once the trap has unwound
}

function restart() {
  recovering = false;
  // The keep-alive alarm is the extension's only alarm: a fresh backend sets it again.
  const cleared = chrome.alarms.clearAll().catch(() => {});
  if (restarts >= MAX_RESTARTS) {
    console.error(`KnowledgeLens: crashed ${restarts + 1} times; serving nothing until Chrome restarts this worker.`);
    ready = Promise.reject(new Error('KnowledgeLens crashed repeatedly and is restarting: try again in a minute.'));
    ready.catch(() => {});
    return;
  }
  restarts += 1;
  __wbg_reset_state();
  ready = cleared.then(() => Backend.start(emit));
  ready.catch((err) => console.error('KnowledgeLens: the backend failed to restart:', err));
}

self.addEventListener('error', (event) => {
  if (event.error instanceof WebAssembly.RuntimeError) crashed(event.error);
});
self.addEventListener('unhandledrejection', (event) => {
  if (event.reason instanceof WebAssembly.RuntimeError) crashed(event.reason);
});

function errorMessage(err) {
  if (err instanceof Error) return err.message || err.name;
  if (err && typeof err === 'object' && typeof err.message === 'string') return err.message;
  return String(err);
}

async function handleRequest(port, request) {
  const id = request && typeof request === 'object' ? request.id ?? null : null;
  let envelope;
  try {
    const backend = await ready;
    envelope = await unlessCrashed(backend.handle(request, port.sender));
  } catch (err) {
    console.error('KnowledgeLens: request failed:', request?.type, err);
    envelope = { id, ok: false, error: { kind: 'internal', message: errorMessage(err) } };
  }
  if (ports.has(port)) post(port, envelope);
}

/** Where the runs the in-page panels of tab N followed are kept (chrome.storage.session,
 * which content scripts cannot read or write, and which outlives this worker):
 * `{<opening run>: <run followed>}`, deleted with the tab. */
const followedKey = (tabId) => `panel-runs:${tabId}`;

/** The run the panel opened on `run` in tab `tabId` follows now (its own action's), or `run`. */
async function followedRun(tabId, run) {
  try {
    const key = followedKey(tabId);
    const followed = Number((await chrome.storage.session.get(key))[key]?.[run]);
    return Number.isInteger(followed) && followed > run ? followed : run;
  } catch (err) {
    console.warn('KnowledgeLens: the run this panel followed is unknown:', err);
    return run;
  }
}

/** Notes that the panel opened on `opened` in tab `tabId` follows `run` now. */
async function noteFollowed(tabId, opened, run) {
  try {
    const key = followedKey(tabId);
    const saved = (await chrome.storage.session.get(key))[key];
    const record = saved && typeof saved === 'object' ? saved : {};
    await chrome.storage.session.set({ [key]: { ...record, [opened]: run } });
  } catch (err) {
    console.warn('KnowledgeLens: could not note the run this panel follows:', err);
  }
}

/** An in-page panel's port: only from our panel document in a frame of a tab (the backend
 * checks again); its requests go to `handle_panel`. The panel's address names the run that
 * opened it; Chrome gives a Port the address the frame was loaded with (history.replaceState
 * does not change it), so the run its action buttons started since is noted in
 * chrome.storage.session, and a restarted worker's Port shows that one. */
function acceptPanel(port) {
  /** @type {{tabId: number, run: number, following?: boolean} | null} */
  const shown = panelRun(port.sender, chrome.runtime);
  if (!shown) {
    port.disconnect();
    return;
  }
  const opened = shown.run;
  // Requests wait until the run the panel follows is known (they stay in order).
  const known = followedRun(shown.tabId, opened).then((run) => { shown.run = Math.max(shown.run, run); });
  panels.set(port, shown);
  port.onDisconnect.addListener(() => {
    void chrome.runtime.lastError;
    panels.delete(port);
  });
  port.onMessage.addListener((request) => {
    const id = request && typeof request === 'object' ? request.id ?? null : null;
    const action = request?.type === REQUESTS.RUN_ACTION;
    if (action) shown.following = true;
    known
      .then(() => {
        // The run is the one the panel's address names (or its action started), whatever
        // the request says.
        const asked = request && typeof request === 'object' ? { ...request, run: shown.run } : request;
        return ready.then((backend) => unlessCrashed(backend.handle_panel(asked, port.sender)));
      })
      .catch((err) => ({ id, ok: false, error: { kind: 'internal', message: errorMessage(err) } }))
      .then(async (envelope) => {
        // The panel now shows the run its action started (the reply names it), noted before
        // the panel hears of it.
        if (action) {
          shown.following = false;
          if (envelope?.ok && Number.isInteger(envelope.data?.run)) {
            shown.run = envelope.data.run;
            await noteFollowed(shown.tabId, opened, shown.run);
          }
        }
        post(port, envelope);
      });
  });
}

chrome.runtime.onConnect.addListener((port) => {
  if (port.name === PANEL_PORT_NAME) {
    acceptPanel(port);
    return;
  }
  // A PDF tab's download, for the offscreen document (offscreen.js), or the offscreen
  // document's own port, which tells it when this worker stops: left open, not the worker's.
  if (port.name === PDF_PORT_NAME) return;
  // Only this extension's pages may hear every session's events (never a content script).
  if (port.name !== PORT_NAME || !isOwnExtensionPage(port.sender, chrome.runtime)) {
    port.disconnect();
    return;
  }
  ports.add(port);
  const sender = port.sender;
  const connected = ready.then((backend) => backend.page_connected(sender));
  connected.catch((err) => console.error('KnowledgeLens: could not note a connected page:', err));
  port.onDisconnect.addListener(() => {
    ports.delete(port);
    connected
      .then(() => ready)
      .then((backend) => backend.page_disconnected(sender))
      .catch((err) => console.error('KnowledgeLens: could not note a closed page:', err));
  });
  port.onMessage.addListener((request) => {
    handleRequest(port, request).catch((err) => console.error('KnowledgeLens:', err));
  });
});

/** Wakes the backend; Backend.start does its own startup work (e.g. resuming runs). */
async function wake() {
  try {
    await ready;
  } catch {
    // Already logged where `ready` is created.
  }
}

chrome.runtime.onInstalled.addListener(wake);
chrome.runtime.onStartup.addListener(wake);
// Alarms exist to wake a stopped worker during a long run; the wake itself is the work.
chrome.alarms.onAlarm.addListener(wake);

// A closed tab's run, if any, is stopped, and its session deleted once the run has stopped.
// No "tabs" permission is needed for this event.
chrome.tabs.onRemoved.addListener((tabId) => {
  chrome.storage.session.remove(followedKey(tabId)).catch(() => {});
  ready
    .then((backend) => backend.tab_closed(tabId))
    .catch((err) => console.error('KnowledgeLens: could not clean up a closed tab:', err));
});

/**
 * A notification was clicked: a question's opens the popup on its session (the backend
 * decides). Exposed on the global scope so tests can call it from the worker.
 * @param {string} notificationId
 * @returns {Promise<string>} "popup", "window" or "ignored"
 */
async function notificationClicked(notificationId) {
  const backend = await ready;
  return backend.notification_clicked(notificationId);
}

chrome.notifications.onClicked.addListener((notificationId) => {
  notificationClicked(notificationId).catch((err) =>
    console.error('KnowledgeLens: could not open the popup for a notification:', err));
});

// ---------------------------------------------------------------------------------------------
// Explain selection: the context menu, the keyboard command, and the function both call.

/** The context menu: a submenu "KnowledgeLens" with one entry per action (Explain first). */
const MENU_ID = 'knowledgelens';
/** An action's menu entry id: this prefix and the action's id. */
const MENU_ACTION = 'knowledgelens-action:';
const COMMAND = 'explain-selection';
/** The worker's own sender, for requests it makes itself (the backend checks senders). */
const SELF = { id: chrome.runtime.id, url: chrome.runtime.getURL('background.js') };
let nextRequestId = 1;

/** A notification for an explain that could not start (never a silent failure). */
function notify(title, message) {
  chrome.notifications
    .create(`knowledgelens-explain-${Date.now()}`, {
      type: 'basic',
      iconUrl: chrome.runtime.getURL('icons/icon-128.png'),
      title,
      message,
    })
    .catch((err) => console.error('KnowledgeLens: could not show a notification:', err));
}

/** Injects the in-page panel for run `run` into the top frame of `tabId` (it reuses an
 * existing panel). */
async function injectPanel(tabId, run) {
  const target = { tabId, frameIds: [0] };
  await chrome.scripting.executeScript({
    target,
    func: (init) => { globalThis.__klPanelInit = init; },
    args: [{ tabId, run }],
  });
  await chrome.scripting.executeScript({ target, files: ['content/panel.js'] });
}

/** Shows the explanation of a PDF selection: the viewer takes no in-page panel, so the popup
 * page opens in a window on the tab's session. */
async function showPdfExplanation(tabId) {
  await chrome.windows.create({ url: chrome.runtime.getURL(`popup.html?tab=${tabId}`), type: 'popup', width: 440, height: 640 });
}

/**
 * Explains the selection of tab `tabId`: captures it (all frames), sends `explain` for the
 * tab's session and shows the in-page panel. In a PDF, whose viewer cannot be scripted, the
 * selection is `selectionText` (the context menu's) and the explanation opens in a window.
 * Failures are notified and returned.
 * @param {number} tabId
 * @param {'menu'|'command'|'popup'} source
 * @param {string} [selectionText] the context menu's selection
 * @returns {Promise<{ok: boolean, error?: {kind: string, message: string}}>}
 */
async function explainFromTab(tabId, source, selectionText = '') {
  const result = await actionFromTab(tabId, 'explain', source, selectionText);
  return result.ok ? { ok: true } : result;
}

/**
 * Applies selection action `action` (an id: `explain` is the explanation) to the selection
 * of tab `tabId`, as explainFromTab does: the same capture, the in-page panel, a window for
 * a PDF. What the context menu's entries and the keyboard commands call.
 * @param {number} tabId
 * @param {string} action
 * @param {'menu'|'command'|'popup'} source
 * @param {string} [selectionText] the context menu's selection
 * @returns {Promise<{ok: boolean, run?: number, error?: {kind: string, message: string}}>}
 */
async function actionFromTab(tabId, action, source, selectionText = '') {
  const fail = (error, title = 'KnowledgeLens could not explain this') => {
    notify(title, error.message);
    return { ok: false, error };
  };
  let captured = await captureSelection(tabId);
  if (captured.ok === false && captured.pdf && selectionText.trim()) {
    const tab = await chrome.tabs.get(tabId).catch(() => ({}));
    captured = { ok: true, pdf: true, selection: pdfSelection(selectionText, tab) };
  }
  if (captured.ok === false) {
    const title = captured.error.kind === 'not_scriptable' ? "KnowledgeLens can't read this page" : undefined;
    return fail(captured.error, title);
  }
  if (!captured.selection.text.trim()) {
    return fail({ kind: 'bad_request', message: 'Select some text to explain.' }, 'Nothing selected');
  }
  const backend = await ready;
  const request = {
    id: nextRequestId++,
    type: action === 'explain' ? REQUESTS.EXPLAIN : REQUESTS.RUN_ACTION,
    session: `tab:${tabId}`,
    tab_id: tabId,
    max_steps: MAX_STEPS_DEFAULT,
    selection: captured.selection,
    ...(action === 'explain' ? {} : { action, language: browserLanguage() }),
  };
  const envelope = await unlessCrashed(backend.handle(request, SELF));
  if (!envelope?.ok) return fail(envelope?.error ?? { kind: 'internal', message: 'The request failed.' });
  try {
    if (captured.pdf) await showPdfExplanation(tabId);
    else await injectPanel(tabId, envelope.data.run);
  } catch (err) {
    console.warn(`KnowledgeLens: could not show the panel (${source}):`, err);
  }
  return { ok: true, run: envelope.data.run };
}

function explainClicked(tab, source, selectionText = '', action = 'explain') {
  if (!tab || typeof tab.id !== 'number' || tab.id < 0) {
    notify("KnowledgeLens can't read this page", 'There is no tab to explain from.');
    return;
  }
  actionFromTab(tab.id, action, source, selectionText).catch((err) => {
    console.error('KnowledgeLens: explain failed:', err);
    notify('KnowledgeLens could not explain this', errorMessage(err));
  });
}

/**
 * The context menu on a selection: "KnowledgeLens", and in it one entry per action shown
 * in the menu, in order (the built-ins, then the user's).
 * @param {{id: string, name: string}[]} actions
 */
async function buildMenus(actions) {
  await chrome.contextMenus.removeAll();
  const created = (props) => new Promise((resolve) => {
    chrome.contextMenus.create(props, () => resolve(void chrome.runtime.lastError));
  });
  await created({ id: MENU_ID, title: 'KnowledgeLens', contexts: ['selection'] });
  for (const action of actions) {
    await created({ id: `${MENU_ACTION}${action.id}`, parentId: MENU_ID, title: action.name, contexts: ['selection'] });
  }
}

/** The rebuild of the menu under way (or the last one done): each waits for the one before. */
let menusBuilt = Promise.resolve();

/** The menu from the saved actions (the built-ins when they cannot be read), rebuilt after
 * any rebuild under way (two quick saves would otherwise interleave removeAll and create):
 * the last one asked reads the last saved list, and wins. */
function refreshMenus() {
  const next = menusBuilt.catch(() => {}).then(rebuildMenus);
  menusBuilt = next;
  return next;
}

async function rebuildMenus() {
  let actions = BUILTIN;
  try {
    const backend = await ready;
    const envelope = await unlessCrashed(backend.handle({ id: nextRequestId++, type: REQUESTS.GET_ACTIONS }, SELF));
    if (envelope?.ok) actions = actionsFor(envelope.data, 'menu');
  } catch (err) {
    console.warn('KnowledgeLens: the menu shows the built-in actions:', err);
  }
  await buildMenus(actions);
}

chrome.runtime.onInstalled.addListener(() => {
  refreshMenus().catch((err) => console.error('KnowledgeLens: could not build the menu:', err));
});
// Options saved the actions: the menu follows.
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'local' && 'actions' in changes) {
    refreshMenus().catch((err) => console.error('KnowledgeLens: could not rebuild the menu:', err));
  }
});
chrome.contextMenus.onClicked.addListener((info, tab) => {
  const id = String(info.menuItemId);
  if (id.startsWith(MENU_ACTION)) explainClicked(tab, 'menu', info.selectionText ?? '', id.slice(MENU_ACTION.length));
});
/**
 * The action a command slot (`action-1` … `action-3`) runs: the n-th action shown in the
 * menu after Explain (which has its own command), from the saved list.
 * @param {string} command
 * @returns {Promise<string | null>}
 */
async function commandAction(command) {
  const slot = /^action-([1-3])$/.exec(command);
  if (!slot) return null;
  const backend = await ready;
  const envelope = await unlessCrashed(backend.handle({ id: nextRequestId++, type: REQUESTS.GET_ACTIONS }, SELF));
  const shown = envelope?.ok ? actionsFor(envelope.data, 'menu') : BUILTIN;
  return shown.filter((a) => a.id !== 'explain')[Number(slot[1]) - 1]?.id ?? null;
}

chrome.commands.onCommand.addListener((command, tab) => {
  if (command === COMMAND) {
    explainClicked(tab, 'command');
    return;
  }
  commandAction(command).then((action) => {
    if (action) explainClicked(tab, 'command', '', action);
    else notify('KnowledgeLens has no action for this shortcut', 'Options, section Actions, lists the actions the shortcuts run.');
  }, (err) => console.error('KnowledgeLens: the shortcut failed:', err));
});
