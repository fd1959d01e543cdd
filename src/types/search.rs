//! Web search data: one result, and why a search failed (its kind, and a message that tells
//! the user what to do). Plain data; the providers' wire formats live in `search`.

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// One web search hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct SearchResult {
    /// The page title (plain text).
    pub title: String,
    /// The page address (never empty: results without one are dropped).
    pub url: String,
    /// A short plain-text excerpt (HTML removed).
    pub snippet: String,
    /// The longest plain text the provider gave for the page (at least the snippet).
    pub content: String,
}

/// What went wrong, as a closed set: the one place retryability is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SearchErrorKind {
    /// The server could not be reached (no HTTP status).
    Network,
    /// No complete answer within the deadline.
    Timeout,
    /// An error status (other than the ones below), with what the body said.
    Status,
    /// A success status whose body is not the provider's JSON.
    Malformed,
    /// A SearXNG instance refusing `format=json` (HTTP 403).
    JsonDisabled,
    /// The API key is missing, wrong or out of quota for this provider.
    Unauthorized,
    /// The search settings cannot work (no base URL where one is needed, say).
    Config,
}

kljson::named_enum!(SearchErrorKind {
    Network = "network",
    Timeout = "timeout",
    Status = "status",
    Malformed = "malformed",
    JsonDisabled = "json_disabled",
    Unauthorized = "unauthorized",
    Config = "config",
});

impl SearchErrorKind {}

/// A failed search: the kind, a message for the user that says what to do, and what the
/// server said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, thiserror::Error, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[error("{message}")]
pub struct SearchError {
    /// What went wrong.
    pub kind: SearchErrorKind,
    /// One or two sentences for the user, ending with what to do.
    pub message: String,
    /// The HTTP status, when one was received.
    pub status: Option<u16>,
    /// What the server or the platform said, verbatim (cut short).
    pub detail: Option<String>,
}

impl SearchError {
    fn new(kind: SearchErrorKind, message: String, status: Option<u16>, detail: &str) -> Self {
        let detail = detail.trim();
        Self {
            kind,
            message,
            status,
            detail: (!detail.is_empty()).then(|| detail.to_string()),
        }
    }

    /// `provider` could not be reached; `platform` is what the browser said.
    pub fn network(provider: &str, platform: &str) -> Self {
        Self::new(
            SearchErrorKind::Network,
            format!(
                "Could not reach {provider} ({platform}). Check the connection, and the Search base URL in Options."
            ),
            None,
            platform,
        )
    }

    /// No complete answer from `provider` within `ms`.
    pub fn timeout(provider: &str, ms: u64) -> Self {
        Self::new(
            SearchErrorKind::Timeout,
            format!(
                "{provider} did not answer within {} s. Try again later, or choose another Search provider in Options.",
                ms / 1000
            ),
            None,
            "",
        )
    }

    /// `provider` answered `status`; `detail` is the message its body carried.
    pub fn status(provider: &str, status: u16, detail: &str) -> Self {
        let advice = match status {
            429 => "It is limiting how often you may search: wait a minute and try again.",
            500.. => "The service has a problem: try again later.",
            _ => "Check the search settings in Options.",
        };
        Self::new(
            SearchErrorKind::Status,
            format!(
                "{provider} refused the search (HTTP {status}{}). {advice}",
                said(detail)
            ),
            Some(status),
            detail,
        )
    }

    /// `provider` reported an error inside a success reply (MediaWiki does this).
    pub fn reported(provider: &str, detail: &str) -> Self {
        Self::new(
            SearchErrorKind::Status,
            format!(
                "{provider} refused the search{}. Try other words, or try again later.",
                said(detail)
            ),
            None,
            detail,
        )
    }

    /// `provider` answered with a body that is not its search JSON.
    pub fn malformed(provider: &str, detail: &str) -> Self {
        Self::new(
            SearchErrorKind::Malformed,
            format!(
                "{provider} sent something that is not a search result{}. Check that the Search base URL in Options points at the search service.",
                said(detail)
            ),
            None,
            detail,
        )
    }

