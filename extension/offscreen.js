// The offscreen document (offscreen.html) that extracts a PDF's text with PDF.js (bundled in
// vendor/pdfjs/ by the build; no remote code, no eval). The worker creates it when a tab
// shows a PDF, never at start-up. content/pdf-fetch.js, in the PDF's tab, connects on
// PDF_PORT_NAME and sends {type: "open", title, url}. When this document has read (or is
// reading) the PDF of that tab's document (pdf-cache.js), the reply is its page at once (or
// when the read ends); else it is {need: "bytes"}, and the script sends {type: "start",
// size}, the bytes as base64 chunks ({type: "chunk", data}), then {type: "end"}. The page the
// worker reads is {title, url, text, reader: "pdf", lang, pages} or {error: {kind, detail}}.
// This document outlives the service worker, so a read cut by a worker stop is not redone.
// The PDF's text is data: it is never put into a DOM or run. Text drawn invisibly, where no
// image lies under it, is left out (pdf-hidden.js).

import * as pdfjs from './vendor/pdfjs/pdf.min.mjs';
import { PdfCache } from './pdf-cache.js';
import { pageMarks, visibleItems } from './pdf-hidden.js';
import { documentText, dropRunningLines, pageLines, paragraphs } from './pdf-text.js';
import { MAX_PAGE_CHARS, MAX_PDF_BYTES, PDF_PORT_NAME } from './protocol.gen.js';

const VENDOR = chrome.runtime.getURL('vendor/pdfjs/');
pdfjs.GlobalWorkerOptions.workerSrc = `${VENDOR}pdf.worker.min.mjs`;

/** Most pages read of one PDF (the text cap usually ends the read long before). */
const MAX_PDF_PAGES = 2_000;
/** Longest one extraction may take (ms), however many pages are left. */
const EXTRACT_DEADLINE_MS = 120_000;

const fail = (kind, detail = '') => ({ error: { kind, detail: String(detail).slice(0, 300) } });

/** The pages read so far, by the tab document they were read for. */
const cache = new PdfCache((/** @type {any} */ result) => Boolean(result?.error));

/** Decodes base64 `data` into `buffer` at `offset`; the new offset. */
function fill(buffer, offset, data) {
  const raw = atob(data);
  if (offset + raw.length > buffer.length) throw new Error('more bytes than announced');
  for (let i = 0; i < raw.length; i += 1) buffer[offset + i] = raw.charCodeAt(i);
  return offset + raw.length;
}

/** The page the worker reads, from the PDF in `bytes`. */
async function extract(bytes, meta) {
  const task = pdfjs.getDocument({
    data: bytes,
    isEvalSupported: false,
    cMapUrl: `${VENDOR}cmaps/`,
    cMapPacked: true,
    standardFontDataUrl: `${VENDOR}standard_fonts/`,
    wasmUrl: `${VENDOR}wasm/`,
    useSystemFonts: false,
    disableFontFace: true,
    enableXfa: false,
  });
  const doc = await task.promise;
  try {
    const pages = [];
    let chars = 0;
    // A PDF of many pages without text never fills the text cap: the pages read and the time
    // spent are capped too, so a hostile file cannot keep PDF.js busy for long.
    const last = Math.min(doc.numPages, MAX_PDF_PAGES);
    const until = Date.now() + EXTRACT_DEADLINE_MS;
    for (let n = 1; n <= last && chars <= MAX_PAGE_CHARS && Date.now() < until; n += 1) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      let items = /** @type {any[]} */ (content.items);
      // Text drawn invisibly is dropped unless an image lies under it (pdf-hidden.js): only
      // a page with text needs its operator list (annotations, which the text leaves out too,
      // aside).
      if (items.some((item) => typeof item?.str === 'string' && item.str.trim())) {
        const list = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
        items = visibleItems(items, pageMarks(list.fnArray, list.argsArray, pdfjs.OPS));
      }
      // Marked-content entries carry no text: pageLines skips every item without one.
      const lines = pageLines(items, page.view[2] - page.view[0]);
      chars += lines.reduce((sum, l) => sum + l.text.length + 1, 0);
      pages.push(lines);
      page.cleanup();
    }
    const paras = dropRunningLines(pages).map(paragraphs);
    const { text } = documentText(paras, MAX_PAGE_CHARS);
    if (!text.replace(/\f/g, '').trim()) return fail('scanned');
    let title = '';
    try {
      const info = /** @type {{Title?: unknown} | undefined} */ ((await doc.getMetadata())?.info);
      title = String(info?.Title ?? '').trim();
    } catch {
      // No metadata: the tab's title serves.
    }
    return {
      title: title || meta.title || '',
      url: meta.url || '',
      text,
      reader: 'pdf',
      lang: '',
      pages: doc.numPages,
    };
  } finally {
    await task.destroy();
  }
}

