//! Conversations through the worker's request handling: "New conversation" archives the
//! current one and starts the session afresh; `history` lists every tab's archives newest
//! first (at most 20); `open_conversation` shows one read-only; `clear_history` deletes
//! them. Archives survive their tab closing, go first when storage is full, and bad ids,
//! busy sessions and damaged records get clear errors that lose nothing.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::block_on;
use knowledgelens::ports::{StateStore, StoreError};
use knowledgelens::service::{Ports, RunFuture, Service};
use knowledgelens::state::{self, RunStatus};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, StaticPages,
};
use knowledgelens::types::PageInfo;
use serde_json::{json, Value};

struct Harness {
    service: Rc<Service>,
    sessions: Rc<MemoryStore>,
    clock: Rc<ManualClock>,
}

fn harness(replies: Vec<Reply>) -> Harness {
    let llm = Rc::new(ScriptedLlm::new(replies));
    let sessions = Rc::new(MemoryStore::new());
    let clock = ManualClock::new(5_000);
    let mut pages = BTreeMap::new();
    for tab in [3, 4] {
        pages.insert(
            tab,
            PageInfo {
                title: format!("Page {tab}"),
                url: format!("http://127.0.0.1/{tab}"),
                text: "The moon pulls the oceans.".into(),
                ..Default::default()
            },
        );
    }
    let ports = Ports {
        capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
        sessions: sessions.clone(),
        settings: Rc::new(MemoryStore::new()),
        clock: clock.clone(),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(pages)),
        models: Rc::new(FixedModel(llm)),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    Harness {
        service: Service::new(ports),
        sessions,
        clock,
    }
}

impl Harness {
    /// Sends a request; a run it starts is driven to its end before the reply is returned.
    fn call(&self, request: Value) -> Value {
        let (reply, run) = self.start(request);
        if let Some(run) = run {
            block_on(run);
        }
        reply
    }

    fn start(&self, request: Value) -> (Value, Option<RunFuture>) {
        self.clock.advance(1_000);
        block_on(self.service.handle_json(request))
    }

    fn ask(&self, session: &str, tab: i64, question: &str) {
        let reply = self.call(json!({"id": 1, "type": "ask", "session": session, "question": question, "tab_id": tab}));
        assert_eq!(reply["ok"], true, "{reply}");
    }

    fn new_conversation(&self, session: &str) -> Value {
        self.call(json!({"id": 2, "type": "new_conversation", "session": session}))
    }

    fn history(&self) -> Vec<Value> {
        let reply = self.call(json!({"id": 3, "type": "history"}));
        assert_eq!(reply["ok"], true, "{reply}");
        reply["data"]["conversations"]
            .as_array()
            .expect("list")
            .clone()
    }

    fn open(&self, id: &str) -> Value {
        self.call(json!({"id": 4, "type": "open_conversation", "conversation": id}))
    }

    fn archive_keys(&self) -> Vec<String> {
        self.sessions
            .data
            .borrow()
            .keys()
            .filter(|k| k.starts_with("conv:"))
            .cloned()
            .collect()
    }
}

#[test]
fn new_conversation_archives_the_current_one_and_starts_afresh() {
    let h = harness(vec![Reply::text("First."), Reply::text("Second.")]);
    h.ask("tab:3", 3, "Why tides?");
    h.ask("tab:3", 3, "And the sun?");
    let before = h.call(json!({"id": 9, "type": "snapshot", "session": "tab:3"}));
    let fresh = h.new_conversation("tab:3");
    assert_eq!(fresh["ok"], true, "{fresh}");
    let view = &fresh["data"];
    assert_eq!(view["status"], "idle");
    assert_eq!(view["question"], "");
    assert_eq!(view["turns"], json!([]));
    assert_eq!(view["steps"], json!([]));
    assert_eq!(view["archived"], false);
    assert!(
        view["rev"].as_u64() > before["data"]["rev"].as_u64(),
        "the fresh view is newer than anything a popup shows: {view}"
    );
    // The old run's entries and page text are gone; only the head and the archive remain.
    // (The page read is kept for questions across pages under `read:`, apart from sessions.)
    let keys: Vec<String> = h
        .sessions
        .data
        .borrow()
        .keys()
        .filter(|k| !k.starts_with("read:"))
        .cloned()
        .collect();
    assert_eq!(keys, ["conv:tab:3:1", "session:tab:3"], "{keys:?}");

    let listed = h.history();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], "conv:tab:3:1");
    assert_eq!(listed[0]["session"], "tab:3");
    assert_eq!(listed[0]["title"], "Why tides?");
    assert_eq!(listed[0]["turns"], 2);
    assert!(listed[0]["updated_at"].as_u64().unwrap_or(0) > 0);

    let opened = h.open("conv:tab:3:1");
    assert_eq!(opened["ok"], true, "{opened}");
    let old = &opened["data"];
    assert_eq!(old["archived"], true);
    assert_eq!(old["status"], "completed");
    assert_eq!(old["question"], "And the sun?");
    assert_eq!(old["answer"], "Second.");
    assert_eq!(old["turns"][0]["question"], "Why tides?");
    assert_eq!(old["turns"][0]["answer"], "First.");
    assert_eq!(old["page"]["title"], "Page 3");
    assert!(
        !old["steps"].as_array().expect("steps").is_empty(),
        "the last run's steps are kept"
    );

    assert_eq!(
        h.new_conversation("tab:3")["data"]["status"],
        "idle",
        "an empty session has nothing to archive"
    );
    assert_eq!(h.archive_keys(), ["conv:tab:3:1"]);
}

