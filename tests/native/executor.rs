//! The one executor: several tool calls in one reply, bounded phases driven by the same
//! persisted engine through a worker stop, and `(rev, seq)` ordering across a resume.

use std::rc::Rc;

use futures::executor::block_on;
use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use kljson::FromJson;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::phase::{Phase, StopReason};
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatResponse, ToolCall};
use knowledgelens::state::{self, RunStatus, SessionState};
use knowledgelens::testing::Phases;
use knowledgelens::testing::{
    poll_times, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, YieldingStore,
};
use knowledgelens::tools::{ToolBox, ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;

#[derive(FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountArgs {
    n: u32,
}

/// Records the order of its calls (the `n` of each), and fails with a network error its
/// first `fails` of them.
struct Count {
    ran: Rc<std::cell::RefCell<Vec<u32>>>,
    fails: usize,
}

impl Count {
    /// A count that never fails, recording into `ran`.
    fn recording(ran: &Rc<std::cell::RefCell<Vec<u32>>>) -> Box<Self> {
        Box::new(Self {
            ran: Rc::clone(ran),
            fails: 0,
        })
    }
}

impl TypedTool for Count {
    const NAME: &'static str = "count";
    const DESCRIPTION: &'static str = "Counts.";
    type Args = CountArgs;
    type Output = String;
    fn call<'a>(
        &'a self,
        args: CountArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        self.ran.borrow_mut().push(args.n);
        let result = if self.ran.borrow().len() <= self.fails {
            Err(ToolError::new(
                knowledgelens::tools::ToolErrorKind::Network,
                "connection reset",
            ))
        } else {
            Ok(format!("counted {}", args.n))
        };
        future::ready(result).boxed_local()
    }
}

fn calls(n: u32) -> Reply {
    Reply::Raw(ChatResponse {
        content: "Counting.".into(),
        tool_calls: (1..=n)
            .map(|i| ToolCall {
                id: format!("c{i}"),
                name: "count".into(),
                arguments: format!(r#"{{"n": {i}}}"#),
            })
            .collect(),
        usage: None,
        finish_reason: None,
    })
}

fn control(answer: &str) -> Reply {
    Reply::text(format!(
        r#"{{"should_continue": false, "final_answer": "{answer}"}}"#
    ))
}

fn ask(
    llm: &ScriptedLlm,
    tools: &ToolBox,
    store: &MemoryStore,
    sink: &RecordingSink,
) -> SessionState {
    let clock = ManualClock::new(1_000);
    let engine = Engine::new(llm, &clock, sink, store, tools, StopSignal::new());
    let mut state = SessionState::new("tab:1", 1_000);
    state.begin_run("Count.", None, RunConfig::default(), 1_000);
    block_on(engine.drive(&mut state));
    state
}

#[test]
fn several_calls_in_one_reply_run_in_order_in_one_step_with_one_observe() {
    let ran = Rc::default();
    let tools = ToolBox::builtin().with(Count::recording(&ran));
    let llm = ScriptedLlm::new(vec![calls(3), control("Done.")]);
    let (store, sink) = (MemoryStore::new(), RecordingSink::default());
    let state = ask(&llm, &tools, &store, &sink);
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(state.answer, "Done.");
    assert_eq!(*ran.borrow(), [1, 2, 3]);
    assert_eq!(state.step, 1, "one step");
    assert_eq!(llm.calls(), 2, "one Reason and one Observe");
    let results: Vec<&str> = state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["c1", "c2", "c3"]);
    // The Observe request carries the three calls in one assistant message, then the results.
    let observe = &llm.requests.borrow()[1];
    let with_calls: Vec<usize> = observe
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(with_calls, [3]);
    let executing = sink.names().iter().filter(|n| **n == "executing").count();
    assert_eq!(executing, 3);
    assert_eq!(
        sink.names().iter().filter(|n| **n == "analyzing").count(),
        1
    );
}

