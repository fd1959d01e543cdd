//! Keys that never leak, through the service and the HTTP model client with a scripted
//! server: a key is not sent over plain http:// to another computer (the run, the
//! connection test and Save refuse, saying why), a redirect on a keyed request ends the call
//! with an error that names it, the key never shows in what the server said (error
//! messages, answers, the trajectory, the export), and keys are saved only while the store
//! is out of content scripts' reach. OpenAI's wire format:
//! https://platform.openai.com/docs/api-reference/chat/create (error bodies:
//! https://platform.openai.com/docs/guides/error-codes).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::llm::diagnosis::keys::KEY_MARK;
use knowledgelens::llm::transport::HttpLlm;
use knowledgelens::llm::LlmError;
use knowledgelens::ports::{
    HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse, LlmClient, StateStore,
};
use knowledgelens::service::{ModelFactory, Ports, Service};
use knowledgelens::settings::Settings;
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, StaticPages};
use serde_json::{json, Value};

const KEY: &str = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm";

struct Body(Option<Vec<u8>>);

impl HttpBody for Body {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        future::ready(Ok(self.0.take())).boxed_local()
    }
}

/// Answers from a script, in order, and records every request; fails the test on a request
/// it has no answer for.
#[derive(Default)]
struct Server {
    script: RefCell<VecDeque<Result<(u16, String), HttpError>>>,
    seen: RefCell<Vec<HttpRequest>>,
}

impl Server {
    fn answering(script: Vec<Result<(u16, String), HttpError>>) -> Rc<Self> {
        Rc::new(Self {
            script: RefCell::new(script.into()),
            seen: RefCell::default(),
        })
    }
}

impl HttpClient for Server {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        self.seen.borrow_mut().push(request);
        let next = self
            .script
            .borrow_mut()
            .pop_front()
            .expect("unexpected HTTP request");
        future::ready(next.map(|(status, body)| HttpResponse {
            status,
            // A body of SSE events is a stream; anything else one JSON document.
            headers: vec![(
                "content-type".into(),
                if body.starts_with("data:") {
                    "text/event-stream".into()
                } else {
                    "application/json".into()
                },
            )],
            body: Box::new(Body(Some(body.into_bytes()))),
        }))
        .boxed_local()
    }
}

/// Real HTTP model clients over the scripted server.
struct HttpModels(Rc<Server>);

impl ModelFactory for HttpModels {
    fn client(&self, settings: &Settings) -> Rc<dyn LlmClient> {
        let wire = knowledgelens::llm::wire_for(settings.provider_config()).expect("http");
        Rc::new(HttpLlm::new(
            self.0.clone(),
            Rc::new(ManualClock::new(0)),
            wire,
        ))
    }
    fn models<'a>(&'a self, _s: &'a Settings) -> LocalBoxFuture<'a, Result<Vec<String>, LlmError>> {
        future::ready(Ok(Vec::new())).boxed_local()
    }
    fn host_permission<'a>(&'a self, _origin: &'a str) -> LocalBoxFuture<'a, Option<bool>> {
        future::ready(Some(true)).boxed_local()
    }
    fn extension_origin(&self) -> String {
        "chrome-extension://abcdefghijklmnop".into()
    }
}

struct Harness {
    service: Rc<Service>,
    server: Rc<Server>,
    sessions: Rc<MemoryStore>,
    settings: Rc<MemoryStore>,
    sink: Rc<RecordingSink>,
}

