// The pure arithmetic of content/visible.js (`__klVisibilityMath`), run in a bare node
// context: WCAG contrast and luminance, translucent colours composed over the background, the
// clipping area an element's style gives (overflow per axis, contain: paint, clip-path
// inset() with px, % and calc(), clip: rect()), and whether a text's line boxes show enough
// of themselves inside an area, which characters of a text show (a fake layout: lines clamped,
// clipped, cut at the box's edge; a long text costs O(lines · log n) rect reads), and the
// colour stops of a gradient background. The e2e tier (tests/e2e/reader.test.mjs) runs it in Chromium.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import vm from 'node:vm';

const SOURCE = readFileSync(new URL('../../extension/content/visible.js', import.meta.url), 'utf8');
const context = vm.createContext({});
vm.runInContext(SOURCE, context);
const {
  luminance, contrastRatio, over, lengthOf, insetArea, rectArea, clipOf, showsText, shownSpans: spansIn, gradientStops,
} = context.__klVisibilityMath;

const rgb = (hex) => ({ r: parseInt(hex.slice(1, 3), 16), g: parseInt(hex.slice(3, 5), 16), b: parseInt(hex.slice(5, 7), 16), a: 1 });
const near = (actual, expected, digits = 2) => assert.equal(actual.toFixed(digits), expected.toFixed(digits), `${actual} is not ${expected}`);
const WHITE = rgb('#ffffff');
const BOX = { left: 100, top: 50, right: 300, bottom: 150 }; // 200 x 100

test('relative luminance and contrast ratio are WCAG 2\'s', () => {
  near(luminance(WHITE), 1, 6);
  near(luminance(rgb('#000000')), 0, 6);
  near(luminance(rgb('#808080')), 0.2158605, 6);
  near(contrastRatio(rgb('#000000'), WHITE), 21);
  near(contrastRatio(WHITE, rgb('#000000')), 21);
  near(contrastRatio(WHITE, WHITE), 1);
  // The AA grey: 4.54:1 on white, far above the 1.5:1 floor (kept).
  near(contrastRatio(rgb('#767676'), WHITE), 4.54);
  // Under the floor (dropped): near-white on white, and the fixture's grey on half-black.
  assert.ok(contrastRatio(rgb('#f2f2f2'), WHITE) < 1.5);
  assert.ok(contrastRatio(rgb('#777777'), over({ r: 0, g: 0, b: 0, a: 0.5 }, WHITE)) < 1.5);
  // Just either side of 1.5:1 on white.
  assert.ok(contrastRatio(rgb('#d4d4d4'), WHITE) < 1.5);
  assert.ok(contrastRatio(rgb('#cccccc'), WHITE) > 1.5);
});

test('translucent colours are composed over the colour below them', () => {
  assert.deepEqual({ ...over({ r: 0, g: 0, b: 0, a: 0.5 }, WHITE) }, { r: 127.5, g: 127.5, b: 127.5, a: 1 });
  assert.deepEqual({ ...over({ r: 10, g: 20, b: 30, a: 1 }, WHITE) }, { r: 10, g: 20, b: 30, a: 1 });
  assert.deepEqual({ ...over({ r: 0, g: 0, b: 0, a: 0 }, rgb('#102030')) }, { r: 16, g: 32, b: 48, a: 1 });
  // Transparent text is the background itself: contrast 1.
  near(contrastRatio(over({ r: 0, g: 0, b: 0, a: 0 }, WHITE), WHITE), 1);
});

test('computed lengths: px, percentages of the reference, and calc() sums', () => {
  assert.equal(lengthOf('0', 200), 0);
  assert.equal(lengthOf('12px', 200), 12);
  assert.equal(lengthOf('25%', 200), 50);
  assert.equal(lengthOf('calc(100% - 1px)', 200), 199);
  assert.equal(lengthOf('calc(50% + 2.5px)', 200), 102.5);
});

test('clip-path inset() gives the part of the border box it shows', () => {
  const area = (cp) => ({ ...insetArea(cp, BOX) });
  assert.deepEqual(area('inset(0px)'), BOX);
  assert.deepEqual(area('inset(50%)'), { left: 200, top: 100, right: 200, bottom: 100 });
  assert.deepEqual(area('inset(0px 0px 0px 60%)'), { left: 220, top: 50, right: 300, bottom: 150 });
  assert.deepEqual(area('inset(10px 20px)'), { left: 120, top: 60, right: 280, bottom: 140 });
  assert.deepEqual(area('inset(10px 20px 30px)'), { left: 120, top: 60, right: 280, bottom: 120 });
  assert.deepEqual(area('inset(calc(100% - 1px) 0px 0px) border-box'), { left: 100, top: 149, right: 300, bottom: 150 });
  assert.deepEqual(area('inset(10px round 5px)'), { left: 110, top: 60, right: 290, bottom: 140 });
  assert.equal(insetArea('circle(40%)', BOX), null);
});

