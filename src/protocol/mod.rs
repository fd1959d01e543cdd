//! The messages between the extension's pages and the worker: one Rust type per request
//! ([`Command`]) and per reply ([`reply`]), one envelope (`{id, ok, data}` /
//! `{id, ok: false, error: {kind, message}}`), the session key, and the limits both sides
//! share. [`gen`] writes the constants the JS needs into `extension/protocol.gen.js`.

mod error;
pub mod gen;
pub mod panel;
pub mod reply;
mod session;
mod surrogates;
pub mod view;

use serde::Serialize;
use serde_json::Value;

use crate::settings::Settings;
pub use crate::types::page::{
    MAX_CONTEXT_CHARS, MAX_LOCATE_CHARS, MAX_PAGE_CHARS, MAX_SELECTION_CHARS, PAGE_READ_TIMEOUT_MS,
};
use crate::types::Selection;
use kljson::FromJson;

pub use error::{ApiError, ApiErrorKind, UserText};
pub use reply::{Envelope, Response};
pub use session::{ConversationId, SessionKey};
pub use surrogates::replace_lone_surrogates;
pub use view::{PageView, PendingInputView, SessionView, StepView};

/// The name of the `chrome.runtime` Port between the extension's pages and the worker.
pub const PORT_NAME: &str = "knowledgelens";

/// The name of the `chrome.runtime` Port between the in-page explanation panel (a content
/// script) and the worker; its requests are [`panel::PanelRequest`]s.
pub const PANEL_PORT_NAME: &str = "knowledgelens-panel";

/// The name of the Port on which `content/pdf-fetch.js`, in a PDF tab, hands the PDF's bytes
/// to the offscreen document that extracts its text (the worker ignores it).
pub const PDF_PORT_NAME: &str = "knowledgelens-pdf";

/// Longest question (and answer to the agent's question) accepted, in characters.
pub const MAX_QUESTION_CHARS: usize = 20_000;

/// A request from a page: `{"id": 1, "type": "ask", ...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Chosen by the sender, echoed in the reply.
    pub id: Value,
    /// What is asked.
    pub command: Command,
}

/// The wire form of every request, one flat object (decoded without buffering).
#[derive(FromJson)]
struct RawRequest {
    #[serde(default)]
    id: Value,
    #[serde(rename = "type")]
    kind: String,
    session: Option<String>,
    question: Option<String>,
    tab_id: Option<i64>,
    max_steps: Option<u32>,
    research: Option<ResearchAsk>,
    settings: Option<Settings>,
    request_id: Option<String>,
    answer: Option<String>,
    conversation: Option<String>,
    selection: Option<Selection>,
    text: Option<String>,
    pages: Option<Vec<u64>>,
    page: Option<u64>,
    action: Option<String>,
    language: Option<String>,
    actions: Option<crate::actions::store::ActionsRecord>,
}

/// `"research": {"subtopics": 4}` of an `ask`: answer it in research mode.
#[derive(Debug, Clone, Copy, FromJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct ResearchAsk {
    /// Most subtopics to research (2 to 6; default 4).
    #[serde(default = "default_subtopics")]
    subtopics: u32,
}

fn default_subtopics() -> u32 {
    crate::state::research::DEFAULT_SUBTOPICS
}

impl ResearchAsk {
    /// The subtopics asked for, if allowed.
    fn checked(self) -> Result<u32, ApiError> {
        use crate::state::research::{MAX_SUBTOPICS, MIN_SUBTOPICS};
        if (MIN_SUBTOPICS..=MAX_SUBTOPICS).contains(&self.subtopics) {
            Ok(self.subtopics)
        } else {
            Err(ApiError::bad_request(format!(
                "Subtopics must be {MIN_SUBTOPICS} to {MAX_SUBTOPICS}, not {}.",
                self.subtopics
            )))
        }
    }
}

/// The `id` of a request, read on its own: a reply to an unreadable request still names it.
pub fn request_id(text: &str) -> Value {
    #[derive(FromJson)]
    struct IdOnly {
        #[serde(default)]
        id: Value,
    }
    kljson::decode::<IdOnly>(&replace_lone_surrogates(text))
        .map(|r| r.id)
        .unwrap_or(Value::Null)
}