#[test]
fn calls_beyond_five_in_one_reply_are_answered_not_run() {
    let ran = Rc::default();
    let tools = ToolBox::builtin().with(Count::recording(&ran));
    let llm = ScriptedLlm::new(vec![calls(7), control("Done.")]);
    let (store, sink) = (MemoryStore::new(), RecordingSink::default());
    let state = ask(&llm, &tools, &store, &sink);
    assert_eq!(*ran.borrow(), [1, 2, 3, 4, 5]);
    let refused: Vec<(&str, &str)> = state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolResult {
                call_id,
                ok: false,
                content,
                ..
            } => Some((call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 2);
    assert_eq!((refused[0].0, refused[1].0), ("c6", "c7"));
    assert!(
        refused[0]
            .1
            .contains("not run: too many calls in one reply"),
        "{}",
        refused[0].1
    );
}

#[test]
fn events_are_ordered_by_rev_and_seq_across_a_resume() {
    let tools = ToolBox::builtin();
    let page = knowledgelens::types::PageInfo {
        title: "T".into(),
        url: "http://x/".into(),
        text: "Some text.".into(),
        ..Default::default()
    };
    let replies = || vec![Reply::tool("read_page", "{}"), control("Read.")];
    let store = Rc::new(MemoryStore::new());
    let clock = ManualClock::new(1_000);
    let sink = RecordingSink::default();
    let llm = ScriptedLlm::new(replies()).lenient();
    let yielding = YieldingStore(Rc::clone(&store));
    let mut state = SessionState::new("tab:1", 1_000);
    state.begin_run("Read.", Some(page), RunConfig::default(), 1_000);
    {
        let engine = Engine::new(&llm, &clock, &sink, &yielding, &tools, StopSignal::new());
        let mut run = Box::pin(engine.drive(&mut state));
        // The worker stops after a few saves.
        assert!(poll_times(run.as_mut(), 6).is_none(), "still running");
    }
    let mut resumed = block_on(state::load(store.as_ref(), "tab:1"))
        .expect("load")
        .expect("saved");
    assert_eq!(resumed.status, RunStatus::Running);
    let llm2 = ScriptedLlm::new(replies()).lenient();
    let engine = Engine::new(
        &llm2,
        &clock,
        &sink,
        store.as_ref(),
        &tools,
        StopSignal::new(),
    );
    block_on(engine.drive(&mut resumed));
    assert_eq!(resumed.status, RunStatus::Completed);
    let order: Vec<(u64, u64)> = sink
        .events
        .borrow()
        .iter()
        .map(|e| (e.event.rev, e.event.seq))
        .collect();
    assert!(order.len() > 4);
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing: {order:?}"
    );
    // The final save carries the terminal event's position.
    let stored = block_on(state::load(store.as_ref(), "tab:1"))
        .expect("load")
        .expect("saved");
    assert_eq!((stored.rev, stored.seq), *order.last().expect("events"));
}

/// Answers by the request: after tool results the text, else two calls.
struct Oracle;

impl knowledgelens::ports::LlmClient for Oracle {
    fn complete<'a>(
        &'a self,
        request: &'a knowledgelens::llm::ChatRequest,
        _on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, knowledgelens::llm::LlmError>> {
        let after_tools = request
            .messages
            .last()
            .is_some_and(|m| m.role == knowledgelens::llm::Role::Tool);
        let reply = if after_tools { "Counted twice." } else { "" };
        let mut response = ChatResponse {
            content: reply.into(),
            ..ChatResponse::default()
        };
        if !after_tools {
            if let Reply::Raw(r) = calls(2) {
                response = r;
            }
        }
        future::ready(Ok(response)).boxed_local()
    }
}

