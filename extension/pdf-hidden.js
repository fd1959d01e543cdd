// @ts-check
// Text a PDF draws invisibly, from a page's PDF.js operator list (`page.getOperatorList()`):
// PDF.js's text content does not say how text is drawn, so text drawn with text rendering
// mode 3 or 7 (neither filled nor stroked) would otherwise read as ordinary text, and a
// PDF could carry instructions the reader never sees. Such text is dropped, except where an
// image is painted under it: an OCR'd scan's text layer is invisible text over the page's
// image, and is the only text it has. Pure: no PDF.js import (the operator codes come in as
// `ops`, pdfjs.OPS), no DOM, so the unit tests (tests/unit/pdf-hidden.test.mjs) run it on
// PDF.js's output directly.
//
// The operator list is walked with the graphics state PDF.js keeps (save/restore, the
// current transform, form XObjects, the text matrix and text state), enough to place each
// run of text: where it starts and ends on the page, in the page space of the text items'
// `transform`. Glyph widths are taken in thousandths of the type size (Type 3 fonts with
// another font matrix are placed approximately). PDF.js joins a visible run and an invisible
// run that continues it on the same line into one text item: such an item is dropped whole
// (the visible words with it), since its text cannot be split where the invisible run began.

/** @typedef {number[]} Matrix [a, b, c, d, e, f] */
/** @typedef {{x0: number, y0: number, x1: number, y1: number, size: number}} Run a run of
 * text: its baseline from (x0, y0) to (x1, y1) on the page, and its type size there */
/** @typedef {{x0: number, y0: number, x1: number, y1: number}} Box */

const IDENTITY = [1, 0, 0, 1, 0, 0];

/** `m` then `n` (row vectors, as PDF writes them: a point p goes to p m n). */
const times = (m, n) => [
  m[0] * n[0] + m[1] * n[2],
  m[0] * n[1] + m[1] * n[3],
  m[2] * n[0] + m[3] * n[2],
  m[2] * n[1] + m[3] * n[3],
  m[4] * n[0] + m[5] * n[2] + n[4],
  m[4] * n[1] + m[5] * n[3] + n[5],
];

/** The point (x, y) through `m`. */
const apply = (m, x, y) => [x * m[0] + y * m[2] + m[4], x * m[1] + y * m[3] + m[5]];

/** A matrix argument as a plain array (PDF.js passes typed arrays and arrays). */
const matrix = (value) => (value && value.length >= 6 ? Array.from(value).slice(0, 6).map(Number) : null);

/** Text rendering modes that paint nothing: 3 (invisible) and 7 (clip only). */
const INVISIBLE_MODES = new Set([3, 7]);

/**
 * The runs of invisible text on a page and the boxes of the images painted on it.
 * @param {ArrayLike<number>} fnArray the operator list's operators
 * @param {ArrayLike<any>} argsArray their arguments
 * @param {Record<string, number>} ops PDF.js's operator codes (pdfjs.OPS)
 * @returns {{hidden: Run[], images: Box[]}}
 */
