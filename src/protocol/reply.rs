//! The replies: one type per request's data ([`Response`] gathers them) and the envelope
//! that carries a reply or an error back to the page.

use serde::Serialize;
use serde_json::Value;

use super::{ApiError, SessionView};
use crate::llm::diagnosis::doctor::Diagnosis;
use crate::llm::provider::{Capabilities, Provider};
use crate::settings::{Settings, WebSearch};
use crate::state::ArchiveSummary;
use crate::types::SearchError;
use kljson::ToJson;

/// `stop`: whether a run of this worker was told to stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct StopReply {
    /// A run was going on and will stop.
    pub stopping: bool,
}

/// `ack_input`: whether the acknowledgement reached the question it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct AckReply {
    /// The id named the question the run is waiting on.
    pub acknowledged: bool,
}

/// `answer_input`: the answer was handed to the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct AnswerReply {
    /// Always true (a refused answer is an error).
    pub accepted: bool,
}

/// `export`: the trajectory document, ready to download.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ExportReply {
    /// A file name for the download.
    pub filename: String,
    /// The document, pretty-printed JSON.
    pub json: String,
}

/// `get_settings` and `save_settings`: the settings, whether any were saved, and why a saved
/// record was not used (`get_settings`) or why the API keys were left out (`save_settings`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct SettingsReply {
    /// The settings in effect (the defaults when none are saved or usable).
    #[serde(flatten)]
    pub settings: Settings,
    /// Whether a settings record exists.
    pub configured: bool,
    /// Why the saved record was not used (the defaults are shown instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `test_connection`: the model answered, or the doctor says why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ConnectionReply {
    /// The model answered.
    Connected(Connected),
    /// The call failed.
    Failed(ConnectionFailed),
}

/// A working connection (`ok: true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Connected {
    /// Always true.
    pub ok: bool,
    /// How long the call took.
    pub latency_ms: u64,
    /// The model's reply (at most 200 characters).
    pub reply: String,
    /// The provider called.
    pub provider: Provider,
    /// The model called.
    pub model: String,
    /// What the provider and model can do.
    pub capabilities: Capabilities,
}

/// A failed connection (`ok: false`) and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ConnectionFailed {
    /// Always false.
    pub ok: bool,
    /// How long the call took to fail.
    pub latency_ms: u64,
    /// The doctor's reading.
    pub diagnosis: Diagnosis,
}

/// `list_models`: the models the provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ModelsReply {
    /// The model names (empty when the provider cannot say).
    pub models: Vec<String>,
    /// Whether the provider listed them.
    pub listed: bool,
    /// Why listing failed, when it was tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
}

/// `find_local_models`: the model servers that answered on this computer, with their models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct LocalModelsReply {
    /// In the order of the probe list ([`crate::llm::local::USUAL_SERVERS`]).
    pub servers: Vec<FoundServer>,
}

/// A model server found on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct FoundServer {
    /// Its name as users know it ("Ollama", "LM Studio").
    pub name: String,
    /// The provider that speaks its API.
    pub provider: Provider,
    /// The Base URL to save for it.
    pub base_url: String,
    /// The models it listed (may be empty).
    pub models: Vec<String>,
}

/// `test_search`: the search worked, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum SearchCheckReply {
    /// The provider answered.
    Found(SearchFound),
    /// The search failed.
    Failed(SearchCheckFailed),
}

/// A working search (`ok: true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct SearchFound {
    /// Always true.
    pub ok: bool,
    /// How long the search took, in ms.
    pub latency_ms: u64,
    /// The provider's name.
    pub provider: String,
    /// What was searched for.
    pub query: String,
    /// How many results came back.
    pub count: usize,
    /// The titles of the first few.
    pub titles: Vec<String>,
}

/// A failed search (`ok: false`): the error says what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct SearchCheckFailed {
    /// Always false.
    pub ok: bool,
    /// How long the search took to fail, in ms.
    pub latency_ms: u64,
    /// The error (kind, message with the remedy, HTTP status, what the server said).
    pub error: SearchError,
}

/// `search_offer`: web search as it is now that the offer is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct SearchOfferReply {
    /// The setting "Search provider" (`wikipedia` after "Turn on").
    pub search_provider: WebSearch,
    /// Always true: the offer is not made again.
    pub search_offered: bool,
}

/// `history`: the archived conversations of every tab, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct HistoryReply {
    /// At most [`HistoryReply::MAX`] of them.
    pub conversations: Vec<ArchiveSummary>,
}

impl HistoryReply {
    /// Most conversations listed.
    pub const MAX: usize = 20;
}

/// `clear_history`: how many archived conversations were deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ClearedReply {
    /// Conversations deleted.
    pub cleared: u32,
}

/// `read_pages`: the pages read in this browser session that the conversation may add
/// (never incognito tabs'), most recently read first; not the session's own page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ReadPagesReply {
    /// The pages.
    pub pages: Vec<ReadPageView>,
}

/// A read page as "Add pages" lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ReadPageView {
    /// Its id (what `add_pages` names).
    pub id: u64,
    /// Its title.
    pub title: String,
    /// Its site (host).
    pub site: String,
    /// Its URL.
    pub url: String,
    /// When it was read (ms).
    pub read_at: u64,
    /// Whether the conversation uses it already.
    pub added: bool,
}