#[test]
fn a_bounded_phase_survives_a_worker_stop_and_ends_as_if_never_cut() {
    let script = || vec![calls(2), Reply::text("Counted twice.")];
    let run_phase = |phases: &Phases<'_>| {
        block_on(phases.run_bounded(Phase::new("Count to two.", 3).in_context("subtopic:1")))
            .expect("phase")
    };
    // Uninterrupted.
    let ran = Rc::default();
    let tools = ToolBox::builtin().with(Count::recording(&ran));
    let llm = ScriptedLlm::new(script());
    let clock = ManualClock::new(5_000);
    let reference = run_phase(&Phases::new(
        &llm,
        &clock,
        &tools,
        StopSignal::new(),
        RunConfig::default(),
        "Sys.",
    ));
    assert_eq!(reference.stop_reason, StopReason::Done);
    assert_eq!(reference.tool_calls.len(), 2);

    // Cut after every number of polls until it finishes in one go, resuming each time.
    let mut cuts_resumed = 0;
    for cut in 1..200 {
        let ran = Rc::default();
        let tools = ToolBox::builtin().with(Count::recording(&ran));
        let store = Rc::new(MemoryStore::new());
        let yielding = YieldingStore(Rc::clone(&store));
        let sink = RecordingSink::default();
        let llm = ScriptedLlm::new(script()).lenient();
        let clock = ManualClock::new(5_000);
        let phases = Phases::new(
            &llm,
            &clock,
            &tools,
            StopSignal::new(),
            RunConfig::default(),
            "Sys.",
        )
        .with_store(&yielding, &sink, "research:1");
        let finished = {
            let mut fut = Box::pin(
                phases.run_bounded(Phase::new("Count to two.", 3).in_context("subtopic:1")),
            );
            poll_times(fut.as_mut(), cut)
        };
        if let Some(result) = finished {
            assert_eq!(result.expect("phase"), reference);
            assert!(cuts_resumed > 3, "cut at {cuts_resumed} points");
            return;
        }
        drop(phases);
        // A new worker: only what was saved survives. The model answers by the request (a
        // request ending with tool results gets the text, else the calls), as a real one would.
        let llm2 = Oracle;
        let stop = StopSignal::new();
        let loaded = block_on(Phases::load(
            &llm2,
            &clock,
            &tools,
            stop,
            store.as_ref(),
            &sink,
            "research:1",
        ))
        .expect("loads");
        let Some(loaded) = loaded else {
            continue; // cut before the first save: nothing to resume, as after a real stop
        };
        let Some(result) = block_on(loaded.resume()) else {
            continue;
        };
        let result = result.expect("phase");
        assert_eq!(
            result.final_text, reference.final_text,
            "cut after {cut} polls"
        );
        assert_eq!(result.stop_reason, reference.stop_reason);
        let ids: Vec<&str> = result
            .tool_calls
            .iter()
            .map(|o| o.call.id.as_str())
            .collect();
        assert_eq!(ids, ["c1", "c2"], "cut after {cut} polls");
        assert!(result.tool_calls.iter().all(|o| o.ok));
        assert_eq!(
            loaded.history(Some("subtopic:1")).len(),
            5,
            "user, calls, 2 results, answer"
        );
        cuts_resumed += 1;
    }
    panic!("the phase never finished uncut");
}

#[test]
fn a_free_question_without_page_text_is_offered_request_input() {
    let tools = ToolBox::builtin();
    let llm = ScriptedLlm::new(vec![Reply::text("An answer.")]);
    let (store, sink) = (MemoryStore::new(), RecordingSink::default());
    let state = ask(&llm, &tools, &store, &sink);
    assert_eq!(state.status, RunStatus::Completed);
    let offered: Vec<String> = llm.requests.borrow()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    // A tab without page text is also offered the screenshot tool.
    assert_eq!(offered, ["request_input", "extract_screenshot_text"]);
}

/// Streams `partial` and fails on its first call; answers `whole` on the second.
struct FailsMidStream {
    calls: std::cell::Cell<u32>,
}

impl knowledgelens::ports::LlmClient for FailsMidStream {
    fn complete<'a>(
        &'a self,
        _request: &'a knowledgelens::llm::ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, knowledgelens::llm::LlmError>> {
        self.calls.set(self.calls.get() + 1);
        let result = if self.calls.get() == 1 {
            on_delta("The tide is ");
            Err(knowledgelens::llm::LlmError::new(
                knowledgelens::llm::LlmErrorKind::Network,
                "connection reset",
            ))
        } else {
            on_delta("The tide is high.");
            Ok(ChatResponse {
                content: "The tide is high.".into(),
                ..Default::default()
            })
        };
        future::ready(result).boxed_local()
    }
}

