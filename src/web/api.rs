//! The API exported to the extension's service worker: [`Backend`]. The JS side registers
//! its listeners synchronously, awaits one `Backend.start(emit)`, and forwards each Port
//! message to [`Backend::handle`] with the Port's sender.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

use super::clock::JsClock;
use super::events::JsEventSink;
use super::http::FetchHttp;
use super::interop::{call, chrome, from_js, object, to_js, to_json_text, JsError};
use super::notifier::ChromeNotifier;
use super::pages::ChromePages;
use super::storage::{Area, ChromeStore};
use crate::llm::local::LocalServer;
use crate::llm::transport::bounds::WithDeadline;
use crate::llm::transport::{HttpLlm, Timeouts};
use crate::llm::{LlmError, ProviderConfig};
use crate::ports::Clock;
use crate::ports::LlmClient;
use crate::protocol::{ApiError, ApiErrorKind, Envelope};
use crate::service::{ModelFactory, OriginRule, Ports, Service};
use crate::settings::Settings;
use futures::future::LocalBoxFuture;
use futures::FutureExt;

/// Builds model clients on `fetch` (or Chrome's Prompt API for the built-in model). The
/// client is kept while the provider settings stay the same, so what it learned (a server
/// that rejects constrained output) holds for the session.
#[derive(Default)]
struct WebModels {
    cached: RefCell<Option<(ClientKey, Rc<dyn LlmClient>)>>,
}

/// What a cached client was built for: the provider settings and the model call deadline (s).
type ClientKey = (ProviderConfig, u64);

/// An HTTP client for `wire` whose calls end by the "Model call deadline" of `settings`.
fn http_llm(settings: &Settings, wire: Box<dyn crate::llm::transport::WireFormat>) -> HttpLlm {
    let total_ms = settings.model_deadline_secs.saturating_mul(1000);
    HttpLlm::new(Rc::new(FetchHttp), Rc::new(JsClock), wire)
        .with_timeouts(Timeouts::with_total_ms(total_ms))
}

impl ModelFactory for WebModels {
    fn client(&self, settings: &Settings) -> Rc<dyn LlmClient> {
        let config = settings.provider_config();
        let key = (config.clone(), settings.model_deadline_secs);
        let mut cached = self.cached.borrow_mut();
        if let Some((known, client)) = cached.as_ref() {
            if *known == key {
                return client.clone();
            }
        }
        let client: Rc<dyn LlmClient> = match crate::llm::wire_for(config.clone()) {
            Some(wire) => Rc::new(http_llm(settings, wire)),
            None => Rc::new(WithDeadline::new(
                Rc::new(super::builtin::BuiltinModel::new()),
                Rc::new(JsClock),
                config,
                settings.model_deadline_secs.saturating_mul(1000),
            )),
        };
        *cached = Some((key, client.clone()));
        client
    }

    fn models<'a>(
        &'a self,
        settings: &'a Settings,
    ) -> LocalBoxFuture<'a, Result<Vec<String>, LlmError>> {
        async move {
            let config = settings.provider_config();
            match crate::llm::wire_for(config) {
                Some(wire) => http_llm(settings, wire).list_models().await,
                None => Ok(Vec::new()),
            }
        }
        .boxed_local()
    }

    fn host_permission<'a>(&'a self, origin: &'a str) -> LocalBoxFuture<'a, Option<bool>> {
        async move {
            let permissions = chrome(&["permissions"]).ok()?;
            let origins = js_sys::Array::of1(&JsValue::from_str(&format!("{origin}/*")));
            let query = object(&[("origins", origins.into())]).ok()?;
            call(&permissions, "contains", &[query.into()])
                .await
                .ok()?
                .as_bool()
        }
        .boxed_local()
    }

    fn extension_origin(&self) -> String {
        extension_id()
            .map(|id| format!("chrome-extension://{id}"))
            .unwrap_or_default()
    }

    fn set_origin_rule<'a>(
        &'a self,
        rule: OriginRule,
        origins: &'a [String],
    ) -> LocalBoxFuture<'a, bool> {
        async move {
            let update = rule.update(origins, &extension_id().unwrap_or_default());
            let updated = async {
                let rules = chrome(&["declarativeNetRequest"])?;
                call(&rules, "updateSessionRules", &[to_js(&update)?]).await
            };
            match updated.await {
                Ok(_) => true,
                Err(err) => {
                    web_sys::console::warn_1(
                        &format!("KnowledgeLens: Chrome refused the rule for local servers ({origins:?}): {err}").into(),
                    );
                    false
                }
            }
        }
        .boxed_local()
    }

    fn local_servers(&self) -> Vec<LocalServer> {
        let mut servers = crate::llm::local::usual_servers();
        // The test build's scripted servers (pkg-scripts/lib/test-hooks.js); absent in dist/.
        let added = Reflect::get(&js_sys::global(), &JsValue::from_str("__klLocalServers"));
        if let Some(added) = added.ok().filter(|v| !v.is_undefined()) {
            match from_js::<Vec<LocalServer>>(added) {
                Ok(added) => servers.extend(added),
                Err(err) => web_sys::console::warn_1(
                    &format!("KnowledgeLens: __klLocalServers: {err}").into(),
                ),
            }
        }
        servers
    }
}

