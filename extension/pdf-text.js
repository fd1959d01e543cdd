// A PDF's text from PDF.js text items (`page.getTextContent().items`), by position: items
// on one baseline become a line, lines become paragraphs where the gap between them grows
// or the type size changes, a word hyphenated at a line end is joined again, a page in two
// columns is read column by column, and the lines at the top or bottom that repeat on most
// pages (running headers, footers, page numbers) are dropped. Pure: no PDF.js, no DOM, so
// the unit tests (tests/unit/pdf-text.test.mjs) give it items directly.
//
// The result is the text the worker reads as a page: each page starts with a form feed
// (PAGE_BREAK, `types::page::PAGE_BREAK` in Rust), paragraphs apart by a blank line.

/** What starts each page of the text. */
export const PAGE_BREAK = '\f';

/**
 * @typedef {{str: string, transform: number[], width: number, height?: number}} Item
 * @typedef {{text: string, x0: number, x1: number, y: number, size: number}} Line
 */

/** The lower quartile of `values` (0 for none): the usual line spacing, gaps aside. */
const lowerQuartile = (values) => {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 4)];
};

/** An item's position: left and right edge, baseline, type size. */
function placed(item) {
  const [a, b, c, d, e, f] = item.transform;
  const size = Math.hypot(c, d) || Math.hypot(a, b) || item.height || 1;
  return { text: item.str, x0: e, x1: e + (item.width || 0), y: f, size };
}

/** Whether two runs on one baseline need a space between them. */
function spaced(left, right) {
  if (/\s$/.test(left.text) || /^\s/.test(right.text)) return false;
  return right.x0 - left.x1 > 0.12 * Math.min(left.size, right.size);
}

/** Runs (in reading order, left to right) joined into one line. */
function joinRuns(runs) {
  let text = '';
  for (let i = 0; i < runs.length; i += 1) {
    if (i > 0 && spaced(runs[i - 1], runs[i])) text += ' ';
    text += runs[i].text;
  }
  return {
    text: text.replace(/\s+/g, ' ').trim(),
    x0: Math.min(...runs.map((r) => r.x0)),
    x1: Math.max(...runs.map((r) => r.x1)),
    y: runs[0].y,
    size: Math.max(...runs.map((r) => r.size)),
  };
}

/**
 * Where a page splits into two columns: an x in its middle third that (titles and footers
 * aside: at most two runs, or a tenth) no run crosses, with most runs on either side of it;
 * `null` for one column.
 */
function gutter(runs, pageWidth) {
  if (runs.length < 4 || !(pageWidth > 0)) return null;
  const lo = pageWidth / 3;
  const hi = (2 * pageWidth) / 3;
  let best = null;
  for (let x = lo; x <= hi; x += pageWidth / 90) {
    const crossing = runs.filter((r) => r.x0 < x && r.x1 > x).length;
    const left = runs.filter((r) => r.x1 <= x).length;
    const right = runs.filter((r) => r.x0 >= x).length;
    // A title or a footer may cross the gutter; the body may not.
    if (crossing <= Math.max(2, runs.length * 0.1) && left >= 2 && right >= 2 && left + right >= runs.length * 0.6) {
      const score = Math.min(left, right) - crossing * 4;
      if (!best || score > best.score) best = { x, score };
    }
  }
  return best ? best.x : null;
}

/**
 * The lines of one page, top to bottom, a two-column page's left column before its right
 * (lines across both, such as a title, where they stand: above or below the columns).
 * @param {Item[]} items PDF.js text items
 * @param {number} pageWidth the page's width in PDF units
 * @returns {Line[]}
 */
export function pageLines(items, pageWidth) {
  const runs = items.filter((it) => typeof it?.str === 'string' && it.str.trim() && Array.isArray(it.transform))
    .map(placed);
  const split = gutter(runs, pageWidth);
  const column = (r) => (split === null ? 0 : r.x1 <= split ? 1 : r.x0 >= split ? 2 : 0);
  const byColumn = [[], [], []];
  for (const r of runs) byColumn[column(r)].push(r);
  const linesOf = (group) => {
    const sorted = [...group].sort((a, b) => b.y - a.y || a.x0 - b.x0);
    const lines = [];
    let current = [];
    for (const r of sorted) {
      const last = current[current.length - 1];
      if (last && Math.abs(last.y - r.y) <= 0.4 * Math.min(last.size, r.size)) current.push(r);
      else {
        if (current.length) lines.push(current);
        current = [r];
      }
    }
    if (current.length) lines.push(current);
    return lines.map((line) => joinRuns(line.sort((a, b) => a.x0 - b.x0))).filter((l) => l.text);
  };
  const [across, left, right] = byColumn.map(linesOf);
  if (split === null) return across;
  const columnsTop = Math.max(...[...left, ...right].map((l) => l.y));
  const above = across.filter((l) => l.y > columnsTop);
  const below = across.filter((l) => l.y <= columnsTop);
  return [...above, ...left, ...right, ...below];
}

