//! [`ChromeCapture`]: screenshots of a tab with `chrome.tabs.captureVisibleTab`, which the
//! `activeTab` grant (a click on the toolbar icon, the menu or the shortcut) allows. Only
//! the active tab of its window is captured (`chrome.tabs.get` says whether it still is);
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

/// The window of tab `tab_id` when it is the active tab there; `NotVisible` otherwise (a
/// closed tab included).
async fn window_if_active(tabs: &JsValue, tab_id: i64) -> Result<JsValue, CaptureError> {
    let tab = call(tabs, "get", &[JsValue::from_f64(tab_id as f64)])
        .await
        .map_err(|_| CaptureError::NotVisible)?;
    let active = Reflect::get(&tab, &"active".into()).is_ok_and(|a| a.is_truthy());
    if !active {
        return Err(CaptureError::NotVisible);
    }
    Reflect::get(&tab, &"windowId".into()).map_err(|e| failed(e.into()))
}

async fn capture(tab_id: i64) -> Result<Image, CaptureError> {
    let tabs = chrome(&["tabs"]).map_err(failed)?;
    let window = window_if_active(&tabs, tab_id).await?;
    let options = object(&[("format", JsValue::from_str("png"))]).map_err(failed)?;
    let url = call(&tabs, "captureVisibleTab", &[window, options.into()])
        .await
        .map_err(failed)?
        .as_string()
        .unwrap_or_default();
    // The user may have switched tabs while it was taken: then it shows another page.
    window_if_active(&tabs, tab_id).await?;
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
    fn capture_visible(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<Image, CaptureError>> {
        capture(tab_id).boxed_local()
    }
}