/// `locate_passage`: whether the passage was found on the page (it was then scrolled into
/// view and highlighted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct LocateReply {
    /// The passage's beginning is on the page.
    pub found: bool,
    /// For a passage of an added page: the tab it was found in (the popup switches to it);
    /// not found there (the tab was closed or shows another page), the popup opens the
    /// page's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<i64>,
}

/// `get_actions`, `save_actions`: the actions in menu order (built-ins and the user's), and
/// why the saved ones could not be used (the defaults are shown meanwhile).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionsReply {
    /// The actions.
    pub actions: crate::actions::store::ActionsRecord,
    /// Why the saved record was not used, if it was not.
    pub notice: Option<String>,
}

/// `check_actions`: every problem of the list, each with its action and field (none: it
/// can be saved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionsCheckReply {
    /// The problems, in list order.
    pub errors: Vec<crate::actions::store::ActionFieldError>,
}

/// `import_actions`: the list a file holds (migrated, new actions given ids), and its
/// problems; nothing is saved until Options saves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ImportActionsReply {
    /// The list.
    pub actions: crate::actions::store::ActionsRecord,
    /// Its problems, as `check_actions` gives them.
    pub errors: Vec<crate::actions::store::ActionFieldError>,
}

/// The data of a successful reply: one variant per reply type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Response {
    /// `snapshot`, `ask`, `new_conversation`, `open_conversation`.
    View(Box<SessionView>),
    /// `stop`.
    Stop(StopReply),
    /// `ack_input`.
    Ack(AckReply),
    /// `answer_input`.
    Answer(AnswerReply),
    /// `export`.
    Export(ExportReply),
    /// `get_settings`, `save_settings`.
    Settings(Box<SettingsReply>),
    /// `test_connection`.
    Connection(Box<ConnectionReply>),
    /// `list_models`.
    Models(ModelsReply),
    /// `find_local_models`.
    LocalModels(LocalModelsReply),
    /// `test_search`.
    SearchCheck(Box<SearchCheckReply>),
    /// `search_offer`.
    SearchOffer(SearchOfferReply),
    /// `history`.
    History(HistoryReply),
    /// `clear_history`.
    Cleared(ClearedReply),
    /// `locate_passage`.
    Locate(LocateReply),
    /// `read_pages`.
    ReadPages(ReadPagesReply),
    /// `snapshot` of the in-page panel.
    Panel(super::panel::PanelView),
    /// `get_actions`, `save_actions`.
    Actions(Box<ActionsReply>),
    /// `check_actions`.
    ActionsCheck(ActionsCheckReply),
    /// `import_actions`.
    ImportActions(Box<ImportActionsReply>),
}

/// `impl From<T> for Response` for each reply type.
macro_rules! response_from {
    ($($ty:ty => |$v:ident| $make:expr;)*) => {$(
        impl From<$ty> for Response {
            fn from($v: $ty) -> Self {
                $make
            }
        }
    )*};
}

response_from! {
    SessionView => |v| Self::View(Box::new(v));
    StopReply => |v| Self::Stop(v);
    super::panel::PanelView => |v| Self::Panel(v);
    AckReply => |v| Self::Ack(v);
    AnswerReply => |v| Self::Answer(v);
    ExportReply => |v| Self::Export(v);
    SettingsReply => |v| Self::Settings(Box::new(v));
    ConnectionReply => |v| Self::Connection(Box::new(v));
    ModelsReply => |v| Self::Models(v);
    LocalModelsReply => |v| Self::LocalModels(v);
    SearchCheckReply => |v| Self::SearchCheck(Box::new(v));
    SearchOfferReply => |v| Self::SearchOffer(v);
    HistoryReply => |v| Self::History(v);
    ClearedReply => |v| Self::Cleared(v);
    ReadPagesReply => |v| Self::ReadPages(v);
    LocateReply => |v| Self::Locate(v);
    ActionsReply => |v| Self::Actions(Box::new(v));
    ActionsCheckReply => |v| Self::ActionsCheck(v);
    ImportActionsReply => |v| Self::ImportActions(Box::new(v));
}

/// The reply to one request: `{id, ok: true, data}` or `{id, ok: false, error}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Envelope {
    /// The request's id, echoed.
    pub id: Value,
    /// Whether the request succeeded.
    pub ok: bool,
    /// The reply, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Response>,
    /// The error, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

impl Envelope {
    /// The envelope of `result` for request `id`.
    pub fn of(id: Value, result: Result<Response, ApiError>) -> Self {
        match result {
            Ok(data) => Self {
                id,
                ok: true,
                data: Some(data),
                error: None,
            },
            Err(error) => Self {
                id,
                ok: false,
                data: None,
                error: Some(error),
            },
        }
    }

    /// The envelope as a JSON value: the text the worker sends (`ToJson`, as `web::to_js`
    /// writes it), parsed, so tests of the service read exactly what the UI gets.
    pub fn to_value(&self) -> Value {
        kljson::parse_value(&kljson::to_string(self)).unwrap_or(Value::Null)
    }
}
