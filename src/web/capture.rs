//! [`ChromeCapture`]: screenshots of a tab with `chrome.tabs.captureVisibleTab`, which the
//! `activeTab` grant (a click on the toolbar icon, the menu or the shortcut) allows. Only
//! the active tab of its window, and only while it shows the run's page, is captured
//! (`chrome.tabs.get` says whether it still does, before and after);
//! a screenshot larger than [`MAX_IMAGE_SIDE`] on its long side is scaled down in the
//! worker (`createImageBitmap` with a resize, drawn on an `OffscreenCanvas`, PNG again).
//! Nothing is kept: the image goes back to the caller only.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Array, Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use super::interop::{call, chrome, object, JsError};
use crate::ports::{CaptureError, ScreenCapture};
use crate::types::image::{base64_encode, fitted_size, MAX_IMAGE_SIDE};
use crate::types::Image;

/// Captures tabs through `chrome.tabs`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChromeCapture;

fn failed(err: JsError) -> CaptureError {
    CaptureError::Failed(err.message)
}

/// The window of tab `tab_id` when it is the active tab there and shows the page at
/// `page_url`; `NotVisible` or `OtherPage` otherwise (a closed tab included, and a tab whose
/// address the extension may no longer see, as after going to another site).
async fn window_if_showing(
    tabs: &JsValue,
    tab_id: i64,
    page_url: Option<&str>,
) -> Result<JsValue, CaptureError> {
    let tab = call(tabs, "get", &[JsValue::from_f64(tab_id as f64)])
        .await
        .map_err(|_| CaptureError::NotVisible)?;
    let active = Reflect::get(&tab, &"active".into()).is_ok_and(|a| a.is_truthy());
    if !active {
        return Err(CaptureError::NotVisible);
    }
    if let Some(page_url) = page_url {
        let shows = Reflect::get(&tab, &"url".into())
            .ok()
            .and_then(|url| url.as_string())
            .unwrap_or_default();
        if !crate::url::same_page(&shows, page_url) {
            return Err(CaptureError::OtherPage);
        }
    }
    Reflect::get(&tab, &"windowId".into()).map_err(|e| failed(e.into()))
}

async fn capture(tab_id: i64, page_url: Option<&str>) -> Result<Image, CaptureError> {
    let tabs = chrome(&["tabs"]).map_err(failed)?;
    let window = window_if_showing(&tabs, tab_id, page_url).await?;
    let options = object(&[("format", JsValue::from_str("png"))]).map_err(failed)?;
    let url = call(&tabs, "captureVisibleTab", &[window, options.into()])
        .await
        .map_err(failed)?
        .as_string()
        .unwrap_or_default();
    // The user may have switched tabs, or gone to another page, while it was taken.
    window_if_showing(&tabs, tab_id, page_url).await?;
    let image = Image::from_png_data_url(&url)
        .ok_or_else(|| CaptureError::Failed("the browser did not return a PNG".into()))?;
    let (width, height) = fitted_size(image.width, image.height);
    if (width, height) == (image.width, image.height) {
        return Ok(image);
    }
    let bytes = scaled_png(&url, width, height).await.map_err(failed)?;
    Ok(Image {
        mime_type: "image/png".into(),
        data: base64_encode(&bytes),
        width,
        height,
    })
}

/// A global constructor (`OffscreenCanvas`), called with `args`.
fn construct(name: &str, args: &[JsValue]) -> Result<JsValue, JsError> {
    let constructor: Function = Reflect::get(&js_sys::global(), &JsValue::from_str(name))?
        .dyn_into()
        .map_err(|_| JsError::new("Unavailable", format!("{name} is not available here")))?;
    let args: Array = args.iter().collect();
    Ok(Reflect::construct(&constructor, &args)?)
}

/// The PNG at the data URL `url`, scaled to `width` × `height`, as PNG bytes.
async fn scaled_png(url: &str, width: u32, height: u32) -> Result<Vec<u8>, JsError> {
    debug_assert!(width.max(height) <= MAX_IMAGE_SIDE);
    let global: JsValue = js_sys::global().into();
    let response = call(&global, "fetch", &[JsValue::from_str(url)]).await?;
    let blob = call(&response, "blob", &[]).await?;
    let resize = object(&[
        ("resizeWidth", JsValue::from(width)),
        ("resizeHeight", JsValue::from(height)),
        ("resizeQuality", JsValue::from_str("high")),
    ])?;
    let bitmap = call(&global, "createImageBitmap", &[blob, resize.into()]).await?;
    let canvas = construct(
        "OffscreenCanvas",
        &[JsValue::from(width), JsValue::from(height)],
    )?;
    let context = call(&canvas, "getContext", &[JsValue::from_str("2d")]).await?;
    call(
        &context,
        "drawImage",
        &[bitmap.clone(), JsValue::from(0), JsValue::from(0)],
    )
    .await?;
    let _closed = call(&bitmap, "close", &[]).await;
    let options = object(&[("type", JsValue::from_str("image/png"))])?;
    let png = call(&canvas, "convertToBlob", &[options.into()]).await?;
    let buffer = call(&png, "arrayBuffer", &[]).await?;
    Ok(Uint8Array::new(&buffer).to_vec())
}

impl ScreenCapture for ChromeCapture {
    fn capture_visible<'a>(
        &'a self,
        tab_id: i64,
        page_url: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<Image, CaptureError>> {
        capture(tab_id, page_url).boxed_local()
    }
}