/// This extension's id (`chrome.runtime.id`).
fn extension_id() -> Option<String> {
    chrome(&["runtime", "id"])
        .ok()
        .and_then(|id| id.as_string())
}

/// The worker's backend.
#[wasm_bindgen]
pub struct Backend {
    service: Rc<Service>,
    keepalive: Rc<Cell<bool>>,
}

/// The alarm that wakes a stopped worker while a run is going on.
pub const KEEPALIVE_ALARM: &str = "knowledgelens-keepalive";

/// Seconds between the cheap extension API calls that keep a busy worker alive (Chrome
/// stops a worker after 30 s without events or extension API calls).
const KEEPALIVE_SECS: u64 = 20;

async fn set_alarm(on: bool) -> Result<(), JsError> {
    let alarms = chrome(&["alarms"])?;
    if on {
        let info = object(&[("periodInMinutes", JsValue::from_f64(0.5))])?;
        call(
            &alarms,
            "create",
            &[JsValue::from_str(KEEPALIVE_ALARM), info.into()],
        )
        .await?;
    } else {
        call(&alarms, "clear", &[JsValue::from_str(KEEPALIVE_ALARM)]).await?;
    }
    Ok(())
}

/// While any run is going on: an alarm (to wake the worker if it is stopped anyway) and a
/// cheap extension API call every 20 s (to keep it from being stopped). When nothing runs,
/// nothing keeps the worker awake. The persisted state, not this, is what carries a run.
fn ensure_keepalive(service: Rc<Service>, active: Rc<Cell<bool>>) {
    if active.replace(true) {
        return;
    }
    spawn_local(async move {
        if let Err(err) = set_alarm(true).await {
            web_sys::console::warn_1(
                &format!("KnowledgeLens: keep-alive alarm unavailable: {err}").into(),
            );
        }
        loop {
            JsClock.sleep(KEEPALIVE_SECS * 1000).await;
            if service.active_runs() == 0 {
                break;
            }
            if let Ok(runtime) = chrome(&["runtime"]) {
                // The call itself is the keep-alive; its result does not matter.
                let _platform = call(&runtime, "getPlatformInfo", &[]).await;
            }
        }
        if let Err(err) = set_alarm(false).await {
            web_sys::console::warn_1(
                &format!("KnowledgeLens: could not clear the keep-alive alarm: {err}").into(),
            );
        }
        active.set(false);
    });
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
        Some(url) if is_panel_url(&url) => {
            Err(forbidden("the in-page panel has a port of its own"))
        }
        Some(url) if url.starts_with(&own_origin) && in_top_frame(sender) => Ok(()),
        Some(url) if url.starts_with(&own_origin) => {
            Err(forbidden("it comes from a frame inside a page"))
        }
        _ => Err(forbidden("it does not come from an extension page")),
    }
}

/// Whether `url` is our in-page panel's document (`panel.html`, under the extension's id or
/// the dynamic one `use_dynamic_url` may give it in pages).
fn is_panel_url(url: &str) -> bool {
    crate::url::parse(url).is_some_and(|url| url.extension_page() == Some(PANEL_PAGE))
}

/// The in-page panel's document.
const PANEL_PAGE: &str = "panel.html";

