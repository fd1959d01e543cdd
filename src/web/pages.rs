//! [`ChromePages`]: reads a tab's text by injecting [`EXTRACT_SCRIPTS`] (the generated
//! content constants, Readability, the visibility helper, then `content/extract.js`) with
//! `chrome.scripting.executeScript`, and shows a cited passage by injecting
//! [`LOCATE_SCRIPTS`] into the tab's top frame and sending them the passage
//! (`chrome.tabs.sendMessage`, [`LOCATE_MESSAGE`]). The scripts return plain data; nothing
//! from the page is ever executed by us.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use super::interop::{call, chrome, from_js, object};
use crate::ports::PageReader;
use crate::types::{PageInfo, PageReadError, PdfReadError};
use kljson::FromJson;

/// The scripts injected to read a page, in order, relative to the extension root: the
/// generated constants (`protocol::gen::CONTENT_CONSTANTS`, spelled out so the e2e tier can
/// read this list), Mozilla's Readability (vendored, unmodified), the visibility helper, and
/// the reader, whose completion value is the result.
pub const EXTRACT_SCRIPTS: [&str; 5] = [
    "content/constants.gen.js",
    "vendor/readability/Readability-readerable.js",
    "vendor/readability/Readability.js",
    "content/visible.js",
    "content/extract.js",
];

/// The scripts injected (top frame only) to show a passage: the generated constants, the
/// visibility helper and the locator, which then waits for [`LOCATE_MESSAGE`].
pub const LOCATE_SCRIPTS: [&str; 3] = [
    "content/constants.gen.js",
    "content/visible.js",
    "content/locate.js",
];

pub use crate::protocol::gen::LOCATE_MESSAGE;
/// Longest page text kept, in characters (one constant with the page reader's cut).
pub use crate::protocol::MAX_PAGE_CHARS;

/// Reads tabs through `chrome.scripting`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChromePages;

/// Chrome's `executeScript` rejections: "No tab with id: 5" for a closed tab; "... must
/// request permission to access ..." for a site without a host permission or an `activeTab`
/// grant; anything else (chrome:// pages, the Web Store) means the page cannot be scripted.
fn script_error(message: String) -> PageReadError {
    if message.starts_with("No tab with id") {
        PageReadError::NoTab(message)
    } else if message.contains("must request permission to access") {
        PageReadError::NoAccess(message)
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
    // The reader says when the tab shows a PDF (in Chrome's viewer): `read_pdf` reads it,
    // in the document this result came from.
    if Reflect::get(&result, &"pdf".into()).is_ok_and(|v| v.is_truthy()) {
        let document = Reflect::get(&first, &"documentId".into())
            .ok()
            .and_then(|v| v.as_string());
        return Err(PageReadError::Pdf { document });
    }
    let mut page: PageInfo = from_js(result).map_err(|e| PageReadError::BadResult(e.message))?;
    if let Some(cut) = crate::types::text::char_start(&page.text, MAX_PAGE_CHARS) {
        page.text.truncate(cut);
    }
    page.lang = crate::types::page::checked_lang(&page.lang);
    Ok(page.capped())
}

/// The locator's reply to [`LOCATE_MESSAGE`].
#[derive(FromJson)]
struct Located {
    found: bool,
}

async fn locate_in_tab(tab_id: i64, passage: &str) -> Result<bool, PageReadError> {
    let not_scriptable = |e: super::interop::JsError| PageReadError::NotScriptable(e.message);
    let bad = |e: super::interop::JsError| PageReadError::BadResult(e.message);
    let scripting =
        chrome(&["scripting"]).map_err(|e| PageReadError::NotScriptable(e.to_string()))?;
    let tabs = chrome(&["tabs"]).map_err(|e| PageReadError::NotScriptable(e.to_string()))?;
    let tab = JsValue::from_f64(tab_id as f64);
    let frames: Array = std::iter::once(JsValue::from_f64(0.0)).collect();
    let target = object(&[("tabId", tab.clone()), ("frameIds", frames.into())]).map_err(bad)?;
    let files: Array = LOCATE_SCRIPTS
        .iter()
        .map(|f| JsValue::from_str(f))
        .collect();
    let details = object(&[("target", target.into()), ("files", files.into())]).map_err(bad)?;
    call(&scripting, "executeScript", &[details.into()])
        .await
        .map_err(|e| script_error(e.message))?;
    let message = object(&[
        ("type", JsValue::from_str(LOCATE_MESSAGE)),
        ("text", JsValue::from_str(passage)),
    ])
    .map_err(bad)?;
    let options = object(&[("frameId", JsValue::from_f64(0.0))]).map_err(bad)?;
    let reply = call(&tabs, "sendMessage", &[tab, message.into(), options.into()])
        .await
        .map_err(not_scriptable)?;
    let located: Located = from_js(reply).map_err(bad)?;
    Ok(located.found)
}

/// The address `chrome.tabs.get` gives for tab `tab_id` (the `activeTab` grant shows it).
async fn tab_address(tab_id: i64) -> Option<String> {
    let tabs = chrome(&["tabs"]).ok()?;
    let tab = call(&tabs, "get", &[JsValue::from_f64(tab_id as f64)])
        .await
        .ok()?;
    let url = js_sys::Reflect::get(&tab, &"url".into())
        .ok()?
        .as_string()?;
    Some(crate::types::page::cap_chars(&url, crate::types::page::MAX_URL_CHARS).0)
}

/// Whether tab `tab_id` is incognito (`tabs.get` says so without the `tabs` permission);
/// a tab the browser does not describe counts as incognito: nothing is kept on a guess.
async fn tab_incognito(tab_id: i64) -> bool {
    let Ok(tabs) = chrome(&["tabs"]) else {
        return true;
    };
    let Ok(tab) = call(&tabs, "get", &[JsValue::from_f64(tab_id as f64)]).await else {
        return true;
    };
    js_sys::Reflect::get(&tab, &"incognito".into())
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(true)
}

impl PageReader for ChromePages {
    fn incognito(&self, tab_id: i64) -> LocalBoxFuture<'_, bool> {
        tab_incognito(tab_id).boxed_local()
    }

    fn read_pages_cap(&self) -> Option<usize> {
        // The test build's hook (pkg-scripts/lib/test-hooks.js; absent in dist/): a lower cap,
        // so an end-to-end test sees eviction with a few pages. 0 or absent: none.
        js_sys::Reflect::get(&js_sys::global(), &"__klReadPagesCap".into())
            .ok()
            .and_then(|v| v.as_f64())
            .filter(|n| *n >= 1.0)
            .map(|n| n as usize)
    }

    fn read(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<PageInfo, PageReadError>> {
        read_tab(tab_id).boxed_local()
    }

    fn read_pdf<'a>(
        &'a self,
        tab_id: i64,
        document: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<PageInfo, PdfReadError>> {
        super::pdf::read_pdf(tab_id, document).boxed_local()
    }

    fn address(&self, tab_id: i64) -> LocalBoxFuture<'_, Option<String>> {
        tab_address(tab_id).boxed_local()
    }

    fn locate<'a>(
        &'a self,
        tab_id: i64,
        passage: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, PageReadError>> {
        locate_in_tab(tab_id, passage).boxed_local()
    }
}
