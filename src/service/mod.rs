//! The worker's request handling, pure: [`Service`] reads a request, dispatches it to the
//! part that owns it (runs, input, export, settings, connection, search check, conversations) and wraps the typed reply
//! in the envelope. Everything reaches the world through the ports; the `web` layer only
//! converts values and spawns the futures this returns.

mod actions;
mod added;
mod attention;
mod connection;
mod conversations;
mod export;
mod input;
pub mod local;
mod locate;
mod panel;
mod registry;
mod runs;
mod search_check;
mod settings;

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde_json::Value;

use crate::llm::{LlmError, LlmErrorKind};
use crate::ports::{
    Clock, EventSink, LlmClient, NoNotifier, Notifier, NotifyError, PageReader, PopupOpened,
    Random, ScreenCapture, StateStore, StoreError,
};
use crate::protocol::{request_id, ApiError, Command, Envelope, Request, Response, SessionKey};
use crate::search::SearchFactory;
use crate::settings::Settings;
use crate::state;
use crate::tools::ToolBox;

pub use attention::{is_ui_page, question_notification_id, QUESTION_TITLE};
use attention::{Attention, AttentionSink};
pub use local::{OriginRule, PROBE_DEADLINE_MS};
pub use panel::check_panel_request;
use registry::Registry;
pub use runs::{CLOSED_TAB, NO_ACCESS, UNREADABLE_PAGE};

/// Longest question accepted, in characters.
pub use crate::protocol::MAX_QUESTION_CHARS;

/// Makes model clients, and tells what the browser knows about reaching a provider.
pub trait ModelFactory {
    /// A client speaking the settings' provider.
    fn client(&self, settings: &Settings) -> Rc<dyn LlmClient>;
    /// The models the settings' provider offers.
    fn models<'a>(
        &'a self,
        settings: &'a Settings,
    ) -> LocalBoxFuture<'a, Result<Vec<String>, LlmError>> {
        let provider = settings.provider.label();
        futures::future::ready(Err(LlmError::new(
            LlmErrorKind::BadRequest,
            format!("{provider} does not list its models."),
        )))
        .boxed_local()
    }
    /// Whether the extension holds a host permission for `origin` (`None`: unknown).
    fn host_permission<'a>(&'a self, _origin: &'a str) -> LocalBoxFuture<'a, Option<bool>> {
        futures::future::ready(None).boxed_local()
    }
    /// `chrome-extension://<id>` (empty when unknown).
    fn extension_origin(&self) -> String {
        String::new()
    }
    /// Makes `rule` let the extension's own requests to `origins` (loopback origins) through
    /// the servers' origin checks; no origins removes it. True when the browser holds the
    /// rule as asked (false where there is no browser, or it refused).
    fn set_origin_rule<'a>(
        &'a self,
        _rule: OriginRule,
        _origins: &'a [String],
    ) -> LocalBoxFuture<'a, bool> {
        futures::future::ready(false).boxed_local()
    }
    /// The servers to look for on this computer: [`crate::llm::local::USUAL_SERVERS`]
    /// (the test build adds its scripted ones).
    fn local_servers(&self) -> Vec<crate::llm::local::LocalServer> {
        crate::llm::local::usual_servers()
    }
}

/// The ports the service needs.
#[derive(Clone)]
pub struct Ports {
    /// Session records (`chrome.storage.session`).
    pub sessions: Rc<dyn StateStore>,
    /// Settings (`chrome.storage.local`).
    pub settings: Rc<dyn StateStore>,
    /// Time.
    pub clock: Rc<dyn Clock>,
    /// The UI.
    pub events: Rc<dyn EventSink>,
    /// Page text.
    pub pages: Rc<dyn PageReader>,
    /// Model clients.
    pub models: Rc<dyn ModelFactory>,
    /// Random numbers (each run's fence nonce).
    pub random: Rc<dyn Random>,
    /// Web search clients.
    pub search: Rc<dyn SearchFactory>,
    /// Screenshots of a tab (`extract_screenshot_text`).
    pub capture: Rc<dyn ScreenCapture>,
}

/// A run to drive to its end (spawn it).
pub type RunFuture = LocalBoxFuture<'static, ()>;

/// The worker's logic.
pub struct Service {
    ports: Ports,
    tools: ToolBox,
    registry: Registry,
    attention: Rc<Attention>,
    /// Whether stored settings are out of content scripts' reach (the extension restricted
    /// `chrome.storage.local` to trusted contexts); API keys are saved only then.
    keys_protected: std::cell::Cell<bool>,
    /// Local-server probes going on (the probe's origin rule goes when the last ends).
    probes: std::cell::Cell<u32>,
}

impl Service {
    /// A service over `ports`.
    pub fn new(ports: Ports) -> Rc<Self> {
        Self::with_tools(ports, ToolBox::builtin())
    }

    /// A service over `ports` whose runs use `tools` (tests add tools with side effects).
    pub fn with_tools(ports: Ports, tools: ToolBox) -> Rc<Self> {
        Self::with_notifier(ports, tools, Rc::new(NoNotifier))
    }

    /// A service whose runs show their step on the toolbar badge, and whose questions to
    /// the user `notifier` makes impossible to miss.
    pub fn with_notifier(mut ports: Ports, tools: ToolBox, notifier: Rc<dyn Notifier>) -> Rc<Self> {
        let attention = Rc::new(Attention::new(notifier));
        ports.events = Rc::new(AttentionSink {
            inner: ports.events,
            attention: attention.clone(),
        });
        Rc::new(Self {
            ports,
            tools,
            registry: Registry::default(),
            attention,
            keys_protected: std::cell::Cell::new(true),
            probes: std::cell::Cell::new(0),
        })
    }