test('clip: rect() offsets are from the border box corner; auto is its edge', () => {
  assert.deepEqual({ ...rectArea('rect(0px, 0px, 0px, 0px)', BOX) }, { left: 100, top: 50, right: 100, bottom: 50 });
  assert.deepEqual({ ...rectArea('rect(10px, 50px, 20px, 5px)', BOX) }, { left: 105, top: 60, right: 150, bottom: 70 });
  assert.deepEqual({ ...rectArea('rect(auto, auto, auto, auto)', BOX) }, BOX);
});

test('an element\'s own clipping: overflow per axis, contain: paint, clip-path, clip', () => {
  const PADDING = { left: 102, top: 52, right: 298, bottom: 148 };
  const style = (over) => ({
    display: 'block', position: 'static', overflowX: 'visible', overflowY: 'visible', contain: 'none', clip: 'auto', clipPath: 'none', ...over,
  });
  let asked = 0;
  const boxes = () => { asked += 1; return { border: BOX, padding: PADDING }; };
  const clip = (over) => (({ left, top, right, bottom }) => ({ left, top, right, bottom }))(clipOf(style(over), boxes) ?? {});
  // Nothing clips: no area, and no box was measured.
  assert.equal(clipOf(style({ overflowX: 'auto', overflowY: 'scroll' }), boxes), null);
  assert.equal(clipOf(style({ clip: 'rect(0px, 0px, 0px, 0px)' }), boxes), null, 'clip applies to positioned boxes only');
  assert.equal(clipOf(style({ display: 'contents', overflowX: 'hidden', overflowY: 'hidden' }), boxes), null);
  assert.equal(clipOf(style({ display: 'inline', overflowX: 'hidden', overflowY: 'hidden' }), boxes), null);
  assert.equal(asked, 0);
  assert.deepEqual(clip({ overflowX: 'hidden', overflowY: 'hidden' }), PADDING);
  assert.deepEqual(clip({ overflowX: 'clip', overflowY: 'visible' }), { left: 102, top: -Infinity, right: 298, bottom: Infinity });
  assert.deepEqual(clip({ overflowX: 'auto', overflowY: 'hidden' }), { left: -Infinity, top: 52, right: Infinity, bottom: 148 });
  assert.deepEqual(clip({ contain: 'paint' }), PADDING);
  assert.deepEqual(clip({ contain: 'strict' }), PADDING);
  assert.deepEqual(clip({ clipPath: 'inset(0px 0px 0px 60%)' }), { left: 220, top: 50, right: 300, bottom: 150 });
  assert.deepEqual(clip({ position: 'absolute', clip: 'rect(10px, 50px, 20px, 5px)' }), { left: 105, top: 60, right: 150, bottom: 70 });
  // Both: the part both show.
  assert.deepEqual(clip({ overflowX: 'hidden', overflowY: 'hidden', clipPath: 'inset(0px 0px 0px 60%)' }), { left: 220, top: 52, right: 298, bottom: 148 });
});

test('text shows when one line box has a part 6 px high and 6 px wide (or whole) inside the area', () => {
  const line = (left, top, right, bottom) => ({ left, top, right, bottom });
  const AREA = { left: 0, top: 0, right: 400, bottom: 27 };
  assert.equal(showsText([line(10, 0, 200, 20)], AREA, 6), true);
  // Pushed off to the left (text-indent: -9999px), or below a one-line box.
  assert.equal(showsText([line(-9989, 0, -9800, 20)], AREA, 6), false);
  assert.equal(showsText([line(10, 27, 200, 47)], AREA, 6), false);
  // One of several lines inside is enough.
  assert.equal(showsText([line(10, 27, 200, 47), line(10, 5, 200, 25)], AREA, 6), true);
  // A sliver: 3 px of the line's height, or 2 px of its width, show.
  assert.equal(showsText([line(10, 24, 200, 44)], AREA, 6), false);
  assert.equal(showsText([line(398, 0, 500, 20)], AREA, 6), false);
  // A narrow glyph (4 px wide) shows whole.
  assert.equal(showsText([line(10, 0, 14, 20)], AREA, 6), true);
  // No line boxes: nothing is drawn.
  assert.equal(showsText([], AREA, 6), false);
});

// A fake layout of `text`: `perLine` characters a line, each 8 px wide and 20 px high, lines
// 20 px apart from (0, 0); `rectsOf` counts its reads in `reads`.
const layout = (text, perLine) => {
  const box = (i) => ({ line: Math.floor(i / perLine), x: (i % perLine) * 8 });
  const measured = {
    reads: 0,
    rectsOf: (a, b) => {
      measured.reads += 1;
      const rects = [];
      for (let i = a; i < b;) {
        const { line, x } = box(i);
        const end = Math.min(b, (line + 1) * perLine);
        rects.push({ left: x, top: line * 20, right: x + (end - i) * 8, bottom: line * 20 + 20 });
        i = end;
      }
      return rects;
    },
  };
  return measured;
};
// The spans as this realm's arrays (the script ran in another context).
const shownSpans = (...args) => JSON.parse(JSON.stringify(spansIn(...args)));
const pieces = (text, spans) => spans.map(([a, b]) => text.slice(a, b));

