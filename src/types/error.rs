//! Error data shared across layers: the kinds of a failed model call (and the one place that
//! decides which are worth retrying), the run error kinds the UI sees, and page-read errors.

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// What kind of failure a model call had. [`LlmErrorKind::is_retryable`] is the one place
/// that decides whether a failure is worth another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// No response: connection refused, DNS, CORS, the body broke off.
    Network,
    /// No response in time.
    Timeout,
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx.
    Server,
    /// HTTP 401/403: the key was rejected or is missing.
    Auth,
    /// HTTP 404: wrong base URL or model.
    NotFound,
    /// HTTP 400 and other 4xx: the request was rejected.
    BadRequest,
    /// The request does not fit the model's context window (the provider said so: OpenAI's
    /// `context_length_exceeded`, llama.cpp's `exceed_context_size_error`, Anthropic's
    /// "prompt is too long", Gemini's input token count, Chrome's `QuotaExceededError`).
    /// Never retried as is: the same request would be refused again.
    ContextTooLong,
    /// The settings cannot make a request (no base URL, bad URL).
    Config,
    /// The model cannot run here (Chrome's built-in model is unavailable on this device).
    Unavailable,
    /// The call ran past its total deadline ("Model call deadline"), however steadily the
    /// server kept sending. Never retried: another attempt would take as long.
    Deadline,
}

kljson::named_enum!(LlmErrorKind {
    Network = "network",
    Timeout = "timeout",
    RateLimited = "rate_limited",
    Server = "server",
    Auth = "auth",
    NotFound = "not_found",
    BadRequest = "bad_request",
    ContextTooLong = "context_too_long",
    Config = "config",
    Unavailable = "unavailable",
    Deadline = "deadline",
});

impl LlmErrorKind {
    /// Whether another attempt may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Network | Self::Timeout | Self::RateLimited | Self::Server
        )
    }

    /// The kind for an HTTP status that is not a success.
    pub fn from_status(status: u16) -> Self {
        match status {
            401 | 403 => Self::Auth,
            404 => Self::NotFound,
            408 => Self::Timeout,
            429 => Self::RateLimited,
            500..=599 => Self::Server,
            _ => Self::BadRequest,
        }
    }
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// The kind, deciding retry and wording.
    pub kind: LlmErrorKind,
    /// An actionable message for the user.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// How long the server asked us to wait (`Retry-After`), in ms.
    pub retry_after_ms: Option<u64>,
    /// What the server itself said (its error message or body), if anything.
    pub detail: Option<String>,
}

impl LlmError {
    /// An error of `kind` with `message`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
            detail: None,
        }
    }
}

/// What kind of failure ended a run (or an attempt of it), as the UI, the export and the
/// stored record name it. Model-call failures keep their [`LlmErrorKind`]; the wire form is
/// one snake_case string either way (`"network"`, `"empty_reply"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    /// A model call failed.
    Llm(LlmErrorKind),
    /// The model replied with nothing.
    EmptyReply,
    /// A phase kept being cut off by the worker stopping.
    Interrupted,
    /// Our bug (a built-in prompt template that does not render).
    Internal,
    /// A question to the user went unseen or unanswered too long.
    InputTimeout,
    /// A kind this build does not know (read from a record written by another build).
    Unknown,
}

impl RunErrorKind {
    /// Every kind with a name of its own, in wire order (for the generated protocol file).
    pub const ALL: [RunErrorKind; 16] = [
        Self::Llm(LlmErrorKind::Network),
        Self::Llm(LlmErrorKind::Timeout),
        Self::Llm(LlmErrorKind::RateLimited),
        Self::Llm(LlmErrorKind::Server),
        Self::Llm(LlmErrorKind::Auth),
        Self::Llm(LlmErrorKind::NotFound),
        Self::Llm(LlmErrorKind::BadRequest),
        Self::Llm(LlmErrorKind::ContextTooLong),
        Self::Llm(LlmErrorKind::Config),
        Self::Llm(LlmErrorKind::Unavailable),
        Self::Llm(LlmErrorKind::Deadline),
        Self::EmptyReply,
        Self::Interrupted,
        Self::Internal,
        Self::InputTimeout,
        Self::Unknown,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llm(kind) => kind.name(),
            Self::EmptyReply => "empty_reply",
            Self::Interrupted => "interrupted",
            Self::Internal => "internal",
            Self::InputTimeout => "input_timeout",
            Self::Unknown => "unknown",
        }
    }

    /// The kind named `name` (`Unknown` for a name this build does not know).
    pub fn from_name(name: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .unwrap_or(Self::Unknown)
    }
}

impl From<LlmErrorKind> for RunErrorKind {
    fn from(kind: LlmErrorKind) -> Self {
        Self::Llm(kind)
    }
}

