// @ts-check
// Who may open the worker's Ports. The main Port (PORT_NAME) carries every session's events
// and accepts every request: only pages of this extension at the top of their own window or
// tab (popup, side panel, options, the popup in a window or a tab). A content script shares
// its process with the web page it runs in, so its Port is refused, as is any other
// extension's, any frame inside a page (web-accessible pages of ours can be framed by any
// site), and the in-page panel, which has a Port of its own (PANEL_PORT_NAME) for the one
// run it shows.

/** The in-page panel's document. */
const PANEL_PAGE = '/panel.html';

/** The sender's URL, parsed, when it is a page of this extension (under its id or, for the
 * in-page panel, the dynamic one use_dynamic_url may give it), else null. */
function ownUrl(sender, runtime) {
  if (!sender || typeof sender.id !== 'string' || sender.id !== runtime.id || typeof sender.url !== 'string') return null;
  try {
    const url = new URL(sender.url);
    return url.protocol === 'chrome-extension:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * Whether `sender` (a Port's `sender`) is a page of this extension at the top of its window
 * or tab, and not the in-page panel.
 * @param {chrome.runtime.MessageSender | undefined} sender
 * @param {{id: string, getURL: (path: string) => string}} runtime chrome.runtime, or a stand-in
 * @returns {boolean}
 */
export function isOwnExtensionPage(sender, runtime) {
  const url = ownUrl(sender, runtime);
  if (!url || !sender.url.startsWith(runtime.getURL(''))) return false;
  const topFrame = sender.frameId === undefined || sender.frameId === 0;
  return topFrame && url.pathname !== PANEL_PAGE;
}

/**
 * The tab and run an in-page panel's Port shows, when `sender` is our panel document in a
 * frame of a tab (`panel.html?tab=<id>&run=<n>`, its tab the sender's), else null.
 * @returns {{tabId: number, run: number} | null}
 */
export function panelRun(sender, runtime) {
  const url = ownUrl(sender, runtime);
  const tabId = sender?.tab?.id;
  if (!url || url.pathname !== PANEL_PAGE || typeof tabId !== 'number' || tabId < 0) return null;
  if (!(typeof sender.frameId === 'number' && sender.frameId > 0)) return null;
  const number = (name) => (/^\d{1,10}$/.test(url.searchParams.get(name) ?? '') ? Number(url.searchParams.get(name)) : null);
  const run = number('run');
  if (number('tab') !== tabId || run === null) return null;
  return { tabId, run };
}