#[test]
fn a_retried_stream_starts_the_draft_afresh() {
    let llm = FailsMidStream {
        calls: std::cell::Cell::new(0),
    };
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("popup", 1_000);
    state.begin_run("Is the tide high?", None, RunConfig::default(), 1_000);
    block_on(Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new()).drive(&mut state));
    assert_eq!(state.answer, "The tide is high.");
    // What a UI appending the deltas shows: everything after the last reset.
    let names = sink.names();
    let reset = names
        .iter()
        .rposition(|n| *n == "answer_reset")
        .expect("the failed attempt's text is reset");
    let deltas_before = names[..reset]
        .iter()
        .filter(|n| **n == "answer_delta")
        .count();
    assert_eq!(deltas_before, 1, "{names:?}");
    assert_eq!(
        names[reset..]
            .iter()
            .filter(|n| **n == "answer_delta")
            .count(),
        1
    );
}

#[test]
fn stop_during_a_retry_backoff_ends_the_run_at_once() {
    use knowledgelens::llm::{LlmError, LlmErrorKind};
    // A rate limit whose Retry-After asks for 60 s.
    let mut limited = LlmError::new(LlmErrorKind::RateLimited, "429");
    limited.retry_after_ms = Some(60_000);
    let Held {
        llm,
        clock,
        sink,
        stop,
        state,
        mut pool,
        ..
    } = held_run(
        ScriptedLlm::new(vec![Reply::Fail(limited)]),
        ToolBox::builtin(),
        "popup",
        "q",
    );
    pool.run_until_stalled();
    assert_eq!(
        clock.sleeps.borrow().as_slice(),
        &[60_000],
        "the run waits out the backoff"
    );
    assert_eq!(state.borrow().status, RunStatus::Running);
    stop.raise();
    // No time passes: Stop ends the backoff.
    pool.run_until_stalled();
    let s = state.borrow();
    assert_eq!(s.status, RunStatus::Stopped, "{:?}", sink.names());
    assert_eq!(llm.calls(), 1, "the call is not retried");
    assert_eq!(sink.names().last(), Some(&"stopped"));
    use knowledgelens::ports::Clock;
    assert_eq!(clock.now_ms(), 1_000, "the clock never moved");
}

/// Drives a run whose one tool call meets `fails` network errors, with a held clock, on a
/// local pool: the run's state, the clock, the store, the sink and the tool's call count.
fn flaky_run(
    fails: u32,
    stop_after_first_wait: bool,
    replies: Vec<Reply>,
) -> (
    SessionState,
    Rc<ManualClock>,
    Rc<MemoryStore>,
    Rc<RecordingSink>,
    u32,
) {
    let ran = Rc::new(std::cell::RefCell::new(Vec::new()));
    let Held {
        clock,
        store,
        sink,
        stop,
        state,
        mut pool,
        ..
    } = held_run(
        ScriptedLlm::new(replies),
        ToolBox::builtin().with(Box::new(Count {
            ran: Rc::clone(&ran),
            fails: fails as usize,
        })),
        "tab:1",
        "Count.",
    );
    pool.run_until_stalled();
    if fails > 0 {
        // The run waits out the first backoff, its retry saved before the wait.
        assert_eq!(clock.sleeps.borrow().len(), 1, "{:?}", sink.names());
        let saved = block_on(state::load(&*store, "tab:1"))
            .expect("load")
            .expect("saved");
        assert_eq!(saved.attempts, 1);
        assert!(matches!(
            saved.trajectory.last().map(|e| &e.item),
            Some(Item::Error { retrying: true, .. })
        ));
        assert_eq!(ran.borrow().len(), 1);
        if stop_after_first_wait {
            stop.raise();
        }
    }
    // Each later wait ends when the clock passes it.
    while state.borrow().status == RunStatus::Running && !stop_after_first_wait {
        let wait = *clock.sleeps.borrow().last().expect("a wait");
        clock.advance(wait);
        pool.run_until_stalled();
    }
    pool.run_until_stalled();
    let s = state.borrow().clone();
    let calls = ran.borrow().len() as u32;
    (s, clock, store, sink, calls)
}

fn calls_one() -> Reply {
    Reply::Raw(ChatResponse {
        content: "Counting.".into(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "count".into(),
            arguments: r#"{"n": 1}"#.into(),
        }],
        usage: None,
        finish_reason: None,
    })
}

