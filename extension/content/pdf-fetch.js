// KnowledgeLens PDF downloader, injected by the worker (src/web/pdf.rs, PDF_SCRIPTS) into the
// top frame of a tab that shows a PDF in Chrome's viewer, after content/constants.gen.js. It
// asks the extension's offscreen document on PDF_PORT_NAME whether it has read (or is
// reading) this document's PDF already; if not, it downloads the PDF again with
// fetch(location.href) from the page's own origin, so the user's cookies for the site go with
// it, and hands the bytes (at most MAX_PDF_BYTES) in base64 chunks to it; the completion value
// (a promise) is the offscreen document's reply: the page text, or {error: {kind, status,
// detail}}. Nothing is written to the page. Everything is in a block, so injecting it again
// does not collide.
{
  const { MAX_PDF_BYTES, PDF_CHUNK_BYTES, PDF_FETCH_TIMEOUT_MS, PDF_PORT_NAME, MAX_TITLE_CHARS, MAX_URL_CHARS } = globalThis.__klContent;
  const fail = (kind, detail = '', status = 0) => ({ error: { kind, status, detail: String(detail).slice(0, 300) } });
  const isPdf = (bytes) => {
    // "%PDF-" within the first KB (the format allows bytes before the header).
    const head = String.fromCharCode(...bytes.subarray(0, 1024));
    return head.includes('%PDF-');
  };

  // The PDF's bytes, or a failure: HTTP errors, another type, too large, too slow.
  const download = async () => {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), PDF_FETCH_TIMEOUT_MS);
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', signal: abort.signal });
      if (!res.ok) return fail('http', res.statusText, res.status);
      const type = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
      const declared = Number(res.headers.get('content-length') ?? 0);
      if (declared > MAX_PDF_BYTES) return fail('too_large');
      const reader = res.body.getReader();
      const parts = [];
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.length;
        if (size > MAX_PDF_BYTES) {
          await reader.cancel();
          return fail('too_large');
        }
        parts.push(value);
      }
      const bytes = new Uint8Array(size);
      let at = 0;
      for (const part of parts) {
        bytes.set(part, at);
        at += part.length;
      }
      if (!isPdf(bytes)) return fail('not_pdf', type || 'no content type');
      return { bytes };
    } catch (err) {
      return abort.signal.aborted ? fail('timeout') : fail('failed', err?.message ?? err);
    } finally {
      clearTimeout(timer);
    }
  };

  const base64 = (bytes) => {
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary);
  };

  // The offscreen document's page for this tab: kept or being read there already, else read
  // from the bytes downloaded now.
  const read = () => new Promise((resolve) => {
    const port = chrome.runtime.connect({ name: PDF_PORT_NAME });
    const done = (reply) => {
      resolve(reply);
      port.disconnect();
    };
    port.onDisconnect.addListener(() => resolve(fail('failed', 'the PDF reader went away')));
    const cap = (value, max) => String(value ?? '').slice(0, max);
    port.onMessage.addListener(async (reply) => {
      if (reply?.need !== 'bytes') {
        done(reply);
        return;
      }
      const got = await download();
      if (got.error) {
        port.postMessage({ type: 'fail', error: got.error });
        done(got);
        return;
      }
      const { bytes } = got;
      port.postMessage({ type: 'start', size: bytes.length });
      for (let at = 0; at < bytes.length; at += PDF_CHUNK_BYTES) {
        port.postMessage({ type: 'chunk', data: base64(bytes.subarray(at, at + PDF_CHUNK_BYTES)) });
      }
      port.postMessage({ type: 'end' });
    });
    port.postMessage({ type: 'open', title: cap(document.title, MAX_TITLE_CHARS), url: cap(location.href, MAX_URL_CHARS) });
  });

  read();
}
