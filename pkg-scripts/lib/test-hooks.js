
// ---- Test builds only (appended by pkg-scripts/build.sh to the e2e, test and bench
// variants' background.js; the shipped dist/ has none of this) ----
// A new id on every start of the worker, so tests can tell two boots apart.
globalThis.__klBootId = crypto.randomUUID();
// What a click on a question notification does, for tests that cannot click one.
globalThis.klNotificationClicked = notificationClicked;
// What the context menu and the keyboard command call, for tests that cannot use them.
globalThis.klExplainFromTab = explainFromTab;
// What a selection action's menu entry calls (tab id, action id, source, the menu's text).
globalThis.klRunActionFromTab = actionFromTab;
// The action a keyboard command slot (action-1 … action-3) runs now.
globalThis.klCommandAction = commandAction;
// What a save of the actions in Options does to the menu (rebuilds it from the saved list).
globalThis.klRefreshMenus = refreshMenus;
// What chrome.contextMenus.create and update received, in order (Chrome has no API that
// lists a menu's entries): [method, properties] pairs, reset by each removeAll.
globalThis.__klMenus = [];
for (const method of ['create', 'update']) {
  const real = chrome.contextMenus[method].bind(chrome.contextMenus);
  chrome.contextMenus[method] = (...args) => {
    globalThis.__klMenus.push([method, method === 'create' ? args[0] : { id: args[0], ...args[1] }]);
    return real(...args);
  };
}
{
  const removeAll = chrome.contextMenus.removeAll.bind(chrome.contextMenus);
  chrome.contextMenus.removeAll = (...args) => {
    globalThis.__klMenus = [];
    return removeAll(...args);
  };
}
// Scripted model servers the local-server probe also asks (src/llm/local.rs, read by
// web/api.rs): tests push {name, provider, port} entries here.
globalThis.__klLocalServers = [];
// The most pages kept for questions across pages (src/web/pages.rs, read_pages_cap): a test
// sets it low to see eviction with a few pages; 0 keeps the shipped cap (20).
globalThis.__klReadPagesCap = 0;
