//! A source an answer cites, as the run keeps it and the UI shows it (the terminal events
//! carry the answer's sources with it, so an answer never shows without them).

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A passage of the page (`pN`).
    Page,
    /// A web search result (`n`).
    Web,
}

kljson::named_enum!(SourceKind {
    Page = "page",
    Web = "web",
});

/// A source an answer cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Source {
    /// What the answer cites: `p1` for a page passage, `1` for a web result.
    pub id: String,
    /// What it is.
    pub kind: SourceKind,
    /// Its title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// A web result's first characters (at most `state::sources::EXCERPT_CHARS`); a
    /// passage's text.
    pub excerpt: String,
    /// A page passage's first character.
    pub start: Option<u64>,
    /// One past a page passage's last character.
    pub end: Option<u64>,
    /// A PDF passage's page (from 1): the UI shows "page 4" and opens the PDF there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// For a passage of a page added to the conversation (questions across pages): the tab
    /// it was read in ("Show on page" switches to it while it is open, else opens `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<i64>,
    /// Whether it is a passage of a page added to the conversation, not of its own page.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub added: bool,
}
