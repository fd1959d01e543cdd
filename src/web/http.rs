//! [`FetchHttp`]: an [`HttpClient`] on the global `fetch` (no `window` in a service worker),
//! reading bodies chunk by chunk from the response's `ReadableStream`. A request whose
//! future is dropped (a timeout) is aborted. A request that carries a key
//! ([`HttpRequest::carries_key`]) never follows a redirect: it is sent with
//! `redirect: "manual"` (like `"error"`, nothing is sent to the new address, but the
//! redirect is told apart from a network failure, so the error can name it).

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, Request, RequestInit, Response};

use super::interop::JsError;
use crate::ports::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch, catch)]
    fn global_fetch(request: &Request) -> Result<js_sys::Promise, JsValue>;
}

/// HTTP through `fetch`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FetchHttp;

/// Aborts the request when dropped, unless disarmed.
struct AbortOnDrop(Option<AbortController>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.abort();
        }
    }
}

fn http_error(value: JsValue) -> HttpError {
    HttpError {
        message: JsError::from(value).message,
        redirected: false,
    }
}

async fn send(request: HttpRequest) -> Result<HttpResponse, HttpError> {
    let init = RequestInit::new();
    init.set_method(&request.method);
    let headers = Headers::new().map_err(http_error)?;
    for (name, value) in &request.headers {
        headers.set(name, value).map_err(http_error)?;
    }
    init.set_headers(&headers);
    if let Some(body) = &request.body {
        init.set_body(&JsValue::from_str(body));
    }
    let controller = AbortController::new().map_err(http_error)?;
    init.set_signal(Some(&controller.signal()));
    // A request with a key never follows a redirect (the key would go on), and neither does
    // a GET of a server on this computer (a model list, the probe of the usual ports): a
    // local model server has no reason to send the extension elsewhere.
    let keyed = request.carries_key()
        || (request.method == "GET"
            && crate::url::parse(&request.url).is_some_and(|url| url.is_loopback()));
    if keyed {
        Reflect::set(&init, &"redirect".into(), &"manual".into()).map_err(http_error)?;
    }
    let mut guard = AbortOnDrop(Some(controller));
    let js_request = Request::new_with_str_and_init(&request.url, &init).map_err(http_error)?;
    let promise = global_fetch(&js_request).map_err(http_error)?;
    let response: Response = JsFuture::from(promise)
        .await
        .map_err(http_error)?
        .dyn_into()
        .map_err(http_error)?;
    let kind = Reflect::get(&response, &"type".into()).ok();
    if keyed && kind.and_then(|k| k.as_string()).as_deref() == Some("opaqueredirect") {
        return Err(HttpError {
            message: "the server answered with a redirect, which was not followed".into(),
            redirected: true,
        });
    }
    let mut header_pairs = Vec::new();
    if let Ok(Some(iter)) = js_sys::try_iter(&response.headers()) {
        for entry in iter.flatten() {
            let pair = js_sys::Array::from(&entry);
            if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
                header_pairs.push((k.to_ascii_lowercase(), v));
            }
        }
    }
    let reader = match response.body() {
        Some(stream) => Some(
            stream
                .get_reader()
                .dyn_into::<web_sys::ReadableStreamDefaultReader>()
                .map_err(|o| http_error(o.into()))?,
        ),
        None => None,
    };
    let body = FetchBody {
        reader,
        _abort: AbortOnDrop(guard.0.take()),
    };
    Ok(HttpResponse {
        status: response.status(),
        headers: header_pairs,
        body: Box::new(body),
    })
}

/// A response body being read.
struct FetchBody {
    reader: Option<web_sys::ReadableStreamDefaultReader>,
    _abort: AbortOnDrop,
}

impl HttpBody for FetchBody {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        async move {
            let Some(reader) = &self.reader else {
                return Ok(None);
            };
            let result = JsFuture::from(reader.read()).await.map_err(http_error)?;
            let done = Reflect::get(&result, &"done".into())
                .map(|d| d.is_truthy())
                .unwrap_or(true);
            if done {
                self.reader = None;
                self._abort.0 = None;
                return Ok(None);
            }
            let value = Reflect::get(&result, &"value".into()).map_err(http_error)?;
            Ok(Some(Uint8Array::new(&value).to_vec()))
        }
        .boxed_local()
    }
}

impl HttpClient for FetchHttp {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        send(request).boxed_local()
    }
}
