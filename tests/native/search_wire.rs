//! The web search providers against a scripted HTTP peer, from fixtures written from each
//! provider's documentation (tests/fixtures/search/<provider>/README.md cites them):
//! request shapes, success, empty results, error statuses, malformed and non-JSON bodies,
//! missing fields, the deadline, and property tests that no body makes a parser panic and
//! that any query survives the URL encoding.

use std::rc::Rc;

use crate::wire_common::{fixture, header, ScriptedHttp};
use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::ports::{
    HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse, SearchClient, SearchQuery,
};
use knowledgelens::search::{
    brave, searxng, tavily, wikipedia, HttpSearch, SearchConfig, SearchProvider, DEADLINE_MS,
};
use knowledgelens::testing::ManualClock;
use knowledgelens::types::{SearchError, SearchErrorKind, SearchResult};
use proptest::prelude::*;
use serde_json::Value;

const JSON: &str = "application/json";

fn config(provider: SearchProvider, base_url: &str, api_key: &str) -> SearchConfig {
    SearchConfig {
        provider,
        base_url: base_url.into(),
        api_key: api_key.into(),
    }
}

fn query(text: &str, limit: usize, language: Option<&str>) -> SearchQuery {
    SearchQuery {
        text: text.into(),
        limit,
        language: language.map(str::to_string),
    }
}

/// Runs one search of `text` (at most 10 results, English) over `http`.
fn run(
    http: &Rc<dyn HttpClient>,
    config: SearchConfig,
    text: &str,
) -> Result<Vec<SearchResult>, SearchError> {
    let client = HttpSearch::new(http.clone(), ManualClock::new(0), config);
    futures::executor::block_on(client.search(&query(text, 10, Some("en"))))
}

fn scripted() -> (Rc<ScriptedHttp>, Rc<dyn HttpClient>) {
    let http = Rc::new(ScriptedHttp::default());
    let dyn_http: Rc<dyn HttpClient> = http.clone();
    (http, dyn_http)
}

/// One search of `text` whose server answers its requests with `replies` (status, body) in
/// order: the peer (with the requests it saw) and the outcome.
fn answered(
    config: SearchConfig,
    text: &str,
    replies: &[(u16, &str)],
) -> (Rc<ScriptedHttp>, Result<Vec<SearchResult>, SearchError>) {
    let (http, dyn_http) = scripted();
    for (status, body) in replies {
        http.push(*status, JSON, body);
    }
    (http, run(&dyn_http, config, text))
}

fn seen(http: &ScriptedHttp, i: usize) -> HttpRequest {
    http.seen.borrow()[i].clone()
}

/// The decoded value of query parameter `name` in `url`.
fn param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| percent_decode(v))
}