impl Request {
    /// Parses a request from JSON text, naming what is missing or unknown; the session key
    /// is checked here, once. A lone surrogate in a string becomes U+FFFD.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let raw: RawRequest = kljson::decode(&replace_lone_surrogates(text))
            .map_err(|e| ApiError::bad_request(format!("Unreadable request: {e}")))?;
        let kind = raw.kind.as_str();
        let missing = |field: &str| {
            ApiError::bad_request(format!("Unreadable request: \"{kind}\" needs {field}."))
        };
        let session = || {
            let text = raw
                .session
                .as_deref()
                .ok_or_else(|| missing("a \"session\""))?;
            SessionKey::parse(text)
        };
        let request_id = || {
            raw.request_id
                .clone()
                .ok_or_else(|| missing("a \"request_id\""))
        };
        let settings = || raw.settings.clone().ok_or_else(|| missing("\"settings\""));
        let selection = || {
            raw.selection
                .clone()
                .ok_or_else(|| missing("a \"selection\""))?
                .checked()
                .map_err(|e| ApiError::bad_request(e.to_string()))
        };
        let command = match kind {
            "snapshot" => Command::Snapshot {
                session: session()?,
            },
            "ask" => Command::Ask {
                session: session()?,
                question: raw
                    .question
                    .clone()
                    .ok_or_else(|| missing("a \"question\""))?,
                tab_id: raw.tab_id,
                max_steps: raw.max_steps,
                research: raw.research.map(ResearchAsk::checked).transpose()?,
            },
            "explain" => Command::Explain {
                session: session()?,
                tab_id: raw.tab_id,
                max_steps: raw.max_steps,
                selection: selection()?,
            },
            "run_action" => Command::RunAction {
                session: session()?,
                tab_id: raw.tab_id,
                max_steps: raw.max_steps,
                selection: selection()?,
                action: checked_action_id(
                    raw.action
                        .as_deref()
                        .ok_or_else(|| missing("an \"action\""))?,
                )?,
                language: raw
                    .language
                    .as_deref()
                    .and_then(crate::actions::checked_language),
            },
            "get_actions" => Command::GetActions,
            "check_actions" => Command::CheckActions {
                actions: raw.actions.clone().ok_or_else(|| missing("\"actions\""))?,
            },
            "import_actions" => Command::ImportActions {
                text: raw
                    .text
                    .clone()
                    .ok_or_else(|| missing("a \"text\" (the file's)"))?,
            },
            "save_actions" => Command::SaveActions {
                actions: raw.actions.clone().ok_or_else(|| missing("\"actions\""))?,
            },
            "stop" => Command::Stop {
                session: session()?,
            },
            "export" => Command::Export {
                session: session()?,
            },
            "ack_input" => Command::AckInput {
                session: session()?,
                request_id: request_id()?,
            },
            "answer_input" => Command::AnswerInput {
                session: session()?,
                request_id: request_id()?,
                answer: raw.answer.clone().ok_or_else(|| missing("an \"answer\""))?,
            },
            "get_settings" => Command::GetSettings,
            "save_settings" => Command::SaveSettings {
                settings: settings()?,
            },
            "test_connection" => Command::TestConnection {
                settings: settings()?,
            },
            "list_models" => Command::ListModels {
                settings: settings()?,
            },
            "find_local_models" => Command::FindLocalModels,
            "test_search" => Command::TestSearch {
                settings: settings()?,
            },
            "new_conversation" => Command::NewConversation {
                session: session()?,
            },
            "history" => Command::History,
            "open_conversation" => Command::OpenConversation {
                conversation: ConversationId::parse(
                    raw.conversation
                        .as_deref()
                        .ok_or_else(|| missing("a \"conversation\" (an id from \"history\")"))?,
                )?,
            },
            "clear_history" => Command::ClearHistory,
            "search_offer" => Command::SearchOffer {
                answer: SearchOfferAnswer::parse(
                    raw.answer
                        .as_deref()
                        .ok_or_else(|| missing("an \"answer\" (\"turn_on\" or \"not_now\")"))?,
                )?,
            },
            "locate_passage" => Command::LocatePassage {
                session: session()?,
                text: checked_passage(raw.text.as_deref().ok_or_else(|| missing("a \"text\""))?)?,
                page: raw.page,
            },
            "read_pages" => Command::ReadPages {
                session: session()?,
            },
            "add_pages" => Command::AddPages {
                session: session()?,
                pages: raw
                    .pages
                    .clone()
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| missing("\"pages\" (ids from \"read_pages\")"))?,
            },
            "remove_page" => Command::RemovePage {
                session: session()?,
                page: raw
                    .page
                    .ok_or_else(|| missing("a \"page\" (an id from the view's \"added\")"))?,
            },
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unreadable request: unknown type \"{other}\"."
                )))
            }
        };
        Ok(Self {
            id: raw.id,
            command,
        })
    }
}

