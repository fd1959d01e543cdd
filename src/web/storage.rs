//! [`ChromeStore`]: a [`StateStore`] over `chrome.storage.session` or `.local`, storing each
//! value as one JSON string (about ten times faster than a converted object, and never
//! mangled into `{}` the way a JS `Map` would be).

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use super::interop::{call, chrome, JsError};
use crate::ports::{StateStore, StoreError};

/// A `chrome.storage` area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// `chrome.storage.session`: in memory, cleared when the browser restarts.
    Session,
    /// `chrome.storage.local`: on disk.
    Local,
}

impl Area {
    fn name(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Local => "local",
        }
    }
}

/// A [`StateStore`] over one `chrome.storage` area.
#[derive(Debug, Clone, Copy)]
pub struct ChromeStore {
    area: Area,
}

impl ChromeStore {
    /// The store of `area`.
    pub fn new(area: Area) -> Self {
        Self { area }
    }

    fn area(&self) -> Result<JsValue, StoreError> {
        chrome(&["storage", self.area.name()]).map_err(|e| StoreError::Unavailable(e.message))
    }

    /// Restricts the area to trusted contexts (extension pages and the worker), so content
    /// scripts cannot read it.
    pub async fn restrict_to_trusted_contexts(&self) -> Result<(), JsError> {
        let area = chrome(&["storage", self.area.name()])?;
        let options = super::interop::object(&[("accessLevel", "TRUSTED_CONTEXTS".into())])?;
        call(&area, "setAccessLevel", &[options.into()])
            .await
            .map(|_| ())
    }
}

fn store_error(err: JsError) -> StoreError {
    let m = err.message.to_ascii_lowercase();
    if m.contains("quota") {
        StoreError::QuotaExceeded(err.message)
    } else if m.contains("access") || m.contains("not available") || err.name == "Unavailable" {
        StoreError::Unavailable(err.message)
    } else {
        StoreError::Failed(err.to_string())
    }
}

impl StateStore for ChromeStore {
    /// `QUOTA_BYTES` of the area (10 MiB for `session` and `local`).
    fn quota(&self) -> Option<u64> {
        let area = self.area().ok()?;
        let quota = js_sys::Reflect::get(&area, &"QUOTA_BYTES".into())
            .ok()?
            .as_f64()?;
        (quota.is_finite() && quota > 0.0).then_some(quota as u64)
    }

    fn get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, StoreError>> {
        async move {
            let area = self.area()?;
            let items = call(&area, "get", &[JsValue::from_str(key)])
                .await
                .map_err(store_error)?;
            let value =
                Reflect::get(&items, &JsValue::from_str(key)).map_err(|e| store_error(e.into()))?;
            if value.is_undefined() || value.is_null() {
                return Ok(None);
            }
            match value.as_string() {
                Some(s) => Ok(Some(s)),
                // Not written by us as a string: hand it over as JSON text to be validated.
                None => Ok(js_sys::JSON::stringify(&value)
                    .ok()
                    .and_then(|s| s.as_string())),
            }
        }
        .boxed_local()
    }

    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>> {
        async move {
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            let area = self.area()?;
            let array: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
            let items = call(&area, "get", &[array.into()])
                .await
                .map_err(store_error)?;
            Ok(keys
                .iter()
                .map(|k| {
                    Reflect::get(&items, &JsValue::from_str(k))
                        .ok()
                        .and_then(|v| v.as_string())
                })
                .collect())
        }
        .boxed_local()
    }

    fn set(&self, items: Vec<(String, String)>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        async move {
            let area = self.area()?;
            let obj = js_sys::Object::new();
            for (k, v) in &items {
                Reflect::set(&obj, &JsValue::from_str(k), &JsValue::from_str(v))
                    .map_err(|e| store_error(e.into()))?;
            }
            call(&area, "set", &[obj.into()])
                .await
                .map(|_| ())
                .map_err(store_error)
        }
        .boxed_local()
    }

    fn remove(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        async move {
            let area = self.area()?;
            let array: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
            call(&area, "remove", &[array.into()])
                .await
                .map(|_| ())
                .map_err(store_error)
        }
        .boxed_local()
    }

    fn keys<'a>(&'a self, prefix: &'a str) -> LocalBoxFuture<'a, Result<Vec<String>, StoreError>> {
        async move {
            let area = self.area()?;
            let has_get_keys = Reflect::get(&area, &"getKeys".into())
                .map(|f| f.is_function())
                .unwrap_or(false);
            let names: Vec<String> = if has_get_keys {
                let keys = call(&area, "getKeys", &[]).await.map_err(store_error)?;
                Array::from(&keys)
                    .iter()
                    .filter_map(|k| k.as_string())
                    .collect()
            } else {
                let all = call(&area, "get", &[JsValue::NULL])
                    .await
                    .map_err(store_error)?;
                js_sys::Object::keys(&all.into())
                    .iter()
                    .filter_map(|k| k.as_string())
                    .collect()
            };
            Ok(names
                .into_iter()
                .filter(|k| k.starts_with(prefix))
                .collect())
        }
        .boxed_local()
    }
}