#[test]
fn a_fresh_session_asks_again_and_archives_under_the_next_number() {
    let h = harness(vec![Reply::text("One."), Reply::text("Two.")]);
    h.ask("tab:3", 3, "First conversation?");
    h.new_conversation("tab:3");
    h.ask("tab:3", 3, "Second conversation?");
    let snap = h.call(json!({"id": 1, "type": "snapshot", "session": "tab:3"}));
    assert_eq!(snap["data"]["answer"], "Two.");
    assert_eq!(
        snap["data"]["turns"],
        json!([]),
        "the new conversation starts empty"
    );
    h.new_conversation("tab:3");
    let titles: Vec<Value> = h.history().iter().map(|c| c["title"].clone()).collect();
    assert_eq!(
        titles,
        [json!("Second conversation?"), json!("First conversation?")],
        "newest first"
    );
    assert_eq!(h.archive_keys(), ["conv:tab:3:1", "conv:tab:3:2"]);
}

#[test]
fn history_lists_every_tab_newest_first_at_most_20_and_clears() {
    let replies = (0..23)
        .map(|i| Reply::text(format!("Answer {i}.")))
        .collect();
    let h = harness(replies);
    for i in 0..23 {
        let (session, tab) = if i % 2 == 0 {
            ("tab:3", 3)
        } else {
            ("tab:4", 4)
        };
        h.ask(session, tab, &format!("Question {i}?"));
        assert_eq!(h.new_conversation(session)["ok"], true);
    }
    let listed = h.history();
    assert_eq!(listed.len(), 20);
    assert_eq!(listed[0]["title"], "Question 22?");
    assert_eq!(listed[1]["title"], "Question 21?");
    assert_eq!(listed[1]["session"], "tab:4");
    assert_eq!(listed[19]["title"], "Question 3?");
    let cleared = h.call(json!({"id": 1, "type": "clear_history"}));
    assert_eq!(cleared["data"], json!({"cleared": 23}), "{cleared}");
    assert!(h.history().is_empty());
    assert!(h.archive_keys().is_empty());
    let gone = h.open("conv:tab:3:1");
    assert_eq!(gone["error"]["kind"], "not_found", "{gone}");
    assert!(gone["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("no longer kept"));
}

#[test]
fn titles_are_the_first_question_cut_to_120_characters() {
    let h = harness(vec![Reply::text("Yes.")]);
    let long = format!("{}?", "é".repeat(200));
    h.ask("popup", 0, &long);
    h.new_conversation("popup");
    let title = h.history()[0]["title"].as_str().expect("title").to_string();
    assert_eq!(title.chars().count(), 121, "120 characters and an ellipsis");
    assert!(title.ends_with('…'));
    assert_eq!(h.history()[0]["id"], "conv:popup:1");
}

#[test]
fn archives_survive_their_tab_closing() {
    let h = harness(vec![Reply::text("Kept.")]);
    h.ask("tab:3", 3, "Will this stay?");
    h.new_conversation("tab:3");
    block_on(h.service.tab_closed(3)).expect("closed");
    assert!(!h.sessions.data.borrow().contains_key("session:tab:3"));
    assert_eq!(h.history().len(), 1);
    assert_eq!(
        h.open("conv:tab:3:1")["data"]["question"],
        "Will this stay?"
    );
}

#[test]
fn a_running_session_is_busy_and_keeps_its_conversation() {
    let h = harness(vec![Reply::text("Eventually.")]);
    let (asked, run) = h.start(
        json!({"id": 1, "type": "ask", "session": "tab:3", "question": "Slow?", "tab_id": 3}),
    );
    assert_eq!(asked["ok"], true);
    let busy = h.new_conversation("tab:3");
    assert_eq!(busy["error"]["kind"], "busy", "{busy}");
    assert!(busy["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("Stop"));
    block_on(run.expect("run"));
    assert!(h.archive_keys().is_empty());
    let snap = h.call(json!({"id": 2, "type": "snapshot", "session": "tab:3"}));
    assert_eq!(snap["data"]["answer"], "Eventually.");
}

#[test]
fn bad_requests_name_what_is_wrong() {
    let h = harness(vec![]);
    for (request, expected) in [
        (
            json!({"id": 1, "type": "open_conversation"}),
            "needs a \"conversation\"",
        ),
        (
            json!({"id": 1, "type": "open_conversation", "conversation": "tab:3"}),
            "not a conversation id",
        ),
        (
            json!({"id": 1, "type": "open_conversation", "conversation": "conv:tab:x:1"}),
            "not a conversation id",
        ),
        (
            json!({"id": 1, "type": "new_conversation"}),
            "needs a \"session\"",
        ),
        (
            json!({"id": 1, "type": "new_conversation", "session": "tab:"}),
            "not a session key",
        ),
    ] {
        let reply = h.call(request.clone());
        assert_eq!(reply["error"]["kind"], "bad_request", "{request}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{request}: {message}");
    }
}

#[test]
fn damaged_and_newer_archives_are_reported_not_guessed() {
    let h = harness(vec![Reply::text("Fine.")]);
    h.ask("tab:3", 3, "Good one?");
    h.new_conversation("tab:3");
    block_on(h.sessions.set(vec![
        ("conv:tab:4:1".into(), "{not json".into()),
        (
            "conv:tab:4:2".into(),
            json!({"version": 999, "id": "conv:tab:4:2", "session": "tab:4", "title": "Later", "turns": 1, "updated_at": 1, "state": {}}).to_string(),
        ),
    ]))
    .expect("set");
    let damaged = h.open("conv:tab:4:1");
    assert_eq!(damaged["error"]["kind"], "storage", "{damaged}");
    assert!(damaged["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("Clear history removes it"));
    let newer = h.open("conv:tab:4:2");
    assert!(newer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("newer version"));
    // The list skips the damaged one and still shows the rest.
    let ids: Vec<Value> = h.history().iter().map(|c| c["id"].clone()).collect();
    assert_eq!(ids, [json!("conv:tab:3:1"), json!("conv:tab:4:2")]);
}

#[test]
fn a_full_store_drops_archives_first() {
    // A large archive: dropping it alone makes room for the whole new run.
    let h = harness(vec![
        Reply::text("Old. ".repeat(4_000)),
        Reply::text("New."),
    ]);
    h.ask("tab:4", 4, "Old question?");
    h.new_conversation("tab:4");
    // Another finished session, more recent than the archive.
    let mut other = state::SessionState::new("tab:8", 1);
    other.begin_run("other", None, Default::default(), 1);
    other.status = RunStatus::Completed;
    other.next = None;
    block_on(state::save(h.sessions.as_ref(), &mut other)).expect("save");
    h.sessions
        .quota_bytes
        .set(Some(h.sessions.used_bytes() + 50));
    h.ask("tab:3", 3, "Does this fit?");
    assert!(h.archive_keys().is_empty(), "the archive went first");
    assert!(
        h.sessions.data.borrow().contains_key("session:tab:8"),
        "the finished session stays while dropping the archive was enough"
    );
    let snap = h.call(json!({"id": 1, "type": "snapshot", "session": "tab:3"}));
    assert_eq!(snap["data"]["answer"], "New.");
    assert_eq!(snap["data"]["notices"], json!([state::STORAGE_FULL_NOTICE]));
}

#[test]
fn archiving_into_a_full_store_fails_clearly_and_changes_nothing() {
    let h = harness(vec![Reply::text("Stays.")]);
    h.ask("tab:3", 3, "Keep me?");
    h.sessions
        .fail_sets
        .borrow_mut()
        .push_back(StoreError::Failed("disk trouble".into()));
    let failed = h.new_conversation("tab:3");
    assert_eq!(failed["error"]["kind"], "storage", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("nothing was changed"), "{message}");
    assert!(message.contains("disk trouble"), "{message}");
    let snap = h.call(json!({"id": 1, "type": "snapshot", "session": "tab:3"}));
    assert_eq!(snap["data"]["answer"], "Stays.");
    assert!(h.archive_keys().is_empty());
    // Full, with nothing else to drop: the same, with the quota named.
    h.sessions.quota_bytes.set(Some(h.sessions.used_bytes()));
    let full = h.new_conversation("tab:3");
    assert!(full["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("quota"));
    assert_eq!(
        h.call(json!({"id": 1, "type": "snapshot", "session": "tab:3"}))["data"]["answer"],
        "Stays."
    );
}
