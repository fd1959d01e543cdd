// @ts-check
// KnowledgeLens in-page panel: the frame that shows the explanation of a selection on the
// page it was made on. Injected only when the user asks (context menu, keyboard command) by
// the worker, into the top frame, after a one-line script that sets
// `globalThis.__klPanelInit = {tabId, run}` in the extension's isolated world. Injecting it
// again reuses the panel (on the new run).
//
// - What the panel shows lives in panel.html, an extension page, in an unnamed iframe
//   inside a CLOSED shadow root of one host element: the page's CSS cannot reach the host's
//   inline !important styles, and the page's scripts cannot read the frame (another origin:
//   no window.find, no selection, no innerText into it). Its URL comes from
//   chrome.runtime.getURL (panel.html is a web_accessible_resource listed with
//   use_dynamic_url; on the Chromium the tests run, the URL has the extension's own id).
// - This script keeps only what the page needs: where the frame sits (below the selection,
//   on screen as it grows, never taller than the window), its height, that it is ready for
//   focus, and Close or Escape, with focus back to where it was. Those messages come by
//   chrome.tabs.sendMessage from our frame, which the page cannot send or hear; each carries
//   the random key this script put in the frame's address, so no other page of ours (a
//   panel.html some site framed itself, say) can move or close this one.
{
  const WIDTH = 380;
  const MARGIN = 8;

  const createPanel = () => {
    const host = document.createElement('div');
    host.setAttribute('data-knowledgelens', 'panel');
    const shadow = host.attachShadow({ mode: 'closed' });
    const frame = document.createElement('iframe');
    frame.setAttribute('title', 'KnowledgeLens explanation');
    frame.setAttribute('allow', 'clipboard-write');
    const frameStyle = {
      display: 'block', width: `${WIDTH}px`, 'max-width': `calc(100vw - ${2 * MARGIN}px)`, height: '160px',
      border: '0', 'border-radius': '10px', 'box-shadow': '0 8px 28px rgba(0, 0, 0, .22)', 'color-scheme': 'normal',
      background: 'transparent',
    };
    for (const [name, value] of Object.entries(frameStyle)) frame.style.setProperty(name, value, 'important');
    shadow.append(frame);

    const state = { run: null, key: '', open: false, previousFocus: null, height: 160, focusPending: false };

    /** The frame's height: what it asked for, within the window. */
    const fit = () => {
      const height = Math.max(80, Math.min(state.height, innerHeight - 2 * MARGIN));
      frame.style.setProperty('height', `${height}px`, 'important');
    };

    const place = () => {
      let rect = null;
      const selection = getSelection();
      if (selection && selection.rangeCount > 0 && !selection.isCollapsed) rect = selection.getRangeAt(0).getBoundingClientRect();
      const active = document.activeElement;
      if ((!rect || (!rect.width && !rect.height)) && active && active !== document.body && active !== host) rect = active.getBoundingClientRect();
      const width = Math.min(WIDTH, innerWidth - 2 * MARGIN);
      const height = Math.min(state.height, Math.max(80, innerHeight - 2 * MARGIN));
      let left = rect ? rect.left : innerWidth - width - MARGIN;
      let top = rect ? rect.bottom + MARGIN : MARGIN;
      if (rect && top + height > innerHeight - MARGIN) top = rect.top - height - MARGIN;
      left = Math.max(MARGIN, Math.min(left, innerWidth - width - MARGIN));
      top = Math.max(MARGIN, Math.min(top, innerHeight - height - MARGIN));
      host.style.setProperty('left', `${Math.round(left)}px`, 'important');
      host.style.setProperty('top', `${Math.round(top)}px`, 'important');
    };

    const hostStyle = {
      all: 'initial', position: 'fixed', 'z-index': '2147483647', display: 'block', margin: '0',
      width: 'auto', height: 'auto', transform: 'none', visibility: 'visible', opacity: '1',
    };
    for (const [name, value] of Object.entries(hostStyle)) host.style.setProperty(name, value, 'important');

    const show = ({ tabId, run }) => {
      const active = document.activeElement;
      state.previousFocus = active && active !== host ? active : state.previousFocus;
      if (state.run !== run) {
        state.run = run;
        state.key = crypto.randomUUID();
        frame.src = chrome.runtime.getURL(`panel.html?tab=${tabId}&run=${run}&key=${state.key}`);
      }
      if (!host.isConnected) (document.body ?? document.documentElement).append(host);
      host.style.setProperty('display', 'block', 'important');
      state.open = true;
      place();
      // Focus goes into the frame once its document is there (a frame focused before it
      // loads gives the page's focus to an empty frame): now, and when it says it is ready.
      state.focusPending = true;
      frame.focus({ preventScroll: true });
    };

    const close = () => {
      state.open = false;
      host.style.setProperty('display', 'none', 'important');
      const previous = state.previousFocus;
      state.previousFocus = null;
      if (previous && previous.isConnected && typeof previous.focus === 'function') previous.focus({ preventScroll: true });
      // Nothing to go back to: leave the hidden panel now (Chrome would move focus away only
      // at its next style update, and the page would see the hidden panel focused till then).
      if (document.activeElement === host) frame.blur();
    };

    // From our panel frame only: the page has no chrome.runtime to send with, and another
    // page of ours does not know the key.
    chrome.runtime.onMessage.addListener((message, sender) => {
      if (sender?.id !== chrome.runtime.id || message?.type !== 'knowledgelens-panel') return;
      if (message.run !== state.run || !state.key || message.key !== state.key) return;
      if (message.action === 'close') close();
      if (message.action === 'ready' && state.open && state.focusPending) {
        state.focusPending = false;
        frame.blur();
        frame.focus({ preventScroll: true });
      }
      if (message.action === 'size' && Number.isFinite(message.height) && message.height > 0) {
        state.height = Math.min(Math.ceil(message.height), 600);
        fit();
        if (state.open) place();
      }
    });

    addEventListener('resize', () => {
      fit();
      if (state.open) place();
    });

    return { show, close, state };
  };

  const init = globalThis.__klPanelInit;
  if (init && typeof init.tabId === 'number' && Number.isInteger(init.run)) {
    globalThis.__klPanel ??= createPanel();
    globalThis.__klPanel.show(init);
  }
  Boolean(globalThis.__klPanel);
}
