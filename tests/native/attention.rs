//! A question you cannot miss, through the worker's request handling with a recording
//! notifier: the badge shows a run's step and clears when it ends; `request_input` with no
//! popup or side panel connected shows `?` and a notification (with one open, only `?`);
//! the popup acknowledging the question removes the notification; clicking it opens the
//! popup on the question's session.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::{block_on, LocalPool};
use futures::task::LocalSpawnExt;
use knowledgelens::ports::{NotifyError, PopupOpened, StateStore};
use knowledgelens::protocol::SessionKey;
use knowledgelens::service::{question_notification_id, Ports, Service, QUESTION_TITLE};
use knowledgelens::settings::{Settings, SETTINGS_KEY};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, NotifierCall, RecordingNotifier, RecordingSink, Reply,
    ScriptedLlm, StaticPages,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::PageInfo;
use serde_json::{json, Value};

const QUESTION: &str = "Do you mean the 1861 light or the 1902 one?";
const POPUP: &str = "chrome-extension://abcdef/popup.html";
const OPTIONS: &str = "chrome-extension://abcdef/options.html";

struct Harness {
    service: Rc<Service>,
    notifier: Rc<RecordingNotifier>,
    clock: Rc<ManualClock>,
    pool: LocalPool,
}

impl Harness {
    fn new(replies: Vec<Reply>) -> Self {
        let settings = Rc::new(MemoryStore::new());
        let saved = Settings {
            input_ack_timeout_secs: 60,
            ..Settings::default()
        };
        block_on(settings.set(vec![(
            SETTINGS_KEY.into(),
            serde_json::to_string(&saved).expect("settings"),
        )]))
        .expect("save settings");
        let mut pages = BTreeMap::new();
        pages.insert(
            3,
            PageInfo {
                title: "Bellhaven Light".into(),
                url: "http://127.0.0.1/light".into(),
                text: "Bellhaven Light was first lit in 1861 and rebuilt in 1902.".into(),
                ..Default::default()
            },
        );
        let clock = ManualClock::held(1_000_000);
        let notifier = Rc::new(RecordingNotifier::new());
        let ports = Ports {
            capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
            sessions: Rc::new(MemoryStore::new()),
            settings,
            clock: clock.clone(),
            events: Rc::new(RecordingSink::default()),
            pages: Rc::new(StaticPages(pages)),
            models: Rc::new(FixedModel(Rc::new(ScriptedLlm::new(replies)))),
            random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
            search: Rc::new(knowledgelens::testing::NoSearch),
        };
        Self {
            service: Service::with_notifier(ports, ToolBox::builtin(), notifier.clone()),
            notifier,
            clock,
            pool: LocalPool::new(),
        }
    }

    fn send(&mut self, request: Value) -> Value {
        let (reply, run) = block_on(self.service.handle_json(request));
        if let Some(run) = run {
            self.pool.spawner().spawn_local(run).expect("spawn");
        }
        self.pool.run_until_stalled();
        reply
    }

    fn ask(&mut self, session: &str, tab: Option<i64>) {
        let reply = self.send(json!({"id": 1, "type": "ask", "session": session, "question": "When was the light built?", "tab_id": tab}));
        assert_eq!(reply["ok"], true, "{reply}");
    }

    fn pending_id(&mut self, session: &str) -> String {
        let view = self.send(json!({"id": 2, "type": "snapshot", "session": session}));
        view["data"]["pending_input"]["request_id"]
            .as_str()
            .expect("a pending question")
            .to_string()
    }
}

