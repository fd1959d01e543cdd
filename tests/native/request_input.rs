//! `request_input` through the worker's request handling, with a held manual clock: the
//! run pauses on the model's question, the two-phase timeout (until the UI acknowledges
//! showing it, then an optional second wait), answers, stale ids, Stop, and a worker that
//! stops while the question waits.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::{block_on, LocalPool};
use futures::task::LocalSpawnExt;
use knowledgelens::ports::StateStore;
use knowledgelens::service::{Ports, RunFuture, Service};
use knowledgelens::settings::{Settings, SETTINGS_KEY};
use knowledgelens::state::{self, Next, RunStatus};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, StaticPages,
};
use knowledgelens::types::PageInfo;
use serde_json::{json, Value};

const ACK_S: u64 = 2;
/// The default wait for an answer once the question is shown (30 minutes).
const ANSWER_S: u64 = 1_800;
const QUESTION: &str = "Do you mean the 1861 light or the 1902 one?";

struct Harness {
    service: Rc<Service>,
    llm: Rc<ScriptedLlm>,
    sink: Rc<RecordingSink>,
    clock: Rc<ManualClock>,
    pool: LocalPool,
}

impl Harness {
    fn new(answer_timeout_s: u64, replies: Vec<Reply>) -> Self {
        let sessions = Rc::new(MemoryStore::new());
        let clock = ManualClock::held(1_000_000);
        Self::with_store(sessions, clock, answer_timeout_s, replies)
    }

    fn with_store(
        sessions: Rc<MemoryStore>,
        clock: Rc<ManualClock>,
        answer_timeout_s: u64,
        replies: Vec<Reply>,
    ) -> Self {
        let llm = Rc::new(ScriptedLlm::new(replies));
        let settings = Rc::new(MemoryStore::new());
        let saved = Settings {
            input_ack_timeout_secs: ACK_S,
            input_answer_timeout_secs: answer_timeout_s,
            ..Settings::default()
        };
        block_on(settings.set(vec![(
            SETTINGS_KEY.into(),
            serde_json::to_string(&saved).expect("settings"),
        )]))
        .expect("save settings");
        let sink = Rc::new(RecordingSink::default());
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
        let ports = Ports {
            capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
            sessions: sessions.clone(),
            settings,
            clock: clock.clone(),
            events: sink.clone(),
            pages: Rc::new(StaticPages(pages)),
            models: Rc::new(FixedModel(llm.clone())),
            random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
            search: Rc::new(knowledgelens::testing::NoSearch),
        };
        Self {
            service: Service::new(ports),
            llm,
            sink,
            clock,
            pool: LocalPool::new(),
        }
    }

    /// Sends a request, spawns the run it starts, and lets everything run until it waits.
    fn send(&mut self, request: Value) -> Value {
        let (reply, run) = block_on(self.service.handle_json(request));
        self.spawn(run);
        self.pool.run_until_stalled();
        reply
    }

    fn spawn(&mut self, run: Option<RunFuture>) {
        if let Some(run) = run {
            self.pool.spawner().spawn_local(run).expect("spawn");
        }
    }

    fn advance(&mut self, ms: u64) {
        self.clock.advance(ms);
        self.pool.run_until_stalled();
    }

    fn ask(&mut self) -> Value {
        self.send(json!({"id": 1, "type": "ask", "session": "tab:3", "question": "When was the light built?", "tab_id": 3}))
    }

    fn snapshot(&mut self) -> Value {
        self.send(json!({"id": 2, "type": "snapshot", "session": "tab:3"}))["data"].clone()
    }

    fn ack(&mut self, request_id: &str) -> Value {
        self.send(
            json!({"id": 3, "type": "ack_input", "session": "tab:3", "request_id": request_id}),
        )
    }

    fn answer(&mut self, request_id: &str, answer: &str) -> Value {
        self.send(json!({"id": 4, "type": "answer_input", "session": "tab:3", "request_id": request_id, "answer": answer}))
    }

