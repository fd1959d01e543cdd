//! SearXNG, the user's own metasearch instance: `GET {base}/search?q=...&format=json`. An
//! instance answers 403 when JSON is not among its `search.formats`, and the error says how
//! to turn it on. Pure request builder and parser.
//! Docs: <https://docs.searxng.org/dev/search_api.html>,
//! <https://docs.searxng.org/admin/settings/settings_search.html>.

use super::{clamp_limit, encode_component, json_object, result, results_of, status_error, str_at};
use super::{SearchConfig, SearchProvider};
use crate::ports::HttpRequest;
use crate::types::{SearchError, SearchResult};

const PROVIDER: SearchProvider = SearchProvider::Searxng;

/// The search request (SearXNG has no result-count parameter: the parser keeps the first
/// results).
pub fn build_request(config: &SearchConfig, query: &str) -> HttpRequest {
    let url = format!(
        "{}/search?q={}&format=json",
        config.base_or(""),
        encode_component(query)
    );
    HttpRequest::get(url, vec![("accept".into(), "application/json".into())])
}

/// A non-success status: 403 is JSON output turned off on the instance at `base`.
pub fn parse_error(base: &str, status: u16, body: &str) -> SearchError {
    match status {
        403 => SearchError::json_disabled(base),
        _ => status_error(PROVIDER, status, body),
    }
}

/// The first `limit` results of a JSON reply (`results[]` with `url`, `title`, `content`);
/// an address repeated by several engines is kept once.
pub fn parse_response(body: &str, limit: usize) -> Result<Vec<SearchResult>, SearchError> {
    let value = json_object(PROVIDER, body)?;
    let results = results_of(PROVIDER, &value)?;
    let mut kept: Vec<SearchResult> = Vec::new();
    for r in results {
        let found = result(
            str_at(r, &["title"]),
            str_at(r, &["url"]),
            str_at(r, &["content"]),
            "",
        );
        if let Some(found) = found.filter(|f| kept.iter().all(|k| k.url != f.url)) {
            kept.push(found);
        }
        if kept.len() == clamp_limit(limit) {
            break;
        }
    }
    Ok(kept)
}