/// Undoes `%XX` escapes (the inverse of the request builders' encoding).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
            out.push(u8::from_str_radix(hex, 16).expect("hex escape"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

fn urls(results: &[SearchResult]) -> Vec<&str> {
    results.iter().map(|r| r.url.as_str()).collect()
}

// --- Wikipedia ---------------------------------------------------------------------------

#[test]
fn wikipedia_searches_then_fetches_plain_text_intros_with_anonymous_cors() {
    let (http, outcome) = answered(
        config(SearchProvider::Wikipedia, "", ""),
        "photosynthesis light",
        &[
            (200, &fixture("search/wikipedia", "search.json")),
            (200, &fixture("search/wikipedia", "extracts.json")),
        ],
    );
    let results = outcome.expect("results");

    let search = seen(&http, 0);
    assert_eq!(search.method, "GET");
    assert!(
        search
            .url
            .starts_with("https://en.wikipedia.org/w/api.php?"),
        "{}",
        search.url
    );
    for (name, value) in [
        ("action", "query"),
        ("list", "search"),
        ("srsearch", "photosynthesis light"),
        ("srlimit", "10"),
        ("format", "json"),
        ("formatversion", "2"),
        ("origin", "*"),
    ] {
        assert_eq!(
            param(&search.url, name).as_deref(),
            Some(value),
            "{name} in {}",
            search.url
        );
    }
    let extracts = seen(&http, 1);
    for (name, value) in [
        ("action", "query"),
        ("prop", "extracts"),
        ("explaintext", "1"),
        ("exintro", "1"),
        (
            "titles",
            "Photosynthesis|C3 carbon fixation|Light-dependent reactions",
        ),
        ("formatversion", "2"),
        ("origin", "*"),
    ] {
        assert_eq!(
            param(&extracts.url, name).as_deref(),
            Some(value),
            "{name} in {}",
            extracts.url
        );
    }

    // The hit without a title is dropped; markup and entities are gone from the snippets.
    assert_eq!(
        urls(&results),
        [
            "https://en.wikipedia.org/wiki/Photosynthesis",
            "https://en.wikipedia.org/wiki/C3_carbon_fixation",
            "https://en.wikipedia.org/wiki/Light-dependent_reactions",
        ]
    );
    assert!(results[0].snippet.starts_with("Photosynthesis is a system"));
    assert!(
        results[0].snippet.ends_with("light energy's"),
        "{}",
        results[0].snippet
    );
    assert!(
        results[1].snippet.ends_with("C4 & CAM"),
        "{}",
        results[1].snippet
    );
    assert!(results.iter().all(|r| !r.snippet.contains('<')));
    assert!(results[0]
        .content
        .contains("chemical energy necessary to fuel"));
    assert_eq!(results[2].title, "Light-dependent reactions");
    assert_eq!(
        results[2].content, results[2].snippet,
        "no intro: the snippet serves"
    );
}

#[test]
fn wikipedia_language_picks_a_safe_subdomain() {
    let cases = [
        (Some("de"), "de"),
        (Some("pt-BR"), "pt"),
        (Some("zh_Hant"), "zh"),
        (Some("zh-yue"), "zh-yue"),
        (Some("be-tarask"), "be-tarask"),
        (Some("EN"), "en"),
        (Some("evil.example.com/x"), "en"),
        (Some("a"), "en"),
        (Some("-en"), "en"),
        (Some("ja\u{0}"), "en"),
        (Some(""), "en"),
        (None, "en"),
    ];
    for (language, expected) in cases {
        assert_eq!(wikipedia::subdomain(language), expected, "{language:?}");
    }
    let site = wikipedia::Site::new(&config(SearchProvider::Wikipedia, "", ""), Some("fr-CA"));
    assert!(site
        .search_request("x", 3)
        .url
        .starts_with("https://fr.wikipedia.org/w/api.php?"));
}

#[test]
fn wikipedia_base_url_is_used_as_is() {
    let cfg = config(SearchProvider::Wikipedia, "http://127.0.0.1:8080/", "");
    let site = wikipedia::Site::new(&cfg, Some("de"));
    assert!(site
        .search_request("x", 3)
        .url
        .starts_with("http://127.0.0.1:8080/w/api.php?action=query"));
    assert_eq!(
        site.page_url("Ärger & Co"),
        "http://127.0.0.1:8080/wiki/%C3%84rger_%26_Co"
    );
}

#[test]
fn wikipedia_no_hits_needs_no_second_request() {
    let (http, outcome) = answered(
        config(SearchProvider::Wikipedia, "", ""),
        "qwzxv",
        &[(200, &fixture("search/wikipedia", "search_empty.json"))],
    );
    let results = outcome;
    assert_eq!(results, Ok(Vec::new()));
    assert_eq!(http.seen.borrow().len(), 1);
}

#[test]
fn wikipedia_api_errors_inside_a_200_are_errors() {
    let (_http, outcome) = answered(
        config(SearchProvider::Wikipedia, "", ""),
        "x",
        &[(
            200,
            &fixture("search/wikipedia", "error_missing_param.json"),
        )],
    );
    let err = outcome.expect_err("error");
    assert_eq!(err.kind, SearchErrorKind::Status);
    assert!(err.message.contains("missingparam"), "{}", err.message);
    assert!(
        err.message.contains("\"srsearch\" parameter must be set"),
        "{}",
        err.message
    );
}

#[test]
fn wikipedia_rate_limit_page_is_a_retryable_status() {
    let (_http, outcome) = answered(
        config(SearchProvider::Wikipedia, "", ""),
        "x",
        &[(429, &fixture("search/wikipedia", "error_ratelimited.html"))],
    );
    let err = outcome.expect_err("error");
    assert_eq!((err.kind, err.status), (SearchErrorKind::Status, Some(429)));
    assert!(err.is_retryable());
    assert!(err.message.contains("Too many requests"), "{}", err.message);
    assert!(err.message.contains("wait a minute"), "{}", err.message);
}

#[test]
fn wikipedia_keeps_the_snippets_when_the_intros_fail() {
    let (_http, outcome) = answered(
        config(SearchProvider::Wikipedia, "", ""),
        "x",
        &[
            (200, &fixture("search/wikipedia", "search.json")),
            (503, "upstream connect error"),
        ],
    );
    let results = outcome.expect("hits");
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.content == r.snippet));
}

