//! "Test search" through the service: one real query with the search fields of the
//! (possibly unsaved) settings, answered with the count, latency and first titles, or with
//! the search error (its kind, and a message that says what to do). Once with a scripted
//! search client, once through `HttpSearch` over a scripted HTTP peer speaking the
//! MediaWiki Action API, and over a peer that refuses the connection.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::ports::{
    HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse, StateStore,
};
use knowledgelens::search::{HttpSearchFactory, SearchFactory, SearchProvider};
use knowledgelens::service::{ModelFactory, Ports, Service};
use knowledgelens::settings::{Settings, SETTINGS_KEY};
use knowledgelens::testing::{
    search_result, ManualClock, MemoryStore, NoSearch, RecordingSink, ScriptedLlm,
    ScriptedSearches, SeededRandom, StaticPages,
};
use knowledgelens::types::SearchError;
use serde_json::{json, Value};

struct NoModels;

impl ModelFactory for NoModels {
    fn client(&self, _settings: &Settings) -> Rc<dyn knowledgelens::ports::LlmClient> {
        Rc::new(ScriptedLlm::new(Vec::new()))
    }
}

fn harness(search: Rc<dyn SearchFactory>) -> (Rc<Service>, Rc<MemoryStore>) {
    let settings = Rc::new(MemoryStore::new());
    let ports = Ports {
        capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
        sessions: Rc::new(MemoryStore::new()),
        settings: settings.clone(),
        clock: ManualClock::new(1_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(BTreeMap::new())),
        models: Rc::new(NoModels),
        random: Rc::new(SeededRandom::new(13)),
        search,
    };
    (Service::new(ports), settings)
}

fn call(service: &Rc<Service>, request: Value) -> Value {
    let (reply, run) = futures::executor::block_on(service.handle_json(request));
    assert!(run.is_none(), "no run is started by {reply}");
    assert_eq!(reply["ok"], true, "{reply}");
    reply["data"].clone()
}

fn test_search(service: &Rc<Service>, search: Value) -> Value {
    let mut settings = json!({"provider": "ollama", "base_url": "http://localhost:11434"});
    for (k, v) in search.as_object().expect("fields") {
        settings[k] = v.clone();
    }
    call(
        service,
        json!({"id": 7, "type": "test_search", "settings": settings}),
    )
}

#[test]
fn a_working_search_reports_count_latency_and_titles() {
    let searches = Rc::new(ScriptedSearches::new(vec![Ok(vec![
        search_result(
            "Web browser",
            "https://en.wikipedia.org/wiki/Web_browser",
            "a",
        ),
        search_result("Chromium", "https://en.wikipedia.org/wiki/Chromium", "b"),
    ])]));
    let (service, _) = harness(searches.clone());
    let data = test_search(
        &service,
        json!({"search_provider": "searxng", "search_base_url": " http://127.0.0.1:8888/ "}),
    );
    assert_eq!(data["ok"], true, "{data}");
    assert_eq!(data["count"], 2);
    assert_eq!(data["provider"], "SearXNG");
    assert_eq!(data["titles"], json!(["Web browser", "Chromium"]));
    assert!(data["latency_ms"].is_u64());
    let config = &searches.configs.borrow()[0];
    assert_eq!(config.provider, SearchProvider::Searxng);
    assert_eq!(config.base_url, "http://127.0.0.1:8888", "normalized first");
    assert_eq!(
        searches.search.texts(),
        [data["query"].as_str().expect("query")]
    );
}

#[test]
fn a_failed_search_carries_the_error_and_its_remedy() {
    let searches = Rc::new(ScriptedSearches::new(vec![Err(SearchError::unauthorized(
        "Brave Search",
        401,
        "invalid subscription token",
    ))]));
    let (service, _) = harness(searches);
    let data = test_search(
        &service,
        json!({"search_provider": "brave", "search_api_key": "BSA-wrong"}),
    );
    assert_eq!(data["ok"], false, "{data}");
    assert_eq!(data["error"]["kind"], "unauthorized");
    assert_eq!(data["error"]["status"], 401);
    let message = data["error"]["message"].as_str().expect("message");
    assert!(message.contains("Check the Search API key"), "{message}");
    assert!(
        !data.to_string().contains("BSA-wrong"),
        "the key is echoed: {data}"
    );
}

