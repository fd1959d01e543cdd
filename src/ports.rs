//! The ports: small async traits for everything the browser provides (HTTP, web search, storage, the
//! clock, random numbers, page text, screenshots, the event stream to the UI, the toolbar
//! badge and notifications). The core only ever talks to these; the
//! `web` module implements them on top of `fetch`, `chrome.storage` and timers, and
//! `testing` (feature `testing`) implements them in memory for native tests. Nothing here touches the
//! browser.
//!
//! The futures are `LocalBoxFuture`: everything runs on one thread (a service worker), so
//! nothing needs to be `Send`, and boxed futures keep the traits object-safe.

use futures::future::LocalBoxFuture;
use futures::FutureExt;

use crate::types::events::EventEnvelope;
use crate::types::{
    ChatRequest, ChatResponse, Image, LlmError, PageInfo, PageReadError, PdfReadError, SearchError,
    SearchResult,
};

/// A streamed-or-not chat model call.
pub trait LlmClient {
    /// Sends one chat request. Streamed answer text is passed to `on_delta` as it arrives;
    /// the returned response always carries the whole reply.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>>;
}

/// One web search: the words, how many results at most, and the language of the page
/// (or, without one, the browser's), for providers that pick a site by language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// What to search for.
    pub text: String,
    /// The most results wanted (providers cap it further).
    pub limit: usize,
    /// A BCP 47 language tag (`"de"`, `"pt-BR"`), if known.
    pub language: Option<String>,
}

/// A web search provider.
pub trait SearchClient {
    /// Runs one search; at most `query.limit` results, best first.
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> LocalBoxFuture<'a, Result<Vec<SearchResult>, SearchError>>;
}

/// A string key-value store (`chrome.storage.session` or `.local` in the extension).
pub trait StateStore {
    /// Reads one key; `Ok(None)` when absent.
    fn get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Reads several keys at once (`None` for each absent one), in order.
    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>>;
    /// Writes all items in one operation.
    fn set(&self, items: Vec<(String, String)>) -> LocalBoxFuture<'_, Result<(), StoreError>>;
    /// Removes keys (absent keys are ignored).
    fn remove(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), StoreError>>;
    /// Lists the keys that start with `prefix`.
    fn keys<'a>(&'a self, prefix: &'a str) -> LocalBoxFuture<'a, Result<Vec<String>, StoreError>>;
    /// The area's size limit in bytes (keys and values, as `set` counts them), when known:
    /// making room uses it to tell whether removing other records could make a write fit.
    fn quota(&self) -> Option<u64> {
        None
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The storage area's quota would be exceeded.
    #[error("storage quota exceeded: {0}")]
    QuotaExceeded(String),
    /// Storage is not available in this context or access was denied.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Any other failure reported by the storage backend.
    #[error("storage failed: {0}")]
    Failed(String),
}

/// Wall-clock time and sleeping. Time is always read through this port (never
/// `Instant::now()`, which panics on wasm32), so tests can drive it by hand.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
    /// Resolves after `ms` milliseconds.
    fn sleep(&self, ms: u64) -> LocalBoxFuture<'static, ()>;
}

/// Where run events go (the connected popups, in the extension).
pub trait EventSink {
    /// Delivers one event of one session.
    fn emit(&self, event: &EventEnvelope);
}

/// A system notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Names it (a second one with the same id replaces it); its click handler gets it back.
    pub id: String,
    /// The title line.
    pub title: String,
    /// The text.
    pub message: String,
}

/// How the popup was brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopupOpened {
    /// The toolbar popup itself (`chrome.action.openPopup`).
    Popup,
    /// The popup page in a window of its own (when the toolbar popup could not open).
    Window,
}

impl PopupOpened {
    /// `"popup"` or `"window"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Popup => "popup",
            Self::Window => "window",
        }
    }
}

/// Why the popup could not be opened at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NotifyError {
    /// What the browser reported.
    pub message: String,
}

/// Draws the user's attention: the toolbar badge, system notifications, and opening the
/// popup. Badge and notification calls are fire-and-forget (the implementation reports
/// failures through [`log`]): a lost badge must never stop a run.
pub trait Notifier {
    /// Shows `text` on the toolbar badge of tab `tab` (`None`: the badge of every tab);
    /// an empty text clears it.
    fn set_badge(&self, tab: Option<u64>, text: &str);
    /// Shows (or replaces) a system notification.
    fn notify(&self, notification: &Notification);
    /// Removes the notification `id` (absent: nothing happens).
    fn clear_notification(&self, id: &str);
    /// Opens the popup on tab `tab` (`None`: the popup's own session).
    fn open_popup(&self, tab: Option<u64>) -> LocalBoxFuture<'_, Result<PopupOpened, NotifyError>>;
}

