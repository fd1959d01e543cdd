//! Explaining a selection through the worker's request handling: the `explain` request is
//! checked and capped (text, context, title, URL without query or fragment, headings,
//! language), empty text is refused, it starts a run like `ask` (page read, busy error,
//! the view marks it `explain` and the finished turn keeps the mark); the in-page panel may
//! only take a snapshot, stop or ask a follow-up about its own tab; the reading level is a
//! validated setting that old records load without.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::block_on;
use knowledgelens::ports::StateStore;
use knowledgelens::protocol::{Command, Request, MAX_SELECTION_CHARS};
use knowledgelens::service::{check_panel_request, Ports, Service};
use knowledgelens::settings::{Settings, SETTINGS_KEY};
use knowledgelens::state::config::ReadingLevel;
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingNotifier, RecordingSink, Reply, ScriptedLlm,
    StaticPages,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::PageInfo;
use serde_json::{json, Value};

struct Harness {
    service: Rc<Service>,
    llm: Rc<ScriptedLlm>,
    notifier: Rc<RecordingNotifier>,
    settings: Rc<MemoryStore>,
}

fn harness(replies: Vec<Reply>) -> Harness {
    let llm = Rc::new(ScriptedLlm::new(replies));
    let mut pages = BTreeMap::new();
    pages.insert(
        12,
        PageInfo {
            title: "Tides".into(),
            url: "http://127.0.0.1/tides".into(),
            text: "The moon pulls the oceans. Spring tides follow full moons.".into(),
            ..Default::default()
        },
    );
    let notifier = Rc::new(RecordingNotifier::new());
    let settings = Rc::new(MemoryStore::new());
    let ports = Ports {
        capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
        sessions: Rc::new(MemoryStore::new()),
        settings: settings.clone(),
        clock: ManualClock::new(5_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(pages)),
        models: Rc::new(FixedModel(llm.clone())),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    Harness {
        service: Service::with_notifier(ports, ToolBox::builtin(), notifier.clone()),
        llm,
        notifier,
        settings,
    }
}

fn call(h: &Harness, request: Value) -> Value {
    let (reply, run) = block_on(h.service.handle_json(request));
    if let Some(run) = run {
        block_on(run);
    }
    reply
}

fn panel(h: &Harness, request: Value, tab: Option<i64>) -> Value {
    let (reply, run) = block_on(h.service.handle_panel(&request.to_string(), tab));
    if let Some(run) = run {
        block_on(run);
    }
    reply.to_value()
}

fn selection(text: &str) -> Value {
    json!({
        "text": text,
        "full_length": text.chars().count(),
        "context": "Spring tides follow full moons and new moons.",
        "headings": ["Tides", "Causes"],
        "title": "Tides",
        "url": "http://127.0.0.1/tides",
        "lang": "en"
    })
}

fn explain_request(text: &str) -> Value {
    json!({"id": 7, "type": "explain", "session": "tab:12", "tab_id": 12, "max_steps": 5,
           "selection": selection(text)})
}

#[test]
fn the_selection_is_checked_and_capped_again() {
    let long = "é".repeat(MAX_SELECTION_CHARS + 10);
    let request = json!({"id": 1, "type": "explain", "session": "tab:12", "tab_id": 12,
    "selection": {
        "text": format!("  {long}  "),
        "full_length": 3,
        "context": "c".repeat(5000),
        "headings": ["a\nb", "2", "3", "4", "5", "6", "7", "x".repeat(400)],
        "title": format!("T\n{}", "t".repeat(400)),
        "url": format!("https://host/path?q=secret#frag{}", "u".repeat(10)),
        "lang": "en-GB"
    }});
    let Command::Explain { selection: s, .. } = Request::parse(&request.to_string())
        .expect("parses")
        .command
    else {
        panic!("not an explain command");
    };
    assert_eq!(s.text.chars().count(), MAX_SELECTION_CHARS);
    assert!(s.truncated);
    assert_eq!(
        s.full_length,
        MAX_SELECTION_CHARS + 14,
        "the untrimmed length sent"
    );
    assert_eq!(s.context.chars().count(), 4000);
    assert_eq!(s.headings, ["a b", "2", "3", "4", "5", "6"]);
    assert!(s.title.starts_with("T t") && s.title.chars().count() == 300);
    assert_eq!(s.url, "https://host/path");
    assert_eq!(s.lang, "en-GB");

    // A selection the script already cut: its full length says so.
    let cut = json!({"id": 1, "type": "explain", "session": "tab:12",
        "selection": {"text": "abc", "full_length": 5210, "url": "http://h/p#x", "lang": "<b>"}});
    let Command::Explain { selection: s, .. } =
        Request::parse(&cut.to_string()).expect("parses").command
    else {
        panic!("not an explain command");
    };
    assert!(s.truncated);
    assert_eq!(s.full_length, 5210);
    assert_eq!(s.url, "http://h/p");
    assert_eq!(s.lang, "", "a language tag that is not one is dropped");

    let whole = json!({"id": 1, "type": "explain", "session": "tab:12",
        "selection": {"text": "abc ", "full_length": 4}});
    let Command::Explain { selection: s, .. } =
        Request::parse(&whole.to_string()).expect("parses").command
    else {
        panic!("not an explain command");
    };
    assert!(!s.truncated, "trailing space is not a cut");
}

#[test]
fn an_empty_selection_is_refused() {
    let h = harness(vec![]);
    for text in ["", "   \n\t"] {
        let reply = call(&h, explain_request(text));
        assert_eq!(reply["ok"], false, "{reply}");
        assert_eq!(reply["error"]["kind"], "bad_request");
        assert_eq!(reply["error"]["message"], "Select some text to explain.");
    }
    let reply = call(
        &h,
        json!({"id": 1, "type": "explain", "session": "tab:12", "tab_id": 12}),
    );
    assert_eq!(reply["error"]["kind"], "bad_request", "{reply}");
    assert_eq!(h.llm.calls(), 0);
}

#[test]
fn explain_starts_a_run_like_ask_and_marks_the_turn() {
    let h = harness(vec![
        Reply::text("Spring tides are the biggest tides."),
        Reply::text("Because the sun and moon line up."),
    ]);
    let (reply, run) = block_on(h.service.handle_json(explain_request("Spring tides")));
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(reply["data"]["status"], "running");
    assert_eq!(reply["data"]["explain"], true);
    assert_eq!(reply["data"]["question"], "Spring tides");
    assert_eq!(
        reply["data"]["page"]["has_text"], true,
        "the tab's text is read"
    );
    // A second request while it runs gets the usual busy error.
    let busy = call(&h, explain_request("again"));
    assert_eq!(busy["error"]["kind"], "busy", "{busy}");
    let ask = call(
        &h,
        json!({"id": 8, "type": "ask", "session": "tab:12", "question": "Why?", "tab_id": 12}),
    );
    assert_eq!(ask["error"]["kind"], "busy", "{ask}");
    block_on(run.expect("a run"));

    let snap = call(
        &h,
        json!({"id": 9, "type": "snapshot", "session": "tab:12"}),
    );
    assert_eq!(snap["data"]["status"], "completed");
    assert_eq!(snap["data"]["explain"], true);
    assert_eq!(
        snap["data"]["answer"],
        "Spring tides are the biggest tides."
    );

    // A question after it: the explanation is a turn marked `explain`.
    let ask = call(
        &h,
        json!({"id": 10, "type": "ask", "session": "tab:12", "question": "Why?", "tab_id": 12}),
    );
    assert_eq!(ask["data"]["explain"], false);
    assert_eq!(ask["data"]["turns"][0]["question"], "Spring tides");
    assert_eq!(ask["data"]["turns"][0]["explain"], true);
}

#[test]
fn the_panel_may_only_snapshot_or_stop_its_own_run_on_its_own_tab() {
    let h = harness(vec![Reply::text("Spring tides are the large ones.")]);
    // Every other command, even well-formed, is forbidden (a follow-up opens the side panel
    // from the panel itself now).
    for kind in [
        "ask",
        "explain",
        "follow_up",
        "export",
        "get_settings",
        "save_settings",
        "history",
        "clear_history",
        "open_conversation",
        "new_conversation",
        "answer_input",
        "ack_input",
        "search_offer",
        "nonsense",
    ] {
        let request = json!({"id": 3, "type": kind, "session": "tab:12", "run": 1, "question": "x",
                             "tab_id": 12, "selection": selection("x")});
        let reply = panel(&h, request, Some(12));
        assert_eq!(reply["ok"], false, "{kind}: {reply}");
        assert_eq!(reply["error"]["kind"], "forbidden", "{kind}");
        assert_eq!(reply["id"], 3, "{kind}: the reply names the request");
    }
    // Another tab's session, the popup's, none, or a sender that is not our panel in a tab.
    for (session, tab) in [
        (json!("tab:13"), Some(12)),
        (json!("popup"), Some(12)),
        (Value::Null, Some(12)),
        (json!("tab:12"), None),
        (json!("tab:12"), Some(-1)),
    ] {
        for kind in ["snapshot", "stop"] {
            let request = json!({"id": 4, "type": kind, "session": session, "run": 1});
            let reply = panel(&h, request, tab);
            assert_eq!(
                reply["error"]["kind"], "forbidden",
                "{kind} {session} {tab:?}"
            );
        }
    }
    assert!(check_panel_request("{", Some(12)).is_err());
    assert!(h.notifier.calls().is_empty(), "nothing was opened");
    let no_run = panel(
        &h,
        json!({"id": 5, "type": "snapshot", "session": "tab:12"}),
        Some(12),
    );
    assert_eq!(no_run["error"]["kind"], "bad_request", "{no_run}");

    // Its own run: the snapshot holds the run and nothing else of the session.
    let explained = call(&h, explain_request("Spring tides"));
    let run = explained["data"]["run"]
        .as_u64()
        .expect("the explain reply names its run");
    let snap = panel(
        &h,
        json!({"id": 6, "type": "snapshot", "session": "tab:12", "run": run}),
        Some(12),
    );
    assert_eq!(snap["ok"], true, "{snap}");
    let mut fields: Vec<&str> = snap["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        // `actions`: the panel's buttons (the saved list's), nothing of the session.
        ["actions", "answer", "draft", "error", "rev", "run", "seq", "status"]
    );
    assert_eq!(snap["data"]["answer"], "Spring tides are the large ones.");
    assert_eq!(snap["data"]["status"], "completed");
    let stop = panel(
        &h,
        json!({"id": 7, "type": "stop", "session": "tab:12", "run": run}),
        Some(12),
    );
    assert_eq!(stop["data"]["stopping"], false, "{stop}");
    // Another run of the tab (earlier or later) is not the panel's to see; with no run going
    // on, Stop has nothing to stop.
    for other in [run + 1, run - 1] {
        let reply = panel(
            &h,
            json!({"id": 8, "type": "snapshot", "session": "tab:12", "run": other}),
            Some(12),
        );
        assert_eq!(reply["error"]["kind"], "not_found", "{other}: {reply}");
    }
    let stale = panel(
        &h,
        json!({"id": 9, "type": "stop", "session": "tab:12", "run": run - 1}),
        Some(12),
    );
    assert_eq!(stale["data"]["stopping"], false, "{stale}");
}

#[test]
fn the_panel_stops_its_tabs_run() {
    let h = harness(vec![Reply::text("partial")]);
    let (reply, run) = block_on(h.service.handle_json(explain_request("Spring tides")));
    assert_eq!(reply["ok"], true);
    let id = reply["data"]["run"].clone();
    // Another run's panel cannot stop this one.
    let other = panel(
        &h,
        json!({"id": 5, "type": "stop", "session": "tab:12", "run": id.as_u64().unwrap() + 1}),
        Some(12),
    );
    assert_eq!(other["error"]["kind"], "not_found", "{other}");
    let stop = panel(
        &h,
        json!({"id": 6, "type": "stop", "session": "tab:12", "run": id}),
        Some(12),
    );
    assert_eq!(stop["data"]["stopping"], true, "{stop}");
    block_on(run.expect("a run"));
    let snap = panel(
        &h,
        json!({"id": 7, "type": "snapshot", "session": "tab:12", "run": id}),
        Some(12),
    );
    assert_eq!(snap["data"]["status"], "stopped", "{snap}");
}

#[test]
fn reading_level_is_a_validated_setting_with_a_default() {
    assert_eq!(Settings::default().reading_level, "standard");
    let old = json!({"version": 2, "provider": "openai_compatible", "base_url": "http://127.0.0.1:1/v1",
                     "model": "m", "api_key": "", "context_window": 0, "profiles": {}});
    let loaded = Settings::decode(&old.to_string()).expect("an old record loads");
    assert_eq!(loaded.reading_level, "standard");
    assert_eq!(
        loaded.run_config(None).reading_level,
        ReadingLevel::Standard
    );

    let h = harness(vec![]);
    let mut settings = serde_json::to_value(Settings::default()).expect("json");
    settings["reading_level"] = json!("genius");
    let reply = call(
        &h,
        json!({"id": 1, "type": "save_settings", "settings": settings}),
    );
    assert_eq!(reply["error"]["kind"], "invalid_settings", "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .expect("message")
        .starts_with("Reading level must be simple, standard or expert"));
    settings["reading_level"] = json!("Expert");
    let reply = call(
        &h,
        json!({"id": 2, "type": "save_settings", "settings": settings}),
    );
    assert_eq!(reply["data"]["reading_level"], "expert", "{reply}");
    let saved = Settings::decode(
        &block_on(h.settings.get(SETTINGS_KEY))
            .expect("read")
            .expect("saved"),
    )
    .expect("decodes");
    assert_eq!(saved.run_config(None).reading_level, ReadingLevel::Expert);
}

#[test]
fn an_explain_run_starts_with_the_context_call_and_offers_only_what_adds_to_it() {
    let h = harness(vec![
        Reply::tool("explain_text_with_context", r#"{"text": "Spring tides"}"#),
        Reply::text("continue"),
        Reply::text("Spring tides are the biggest tides."),
    ]);
    let mut request = explain_request("Spring tides");
    request["selection"]["full_length"] = json!(5210);
    let reply = call(&h, request);
    assert_eq!(reply["ok"], true, "{reply}");
    let requests = h.llm.requests.borrow();
    let first = &requests[0];
    // The first request already has the context, as the result of the prepared call.
    let tool = first
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("explain-context"))
        .expect("the prepared call's result");
    for part in [
        "Spring tides",
        "Spring tides follow full moons and new moons.",
        "Headings: Tides > Causes",
        "Page title: Tides",
        "URL: http://127.0.0.1/tides",
        "Language: en",
        "the first 12 of 5210 characters",
        "Your answer must say that it explains only the beginning of the selection.",
    ] {
        assert!(tool.content.contains(part), "{part:?} in {}", tool.content);
    }
    let offered =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    // The page is shown whole and the context is there: no tool that would read either
    // again (no screenshot for a selection, which is text, and no question back about
    // what the user selected): none at all.
    assert_eq!(offered(0), Vec::<String>::new());
    drop(requests);
    let snap = call(
        &h,
        json!({"id": 2, "type": "snapshot", "session": "tab:12"}),
    );
    let steps = snap["data"]["steps"].as_array().expect("steps");
    let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(
        &kinds[..3],
        ["thought", "tool_call", "tool_result"],
        "{steps:?}"
    );
    assert_eq!(steps[1]["tool"], "explain_text_with_context");
    assert_eq!(
        snap["data"]["answer"],
        "Spring tides are the biggest tides."
    );

    // A question in the same tab afterwards is not offered the tool.
    let h = harness(vec![Reply::text("Because of the moon.")]);
    call(
        &h,
        json!({"id": 1, "type": "ask", "session": "tab:12", "question": "Why?", "tab_id": 12}),
    );
    let names: Vec<String> = h.llm.requests.borrow()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    // (The test page has under 500 characters of text, so it is offered the screenshot.)
    assert_eq!(names, ["extract_screenshot_text"]);
}