#[test]
fn a_tool_retry_waits_the_backoff_is_saved_and_ends_with_stop() {
    // Before, a failed tool call was run again at once, up to three times, with nothing
    // saved and Stop not heard.
    let (s, clock, _, sink, calls) = flaky_run(2, false, vec![calls_one(), control("Done.")]);
    assert_eq!(s.status, RunStatus::Completed, "{:?}", sink.names());
    assert_eq!(calls, 3);
    let sleeps = clock.sleeps.borrow().clone();
    assert_eq!(sleeps.len(), 2, "{sleeps:?}");
    // Exponential with jitter in [50%, 100%] from the run's base (500 ms).
    let base = RunConfig::default().backoff_base_ms;
    assert!((base / 2..=base).contains(&sleeps[0]), "{sleeps:?}");
    assert!((base..=2 * base).contains(&sleeps[1]), "{sleeps:?}");
    let result = s
        .trajectory
        .iter()
        .find_map(|e| match &e.item {
            Item::ToolResult { ok, content, .. } => Some((*ok, content.clone())),
            _ => None,
        })
        .expect("a result");
    assert_eq!(result, (true, "counted 1".into()));
    let retried = s
        .trajectory
        .iter()
        .filter(|e| matches!(&e.item, Item::Error { retrying: true, error } if error.message == "count: connection reset"))
        .count();
    assert_eq!(retried, 2);

    // Retries used up: the model sees the error (and reflects on it).
    let replies = vec![
        calls_one(),
        Reply::reflection("The network failed.", "Answer without it."),
        Reply::text("Done."),
    ];
    let (s, _, _, _, calls) = flaky_run(9, false, replies);
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(calls, 1 + RunConfig::default().max_retries);
    assert!(s.trajectory.iter().any(|e| matches!(
        &e.item,
        Item::ToolResult { ok: false, content, .. } if content.contains("connection reset")
    )));

    // Stop during the backoff ends the run at once, without the retry.
    let (s, clock, _, sink, calls) = flaky_run(2, true, vec![calls_one()]);
    assert_eq!(s.status, RunStatus::Stopped, "{:?}", sink.names());
    assert_eq!(calls, 1);
    assert_eq!(sink.names().last(), Some(&"stopped"));
    use knowledgelens::ports::Clock;
    assert_eq!(clock.now_ms(), 1_000, "the clock never moved");
}

/// A run driven on a local pool with a held clock, and what outlives it.
struct Held {
    llm: Rc<ScriptedLlm>,
    clock: Rc<ManualClock>,
    store: Rc<MemoryStore>,
    sink: Rc<RecordingSink>,
    stop: StopSignal,
    state: Rc<std::cell::RefCell<SessionState>>,
    pool: futures::executor::LocalPool,
}

/// Starts `question` in `session` on `llm` and `tools`, spawned on a pool not yet run.
fn held_run(llm: ScriptedLlm, tools: ToolBox, session: &str, question: &str) -> Held {
    use futures::task::LocalSpawnExt;
    let held = Held {
        llm: Rc::new(llm),
        clock: ManualClock::held(1_000),
        store: Rc::new(MemoryStore::new()),
        sink: Rc::new(RecordingSink::default()),
        stop: StopSignal::new(),
        state: Rc::new(std::cell::RefCell::new(SessionState::new(session, 1_000))),
        pool: futures::executor::LocalPool::new(),
    };
    held.state
        .borrow_mut()
        .begin_run(question, None, RunConfig::default(), 1_000);
    let (llm, clock, sink, store, stop, state) = (
        held.llm.clone(),
        held.clock.clone(),
        held.sink.clone(),
        held.store.clone(),
        held.stop.clone(),
        held.state.clone(),
    );
    held.pool
        .spawner()
        .spawn_local(async move {
            let engine = Engine::new(&*llm, &*clock, &*sink, &*store, &tools, stop);
            let mut s = state.borrow().clone();
            engine.drive(&mut s).await;
            *state.borrow_mut() = s;
        })
        .expect("spawn");
    held
}
