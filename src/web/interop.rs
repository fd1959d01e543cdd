//! JS <-> Rust conversion in one place: looking up `chrome.*` at call time (so tests can
//! install stand-ins), awaiting promise-returning methods, and turning JS exceptions into
//! a plain `{name, message}` error.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// A JS exception, copied out of JS.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {message}")]
pub struct JsError {
    /// The error's `name` (`TypeError`, ...).
    pub name: String,
    /// Its `message`.
    pub message: String,
}

impl JsError {
    /// An error made on the Rust side.
    pub fn new(name: &str, message: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            message: message.into(),
        }
    }
}

impl From<JsValue> for JsError {
    fn from(value: JsValue) -> Self {
        if let Some(err) = value.dyn_ref::<js_sys::Error>() {
            return Self {
                name: String::from(err.name()),
                message: String::from(err.message()),
            };
        }
        if let Some(s) = value.as_string() {
            return Self::new("Error", s);
        }
        let message = Reflect::get(&value, &"message".into())
            .ok()
            .and_then(|m| m.as_string());
        Self::new(
            "Error",
            message.unwrap_or_else(|| "unknown JavaScript error".into()),
        )
    }
}

/// The browser's UI language (`navigator.language`, a BCP 47 tag such as `"de-DE"`), read
/// from the global scope (a service worker has a `WorkerNavigator`, no `window`); `None`
/// where there is none.
pub fn browser_language() -> Option<String> {
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    if navigator.is_undefined() || navigator.is_null() {
        return None;
    }
    Reflect::get(&navigator, &"language".into())
        .ok()?
        .as_string()
        .filter(|tag| !tag.trim().is_empty())
}

/// A User Timing mark named `name` on the global scope's `performance` (for the benchmark's
/// split of the worker's cold start: `pkg-scripts/bench-persist.mjs`). A mark holds only its
/// name and time, costs microseconds, and is skipped where there is no `performance`.
pub fn performance_mark(name: &str) {
    let Ok(performance) = Reflect::get(&js_sys::global(), &"performance".into()) else {
        return;
    };
    if let Ok(mark) = Reflect::get(&performance, &"mark".into()) {
        if let Some(mark) = mark.dyn_ref::<Function>() {
            // A mark that cannot be made only leaves the benchmark without that split.
            mark.call1(&performance, &name.into()).ok();
        }
    }
}

/// `globalThis.chrome.<path...>`, looked up now.
pub fn chrome(path: &[&str]) -> Result<JsValue, JsError> {
    let mut value = Reflect::get(&js_sys::global(), &"chrome".into())?;
    let mut walked = String::from("chrome");
    for part in path {
        if value.is_undefined() || value.is_null() {
            return Err(JsError::new(
                "Unavailable",
                format!("{walked} is not available here"),
            ));
        }
        value = Reflect::get(&value, &JsValue::from_str(part))?;
        walked.push('.');
        walked.push_str(part);
    }
    if value.is_undefined() || value.is_null() {
        return Err(JsError::new(
            "Unavailable",
            format!("{walked} is not available here"),
        ));
    }
    Ok(value)
}

/// Calls `target.method(...args)` and awaits the result if it is a promise.
pub async fn call(target: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsError> {
    let function: Function = Reflect::get(target, &JsValue::from_str(method))?
        .dyn_into()
        .map_err(|_| JsError::new("Unavailable", format!("{method} is not a function")))?;
    let array: js_sys::Array = args.iter().collect();
    let result = function.apply(target, &array)?;
    match result.dyn_into::<Promise>() {
        Ok(promise) => Ok(JsFuture::from(promise).await?),
        Err(value) => Ok(value),
    }
}

/// A Rust value as a plain JS object, through one JSON string (objects, not `Map`s:
/// `chrome.storage` and `postMessage` need plain data; and one `JSON.parse` is faster and
/// far smaller in wasm than converting field by field).
pub fn to_js<T: kljson::ToJson + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    let text = kljson::to_string(value);
    Ok(js_sys::JSON::parse(&text)?)
}

/// A JS value as JSON text (`JSON.stringify`).
pub fn to_json_text(value: &JsValue) -> Result<String, JsError> {
    js_sys::JSON::stringify(value)?
        .as_string()
        .ok_or_else(|| JsError::new("TypeError", "the value cannot be represented as JSON"))
}

/// A plain JS object as a typed Rust value, through one JSON string (`JSON.stringify`, then
/// [`kljson::decode`]: no converter per type in the wasm).
pub fn from_js<T: kljson::FromJson>(value: JsValue) -> Result<T, JsError> {
    let text = to_json_text(&value)?;
    kljson::decode(&text).map_err(|e| JsError::new("TypeError", e.to_string()))
}

/// Builds a plain object from key-value pairs.
pub fn object(pairs: &[(&str, JsValue)]) -> Result<js_sys::Object, JsError> {
    let obj = js_sys::Object::new();
    for (k, v) in pairs {
        Reflect::set(&obj, &JsValue::from_str(k), v)?;
    }
    Ok(obj)
}

/// The error as a JS `Error` whose `name` is the kind.
pub fn js_error(name: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name(name);
    err.into()
}