fn harness(script: Vec<Result<(u16, String), HttpError>>) -> Harness {
    let server = Server::answering(script);
    let sessions = Rc::new(MemoryStore::new());
    let settings = Rc::new(MemoryStore::new());
    let sink = Rc::new(RecordingSink::default());
    let ports = Ports {
        capture: Rc::new(knowledgelens::ports::NoCapture),
        sessions: sessions.clone(),
        settings: settings.clone(),
        clock: ManualClock::new(5_000),
        events: sink.clone(),
        pages: Rc::new(StaticPages(BTreeMap::new())),
        models: Rc::new(HttpModels(server.clone())),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    Harness {
        service: Service::new(ports),
        server,
        sessions,
        settings,
        sink,
    }
}

fn call(h: &Harness, request: Value) -> Value {
    let (reply, run) = futures::executor::block_on(h.service.handle_json(request));
    if let Some(run) = run {
        futures::executor::block_on(run);
    }
    reply
}

fn openai(base_url: &str) -> Value {
    json!({"provider": "openai_compatible", "base_url": base_url, "model": "gpt-4o-mini", "api_key": KEY})
}

/// Saves `settings` straight into the store (as an older version might have), bypassing
/// `save_settings`'s checks.
fn store_settings(h: &Harness, settings: Value) {
    let settings: Settings = serde_json::from_value(settings).expect("settings");
    futures::executor::block_on(settings.save(h.settings.as_ref())).expect("save");
}

/// Everything the key could have reached: the session store, every event, the export.
fn assert_key_nowhere(h: &Harness, export: &Value) {
    let export = export.to_string();
    assert!(!export.contains(KEY), "export: {export}");
    for value in h.sessions.data.borrow().values() {
        assert!(!value.contains(KEY), "stored: {value}");
        assert!(!value.contains(&KEY[..14]), "stored: {value}");
    }
    for event in h.sink.events.borrow().iter() {
        let text = serde_json::to_string(event).expect("event");
        assert!(!text.contains(KEY), "event: {text}");
    }
}

fn openai_reply(content: &str) -> String {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content}}],
    })
    .to_string()
}