/// Whether the sender is a top-level document (`frameId` 0, or none: a popup, the side
/// panel, a tab of ours), not a frame inside a page.
fn in_top_frame(sender: &JsValue) -> bool {
    match Reflect::get(sender, &"frameId".into())
        .ok()
        .and_then(|v| v.as_f64())
    {
        Some(frame) => frame == 0.0,
        None => true,
    }
}

/// The reply to a request that could not be converted to JSON.
fn unreadable(err: &JsError) -> Envelope {
    Envelope::of(
        serde_json::Value::Null,
        Err(ApiError::bad_request(format!(
            "Unreadable request: {}",
            err.message
        ))),
    )
}

/// Spawns the run a request started (keeping the worker alive while it goes on) and
/// returns the reply.
fn spawn_run(
    service: &Rc<Service>,
    keepalive: Rc<Cell<bool>>,
    (reply, run): (Envelope, Option<crate::service::RunFuture>),
) -> Envelope {
    if let Some(run) = run {
        spawn_local(run);
        ensure_keepalive(service.clone(), keepalive);
    }
    reply
}

/// The id of the tab the in-page panel's message comes from (`sender.tab.id`), when it
/// comes from our panel document in a frame of that tab (not a content script, not one of
/// our pages at the top of a tab).
fn sender_tab(sender: &JsValue) -> Option<i64> {
    let own_id = chrome(&["runtime", "id"]).ok()?.as_string()?;
    let id = Reflect::get(sender, &"id".into()).ok()?.as_string()?;
    let url = Reflect::get(sender, &"url".into()).ok()?.as_string()?;
    if id != own_id || !is_panel_url(&url) || in_top_frame(sender) {
        return None;
    }
    let tab = Reflect::get(sender, &"tab".into()).ok()?;
    let tab_id = Reflect::get(&tab, &"id".into()).ok()?.as_f64()?;
    (tab_id.fract() == 0.0 && (0.0..1e12).contains(&tab_id)).then_some(tab_id as i64)
}

/// The sender's page address, when it is one of our own extension pages.
fn own_page_url(sender: &JsValue) -> Option<String> {
    check_sender(sender).ok()?;
    Reflect::get(sender, &"url".into()).ok()?.as_string()
}

#[wasm_bindgen]
impl Backend {
    /// Starts the backend: restricts storage to trusted contexts and resumes every run that
    /// was interrupted when the worker stopped, both at once (they are independent, and a
    /// worker's start-up is on the user's critical path). `emit` receives every event.
    pub async fn start(emit: Function) -> Result<Backend, JsValue> {
        super::crash::install_panic_hook();
        crate::url::set_parser(super::urls::parse);
        crate::ports::set_logger(|message| {
            web_sys::console::warn_1(&format!("KnowledgeLens: {message}").into());
        });
        let restrict = |area: Area| async move {
            let restricted = ChromeStore::new(area).restrict_to_trusted_contexts().await;
            if let Err(err) = &restricted {
                web_sys::console::warn_1(&format!("KnowledgeLens: could not restrict storage.{area:?} to trusted contexts: {err}").into());
            }
            restricted.is_ok()
        };
        let restrict = futures::future::join(restrict(Area::Session), restrict(Area::Local));
        let ports = Ports {
            sessions: Rc::new(ChromeStore::new(Area::Session)),
            settings: Rc::new(ChromeStore::new(Area::Local)),
            clock: Rc::new(JsClock),
            events: Rc::new(JsEventSink::new(emit)),
            pages: Rc::new(ChromePages),
            models: Rc::new(WebModels::default()),
            random: Rc::new(super::random::CryptoRandom),
            search: Rc::new(
                crate::search::HttpSearchFactory::new(Rc::new(FetchHttp), Rc::new(JsClock))
                    .with_default_language(super::interop::browser_language()),
            ),
            capture: Rc::new(super::capture::ChromeCapture),
        };
        let tools = crate::tools::ToolBox::builtin();
        // The benchmark build's tool that panics (tests/e2e/crash.test.mjs); never shipped.
        #[cfg(feature = "bench")]
        let tools = tools.with(Box::new(super::bench_crash::PanicTool));
        let service = Service::with_notifier(ports, tools, Rc::new(ChromeNotifier));
        let keepalive = Rc::new(Cell::new(false));
        super::interop::performance_mark("kl:backend-built");
        // The local-server rules before any run calls a model (see service::local).
        let resume = async {
            service.restore_origin_rules().await;
            service.resume_all().await
        };
        let ((_, local_restricted), runs) = futures::future::join(restrict, resume).await;
        // API keys are stored only where content scripts cannot read them.
        service.set_keys_protected(local_restricted);
        if !runs.is_empty() {
            for run in runs {
                spawn_local(run);
            }
            ensure_keepalive(service.clone(), keepalive.clone());
        }
        Ok(Backend { service, keepalive })
    }