    /// The SearXNG instance at `base` answered 403 to `format=json`.
    pub fn json_disabled(base: &str) -> Self {
        Self::new(
            SearchErrorKind::JsonDisabled,
            format!(
                "The SearXNG instance at {base} does not allow JSON output (HTTP 403). Add json to search.formats in its settings.yml (search: formats: [html, json]) and restart it."
            ),
            Some(403),
            "",
        )
    }

    /// `provider` refused the key (`status`, with what the body said).
    pub fn unauthorized(provider: &str, status: u16, detail: &str) -> Self {
        Self::new(
            SearchErrorKind::Unauthorized,
            format!(
                "{provider} refused the API key (HTTP {status}{}). Check the Search API key in Options, and the plan's quota.",
                said(detail)
            ),
            Some(status),
            detail,
        )
    }

    /// Settings that cannot work; `message` says what to set.
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(SearchErrorKind::Config, message.into(), None, "")
    }

    /// Whether trying the same search again may succeed (network trouble, a deadline, rate
    /// limits and server failures); the one place that decides it.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            SearchErrorKind::Network | SearchErrorKind::Timeout => true,
            SearchErrorKind::Status => self.status.is_none_or(|s| s == 429 || s >= 500),
            SearchErrorKind::Malformed
            | SearchErrorKind::JsonDisabled
            | SearchErrorKind::Unauthorized
            | SearchErrorKind::Config => false,
        }
    }
}

/// `": detail"`, or nothing for an empty detail.
fn said(detail: &str) -> String {
    let detail = detail.trim();
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// How sure the grader was, in thousandths (so the state stays `Eq`); serialized as a
/// number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Confidence(u16);

impl Confidence {
    /// The confidence `value` (clamped into [0, 1]; not a number: 0).
    pub fn new(value: f64) -> Self {
        let value = if value.is_finite() {
            value.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Self((value * 1000.0).round() as u16)
    }

    /// The value in [0, 1].
    pub fn get(self) -> f64 {
        f64::from(self.0) / 1000.0
    }

    /// With two decimals ("0.85"; a last digit of 5 rounds up), without core's float
    /// formatting.
    pub fn two_decimals(self) -> String {
        let hundredths = (self.0 + 5) / 10;
        format!("{}.{:02}", hundredths / 100, hundredths % 100)
    }

    /// As a whole percent.
    pub fn percent(self) -> u16 {
        (self.0 + 5) / 10
    }
}

impl Serialize for Confidence {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.get())
    }
}

#[cfg(not(target_arch = "wasm32"))] // the schemas are for protocol::gen, natively
impl schemars::JsonSchema for Confidence {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Confidence".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "number", "minimum": 0, "maximum": 1})
    }
}

impl FromJson for Confidence {
    fn from_json(value: serde_json::Value) -> Result<Self, kljson::Error> {
        f64::from_json(value).map(Self::new)
    }

    fn placeholder() -> Self {
        Self::default()
    }
}

kljson::deserialize_via_json!(Confidence);

impl kljson::ToJson for Confidence {
    fn write_json(&self, out: &mut String) {
        self.get().write_json(out);
    }
}

#[cfg(test)]
mod tests {
    use super::Confidence;

    #[test]
    fn confidence_prints_two_decimals_from_its_thousandths() {
        let cases = [
            (0.0, "0.00"),
            (0.2, "0.20"),
            (0.854, "0.85"),
            (0.855, "0.86"),
            (0.999, "1.00"),
            (1.0, "1.00"),
            (7.0, "1.00"),
            (f64::NAN, "0.00"),
        ];
        for (value, text) in cases {
            assert_eq!(Confidence::new(value).two_decimals(), text, "{value}");
        }
    }
}
