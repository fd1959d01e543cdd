// Generated from the Rust crate by `knowledgelens::protocol::gen::content_js()`: do not
// edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.
// The constants content scripts share with Rust (they are classic scripts and cannot
// import protocol.gen.js): injected first by the worker, read as `globalThis.__klContent`.
globalThis.__klContent = Object.freeze({
  "LOCATE_MESSAGE": "knowledgelens-locate",
  "MAX_PAGE_CHARS": 2000000,
  "MAX_PDF_BYTES": 31457280,
  "MAX_TITLE_CHARS": 300,
  "MAX_URL_CHARS": 2000,
  "PDF_CHUNK_BYTES": 6291456,
  "PDF_FETCH_TIMEOUT_MS": 30000,
  "PDF_PORT_NAME": "knowledgelens-pdf"
});
