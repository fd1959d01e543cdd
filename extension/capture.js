// @ts-check
// Reading a tab's selection for `explain`, shared by the popup and the worker: injects
// content/visible.js and content/selection.js into every frame of the tab and keeps the frame
// whose selection the user made (a focused frame with a selection, else the top frame's, else
// any frame's). Pages an extension may not script are told apart from other failures, and a
// PDF (whose viewer cannot be scripted: `pdf: true`, explained from the context menu).

/** The scripts that capture a selection, in injection order. */
export const SELECTION_SCRIPTS = ['content/visible.js', 'content/selection.js'];

/** Shown when Chrome refuses to script the page. */
export const NOT_SCRIPTABLE_MESSAGE =
  "KnowledgeLens can't read this page (chrome:// pages and the Chrome Web Store are off-limits " +
  'to extensions). You can still ask a general question.';

/** Shown instead of "Selected text" on a PDF: the viewer's selection reaches only the menu. */
export const PDF_SELECTION_MESSAGE =
  'To explain, summarize or translate text in a PDF, select it, right-click it and choose KnowledgeLens, then the action. ' +
  'Questions about the whole PDF work here as on any page.';

/** Shown when the extension has no access to the page's site. */
export const NO_ACCESS_MESSAGE =
  'KnowledgeLens has no access to this page. Click the KnowledgeLens icon on the page, then try again.';

/** The error of a refused executeScript: `not_scriptable` (or `not_found` for a closed tab). */
export function scriptError(err) {
  const message = String(err?.message ?? err);
  if (/^No tab with id/i.test(message)) return { kind: 'not_found', message: 'The tab is gone.' };
  const noAccess = /permission|Cannot access contents of/i.test(message) && !/chrome:|extensions gallery|webstore/i.test(message);
  return { kind: 'not_scriptable', message: noAccess ? NO_ACCESS_MESSAGE : NOT_SCRIPTABLE_MESSAGE, detail: message };
}

/**
 * Picks the capture to use from executeScript results (one per frame).
 * @param {chrome.scripting.InjectionResult<any>[]} results
 */
export function pickFrame(results) {
  const withText = (results ?? []).filter((r) => r?.result && typeof r.result.text === 'string' && r.result.text.trim());
  return (
    withText.find((r) => r.result.focused && r.frameId !== 0) ??
    withText.find((r) => r.frameId === 0) ??
    withText[0] ??
    (results ?? []).find((r) => r?.frameId === 0 && r.result) ??
    null
  );
}

/** The request's `selection` from one frame's capture (the frame-only fields dropped). */
export function selectionOf(capture) {
  const { text = '', full_length = 0, context = '', headings = [], title = '', url = '', lang = '' } = capture ?? {};
  return { text, full_length, context, headings, title, url, lang };
}

/**
 * The `selection` of an explain request for text selected in Chrome's PDF viewer, which
 * gives only the text (the context menu's `selectionText`, white space collapsed): NFKC
 * (the worker's PDF text is NFKC too, so ligatures match), the rest found by the worker.
 * @param {string} text
 * @param {{title?: string, url?: string}} tab
 */
export function pdfSelection(text, tab) {
  const normalized = String(text ?? '').normalize('NFKC').replace(/\s+/g, ' ').trim();
  return {
    text: normalized,
    full_length: Array.from(normalized).length,
    context: '',
    headings: [],
    title: String(tab?.title ?? ''),
    url: String(tab?.url ?? ''),
    lang: '',
  };
}

/** What capturing a selection in a PDF gives. */
const PDF_CAPTURE = Object.freeze({ ok: false, pdf: true, error: { kind: 'not_scriptable', message: PDF_SELECTION_MESSAGE } });

/** Whether the top frame of `tabId` shows a PDF in Chrome's viewer. */
async function showsPdf(tabId) {
  try {
    const [first] = await chrome.scripting.executeScript({
      target: { tabId, frameIds: [0] },
      func: () => document.contentType === 'application/pdf',
    });
    return first?.result === true;
  } catch {
    return false;
  }
}

/**
 * Captures the selection of `tabId`.
 * @returns {Promise<{ok: true, selection: object, frameId?: number, pdf?: boolean} | {ok: false, pdf?: boolean, error: {kind: string, message: string}}>}
 */
export async function captureSelection(tabId) {
  let results;
  try {
    results = await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, files: SELECTION_SCRIPTS });
  } catch (err) {
    // The viewer's own frames refuse scripts: the top frame says whether it shows a PDF.
    return (await showsPdf(tabId)) ? PDF_CAPTURE : { ok: false, error: scriptError(err) };
  }
  if (results.some((r) => r?.frameId === 0 && r.result?.pdf)) return PDF_CAPTURE;
  const picked = pickFrame(results);
  if (!picked) return { ok: false, error: { kind: 'not_scriptable', message: NOT_SCRIPTABLE_MESSAGE } };
  return { ok: true, selection: selectionOf(picked.result), frameId: picked.frameId };
}
