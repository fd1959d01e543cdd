//! The API exported to the extension's service worker: [`Backend`]. The JS side registers
//! its listeners synchronously, awaits one `Backend.start(emit)`, and forwards each Port
//! message to [`Backend::handle`] with the Port's sender.

use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

use super::clock::JsClock;
use super::events::JsEventSink;
use super::http::FetchHttp;
use super::interop::{chrome, to_js, to_json_text, JsError};
use super::pages::ChromePages;
use super::storage::{Area, ChromeStore};
use crate::llm::openai::{OpenAiCompatible, OpenAiConfig};
use crate::ports::LlmClient;
use crate::protocol::{envelope, ApiError, ApiErrorKind};
use crate::service::{ModelFactory, Ports, Service};
use crate::settings::Settings;

/// Builds model clients on `fetch`.
struct WebModels;

impl ModelFactory for WebModels {
    fn client(&self, settings: &Settings) -> Rc<dyn LlmClient> {
        let config = OpenAiConfig {
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            api_key: settings.api_key.clone(),
        };
        Rc::new(OpenAiCompatible::new(
            Rc::new(FetchHttp),
            Rc::new(JsClock),
            config,
        ))
    }
}

/// The worker's backend.
#[wasm_bindgen]
pub struct Backend {
    service: Rc<Service>,
}

/// Checks that a message comes from one of our own extension pages (not a content script,
/// not another extension).
pub fn check_sender(sender: &JsValue) -> Result<(), ApiError> {
    let forbidden =
        |why: &str| ApiError::new(ApiErrorKind::Forbidden, format!("Request refused: {why}."));
    let own_id = chrome(&["runtime", "id"])
        .ok()
        .and_then(|v| v.as_string())
        .ok_or_else(|| forbidden("the extension id is unknown"))?;
    let field = |name: &str| {
        Reflect::get(sender, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_string())
    };
    if field("id").as_deref() != Some(own_id.as_str()) {
        return Err(forbidden("it does not come from this extension"));
    }
    let own_origin = format!("chrome-extension://{own_id}/");
    match field("url") {
        Some(url) if url.starts_with(&own_origin) => Ok(()),
        _ => Err(forbidden("it does not come from an extension page")),
    }
}

#[wasm_bindgen]
impl Backend {
    /// Starts the backend: restricts storage to trusted contexts, then resumes every run
    /// that was interrupted when the worker stopped. `emit` receives every event.
    pub async fn start(emit: Function) -> Result<Backend, JsValue> {
        for area in [Area::Session, Area::Local] {
            if let Err(err) = ChromeStore::new(area).restrict_to_trusted_contexts().await {
                web_sys::console::warn_1(&format!("KnowledgeLens: could not restrict storage.{area:?} to trusted contexts: {err}").into());
            }
        }
        let ports = Ports {
            sessions: Rc::new(ChromeStore::new(Area::Session)),
            settings: Rc::new(ChromeStore::new(Area::Local)),
            clock: Rc::new(JsClock),
            events: Rc::new(JsEventSink::new(emit)),
            pages: Rc::new(ChromePages),
            models: Rc::new(WebModels),
        };
        let service = Service::new(ports);
        for run in service.resume_all().await {
            spawn_local(run);
        }
        Ok(Backend { service })
    }

    /// Handles one request from a Port; resolves with the reply envelope (never rejects).
    pub fn handle(&self, request: JsValue, sender: JsValue) -> Promise {
        let service = self.service.clone();
        future_to_promise(async move {
            let reply = match check_sender(&sender) {
                Err(e) => {
                    let id = Reflect::get(&request, &"id".into())
                        .ok()
                        .and_then(|v| v.as_f64())
                        .map_or(serde_json::Value::Null, serde_json::Value::from);
                    envelope(&id, Err(e))
                }
                Ok(()) => match to_json_text(&request) {
                    Err(e) => envelope(
                        &serde_json::Value::Null,
                        Err(ApiError::new(
                            ApiErrorKind::BadRequest,
                            format!("Unreadable request: {}", e.message),
                        )),
                    ),
                    Ok(text) => {
                        let (reply, run) = service.handle_text(&text).await;
                        if let Some(run) = run {
                            spawn_local(run);
                        }
                        reply
                    }
                },
            };
            to_js(&reply).map_err(|e: JsError| super::interop::js_error(&e.name, &e.message))
        })
    }
}
