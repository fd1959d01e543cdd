// @ts-check
// KnowledgeLens selection capture, injected (after content/visible.js) into every frame of a
// tab by chrome.scripting.executeScript({files, allFrames: true}) from the popup or the worker
// (extension/capture.js), which keeps the frame that has a selection. Reads only; changes
// nothing on the page.
//
// Captures (the `selection` of the `explain` request, see /work/notes/contract13.md): the
// selected text (also inside a <textarea>/<input>, via selectionStart/End), capped at
// MAX_SELECTION_CHARS with the full length; the visible text of the enclosing block (capped);
// the heading path above the selection (h1 > h2 > h3 ..., outermost first); the title; the URL
// without query or fragment; the language (closest [lang], else the document's). Only text the
// user can see is taken (content/visible.js). The caps equal protocol.gen.js's constants
// (tests/unit/selection.test.mjs checks it; the Rust side re-checks every cap anyway).
//
// The completion value is the result: {text, full_length, context, headings, title, url, lang,
// focused, top, pdf}. Everything is in a block so the script can be injected again.
{
  const MAX_SELECTION_CHARS = 4000;
  const MAX_CONTEXT_CHARS = 4000;
  const MAX_HEADING_CHARS = 300;
  const TEXT_INPUT_TYPES = new Set(['text', 'search', 'url', 'tel', 'email', '']);
  const BLOCK_SELECTOR = 'p, li, dd, dt, blockquote, pre, td, th, figcaption, h1, h2, h3, h4, h5, h6, article, section, main, div, body';

  const vis = globalThis.__klVisibility();
  const clean = (s) => vis.normalize(String(s ?? ''));
  /** One line: every run of white space (source line breaks too) as one space. */
  const flat = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();

  /** `url` without query string or fragment. */
  const bareUrl = (url) => {
    try {
      const u = new URL(url);
      u.search = '';
      u.hash = '';
      return u.href;
    } catch {
      return String(url ?? '').replace(/[?#].*$/, '');
    }
  };

  /** `text` cut to `max` characters (by code point), with a word boundary when one is close. */
  const cap = (text, max) => {
    const chars = Array.from(text);
    return chars.length <= max ? text : chars.slice(0, max).join('');
  };

  /** The focused text field with a non-empty selection, or null. */
  const fieldWithSelection = () => {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    if (!el) return null;
    const isField = el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && TEXT_INPUT_TYPES.has((el.getAttribute('type') || '').toLowerCase()));
    if (!isField) return null;
    const field = /** @type {HTMLInputElement | HTMLTextAreaElement} */ (el);
    if (field.type === 'password') return null;
    const { selectionStart: start, selectionEnd: end } = field;
    if (typeof start !== 'number' || typeof end !== 'number' || end <= start) return null;
    return { el: field, start, end };
  };

  /** The visible text of the range: what shows of the text nodes it touches, cut at its ends. */
  const rangeText = (range) => {
    const root = range.commonAncestorContainer;
    if (root.nodeType === 3) return vis.visibleTextOf(root, range.startOffset, range.endOffset);
    const out = [];
    let lastBlock = null;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!range.intersectsNode(node)) continue;
      const from = node === range.startContainer ? range.startOffset : 0;
      const to = node === range.endContainer ? range.endOffset : node.nodeValue.length;
      // White space between words carries nothing: kept without measuring.
      if (!/\S/.test(node.nodeValue)) {
        if (out.length) out.push(' ');
        continue;
      }
      const value = vis.visibleTextOf(node, from, to);
      if (!/\S/.test(value)) continue;
      const block = node.parentElement.closest(BLOCK_SELECTOR);
      if (lastBlock && block !== lastBlock) out.push('\n');
      lastBlock = block;
      out.push(value.replace(/\s+/g, ' '));
    }
    return out.join('');
  };

  /** The nearest block element around `node` that the user can see. */
  const blockOf = (node) => {
    let el = node && node.nodeType === 1 ? node : node?.parentElement;
    el = el?.closest(BLOCK_SELECTOR) ?? document.body;
    while (el && el !== document.body && !vis.isBlock(el)) el = el.parentElement?.closest(BLOCK_SELECTOR);
    return el ?? document.body;
  };

  /** The visible headings before `node` in document order, as a path (outermost first). */
  const headingPath = (node) => {
    const path = [];
    for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
      const position = h.compareDocumentPosition(node);
      const before = position & Node.DOCUMENT_POSITION_FOLLOWING || position & Node.DOCUMENT_POSITION_CONTAINED_BY;
      if (!before) break;
      const text = cap(flat(vis.visibleText(h)), MAX_HEADING_CHARS);
      if (!text) continue;
      const level = Number(h.tagName[1]);
      path.length = level - 1; // drops deeper levels; holes where a level was skipped
      path[level - 1] = text;
    }
    return path.filter(Boolean);
  };

  const langOf = (node) => {
    const el = node && node.nodeType === 1 ? node : node?.parentElement;
    return (el?.closest('[lang]')?.getAttribute('lang') || document.documentElement.lang || '').trim();
  };

  const capture = () => {
    const field = fieldWithSelection();
    if (field) {
      const { el, start, end } = field;
      const full = clean(el.value.slice(start, end));
      const around = el.value.slice(Math.max(0, start - MAX_CONTEXT_CHARS / 2), end + MAX_CONTEXT_CHARS / 2);
      return { text: full, context: cap(clean(around), MAX_CONTEXT_CHARS), anchor: el };
    }
    const selection = getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return { text: '', context: '', anchor: document.body };
    const range = selection.getRangeAt(0);
    const text = clean(rangeText(range));
    const block = blockOf(range.commonAncestorContainer);
    const context = cap(flat(vis.visibleText(block, MAX_CONTEXT_CHARS * 2)), MAX_CONTEXT_CHARS);
    return { text, context, anchor: range.startContainer };
  };

  const { text, context, anchor } = capture();
  ({
    text: cap(text, MAX_SELECTION_CHARS),
    full_length: Array.from(text).length,
    context,
    headings: text ? headingPath(anchor) : [],
    title: cap(flat(document.title), 300),
    url: bareUrl(location.href),
    lang: langOf(anchor),
    focused: document.hasFocus(),
    top: window === window.top,
    // Chrome's PDF viewer shows a PDF inside a page extensions cannot read.
    pdf: document.contentType === 'application/pdf',
  });
}
