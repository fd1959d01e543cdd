// PDFs made at test time (pdf-lib, a devDependency) and a loopback server for them: each
// route serves its body with its content type, and can answer differently after its first
// request (Chrome's viewer loads the PDF once; KnowledgeLens downloads it again in the tab,
// so a 401 or an HTML body on the second request is what a test of those errors needs).

import { createServer } from 'node:http';
import { PDFDocument, StandardFonts, TextRenderingMode, rgb, setTextRenderingMode } from 'pdf-lib';
import { listenOnLoopback } from './static-server.mjs';

/**
 * A PDF whose page n holds the paragraphs `pages[n - 1]` (each an array of lines, drawn in
 * `size` pt Helvetica (11), `leading` pt apart (14); paragraphs 12 pt further apart), with a
 * running header and a page number footer on every page.
 * @param {string[][][]} pages
 * @param {{title?: string, header?: string, size?: number, leading?: number}} [options]
 */
export async function makePdf(pages, { title = 'Test paper', header = 'Journal of Test Tides', size = 11, leading = 14 } = {}) {
  const doc = await PDFDocument.create();
  doc.setTitle(title);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  pages.forEach((paragraphs, i) => {
    const page = doc.addPage([595, 842]);
    page.drawText(header, { x: 72, y: 800, size: 9, font });
    let y = 760;
    for (const lines of paragraphs) {
      for (const line of lines) {
        page.drawText(line, { x: 72, y, size, font });
        y -= leading;
      }
      y -= 12;
    }
    page.drawText(String(i + 1), { x: 290, y: 40, size: 9, font });
  });
  return Buffer.from(await doc.save());
}

/** A 2 x 2 grey PNG: a scanned page's image, as far as a test goes. */
const GREY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAAAAABX3VL4AAAADklEQVR4nGNgYGBgYAAAAAUAAXpeqz8AAAAASUVORK5CYII=', 'base64');

/**
 * A two-page PDF with text drawn invisibly (text rendering mode 3): page 1 has the lines
 * `visible` drawn as usual and `hidden` drawn invisibly on the blank page; page 2 is a "scan":
 * an image over the whole page and the lines `ocr` drawn invisibly over it (an OCR text layer).
 * @param {{visible: string[], hidden: string[], ocr: string[]}} lines
 */
export async function makeInvisibleTextPdf({ visible, hidden, ocr }) {
  const doc = await PDFDocument.create();
  doc.setTitle('Minutes of the harbour board');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const image = await doc.embedPng(GREY_PNG);
  const invisibly = (page, text, y) => {
    page.pushOperators(setTextRenderingMode(TextRenderingMode.Invisible));
    page.drawText(text, { x: 72, y, size: 11, font });
    page.pushOperators(setTextRenderingMode(TextRenderingMode.Fill));
  };
  const first = doc.addPage([595, 842]);
  visible.forEach((text, i) => first.drawText(text, { x: 72, y: 760 - i * 14, size: 11, font }));
  hidden.forEach((text, i) => invisibly(first, text, 500 - i * 14));
  const scan = doc.addPage([595, 842]);
  scan.drawImage(image, { x: 0, y: 0, width: 595, height: 842 });
  ocr.forEach((text, i) => invisibly(scan, text, 760 - i * 14));
  return Buffer.from(await doc.save());
}

/** A PDF of `count` pages with drawn shapes and no text at all (a scan, as far as text goes). */
export async function makeImageOnlyPdf(count = 2) {
  const doc = await PDFDocument.create();
  for (let i = 0; i < count; i += 1) {
    const page = doc.addPage([595, 842]);
    for (let row = 0; row < 30; row += 1) {
      page.drawRectangle({ x: 72, y: 760 - row * 20, width: 300 + (row % 5) * 20, height: 8, color: rgb(0.2, 0.2, 0.2) });
    }
  }
  return Buffer.from(await doc.save());
}

/**
 * Serves `routes` on `host` (127.0.0.1 unless given) until `close()`: each path maps to
 * `{body, type}` (200) or to `{first, then}` (the first request gets `first`, later ones
 * `then`; each `{status?, body, type, length?, hold?, hang?}`). The body goes out chunked
 * unless `length` (a Content-Length header is sent); with `hold`, its first 64 KB go out and
 * the rest waits until `release(path)`; with `hang`, its first 64 KB go out and the body never
 * ends. `url(path)` gives an address (paths start with `/`); `hits(path)` how often it was
 * requested; `holding(path)` whether a response waits for `release(path)`.
 */
export async function servePdfs(routes, { host = '127.0.0.1' } = {}) {
  const hits = new Map();
  /** The responses held back, by path: each a function sending the rest. */
  const held = new Map();
  const server = createServer((req, res) => {
    const { pathname } = new URL(req.url, 'http://127.0.0.1');
    const route = routes[pathname];
    const n = (hits.get(pathname) ?? 0) + 1;
    hits.set(pathname, n);
    const answer = !route ? { status: 404, body: 'not found', type: 'text/plain' } : route.first ? (n === 1 ? route.first : route.then) : route;
    const headers = { 'content-type': answer.type, 'cache-control': 'no-store' };
    if (answer.length) headers['content-length'] = String(Buffer.byteLength(answer.body));
    res.writeHead(answer.status ?? 200, headers);
    if (!answer.hold && !answer.hang) {
      res.end(answer.body);
      return;
    }
    const body = Buffer.from(answer.body);
    const head = Math.min(64 * 1024, body.length - 1);
    res.write(body.subarray(0, head));
    if (answer.hold) held.set(pathname, () => res.end(body.subarray(head)));
  });
  const served = await listenOnLoopback(server, host);
  return {
    ...served,
    hits: (path) => hits.get(path) ?? 0,
    holding: (path) => held.has(path),
    release: (path) => {
      held.get(path)?.();
      held.delete(path);
    },
  };
}
