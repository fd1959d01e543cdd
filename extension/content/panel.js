// KnowledgeLens in-page panel: the explanation of a selection, shown on the page it was made
// on. Injected only when the user asks (context menu, keyboard command) by the worker, into
// the top frame, after a one-line script that sets `globalThis.__klPanelInit = {tabId,
// portName}` in the extension's isolated world. Injecting it again reuses the panel.
//
// - The panel lives in a CLOSED shadow root of one host element: the page's CSS can neither
//   break nor read it, and the host's own styles are inline and !important.
// - Page text and model output are untrusted: only textContent and DOM nodes, never innerHTML.
//   The answer is shown as paragraphs of text (the Markdown renderer is an extension module,
//   which a content script could load only through web_accessible_resources).
// - Its channels: a port named `portName` to the worker, for `snapshot`, `stop` and
//   `follow_up` of session `tab:<tabId>` (the worker passes them to backend.handle_panel,
//   which checks the sender's tab); events of that session arrive by chrome.tabs.sendMessage.
//   A snapshot is asked on every (re)connect (the port drops when the worker stops, and the
//   reconnect wakes it), and events apply in (rev, seq) order on top of it, like the popup's
//   view-state.js: the panel never shows a stale or half answer.
{
  const TERMINAL = new Set(['completed', 'stopped', 'failed', 'timed_out']);
  const WIDTH = 380;
  const MARGIN = 8;

  const order = (item) => ({ rev: Number(item?.rev) || 0, seq: Number(item?.seq) || 0 });
  const newer = (a, b) => { const x = order(a); const y = order(b); return x.rev - y.rev || x.seq - y.seq; };

  /** The part of view-state.js's reducer the panel needs: status, answer, draft, error. */
  const applyEvent = (view, event) => {
    const next = { ...view, ...order(event) };
    switch (event.type) {
      case 'run_started':
        Object.assign(next, { status: 'running', question: event.question ?? '', answer: '', draft: '', error: null });
        break;
      case 'answer_delta': next.draft = (next.draft || '') + (event.text ?? ''); break;
      case 'answer_reset': next.draft = ''; break;
      case 'completed': case 'stopped': next.answer = event.answer ?? ''; break;
      case 'failed': case 'timed_out': Object.assign(next, { error: event.error ?? null, answer: event.answer ?? '' }); break;
      default: break;
    }
    if (TERMINAL.has(event.type)) Object.assign(next, { status: event.type, draft: '' });
    return next;
  };

  const CSS = `
    :host { all: initial; }
    .panel { box-sizing: border-box; width: ${WIDTH}px; max-width: calc(100vw - ${2 * MARGIN}px);
      max-height: min(60vh, 480px); display: flex; flex-direction: column; gap: 8px; padding: 12px;
      font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #ffffff;
      border: 1px solid #c8ccd1; border-radius: 10px; box-shadow: 0 8px 28px rgba(0, 0, 0, .22); }
    .head { display: flex; align-items: center; gap: 8px; }
    .title { margin: 0; font-size: 14px; font-weight: 600; flex: 1; }
    .status { margin: 0; font-size: 12px; color: #57606a; }
    .answer { overflow: auto; min-height: 2em; outline: none; }
    .answer p { margin: 0 0 .6em; white-space: pre-wrap; overflow-wrap: anywhere; }
    .answer-region { display: flex; flex-direction: column; gap: 6px; min-height: 0; }
    /* The region takes focus only so that focus moves into the panel; the panel shows where. */
    .answer-region:focus { outline: none; }
    .actions { display: flex; flex-wrap: wrap; gap: 6px; justify-content: flex-end; }
    button { font: inherit; font-size: 13px; padding: 4px 10px; border-radius: 6px; cursor: pointer;
      border: 1px solid #8c959f; background: #f6f8fa; color: #1f2328; }
    button:hover { background: #eaeef2; }
    button:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
    button[hidden] { display: none; }
    @media (prefers-color-scheme: dark) {
      .panel { color: #e6edf3; background: #161b22; border-color: #3d444d; box-shadow: 0 8px 28px rgba(0, 0, 0, .6); }
      .status { color: #9198a1; }
      button { background: #21262d; color: #e6edf3; border-color: #656c76; }
      button:hover { background: #30363d; }
      button:focus-visible { outline-color: #4493f8; }
    }`;

  const make = (root, tag, props = {}, text = '') => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) node.setAttribute(key, value);
    if (text) node.textContent = text;
    if (root) root.append(node);
    return node;
  };

  const createPanel = ({ tabId, portName }) => {
    const session = `tab:${tabId}`;
    const host = document.createElement('div');
    host.setAttribute('data-knowledgelens', 'panel');
    const shadow = host.attachShadow({ mode: 'closed' });
    make(shadow, 'style').textContent = CSS;
    const box = make(shadow, 'div', { class: 'panel' });
    const region = make(box, 'section', { role: 'region', 'aria-label': 'KnowledgeLens explanation', tabindex: '-1' });
    region.className = 'answer-region';
    const head = make(region, 'div', { class: 'head' });
    make(head, 'p', { class: 'title' }, 'KnowledgeLens');
    const status = make(region, 'p', { class: 'status', role: 'status' });
    const answer = make(region, 'div', { class: 'answer' });
    const actions = make(box, 'div', { class: 'actions' });
    const stopButton = make(actions, 'button', { type: 'button' }, 'Stop');
    const copyButton = make(actions, 'button', { type: 'button' }, 'Copy');
    const followButton = make(actions, 'button', { type: 'button' }, 'Ask a follow-up');
    const closeButton = make(actions, 'button', { type: 'button' }, 'Close');

    const state = { view: null, buffer: [], port: null, nextId: 1, pending: new Map(), retryMs: 200, note: '', open: false, previousFocus: null };

    const shownText = () => {
      const v = state.view;
      if (!v) return '';
      return v.status === 'running' ? v.draft || v.answer || '' : v.answer || '';
    };

    const statusText = () => {
      if (state.note) return state.note;
      const v = state.view;
      if (!state.port) return 'Reconnecting…';
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
    const render = () => {
      const text = shownText();
      if (text !== rendered) {
        rendered = text;
        const paragraphs = text.split(/\n{2,}/).filter((p) => p.trim());
        answer.replaceChildren(...paragraphs.map((p) => make(null, 'p', {}, p)));
      }
      const running = state.view?.status === 'running';
      region.setAttribute('aria-busy', String(running));
      stopButton.hidden = !running;
      copyButton.disabled = !text;
      status.textContent = statusText();
    };

    const adopt = (snapshot) => {
      if (!snapshot || (state.view && newer(snapshot, state.view) < 0)) return;
      let view = snapshot;
      for (const event of state.buffer) if (newer(event, view) > 0) view = applyEvent(view, event);
      state.buffer = state.buffer.filter((event) => newer(event, view) > 0);
      state.view = view;
      render();
    };

    const request = (type) => new Promise((resolve, reject) => {
      const port = state.port;
      if (!port) { reject(new Error('The KnowledgeLens worker is restarting; try again.')); return; }
      const id = state.nextId++;
      state.pending.set(id, { resolve, reject });
      try { port.postMessage({ id, type, session }); } catch (err) { state.pending.delete(id); reject(err); }
    });

    const refresh = () => request('snapshot').then(adopt, (err) => console.warn('KnowledgeLens panel:', err.message));

    const connect = () => {
      let port;
      try {
        port = chrome.runtime.connect({ name: portName });
      } catch {
        // The extension was reloaded or removed: this panel can no longer talk to it.
        state.note = 'KnowledgeLens was updated or removed; close this panel.';
        render();
        return;
      }
      state.port = port;
      port.onMessage.addListener((message) => {
        const pending = state.pending.get(message?.id);
        if (!pending) return;
        state.pending.delete(message.id);
        if (message.ok) pending.resolve(message.data);
        else pending.reject(new Error(message.error?.message ?? 'The request failed.'));
      });
      port.onDisconnect.addListener(() => {
        void chrome.runtime.lastError;
        if (state.port !== port) return;
        state.port = null;
        state.buffer = []; // the old worker's events are history
        for (const p of state.pending.values()) p.reject(new Error('disconnected'));
        state.pending.clear();
        render();
        const delay = state.retryMs;
        state.retryMs = Math.min(state.retryMs * 2, 3000);
        setTimeout(connect, delay);
      });
      state.retryMs = 200;
      render();
      void refresh();
    };

    const onMessage = (message) => {
      if (message?.type !== 'event' || message.session !== session || !message.event) return;
      const event = message.event;
      state.buffer = [...state.buffer, event].slice(-256);
      if (state.view && newer(event, state.view) > 0) {
        state.view = applyEvent(state.view, event);
        render();
      }
      // The terminal event is sent after the final save: read the authoritative view.
      if (event.type === 'run_started' || TERMINAL.has(event.type)) void refresh();
    };
    chrome.runtime.onMessage.addListener(onMessage);

    const place = () => {
      let rect = null;
      const selection = getSelection();
      if (selection && selection.rangeCount > 0 && !selection.isCollapsed) rect = selection.getRangeAt(0).getBoundingClientRect();
      const active = document.activeElement;
      if ((!rect || (!rect.width && !rect.height)) && active && active !== document.body && active !== host) rect = active.getBoundingClientRect();
      const width = Math.min(WIDTH, innerWidth - 2 * MARGIN);
      const height = Math.min(box.offsetHeight || 240, innerHeight - 2 * MARGIN);
      let left = rect ? rect.left : innerWidth - width - MARGIN;
      let top = rect ? rect.bottom + MARGIN : MARGIN;
      if (rect && top + height > innerHeight - MARGIN) top = rect.top - height - MARGIN;
      left = Math.max(MARGIN, Math.min(left, innerWidth - width - MARGIN));
      top = Math.max(MARGIN, Math.min(top, innerHeight - height - MARGIN));
      host.style.setProperty('left', `${Math.round(left)}px`, 'important');
      host.style.setProperty('top', `${Math.round(top)}px`, 'important');
    };

    // The panel opens nearly empty and grows as the answer streams in: placed again as it
    // grows, so it stays on screen (above the selection when there is no room below).
    new ResizeObserver(() => {
      if (state.open) place();
    }).observe(box);

    const hostStyle = {
      all: 'initial', position: 'fixed', 'z-index': '2147483647', display: 'block', margin: '0',
      width: 'auto', height: 'auto', transform: 'none', visibility: 'visible', opacity: '1',
    };
    for (const [name, value] of Object.entries(hostStyle)) host.style.setProperty(name, value, 'important');

    const show = () => {
      const active = document.activeElement;
      state.previousFocus = active && active !== host ? active : state.previousFocus;
      if (!host.isConnected) (document.body ?? document.documentElement).append(host);
      host.style.setProperty('display', 'block', 'important');
      state.open = true;
      state.note = '';
      place();
      region.focus({ preventScroll: true });
      if (!state.port) connect(); else void refresh();
    };

    const close = () => {
      state.open = false;
      host.style.setProperty('display', 'none', 'important');
      const previous = state.previousFocus;
      state.previousFocus = null;
      if (previous && previous.isConnected && typeof previous.focus === 'function') previous.focus({ preventScroll: true });
      // Nothing to go back to: leave the hidden panel now (Chrome would move focus away only
      // at its next style update, and the page would see the hidden panel focused till then).
      if (document.activeElement === host) shadow.activeElement?.blur();
    };

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
      request('follow_up').catch((err) => { state.note = err.message; render(); });
    });
    closeButton.addEventListener('click', close);
    box.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.stopPropagation();
        close();
      }
    });

    return { show, close, state };
  };

  const init = globalThis.__klPanelInit;
  if (init && typeof init.tabId === 'number' && typeof init.portName === 'string') {
    globalThis.__klPanel ??= createPanel(init);
    globalThis.__klPanel.show();
  }
  Boolean(globalThis.__klPanel);
}