/// A [`Notifier`] for contexts without a toolbar: nothing is shown, and the popup cannot be
/// opened.
pub struct NoNotifier;

impl Notifier for NoNotifier {
    fn set_badge(&self, _tab: Option<u64>, _text: &str) {}
    fn notify(&self, _notification: &Notification) {}
    fn clear_notification(&self, _id: &str) {}
    fn open_popup(
        &self,
        _tab: Option<u64>,
    ) -> LocalBoxFuture<'_, Result<PopupOpened, NotifyError>> {
        Box::pin(futures::future::ready(Err(NotifyError {
            message: "there is no popup to open here".into(),
        })))
    }
}

/// Where [`log`] writes: stderr natively; the web layer installs the console (once, at start).
static LOGGER: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Installs the logger (the first call wins).
pub fn set_logger(logger: fn(&str)) {
    let _first_wins = LOGGER.set(logger);
}

/// Logs a failure nobody else hears of (a best-effort cleanup that failed, say).
pub fn log(message: &str) {
    let logger = LOGGER.get().copied().unwrap_or(default_log);
    logger(message);
}

/// Before a logger is installed: stderr natively, nothing in a browser (where the web layer
/// installs the console at start).
fn default_log(message: &str) {
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("knowledgelens: {message}");
    #[cfg(target_arch = "wasm32")]
    let _ = message;
}

/// Random bytes (`crypto.getRandomValues` in the extension, a seeded generator in tests):
/// the run's fence nonce is drawn from here, once per run.
pub trait Random {
    /// Fills `bytes` with random bytes.
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RandomError>;
}

/// The platform could not give random bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no random numbers: {message}")]
pub struct RandomError {
    /// What the platform reported.
    pub message: String,
}

/// A fresh nonce: 16 lowercase hex digits (64 random bits).
pub fn draw_nonce(random: &dyn Random) -> Result<String, RandomError> {
    let mut bytes = [0u8; 8];
    random.fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Reads the text of a browser tab.
pub trait PageReader {
    /// Captures the text of tab `tab_id`; an error means the page cannot be scripted.
    fn read(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<PageInfo, PageReadError>>;

    /// Reads the PDF tab `tab_id` shows (after [`PageReader::read`] said
    /// [`PageReadError::Pdf`]): downloaded in the tab, its text extracted page by page; in
    /// `document` (the document `read` saw) when given, so a tab that has moved on since is
    /// not read instead. Readers that cannot read PDFs say [`PdfReadError::Unsupported`].
    fn read_pdf<'a>(
        &'a self,
        _tab_id: i64,
        _document: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<PageInfo, PdfReadError>> {
        futures::future::ready(Err(PdfReadError::Unsupported)).boxed_local()
    }

    /// The address tab `tab_id` shows, when the browser says (`None` when it does not): what
    /// a run on a page that could not be read knows of its page.
    fn address(&self, _tab_id: i64) -> LocalBoxFuture<'_, Option<String>> {
        futures::future::ready(None).boxed_local()
    }

    /// A lower cap on the pages kept for questions across pages than the store's own (the
    /// test build's worker sets one, to test eviction with a few pages); `None`: the store's.
    fn read_pages_cap(&self) -> Option<usize> {
        None
    }

    /// Whether tab `tab_id` is in an incognito window: its page is never kept for questions
    /// across pages. Readers that cannot tell say it is (nothing is kept on a guess).
    fn incognito(&self, _tab_id: i64) -> LocalBoxFuture<'_, bool> {
        futures::future::ready(true).boxed_local()
    }

    /// Finds `passage` on tab `tab_id` (by its first non-space characters), scrolls it into
    /// view and highlights it briefly; `Ok(false)` when it is no longer on the page. Readers
    /// that cannot show anything say the page cannot be scripted.
    fn locate<'a>(
        &'a self,
        _tab_id: i64,
        _passage: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, PageReadError>> {
        futures::future::ready(Err(PageReadError::NotScriptable(
            "this page reader cannot show passages".to_string(),
        )))
        .boxed_local()
    }
}