#[test]
fn wikipedia_malformed_bodies_are_malformed() {
    for body in [
        "<html>not json</html>",
        "[1, 2]",
        "{\"batchcomplete\": true}",
        "",
    ] {
        let (_http, outcome) = answered(
            config(SearchProvider::Wikipedia, "", ""),
            "x",
            &[(200, body)],
        );
        let err = outcome.expect_err(body);
        assert_eq!(err.kind, SearchErrorKind::Malformed, "{body:?}");
        assert!(!err.is_retryable());
    }
}

// --- SearXNG -----------------------------------------------------------------------------

#[test]
fn searxng_asks_for_json_and_keeps_one_result_per_address() {
    let (http, outcome) = answered(
        config(SearchProvider::Searxng, "http://127.0.0.1:8888/", ""),
        "c'est la vie & more?",
        &[(200, &fixture("search/searxng", "search.json"))],
    );
    let results = outcome.expect("results");
    let request = seen(&http, 0);
    assert_eq!(request.method, "GET");
    assert!(
        request.url.starts_with("http://127.0.0.1:8888/search?q="),
        "{}",
        request.url
    );
    assert_eq!(
        param(&request.url, "q").as_deref(),
        Some("c'est la vie & more?")
    );
    assert_eq!(param(&request.url, "format").as_deref(), Some("json"));
    assert_eq!(
        urls(&results),
        [
            "https://en.wikipedia.org/wiki/Photosynthesis",
            "https://www.britannica.com/science/photosynthesis"
        ]
    );
    assert_eq!(
        results[1].title,
        "Photosynthesis | Definition, Formula, Process, Diagram, & Facts"
    );
    assert!(
        results[1]
            .snippet
            .starts_with("Photosynthesis, the process"),
        "{}",
        results[1].snippet
    );
}

#[test]
fn searxng_empty_results() {
    let (_http, outcome) = answered(
        config(SearchProvider::Searxng, "http://127.0.0.1:8888", ""),
        "x",
        &[(200, &fixture("search/searxng", "search_empty.json"))],
    );
    let results = outcome;
    assert_eq!(results, Ok(Vec::new()));
}

#[test]
fn searxng_403_says_how_to_turn_json_on() {
    let (_http, outcome) = answered(
        config(SearchProvider::Searxng, "http://127.0.0.1:8888", ""),
        "x",
        &[(403, &fixture("search/searxng", "forbidden.html"))],
    );
    let err = outcome.expect_err("403");
    assert_eq!(err.kind, SearchErrorKind::JsonDisabled);
    assert_eq!(err.status, Some(403));
    assert!(!err.is_retryable());
    for words in [
        "http://127.0.0.1:8888",
        "search.formats",
        "settings.yml",
        "formats: [html, json]",
    ] {
        assert!(err.message.contains(words), "{words} in {}", err.message);
    }
}

