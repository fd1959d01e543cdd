// KnowledgeLens: what the user can see. A classic script injected before content/extract.js
// and content/selection.js (chrome.scripting.executeScript({files})); it defines one function,
// `globalThis.__klVisibility()`, in the extension's isolated world (the page cannot see it).
// Each call returns a fresh set of helpers with their own style caches (styles change between
// injections).
//
// Visibility is decided on the live DOM with computed styles: a subtree is hidden when it is
// display:none, visibility hidden/collapse, has the `hidden` attribute or aria-hidden="true",
// has opacity 0 (itself or an ancestor), is a zero-size or fully clipped box, lies entirely
// outside the document's scrollable area (e.g. left:-9999px), or is <script>, <style>,
// <template>, <noscript> (and a few non-text elements); text is unreadable when its computed
// font size is under 4px or its colour equals the nearest non-transparent background behind it.
globalThis.__klVisibility = () => {
  const MIN_FONT_PX = 4;
  const SKIP_TAGS = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'SVG', 'CANVAS', 'HEAD']);
  const INLINE_DISPLAYS = new Set(['inline', 'inline-block', 'inline-flex', 'inline-grid', 'contents', 'ruby', 'ruby-text']);

  const doc = document.documentElement;
  const pageWidth = Math.max(doc ? doc.scrollWidth : 0, document.body ? document.body.scrollWidth : 0, innerWidth);
  const pageHeight = Math.max(doc ? doc.scrollHeight : 0, document.body ? document.body.scrollHeight : 0, innerHeight);

  const styleCache = new Map();
  const styleOf = (el) => {
    let s = styleCache.get(el);
    if (!s) { s = getComputedStyle(el); styleCache.set(el, s); }
    return s;
  };

  const parseColor = (value) => {
    const m = /rgba?\(([^)]+)\)/.exec(value || '');
    if (!m) return null;
    const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1 };
  };

  // The nearest non-transparent background colour at or above `el` (white when none).
  const bgCache = new Map();
  const backgroundOf = (el) => {
    if (!el || el.nodeType !== 1) return { r: 255, g: 255, b: 255, a: 1 };
    let bg = bgCache.get(el);
    if (bg) return bg;
    const c = parseColor(styleOf(el).backgroundColor);
    bg = c && c.a > 0 ? c : backgroundOf(el.parentElement);
    bgCache.set(el, bg);
    return bg;
  };

  const fullyClipped = (s) => {
    if (/rect\(\s*0(px)?[ ,]+0(px)?[ ,]+0(px)?[ ,]+0(px)?\s*\)/.test(s.clip)) return true;
    const cp = s.clipPath;
    if (!cp || cp === 'none') return false;
    if (/inset\(\s*(50%|100%)/.test(cp)) return true;
    return /(circle|ellipse)\(\s*0(px|%)?[\s)]/.test(cp) || /polygon\(\s*0(px)?\s+0(px)?\s*\)/.test(cp);
  };

  // Whether the element itself hides its subtree (ancestors are checked by the callers).
  const hiddenElement = (el) => {
    if (SKIP_TAGS.has(el.tagName.toUpperCase())) return true;
    if (el.hidden || el.getAttribute('aria-hidden') === 'true') return true;
    const s = styleOf(el);
    if (s.display === 'none' || s.visibility === 'hidden' || s.visibility === 'collapse') return true;
    if (Number(s.opacity) === 0) return true;
    if (fullyClipped(s)) return true;
    if (s.display === 'contents') return false;
    const r = el.getBoundingClientRect();
    const clips = s.overflow === 'hidden' || s.overflow === 'clip' || s.overflowX === 'hidden' || s.overflowY === 'hidden';
    // A (near) zero-size box hides its content when it clips its overflow; an empty-sized box
    // with no element children has nothing to show.
    if (clips && (r.width <= 1 || r.height <= 1)) return true;
    if (r.width <= 0 && r.height <= 0 && !el.firstElementChild) return true;
    // Entirely outside the document's scrollable area (e.g. left:-9999px).
    const left = r.left + scrollX;
    const top = r.top + scrollY;
    const sized = r.width > 0 && r.height > 0;
    const right = left + r.width;
    const bottom = top + r.height;
    if ((sized ? right <= 0 : right < 0) || (sized ? bottom <= 0 : bottom < 0) || left >= pageWidth || top >= pageHeight) return true;
    return false;
  };

  // Whether `el` or any ancestor hides it (cached per element).
  const hiddenCache = new Map();
  const hiddenWithAncestors = (el) => {
    if (!el || el.nodeType !== 1) return false;
    let hidden = hiddenCache.get(el);
    if (hidden === undefined) {
      hidden = hiddenElement(el) || hiddenWithAncestors(el.parentElement || el.getRootNode()?.host);
      hiddenCache.set(el, hidden);
    }
    return hidden;
  };

  const sameColor = (a, b) => a && b && a.r === b.r && a.g === b.g && a.b === b.b;

  // Whether the text directly inside `el` is unreadable: tiny, or coloured like its background.
  const unreadableText = (el) => {
    const s = styleOf(el);
    if (parseFloat(s.fontSize) < MIN_FONT_PX) return true;
    const fg = parseColor(s.color);
    if (fg && fg.a === 0) return true;
    return sameColor(fg, backgroundOf(el));
  };

  // Whether the text node `node` is something the user can read.
  const visibleTextNode = (node) => {
    const el = node.parentElement;
    return Boolean(el) && !hiddenWithAncestors(el) && !unreadableText(el);
  };

  // Line breaks an element adds before and after its text, as innerText does: two for <p>,
  // one for other blocks, a space for table cells, none for inline boxes.
  const breakOf = (el) => {
    const display = styleOf(el).display;
    if (INLINE_DISPLAYS.has(display)) return '';
    if (display === 'table-cell') return ' ';
    return el.tagName === 'P' ? '\n\n' : '\n';
  };

  const isBlock = (el) => !INLINE_DISPLAYS.has(styleOf(el).display);

  const HEADING_LEVEL = { H1: 1, H2: 2, H3: 3, H4: 4, H5: 5, H6: 6 };

  // The visible text under `root`, block boundaries kept as line breaks, stopping at `cap`.
  // With `headings`, each visible h1-h6 becomes a Markdown heading line of its own paragraph
  // ("## Its visible text", whitespace collapsed); without, it is a block like any other.
  const visibleText = (root, cap = Infinity, { headings = false } = {}) => {
    if (!root || hiddenWithAncestors(root)) return '';
    let out = [];
    let length = 0;
    const push = (s) => { out.push(s); length += s.length; };
    // `container` is an element or a shadow root; `el` the element whose style applies.
    const walk = (container, el) => {
      const kids = container.tagName === 'SLOT' ? container.assignedNodes({ flatten: true }) : container.childNodes;
      for (const node of kids) {
        if (length >= cap) break;
        if (node.nodeType === 3) {
          if (node.nodeValue.trim() && !unreadableText(el)) push(node.nodeValue);
        } else if (node.nodeType === 1) {
          if (node.tagName === 'BR') { push('\n'); continue; }
          if (hiddenElement(node)) continue;
          const level = headings && HEADING_LEVEL[node.tagName.toUpperCase()];
          if (level) { heading(node, level); continue; }
          const brk = breakOf(node);
          push(brk);
          walk(node.shadowRoot || node, node);
          push(brk);
        }
      }
    };
    // A heading's visible text, on one line, as its own paragraph.
    const heading = (node, level) => {
      const [outer, before] = [out, length];
      out = [];
      walk(node.shadowRoot || node, node);
      const title = out.join('').replace(/\s+/g, ' ').trim();
      [out, length] = [outer, before];
      if (title) push(`\n\n${'#'.repeat(level)} ${title}\n\n`);
    };
    walk(root, root);
    return out.join('').slice(0, cap);
  };

  // Collapses runs of spaces within lines, keeps single line breaks and at most one blank line.
  const normalize = (raw) => raw
    .replace(/\r\n?/g, '\n')
    .replace(/[^\S\n]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();

  return { hiddenElement, hiddenWithAncestors, unreadableText, visibleTextNode, visibleText, isBlock, normalize };
};
