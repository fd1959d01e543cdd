// @ts-check
// KnowledgeLens side panel: the popup's page and code, in a panel that stays open beside the
// tab (sidepanel.html?tab=<id>). The markup lives once, in popup.html: it is read from the
// extension's own package (trusted, never page or model text) and adopted here; popup.js
// then runs as in the popup, in its side-panel mode (html[data-mode="sidepanel"]).

const response = await fetch(chrome.runtime.getURL('popup.html'));
const doc = new DOMParser().parseFromString(await response.text(), 'text/html');
document.body.replaceChildren(...[...doc.body.childNodes].map((node) => document.adoptNode(node)));
await import('./popup.js');

export {}; // a module (sidepanel.html loads it as one): top-level await is allowed