#[test]
fn searxng_rate_limit_and_html_instead_of_json() {
    let (_http, outcome) = answered(
        config(SearchProvider::Searxng, "http://127.0.0.1:8888", ""),
        "x",
        &[(429, &fixture("search/searxng", "too_many_requests.txt"))],
    );
    let err = outcome.expect_err("429");
    assert!(err.is_retryable());
    assert_eq!(err.detail.as_deref(), Some("Too Many Requests"));

    let (_http, outcome) = answered(
        config(SearchProvider::Searxng, "http://127.0.0.1:8888", ""),
        "x",
        &[(200, "<!doctype html><title>SearXNG</title>")],
    );
    let err = outcome.expect_err("html");
    assert_eq!(err.kind, SearchErrorKind::Malformed);
    assert!(err.message.contains("Search base URL"), "{}", err.message);
}

#[test]
fn searxng_without_a_base_url_sends_nothing() {
    let (_http, dyn_http) = scripted();
    let err = run(&dyn_http, config(SearchProvider::Searxng, "  ", ""), "x").expect_err("config");
    assert_eq!(err.kind, SearchErrorKind::Config);
    assert!(err.message.contains("Search base URL"), "{}", err.message);
    let err = run(
        &dyn_http,
        config(SearchProvider::Searxng, "ftp://x", ""),
        "x",
    )
    .expect_err("scheme");
    assert_eq!(err.kind, SearchErrorKind::Config);
}

// --- Brave -------------------------------------------------------------------------------

#[test]
fn brave_sends_the_key_header_and_reads_web_results() {
    let (http, outcome) = answered(
        config(SearchProvider::Brave, "", " BSA-key "),
        "rust wasm",
        &[(200, &fixture("search/brave", "web_search.json"))],
    );
    let results = outcome.expect("ok");
    let request = seen(&http, 0);
    assert_eq!(request.method, "GET");
    assert!(
        request
            .url
            .starts_with("https://api.search.brave.com/res/v1/web/search?q=rust%20wasm&count=10"),
        "{}",
        request.url
    );
    assert_eq!(header(&request, "X-Subscription-Token"), Some("BSA-key"));
    assert_eq!(header(&request, "accept"), Some(JSON));
    assert_eq!(
        urls(&results),
        [
            "https://en.wikipedia.org/wiki/Photosynthesis",
            "https://www.khanacademy.org/science/biology/photosynthesis"
        ]
    );
    assert!(
        results[0].snippet.starts_with("Photosynthesis is a system"),
        "{}",
        results[0].snippet
    );
    assert!(
        results[0].content.contains("releases oxygen"),
        "extra snippets join the content"
    );
    assert_eq!(
        results[1].snippet,
        "Learn how plants turn light, water & CO2 into sugar."
    );
}

