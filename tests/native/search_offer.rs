//! The popup's offer to search the web: the reply to a question (never an explanation) says
//! to make it while search is off, a model is set up and the offer was never answered;
//! `search_offer` saves the answer ("Turn on" turns Wikipedia on), after which it is not
//! made again, and it never creates or replaces a settings record of its own.

use std::collections::BTreeMap;
use std::rc::Rc;

use knowledgelens::ports::StateStore;
use knowledgelens::service::{ModelFactory, Ports, Service};
use knowledgelens::settings::{Settings, WebSearch, SETTINGS_KEY};
use knowledgelens::testing::{
    ManualClock, MemoryStore, NoSearch, RecordingSink, ScriptedLlm, SeededRandom, StaticPages,
};
use serde_json::{json, Value};

struct NoModels;

impl ModelFactory for NoModels {
    fn client(&self, _settings: &Settings) -> Rc<dyn knowledgelens::ports::LlmClient> {
        Rc::new(ScriptedLlm::new(Vec::new()))
    }
}

fn harness() -> (Rc<Service>, Rc<MemoryStore>) {
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
        search: Rc::new(NoSearch),
    };
    (Service::new(ports), settings)
}

/// The reply envelope of `request` (a run it starts is dropped unrun: no model is called).
fn send(service: &Rc<Service>, request: Value) -> Value {
    futures::executor::block_on(service.handle_json(request)).0
}

fn ok(service: &Rc<Service>, request: Value) -> Value {
    let reply = send(service, request);
    assert_eq!(reply["ok"], true, "{reply}");
    reply["data"].clone()
}

/// Whether the reply to a question in a fresh session `n` offers search.
fn offered_after_asking(service: &Rc<Service>, n: u32) -> bool {
    let view = ok(
        service,
        json!({"type": "ask", "session": format!("tab:{n}"), "question": "Why tides?"}),
    );
    view["search_offer"].as_bool().expect("a bool")
}

fn stored(settings: &MemoryStore) -> Option<Settings> {
    futures::executor::block_on(settings.get(SETTINGS_KEY))
        .expect("read")
        .map(|text| Settings::decode(&text).expect("decodes"))
}

fn set_up_model(service: &Rc<Service>) {
    ok(
        service,
        json!({"type": "save_settings", "settings": {"provider": "ollama", "base_url": "http://localhost:11434"}}),
    );
}

#[test]
fn questions_offer_search_until_not_now_and_explanations_never_do() {
    let (service, settings) = harness();
    // No model set up yet: the setup card comes first.
    assert!(!offered_after_asking(&service, 1));
    set_up_model(&service);
    assert!(offered_after_asking(&service, 2));
    // Until answered, every question offers it again.
    assert!(offered_after_asking(&service, 3));
    let explain = ok(
        &service,
        json!({"type": "explain", "session": "tab:4", "selection": {
            "text": "Spring tides", "full_length": 12, "context": "", "headings": [],
            "title": "Tides", "url": "http://127.0.0.1/tides", "lang": "en"
        }}),
    );
    assert_eq!(explain["search_offer"], false, "{explain}");

    let reply = ok(
        &service,
        json!({"type": "search_offer", "answer": "not_now"}),
    );
    assert_eq!(
        reply,
        json!({"search_provider": "off", "search_offered": true})
    );
    let saved = stored(&settings).expect("saved");
    assert_eq!(
        (saved.search_provider, saved.search_offered),
        (WebSearch::Off, true)
    );
    assert_eq!(saved.base_url, "http://localhost:11434", "the rest is kept");
    assert!(!offered_after_asking(&service, 5));
    // Snapshots never carry the offer.
    let snap = ok(&service, json!({"type": "snapshot", "session": "tab:9"}));
    assert_eq!(snap["search_offer"], false);
}

#[test]
fn turn_on_searches_wikipedia_and_the_offer_is_not_made_again() {
    let (service, settings) = harness();
    set_up_model(&service);
    let reply = ok(
        &service,
        json!({"type": "search_offer", "answer": "turn_on"}),
    );
    assert_eq!(
        reply,
        json!({"search_provider": "wikipedia", "search_offered": true})
    );
    let got = ok(&service, json!({"type": "get_settings"}));
    assert_eq!(got["search_provider"], "wikipedia");
    assert_eq!(got["search_offered"], true);
    let saved = stored(&settings).expect("saved");
    assert!(
        saved.search_config().is_some(),
        "Wikipedia needs nothing more"
    );
    assert!(!offered_after_asking(&service, 1));
    // Turned off in Options later: the offer stays answered.
    let mut off = saved;
    off.search_provider = WebSearch::Off;
    ok(&service, json!({"type": "save_settings", "settings": off}));
    assert!(!offered_after_asking(&service, 2));
}

#[test]
fn choosing_search_in_options_answers_the_offer() {
    let (service, settings) = harness();
    ok(
        &service,
        json!({"type": "save_settings", "settings": {"search_provider": "wikipedia"}}),
    );
    assert!(stored(&settings).expect("saved").search_offered);
}

#[test]
fn the_answer_is_checked_and_no_record_is_made_or_replaced() {
    let (service, settings) = harness();
    // Nothing saved yet: the answer would create a record and hide the setup card.
    let reply = send(
        &service,
        json!({"type": "search_offer", "answer": "turn_on"}),
    );
    assert_eq!(reply["error"]["kind"], "invalid_settings", "{reply}");
    assert_eq!(stored(&settings), None);
    // A record this version cannot use stays as it is.
    futures::executor::block_on(
        settings.set(vec![(SETTINGS_KEY.into(), r#"{"version":99}"#.into())]),
    )
    .expect("set");
    let reply = send(
        &service,
        json!({"type": "search_offer", "answer": "turn_on"}),
    );
    assert_eq!(reply["error"]["kind"], "invalid_settings", "{reply}");
    assert!(
        !offered_after_asking(&service, 1),
        "no offer on such a record"
    );
    let kept = futures::executor::block_on(settings.get(SETTINGS_KEY)).expect("read");
    assert_eq!(kept.as_deref(), Some(r#"{"version":99}"#));
    // Unreadable requests.
    for request in [
        json!({"type": "search_offer"}),
        json!({"type": "search_offer", "answer": "yes"}),
    ] {
        let reply = send(&service, request);
        assert_eq!(reply["error"]["kind"], "bad_request", "{reply}");
        assert!(reply["error"]["message"]
            .as_str()
            .expect("m")
            .contains("not_now"));
    }
}
