//! Local model servers through the service: the origin rules (which loopback origins the
//! browser lets through without the extension's `Origin`, and when they change: save,
//! Options' checks, worker start, the probe) and the probe that finds the servers already
//! running (`find_local_models`): only loopback, only model lists, 1 s each.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::llm::local::LocalServer;
use knowledgelens::llm::{LlmError, LlmErrorKind, Provider};
use knowledgelens::ports::LlmClient;
use knowledgelens::service::{ModelFactory, OriginRule, Ports, Service};
use knowledgelens::settings::Settings;
use knowledgelens::testing::{
    ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, StaticPages,
};
use serde_json::{json, Value};

/// The rules as the browser holds them: origins by rule id.
type Rules = BTreeMap<u32, Vec<String>>;

/// Servers by Base URL: a model list, or `None` for one that never answers.
struct Servers {
    llm: Rc<ScriptedLlm>,
    lists: BTreeMap<String, Option<Vec<String>>>,
    extra: Vec<LocalServer>,
    /// The rules as the browser holds them, by id.
    rules: RefCell<Rules>,
    /// Every model list asked for, and the rules in force when it was.
    asked: RefCell<Vec<(String, Rules)>>,
}

impl ModelFactory for Servers {
    fn client(&self, _settings: &Settings) -> Rc<dyn LlmClient> {
        self.llm.clone()
    }
    fn models<'a>(&'a self, s: &'a Settings) -> LocalBoxFuture<'a, Result<Vec<String>, LlmError>> {
        self.asked
            .borrow_mut()
            .push((s.base_url.clone(), self.rules.borrow().clone()));
        match self.lists.get(&s.base_url) {
            Some(Some(models)) => future::ready(Ok(models.clone())).boxed_local(),
            Some(None) => future::pending().boxed_local(),
            None => {
                future::ready(Err(LlmError::new(LlmErrorKind::Network, "refused"))).boxed_local()
            }
        }
    }
    fn set_origin_rule<'a>(
        &'a self,
        rule: OriginRule,
        origins: &'a [String],
    ) -> LocalBoxFuture<'a, bool> {
        let mut rules = self.rules.borrow_mut();
        if origins.is_empty() {
            rules.remove(&(rule as u32));
        } else {
            rules.insert(rule as u32, origins.to_vec());
        }
        future::ready(true).boxed_local()
    }
    fn local_servers(&self) -> Vec<LocalServer> {
        let mut servers = knowledgelens::llm::local::usual_servers();
        servers.extend(self.extra.clone());
        servers
    }
}

