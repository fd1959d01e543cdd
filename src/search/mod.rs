//! Web search providers: one file per provider, each a pure request builder and response
//! parser tested against fixtures that follow the provider's documentation, and
//! [`HttpSearch`], the [`crate::ports::SearchClient`] that sends their requests over any
//! [`crate::ports::HttpClient`] with a deadline. Pure: no browser access, no clock of its
//! own.

pub mod brave;
mod http;
pub mod searxng;
pub mod tavily;
pub mod wikipedia;

pub use http::{HttpSearch, HttpSearchFactory, DEADLINE_MS};

use std::rc::Rc;

use serde_json::Value;

use crate::ports::SearchClient;

/// The most results any provider is asked for (Brave's `count` and Tavily's `max_results`
/// stop at 20, and so do MediaWiki's intro extracts per request).
pub const MAX_RESULTS: usize = 20;

/// The longest snippet and content kept per result, in characters (a hostile server can
/// not flood the context window).
const MAX_SNIPPET_CHARS: usize = 1_000;
const MAX_CONTENT_CHARS: usize = 8_000;

/// Which search service answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchProvider {
    /// Wikipedia's MediaWiki Action API (no key).
    Wikipedia,
    /// The user's own SearXNG instance (no key; JSON output must be on).
    Searxng,
    /// The Brave Search API (`X-Subscription-Token`).
    Brave,
    /// Tavily (bearer key).
    Tavily,
}

impl SearchProvider {
    /// The option value (`"wikipedia"`, `"searxng"`, `"brave"`, `"tavily"`).
    pub fn id(self) -> &'static str {
        match self {
            Self::Wikipedia => "wikipedia",
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
        }
    }

    /// The provider from its option value (`"off"` and unknown values: `None`).
    pub fn from_id(id: &str) -> Option<Self> {
        [Self::Wikipedia, Self::Searxng, Self::Brave, Self::Tavily]
            .into_iter()
            .find(|p| p.id() == id)
    }

    /// The name users know it by, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Self::Wikipedia => "Wikipedia",
            Self::Searxng => "SearXNG",
            Self::Brave => "Brave Search",
            Self::Tavily => "Tavily",
        }
    }
}

/// Where and how to search. Its `Debug` form hides the key (keys never reach a log).
#[derive(Clone, PartialEq, Eq)]
pub struct SearchConfig {
    /// The provider.
    pub provider: SearchProvider,
    /// The server's address, used as is (trailing slashes aside); empty: the provider's
    /// default (SearXNG has none).
    pub base_url: String,
    /// The API key (Brave, Tavily).
    pub api_key: String,
}

impl std::fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.api_key.is_empty() {
            ""
        } else {
            "<hidden>"
        };
        f.debug_struct("SearchConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &key)
            .finish()
    }
}

impl SearchConfig {
    /// `base_url` without trailing slashes, or `default` when it is empty.
    pub fn base_or(&self, default: &str) -> String {
        let base = self.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            default.to_string()
        } else {
            base.to_string()
        }
    }

    /// Why these settings cannot work, before anything is sent.
    pub fn problem(&self) -> Option<crate::types::SearchError> {
        use crate::types::SearchError;
        let name = self.provider.label();
        let base = self.base_url.trim();
        if base.is_empty() && self.provider == SearchProvider::Searxng {
            return Some(SearchError::config(
                "SearXNG needs the address of your instance: enter it as Search base URL in Options.",
            ));
        }
        if !base.is_empty() && !crate::url::parse(base).is_some_and(|url| url.is_web()) {
            return Some(SearchError::config(format!(
                "The Search base URL must start with http:// or https:// (it is {base:?}): correct it in Options."
            )));
        }
        let needs_key = matches!(
            self.provider,
            SearchProvider::Brave | SearchProvider::Tavily
        );
        if needs_key && self.api_key.trim().is_empty() {
            return Some(SearchError::config(format!(
                "{name} needs an API key: enter it as Search API key in Options."
            )));
        }
        // Without a base URL the key goes to the provider's own https:// address.
        if needs_key && !base.is_empty() && crate::types::secrets::key_in_clear(base, &self.api_key)
        {
            return Some(SearchError::config(
                crate::types::secrets::insecure_key_message(base, "Search API key"),
            ));
        }
        None
    }
}

/// Makes the [`SearchClient`] for the search settings in use (the extension's sends
/// requests with `fetch`, see [`HttpSearchFactory`]; tests script theirs).
pub trait SearchFactory {
    /// A client for `config`'s provider.
    fn client(&self, config: SearchConfig) -> Rc<dyn SearchClient>;
}

/// `limit` within 1..=[`MAX_RESULTS`].
pub fn clamp_limit(limit: usize) -> usize {
    limit.clamp(1, MAX_RESULTS)
}

