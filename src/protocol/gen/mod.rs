//! The constants the extension's JS shares with Rust, written as an ES module
//! (`extension/protocol.gen.js`) by [`protocol_js`], and the few that content scripts need
//! (classic scripts, which cannot import a module) as `extension/content/constants.gen.js`
//! by [`content_js`]: one value on both sides. `tests/native/protocol_gen.rs` fails when either
//! committed file is stale (`KL_BLESS=1` rewrites them). [`typedefs`] writes the types of
//! the messages (and of these constants) for the JS's type check, and [`docs`] the same types
//! for people, from one set of schemas derived from the Rust types.

// Native only: the schemas they render are derived only there (not in the wasm).
#[cfg(not(target_arch = "wasm32"))]
pub mod docs;
#[cfg(not(target_arch = "wasm32"))]
pub mod typedefs;

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Value};

use super::panel::PanelCommand;
use super::{
    ApiErrorKind, Command, SearchOfferAnswer, MAX_CONTEXT_CHARS, MAX_LOCATE_CHARS, MAX_PAGE_CHARS,
    MAX_QUESTION_CHARS, MAX_SELECTION_CHARS, PAGE_READ_TIMEOUT_MS, PANEL_PORT_NAME, PORT_NAME,
};
use crate::llm::provider::Provider;
use crate::search::{brave, tavily, SearchProvider};
use crate::settings::{
    Settings, WebSearch, CONTEXT_WINDOW_RANGE, MAX_PRICE, MODEL_DEADLINE_RANGE, TOKEN_BUDGET_RANGE,
};
use crate::state::config::{ReadingLevel, RunConfig};
use crate::state::RunStatus;
use crate::types::events::{EventKind, StepView};
use crate::types::{LlmErrorKind, RunErrorKind};

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "extension/protocol.gen.js";

/// The generated classic script for content scripts, relative to the extension root (it is
/// injected before them with `chrome.scripting.executeScript({files})`).
pub const CONTENT_CONSTANTS: &str = "content/constants.gen.js";

/// Where [`CONTENT_CONSTANTS`] lives, relative to the repository root.
pub const CONTENT_PATH: &str = "extension/content/constants.gen.js";

/// The `type` of the message that asks an injected `content/locate.js` to show a passage
/// (`{type, text}`, sent by the worker with `chrome.tabs.sendMessage`; reply `{found}`).
pub const LOCATE_MESSAGE: &str = "knowledgelens-locate";

/// The generated classic script's text: one frozen object, `globalThis.__klContent`, in the
/// extension's isolated world (the page cannot see it).
pub fn content_js() -> String {
    let constants = json!({
        "MAX_PAGE_CHARS": MAX_PAGE_CHARS,
        "MAX_TITLE_CHARS": crate::types::page::MAX_TITLE_CHARS,
        "MAX_URL_CHARS": crate::types::page::MAX_URL_CHARS,
        "LOCATE_MESSAGE": LOCATE_MESSAGE,
        "PDF_PORT_NAME": super::PDF_PORT_NAME,
        "MAX_PDF_BYTES": crate::types::page::MAX_PDF_BYTES,
        "PDF_CHUNK_BYTES": crate::types::page::PDF_CHUNK_BYTES,
        "PDF_FETCH_TIMEOUT_MS": crate::types::page::PDF_FETCH_TIMEOUT_MS,
    });
    let text = serde_json::to_string_pretty(&constants).unwrap_or_default();
    format!(
        "// Generated from the Rust crate by `knowledgelens::protocol::gen::content_js()`: do not\n\
         // edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.\n\
         // The constants content scripts share with Rust (they are classic scripts and cannot\n\
         // import protocol.gen.js): injected first by the worker, read as `globalThis.__klContent`.\n\
         globalThis.__klContent = Object.freeze({text});\n"
    )
}

/// The error kinds (of a request or of a run) whose fix is usually in the provider
/// settings: the popup then offers to open Options.
pub fn settings_error_kinds() -> Vec<&'static str> {
    let mut kinds = vec![ApiErrorKind::InvalidSettings.name()];
    kinds.extend(
        [
            LlmErrorKind::Network,
            LlmErrorKind::Auth,
            LlmErrorKind::NotFound,
            LlmErrorKind::Config,
            LlmErrorKind::Unavailable,
        ]
        .map(|k| RunErrorKind::Llm(k).name()),
    );
    kinds
}

/// The wire name of `value` (a unit enum variant).
fn wire<T: Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// One constant of `extension/protocol.gen.js`: what it is, its name and its value.
pub struct Constant {
    /// Its doc comment.
    pub doc: &'static str,
    /// Its name (`export const NAME`).
    pub name: &'static str,
    /// Its value.
    pub value: Value,
}