fn harness(
    lists: &[(&str, Option<&[&str]>)],
    extra: Vec<LocalServer>,
    replies: usize,
) -> (Rc<Service>, Rc<Servers>) {
    let servers = Rc::new(Servers {
        llm: Rc::new(ScriptedLlm::new(vec![Reply::text("OK"); replies])),
        lists: lists
            .iter()
            .map(|(url, models)| {
                (
                    url.to_string(),
                    models.map(|m| m.iter().map(|s| s.to_string()).collect()),
                )
            })
            .collect(),
        extra,
        rules: RefCell::default(),
        asked: RefCell::default(),
    });
    let ports = Ports {
        capture: Rc::new(knowledgelens::ports::NoCapture),
        sessions: Rc::new(MemoryStore::new()),
        settings: Rc::new(MemoryStore::new()),
        clock: ManualClock::new(1_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(BTreeMap::new())),
        models: servers.clone(),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(3)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    (Service::new(ports), servers)
}

fn call(service: &Rc<Service>, request: Value) -> Value {
    let (reply, run) = futures::executor::block_on(service.handle_json(request));
    assert!(run.is_none());
    assert_eq!(reply["ok"], true, "{reply}");
    reply["data"].clone()
}

fn rules(servers: &Servers) -> Rules {
    servers.rules.borrow().clone()
}

#[test]
fn the_rule_follows_the_saved_provider_and_goes_with_it() {
    let (service, servers) = harness(&[], vec![], 2);
    let ollama =
        json!({"provider": "ollama", "base_url": "http://127.0.0.1:11434", "model": "llama3.2"});
    call(
        &service,
        json!({"id": 1, "type": "save_settings", "settings": ollama}),
    );
    assert_eq!(
        rules(&servers),
        BTreeMap::from([(1, vec!["http://127.0.0.1:11434".to_string()])])
    );

    // Options tests another local server: the check rule names it, beside the saved one.
    let lm = json!({"provider": "openai_compatible", "base_url": "http://localhost:1234/v1", "model": "m"});
    call(
        &service,
        json!({"id": 2, "type": "test_connection", "settings": lm}),
    );
    assert_eq!(
        rules(&servers)[&2],
        vec!["http://localhost:1234".to_string()]
    );

    // A hosted provider saved: no rule is left.
    let hosted = json!({"provider": "openai_compatible", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key": "sk-x"});
    call(
        &service,
        json!({"id": 3, "type": "save_settings", "settings": hosted}),
    );
    assert!(rules(&servers).is_empty(), "{:?}", rules(&servers));

    // Testing a server on another computer names nothing.
    let remote =
        json!({"provider": "ollama", "base_url": "http://192.168.1.20:11434", "model": "m"});
    call(
        &service,
        json!({"id": 4, "type": "test_connection", "settings": remote}),
    );
    assert!(rules(&servers).is_empty(), "{:?}", rules(&servers));
}

#[test]
fn a_worker_start_keeps_only_the_saved_providers_rule() {
    let (service, servers) = harness(&[], vec![], 0);
    // Nothing saved: the defaults name no server.
    servers
        .rules
        .borrow_mut()
        .insert(2, vec!["http://localhost:1234".into()]);
    assert!(futures::executor::block_on(service.restore_origin_rules()));
    assert!(rules(&servers).is_empty(), "{:?}", rules(&servers));
    let ollama =
        json!({"provider": "ollama", "base_url": "http://localhost:11434", "model": "llama3.2"});
    call(
        &service,
        json!({"id": 1, "type": "save_settings", "settings": ollama}),
    );
    servers
        .rules
        .borrow_mut()
        .insert(2, vec!["http://localhost:1234".into()]);
    servers
        .rules
        .borrow_mut()
        .insert(3, vec!["http://127.0.0.1:8080".into()]);
    assert!(futures::executor::block_on(service.restore_origin_rules()));
    assert_eq!(
        rules(&servers),
        BTreeMap::from([(1, vec!["http://localhost:11434".to_string()])])
    );
}

#[test]
fn the_probe_lists_what_answers_in_time_and_asks_only_for_model_lists() {
    let scripted = LocalServer {
        name: "Scripted".into(),
        provider: Provider::OpenaiCompatible,
        port: 40123,
    };
    let (service, servers) = harness(
        &[
            ("http://127.0.0.1:11434", Some(&["llama3.2", "qwen2.5:7b"])),
            ("http://127.0.0.1:8080/v1", None), // accepts, never answers
            ("http://127.0.0.1:40123/v1", Some(&["scripted-model"])),
        ],
        vec![scripted],
        0,
    );
    let data = call(&service, json!({"id": 1, "type": "find_local_models"}));
    assert_eq!(
        data["servers"],
        json!([
            {"name": "Ollama", "provider": "ollama", "base_url": "http://127.0.0.1:11434", "models": ["llama3.2", "qwen2.5:7b"]},
            {"name": "Scripted", "provider": "openai_compatible", "base_url": "http://127.0.0.1:40123/v1", "models": ["scripted-model"]},
        ])
    );
    let asked = servers.asked.borrow();
    let urls: Vec<&str> = asked.iter().map(|(url, _)| url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://127.0.0.1:11434",
            "http://127.0.0.1:1234/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:40123/v1"
        ]
    );
    // While it ran, the probe's rule named exactly the probed origins; then it went.
    assert_eq!(
        asked[0].1[&3],
        ["11434", "1234", "8080", "8000", "40123"].map(|p| format!("http://127.0.0.1:{p}"))
    );
    assert!(rules(&servers).is_empty());
}

#[test]
fn the_rule_update_names_one_origin_for_this_extension_only() {
    let update =
        OriginRule::Provider.update(&["http://127.0.0.1:11434".into()], "abcdefghijklmnop");
    assert_eq!(
        update,
        json!({
            "removeRuleIds": [1],
            "addRules": [{
                "id": 1,
                "priority": 1,
                "action": {"type": "modifyHeaders", "requestHeaders": [{"header": "origin", "operation": "remove"}]},
                "condition": {
                    "regexFilter": "^(http://127\\.0\\.0\\.1:11434)/",
                    "initiatorDomains": ["abcdefghijklmnop"],
                    "tabIds": [-1],
                    "resourceTypes": ["xmlhttprequest"],
                },
            }],
        })
    );
    assert_eq!(
        OriginRule::Probe.update(&[], "abc"),
        json!({"removeRuleIds": [3]})
    );
}

/// A server on this computer that lists a flood of names, or absurdly long ones, offers a
/// sane number of buttons of a sane length.
#[test]
fn a_server_listing_too_much_is_cut_to_what_the_buttons_can_show() {
    use knowledgelens::service::local::{MAX_MODELS_PER_SERVER, MAX_MODEL_NAME_CHARS};
    let long = "m".repeat(MAX_MODEL_NAME_CHARS + 1);
    let mut names: Vec<String> = (0..MAX_MODELS_PER_SERVER + 10)
        .map(|i| format!("model-{i}"))
        .collect();
    names.insert(1, long.clone());
    names.insert(2, String::new());
    let listed: Vec<&str> = names.iter().map(String::as_str).collect();
    let (service, _servers) = harness(&[("http://127.0.0.1:11434", Some(&listed))], Vec::new(), 0);
    let data = call(&service, json!({"id": 1, "type": "find_local_models"}));
    let models = data["servers"][0]["models"].as_array().expect("models");
    assert_eq!(models.len(), MAX_MODELS_PER_SERVER);
    assert_eq!(models[0], "model-0");
    assert_eq!(models[1], "model-1");
    assert!(models.iter().all(|m| m != &json!(long) && m != ""));
}