/// Percent-encodes `text` for a URL query value or path segment: everything but RFC 3986's
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`) becomes `%XX` of its UTF-8 bytes.
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// HTML as plain text: tags removed (inline markup such as MediaWiki's
/// `<span class="searchmatch">` and Brave's `<strong>` sits inside words and sentences, so
/// nothing takes its place; a block tag such as an error page's `</title>` or `<p>` becomes
/// a space), the common entities decoded, spaces collapsed.
pub fn strip_html(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut tag: Option<String> = None;
    for c in html.chars() {
        match (c, tag.as_mut()) {
            ('<', None) => tag = Some(String::new()),
            ('>', Some(name)) => {
                // A block ends a run of words (an error page's title and body, a list
                // item): a space keeps them apart; inline tags (a match's <span>) do not.
                if is_block_tag(name) {
                    text.push(' ');
                }
                tag = None;
            }
            (_, Some(name)) => name.push(c),
            (_, None) => text.push(c),
        }
    }
    decode_entities(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the tag text between `<` and `>` (`p`, `/h1`, `br/`, `div class="x"`) opens or
/// closes a block element.
fn is_block_tag(tag: &str) -> bool {
    const BLOCKS: &str = "address article blockquote body br center dd div dt footer h1 h2 h3 \
        h4 h5 h6 header hr li p pre table td th title tr";
    let name = tag
        .trim_start_matches('/')
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    BLOCKS.split_whitespace().any(|block| block == name)
}

/// The entities search snippets use (`&amp;` last, so `&amp;lt;` stays `&lt;`).
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&quot;", "\"")
        .replace("&#039;", "'")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// `text` cut to `max` characters (at a character boundary).
fn truncated(text: String, max: usize) -> String {
    match crate::types::text::char_start(&text, max) {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

/// A result from a provider's fields; `None` without a usable (http or https) URL.
/// Titles and snippets are stripped of HTML; `content` falls back to the snippet.
pub fn result(
    title: &str,
    url: &str,
    snippet: &str,
    content: &str,
) -> Option<crate::types::SearchResult> {
    let url = url.trim();
    if !crate::url::parse(url).is_some_and(|url| url.is_web()) || url.contains(char::is_whitespace)
    {
        return None;
    }
    let snippet = truncated(strip_html(snippet), MAX_SNIPPET_CHARS);
    let content = content.trim();
    let content = if content.is_empty() {
        snippet.clone()
    } else {
        truncated(content.to_string(), MAX_CONTENT_CHARS)
    };
    let title = strip_html(title);
    Some(crate::types::SearchResult {
        title: if title.is_empty() {
            url.to_string()
        } else {
            title
        },
        url: url.to_string(),
        snippet,
        content,
    })
}

/// The string at `path` in `value`, or `""`.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The body parsed as a JSON object, or the malformed-body error.
pub(crate) fn json_object(
    provider: SearchProvider,
    body: &str,
) -> Result<Value, crate::types::SearchError> {
    match kljson::parse_value(body) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err(crate::types::SearchError::malformed(
            provider.label(),
            "not a JSON object",
        )),
        Err(e) => Err(crate::types::SearchError::malformed(
            provider.label(),
            &format!("not JSON: {e}"),
        )),
    }
}

/// The `results` array of a reply (`[]` when it is not an array); a reply without one is
/// malformed.
pub(crate) fn results_of(
    provider: SearchProvider,
    value: &Value,
) -> Result<&[Value], crate::types::SearchError> {
    match value.get("results") {
        Some(results) => Ok(results.as_array().map(Vec::as_slice).unwrap_or_default()),
        None => Err(crate::types::SearchError::malformed(
            provider.label(),
            "no \"results\" in the reply",
        )),
    }
}

/// What an error body says: the message at the first of the places providers put one
/// (MediaWiki `error.info`, Brave `error.detail`, Tavily `detail.error`, others `message`
/// or `error`), else the body's text, cut short.
pub fn error_detail(body: &str) -> String {
    const PLACES: [&[&str]; 7] = [
        &["error", "info"],
        &["error", "detail"],
        &["detail", "error"],
        &["error", "message"],
        &["message"],
        &["detail"],
        &["error"],
    ];
    let text = match kljson::parse_value(body) {
        Ok(value) => PLACES
            .iter()
            .map(|path| str_at(&value, path))
            .find(|s| !s.trim().is_empty())
            .map(str::to_string)
            .unwrap_or_default(),
        Err(_) => strip_html(body),
    };
    truncated(text.split_whitespace().collect::<Vec<_>>().join(" "), 300)
}

/// The error for a non-success `status` with `body`: 401 and 403 refuse the key, others
/// carry the body's message.
pub fn status_error(
    provider: SearchProvider,
    status: u16,
    body: &str,
) -> crate::types::SearchError {
    let detail = error_detail(body);
    match status {
        401 | 403 => crate::types::SearchError::unauthorized(provider.label(), status, &detail),
        _ => crate::types::SearchError::status(provider.label(), status, &detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_plain_text() {
        assert_eq!(
            strip_html("The <span class=\"searchmatch\">Rust</span>, a &quot;safe&quot; language &amp; more"),
            "The Rust, a \"safe\" language & more"
        );
        assert_eq!(strip_html("a &amp;lt; b"), "a &lt; b");
        assert_eq!(strip_html("unclosed <b"), "unclosed");
        assert_eq!(
            strip_html("<html><head><title>SearXNG</title></head><body><p>Internal Server Error</p></body></html>"),
            "SearXNG Internal Server Error"
        );
        assert_eq!(
            strip_html("<h1>502 Bad Gateway</h1><hr><center>nginx</center>"),
            "502 Bad Gateway nginx"
        );
    }

    #[test]
    fn only_unreserved_characters_pass_unencoded() {
        assert_eq!(encode_component("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(encode_component("A-z_0.9~"), "A-z_0.9~");
    }

    #[test]
    fn debug_hides_the_key() {
        let config = SearchConfig {
            provider: SearchProvider::Brave,
            base_url: String::new(),
            api_key: "BSA-secret".into(),
        };
        assert!(!format!("{config:?}").contains("BSA-secret"));
    }

    #[test]
    fn results_need_a_web_url() {
        assert!(result("t", "", "s", "").is_none());
        assert!(result("t", "javascript:alert(1)", "s", "").is_none());
        let r = result("", "https://a.example/", "<b>s</b>", "").expect("kept");
        assert_eq!(
            (r.title.as_str(), r.content.as_str()),
            ("https://a.example/", "s")
        );
    }
}
