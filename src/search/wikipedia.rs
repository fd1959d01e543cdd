//! Wikipedia through the MediaWiki Action API (no key, no account): `list=search` for the
//! hits, then `prop=extracts` (plain-text intros) for the content of the pages kept. Every
//! request carries `origin=*`, MediaWiki's anonymous CORS mode, so the extension needs no
//! host permission. Pure request builders and parsers.
//! Docs: <https://www.mediawiki.org/wiki/API:Search>,
//! <https://www.mediawiki.org/wiki/Extension:TextExtracts#API>,
//! <https://www.mediawiki.org/wiki/API:Cross-site_requests>,
//! <https://www.mediawiki.org/wiki/API:Errors_and_warnings>.

use serde_json::Value;

use super::{clamp_limit, encode_component, json_object, result, str_at, SearchConfig};
use super::{status_error, SearchProvider};
use crate::ports::HttpRequest;
use crate::types::{SearchError, SearchResult, VecMap};

const PROVIDER: SearchProvider = SearchProvider::Wikipedia;

/// The query parameters every request shares (`origin=*`: anonymous CORS).
const COMMON: &str = "format=json&formatversion=2&origin=*";

/// One Wikipedia (or, with a base URL, any MediaWiki): where its API and its pages are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The server, e.g. `https://de.wikipedia.org`.
    pub origin: String,
}

impl Site {
    /// The site for `config` (its base URL, else `https://<lang>.wikipedia.org` with the
    /// language from `language`, see [`subdomain`]).
    pub fn new(config: &SearchConfig, language: Option<&str>) -> Self {
        let default = format!("https://{}.wikipedia.org", subdomain(language));
        Self {
            origin: config.base_or(&default),
        }
    }

    /// The Action API endpoint.
    pub fn api(&self) -> String {
        format!("{}/w/api.php", self.origin)
    }

    /// The reader's address of page `title`.
    pub fn page_url(&self, title: &str) -> String {
        format!(
            "{}/wiki/{}",
            self.origin,
            encode_component(&title.replace(' ', "_"))
        )
    }

    /// The `list=search` request for `query` (at most `limit` hits, snippets only).
    pub fn search_request(&self, query: &str, limit: usize) -> HttpRequest {
        let url = format!(
            "{}?action=query&list=search&srsearch={}&srlimit={}&srprop=snippet&{COMMON}",
            self.api(),
            encode_component(query),
            clamp_limit(limit)
        );
        HttpRequest::get(url, accept_json())
    }

    /// The `prop=extracts` request for the plain-text intros of `titles`.
    pub fn extracts_request(&self, titles: &[&str]) -> HttpRequest {
        let url = format!(
            "{}?action=query&prop=extracts&explaintext=1&exintro=1&exlimit={}&titles={}&{COMMON}",
            self.api(),
            clamp_limit(titles.len()),
            encode_component(&titles.join("|"))
        );
        HttpRequest::get(url, accept_json())
    }
}

fn accept_json() -> Vec<(String, String)> {
    vec![("accept".into(), "application/json".into())]
}

/// The Wikipedia subdomain for a BCP 47 tag: letters and hyphens only (anything else, or
/// nothing: `en`), lower case, a region or script subtag dropped (`pt-BR` -> `pt`,
/// `zh-Hant` -> `zh`) while Wikipedia's own multi-part codes stay (`zh-yue`, `be-tarask`).
pub fn subdomain(language: Option<&str>) -> String {
    let tag = language
        .unwrap_or_default()
        .trim()
        .replace('_', "-")
        .to_ascii_lowercase();
    let valid = (2..=20).contains(&tag.len())
        && tag.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        && !tag.starts_with('-')
        && !tag.ends_with('-')
        && !tag.contains("--");
    if !valid {
        return "en".into();
    }
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or("en");
    match parts.next() {
        Some(second) if second.len() == 2 || second.len() == 4 => primary.to_string(),
        _ => tag,
    }
}

/// A non-success status (MediaWiki itself reports errors inside a 200, see
/// [`parse_search`]).
pub fn parse_error(status: u16, body: &str) -> SearchError {
    status_error(PROVIDER, status, body)
}

/// The error object of a 200 reply, if any (`{"error": {"code", "info"}}`).
fn reported_error(value: &Value) -> Option<SearchError> {
    let error = value.get("error")?;
    let code = str_at(error, &["code"]);
    let info = str_at(error, &["info"]);
    Some(SearchError::reported(
        PROVIDER.label(),
        format!("{code}: {info}").trim_matches([' ', ':']),
    ))
}

/// The hits of a `list=search` reply (content: the snippet, until the extracts arrive).
pub fn parse_search(
    site: &Site,
    body: &str,
    limit: usize,
) -> Result<Vec<SearchResult>, SearchError> {
    let value = json_object(PROVIDER, body)?;
    if let Some(err) = reported_error(&value) {
        return Err(err);
    }
    let Some(query) = value.get("query") else {
        return Err(SearchError::malformed(
            PROVIDER.label(),
            "no \"query\" in the reply",
        ));
    };
    let hits = query
        .get("search")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    Ok(hits
        .iter()
        .filter_map(|hit| {
            let title = str_at(hit, &["title"]).trim();
            if title.is_empty() {
                return None;
            }
            result(title, &site.page_url(title), str_at(hit, &["snippet"]), "")
        })
        .take(clamp_limit(limit))
        .collect())
}

/// Page title -> plain-text intro, from a `prop=extracts` reply (titles the server
/// normalised are mapped back to the ones asked for).
pub fn parse_extracts(body: &str) -> Result<VecMap<String, String>, SearchError> {
    let value = json_object(PROVIDER, body)?;
    if let Some(err) = reported_error(&value) {
        return Err(err);
    }
    let empty = Vec::new();
    let query = value.get("query");
    let list = |key: &str| {
        query
            .and_then(|q| q.get(key))
            .and_then(Value::as_array)
            .unwrap_or(&empty)
    };
    let mut extracts: VecMap<String, String> = list("pages")
        .iter()
        .filter_map(|page| {
            let title = str_at(page, &["title"]);
            let extract = str_at(page, &["extract"]).trim();
            (!title.is_empty() && !extract.is_empty())
                .then(|| (title.to_string(), extract.to_string()))
        })
        .collect();
    for pair in list("normalized") {
        if let Some(text) = extracts.get(str_at(pair, &["to"])).cloned() {
            extracts.insert(str_at(pair, &["from"]).to_string(), text);
        }
    }
    Ok(extracts)
}

/// `hits` with each page's intro as its content (a page without one keeps its snippet).
pub fn with_extracts(
    hits: Vec<SearchResult>,
    extracts: &VecMap<String, String>,
) -> Vec<SearchResult> {
    hits.into_iter()
        .map(|hit| match extracts.get(&hit.title) {
            Some(text) => result(&hit.title, &hit.url, &hit.snippet, text).unwrap_or(hit),
            None => hit,
        })
        .collect()
}