#[test]
fn search_off_or_unusable_settings_are_explained_without_searching() {
    // NoSearch fails the test if a client is made.
    let (service, _) = harness(Rc::new(NoSearch));
    let off = test_search(&service, json!({}));
    assert_eq!(
        (off["ok"].clone(), off["error"]["kind"].clone()),
        (json!(false), json!("config"))
    );
    assert!(
        off["error"]["message"]
            .as_str()
            .expect("m")
            .contains("Web search is off"),
        "{off}"
    );
    let searxng = test_search(&service, json!({"search_provider": "searxng"}));
    let message = searxng["error"]["message"].as_str().expect("m");
    assert!(message.contains("SearXNG needs the address"), "{message}");
    let tavily = test_search(&service, json!({"search_provider": "tavily"}));
    assert!(tavily["error"]["message"]
        .as_str()
        .expect("m")
        .contains("Search API key"));
    let bad_url = test_search(
        &service,
        json!({"search_provider": "wikipedia", "search_base_url": "en.wikipedia.org"}),
    );
    let message = bad_url["error"]["message"].as_str().expect("m");
    assert!(message.contains("must start with http"), "{message}");
    // The model settings do not matter to a search check.
    let (service, _) = harness(Rc::new(NoSearch));
    let other = call(
        &service,
        json!({"type": "test_search", "settings": {"token_budget": 5}}),
    );
    assert!(other["error"]["message"]
        .as_str()
        .expect("m")
        .contains("Web search is off"));
}

#[test]
fn saving_keeps_the_search_key_in_the_settings_store_and_checks_it() {
    let (service, settings) = harness(Rc::new(NoSearch));
    let saved = call(
        &service,
        json!({"type": "save_settings", "settings": {
            "search_provider": "tavily", "search_api_key": " tvly-secret "
        }}),
    );
    assert_eq!(saved["search_provider"], "tavily");
    assert_eq!(saved["search_api_key"], "tvly-secret");
    let stored = futures::executor::block_on(settings.get(SETTINGS_KEY))
        .expect("read")
        .expect("saved");
    assert!(stored.contains("tvly-secret"));
    let (ok, error) = {
        let (reply, _) = futures::executor::block_on(service.handle_json(json!({
            "type": "save_settings", "settings": {"search_provider": "brave"}
        })));
        (reply["ok"].clone(), reply["error"].clone())
    };
    assert_eq!(ok, false);
    assert_eq!(error["kind"], "invalid_settings");
    assert!(error["message"]
        .as_str()
        .expect("m")
        .contains("Brave Search needs an API key"));
}

/// An HTTP peer that answers from a script (a status and body, or a transport failure) and
/// records the URLs asked for; it fails the test on a request it has no answer for.
#[derive(Default)]
struct Peer {
    answers: RefCell<VecDeque<Result<(u16, String), String>>>,
    urls: RefCell<Vec<String>>,
}

struct Body(Option<Vec<u8>>);

impl HttpBody for Body {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        future::ready(Ok(self.0.take())).boxed_local()
    }
}

impl HttpClient for Peer {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        self.urls.borrow_mut().push(request.url);
        let answer = self
            .answers
            .borrow_mut()
            .pop_front()
            .expect("Peer: unexpected request");
        future::ready(match answer {
            Ok((status, body)) => Ok(HttpResponse {
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body: Box::new(Body(Some(body.into_bytes()))),
            }),
            Err(message) => Err(HttpError {
                message,
                ..Default::default()
            }),
        })
        .boxed_local()
    }
}

fn over_http(answers: Vec<Result<(u16, String), String>>) -> (Rc<Service>, Rc<Peer>) {
    let peer = Rc::new(Peer {
        answers: RefCell::new(answers.into()),
        urls: RefCell::default(),
    });
    let factory = HttpSearchFactory::new(peer.clone(), ManualClock::new(0));
    (harness(Rc::new(factory)).0, peer)
}