/** A download from a PDF tab's top frame (our content script: pages cannot reach this port). */
function accept(port) {
  const sender = port.sender;
  if (!sender || sender.id !== chrome.runtime.id || !sender.tab || sender.frameId !== 0) {
    port.disconnect();
    return;
  }
  // The tab's document, as the browser names it (a reload is another document).
  const key = sender.documentId ?? sender.url ?? '';
  let buffer = null;
  let filled = 0;
  let meta = {};
  /** @type {((result: any) => void) | null} */
  let settle = null;
  const reply = (message) => {
    try {
      port.postMessage(message);
    } catch {
      // The tab went away.
    }
  };
  const finish = (result) => {
    settle?.(result);
    settle = null;
    reply(result);
  };
  port.onDisconnect.addListener(() => settle?.(fail('failed', 'the download stopped')));
  port.onMessage.addListener((message) => {
    try {
      if (message?.type === 'open' && !settle) {
        meta = { title: String(message.title ?? ''), url: String(message.url ?? '') };
        const entry = cache.open(key);
        if ('known' in entry) {
          entry.known.then(reply);
          return;
        }
        settle = entry.settle;
        reply({ need: 'bytes' });
      } else if (message?.type === 'start' && settle) {
        const size = Number(message.size);
        if (!(size > 0 && size <= MAX_PDF_BYTES)) {
          finish(fail('too_large'));
          return;
        }
        buffer = new Uint8Array(size);
        filled = 0;
      } else if (message?.type === 'fail' && settle) {
        // The download failed in the tab: those waiting get the same answer.
        settle(message.error?.kind ? { error: message.error } : fail('failed'));
        settle = null;
      } else if (message?.type === 'chunk' && buffer) {
        filled = fill(buffer, filled, String(message.data ?? ''));
      } else if (message?.type === 'end' && buffer) {
        const bytes = buffer.subarray(0, filled);
        buffer = null;
        extract(bytes, meta).then(finish, (err) => finish(fail('failed', err?.message ?? err)));
      }
    } catch (err) {
      buffer = null;
      finish(fail('failed', err?.message ?? err));
    }
  });
}

// Every port a popup, the side panel or Options opens to the worker reaches this document too
// (runtime.connect goes to every extension context listening), and stays open while any end
// that received it does: held here, it would outlive the worker, and the page would never
// see the worker stop nor reconnect to the next one. Closing it here at once closes it for
// the page too (Chromium 156). So this document holds such ports only while the worker that
// received them runs: a port of its own to the worker (PDF_PORT_NAME, which the worker leaves
// open) tells it when that worker stops, and then it closes them, as the worker's end did.
/** Pages' ports to the worker that reached this document too. */
const others = new Set();
/** This document's port to the running worker, or null. */
let watch = null;

function watchWorker() {
  if (watch) return;
  watch = chrome.runtime.connect({ name: PDF_PORT_NAME });
  watch.onDisconnect.addListener(() => {
    watch = null;
    for (const port of others) port.disconnect();
    others.clear();
  });
}

chrome.runtime.onConnect.addListener((port) => {
  if (port.name === PDF_PORT_NAME) {
    accept(port);
    return;
  }
  others.add(port);
  port.onDisconnect.addListener(() => others.delete(port));
  watchWorker();
});