#[test]
fn brave_without_web_section_has_no_results() {
    let (_http, outcome) = answered(
        config(SearchProvider::Brave, "", "k"),
        "x",
        &[(200, &fixture("search/brave", "web_search_empty.json"))],
    );
    assert_eq!(outcome, Ok(Vec::new()));
    let (_http, outcome) = answered(
        config(SearchProvider::Brave, "", "k"),
        "x",
        &[(200, r#"{"web": {"results": "not a list"}}"#)],
    );
    assert_eq!(outcome, Ok(Vec::new()));
}

#[test]
fn brave_error_statuses() {
    let cases = [
        (
            422,
            "error_token_invalid.json",
            SearchErrorKind::Unauthorized,
            false,
            "subscription token is invalid",
        ),
        (
            429,
            "error_rate_limited.json",
            SearchErrorKind::Status,
            true,
            "rate limit exceeded",
        ),
        (
            422,
            "error_validation.json",
            SearchErrorKind::Status,
            false,
            "Unable to validate",
        ),
    ];
    for (status, file, kind, retryable, words) in cases {
        let (_http, outcome) = answered(
            config(SearchProvider::Brave, "", "k"),
            "x",
            &[(status, &fixture("search/brave", file))],
        );
        let err = outcome.expect_err(file);
        assert_eq!(
            (err.kind, err.status, err.is_retryable()),
            (kind, Some(status), retryable),
            "{file}"
        );
        assert!(err.message.contains(words), "{file}: {}", err.message);
    }
    let (_http, outcome) = answered(config(SearchProvider::Brave, "", "k"), "x", &[(401, "")]);
    let err = outcome.expect_err("401");
    assert_eq!(err.kind, SearchErrorKind::Unauthorized);
    assert!(err.message.contains("Search API key"), "{}", err.message);
}

#[test]
fn brave_without_a_key_sends_nothing() {
    let (_http, dyn_http) = scripted();
    let err = run(&dyn_http, config(SearchProvider::Brave, "", ""), "x").expect_err("config");
    assert_eq!(err.kind, SearchErrorKind::Config);
    assert!(err.message.contains("Search API key"), "{}", err.message);
}

// --- Tavily ------------------------------------------------------------------------------

#[test]
fn tavily_posts_query_and_max_results_with_a_bearer_key() {
    let (http, dyn_http) = scripted();
    http.push(200, JSON, &fixture("search/tavily", "search.json"));
    let results = run(
        &dyn_http,
        config(SearchProvider::Tavily, "", "tvly-key"),
        "rust \"wasm\"",
    )
    .expect("ok");
    let request = seen(&http, 0);
    assert_eq!(
        (request.method.as_str(), request.url.as_str()),
        ("POST", "https://api.tavily.com/search")
    );
    assert_eq!(header(&request, "authorization"), Some("Bearer tvly-key"));
    assert_eq!(header(&request, "content-type"), Some(JSON));
    assert_eq!(
        http.body(0),
        serde_json::json!({"query": "rust \"wasm\"", "max_results": 10})
    );
    assert_eq!(
        urls(&results),
        [
            "https://en.wikipedia.org/wiki/Photosynthesis",
            "https://education.nationalgeographic.org/resource/photosynthesis/"
        ]
    );
    assert!(results[1].content.contains("carbon dioxide"));
}

#[test]
fn tavily_empty_and_missing_results() {
    let (_http, outcome) = answered(
        config(SearchProvider::Tavily, "", "k"),
        "x",
        &[(200, &fixture("search/tavily", "search_empty.json"))],
    );
    assert_eq!(outcome, Ok(Vec::new()));
    let (_http, outcome) = answered(
        config(SearchProvider::Tavily, "", "k"),
        "x",
        &[(200, r#"{"query": "x", "answer": null}"#)],
    );
    let err = outcome.expect_err("no results");
    assert_eq!(err.kind, SearchErrorKind::Malformed);
}

#[test]
fn tavily_error_statuses() {
    let cases = [
        (
            401,
            "error_unauthorized.json",
            SearchErrorKind::Unauthorized,
            "missing or invalid API key",
        ),
        (
            400,
            "error_bad_request.json",
            SearchErrorKind::Status,
            "Query is invalid",
        ),
        (
            432,
            "error_plan_limit.json",
            SearchErrorKind::Unauthorized,
            "usage limit",
        ),
    ];
    for (status, file, kind, words) in cases {
        let (_http, outcome) = answered(
            config(SearchProvider::Tavily, "", "k"),
            "x",
            &[(status, &fixture("search/tavily", file))],
        );
        let err = outcome.expect_err(file);
        assert_eq!((err.kind, err.status), (kind, Some(status)), "{file}");
        assert!(!err.is_retryable(), "{file}");
        assert!(err.message.contains(words), "{file}: {}", err.message);
    }
    let (_http, outcome) = answered(
        config(SearchProvider::Tavily, "", "k"),
        "x",
        &[(502, "<html><body><h1>502 Bad Gateway</h1></body></html>")],
    );
    let err = outcome.expect_err("502");
    assert!(err.is_retryable());
    assert_eq!(err.detail.as_deref(), Some("502 Bad Gateway"));
}

#[test]
fn a_server_echoing_the_search_key_never_shows_it() {
    let key = "tvly-dev-Q1w2E3r4T5y6U7i8";
    // Tavily's error body: {"detail": {"error": "..."}} (https://docs.tavily.com/documentation/api-reference/endpoint/search).
    let body =
        format!(r#"{{"detail": {{"error": "Unauthorized: missing or invalid API key {key}."}}}}"#);
    let (_http, outcome) = answered(
        config(SearchProvider::Tavily, "", key),
        "x",
        &[(401, &body)],
    );
    let err = outcome.expect_err("401");
    let shown = format!("{} {:?}", err.message, err.detail);
    assert!(!shown.contains(key), "{shown}");
    assert!(shown.contains("[key]"), "{shown}");
    // Results that quote the key do not carry it on either.
    let results = format!(
        r#"{{"query": "x", "results": [{{"title": "Key {key}", "url": "https://example.com/?k={key}", "content": "{key}", "score": 0.9}}]}}"#
    );
    let (_http, outcome) = answered(
        config(SearchProvider::Tavily, "", key),
        "x",
        &[(200, &results)],
    );
    let results = outcome.expect("results");
    assert_eq!(results.len(), 1);
    assert!(!format!("{results:?}").contains(key), "{results:?}");
}

// --- Transport ---------------------------------------------------------------------------

/// A server that never answers.
struct Silent;

impl HttpClient for Silent {
    fn send(&self, _request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        future::pending().boxed_local()
    }
}

/// A server that cannot be reached.
struct Unreachable;

impl HttpClient for Unreachable {
    fn send(&self, _request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        future::ready(Err(HttpError {
            message: "Failed to fetch".into(),
            ..Default::default()
        }))
        .boxed_local()
    }
}

/// A server whose 200 body never ends (`"{"` and then spaces, forever).
struct Endless;

struct EndlessBody(bool);

impl HttpBody for EndlessBody {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        let first = std::mem::replace(&mut self.0, false);
        let chunk = if first {
            b"{".to_vec()
        } else {
            vec![b' '; 64 * 1024]
        };
        future::ready(Ok(Some(chunk))).boxed_local()
    }
}

impl HttpClient for Endless {
    fn send(&self, _request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        future::ready(Ok(HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: Box::new(EndlessBody(true)),
        }))
        .boxed_local()
    }
}

/// A server that answers 503 and then drops the connection mid-body.
struct BrokenOff;

struct BrokenBody;

impl HttpBody for BrokenBody {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        future::ready(Err(HttpError {
            message: "network error".into(),
            ..Default::default()
        }))
        .boxed_local()
    }
}

impl HttpClient for BrokenOff {
    fn send(&self, _request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        future::ready(Ok(HttpResponse {
            status: 503,
            headers: Vec::new(),
            body: Box::new(BrokenBody),
        }))
        .boxed_local()
    }
}

#[test]
fn an_error_status_counts_even_when_its_body_breaks_off() {
    let client = HttpSearch::new(
        Rc::new(BrokenOff),
        ManualClock::new(0),
        config(SearchProvider::Brave, "", "k"),
    );
    let err = futures::executor::block_on(client.search(&query("x", 5, None))).expect_err("503");
    assert_eq!((err.kind, err.status), (SearchErrorKind::Status, Some(503)));
    assert!(err.is_retryable());
}

#[test]
fn a_silent_server_times_out_at_the_deadline() {
    let clock = ManualClock::new(0);
    let client = HttpSearch::new(
        Rc::new(Silent),
        clock.clone(),
        config(SearchProvider::Wikipedia, "", ""),
    );
    let err =
        futures::executor::block_on(client.search(&query("x", 5, None))).expect_err("timeout");
    assert_eq!(err.kind, SearchErrorKind::Timeout);
    assert!(err.is_retryable());
    assert!(err.message.contains("20 s"), "{}", err.message);
    assert_eq!(*clock.sleeps.borrow(), [DEADLINE_MS]);
}

#[test]
fn an_unreachable_server_is_a_network_error() {
    let client = HttpSearch::new(
        Rc::new(Unreachable),
        ManualClock::new(0),
        config(SearchProvider::Searxng, "http://127.0.0.1:9", ""),
    );
    let err =
        futures::executor::block_on(client.search(&query("x", 5, None))).expect_err("network");
    assert_eq!(err.kind, SearchErrorKind::Network);
    assert!(err.is_retryable());
    assert!(
        err.message.contains("Failed to fetch") && err.message.contains("SearXNG"),
        "{}",
        err.message
    );
}

#[test]
fn an_endless_body_is_cut_and_ends_as_malformed() {
    let client = HttpSearch::new(
        Rc::new(Endless),
        ManualClock::new(0),
        config(SearchProvider::Tavily, "", "k"),
    );
    let err =
        futures::executor::block_on(client.search(&query("x", 5, None))).expect_err("endless");
    assert_eq!(err.kind, SearchErrorKind::Malformed);
}

#[test]
fn the_limit_is_respected() {
    let (http, dyn_http) = scripted();
    http.push(200, JSON, &fixture("search/tavily", "search.json"));
    let client = HttpSearch::new(
        dyn_http,
        ManualClock::new(0),
        config(SearchProvider::Tavily, "", "k"),
    );
    let results = futures::executor::block_on(client.search(&query("x", 1, None))).expect("ok");
    assert_eq!(results.len(), 1);
    assert_eq!(http.body(0)["max_results"], 1);
}

// --- Properties --------------------------------------------------------------------------

/// Every parser and error reader on `body`; none may panic, and every result has a web URL
/// and no markup in its snippet.
fn parse_everything(body: &str) {
    let site = wikipedia::Site::new(&config(SearchProvider::Wikipedia, "", ""), None);
    let lists = [
        wikipedia::parse_search(&site, body, 10),
        searxng::parse_response(body, 10),
        brave::parse_response(body, 10),
        tavily::parse_response(body, 10),
    ];
    for results in lists.into_iter().flatten() {
        for r in results {
            assert!(r.url.starts_with("http://") || r.url.starts_with("https://"));
            assert!(!r.snippet.contains('<') || !r.snippet.contains('>'));
        }
    }
    let _ = wikipedia::parse_extracts(body);
    for status in [400, 401, 403, 422, 429, 432, 500] {
        let _ = wikipedia::parse_error(status, body);
        let _ = searxng::parse_error("http://127.0.0.1:1", status, body);
        let _ = brave::parse_error(status, body);
        let _ = tavily::parse_error(status, body);
    }
}

/// JSON shaped like the providers' replies, with arbitrary field values.
fn reply_like() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        any::<String>().prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
        Just(serde_json::json!([])),
        "(https?://)?[a-z<>&;\" ]{0,20}".prop_map(Value::String),
    ];
    (field.clone(), field.clone(), field).prop_map(|(title, url, text)| {
        let hit = serde_json::json!({"title": title, "url": url, "snippet": text, "content": text, "description": text});
        serde_json::json!({
            "query": {"search": [hit.clone()], "pages": [hit.clone()]},
            "results": [hit.clone()],
            "web": {"results": [hit]},
        })
        .to_string()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No byte sequence makes a parser panic.
    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        parse_everything(&String::from_utf8_lossy(&bytes));
    }

    /// Nor does JSON of the right shape with wrong or hostile field values.
    #[test]
    fn parsers_never_panic_on_odd_fields(body in reply_like()) {
        parse_everything(&body);
    }

    /// Any query comes back unchanged from every request builder, and the URL carries
    /// nothing that could end the parameter or the URL early.
    #[test]
    fn any_query_round_trips(text in any::<String>()) {
        let site = wikipedia::Site::new(&config(SearchProvider::Wikipedia, "", ""), None);
        let searx = config(SearchProvider::Searxng, "http://127.0.0.1:8888", "");
        let brave_cfg = config(SearchProvider::Brave, "", "k");
        let built = [
            (site.search_request(&text, 5).url, "srsearch"),
            (searxng::build_request(&searx, &text).url, "q"),
            (brave::build_request(&brave_cfg, &text, 5).url, "q"),
        ];
        for (url, name) in built {
            prop_assert!(url.chars().all(|c| c.is_ascii_graphic() && c != '#'), "{}", url);
            prop_assert_eq!(param(&url, name), Some(text.clone()));
        }
        let titles = site.extracts_request(&[text.as_str()]).url;
        prop_assert_eq!(param(&titles, "titles"), Some(text.clone()));
        let tavily_request = tavily::build_request(&config(SearchProvider::Tavily, "", "k"), &text, 5);
        let body: Value = serde_json::from_str(tavily_request.body.as_deref().unwrap_or_default()).expect("json");
        prop_assert_eq!(body["query"].as_str(), Some(text.as_str()));
    }
}