/** Longest line whose numbers are ignored when it is compared with other pages' lines. */
const SHORT_LINE = 40;

/** A line as compared across pages: a short one with its numbers as `#` ("Page 3 of 12" and
 * "Page 4 of 12" are one), a longer one as it is (body text often differs only in numbers). */
const shape = (text) => {
  const squeezed = text.replace(/\s+/g, ' ').trim().toLowerCase();
  return squeezed.length <= SHORT_LINE ? squeezed.replace(/\d+/g, '#') : squeezed;
};

/** How many lines at the top and at the bottom of a page may be a running header or footer. */
const EDGE_LINES = 2;

/**
 * `pages` (each a page's lines, top to bottom) without the running headers and footers:
 * a line among the first or last EDGE_LINES of a page whose shape (a short line's numbers
 * aside) is at the same edge of at least 60% of the pages (and of three or more). A lone page
 * number counts; body lines that differ only in their numbers do not.
 * @param {Line[][]} pages
 * @returns {Line[][]}
 */
export function dropRunningLines(pages) {
  if (pages.length < 3) return pages;
  const count = { top: new Map(), bottom: new Map() };
  const edges = (lines) => ({
    top: lines.slice(0, EDGE_LINES),
    bottom: lines.slice(Math.max(EDGE_LINES, lines.length - EDGE_LINES)),
  });
  for (const lines of pages) {
    for (const edge of ['top', 'bottom']) {
      for (const key of new Set(edges(lines)[edge].map((l) => shape(l.text)))) {
        count[edge].set(key, (count[edge].get(key) ?? 0) + 1);
      }
    }
  }
  const most = Math.max(3, Math.ceil(pages.length * 0.6));
  return pages.map((lines) => {
    const { top, bottom } = edges(lines);
    return lines.filter((l) => {
      const key = shape(l.text);
      const running = (top.includes(l) && count.top.get(key) >= most) || (bottom.includes(l) && count.bottom.get(key) >= most);
      return !running;
    });
  });
}

/** `next` joined to `text`: a word hyphenated at the line end is one word again. */
function joinLine(text, next) {
  if (/[\p{L}]-$/u.test(text) && /^\p{Ll}/u.test(next)) return text.slice(0, -1) + next;
  if (/\u00ad$/.test(text)) return text.slice(0, -1) + next;
  return `${text} ${next}`;
}

/**
 * The paragraphs of a page's lines: a new one where the baseline gap is over 1.4 times the
 * page's usual line spacing, where the type size changes by a fifth, or where the reading
 * order moves up (the next column).
 * @param {Line[]} lines
 * @returns {string[]}
 */
export function paragraphs(lines) {
  const gaps = [];
  for (let i = 1; i < lines.length; i += 1) {
    const gap = lines[i - 1].y - lines[i].y;
    if (gap > 0) gaps.push(gap);
  }
  const usual = lowerQuartile(gaps);
  const out = [];
  let text = '';
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    const prev = lines[i - 1];
    let starts = !prev;
    if (prev) {
      const gap = prev.y - line.y;
      const sizeChange = Math.abs(prev.size - line.size) > 0.2 * Math.max(prev.size, line.size);
      const tooFar = usual > 0 ? gap > usual * 1.4 : gap > prev.size * 1.8;
      starts = gap <= 0 || tooFar || sizeChange;
    }
    if (starts) {
      if (text) out.push(text);
      text = line.text;
    } else {
      text = joinLine(text, line.text);
    }
  }
  if (text) out.push(text);
  return out;
}

/**
 * The document's text from each page's paragraphs, NFKC-normalised (ligatures such as "ﬁ"
 * unfolded), whole pages only, at most `maxChars` characters.
 * @param {string[][]} pages each page's paragraphs
 * @param {number} maxChars
 * @returns {{text: string, pagesRead: number}}
 */
export function documentText(pages, maxChars) {
  let text = '';
  let pagesRead = 0;
  for (const paras of pages) {
    const page = `${PAGE_BREAK}${paras.join('\n\n').normalize('NFKC')}\n\n`;
    if (text.length + page.length > maxChars) break;
    text += page;
    pagesRead += 1;
  }
  return { text, pagesRead };
}
