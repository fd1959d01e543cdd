//! Tavily: `POST {base}/search` with `Authorization: Bearer <key>` and a JSON body
//! `{query, max_results}`; results in `results[]` (`title`, `url`, `content`). Pure request
//! builder and parser.
//! Docs: <https://docs.tavily.com/documentation/api-reference/endpoint/search>.

use serde::Serialize;
use serde_json::Value;

use super::{clamp_limit, json_object, result, results_of, status_error, str_at};
use super::{SearchConfig, SearchProvider};
use crate::ports::HttpRequest;
use crate::types::{SearchError, SearchResult};
use kljson::ToJson;

const PROVIDER: SearchProvider = SearchProvider::Tavily;

/// The API's server.
pub const DEFAULT_BASE: &str = "https://api.tavily.com";

/// The request body.
#[derive(Serialize, ToJson)]
struct Body<'a> {
    query: &'a str,
    max_results: usize,
}

/// The search request for `query` (at most `limit` results).
pub fn build_request(config: &SearchConfig, query: &str, limit: usize) -> HttpRequest {
    let body = Body {
        query,
        max_results: clamp_limit(limit),
    };
    let body = kljson::to_string(&body);
    let headers = vec![(
        "authorization".into(),
        format!("Bearer {}", config.api_key.trim()),
    )];
    HttpRequest::post_json(
        format!("{}/search", config.base_or(DEFAULT_BASE)),
        headers,
        body,
    )
}

/// A non-success status (`{"detail": {"error": "..."}}`): 401 is a bad key, 432 and 433
/// an exhausted plan or spending limit.
pub fn parse_error(status: u16, body: &str) -> SearchError {
    match status {
        432 | 433 => {
            SearchError::unauthorized(PROVIDER.label(), status, &super::error_detail(body))
        }
        _ => status_error(PROVIDER, status, body),
    }
}

/// The first `limit` results.
pub fn parse_response(body: &str, limit: usize) -> Result<Vec<SearchResult>, SearchError> {
    let value = json_object(PROVIDER, body)?;
    let results = results_of(PROVIDER, &value)?;
    Ok(results
        .iter()
        .filter_map(|r: &Value| {
            let content = str_at(r, &["content"]);
            result(str_at(r, &["title"]), str_at(r, &["url"]), content, content)
        })
        .take(clamp_limit(limit))
        .collect())
}
