// Who may open the worker's main Port (PORT_NAME), which carries every session's events and
// accepts every request: only pages of this extension (popup, side panel, options). A content
// script shares its process with the web page it runs in, so its Port is refused, as is any
// other extension's. (The in-page panel has a Port of its own, with a narrower rule.)

/**
 * Whether `sender` (a Port's `sender`) is a page of this extension.
 * @param {chrome.runtime.MessageSender | undefined} sender
 * @param {{id: string, getURL: (path: string) => string}} runtime chrome.runtime, or a stand-in
 * @returns {boolean}
 */
export function isOwnExtensionPage(sender, runtime) {
  if (!sender || typeof sender.id !== 'string' || sender.id !== runtime.id) return false;
  const root = runtime.getURL('');
  return typeof sender.url === 'string' && sender.url.startsWith(root);
}