    /// Says whether the settings store is out of content scripts' reach (true until told
    /// otherwise). While it is not, `save_settings` saves everything but the API keys.
    pub fn set_keys_protected(&self, protected: bool) {
        self.keys_protected.set(protected);
    }

    /// Handles one request; a started run comes back as a future to spawn.
    pub async fn handle(
        self: &Rc<Self>,
        request: Request,
    ) -> (Result<Response, ApiError>, Option<RunFuture>) {
        fn reply<T: Into<Response>>(
            result: Result<T, ApiError>,
        ) -> (Result<Response, ApiError>, Option<RunFuture>) {
            (result.map(Into::into), None)
        }
        fn with_run<T: Into<Response>>(
            result: Result<(T, Option<RunFuture>), ApiError>,
        ) -> (Result<Response, ApiError>, Option<RunFuture>) {
            match result {
                Ok((data, run)) => (Ok(data.into()), run),
                Err(e) => (Err(e), None),
            }
        }
        match request.command {
            Command::Ask {
                session,
                question,
                tab_id,
                max_steps,
                research,
            } => with_run(
                self.ask(session, &question, tab_id, max_steps, research)
                    .await
                    .map(|(view, run)| (view, Some(run))),
            ),
            Command::Explain {
                session,
                tab_id,
                selection,
                max_steps,
            } => with_run(
                self.explain(session, selection, tab_id, max_steps)
                    .await
                    .map(|(view, run)| (view, Some(run))),
            ),
            Command::RunAction {
                session,
                tab_id,
                selection,
                action,
                language,
                max_steps,
            } => with_run(
                self.run_action(session, selection, &action, language, tab_id, max_steps)
                    .await
                    .map(|(view, run)| (view, Some(run))),
            ),
            Command::GetActions => reply(self.get_actions().await),
            Command::CheckActions { actions } => reply(Ok(Self::check_actions(&actions))),
            Command::SaveActions { actions } => reply(self.save_actions(actions).await),
            Command::ImportActions { text } => reply(Self::import_actions(&text)),
            Command::Snapshot { session } => with_run(self.snapshot(session).await),
            Command::Stop { session } => reply(Ok(self.stop(session))),
            Command::Export { session } => reply(self.export(session).await),
            Command::AckInput {
                session,
                request_id,
            } => with_run(self.ack_input(session, request_id).await),
            Command::AnswerInput {
                session,
                request_id,
                answer,
            } => with_run(self.answer_input(session, request_id, &answer).await),
            Command::GetSettings => reply(self.get_settings().await),
            Command::SaveSettings { settings } => reply(self.save_settings(settings).await),
            Command::TestConnection { settings } => reply(self.test_connection(settings).await),
            Command::ListModels { settings } => reply(self.list_models(settings).await),
            Command::FindLocalModels => reply(Ok(self.find_local_models().await)),
            Command::TestSearch { settings } => reply(Ok(self.test_search(settings).await)),
            Command::SearchOffer { answer } => reply(self.search_offer(answer).await),
            Command::NewConversation { session } => reply(self.new_conversation(session).await),
            Command::History => reply(self.history().await),
            Command::OpenConversation { conversation } => {
                reply(self.open_conversation(conversation).await)
            }
            Command::ClearHistory => reply(self.clear_history().await),
            Command::LocatePassage {
                session,
                text,
                page,
            } => reply(self.locate_passage(session, &text, page).await),
            Command::ReadPages { session } => reply(self.read_pages(session).await),
            Command::AddPages { session, pages } => reply(self.add_pages(session, &pages).await),
            Command::RemovePage { session, page } => reply(self.remove_page(session, page).await),
        }
    }

    /// Parses a JSON request and handles it; the reply is the envelope.
    pub async fn handle_text(self: &Rc<Self>, request: &str) -> (Envelope, Option<RunFuture>) {
        let (result, run) = match Request::parse(request) {
            Ok(req) => self.handle(req).await,
            Err(e) => (Err(e), None),
        };
        (Envelope::of(request_id(request), result), run)
    }

    /// [`Service::handle_text`] for a JSON value, with the envelope as a JSON value.
    pub async fn handle_json(self: &Rc<Self>, request: Value) -> (Value, Option<RunFuture>) {
        let (envelope, run) = self.handle_text(&request.to_string()).await;
        (envelope.to_value(), run)
    }

    /// Runs going on in this worker.
    pub fn active_runs(&self) -> usize {
        self.registry.len()
    }

    /// An extension page connected to the worker (`url`: its address). While a popup or
    /// side panel is connected, a question to the user needs no notification.
    pub fn page_connected(&self, url: &str) {
        self.attention.page_connected(url);
    }

    /// An extension page disconnected (`url`: its address).
    pub fn page_disconnected(&self, url: &str) {
        self.attention.page_disconnected(url);
    }

    /// A notification was clicked: for a question's, it goes and the popup opens on the
    /// question's session. `Ok(None)` for any other notification.
    pub async fn notification_clicked(&self, id: &str) -> Result<Option<PopupOpened>, NotifyError> {
        self.attention.question_clicked(id).await
    }

    /// A tab was closed: its run, if any, is stopped, and its session is deleted now, or
    /// once the run has stopped.
    pub async fn tab_closed(&self, tab_id: u64) -> Result<(), StoreError> {
        let key = SessionKey::tab(tab_id);
        if self.registry.close_tab(key) {
            return Ok(());
        }
        state::delete_session(self.ports.sessions.as_ref(), &key.to_string()).await
    }
}