    /// The pending question's id, checked against the awaiting_input event.
    fn pending_id(&mut self) -> String {
        let view = self.snapshot();
        assert_eq!(view["status"], "running", "{view}");
        assert_eq!(view["phase"], "awaiting_input", "{view}");
        assert_eq!(view["pending_input"]["question"], QUESTION, "{view}");
        let id = view["pending_input"]["request_id"]
            .as_str()
            .expect("request id")
            .to_string();
        let announced = self.sink.events.borrow().iter().any(|e| {
            let v = serde_json::to_value(&e.event).expect("event");
            v["type"] == "awaiting_input" && v["request_id"] == id.as_str()
        });
        assert!(announced, "no awaiting_input event for {id}");
        id
    }

    fn status(&mut self) -> String {
        self.snapshot()["status"]
            .as_str()
            .expect("status")
            .to_string()
    }
}

/// The model asks the user (a run that never gets an answer makes only this call).
fn asks() -> Vec<Reply> {
    vec![Reply::tool(
        "request_input",
        &json!({ "question": QUESTION }).to_string(),
    )]
}

/// The model asks the user, then answers from the user's reply.
fn asks_then_answers() -> Vec<Reply> {
    let mut replies = asks();
    replies.push(Reply::text(
        r#"{"should_continue": false, "final_answer": "It was first lit in 1861."}"#,
    ));
    replies
}

#[test]
fn the_answer_becomes_the_tool_result_and_the_run_completes() {
    let mut h = Harness::new(ANSWER_S, asks_then_answers());
    h.ask();
    let id = h.pending_id();
    assert_eq!(h.ack(&id)["data"]["acknowledged"], true);
    let reply = h.answer(&id, "  the 1861 one ");
    assert_eq!(reply["ok"], true, "{reply}");
    let view = h.snapshot();
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["answer"], "It was first lit in 1861.");
    assert!(view["pending_input"].is_null());
    // The Observe call saw the answer as the result of the request_input call.
    let requests = h.llm.requests.borrow();
    assert_eq!(requests.len(), 2);
    let result = requests[1]
        .messages
        .iter()
        .find(|m| m.tool_call_id.is_some())
        .expect("tool message");
    assert_eq!(result.content, "The user answered: the 1861 one");
    let names = h.sink.names();
    assert!(names.contains(&"awaiting_input") && names.contains(&"tool_completed"));
}

