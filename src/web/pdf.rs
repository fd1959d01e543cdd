//! Reading a PDF tab (`PageReader::read_pdf`): the PDF is downloaded in the tab's top frame
//! by [`PDF_SCRIPTS`] (`content/pdf-fetch.js`, whose `fetch(location.href)` carries the
//! user's cookies for the site), which hands the bytes in chunks to the extension's
//! offscreen document ([`OFFSCREEN_PAGE`], PDF.js, created here on the first PDF, never at
//! start-up) and returns the text it extracted: `{title, url, text, reader: "pdf", pages}`,
//! or `{error: {kind, status, detail}}`. The text is data, never executed.

use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use super::interop::{call, chrome, from_js, object, JsError};
use crate::types::page::{MAX_PAGE_CHARS, PDF_READER};
use crate::types::{PageInfo, PdfReadError};
use kljson::FromJson;

/// The scripts injected into the PDF tab's top frame, in order: the generated constants
/// and the downloader, whose completion value (a promise) is the result.
pub const PDF_SCRIPTS: [&str; 2] = ["content/constants.gen.js", "content/pdf-fetch.js"];

/// The offscreen document that extracts a PDF's text with PDF.js.
pub const OFFSCREEN_PAGE: &str = "offscreen.html";

/// Why the downloader or the extractor gave up, as `content/pdf-fetch.js` reports it.
#[derive(Debug, Default, FromJson)]
#[serde(default)]
struct Failure {
    /// `http`, `not_pdf`, `too_large`, `scanned`, `timeout` or `failed`.
    kind: String,
    /// The HTTP status, for `http`.
    status: u16,
    /// What the browser or PDF.js said.
    detail: String,
}

impl From<Failure> for PdfReadError {
    fn from(f: Failure) -> Self {
        match f.kind.as_str() {
            "http" => PdfReadError::Http(f.status),
            "not_pdf" => PdfReadError::NotPdf(f.detail),
            "too_large" => PdfReadError::TooLarge,
            "scanned" => PdfReadError::Scanned,
            "timeout" => PdfReadError::Timeout,
            _ => PdfReadError::Failed(f.detail),
        }
    }
}

fn failed(e: JsError) -> PdfReadError {
    PdfReadError::Failed(e.message)
}

/// Creates the offscreen document unless it is there (a second `createDocument` racing
/// with the first fails with "Only a single offscreen document may be created": fine).
async fn ensure_offscreen() -> Result<(), JsError> {
    let runtime = chrome(&["runtime"])?;
    let kinds: Array = std::iter::once(JsValue::from_str("OFFSCREEN_DOCUMENT")).collect();
    let filter = object(&[("contextTypes", kinds.into())])?;
    let contexts = call(&runtime, "getContexts", &[filter.into()]).await?;
    if Array::from(&contexts).length() > 0 {
        return Ok(());
    }
    let offscreen = chrome(&["offscreen"])?;
    let reasons: Array = std::iter::once(JsValue::from_str("WORKERS")).collect();
    let details = object(&[
        ("url", JsValue::from_str(OFFSCREEN_PAGE)),
        ("reasons", reasons.into()),
        (
            "justification",
            JsValue::from_str("Extracts the text of a PDF the user asks about, with PDF.js."),
        ),
    ])?;
    match call(&offscreen, "createDocument", &[details.into()]).await {
        Err(e) if e.message.contains("single offscreen") => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Reads the PDF of tab `tab_id`, in its top document `document` when given (the one the
/// page reader found showing the PDF: if the tab has moved on, Chrome refuses, and the
/// run says the PDF is no longer shown instead of reading whatever the tab shows now).
pub async fn read_pdf(tab_id: i64, document: Option<&str>) -> Result<PageInfo, PdfReadError> {
    ensure_offscreen().await.map_err(failed)?;
    let scripting = chrome(&["scripting"]).map_err(failed)?;
    // `documentIds` and `frameIds` exclude each other; a document id names one frame.
    let (key, ids): (&str, Array) = match document {
        Some(id) => (
            "documentIds",
            std::iter::once(JsValue::from_str(id)).collect(),
        ),
        None => (
            "frameIds",
            std::iter::once(JsValue::from_f64(0.0)).collect(),
        ),
    };
    let target = object(&[
        ("tabId", JsValue::from_f64(tab_id as f64)),
        (key, ids.into()),
    ])
    .map_err(failed)?;
    let files: Array = PDF_SCRIPTS.iter().map(|f| JsValue::from_str(f)).collect();
    let details = object(&[("target", target.into()), ("files", files.into())]).map_err(failed)?;
    let results = call(&scripting, "executeScript", &[details.into()])
        .await
        .map_err(|e| {
            // "No document with id ...": the tab left that document (navigated, reloaded).
            if e.message.contains("No document with id") {
                PdfReadError::Gone
            } else {
                failed(e)
            }
        })?;
    let result = Reflect::get(&Array::from(&results).get(0), &"result".into())
        .map_err(|_| PdfReadError::Failed("no result".to_string()))?;
    let error = Reflect::get(&result, &"error".into()).unwrap_or(JsValue::UNDEFINED);
    if !error.is_undefined() && !error.is_null() {
        let failure: Failure = from_js(error).map_err(failed)?;
        return Err(failure.into());
    }
    let mut page: PageInfo = from_js(result).map_err(failed)?;
    if let Some(cut) = crate::types::text::char_start(&page.text, MAX_PAGE_CHARS) {
        page.text.truncate(cut);
    }
    page.reader = PDF_READER.to_string();
    page.lang = crate::types::page::checked_lang(&page.lang);
    Ok(page.capped())
}
