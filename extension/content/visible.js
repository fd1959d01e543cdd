// @ts-check
// KnowledgeLens: what the user can see. A classic script injected before content/extract.js
// and content/selection.js (chrome.scripting.executeScript({files})); it defines, in the
// extension's isolated world (the page cannot see them), `globalThis.__klVisibilityMath` (pure
// colour and clipping arithmetic, unit-tested in node: tests/unit/visible.test.mjs) and one
// function, `globalThis.__klVisibility()`. Each call of the latter returns a fresh set of
// helpers with their own style caches (styles change between injections).
//
// Visibility is decided on the live DOM with computed styles. A subtree is hidden when it is
// display:none, visibility hidden/collapse, has the `hidden` attribute or aria-hidden="true",
// has an effective opacity under 0.1 (the product of `opacity` and of `filter: opacity()` over
// it and its ancestors), has a `mask-image` (`-webkit-mask-image`) other than none, is a
// zero-size box that clips its overflow or a box clipped to nothing, lies entirely outside the
// area its ancestors let it show, or is <script>, <style>, <template>, <noscript> (and a few
// non-text elements). That area is the document's scrollable area cut by each ancestor's
// clipping: the padding box of `overflow: hidden|clip` (per axis) and `contain: paint`,
// `clip-path: inset()` and `clip: rect()` (an absolutely positioned box escapes the clipping
// below its containing block, a fixed one all of it; the root's and body's overflow belong to
// the viewport and do not count).
// A text node is unreadable when its computed font size is under 6px, or when its colour
// (`-webkit-text-fill-color`, which is `color` unless set) has a contrast ratio under 1.5:1
// against every colour the background behind it may have (WCAG 2 relative luminance; the
// background-colors from the text's element up to the first opaque one, composed by their
// alpha, over white; a gradient `background-image` puts its colour stops there instead; an
// image makes the background unknown and the text is kept).
// Of a readable text node, only the characters whose boxes show inside the area its element
// shows are kept: a part at least 6px high (and 6px wide, or whole if narrower). Lines past a
// line clamp or below a clipping box, text past an ellipsis or pushed off (text-indent:
// -9999px) go; one Range measures halves of the node until each part shows whole or not at
// all (shownSpans).
//
// Cost: at most one getComputedStyle per element; opacity, background, areas and readability
// are cached per element; one reused Range measures each text node: one getClientRects when it
// shows whole or not at all, about 2 log2(length) more for each place it is cut.
globalThis.__klVisibilityMath = (() => {
  const NO_CLIP = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };

  // WCAG 2 relative luminance of an sRGB colour {r, g, b} (0-255).
  const luminance = ({ r, g, b }) => {
    const lin = (v) => {
      const c = v / 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  // WCAG 2 contrast ratio of two colours, from 1 (same) to 21 (black on white).
  const contrastRatio = (a, b) => {
    const [la, lb] = [luminance(a), luminance(b)];
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  };
  // `top` ({r, g, b, a}) painted over the opaque `bottom`: an opaque colour.
  const over = (top, bottom) => {
    const mix = (t, u) => t * top.a + u * (1 - top.a);
    return { r: mix(top.r, bottom.r), g: mix(top.g, bottom.g), b: mix(top.b, bottom.b), a: 1 };
  };

  const intersect = (a, b) => ({
    left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
    right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom),
  });

  // A computed length in px: `12px`, `25%` of `ref`, `0`, or a calc() sum of those.
  const lengthOf = (value, ref) => {
    let total = 0;
    const terms = value.replace(/^calc\(|\)$/g, '').replace(/\s+/g, '');
    for (const [, sign, n, unit] of terms.matchAll(/([+-]?)(\d*\.?\d+(?:e[+-]?\d+)?)(px|%)?/gi)) {
      total += (sign === '-' ? -1 : 1) * (unit === '%' ? (n * ref) / 100 : Number(n));
    }
    return total;
  };
  // The part of `box` a `clip-path` shows when it is an inset(), else null (other shapes are
  // judged only when they show nothing).
  const insetArea = (clipPath, box) => {
    const start = clipPath.indexOf('inset(');
    if (start < 0) return null;
    let depth = 0;
    let end = start + 5;
    for (; end < clipPath.length; end += 1) {
      if (clipPath[end] === '(') depth += 1;
      else if (clipPath[end] === ')' && (depth -= 1) === 0) break;
    }
    const args = clipPath.slice(start + 6, end).split(/\sround\s/)[0];
    const v = args.match(/calc\((?:[^()]|\([^()]*\))*\)|\S+/g) || ['0'];
    const [t, r = t, b = t, l = r] = v;
    const w = box.right - box.left;
    const h = box.bottom - box.top;
    return {
      left: box.left + lengthOf(l, w), top: box.top + lengthOf(t, h),
      right: box.right - lengthOf(r, w), bottom: box.bottom - lengthOf(b, h),
    };
  };
  // The part of `box` a `clip: rect(top, right, bottom, left)` shows (offsets from its corner).
  const rectArea = (clip, box) => {
    const [t, r, b, l] = clip.replace(/^rect\(|\)$/g, '').split(/[\s,]+/);
    const at = (v, auto) => (v === 'auto' || v === undefined ? auto : parseFloat(v) || 0);
    const [w, h] = [box.right - box.left, box.bottom - box.top];
    return { left: box.left + at(l, 0), top: box.top + at(t, 0), right: box.left + at(r, w), bottom: box.top + at(b, h) };
  };

  // The area an element's own clipping shows, or null when it clips nothing: from its computed
  // style `s` and `boxes()`, its {border, padding} boxes (asked only when something clips).
  // A display:contents element has no box to clip with; overflow and containment do not
  // apply to inline boxes.
  const clipOf = (s, boxes) => {
    if (s.display === 'contents') return null;
    const block = s.display !== 'inline';
    const x = block && (s.overflowX === 'hidden' || s.overflowX === 'clip');
    const y = block && (s.overflowY === 'hidden' || s.overflowY === 'clip');
    const paint = block && /\b(paint|strict|content)\b/.test(s.contain || '');
    const path = s.clipPath && s.clipPath !== 'none' && s.clipPath.includes('inset(') ? s.clipPath : null;
    const rect = (s.position === 'absolute' || s.position === 'fixed') && /^rect\(/.test(s.clip || '') ? s.clip : null;
    if (!x && !y && !paint && !path && !rect) return null;
    const { border, padding } = boxes();
    let area = NO_CLIP;
    if (x || y || paint) {
      area = {
        left: x || paint ? padding.left : -Infinity, right: x || paint ? padding.right : Infinity,
        top: y || paint ? padding.top : -Infinity, bottom: y || paint ? padding.bottom : Infinity,
      };
    }
    if (path) area = intersect(area, insetArea(path, border));
    if (rect) area = intersect(area, rectArea(rect, border));
    return area;
  };

  // How a line box `r` shows inside `area` (the same coordinates): 'out' when too little of it
  // does (less than `min` px high, or less than `min` px wide unless it is narrower), 'in' when
  // it shows across its whole width (half a pixel aside), 'cut' when only a part does.
  const lineShows = (r, area, min) => {
    const w = Math.min(r.right, area.right) - Math.max(r.left, area.left);
    const h = Math.min(r.bottom, area.bottom) - Math.max(r.top, area.top);
    if (!(w > 0 && w >= Math.min(min, r.right - r.left) && h >= min)) return 'out';
    return r.left >= area.left - 0.5 && r.right <= area.right + 0.5 ? 'in' : 'cut';
  };

  // Whether some line box in `rects` shows inside `area` a part at least `min` px high and
  // `min` px wide (or as wide as the box when it is narrower).
  const showsText = (rects, area, min) => {
    for (const r of rects) if (lineShows(r, area, min) !== 'out') return true;
    return false;
  };

  // The character ranges of `text` that show inside `area`, as [[start, end), ...] in order
  // (adjacent ones merged; empty when only white space would be left). `rectsOf(start, end)`
  // gives the line boxes of characters start..end-1. A part whose boxes (zero-width ones
  // aside) all show whole is kept, one whose boxes all show too little is dropped, and any
  // other is halved until single characters, which show when a box of theirs does (white
  // space is kept unmeasured: it carries nothing). A text that shows whole or not at all
  // costs one read; one cut in k places about 2k log2(length) reads (lines clamped, clipped
  // or cut at an ellipsis).
  const shownSpans = (text, rectsOf, area, min) => {
    const spans = [];
    const keep = (a, b) => {
      const last = spans[spans.length - 1];
      if (last && last[1] === a) last[1] = b;
      else spans.push([a, b]);
    };
    const visit = (a, b) => {
      if (!/\S/.test(text.slice(a, b))) return keep(a, b);
      const rects = [...rectsOf(a, b)].filter((r) => r.right > r.left);
      const kinds = rects.map((r) => lineShows(r, area, min));
      if (kinds.every((k) => k === 'out')) return undefined;
      if (kinds.every((k) => k === 'in')) return keep(a, b);
      let mid = (a + b) >> 1;
      // Never between the halves of a surrogate pair.
      if (/[\uDC00-\uDFFF]/.test(text[mid] ?? '')) mid += 1;
      if (mid <= a || mid >= b) return showsText(rects, area, min) ? keep(a, b) : undefined;
      visit(a, mid);
      return visit(mid, b);
    };
    visit(0, text.length);
    return spans.some(([a, b]) => /\S/.test(text.slice(a, b))) ? spans : [];
  };

  // The colour stops of a computed `background-image` made of gradients only (each as its
  // computed colour text), or null when a layer is an image: the colours behind are unknown.
  const gradientStops = (value) => {
    if (!/gradient\(/.test(value) || /\b(url|image|image-set|element|cross-fade|paint)\(/.test(value)) return null;
    return value.match(/\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color)\([^()]*\)/g);
  };

  return {
    luminance, contrastRatio, over, intersect, lengthOf, insetArea, rectArea, clipOf, lineShows, showsText, shownSpans,
    gradientStops,
  };
})();

globalThis.__klVisibility = () => {
  const MIN_FONT_PX = 6;
  const MIN_OPACITY = 0.1;
  const MIN_CONTRAST = 1.5;
  const SKIP_TAGS = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'SVG', 'CANVAS', 'HEAD']);
  const INLINE_DISPLAYS = new Set(['inline', 'inline-block', 'inline-flex', 'inline-grid', 'contents', 'ruby', 'ruby-text']);
  // Form controls draw their text in a shadow of their own: their text nodes have no boxes.
  const FORM_TEXT = new Set(['TEXTAREA', 'SELECT', 'OPTION', 'OPTGROUP']);
  const CLIPPING = new Set(['hidden', 'clip']);
  const WHITE = { r: 255, g: 255, b: 255, a: 1 };
  const {
    contrastRatio, over, intersect, clipOf, shownSpans, gradientStops,
  } = globalThis.__klVisibilityMath;

  const doc = document.documentElement;
  const pageWidth = Math.max(doc ? doc.scrollWidth : 0, document.body ? document.body.scrollWidth : 0, innerWidth);
  const pageHeight = Math.max(doc ? doc.scrollHeight : 0, document.body ? document.body.scrollHeight : 0, innerHeight);
  // Areas and boxes are in page coordinates: {left, top, right, bottom}.
  const PAGE = { left: 0, top: 0, right: pageWidth, bottom: pageHeight };

  // What the checks know of an element: the computed values they read on most elements, each
  // read once (a read is not free), the live style `s` for the rest, and (filled on first
  // use) its box, effective opacity and background, areas, and the verdicts.
  const facts = new Map();
  const factsOf = (el) => {
    let f = facts.get(el);
    if (!f) {
      const s = getComputedStyle(el);
      f = {
        s, display: s.display, visibility: s.visibility, position: s.position, opacity: s.opacity, filter: s.filter,
        overflowX: s.overflowX, overflowY: s.overflowY, contain: s.contain, clip: s.clip, clipPath: s.clipPath,
      };
      facts.set(el, f);
    }
    return f;
  };

  // The element `el` is drawn inside: its slot when slotted, else its parent or shadow host.
  const parentOf = (el) => el.assignedSlot || el.parentElement || el.getRootNode()?.host || null;

  // A computed colour as {r, g, b, a}, or null (each distinct text parsed once). They are
  // rgb()/rgba(), except those written in another space (oklch(), color(), lab() ...): those
  // are painted on a 1x1 canvas and read back as sRGB.
  const colours = new Map();
  const parseColor = (value) => {
    if (!value) return null;
    if (!colours.has(value)) colours.set(value, colourOf(value));
    return colours.get(value);
  };
  const colourOf = (value) => {
    const m = /^rgba?\(([^)]+)\)$/.exec(value);
    if (!m) return painted(value);
    const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1 };
  };
  let painter;
  const painted = (value) => {
    if (painter === undefined) {
      painter = typeof OffscreenCanvas === 'function' ? new OffscreenCanvas(1, 1).getContext('2d', { willReadFrequently: true }) : null;
    }
    if (!painter) return null;
    painter.clearRect(0, 0, 1, 1);
    painter.fillStyle = value;
    painter.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = painter.getImageData(0, 0, 1, 1).data;
    return { r, g, b, a: a / 255 };
  };

  // The colours the background behind `el`'s text may have, each opaque, or null when they are
  // unknown (an image is painted there). An element's background is its background-color
  // composed over what lies below (its ancestors' background, down to the first opaque one;
  // white when none), under the colour stops of its `background-image` when that is made of
  // gradients (each stop composed over each colour below it).
  const backgroundOf = (el) => {
    const f = factsOf(el);
    if (f.background === undefined) {
      const c = parseColor(f.s.backgroundColor);
      let colours;
      if (c && c.a >= 1) colours = [c];
      else {
        const parent = parentOf(el);
        const below = parent ? backgroundOf(parent) : [WHITE];
        colours = below && (!c || c.a <= 0 ? below : below.map((b) => over(c, b)));
      }
      const image = f.s.backgroundImage;
      if (image && image !== 'none') colours = underGradient(image, colours);
      f.background = colours;
    }
    return f.background;
  };
  // The gradient stops of `image` painted over `below` (null: unknown), at most 16 colours.
  const underGradient = (image, below) => {
    const stops = (gradientStops(image) ?? []).map(parseColor);
    if (stops.length === 0 || stops.some((c) => !c)) return null;
    if (stops.every((c) => c.a >= 1)) return stops.slice(0, 16);
    if (!below) return null;
    return stops.flatMap((c) => (c.a >= 1 ? [c] : below.map((b) => over(c, b)))).slice(0, 16);
  };

  // `el`'s opacity times each of its `filter: opacity()`, times its parent's effective opacity.
  const opacityOf = (el) => {
    const f = factsOf(el);
    if (f.opacityAll === undefined) {
      let own = f.opacity === '' ? 1 : Number(f.opacity);
      if (f.filter && f.filter !== 'none') {
        for (const [, n, pct] of f.filter.matchAll(/opacity\(([\d.]+)(%?)\)/g)) own *= pct ? n / 100 : Number(n);
      }
      const parent = parentOf(el);
      f.opacityAll = parent ? own * opacityOf(parent) : own;
    }
    return f.opacityAll;
  };

  const fullyClipped = (s) => {
    if (/rect\(\s*0(px)?[ ,]+0(px)?[ ,]+0(px)?[ ,]+0(px)?\s*\)/.test(s.clip)) return true;
    const cp = s.clipPath;
    if (!cp || cp === 'none') return false;
    if (/inset\(\s*(50%|100%)/.test(cp)) return true;
    return /(circle|ellipse)\(\s*0(px|%)?[\s)]/.test(cp) || /polygon\(\s*0(px)?\s+0(px)?\s*\)/.test(cp);
  };

  // A mask of any kind: what it lets show is not worked out (a transparent gradient hides all).
  const masked = (s) => [s.maskImage, s.webkitMaskImage].some((m) => m && m !== 'none');

  // A viewport rectangle in page coordinates (the walk is synchronous: scrolling cannot move).
  const [sx, sy] = [scrollX, scrollY];
  const pageBox = (r) => ({ left: r.left + sx, top: r.top + sy, right: r.right + sx, bottom: r.bottom + sy });
  const boxOf = (el) => {
    const f = factsOf(el);
    f.box ??= pageBox(el.getBoundingClientRect());
    return f.box;
  };
  // `el`'s border and padding boxes.
  const boxesOf = (el) => {
    const [border, s] = [boxOf(el), factsOf(el).s];
    const width = (side) => parseFloat(s[`border${side}Width`]) || 0;
    const padding = {
      left: border.left + width('Left'), top: border.top + width('Top'),
      right: border.right - width('Right'), bottom: border.bottom - width('Bottom'),
    };
    return { border, padding };
  };

  // The area in which `el`'s in-flow content can show: where its own box can, cut by its own
  // clipping (not the root's or body's: their overflow is the viewport's).
  const contentAreaOf = (el) => {
    const f = factsOf(el);
    if (!f.contentArea) {
      const area = boxAreaOf(el);
      const clip = el === doc || el === document.body ? null : clipOf(f, () => boxesOf(el));
      f.contentArea = clip ? intersect(area, clip) : area;
    }
    return f.contentArea;
  };
  // The area in which `el`'s own box can show: its parent's content area, or for an absolutely
  // positioned box its containing block's (a fixed box escapes all clipping but the page's).
  const boxAreaOf = (el) => {
    const { position } = factsOf(el);
    if (position === 'fixed') return PAGE;
    const parent = position === 'absolute' ? el.offsetParent : parentOf(el);
    return parent ? contentAreaOf(parent) : PAGE;
  };

  // Whether the element itself hides its subtree (ancestors are checked by the callers).
  const hiddenElement = (el) => {
    if (SKIP_TAGS.has(el.tagName.toUpperCase())) return true;
    if (el.hidden || el.getAttribute('aria-hidden') === 'true') return true;
    const f = factsOf(el);
    if (f.display === 'none' || f.visibility === 'hidden' || f.visibility === 'collapse') return true;
    if (opacityOf(el) < MIN_OPACITY) return true;
    if (fullyClipped(f) || masked(f.s)) return true;
    if (f.display === 'contents') return false;
    const box = boxOf(el);
    const [width, height] = [box.right - box.left, box.bottom - box.top];
    const clips = CLIPPING.has(f.overflowX) || CLIPPING.has(f.overflowY);
    // A (near) zero-size box hides its content when it clips its overflow; an empty-sized box
    // with no element children has nothing to show.
    if (clips && (width <= 1 || height <= 1)) return true;
    if (width <= 0 && height <= 0 && !el.firstElementChild) return true;
    // Entirely outside the area its ancestors let it show (at most the page: e.g. left:-9999px).
    const area = boxAreaOf(el);
    const sized = width > 0 && height > 0;
    if (sized ? box.right <= area.left || box.bottom <= area.top : box.right < area.left || box.bottom < area.top) return true;
    return box.left >= area.right || box.top >= area.bottom;
  };

  // Whether `el` or any ancestor hides it (cached per element).
  const hiddenWithAncestors = (el) => {
    if (!el || el.nodeType !== 1) return false;
    const f = factsOf(el);
    f.hiddenAll ??= hiddenElement(el) || hiddenWithAncestors(parentOf(el));
    return f.hiddenAll;
  };

  // Whether the text directly inside `el` is unreadable: tiny, or too faint on its background.
  const unreadableText = (el) => {
    const f = factsOf(el);
    f.unreadable ??= tinyOrFaint(el, f.s);
    return f.unreadable;
  };
  const tinyOrFaint = (el, s) => {
    if (parseFloat(s.fontSize) < MIN_FONT_PX) return true;
    const fg = parseColor(s.webkitTextFillColor || s.color);
    if (!fg) return false;
    const backgrounds = backgroundOf(el);
    return Boolean(backgrounds) && backgrounds.every((bg) => contrastRatio(over(fg, bg), bg) < MIN_CONTRAST);
  };

  // The character ranges of the text node `node`, drawn inside `el`, that show inside the area
  // `el`'s content can show (form controls' text is drawn elsewhere: kept whole).
  let range;
  const rectsIn = (node) => (a, b) => {
    range.setStart(node, a);
    range.setEnd(node, b);
    return range.getClientRects();
  };
  const shownSpansOf = (node, el) => {
    const text = node.nodeValue;
    if (FORM_TEXT.has(el.tagName.toUpperCase())) return [[0, text.length]];
    range ??= document.createRange();
    // The line boxes are in viewport coordinates: so is the area they are compared with.
    const area = contentAreaOf(el);
    const seen = { left: area.left - sx, top: area.top - sy, right: area.right - sx, bottom: area.bottom - sy };
    return shownSpans(text, rectsIn(node), seen, MIN_FONT_PX);
  };

  // The part of the text node `node`, drawn inside the visible element `el`, that the user can
  // read, between the offsets `from` and `to`: '' when none; a space where a hidden part was
  // cut out (lines past a line clamp or a clipping box's edge, text past an ellipsis).
  const shownText = (node, el, from = 0, to = node.nodeValue.length) => {
    if (unreadableText(el)) return '';
    const parts = [];
    for (const [a, b] of shownSpansOf(node, el)) {
      if (Math.max(a, from) < Math.min(b, to)) parts.push(node.nodeValue.slice(Math.max(a, from), Math.min(b, to)));
    }
    return parts.join(' ');
  };

  // What the user can read of the text node `node` between `from` and `to` ('' when nothing).
  const visibleTextOf = (node, from, to) => {
    const el = node.parentElement;
    return el && !hiddenWithAncestors(el) ? shownText(node, el, from, to) : '';
  };
  // Whether some of the text node `node` is something the user can read.
  const visibleTextNode = (node) => /\S/.test(visibleTextOf(node));

  // Line breaks an element adds before and after its text, as innerText does: two for <p>,
  // one for other blocks, a space for table cells, none for inline boxes.
  const breakOf = (el) => {
    const display = factsOf(el).display;
    if (INLINE_DISPLAYS.has(display)) return '';
    if (display === 'table-cell') return ' ';
    return el.tagName === 'P' ? '\n\n' : '\n';
  };

  const isBlock = (el) => !INLINE_DISPLAYS.has(factsOf(el).display);

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
          if (node.nodeValue.trim()) push(shownText(node, el));
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

  return {
    hiddenElement, hiddenWithAncestors, shownText, visibleTextOf, visibleTextNode, visibleText, isBlock, normalize,
  };
};