impl PartialEq<&str> for RunErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl std::fmt::Display for RunErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RunErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(not(target_arch = "wasm32"))] // the schemas are for protocol::gen, natively
impl schemars::JsonSchema for RunErrorKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunErrorKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": Self::ALL.map(Self::name)})
    }
}

impl FromJson for RunErrorKind {
    fn from_json(value: serde_json::Value) -> Result<Self, kljson::Error> {
        String::from_json(value).map(|name| Self::from_name(&name))
    }

    fn placeholder() -> Self {
        Self::Unknown
    }
}

kljson::deserialize_via_json!(RunErrorKind);

impl kljson::ToJson for RunErrorKind {
    fn write_json(&self, out: &mut String) {
        kljson::write_str(out, self.name());
    }
}

/// An error as the UI and the export show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ErrorInfo {
    /// Machine-readable kind (`network`, `auth`, `rate_limited`, `empty_reply`, ...).
    pub kind: RunErrorKind,
    /// Actionable text.
    pub message: String,
}

impl ErrorInfo {
    /// An error of `kind` with `message`.
    pub fn new(kind: impl Into<RunErrorKind>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

impl From<&LlmError> for ErrorInfo {
    fn from(err: &LlmError) -> Self {
        Self::new(err.kind, err.message.clone())
    }
}

/// Why a tab's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageReadError {
    /// The browser does not let extensions script this page (chrome://, the Web Store, a
    /// PDF viewer) or the extension lacks access to it.
    #[error("the page cannot be scripted: {0}")]
    NotScriptable(String),
    /// The extension has no access to this site: neither a host permission nor the
    /// `activeTab` grant a toolbar click, the shortcut or the context menu gives.
    #[error("the extension has no access to this page: {0}")]
    NoAccess(String),
    /// The tab is gone.
    #[error("the tab no longer exists: {0}")]
    NoTab(String),
    /// The reader ran but returned something unexpected.
    #[error("the page returned unexpected data: {0}")]
    BadResult(String),
    /// The reader took longer than [`crate::types::page::PAGE_READ_TIMEOUT_MS`] and was
    /// abandoned.
    #[error("The page took more than {} s to read; answering without its text.", crate::types::page::PAGE_READ_TIMEOUT_MS / 1000)]
    Timeout,
    /// The tab shows a PDF in Chrome's viewer: `PageReader::read_pdf` reads it, in the
    /// document seen here (`document`: the browser's id of the tab's top document, when it
    /// gave one), so that a tab which moved on in between is not read in its place.
    #[error("the tab shows a PDF")]
    Pdf {
        /// The top document's id (`chrome.scripting` `InjectionResult.documentId`).
        document: Option<String>,
    },
}

/// Why a PDF's text could not be read: each message is the notice a run shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfReadError {
    /// A PDF opened from the computer (`file://`).
    #[error("KnowledgeLens can't read PDF files opened from your computer (file://) yet: open the PDF from its web address to ask about it. This question is answered without its text.")]
    FileUrl,
    /// The site answered the download with an HTTP error.
    #[error("The PDF could not be downloaded: the site answered HTTP {status}{hint}. This question is answered without its text.", status = .0, hint = http_hint(*.0))]
    Http(u16),
    /// The address does not serve a PDF (any more).
    #[error("The address no longer serves a PDF (it sent {0}); reload the tab and ask again. This question is answered without its text.")]
    NotPdf(String),
    /// The PDF is larger than [`crate::types::page::MAX_PDF_BYTES`].
    #[error("The PDF is larger than {} MB, more than KnowledgeLens reads; this question is answered without its text.", crate::types::page::MAX_PDF_BYTES / (1024 * 1024))]
    TooLarge,
    /// No page has a text layer: a scan.
    #[error("This PDF has no text layer (it looks like a scanned document); KnowledgeLens cannot read scans yet, so this question is answered without its text.")]
    Scanned,
    /// Downloading or extracting took longer than allowed.
    #[error(
        "The PDF took too long to download and read; this question is answered without its text."
    )]
    Timeout,
    /// The PDF is damaged, encrypted, or the reader failed.
    #[error("The PDF could not be read ({0}); this question is answered without its text.")]
    Failed(String),
    /// The tab left the PDF (navigated or reloaded) between finding it and reading it.
    #[error("The tab no longer shows the PDF it showed when you asked; ask again on the page it shows now. This question is answered without its text.")]
    Gone,
    /// This reader cannot read PDFs.
    #[error("PDFs cannot be read here; this question is answered without its text.")]
    Unsupported,
}

/// What an HTTP status of a PDF download likely means.
fn http_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => {
            " (it wants you signed in, or refuses extensions: open the PDF again after signing in)"
        }
        404 | 410 => " (the file is gone)",
        _ => "",
    }
}
