//! [`ChromePages`]: reads a tab's text by injecting `content/extract.js` with
//! `chrome.scripting.executeScript`. The script returns plain data; nothing from the page is
//! ever executed by us.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use super::interop::{call, chrome, from_js, object};
use crate::ports::{PageReader, PageText};

/// The extraction script, relative to the extension root.
pub const EXTRACT_SCRIPT: &str = "content/extract.js";

/// Longest page text kept, in characters.
pub const MAX_PAGE_CHARS: usize = 200_000;

/// Reads tabs through `chrome.scripting`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChromePages;

async fn read_tab(tab_id: i64) -> Result<PageText, String> {
    let scripting = chrome(&["scripting"]).map_err(|e| e.to_string())?;
    let target =
        object(&[("tabId", JsValue::from_f64(tab_id as f64))]).map_err(|e| e.to_string())?;
    let files: Array = std::iter::once(JsValue::from_str(EXTRACT_SCRIPT)).collect();
    let details =
        object(&[("target", target.into()), ("files", files.into())]).map_err(|e| e.to_string())?;
    let results = call(&scripting, "executeScript", &[details.into()])
        .await
        .map_err(|e| e.message)?;
    let first = Array::from(&results).get(0);
    let result = Reflect::get(&first, &"result".into())
        .map_err(|_| "the page returned no result".to_string())?;
    let mut page: PageText =
        from_js(result).map_err(|e| format!("the page returned unexpected data: {}", e.message))?;
    if let Some((cut, _)) = page.text.char_indices().nth(MAX_PAGE_CHARS) {
        page.text.truncate(cut);
    }
    Ok(page)
}

impl PageReader for ChromePages {
    fn read(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<PageText, String>> {
        read_tab(tab_id).boxed_local()
    }
}