#[test]
fn without_acknowledgement_the_first_timeout_ends_the_run() {
    let mut h = Harness::new(ANSWER_S, asks());
    h.ask();
    let id = h.pending_id();
    h.advance(ACK_S * 1000 - 1);
    assert_eq!(h.status(), "running", "timed out before the deadline");
    h.advance(1);
    let view = h.snapshot();
    assert_eq!(view["status"], "timed_out", "{view}");
    assert_eq!(view["error"]["kind"], "input_timeout");
    assert!(
        view["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("within 2 s")),
        "{view}"
    );
    assert!(view["pending_input"].is_null());
    assert_eq!(h.sink.names().last(), Some(&"timed_out"));
    // Too late: an answer now is refused and nothing more is asked of the model.
    let late = h.answer(&id, "the 1861 one");
    assert_eq!(late["ok"], false, "{late}");
    assert_eq!(late["error"]["kind"], "not_found");
    assert_eq!(h.llm.requests.borrow().len(), 1);
}

#[test]
fn after_acknowledgement_the_wait_is_thirty_minutes_by_default() {
    let mut h = Harness::new(ANSWER_S, asks_then_answers());
    h.ask();
    let id = h.pending_id();
    h.advance(500);
    h.ack(&id);
    // Just before 30 minutes the question still waits, and an answer is taken.
    h.advance(ANSWER_S * 1000 - 1);
    let view = h.snapshot();
    assert_eq!(view["status"], "running", "{view}");
    assert_eq!(view["pending_input"]["acknowledged"], true);
    h.answer(&id, "the 1861 one");
    assert_eq!(h.status(), "completed");
}

#[test]
fn a_forgotten_question_ends_the_run_after_thirty_minutes_by_default() {
    let mut h = Harness::new(ANSWER_S, asks());
    h.ask();
    let id = h.pending_id();
    h.ack(&id);
    h.advance(ANSWER_S * 1000 - 1);
    assert_eq!(h.status(), "running");
    h.advance(1);
    let view = h.snapshot();
    assert_eq!(view["status"], "timed_out", "{view}");
    assert!(
        view["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("within 1800 s of it being shown")),
        "{view}"
    );
}

#[test]
fn a_second_timeout_applies_after_acknowledgement_when_set() {
    let mut h = Harness::new(60, asks());
    h.ask();
    let id = h.pending_id();
    h.advance(1_000);
    h.ack(&id);
    // The first deadline (2 s after asking) no longer applies...
    h.advance(3_000);
    assert_eq!(h.status(), "running");
    // ...the second runs 60 s from the acknowledgement.
    h.advance(56_999);
    assert_eq!(h.status(), "running");
    h.advance(1);
    let view = h.snapshot();
    assert_eq!(view["status"], "timed_out", "{view}");
    assert!(
        view["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("within 60 s of it being shown")),
        "{view}"
    );
}

#[test]
fn a_wrong_request_id_is_ignored_and_a_second_ack_is_harmless() {
    let mut h = Harness::new(ANSWER_S, asks());
    h.ask();
    let id = h.pending_id();
    let wrong = h.ack("9-9-9");
    assert_eq!(wrong["ok"], true);
    assert_eq!(wrong["data"]["acknowledged"], false);
    let refused = h.answer("9-9-9", "the 1861 one");
    assert_eq!(refused["error"]["kind"], "not_found", "{refused}");
    // The wrong id acknowledged nothing: the first timeout still applies.
    h.advance(ACK_S * 1000);
    assert_eq!(h.status(), "timed_out");

    let mut h = Harness::new(ANSWER_S, asks_then_answers());
    h.ask();
    let id2 = h.pending_id();
    assert_eq!(id, id2, "request ids are derived from the run, not random");
    h.ack(&id2);
    h.advance(1_000);
    assert_eq!(h.ack(&id2)["data"]["acknowledged"], true);
    h.advance(10_000);
    assert_eq!(h.status(), "running");
    h.answer(&id2, "1861");
    assert_eq!(h.status(), "completed");
}

#[test]
fn an_ack_arriving_with_the_deadline_resolves_to_exactly_one_outcome() {
    // The acknowledgement arrives exactly at the deadline, in the same turn as the timer:
    // the timeout wins, and the acknowledgement changes nothing afterwards.
    let mut h = Harness::new(ANSWER_S, asks());
    h.ask();
    let id = h.pending_id();
    h.clock.advance(ACK_S * 1000);
    let (ack, run) =
        block_on(h.service.handle_json(
            json!({"id": 3, "type": "ack_input", "session": "tab:3", "request_id": id}),
        ));
    h.spawn(run);
    h.pool.run_until_stalled();
    let view = h.snapshot();
    assert_eq!(view["status"], "timed_out", "{view} / ack: {ack}");
    assert_eq!(h.llm.requests.borrow().len(), 1);

    // One millisecond earlier, the acknowledgement wins even though the run sees it only
    // after the deadline has passed.
    let mut h = Harness::new(ANSWER_S, asks());
    h.ask();
    let id = h.pending_id();
    h.clock.advance(ACK_S * 1000 - 1);
    let (ack, run) =
        block_on(h.service.handle_json(
            json!({"id": 3, "type": "ack_input", "session": "tab:3", "request_id": id}),
        ));
    assert_eq!(ack["data"]["acknowledged"], true);
    h.spawn(run);
    h.clock.advance(1);
    h.pool.run_until_stalled();
    let view = h.snapshot();
    assert_eq!(view["status"], "running", "{view}");
    assert_eq!(view["pending_input"]["acknowledged"], true);
    let names = h.sink.names();
    assert!(!names.contains(&"timed_out"), "{names:?}");
}

#[test]
fn stop_while_waiting_ends_the_run_stopped() {
    let mut h = Harness::new(
        ANSWER_S,
        vec![
            Reply::tool(
                "request_input",
                &json!({ "question": QUESTION }).to_string(),
            ),
            Reply::text("Bellhaven Light was first lit in 1861."),
        ],
    );
    h.ask();
    let id = h.pending_id();
    h.send(json!({"id": 5, "type": "stop", "session": "tab:3"}));
    let view = h.snapshot();
    assert_eq!(view["status"], "stopped", "{view}");
    assert!(view["pending_input"].is_null());
    let refused = h.answer(&id, "1861");
    assert_eq!(refused["ok"], false);
}

#[test]
fn invalid_questions_go_back_to_the_model_as_errors() {
    let mut h = Harness::new(
        ANSWER_S,
        vec![
            Reply::tool("request_input", r#"{"question": "   "}"#),
            Reply::reflection("The question was empty.", "Ask a real question."),
            Reply::text(r#"{"should_continue": false, "final_answer": "1861."}"#),
        ],
    );
    h.ask();
    let view = h.snapshot();
    assert_eq!(view["status"], "completed", "{view}");
    let requests = h.llm.requests.borrow();
    let result = requests[1]
        .messages
        .iter()
        .find(|m| m.tool_call_id.is_some())
        .expect("tool message");
    assert!(
        result.content.contains("\"question\""),
        "{}",
        result.content
    );
}

/// A worker asked, its question was shown, and the worker stopped: its store, its clock and
/// the question's id.
fn shown_then_stopped() -> (Rc<MemoryStore>, Rc<ManualClock>, String) {
    let sessions = Rc::new(MemoryStore::new());
    let clock = ManualClock::held(1_000_000);
    let mut first = Harness::with_store(sessions.clone(), clock.clone(), ANSWER_S, asks());
    first.ask();
    let id = first.pending_id();
    first.ack(&id);
    (sessions, clock, id)
}

/// A new worker over `sessions` that resumed the one waiting run (as on start-up).
fn resumed(sessions: Rc<MemoryStore>, clock: Rc<ManualClock>) -> Harness {
    let mut worker = Harness::with_store(sessions, clock, ANSWER_S, vec![]);
    let runs = block_on(worker.service.resume_all());
    assert_eq!(runs.len(), 1);
    for run in runs {
        worker.spawn(Some(run));
    }
    worker.pool.run_until_stalled();
    worker
}

#[test]
fn a_worker_stopped_while_waiting_resumes_the_wait_with_the_same_deadline() {
    let sessions = Rc::new(MemoryStore::new());
    let clock = ManualClock::held(1_000_000);
    let mut first = Harness::with_store(sessions.clone(), clock.clone(), ANSWER_S, asks());
    first.ask();
    let id = first.pending_id();
    let saved = block_on(state::load(sessions.as_ref(), "tab:3"))
        .expect("load")
        .expect("state");
    assert_eq!(saved.next, Some(Next::AwaitInput));
    let deadline = saved.input.pending.as_ref().and_then(|p| p.ack_deadline);
    assert_eq!(deadline, Some(1_000_000 + ACK_S * 1000));
    // The worker stops 1.5 s after the question (its futures are dropped).
    drop(first);
    clock.advance(1_500);

    // A new worker resumes the run (as on start-up): the wait goes on where it was.
    let mut second = resumed(sessions.clone(), clock.clone());
    assert_eq!(second.pending_id(), id);
    second.advance(499);
    assert_eq!(second.status(), "running");
    second.advance(1);
    assert_eq!(second.status(), "timed_out");
    assert!(
        second.llm.requests.borrow().is_empty(),
        "no model call was redone"
    );
    let last = block_on(state::load(sessions.as_ref(), "tab:3"))
        .expect("load")
        .expect("state");
    assert_eq!(last.status, RunStatus::TimedOut);
}

#[test]
fn an_answer_reaching_a_restarted_worker_resumes_the_run() {
    let (sessions, clock, id) = shown_then_stopped();
    answered_by_a_new_worker(sessions, clock, &id);
}

/// A new worker over `sessions` that gets the answer to question `id`: only the Observe
/// reply is left to give, and the run completes with it.
fn answered_by_a_new_worker(sessions: Rc<MemoryStore>, clock: Rc<ManualClock>, id: &str) {
    let mut worker = Harness::with_store(
        sessions,
        clock,
        ANSWER_S,
        vec![Reply::text(
            r#"{"should_continue": false, "final_answer": "It was first lit in 1861."}"#,
        )],
    );
    let reply = worker.answer(id, "the 1861 one");
    assert_eq!(reply["data"]["accepted"], true, "{reply}");
    let view = worker.snapshot();
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["answer"], "It was first lit in 1861.");
}

#[test]
fn a_question_saved_by_an_older_build_without_a_limit_still_times_out() {
    // Before settings version 3, an answer timeout of 0 meant "no limit": the saved question
    // has no answer deadline and the run's config says 0. Resumed, it gets the default.
    let (sessions, clock, id) = shown_then_stopped();
    let mut saved = block_on(state::load(sessions.as_ref(), "tab:3"))
        .expect("load")
        .expect("state");
    saved.config.input_answer_timeout_ms = 0;
    saved.config.input_ack_timeout_ms = 0;
    let pending = saved.input.pending.as_mut().expect("pending");
    assert!(pending.acknowledged_at.is_some());
    pending.answer_deadline = None;
    pending.ack_deadline = None;
    block_on(state::save(sessions.as_ref(), &mut saved)).expect("save");

    let mut second = resumed(sessions.clone(), clock.clone());
    assert_eq!(second.pending_id(), id);
    second.advance(ANSWER_S * 1000 - 1);
    assert_eq!(second.status(), "running");
    second.advance(1);
    assert_eq!(second.status(), "timed_out");
}

#[test]
fn closing_the_tab_stops_its_waiting_run_and_removes_the_session() {
    let sessions = Rc::new(MemoryStore::new());
    let clock = ManualClock::held(1_000_000);
    // As with Stop, the run writes its answer from what it has (one last model call).
    let mut replies = asks();
    replies.push(Reply::text("Bellhaven Light was first lit in 1861."));
    let mut h = Harness::with_store(sessions.clone(), clock, ANSWER_S, replies);
    h.ask();
    let id = h.pending_id();
    h.ack(&id);
    assert_eq!(h.service.active_runs(), 1);
    block_on(h.service.tab_closed(3)).expect("closed");
    // No time passes: the close itself ends the run.
    h.pool.run_until_stalled();
    assert_eq!(h.service.active_runs(), 0, "the run left the registry");
    assert_eq!(h.sink.names().last(), Some(&"stopped"));
    assert!(
        sessions.data.borrow().keys().all(|k| !k.contains("tab:3")),
        "the session is removed: {:?}",
        sessions.data.borrow().keys().collect::<Vec<_>>()
    );
    // The question is gone with it.
    let late = h.answer(&id, "the 1861 one");
    assert_eq!(late["ok"], false, "{late}");
}

#[test]
fn a_wait_resumed_by_several_workers_is_not_taken_for_a_crash() {
    // A question waits while the worker is stopped and started again, three times: each
    // worker resumes the wait (a wait is not a drive that got nowhere), and the answer to
    // the last one completes the run.
    let (sessions, clock, id) = shown_then_stopped();
    for _ in 0..3 {
        let mut worker = resumed(sessions.clone(), clock.clone());
        assert_eq!(worker.status(), "running");
        assert_eq!(worker.pending_id(), id);
        clock.advance(1_000);
    }
    answered_by_a_new_worker(sessions, clock, &id);
}