#[test]
fn wikipedia_at_a_given_base_url_is_asked_through_the_action_api() {
    let hits = json!({"batchcomplete": true, "query": {"search": [
        {"ns": 0, "title": "Web browser", "pageid": 1, "snippet": "A <span class=\"searchmatch\">web</span> browser"},
        {"ns": 0, "title": "Browser wars", "pageid": 2, "snippet": "Competition"}
    ]}});
    let extracts = json!({"batchcomplete": true, "query": {"pages": [
        {"pageid": 1, "ns": 0, "title": "Web browser", "extract": "A web browser is an application."}
    ]}});
    let (service, peer) = over_http(vec![
        Ok((200, hits.to_string())),
        Ok((200, extracts.to_string())),
    ]);
    let data = test_search(
        &service,
        json!({"search_provider": "wikipedia", "search_base_url": "http://127.0.0.1:4321"}),
    );
    assert_eq!(data["ok"], true, "{data}");
    assert_eq!(data["count"], 2);
    let urls = peer.urls.borrow();
    assert!(
        urls[0].starts_with(
            "http://127.0.0.1:4321/w/api.php?action=query&list=search&srsearch=web%20browser"
        ),
        "{}",
        urls[0]
    );
    assert!(urls[0].contains("origin=*"), "{}", urls[0]);
    assert!(urls[1].contains("prop=extracts"), "{}", urls[1]);
}

#[test]
fn a_refused_connection_is_diagnosed() {
    let (service, _) = over_http(vec![Err("Failed to fetch".into())]);
    let data = test_search(
        &service,
        json!({"search_provider": "wikipedia", "search_base_url": "http://127.0.0.1:9"}),
    );
    assert_eq!(data["ok"], false, "{data}");
    assert_eq!(data["error"]["kind"], "network");
    assert_eq!(data["error"]["detail"], "Failed to fetch");
    let message = data["error"]["message"].as_str().expect("m");
    assert!(
        message.starts_with("Could not reach Wikipedia (Failed to fetch)."),
        "{message}"
    );
    assert!(message.contains("Search base URL"), "{message}");
}

/// The Wikipedia site a factory's client asks, for a query in `language` (`None`: none).
fn wikipedia_host(factory: HttpSearchFactory, peer: &Peer, language: Option<&str>) -> String {
    use knowledgelens::ports::SearchQuery;
    use knowledgelens::search::SearchConfig;

    let client = factory.client(SearchConfig {
        provider: SearchProvider::Wikipedia,
        base_url: String::new(),
        api_key: String::new(),
    });
    let query = SearchQuery {
        text: "tides".into(),
        limit: 5,
        language: language.map(str::to_string),
    };
    let empty = json!({"batchcomplete": true, "query": {"search": []}}).to_string();
    peer.answers.borrow_mut().push_back(Ok((200, empty)));
    let results = futures::executor::block_on(client.search(&query)).expect("results");
    assert!(results.is_empty());
    let url = peer.urls.borrow().last().cloned().expect("a request");
    url.split("/w/api.php").next().expect("host").to_string()
}

#[test]
fn wikipedia_without_a_base_url_uses_the_browsers_language_unless_the_query_has_one() {
    let peer = Rc::new(Peer::default());
    let factory = || HttpSearchFactory::new(peer.clone(), ManualClock::new(0));
    let german = || factory().with_default_language(Some("de-DE".into()));
    assert_eq!(
        wikipedia_host(german(), &peer, None),
        "https://de.wikipedia.org"
    );
    assert_eq!(
        wikipedia_host(german(), &peer, Some("fr")),
        "https://fr.wikipedia.org"
    );
    assert_eq!(
        wikipedia_host(factory(), &peer, None),
        "https://en.wikipedia.org"
    );
    let blank = factory().with_default_language(Some("  ".into()));
    assert_eq!(
        wikipedia_host(blank, &peer, None),
        "https://en.wikipedia.org"
    );
}