#[test]
fn a_key_is_not_sent_over_plain_http_to_another_computer() {
    let h = harness(vec![]);
    // Save refuses, saying why and what to do.
    let saved = call(
        &h,
        json!({"id": 1, "type": "save_settings", "settings": openai("http://192.168.1.20:8000/v1")}),
    );
    assert_eq!(saved["ok"], false, "{saved}");
    assert_eq!(saved["error"]["kind"], "invalid_settings");
    let message = saved["error"]["message"].as_str().expect("message");
    for needle in [
        "http://192.168.1.20:8000",
        "plain http://",
        "https://",
        "remove the API key",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert!(h.settings.data.borrow().is_empty());
    // The connection test does not send it either, and says what to change.
    let tested = call(
        &h,
        json!({"id": 2, "type": "test_connection", "settings": openai("http://192.168.1.20:8000/v1")}),
    );
    let diagnosis = &tested["data"]["diagnosis"];
    assert_eq!(diagnosis["problem"], "config", "{tested}");
    assert!(diagnosis["summary"]
        .as_str()
        .expect("s")
        .contains("plain http://"));
    assert!(diagnosis["steps"][0]
        .as_str()
        .expect("step")
        .contains("https://192.168.1.20:8000/v1"));
    // Settings saved before the check (or by hand) do not send it from a run.
    store_settings(&h, openai("http://example.com/v1"));
    call(
        &h,
        json!({"id": 3, "type": "ask", "session": "popup", "question": "q"}),
    );
    let snap = call(&h, json!({"id": 4, "type": "snapshot", "session": "popup"}));
    assert_eq!(snap["data"]["status"], "failed", "{snap}");
    assert!(snap["data"]["error"]["message"]
        .as_str()
        .expect("m")
        .contains("will not send the API key to http://example.com"));
    assert!(h.server.seen.borrow().is_empty(), "nothing was sent");
}

#[test]
fn loopback_and_https_servers_get_the_key() {
    for base in [
        "http://localhost:8080/v1",
        "http://127.0.0.1:8080/v1",
        "http://[::1]:8080/v1",
        "https://api.example.com/v1",
    ] {
        let h = harness(vec![Ok((200, openai_reply("OK")))]);
        let saved = call(
            &h,
            json!({"id": 1, "type": "save_settings", "settings": openai(base)}),
        );
        assert_eq!(saved["ok"], true, "{base}: {saved}");
        let tested = call(
            &h,
            json!({"id": 2, "type": "test_connection", "settings": openai(base)}),
        );
        assert_eq!(tested["data"]["ok"], true, "{base}: {tested}");
        let sent = &h.server.seen.borrow()[0];
        assert!(sent.carries_key());
        assert!(sent
            .headers
            .contains(&("authorization".into(), format!("Bearer {KEY}"))));
    }
}

#[test]
fn a_search_key_is_not_sent_over_plain_http_to_another_computer() {
    let h = harness(vec![]);
    let mut settings = openai("https://api.example.com/v1");
    settings["search_provider"] = json!("brave");
    settings["search_base_url"] = json!("http://search.example.com");
    settings["search_api_key"] = json!("BSA-secret-key");
    let saved = call(
        &h,
        json!({"id": 1, "type": "save_settings", "settings": settings}),
    );
    assert_eq!(saved["ok"], false, "{saved}");
    let message = saved["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("will not send the Search API key to http://search.example.com"),
        "{message}"
    );
}

#[test]
fn a_redirect_on_a_keyed_request_ends_the_run_with_an_error_that_names_it() {
    let h = harness(vec![Err(HttpError {
        message: "the server answered with a redirect, which was not followed".into(),
        redirected: true,
    })]);
    store_settings(&h, openai("https://api.example.com/v1"));
    call(
        &h,
        json!({"id": 1, "type": "ask", "session": "popup", "question": "q"}),
    );
    let snap = call(&h, json!({"id": 2, "type": "snapshot", "session": "popup"}));
    assert_eq!(snap["data"]["status"], "failed", "{snap}");
    let message = snap["data"]["error"]["message"].as_str().expect("m");
    assert!(message.contains("answered with a redirect"), "{message}");
    assert!(message.contains("Set the Base URL"), "{message}");
    // Not retried: the server would redirect again.
    assert_eq!(h.server.seen.borrow().len(), 1);
}

#[test]
fn keyed_requests_are_the_ones_that_refuse_redirects() {
    let get = |headers: Vec<(&str, &str)>| {
        HttpRequest::get(
            "https://x/".into(),
            headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    };
    for name in [
        "Authorization",
        "x-api-key",
        "X-Goog-Api-Key",
        "x-subscription-token",
    ] {
        assert!(get(vec![(name, "k")]).carries_key(), "{name}");
    }
    assert!(!get(vec![("accept", "application/json")]).carries_key());
    // Every vendor's chat request with a key set carries it in one of those headers.
    for provider in ["openai_compatible", "ollama", "anthropic", "gemini"] {
        let settings: Settings = serde_json::from_value(json!({
            "provider": provider, "base_url": "https://api.example.com/v1", "model": "m", "api_key": KEY
        }))
        .expect("settings");
        let wire = knowledgelens::llm::wire_for(settings.provider_config()).expect("http");
        let request = wire.build_request(&knowledgelens::llm::ChatRequest::default());
        assert!(request.carries_key(), "{provider}");
        assert!(wire.models_request().carries_key(), "{provider}");
    }
}

#[test]
fn a_server_echoing_the_key_in_an_error_never_shows_it() {
    let body = json!({"error": {
        "message": format!("Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys."),
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
    .to_string();
    let h = harness(vec![Ok((401, body.clone())), Ok((401, body))]);
    store_settings(&h, openai("https://api.example.com/v1"));
    call(
        &h,
        json!({"id": 1, "type": "ask", "session": "popup", "question": "q"}),
    );
    let snap = call(&h, json!({"id": 2, "type": "snapshot", "session": "popup"}));
    assert_eq!(snap["data"]["status"], "failed", "{snap}");
    let message = snap["data"]["error"]["message"].as_str().expect("m");
    assert!(
        message.contains(&format!("provided: {KEY_MARK}.")),
        "{message}"
    );
    let export = call(&h, json!({"id": 3, "type": "export", "session": "popup"}));
    assert_eq!(export["ok"], true, "{export}");
    assert_key_nowhere(&h, &export);
    // Test connection shows the server's words without the key too.
    let tested = call(
        &h,
        json!({"id": 4, "type": "test_connection", "settings": openai("https://api.example.com/v1")}),
    );
    let text = tested.to_string();
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains(KEY_MARK), "{text}");
}

#[test]
fn a_server_echoing_the_key_in_its_answer_never_shows_it() {
    let h = harness(vec![Ok((
        200,
        openai_reply(&format!(
            "Your key is {KEY}, and half of it is {}.",
            &KEY[..16]
        )),
    ))]);
    store_settings(&h, openai("https://api.example.com/v1"));
    call(
        &h,
        json!({"id": 1, "type": "ask", "session": "popup", "question": "q"}),
    );
    let snap = call(&h, json!({"id": 2, "type": "snapshot", "session": "popup"}));
    assert_eq!(snap["data"]["status"], "completed", "{snap}");
    assert_eq!(
        snap["data"]["answer"],
        format!("Your key is {KEY_MARK}, and half of it is {KEY_MARK}.")
    );
    let export = call(&h, json!({"id": 3, "type": "export", "session": "popup"}));
    assert_key_nowhere(&h, &export);
}

#[test]
fn an_unprotected_store_saves_everything_but_the_keys() {
    let h = harness(vec![]);
    h.service.set_keys_protected(false);
    let mut settings = openai("https://api.example.com/v1");
    settings["token_budget"] = json!(12_345);
    settings["search_provider"] = json!("wikipedia");
    settings["search_api_key"] = json!("BSA-secret-key");
    let saved = call(
        &h,
        json!({"id": 1, "type": "save_settings", "settings": settings}),
    );
    assert_eq!(saved["ok"], true, "{saved}");
    let notice = saved["data"]["notice"].as_str().expect("notice");
    assert!(notice.contains("except the API keys"), "{notice}");
    assert!(notice.contains("Update Chrome"), "{notice}");
    assert_eq!(saved["data"]["api_key"], "");
    let stored = futures::executor::block_on(h.settings.get("settings"))
        .expect("get")
        .expect("saved");
    assert!(!stored.contains(KEY), "{stored}");
    assert!(!stored.contains("BSA-secret-key"), "{stored}");
    let got = call(&h, json!({"id": 2, "type": "get_settings"}));
    assert_eq!(got["data"]["token_budget"], 12_345);
    assert_eq!(got["data"]["base_url"], "https://api.example.com/v1");
    assert_eq!(got["data"]["model"], "gpt-4o-mini");
    // Settings without a key save with no notice.
    let keyless =
        json!({"provider": "ollama", "base_url": "http://localhost:11434", "model": "llama3.2"});
    let saved = call(
        &h,
        json!({"id": 3, "type": "save_settings", "settings": keyless}),
    );
    assert_eq!(saved["ok"], true, "{saved}");
    assert!(saved["data"].get("notice").is_none(), "{saved}");
}

#[test]
fn a_protected_store_saves_the_key() {
    let h = harness(vec![]);
    let saved = call(
        &h,
        json!({"id": 1, "type": "save_settings", "settings": openai("https://api.example.com/v1")}),
    );
    assert_eq!(saved["ok"], true, "{saved}");
    assert!(saved["data"].get("notice").is_none(), "{saved}");
    let got = call(&h, json!({"id": 2, "type": "get_settings"}));
    assert_eq!(got["data"]["api_key"], KEY);
}

#[test]
fn a_key_streamed_in_pieces_never_shows_in_the_draft() {
    // OpenAI's streamed chunks (https://platform.openai.com/docs/api-reference/chat-streaming):
    // the key cut into three deltas, each shorter than the pieces the scrub looks for.
    let deltas = ["Your key is ", &KEY[..11], &KEY[11..22], &KEY[22..], "."];
    let mut body: String = deltas
        .iter()
        .map(|d| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": d}}]})
            )
        })
        .collect();
    body.push_str("data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\ndata: [DONE]\n\n");
    let h = harness(vec![Ok((200, body))]);
    store_settings(&h, openai("https://api.example.com/v1"));
    call(
        &h,
        json!({"id": 1, "type": "ask", "session": "popup", "question": "q"}),
    );
    let snap = call(&h, json!({"id": 2, "type": "snapshot", "session": "popup"}));
    assert_eq!(
        snap["data"]["answer"],
        format!("Your key is {KEY_MARK}."),
        "{snap}"
    );
    let draft: String = h
        .sink
        .events
        .borrow()
        .iter()
        .map(|e| serde_json::to_value(e).expect("event"))
        .filter(|e| e["event"]["type"] == "answer_delta")
        .map(|e| e["event"]["text"].as_str().expect("text").to_string())
        .collect();
    assert_eq!(draft, format!("Your key is {KEY_MARK}."));
    let export = call(&h, json!({"id": 3, "type": "export", "session": "popup"}));
    assert_key_nowhere(&h, &export);
}

/// One row of `tests/fixtures/urls.json`: a tricky base URL, its host as the WHATWG URL
/// standard reads it, and what happens to a key for it.
struct UrlRow {
    url: String,
    host: Option<String>,
    key: String,
}

fn url_rows() -> Vec<UrlRow> {
    let table: Value =
        serde_json::from_str(include_str!("../fixtures/urls.json")).expect("urls.json");
    let rows = table["rows"].as_array().expect("rows");
    rows.iter()
        .map(|row| UrlRow {
            url: row["url"].as_str().expect("url").into(),
            host: row["host"].as_str().map(String::from),
            key: row["key"].as_str().expect("key").into(),
        })
        .collect()
}

#[test]
fn tricky_addresses_get_the_key_only_where_the_browser_connects_to_this_computer() {
    let rows = url_rows();
    assert!(rows.len() >= 30, "the table lost its rows");
    for row in rows {
        let url = row.url.as_str();
        let parsed = knowledgelens::url::parse(url.trim());
        assert_eq!(
            parsed.as_ref().map(|u| u.host.as_str()),
            row.host.as_deref(),
            "{url}"
        );
        let h = harness(vec![
            Ok((200, openai_reply("OK"))),
            Ok((200, openai_reply("OK"))),
        ]);
        let saved = call(
            &h,
            json!({"id": 1, "type": "save_settings", "settings": openai(url)}),
        );
        let tested = call(
            &h,
            json!({"id": 2, "type": "test_connection", "settings": openai(url)}),
        );
        let message = saved["error"]["message"].as_str().unwrap_or_default();
        match row.key.as_str() {
            "allowed" => {
                assert_eq!(saved["ok"], true, "{url}: {saved}");
                assert_eq!(tested["data"]["ok"], true, "{url}: {tested}");
                let seen = h.server.seen.borrow();
                let sent = knowledgelens::url::parse(&seen[0].url).expect("sent URL");
                assert_eq!(Some(sent.host), row.host, "{url}: sent to {}", seen[0].url);
                assert!(seen[0].carries_key(), "{url}");
            }
            "refused" => {
                assert!(
                    message.contains("will not send the API key"),
                    "{url}: {saved}"
                );
                assert_eq!(
                    tested["data"]["diagnosis"]["problem"], "config",
                    "{url}: {tested}"
                );
                store_settings(&h, openai(url));
                call(
                    &h,
                    json!({"id": 3, "type": "ask", "session": "popup", "question": "q"}),
                );
                let snap = call(&h, json!({"id": 4, "type": "snapshot", "session": "popup"}));
                assert_eq!(snap["data"]["status"], "failed", "{url}: {snap}");
                assert!(
                    h.server.seen.borrow().is_empty(),
                    "{url}: a request was sent"
                );
            }
            _ => {
                assert_eq!(saved["error"]["kind"], "invalid_settings", "{url}: {saved}");
                assert!(!message.contains("will not send"), "{url}: {message}");
                assert!(
                    h.server.seen.borrow().is_empty(),
                    "{url}: a request was sent"
                );
            }
        }
        assert!(
            h.settings.data.borrow().is_empty() || row.key != "invalid",
            "{url}"
        );
    }
}
