
// ---- Test builds only (appended by pkg-scripts/build.sh to the e2e, test and bench
// variants' background.js; the shipped dist/ has none of this) ----
// A new id on every start of the worker, so tests can tell two boots apart.
globalThis.__klBootId = crypto.randomUUID();
// What a click on a question notification does, for tests that cannot click one.
globalThis.klNotificationClicked = notificationClicked;
// What the context menu and the keyboard command call, for tests that cannot use them.
globalThis.klExplainFromTab = explainFromTab;
// Scripted model servers the local-server probe also asks (src/llm/local.rs, read by
// web/api.rs): tests push {name, provider, port} entries here.
globalThis.__klLocalServers = [];
// The most pages kept for questions across pages (src/web/pages.rs, read_pages_cap): a test
// sets it low to see eviction with a few pages; 0 keeps the shipped cap (20).
globalThis.__klReadPagesCap = 0;