/// The constants of `extension/protocol.gen.js`, in its order.
pub fn constants() -> Vec<Constant> {
    let requests: serde_json::Map<String, Value> = Command::NAMES
        .iter()
        .map(|name| (name.to_ascii_uppercase(), json!(name)))
        .collect();
    let providers: serde_json::Map<String, Value> = Provider::ALL
        .iter()
        .map(|&p| {
            let name = wire(p).as_str().unwrap_or_default().to_string();
            let meta = json!({
                "label": p.label(),
                "base_url": p.default_base_url(),
                "uses_http": p.uses_http(),
                "requires_key": p.requires_key(),
                "lists_models": p.lists_models(),
            });
            (name, meta)
        })
        .collect();
    let searches: serde_json::Map<String, Value> = WebSearch::ALL
        .iter()
        .map(|&choice| {
            let name = wire(choice).as_str().unwrap_or_default().to_string();
            let meta = match choice.provider() {
                None => json!({"label": "Off", "base_url": "", "needs_base_url": false, "needs_key": false}),
                Some(p) => json!({
                    "label": p.label(),
                    "base_url": match p {
                        SearchProvider::Wikipedia => "https://en.wikipedia.org",
                        SearchProvider::Searxng => "",
                        SearchProvider::Brave => brave::DEFAULT_BASE,
                        SearchProvider::Tavily => tavily::DEFAULT_BASE,
                    },
                    "needs_base_url": p == SearchProvider::Searxng,
                    "needs_key": matches!(p, SearchProvider::Brave | SearchProvider::Tavily),
                }),
            };
            (name, meta)
        })
        .collect();
    let run = RunConfig::default();
    let terminal = [
        RunStatus::Completed,
        RunStatus::Stopped,
        RunStatus::Failed,
        RunStatus::TimedOut,
    ]
    .map(wire);
    let constants: Vec<(&'static str, &'static str, Value)> = vec![
        (
            "The name of the Port between the extension's pages and the worker.",
            "PORT_NAME",
            json!(PORT_NAME),
        ),
        (
            "The name of the Port between the in-page explanation panel and the worker.",
            "PANEL_PORT_NAME",
            json!(PANEL_PORT_NAME),
        ),
        (
            "The name of the Port between a PDF tab's downloader and the offscreen document that extracts the PDF's text.",
            "PDF_PORT_NAME",
            json!(super::PDF_PORT_NAME),
        ),
        (
            "Largest PDF read, in bytes.",
            "MAX_PDF_BYTES",
            json!(crate::types::page::MAX_PDF_BYTES),
        ),
        (
            "The requests the in-page panel may send (each about its own tab's session only).",
            "PANEL_REQUESTS",
            json!(PanelCommand::NAMES),
        ),
        (
            "Request types (`type` of a request), by name.",
            "REQUESTS",
            Value::Object(requests),
        ),
        (
            "Every event type a run emits.",
            "EVENTS",
            json!(EventKind::NAMES),
        ),
        (
            "Run statuses after which a run is over (also the names of the events that end it).",
            "TERMINAL_STATUSES",
            json!(terminal),
        ),
        (
            "Error kinds of a failed request (`error.kind` of a reply).",
            "API_ERROR_KINDS",
            json!(ApiErrorKind::ALL.map(ApiErrorKind::name)),
        ),
        (
            "Error kinds of a failed run (`error.kind` of a view or event).",
            "RUN_ERROR_KINDS",
            json!(RunErrorKind::ALL.map(RunErrorKind::name)),
        ),
        (
            "Error kinds whose fix is usually in the provider settings.",
            "SETTINGS_ERROR_KINDS",
            json!(settings_error_kinds()),
        ),
        (
            "Steps a run takes when the question does not say.",
            "MAX_STEPS_DEFAULT",
            json!(run.max_steps),
        ),
        (
            "Most steps a question may ask for.",
            "MAX_STEPS_LIMIT",
            json!(RunConfig::MAX_STEPS_LIMIT),
        ),
        (
            "Fewest, default and most subtopics of a research question.",
            "RESEARCH_SUBTOPICS",
            json!({
                "min": crate::state::research::MIN_SUBTOPICS,
                "default": crate::state::research::DEFAULT_SUBTOPICS,
                "max": crate::state::research::MAX_SUBTOPICS,
            }),
        ),
        (
            "Rounds (model call + tools) of each subtopic's research: a research question of n subtopics takes at most 1 + n × this + 2 rounds.",
            "RESEARCH_SUBTOPIC_ROUNDS",
            json!(crate::state::research::SUBTOPIC_ROUNDS),
        ),
        (
            "Longest question, or answer to the agent's question, in characters.",
            "MAX_QUESTION_CHARS",
            json!(MAX_QUESTION_CHARS),
        ),
        (
            "Longest selected text an explanation works on, in characters (the rest is cut).",
            "MAX_SELECTION_CHARS",
            json!(MAX_SELECTION_CHARS),
        ),
        (
            "Longest enclosing paragraph of a selection, in characters.",
            "MAX_CONTEXT_CHARS",
            json!(MAX_CONTEXT_CHARS),
        ),
        (
            "Longest page text kept, in characters (the page reader cuts there too).",
            "MAX_PAGE_CHARS",
            json!(MAX_PAGE_CHARS),
        ),
        (
            "Longest passage text a `locate_passage` request carries, in characters (longer is cut).",
            "MAX_LOCATE_CHARS",
            json!(MAX_LOCATE_CHARS),
        ),
        (
            "How long reading a tab's text may take before a run goes on without it (ms).",
            "PAGE_READ_TIMEOUT_MS",
            json!(PAGE_READ_TIMEOUT_MS),
        ),
        (
            "The built-in selection actions, in menu order: their ids and names (buttons and menu entries).",
            "BUILTIN_ACTIONS",
            json!(crate::actions::BUILTIN
                .iter()
                .map(|(id, name)| json!({"id": id, "name": name}))
                .collect::<Vec<_>>()),
        ),
        (
            "The values of the setting \"Reading level\", in the order to list them.",
            "READING_LEVELS",
            json!(ReadingLevel::ALL.map(ReadingLevel::name)),
        ),
        (
            "Token budget per run: the default and the bounds a setting must keep.",
            "TOKEN_BUDGET",
            json!({"default": run.token_budget, "min": TOKEN_BUDGET_RANGE.0, "max": TOKEN_BUDGET_RANGE.1}),
        ),
        (
            "\"Compact at\" (percent of the context window): the default and the bounds a setting must keep.",
            "COMPACT_AT",
            json!({"default": crate::agent::context::DEFAULT_COMPACT_AT_PCT, "min": crate::agent::context::COMPACT_AT_RANGE.0, "max": crate::agent::context::COMPACT_AT_RANGE.1}),
        ),
        (
            "How long a shown question waits for the answer (s): the default and the bounds a setting must keep.",
            "INPUT_ANSWER_TIMEOUT",
            json!({"default": crate::settings::DEFAULT_INPUT_ANSWER_TIMEOUT_SECS, "min": crate::settings::INPUT_ANSWER_TIMEOUT_RANGE.0, "max": crate::settings::INPUT_ANSWER_TIMEOUT_RANGE.1}),
        ),
        (
            "\"Model call deadline\" (seconds): the default and the bounds a setting must keep.",
            "MODEL_DEADLINE",
            json!({"default": crate::llm::transport::DEFAULT_TOTAL_MS / 1000, "min": MODEL_DEADLINE_RANGE.0, "max": MODEL_DEADLINE_RANGE.1}),
        ),
        (
            "Context window bounds a setting must keep (0: the model's default).",
            "CONTEXT_WINDOW",
            json!({"min": CONTEXT_WINDOW_RANGE.0, "max": CONTEXT_WINDOW_RANGE.1}),
        ),
        (
            "Price per million tokens (US$) bounds a setting must keep (empty: the built-in prices).",
            "PRICE_PER_MILLION",
            json!({"min": 0, "max": MAX_PRICE}),
        ),
        (
            "Longest text (and tool arguments) of a step view, in characters.",
            "STEP_TEXT_MAX_CHARS",
            json!(StepView::MAX_CHARS),
        ),
        (
            "Each provider: its label, default base URL and what it needs.",
            "PROVIDERS",
            Value::Object(providers),
        ),
        (
            "Each value of the setting \"Search provider\", in the order to list them: its label, default base URL (Wikipedia's follows the page's language) and what it needs.",
            "SEARCH_PROVIDERS",
            Value::Object(searches),
        ),
        (
            "The answers to the popup's offer to search the web (`answer` of `search_offer`), by name.",
            "SEARCH_OFFER_ANSWERS",
            Value::Object(
                SearchOfferAnswer::ALL
                    .iter()
                    .map(|answer| (answer.name().to_ascii_uppercase(), json!(answer.name())))
                    .collect(),
            ),
        ),
        (
            "The settings a fresh install starts from.",
            "DEFAULT_SETTINGS",
            wire(Settings::default()),
        ),
    ];
    constants
        .into_iter()
        .map(|(doc, name, value)| Constant { doc, name, value })
        .collect()
}

/// The generated module's text.
pub fn protocol_js() -> String {
    let mut out = String::from(
        "// Generated from the Rust crate by `knowledgelens::protocol::gen::protocol_js()`: do not\n\
         // edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.\n",
    );
    for Constant { doc, name, value } in constants() {
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let text = if value.is_object() || value.is_array() {
            format!("Object.freeze({text})")
        } else {
            text
        };
        // Writing to a String cannot fail.
        let _infallible = write!(out, "\n/** {doc} */\nexport const {name} = {text};\n");
    }
    out
}
