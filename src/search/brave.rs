//! The Brave Search API: `GET {base}/res/v1/web/search?q=...&count=N` with the key in
//! `X-Subscription-Token`; results in `web.results[]` (`title`, `url`, `description`,
//! optional `extra_snippets`). Pure request builder and parser.
//! Docs: <https://api-dashboard.search.brave.com/app/documentation/web-search/get-started>,
//! <https://api-dashboard.search.brave.com/app/documentation/web-search/responses>.

use serde_json::Value;

use super::{clamp_limit, encode_component, json_object, result, status_error, str_at};
use super::{SearchConfig, SearchProvider};
use crate::ports::HttpRequest;
use crate::types::{SearchError, SearchResult};

const PROVIDER: SearchProvider = SearchProvider::Brave;

/// The API's server.
pub const DEFAULT_BASE: &str = "https://api.search.brave.com";

/// The web search request for `query` (at most `limit` results).
pub fn build_request(config: &SearchConfig, query: &str, limit: usize) -> HttpRequest {
    let url = format!(
        "{}/res/v1/web/search?q={}&count={}",
        config.base_or(DEFAULT_BASE),
        encode_component(query),
        clamp_limit(limit)
    );
    let headers = vec![
        ("accept".into(), "application/json".into()),
        (
            "x-subscription-token".into(),
            config.api_key.trim().to_string(),
        ),
    ];
    HttpRequest::get(url, headers)
}

/// A non-success status. Brave reports a bad key as 422 with code
/// `SUBSCRIPTION_TOKEN_INVALID` (and `error.detail` for the words).
pub fn parse_error(status: u16, body: &str) -> SearchError {
    let code = kljson::parse_value(body)
        .map(|v| str_at(&v, &["error", "code"]).to_string())
        .unwrap_or_default();
    if code.starts_with("SUBSCRIPTION_TOKEN") || code == "OPTION_NOT_IN_PLAN" {
        return SearchError::unauthorized(PROVIDER.label(), status, &super::error_detail(body));
    }
    status_error(PROVIDER, status, body)
}

/// The first `limit` web results (a reply without `web` has none).
pub fn parse_response(body: &str, limit: usize) -> Result<Vec<SearchResult>, SearchError> {
    let value = json_object(PROVIDER, body)?;
    let results = value
        .get("web")
        .and_then(|w| w.get("results"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    Ok(results
        .iter()
        .filter_map(|r| {
            let description = str_at(r, &["description"]);
            let extra: Vec<String> = r
                .get("extra_snippets")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(super::strip_html)
                .collect();
            let content = std::iter::once(super::strip_html(description))
                .chain(extra)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            result(
                str_at(r, &["title"]),
                str_at(r, &["url"]),
                description,
                &content,
            )
        })
        .take(clamp_limit(limit))
        .collect())
}