/// What a request asks for. Its schema (`schemars`, for the generated typedefs and
/// docs/protocol.md) is the wire form [`Request::parse`] reads: `{"type": "ask", ...}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    not(target_arch = "wasm32"),
    derive(schemars::JsonSchema),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum Command {
    /// The session's current view. Reply: [`SessionView`].
    Snapshot {
        /// Session key.
        session: SessionKey,
    },
    /// Ask a question (starts a run). Reply: [`SessionView`].
    Ask {
        /// Session key.
        session: SessionKey,
        /// The question.
        question: String,
        /// The tab whose text is the context.
        tab_id: Option<i64>,
        /// Step bound for this run.
        max_steps: Option<u32>,
        /// Research mode with at most this many subtopics (checked: 2 to 6); `None`: a
        /// question answered by the loop.
        #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Option<ResearchAsk>"))]
        research: Option<u32>,
    },
    /// Stop the session's run. Reply: [`reply::StopReply`].
    Stop {
        /// Session key.
        session: SessionKey,
    },
    /// The trajectory as a JSON download. Reply: [`reply::ExportReply`].
    Export {
        /// Session key.
        session: SessionKey,
    },
    /// The UI showed the run's question to the user (`request_input`).
    /// Reply: [`reply::AckReply`].
    AckInput {
        /// Session key.
        session: SessionKey,
        /// The question's id.
        request_id: String,
    },
    /// The user's answer to the run's question. Reply: [`reply::AnswerReply`].
    AnswerInput {
        /// Session key.
        session: SessionKey,
        /// The question's id.
        request_id: String,
        /// The answer.
        answer: String,
    },
    /// Read the settings. Reply: [`reply::SettingsReply`].
    GetSettings,
    /// Save the settings. Reply: the saved [`Settings`].
    SaveSettings {
        /// The new settings.
        settings: Settings,
    },
    /// One tiny real call with these (possibly unsaved) settings: latency and reply, or
    /// the doctor's diagnosis. Reply: [`reply::ConnectionReply`].
    TestConnection {
        /// The settings to try.
        settings: Settings,
    },
    /// The models the provider in these settings offers. Reply: [`reply::ModelsReply`].
    ListModels {
        /// The settings to ask with.
        settings: Settings,
    },
    /// Archive the session's conversation and start it afresh. Reply: the fresh
    /// [`SessionView`].
    NewConversation {
        /// Session key.
        session: SessionKey,
    },
    /// The archived conversations of every tab, newest first. Reply:
    /// [`reply::HistoryReply`].
    History,
    /// One archived conversation, read-only. Reply: its [`SessionView`] (`archived`).
    OpenConversation {
        /// Which one (`conv:<session>:<n>`, as `history` lists it).
        conversation: ConversationId,
    },
    /// Delete every archived conversation. Reply: [`reply::ClearedReply`].
    ClearHistory,
    /// Explain the selected text of a tab (starts a run whose question is the selection).
    /// Reply: [`SessionView`].
    Explain {
        /// Session key.
        session: SessionKey,
        /// The tab the selection is in (its text is read as for a question).
        tab_id: Option<i64>,
        /// The selection, checked and capped ([`Selection::checked`]).
        selection: Selection,
        /// Step bound for this run.
        max_steps: Option<u32>,
    },
    /// One real web search with these (possibly unsaved) settings' search fields: the
    /// result count and latency, or the error. Reply: [`reply::SearchCheckReply`].
    TestSearch {
        /// The settings to try.
        settings: Settings,
    },
    /// The user's answer to the popup's offer to search the web (made while search is off
    /// and the offer was never answered): saves it, and turns Wikipedia search on for
    /// "Turn on". Reply: [`reply::SearchOfferReply`].
    SearchOffer {
        /// "Turn on" or "Not now".
        answer: SearchOfferAnswer,
    },
    /// Scroll the session's tab to a cited page passage and highlight it briefly (only a
    /// `tab:<id>` session has a tab). Reply: [`reply::LocateReply`].
    LocatePassage {
        /// Session key (its tab is the one searched).
        session: SessionKey,
        /// The passage's text (a page source's `excerpt`), trimmed and capped.
        text: String,
        /// For a passage of a page added to the conversation: its id (the view's `added`);
        /// the passage is looked for in the tab that page was read in.
        page: Option<u64>,
    },
    /// Look for model servers on this computer (the usual ports, 1 s each, in parallel):
    /// each one that answers, with its models. Reply: [`reply::LocalModelsReply`].
    FindLocalModels,
    /// The pages read in this browser session that the session's conversation may add as
    /// sources ("Add pages"). Reply: [`reply::ReadPagesReply`].
    ReadPages {
        /// Session key.
        session: SessionKey,
    },
    /// Add read pages to the session's conversation as sources beside its page (at most
    /// `page::MAX_ADDED_PAGES` at a time). Refused while a run goes on. Reply: the
    /// [`SessionView`] (its `added`).
    AddPages {
        /// Session key.
        session: SessionKey,
        /// Ids from `read_pages`.
        pages: Vec<u64>,
    },
    /// Remove an added page from the session's conversation (its passage numbers are not
    /// given again). Refused while a run goes on. Reply: the [`SessionView`].
    RemovePage {
        /// Session key.
        session: SessionKey,
        /// Its id (from the view's `added`).
        page: u64,
    },
    /// Apply a selection action to the selected text of a tab (starts a run, like
    /// `explain`; the action `explain` is an explanation). Reply: [`SessionView`].
    RunAction {
        /// Session key.
        session: SessionKey,
        /// The tab the selection is in (its text is read as for a question).
        tab_id: Option<i64>,
        /// The selection, checked and capped ([`Selection::checked`]).
        selection: Selection,
        /// The action's id: a built-in's (`explain`, `summarize`, `translate`, `define`,
        /// `simplify`) or one of the user's actions.
        action: String,
        /// The browser's language, by name ("French"): what Translate translates into
        /// unless Options chose another (letters, spaces, `-` and parentheses, at most 40).
        language: Option<String>,
        /// Step bound for this run.
        max_steps: Option<u32>,
    },
    /// The selection actions (built-ins and the user's, in menu order). Reply:
    /// [`reply::ActionsReply`].
    GetActions,
    /// Check a list of actions as Options shows it, without saving it. Reply:
    /// [`reply::ActionsCheckReply`].
    CheckActions {
        /// The list.
        actions: crate::actions::store::ActionsRecord,
    },
    /// Save the list of actions (refused, with its first problem, unless it passes the
    /// check). Reply: the saved [`reply::ActionsReply`].
    SaveActions {
        /// The list.
        actions: crate::actions::store::ActionsRecord,
    },
    /// Read an exported actions file (JSON text, at most 256 KB) into a list to confirm:
    /// nothing is saved. Reply: [`reply::ImportActionsReply`].
    ImportActions {
        /// The file's text.
        text: String,
    },
}

