// PDFs made at test time (pdf-lib, a devDependency) and a loopback server for them: each
// route serves its body with its content type, and can answer differently after its first
// request (Chrome's viewer loads the PDF once; KnowledgeLens downloads it again in the tab,
// so a 401 or an HTML body on the second request is what a test of those errors needs).

import { createServer } from 'node:http';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';
import { listenOnLoopback } from './static-server.mjs';

/**
 * A PDF whose page n holds the paragraphs `pages[n - 1]` (each an array of lines, drawn in
 * 11 pt Helvetica, 14 pt apart; paragraphs 26 pt apart), with a running header and a page
 * number footer on every page.
 * @param {string[][][]} pages
 * @param {{title?: string, header?: string}} [options]
 */
export async function makePdf(pages, { title = 'Test paper', header = 'Journal of Test Tides' } = {}) {
  const doc = await PDFDocument.create();
  doc.setTitle(title);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  pages.forEach((paragraphs, i) => {
    const page = doc.addPage([595, 842]);
    page.drawText(header, { x: 72, y: 800, size: 9, font });
    let y = 760;
    for (const lines of paragraphs) {
      for (const line of lines) {
        page.drawText(line, { x: 72, y, size: 11, font });
        y -= 14;
      }
      y -= 12;
    }
    page.drawText(String(i + 1), { x: 290, y: 40, size: 9, font });
  });
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
 * `then`; each `{status?, body, type}`). `url(path)` gives an address (paths start with
 * `/`); `hits(path)` how often it was requested.
 */
export async function servePdfs(routes, { host = '127.0.0.1' } = {}) {
  const hits = new Map();
  const server = createServer((req, res) => {
    const { pathname } = new URL(req.url, 'http://127.0.0.1');
    const route = routes[pathname];
    const n = (hits.get(pathname) ?? 0) + 1;
    hits.set(pathname, n);
    const answer = !route ? { status: 404, body: 'not found', type: 'text/plain' } : route.first ? (n === 1 ? route.first : route.then) : route;
    res.writeHead(answer.status ?? 200, { 'content-type': answer.type, 'cache-control': 'no-store' });
    res.end(answer.body);
  });
  const served = await listenOnLoopback(server, host);
  return { ...served, hits: (path) => hits.get(path) ?? 0 };
}
