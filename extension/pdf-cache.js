// @ts-check
// The offscreen document's memory of the PDFs it has read, so that a PDF is downloaded and
// extracted once per document shown in a tab: a question asked again after the service
// worker stopped in the middle of a read (the read goes on in the tab and here, only its
// result was lost) or a follow-up question gets the text without a second download. Keyed
// by the tab document's id (`Port.sender.documentId`, which the browser sets: a reload or a
// navigation is another document), at most MAX_CACHED_PDFS entries, oldest out first. A
// read still going is shared: whoever asks meanwhile waits for it. Failures are not kept.
// Pure: no chrome.*, so the unit tests (tests/unit/pdf-cache.test.mjs) run it directly.

/** How many documents' texts are kept (each at most the page text cap). */
export const MAX_CACHED_PDFS = 4;

/** @template T */
export class PdfCache {
  /** @param {(value: T) => boolean} failed whether a result is a failure (not kept) */
  constructor(failed, max = MAX_CACHED_PDFS) {
    /** @type {Map<string, Promise<T>>} */
    this.entries = new Map();
    this.failed = failed;
    this.max = max;
  }

  /**
   * The result for `key` when one is kept or being read (`{known}`), else `{settle}`: the
   * caller reads it and must call `settle(result)` once, which answers everyone waiting.
   * @param {string} key
   * @returns {{known: Promise<T>} | {settle: (result: T) => void}}
   */
  open(key) {
    const known = this.entries.get(key);
    if (known) {
      // Most recently used last, so eviction takes the oldest.
      this.entries.delete(key);
      this.entries.set(key, known);
      return { known };
    }
    /** @type {(result: T) => void} */
    let resolve = () => {};
    const pending = new Promise((done) => { resolve = done; });
    this.entries.set(key, /** @type {Promise<T>} */ (pending));
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    let settled = false;
    return {
      settle: (result) => {
        if (settled) return;
        settled = true;
        if (this.failed(result) && this.entries.get(key) === pending) this.entries.delete(key);
        resolve(result);
      },
    };
  }
}
