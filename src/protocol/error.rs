//! Why a request failed, as the reply says it ([`ApiError`]), and the user's own text in
//! the messages that quote it.

use kljson::{FromJson, ToJson};
use serde::Serialize;

use super::MAX_QUESTION_CHARS;

/// Kinds of request failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApiErrorKind {
    /// The request is malformed.
    BadRequest,
    /// The sender may not ask.
    Forbidden,
    /// Settings failed validation.
    InvalidSettings,
    /// A run is already going on in that session.
    Busy,
    /// Nothing to export, no such question or conversation.
    NotFound,
    /// Storage failed.
    Storage,
    /// A bug.
    Internal,
}

kljson::named_enum!(ApiErrorKind {
    BadRequest = "bad_request",
    Forbidden = "forbidden",
    InvalidSettings = "invalid_settings",
    Busy = "busy",
    NotFound = "not_found",
    Storage = "storage",
    Internal = "internal",
});

impl ApiErrorKind {}

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, thiserror::Error, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[error("{message}")]
pub struct ApiError {
    /// The kind.
    pub kind: ApiErrorKind,
    /// What went wrong and what to do.
    pub message: String,
}

impl From<crate::settings::InvalidSettings> for ApiError {
    fn from(err: crate::settings::InvalidSettings) -> Self {
        Self::new(ApiErrorKind::InvalidSettings, err.0)
    }
}

impl ApiError {
    /// An error of `kind`.
    pub fn new(kind: ApiErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ApiErrorKind::BadRequest, message)
    }

    /// A storage failure while doing `what` ("read the session", ...).
    pub fn storage(what: &str, err: impl std::fmt::Display) -> Self {
        Self::new(ApiErrorKind::Storage, format!("Could not {what}: {err}"))
    }
}

/// What the user typed: a question, or an answer to the agent's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserText {
    /// A question for a new run.
    Question,
    /// An answer to the run's question (`request_input`).
    Answer,
}

impl UserText {
    /// `text` trimmed, or why it cannot be sent: empty, or longer than
    /// [`MAX_QUESTION_CHARS`].
    pub fn checked(self, text: &str) -> Result<&str, ApiError> {
        let what = match self {
            Self::Question => "question",
            Self::Answer => "answer",
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Type {} first.",
                article(what)
            )));
        }
        if text.chars().count() > MAX_QUESTION_CHARS {
            return Err(ApiError::bad_request(format!(
                "The {what} is too long (more than {MAX_QUESTION_CHARS} characters)."
            )));
        }
        Ok(text)
    }
}

fn article(word: &str) -> String {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {word}")
    } else {
        format!("a {word}")
    }
}
