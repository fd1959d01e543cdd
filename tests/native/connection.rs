//! "Test connection", the model list and the first-run card through the service: a tiny
//! real call reports latency and reply, or the doctor's diagnosis with the facts it needs
//! (host permission for a network failure, the server's model list for a 404).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::llm::diagnosis::doctor;
use knowledgelens::llm::{LlmError, LlmErrorKind, ProviderConfig};
use knowledgelens::ports::LlmClient;
use knowledgelens::service::{ModelFactory, Ports, Service};
use knowledgelens::settings::Settings;
use knowledgelens::testing::{
    ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, StaticPages,
};
use serde_json::{json, Value};

struct Models {
    llm: Rc<ScriptedLlm>,
    listed: Result<Vec<String>, LlmError>,
    permission: Option<bool>,
    asked_permission: RefCell<Vec<String>>,
    listed_calls: RefCell<u32>,
}

impl ModelFactory for Models {
    fn client(&self, _settings: &Settings) -> Rc<dyn LlmClient> {
        self.llm.clone()
    }
    fn models<'a>(&'a self, _s: &'a Settings) -> LocalBoxFuture<'a, Result<Vec<String>, LlmError>> {
        *self.listed_calls.borrow_mut() += 1;
        future::ready(self.listed.clone()).boxed_local()
    }
    fn host_permission<'a>(&'a self, origin: &'a str) -> LocalBoxFuture<'a, Option<bool>> {
        self.asked_permission.borrow_mut().push(origin.to_string());
        future::ready(self.permission).boxed_local()
    }
    fn extension_origin(&self) -> String {
        "chrome-extension://abcdefghijklmnop".into()
    }
}

fn harness(
    replies: Vec<Reply>,
    listed: Result<Vec<String>, LlmError>,
    permission: Option<bool>,
) -> (Rc<Service>, Rc<Models>, Rc<MemoryStore>) {
    let models = Rc::new(Models {
        llm: Rc::new(ScriptedLlm::new(replies)),
        listed,
        permission,
        asked_permission: RefCell::default(),
        listed_calls: RefCell::new(0),
    });
    let settings = Rc::new(MemoryStore::new());
    let ports = Ports {
        capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
        sessions: Rc::new(MemoryStore::new()),
        settings: settings.clone(),
        clock: ManualClock::new(1_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(BTreeMap::new())),
        models: models.clone(),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    (Service::new(ports), models, settings)
}

fn call(service: &Rc<Service>, request: Value) -> Value {
    let (reply, run) = futures::executor::block_on(service.handle_json(request));
    assert!(run.is_none(), "no run is started by {reply}");
    reply
}

fn ollama() -> Value {
    json!({"provider": "ollama", "base_url": "http://localhost:11434", "model": "llama3"})
}

fn config_of(settings: &Value) -> ProviderConfig {
    serde_json::from_value::<Settings>(settings.clone())
        .expect("settings")
        .provider_config()
}

#[test]
fn a_working_connection_reports_latency_reply_and_capabilities() {
    let (service, models, _) = harness(vec![Reply::text("OK")], Ok(vec![]), Some(true));
    let reply = call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": ollama()}),
    );
    assert_eq!(reply["ok"], true, "{reply}");
    let data = &reply["data"];
    assert_eq!(data["ok"], true, "{data}");
    assert_eq!(data["reply"], "OK");
    assert_eq!(data["provider"], "ollama");
    assert_eq!(data["capabilities"]["native_tools"], true);
    assert_eq!(data["capabilities"]["context_window"], 8192);
    assert!(data["latency_ms"].is_u64());
    let sent = &models.llm.requests.borrow()[0];
    assert_eq!(sent.max_tokens, Some(16));
    assert!(!sent.stream);
    assert!(sent.tools.is_empty());
}

#[test]
fn a_404_is_diagnosed_with_the_nearest_models_the_server_lists() {
    let settings = ollama();
    let err = doctor::http_error(
        &config_of(&settings),
        "http://localhost:11434/api/chat",
        404,
        LlmErrorKind::NotFound,
        Some("model \"llama3\" not found".into()),
    );
    let listed = Ok(vec![
        "llama3.2:latest".to_string(),
        "qwen2.5:7b".to_string(),
    ]);
    let (service, models, _) = harness(vec![Reply::Fail(err)], listed, Some(true));
    let reply = call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": settings}),
    );
    let data = &reply["data"];
    assert_eq!(data["ok"], false, "{data}");
    assert_eq!(data["diagnosis"]["problem"], "not_found");
    assert_eq!(data["diagnosis"]["suggestions"], json!(["llama3.2:latest"]));
    assert_eq!(*models.listed_calls.borrow(), 1);
    // A 404 does not ask about host permissions.
    assert!(models.asked_permission.borrow().is_empty());
}