/// An action id as a request names it: 1 to 64 ASCII letters, digits, `-` or `_`.
pub fn checked_action_id(id: &str) -> Result<String, ApiError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(id.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "Unreadable request: \"{}\" is not an action id.",
            crate::types::text::clip_marked(id, 40)
        )))
    }
}

/// A passage to locate, trimmed and cut to [`MAX_LOCATE_CHARS`]; empty is refused.
fn checked_passage(text: &str) -> Result<String, ApiError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ApiError::bad_request(
            "Unreadable request: \"locate_passage\" needs the passage's text.",
        ));
    }
    Ok(crate::types::page::cap_chars(text, MAX_LOCATE_CHARS).0)
}

/// The answers to the popup's offer to search the web.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SearchOfferAnswer {
    /// "Turn on": search Wikipedia (no key, no host permission).
    TurnOn,
    /// "Not now": search stays off, and the offer is not made again.
    NotNow,
}

kljson::named_enum!(SearchOfferAnswer {
    TurnOn = "turn_on",
    NotNow = "not_now",
});

impl SearchOfferAnswer {
    /// The answer named `text`, or why it is not one.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        Self::from_name(text).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Unreadable request: \"{text}\" is not an answer to the search offer (\"turn_on\" or \"not_now\")."
                ))
            })
    }
}

impl Command {
    /// Every request's wire name (`"type"`), in the order of the variants.
    pub const NAMES: [&'static str; 27] = [
        "snapshot",
        "ask",
        "stop",
        "export",
        "ack_input",
        "answer_input",
        "get_settings",
        "save_settings",
        "test_connection",
        "list_models",
        "new_conversation",
        "history",
        "open_conversation",
        "clear_history",
        "explain",
        "test_search",
        "search_offer",
        "locate_passage",
        "find_local_models",
        "read_pages",
        "add_pages",
        "remove_page",
        "run_action",
        "get_actions",
        "check_actions",
        "save_actions",
        "import_actions",
    ];

    /// This request's wire name.
    pub fn name(&self) -> &'static str {
        let index = match self {
            Self::Snapshot { .. } => 0,
            Self::Ask { .. } => 1,
            Self::Stop { .. } => 2,
            Self::Export { .. } => 3,
            Self::AckInput { .. } => 4,
            Self::AnswerInput { .. } => 5,
            Self::GetSettings => 6,
            Self::SaveSettings { .. } => 7,
            Self::TestConnection { .. } => 8,
            Self::ListModels { .. } => 9,
            Self::NewConversation { .. } => 10,
            Self::History => 11,
            Self::OpenConversation { .. } => 12,
            Self::ClearHistory => 13,
            Self::Explain { .. } => 14,
            Self::TestSearch { .. } => 15,
            Self::SearchOffer { .. } => 16,
            Self::LocatePassage { .. } => 17,
            Self::FindLocalModels => 18,
            Self::ReadPages { .. } => 19,
            Self::AddPages { .. } => 20,
            Self::RemovePage { .. } => 21,
            Self::RunAction { .. } => 22,
            Self::GetActions => 23,
            Self::CheckActions { .. } => 24,
            Self::SaveActions { .. } => 25,
            Self::ImportActions { .. } => 26,
        };
        Self::NAMES[index]
    }
}
