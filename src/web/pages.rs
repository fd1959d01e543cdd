//! [`ChromePages`]: reads a tab's text by injecting [`EXTRACT_SCRIPTS`] (Readability, the
//! visibility helper, then `content/extract.js`) with `chrome.scripting.executeScript`. The
//! last script returns plain data; nothing from the page is ever executed by us.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use super::interop::{call, chrome, from_js, object};
use crate::ports::PageReader;
use crate::types::{PageInfo, PageReadError};

/// The scripts injected to read a page, in order, relative to the extension root: Mozilla's
/// Readability (vendored, unmodified), the visibility helper, and the reader, whose
/// completion value is the result.
pub const EXTRACT_SCRIPTS: [&str; 4] = [
    "vendor/readability/Readability-readerable.js",
    "vendor/readability/Readability.js",
    "content/visible.js",
    "content/extract.js",
];

/// Longest page text kept, in characters.
pub const MAX_PAGE_CHARS: usize = 200_000;

/// Reads tabs through `chrome.scripting`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChromePages;

/// Chrome's `executeScript` rejections: "No tab with id: 5" for a closed tab; anything else
/// (chrome:// pages, the Web Store, missing host access) means the page cannot be scripted.
fn script_error(message: String) -> PageReadError {
    if message.starts_with("No tab with id") {
        PageReadError::NoTab(message)
    } else {
        PageReadError::NotScriptable(message)
    }
}

async fn read_tab(tab_id: i64) -> Result<PageInfo, PageReadError> {
    let scripting =
        chrome(&["scripting"]).map_err(|e| PageReadError::NotScriptable(e.to_string()))?;
    let target = object(&[("tabId", JsValue::from_f64(tab_id as f64))])
        .map_err(|e| PageReadError::BadResult(e.to_string()))?;
    let files: Array = EXTRACT_SCRIPTS
        .iter()
        .map(|f| JsValue::from_str(f))
        .collect();
    let details = object(&[("target", target.into()), ("files", files.into())])
        .map_err(|e| PageReadError::BadResult(e.to_string()))?;
    let results = call(&scripting, "executeScript", &[details.into()])
        .await
        .map_err(|e| script_error(e.message))?;
    let first = Array::from(&results).get(0);
    let result = Reflect::get(&first, &"result".into())
        .map_err(|_| PageReadError::BadResult("no result".to_string()))?;
    let mut page: PageInfo = from_js(result).map_err(|e| PageReadError::BadResult(e.message))?;
    if let Some((cut, _)) = page.text.char_indices().nth(MAX_PAGE_CHARS) {
        page.text.truncate(cut);
    }
    page.lang = crate::types::page::checked_lang(&page.lang);
    Ok(page)
}

impl PageReader for ChromePages {
    fn read(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<PageInfo, PageReadError>> {
        read_tab(tab_id).boxed_local()
    }
}