#[test]
fn a_network_failure_asks_whether_the_origin_is_permitted() {
    let settings = json!({"provider": "openai_compatible", "base_url": "https://llm.example.com/v1", "model": "m"});
    let err = doctor::network_error(&config_of(&settings), "Failed to fetch");
    let (service, models, _) = harness(vec![Reply::Fail(err.clone())], Ok(vec![]), Some(false));
    let data = &call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": settings.clone()}),
    )["data"];
    assert_eq!(data["diagnosis"]["problem"], "host_permission", "{data}");
    assert_eq!(
        data["diagnosis"]["permission_origin"],
        "https://llm.example.com/*"
    );
    assert_eq!(
        models.asked_permission.borrow().as_slice(),
        ["https://llm.example.com"]
    );
    assert_eq!(*models.listed_calls.borrow(), 0);

    let (service, _, _) = harness(vec![Reply::Fail(err)], Ok(vec![]), Some(true));
    let data = &call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": settings}),
    )["data"];
    assert_eq!(data["diagnosis"]["problem"], "unreachable", "{data}");
    assert!(data["diagnosis"]["steps"][0]
        .as_str()
        .expect("step")
        .contains("port 443"));
}

#[test]
fn ollamas_403_names_this_extensions_origin() {
    let settings = ollama();
    let err = doctor::http_error(&config_of(&settings), "x", 403, LlmErrorKind::Auth, None);
    let (service, _, _) = harness(vec![Reply::Fail(err)], Ok(vec![]), Some(true));
    let data = &call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": settings}),
    )["data"];
    assert_eq!(data["diagnosis"]["problem"], "ollama_origin", "{data}");
    let steps = data["diagnosis"]["steps"].to_string();
    assert!(
        steps.contains("OLLAMA_ORIGINS=chrome-extension://abcdefghijklmnop"),
        "{steps}"
    );
}

#[test]
fn invalid_settings_are_refused_before_any_call() {
    let (service, models, _) = harness(vec![], Ok(vec![]), None);
    let reply = call(
        &service,
        json!({"id": 1, "type": "test_connection", "settings": {"provider": "gemini", "base_url": "nope"}}),
    );
    assert_eq!(reply["ok"], false);
    assert_eq!(reply["error"]["kind"], "invalid_settings");
    assert_eq!(models.llm.calls(), 0);
}

#[test]
fn the_model_list_comes_back_or_is_diagnosed() {
    let (service, _, _) = harness(vec![], Ok(vec!["a".into(), "b".into()]), None);
    let data = &call(
        &service,
        json!({"id": 1, "type": "list_models", "settings": ollama()}),
    )["data"];
    assert_eq!(data["models"], json!(["a", "b"]));
    assert_eq!(data["listed"], true);
    let builtin = json!({"provider": "chrome_builtin"});
    let data = &call(
        &service,
        json!({"id": 2, "type": "list_models", "settings": builtin}),
    )["data"];
    assert_eq!(data["listed"], false);
    let err = doctor::http_error(
        &config_of(&ollama()),
        "x",
        401,
        LlmErrorKind::Auth,
        Some("no".into()),
    );
    let (service, _, _) = harness(vec![], Err(err), None);
    let data = &call(
        &service,
        json!({"id": 3, "type": "list_models", "settings": ollama()}),
    )["data"];
    assert_eq!(data["listed"], false);
    assert_eq!(data["diagnosis"]["problem"], "auth");
}

#[test]
fn the_setup_card_shows_until_settings_are_saved() {
    let (service, _, settings) = harness(vec![], Ok(vec![]), None);
    let snap = call(
        &service,
        json!({"id": 1, "type": "snapshot", "session": "popup"}),
    );
    assert_eq!(snap["data"]["setup_needed"], true, "{snap}");
    let got = call(&service, json!({"id": 2, "type": "get_settings"}));
    assert_eq!(got["data"]["configured"], false);
    let saved = call(
        &service,
        json!({"id": 3, "type": "save_settings", "settings": ollama()}),
    );
    assert_eq!(saved["ok"], true, "{saved}");
    let snap = call(
        &service,
        json!({"id": 4, "type": "snapshot", "session": "popup"}),
    );
    assert_eq!(snap["data"]["setup_needed"], false);
    assert_eq!(
        call(&service, json!({"id": 5, "type": "get_settings"}))["data"]["configured"],
        true
    );
    // A record from a newer version is kept, not used, and the user is told.
    settings
        .data
        .borrow_mut()
        .insert("settings".into(), r#"{"version": 7}"#.into());
    let got = call(&service, json!({"id": 6, "type": "get_settings"}));
    assert!(
        got["data"]["notice"]
            .as_str()
            .expect("notice")
            .contains("newer version"),
        "{got}"
    );
    assert_eq!(settings.data.borrow()["settings"], r#"{"version": 7}"#);
}
