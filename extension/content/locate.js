// @ts-check
// KnowledgeLens passage locator: shows a cited page passage in the page. Injected into the top
// frame by the worker (chrome.scripting.executeScript({files}), after content/constants.gen.js
// and content/visible.js; LOCATE_SCRIPTS in src/web/pages.rs), which then sends it
// `{type: LOCATE_MESSAGE, text}` with chrome.tabs.sendMessage and gets back `{found}`.
//
// How a passage is found: its text (a page source's excerpt; heading markers "## " dropped) is
// normalised (every whitespace character removed, lower-cased where that keeps the length) and
// its first NEEDLE_CHARS characters are looked for in the page's visible text nodes (a
// TreeWalker; content/visible.js decides what is visible), normalised the same way and joined,
// so a match may span several text nodes and ignores how the page breaks its lines. The match
// is extended as far as the rest of the passage still agrees, then scrolled into view (smooth,
// centred; at once in a hidden tab, which would not animate) and highlighted for HIGHLIGHT_MS: with the CSS Custom Highlight API when the
// browser has it (a registered highlight and a constructed style sheet, both removed
// afterwards), else with overlay boxes that ignore the pointer and are removed afterwards.
// Nothing of the page's own DOM is changed; page text is never parsed as HTML.
//
// Everything lives in a block so that injecting it again into the same isolated world does not
// collide; the message listener is added once per world.
{
  const NEEDLE_CHARS = 80;
  const HIGHLIGHT = 'knowledgelens-passage';
  const HIGHLIGHT_MS = 2000;
  const COLOUR = 'rgba(255, 200, 0, 0.45)';
  const OUTLINE = 'rgba(200, 140, 0, 0.9)';

  /** `text` without whitespace, lower-cased when that keeps every code unit in place. */
  const fold = (text) => {
    const squeezed = String(text ?? '').replace(/\s+/g, '');
    const lower = squeezed.toLowerCase();
    return lower.length === squeezed.length ? lower : squeezed;
  };

  /** The passage as looked for: heading markers dropped, then folded. */
  const passageKey = (text) => fold(String(text ?? '').replace(/^#{1,6}[ \t]+/gm, ''));

  /** The raw offset in `raw` of its `n`-th non-whitespace code unit (`raw.length` past the end). */
  const rawOffset = (raw, n) => {
    let seen = 0;
    for (let i = 0; i < raw.length; i += 1) {
      if (/\s/.test(raw[i])) continue;
      if (seen === n) return i;
      seen += 1;
    }
    return raw.length;
  };

  /**
   * The range of `text`'s beginning among the visible text under `root` (extended as far as
   * the rest of `text` agrees), or null. `visibleTextNode(node)` says which text nodes count.
   */
  const find = (root, text, visibleTextNode) => {
    const key = passageKey(text);
    const needle = key.slice(0, NEEDLE_CHARS);
    if (!root || !needle) return null;
    const doc = root.ownerDocument ?? root;
    const walker = doc.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */, {
      acceptNode: (node) => (node.nodeValue.trim() && visibleTextNode(node) ? 1 : 3), // ACCEPT : SKIP
    });
    const nodes = [];
    const starts = [];
    const parts = [];
    let length = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const folded = fold(node.nodeValue);
      nodes.push(node);
      starts.push(length);
      parts.push(folded);
      length += folded.length;
    }
    const hay = parts.join('');
    const at = hay.indexOf(needle);
    if (at < 0) return null;
    let end = at + needle.length;
    while (end < hay.length && end - at < key.length && hay[end] === key[end - at]) end += 1;
    // The text node holding folded position `pos`, and the raw offset of that position in it.
    const point = (pos) => {
      let lo = 0;
      let hi = nodes.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= pos) lo = mid;
        else hi = mid - 1;
      }
      return { node: nodes[lo], offset: rawOffset(nodes[lo].nodeValue, pos - starts[lo]) };
    };
    const first = point(at);
    const last = point(end - 1);
    const range = doc.createRange();
    range.setStart(first.node, first.offset);
    range.setEnd(last.node, last.offset + 1);
    return range;
  };

  /** Highlights `range` with the Custom Highlight API; returns its undo, or null without it. */
  const customHighlight = (range) => {
    if (!globalThis.CSS?.highlights || typeof Highlight !== 'function' || typeof CSSStyleSheet !== 'function') return null;
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(`::highlight(${HIGHLIGHT}) { background-color: ${COLOUR}; }`);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    const highlight = new Highlight(range);
    CSS.highlights.set(HIGHLIGHT, highlight);
    return () => {
      if (CSS.highlights.get(HIGHLIGHT) === highlight) CSS.highlights.delete(HIGHLIGHT);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
    };
  };

  /** Highlights `range` with boxes over its lines (page coordinates); returns their undo. */
  const overlayHighlight = (range) => {
    const boxes = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0).map((r) => {
      const box = document.createElement('div');
      box.dataset.knowledgelens = 'passage-highlight';
      Object.assign(box.style, {
        position: 'absolute', left: `${r.left + scrollX}px`, top: `${r.top + scrollY}px`,
        width: `${r.width}px`, height: `${r.height}px`, background: COLOUR, outline: `1px solid ${OUTLINE}`,
        pointerEvents: 'none', zIndex: '2147483647', margin: '0', padding: '0', border: '0',
      });
      return box;
    });
    document.documentElement.append(...boxes);
    return () => { for (const box of boxes) box.remove(); };
  };

  /** Scrolls `range` into view and highlights it for HIGHLIGHT_MS (an earlier one ends first). */
  const show = (range) => {
    globalThis.__klLocateUndo?.();
    const start = range.startContainer.parentElement;
    // A hidden tab (the popup opened as a tab of its own) does not animate: jump there.
    const behavior = document.visibilityState === 'hidden' ? 'instant' : 'smooth';
    start?.scrollIntoView({ behavior, block: 'center', inline: 'nearest' });
    const undo = customHighlight(range) ?? overlayHighlight(range);
    const timer = setTimeout(() => globalThis.__klLocateUndo?.(), HIGHLIGHT_MS);
    globalThis.__klLocateUndo = () => {
      clearTimeout(timer);
      undo();
      globalThis.__klLocateUndo = null;
    };
  };

  /** Finds `text` on the live page and shows it; whether it was found. */
  const locate = (text) => {
    const vis = globalThis.__klVisibility();
    const range = find(document.body, text, vis.visibleTextNode);
    if (!range) return false;
    show(range);
    return true;
  };

  globalThis.__klLocator = { NEEDLE_CHARS, HIGHLIGHT, HIGHLIGHT_MS, fold, passageKey, find, locate };

  const constants = globalThis.__klContent;
  if (!globalThis.__klLocateListening && constants && globalThis.chrome?.runtime?.onMessage) {
    globalThis.__klLocateListening = true;
    chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
      // Only the extension's own worker may ask (a page cannot reach this listener anyway).
      if (message?.type !== constants.LOCATE_MESSAGE || sender?.id !== chrome.runtime.id) return false;
      let found = false;
      try {
        found = globalThis.__klLocator.locate(String(message.text ?? ''));
      } catch (err) {
        console.warn('KnowledgeLens: could not show the passage:', err);
      }
      sendResponse({ found });
      return false;
    });
  }
}