    /// A tab was closed (`chrome.tabs.onRemoved`): its run is stopped, and its session
    /// deleted once the run has stopped.
    /// Rejects when the session could not be deleted (the worker logs it).
    pub fn tab_closed(&self, tab_id: f64) -> Promise {
        let service = self.service.clone();
        future_to_promise(async move {
            if tab_id >= 0.0 {
                service.tab_closed(tab_id as u64).await.map_err(|e| {
                    super::interop::js_error(
                        "StorageError",
                        &format!("Could not remove the closed tab's session: {e}"),
                    )
                })?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// An extension page connected over the Port (`sender`: the Port's sender). Only our
    /// own pages count; whether it shows questions (popup, side panel) is decided in Rust.
    pub fn page_connected(&self, sender: JsValue) {
        if let Some(url) = own_page_url(&sender) {
            self.service.page_connected(&url);
        }
    }

    /// An extension page's Port disconnected.
    pub fn page_disconnected(&self, sender: JsValue) {
        if let Some(url) = own_page_url(&sender) {
            self.service.page_disconnected(&url);
        }
    }

    /// A notification was clicked (`chrome.notifications.onClicked`): a question's opens the
    /// popup on its session. Resolves with `"popup"`, `"window"` (the popup page in a window
    /// of its own) or `"ignored"` (not one of ours); rejects when nothing could open.
    pub fn notification_clicked(&self, notification_id: String) -> Promise {
        let service = self.service.clone();
        future_to_promise(async move {
            match service.notification_clicked(&notification_id).await {
                Ok(Some(opened)) => Ok(JsValue::from_str(opened.name())),
                Ok(None) => Ok(JsValue::from_str("ignored")),
                Err(err) => Err(super::interop::js_error("PopupError", &err.message)),
            }
        })
    }

    /// Runs going on in this worker.
    pub fn active_runs(&self) -> u32 {
        self.service.active_runs() as u32
    }

    /// Handles one request of the in-page explanation panel (the Port named
    /// `knowledgelens-panel`, `sender`: its sender). Only a snapshot or Stop of the run
    /// that opened the panel, in the sender's own tab, pass (`service::check_panel_request`); anything else
    /// resolves with a `forbidden` envelope (never rejects).
    pub fn handle_panel(&self, request: JsValue, sender: JsValue) -> Promise {
        let service = self.service.clone();
        let keepalive = self.keepalive.clone();
        future_to_promise(async move {
            let reply = match to_json_text(&request) {
                Err(e) => unreadable(&e),
                Ok(text) => {
                    let handled = service.handle_panel(&text, sender_tab(&sender)).await;
                    spawn_run(&service, keepalive, handled)
                }
            };
            to_js(&reply).map_err(|e: JsError| super::interop::js_error(&e.name, &e.message))
        })
    }

    /// Handles one request from a Port; resolves with the reply envelope (never rejects).
    pub fn handle(&self, request: JsValue, sender: JsValue) -> Promise {
        let service = self.service.clone();
        let keepalive = self.keepalive.clone();
        future_to_promise(async move {
            let reply = match check_sender(&sender) {
                Err(e) => {
                    let id = Reflect::get(&request, &"id".into())
                        .ok()
                        .and_then(|v| v.as_f64())
                        .map_or(serde_json::Value::Null, serde_json::Value::from);
                    Envelope::of(id, Err(e))
                }
                Ok(()) => match to_json_text(&request) {
                    Err(e) => unreadable(&e),
                    Ok(text) => {
                        let handled = service.handle_text(&text).await;
                        spawn_run(&service, keepalive, handled)
                    }
                },
            };
            to_js(&reply).map_err(|e: JsError| super::interop::js_error(&e.name, &e.message))
        })
    }
}