fn asks_then_answers() -> Vec<Reply> {
    vec![
        Reply::tool(
            "request_input",
            &json!({ "question": QUESTION }).to_string(),
        ),
        Reply::text(r#"{"should_continue": false, "final_answer": "It was first lit in 1861."}"#),
    ]
}

#[test]
fn the_badge_shows_the_step_while_a_run_goes_and_clears_at_its_end() {
    let mut h = Harness::new(vec![
        Reply::tool("read_page", "{}"),
        Reply::text(r#"{"should_continue": true}"#),
        Reply::text("Built in 1861."),
    ]);
    h.ask("tab:3", Some(3));
    let shown = h.notifier.badge_history(Some(3));
    assert_eq!(
        shown,
        ["1", "2", ""],
        "step by step, then cleared: {shown:?}"
    );
    assert_eq!(h.notifier.badge(Some(3)), "");
    assert!(
        h.notifier.shown().is_empty(),
        "no question, no notification"
    );
    assert_eq!(
        h.notifier.badge(None),
        "",
        "other tabs' badges are left alone"
    );
}

#[test]
fn a_question_with_no_popup_open_shows_a_question_mark_and_a_notification() {
    let mut h = Harness::new(asks_then_answers());
    // The options page is no place to answer questions: it does not count.
    h.service.page_connected(OPTIONS);
    h.ask("tab:3", Some(3));
    assert_eq!(h.notifier.badge(Some(3)), "?");
    let shown = h.notifier.shown();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0].id, question_notification_id(SessionKey::Tab(3)));
    assert_eq!(shown[0].id, "knowledgelens-question:tab:3");
    assert_eq!(shown[0].title, QUESTION_TITLE);
    assert_eq!(shown[0].message, QUESTION);

    // Clicking it opens the popup on the question's tab, and it goes.
    let opened = block_on(
        h.service
            .notification_clicked("knowledgelens-question:tab:3"),
    );
    assert_eq!(opened, Ok(Some(PopupOpened::Popup)));
    assert!(h.notifier.shown().is_empty());
    assert!(h
        .notifier
        .calls()
        .contains(&NotifierCall::OpenPopup(Some(3))));
    assert_eq!(
        h.notifier.badge(Some(3)),
        "?",
        "still waiting for the answer"
    );

    // The popup connects, shows the question and the user answers: the run goes on.
    h.service.page_connected(POPUP);
    let id = h.pending_id("tab:3");
    h.send(json!({"id": 3, "type": "ack_input", "session": "tab:3", "request_id": id}));
    h.send(json!({"id": 4, "type": "answer_input", "session": "tab:3", "request_id": id, "answer": "1861"}));
    assert_eq!(
        h.notifier.badge_history(Some(3)),
        ["1", "?", "1", ""],
        "the step again once answered, then cleared"
    );
}

#[test]
fn with_a_popup_open_the_badge_asks_but_no_notification_is_sent() {
    let mut h = Harness::new(asks_then_answers());
    h.service.page_connected(POPUP);
    h.ask("popup", None);
    assert_eq!(h.notifier.badge(None), "?");
    assert!(h.notifier.shown().is_empty());
    // Once the popup closed, the next question would notify.
    h.service.page_disconnected(POPUP);
    h.service.page_disconnected(POPUP);
    h.clock.advance(10);
    let id = h.pending_id("popup");
    h.send(json!({"id": 4, "type": "answer_input", "session": "popup", "request_id": id, "answer": "1861"}));
    assert_eq!(h.notifier.badge(None), "");
}

#[test]
fn the_popup_showing_the_question_removes_the_notification() {
    let mut h = Harness::new(asks_then_answers()[..1].to_vec());
    h.ask("tab:3", Some(3));
    assert_eq!(h.notifier.shown().len(), 1);
    let id = h.pending_id("tab:3");
    let acked = h.send(json!({"id": 3, "type": "ack_input", "session": "tab:3", "request_id": id}));
    assert_eq!(acked["data"]["acknowledged"], true);
    assert!(h.notifier.shown().is_empty());
}

#[test]
fn other_notifications_are_ignored_and_a_popup_that_cannot_open_is_an_error() {
    let h = Harness::new(vec![]);
    for id in ["", "something-else", "knowledgelens-question:tab:x"] {
        assert_eq!(
            block_on(h.service.notification_clicked(id)),
            Ok(None),
            "{id}"
        );
    }
    assert!(h.notifier.calls().is_empty());
    h.notifier.popup_opens(Ok(PopupOpened::Window));
    assert_eq!(
        block_on(
            h.service
                .notification_clicked("knowledgelens-question:popup")
        ),
        Ok(Some(PopupOpened::Window))
    );
    let refused = NotifyError {
        message: "no window".into(),
    };
    h.notifier.popup_opens(Err(refused.clone()));
    assert_eq!(
        block_on(
            h.service
                .notification_clicked("knowledgelens-question:tab:4")
        ),
        Err(refused)
    );
}