export function pageMarks(fnArray, argsArray, ops) {
  const code = (name) => ops[name] ?? -1;
  const O = {
    save: code('save'), restore: code('restore'), transform: code('transform'),
    formBegin: code('paintFormXObjectBegin'), formEnd: code('paintFormXObjectEnd'),
    beginText: code('beginText'), setTextMatrix: code('setTextMatrix'), moveText: code('moveText'),
    setLeadingMoveText: code('setLeadingMoveText'), nextLine: code('nextLine'), setLeading: code('setLeading'),
    setFont: code('setFont'), setCharSpacing: code('setCharSpacing'), setWordSpacing: code('setWordSpacing'),
    setHScale: code('setHScale'), setMode: code('setTextRenderingMode'), showText: code('showText'),
    showSpacedText: code('showSpacedText'),
  };
  const imageOps = new Set(['paintImageXObject', 'paintInlineImageXObject', 'paintImageMaskXObject',
    'paintImageXObjectRepeat', 'paintImageMaskXObjectRepeat', 'paintSolidColorImageMask',
    'paintInlineImageXObjectGroup', 'paintImageMaskXObjectGroup'].map(code));
  /** The graphics state's parts that matter here (q/Q save and restore them). */
  let gs = { ctm: IDENTITY, mode: 0, size: 0, charSpacing: 0, wordSpacing: 0, hScale: 1, leading: 0 };
  const stack = [];
  let tm = IDENTITY;
  let tlm = IDENTITY;
  /** @type {Run[]} */
  const hidden = [];
  /** @type {Box[]} */
  const images = [];
  const moveText = (x, y) => {
    tlm = times([1, 0, 0, 1, x, y], tlm);
    tm = tlm;
  };
  for (let i = 0; i < fnArray.length; i += 1) {
    const fn = fnArray[i];
    const args = argsArray[i] ?? [];
    if (fn === O.save) stack.push(gs);
    else if (fn === O.restore) gs = stack.pop() ?? gs;
    else if (fn === O.transform) {
      const m = matrix(args);
      if (m) gs = { ...gs, ctm: times(m, gs.ctm) };
    } else if (fn === O.formBegin) {
      stack.push(gs);
      const m = matrix(args[0]);
      if (m) gs = { ...gs, ctm: times(m, gs.ctm) };
    } else if (fn === O.formEnd) gs = stack.pop() ?? gs;
    else if (fn === O.beginText) {
      tm = IDENTITY;
      tlm = IDENTITY;
    } else if (fn === O.setTextMatrix) {
      const m = matrix(args[0]) ?? matrix(args);
      if (m) {
        tm = m;
        tlm = m;
      }
    } else if (fn === O.moveText) moveText(Number(args[0]) || 0, Number(args[1]) || 0);
    else if (fn === O.setLeadingMoveText) {
      gs = { ...gs, leading: -(Number(args[1]) || 0) };
      moveText(Number(args[0]) || 0, Number(args[1]) || 0);
    } else if (fn === O.nextLine) moveText(0, -gs.leading);
    else if (fn === O.setLeading) gs = { ...gs, leading: Number(args[0]) || 0 };
    else if (fn === O.setFont) gs = { ...gs, size: Number(args[1]) || 0 };
    else if (fn === O.setCharSpacing) gs = { ...gs, charSpacing: Number(args[0]) || 0 };
    else if (fn === O.setWordSpacing) gs = { ...gs, wordSpacing: Number(args[0]) || 0 };
    else if (fn === O.setHScale) gs = { ...gs, hScale: (Number(args[0]) || 0) / 100 };
    else if (fn === O.setMode) gs = { ...gs, mode: Number(args[0]) || 0 };
    else if (fn === O.showText || fn === O.showSpacedText) {
      const glyphs = Array.isArray(args[0]) ? args[0] : [];
      let advance = 0;
      for (const glyph of glyphs) {
        if (typeof glyph === 'number') advance -= (glyph * gs.size) / 1000;
        else if (glyph) {
          advance += ((Number(glyph.width) || 0) * gs.size) / 1000 + gs.charSpacing + (glyph.isSpace ? gs.wordSpacing : 0);
        }
      }
      advance *= gs.hScale;
      if (INVISIBLE_MODES.has(gs.mode)) {
        const m = times(tm, gs.ctm);
        const [x0, y0] = apply(m, 0, 0);
        const [x1, y1] = apply(m, advance, 0);
        hidden.push({ x0, y0, x1, y1, size: Math.abs(gs.size) * (Math.hypot(m[2], m[3]) || 1) });
      }
      tm = times([1, 0, 0, 1, advance, 0], tm);
    } else if (imageOps.has(fn)) {
      const corners = [[0, 0], [1, 0], [0, 1], [1, 1]].map(([x, y]) => apply(gs.ctm, x, y));
      const xs = corners.map((c) => c[0]);
      const ys = corners.map((c) => c[1]);
      images.push({ x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs), y1: Math.max(...ys) });
    }
  }
  return { hidden, images };
}

/** Whether the point (x, y) lies in `box` (a point's worth of slack). */
const inside = (box, x, y) => x >= box.x0 - 1 && x <= box.x1 + 1 && y >= box.y0 - 1 && y <= box.y1 + 1;

/** Whether a point (x, y) lies on `run`: on its baseline, from its start to before its end. */
function startsOn(run, x, y) {
  const dx = run.x1 - run.x0;
  const dy = run.y1 - run.y0;
  const length = Math.hypot(dx, dy);
  const slack = Math.max(run.size, 1) * 0.5;
  if (length < 1e-6) return Math.hypot(x - run.x0, y - run.y0) <= slack;
  const along = ((x - run.x0) * dx + (y - run.y0) * dy) / length;
  const across = Math.abs((y - run.y0) * dx - (x - run.x0) * dy) / length;
  return across <= slack && along >= -slack && along < length - 0.1;
}

/**
 * The text items a reader sees: without those that start on a run of invisible text or that
 * such a run begins inside of, unless an image is painted under that run (its middle inside
 * the image's box).
 * @template {{transform: number[], width?: number}} T
 * @param {T[]} items PDF.js text items (marked-content entries, which have no transform, pass)
 * @param {{hidden: Run[], images: Box[]}} marks what `pageMarks` found on the page
 * @returns {T[]}
 */
export function visibleItems(items, { hidden, images }) {
  const dropped = hidden.filter((run) => {
    const x = (run.x0 + run.x1) / 2;
    const y = (run.y0 + run.y1) / 2;
    return !images.some((box) => inside(box, x, y));
  });
  if (!dropped.length) return items;
  return items.filter((item) => {
    if (!Array.isArray(item?.transform)) return true;
    const [a, b, c, d, x, y] = item.transform.map(Number);
    if (dropped.some((run) => startsOn(run, x, y))) return false;
    // An item that an invisible run begins inside of (PDF.js joined them).
    const scale = Math.hypot(a, b) || 1;
    const width = Number(item.width) || 0;
    const along = { x0: x, y0: y, x1: x + (a / scale) * width, y1: y + (b / scale) * width, size: Math.hypot(c, d) || scale };
    return !dropped.some((run) => startsOn(along, run.x0, run.y0));
  });
}
