// @ts-check
// The side panel: opening it from the popup, and, in the panel, asking for access to the
// tab's site when the extension cannot read it.

/** Where the side panel of `tabId` lives (one panel per tab). */
export const panelPath = (tabId) => `sidepanel.html?tab=${tabId}`;

/**
 * Opens the side panel for `tabId`. Must run inside the click: `sidePanel.open` needs the
 * user's gesture, so neither call is awaited before it. When Chrome refuses (or has no side
 * panel), the popup page for that tab opens in a small window instead.
 * @returns {Promise<'side_panel'|'window'>}
 */
export function openSidePanel(tabId) {
  /** @returns {Promise<'window'>} */
  const fallback = async (err) => {
    if (err) console.warn('KnowledgeLens: the side panel did not open, using a window:', err);
    await chrome.windows.create({
      url: chrome.runtime.getURL(`popup.html?tab=${tabId}`),
      type: 'popup',
      width: 420,
      height: 720,
    });
    return 'window';
  };
  if (!chrome.sidePanel?.open) return fallback(null);
  const options = chrome.sidePanel.setOptions({ tabId, path: panelPath(tabId), enabled: true });
  const opened = chrome.sidePanel.open({ tabId });
  return Promise.all([options, opened]).then(() => /** @type {const} */ ('side_panel'), fallback);
}

/** The origin pattern (`https://host/*`) of an http(s) URL, else null. */
export function originPattern(url) {
  try {
    const { protocol, host } = new URL(url);
    return protocol === 'http:' || protocol === 'https:' ? `${protocol}//${host}/*` : null;
  } catch {
    return null;
  }
}

/**
 * Whether the side panel must ask for access to read `tabId`: `{needsAccess: false}`, or `{needsAccess: true,
 * origin}` with the origin to ask for when it is known (null when Chrome hides the tab's URL,
 * which it does exactly when the extension has no access to it).
 */
export async function pageAccess(tabId, lastKnownUrl) {
  try {
    await chrome.scripting.executeScript({ target: { tabId }, func: () => true });
    return { needsAccess: false };
  } catch {
    let url = null;
    try {
      url = (await chrome.tabs.get(tabId)).url ?? null;
    } catch {
      return { needsAccess: false }; // the tab is gone: nothing to ask for
    }
    if (url && !originPattern(url)) return { needsAccess: false }; // chrome:// and the like: not ours to fix
    return { needsAccess: true, origin: originPattern(url ?? lastKnownUrl ?? '') };
  }
}

/** Asks Chrome for `origin` (from the click); resolves to whether it was granted. */
export function requestOrigin(origin) {
  return chrome.permissions.request({ origins: [origin] });
}