/// Takes a screenshot of what a tab shows.
pub trait ScreenCapture {
    /// Captures the visible part of tab `tab_id` as a PNG whose long side is at most
    /// [`crate::types::image::MAX_IMAGE_SIDE`] pixels. It is refused unless the tab is the
    /// active tab of its window, and unless it shows the page at `page_url` (the run's page:
    /// [`crate::url::same_page`], checked before and after the capture): only what the user
    /// is looking at, and only the page the question is about, is ever captured. For a page
    /// that could not be read, `page_url` is the address the tab showed at the run's start;
    /// `None` only when the browser did not say (a closed tab), and then only the first rule
    /// applies.
    fn capture_visible<'a>(
        &'a self,
        tab_id: i64,
        page_url: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<Image, CaptureError>>;
}

/// Why a screenshot could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// The tab is not the active tab of its window (the user switched tabs), or is gone.
    #[error("the page is not visible")]
    NotVisible,
    /// The tab shows another page than the run's (the user went elsewhere meanwhile).
    #[error("the tab shows another page")]
    OtherPage,
    /// The browser refused or failed (no permission for the page, a protected page).
    #[error("the screenshot failed: {0}")]
    Failed(String),
}

/// A [`ScreenCapture`] for contexts that cannot take screenshots: every capture fails.
pub struct NoCapture;

impl ScreenCapture for NoCapture {
    fn capture_visible<'a>(
        &'a self,
        _tab_id: i64,
        _page_url: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<Image, CaptureError>> {
        Box::pin(futures::future::ready(Err(CaptureError::Failed(
            "screenshots are not available here".into(),
        ))))
    }
}

/// The headers that carry a secret ([`HttpRequest::carries_key`]).
pub const KEY_HEADERS: [&str; 4] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "x-subscription-token",
];

/// One HTTP request, as the core builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Header name-value pairs.
    pub headers: Vec<(String, String)>,
    /// The request body (JSON), if any.
    pub body: Option<String>,
}

impl HttpRequest {
    /// A `POST` of a JSON `body` (the content type is added to `headers`).
    pub fn post_json(url: String, headers: Vec<(String, String)>, body: String) -> Self {
        let mut all = Vec::with_capacity(headers.len() + 1);
        all.push(("content-type".to_string(), "application/json".to_string()));
        all.extend(headers);
        Self {
            method: "POST".into(),
            url,
            headers: all,
            body: Some(body),
        }
    }

    /// Whether the request carries a secret in a header (`Authorization`, Anthropic's
    /// `x-api-key`, Gemini's `x-goog-api-key`, Brave's `x-subscription-token`). Such a
    /// request must not follow redirects: `fetch` drops only `Authorization` when a redirect
    /// leaves the origin, and would send the others on.
    pub fn carries_key(&self) -> bool {
        self.headers.iter().any(|(name, _)| {
            KEY_HEADERS
                .iter()
                .any(|key| name.trim().eq_ignore_ascii_case(key))
        })
    }

    /// A `GET` of `url`.
    pub fn get(url: String, headers: Vec<(String, String)>) -> Self {
        Self {
            method: "GET".into(),
            url,
            headers,
            body: None,
        }
    }
}

/// The head of an HTTP response plus a body read chunk by chunk.
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Header name-value pairs (names lower-cased).
    pub headers: Vec<(String, String)>,
    /// The body, streamed.
    pub body: Box<dyn HttpBody>,
}

impl HttpResponse {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response body read in chunks.
pub trait HttpBody {
    /// The next chunk of bytes, or `None` at the end.
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>>;
}

/// A transport failure (no HTTP status was received, or the body broke off).
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HttpError {
    /// What happened, as the platform reported it.
    pub message: String,
    /// The server answered a request that carries a key ([`HttpRequest::carries_key`])
    /// with a redirect, which was not followed.
    pub redirected: bool,
}

/// Sends HTTP requests (`fetch` in the extension).
pub trait HttpClient {
    /// Sends a request and resolves with the response head once it arrives.
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>>;
}

/// Reads a whole body into a string (lossy UTF-8), up to `limit` bytes.
pub async fn read_body_to_string(
    body: &mut dyn HttpBody,
    limit: usize,
) -> Result<String, HttpError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > limit {
            bytes.truncate(limit);
            break;
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