test('only the characters whose boxes show are kept: clamped lines, a clipped box, past the edge', () => {
  const text = 'first line.next lines.third line!'; // 11 characters a line
  const whole = layout(text, 11);
  assert.deepEqual(shownSpans(text, whole.rectsOf, { left: 0, top: 0, right: 400, bottom: 100 }, 6), [[0, 33]]);
  assert.equal(whole.reads, 1, 'a text that shows whole costs one read');
  const none = layout(text, 11);
  assert.deepEqual(shownSpans(text, none.rectsOf, { left: 0, top: 200, right: 400, bottom: 300 }, 6), []);
  assert.equal(none.reads, 1, 'a text that shows nothing costs one read');
  // A box one line high (its last 2 px cut off: still shown); a box two lines high.
  assert.deepEqual(pieces(text, shownSpans(text, layout(text, 11).rectsOf, { left: 0, top: 0, right: 400, bottom: 18 }, 6)), ['first line.']);
  assert.deepEqual(pieces(text, shownSpans(text, layout(text, 11).rectsOf, { left: 0, top: 0, right: 400, bottom: 40 }, 6)), ['first line.next lines.']);
  // Scrolled: only the last line shows.
  assert.deepEqual(pieces(text, shownSpans(text, layout(text, 11).rectsOf, { left: 0, top: 40, right: 400, bottom: 60 }, 6)), ['third line!']);
  // One line cut at the box's right edge (nowrap, ellipsis): a character shows when 6 px of it do.
  const row = 'visible start, hidden end';
  assert.deepEqual(pieces(row, shownSpans(row, layout(row, 100).rectsOf, { left: 0, top: 0, right: 15 * 8 + 6, bottom: 20 }, 6)), ['visible start, h']);
  assert.deepEqual(pieces(row, shownSpans(row, layout(row, 100).rectsOf, { left: 0, top: 0, right: 15 * 8 + 5, bottom: 20 }, 6)), ['visible start, ']);
  // White space alone is nothing.
  assert.deepEqual(shownSpans('   ', layout('   ', 11).rectsOf, { left: 0, top: 0, right: 400, bottom: 100 }, 6), []);
});

test('a long text cut after its first line costs O(lines · log n) reads, not one per character', () => {
  const text = 'word '.repeat(4000); // 20,000 characters, 200 lines of 100
  const measured = layout(text, 100);
  const spans = shownSpans(text, measured.rectsOf, { left: 0, top: 0, right: 800, bottom: 20 }, 6);
  assert.deepEqual(spans[0], [0, 100]);
  assert.ok(spans.every(([a, b]) => a < 100 || !/\S/.test(text.slice(a, b))), 'only white space past the first line');
  assert.ok(measured.reads <= 2 * Math.ceil(Math.log2(text.length)) + 2, `${measured.reads} reads`);
  // Every other line hidden (a pathological clip): still far fewer reads than characters.
  const striped = layout(text, 100);
  const aside = (r) => ({ ...r, left: r.left - 10000, right: r.right - 10000 });
  const stripe = { rectsOf: (a, b) => striped.rectsOf(a, b).map((r) => ((r.top / 20) % 2 ? aside(r) : r)) };
  const kept = shownSpans(text, stripe.rectsOf, { left: 0, top: 0, right: 800, bottom: 4000 }, 6);
  assert.equal(kept.filter(([a, b]) => /\S/.test(text.slice(a, b))).length, 100);
  assert.ok(striped.reads < 200 * 2 * Math.log2(text.length), `${striped.reads} reads`);
});

test('a gradient background gives its colour stops; an image makes the background unknown', () => {
  assert.deepEqual([...gradientStops('linear-gradient(rgb(255, 255, 255), rgb(255, 255, 255))')], ['rgb(255, 255, 255)', 'rgb(255, 255, 255)']);
  assert.deepEqual(
    [...gradientStops('radial-gradient(rgba(0, 0, 0, 0) 10%, oklch(0.5 0.1 30)), conic-gradient(from 90deg, color(srgb 1 0 0), rgb(0, 0, 255))')],
    ['rgba(0, 0, 0, 0)', 'oklch(0.5 0.1 30)', 'color(srgb 1 0 0)', 'rgb(0, 0, 255)'],
  );
  assert.equal(gradientStops('url("hero.jpg")'), null);
  assert.equal(gradientStops('url("a.png"), linear-gradient(rgb(0, 0, 0), rgb(0, 0, 0))'), null);
  assert.equal(gradientStops('image-set("a.png" 1x)'), null);
});
