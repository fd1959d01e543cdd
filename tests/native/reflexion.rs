//! Reflexion driven natively with scripted models: a failed action (a tool
//! error, invalid arguments, a result the Observe phase judges failed) triggers one
//! reflection call, stored in episodic memory and carried by the retry's prompt (property 6);
//! a repeated error type asks for an alternative; reflections are bounded by `max_retries`;
//! an unusable reflection (no parse, a failed call, no budget) is the built-in fallback;
//! reflection calls count against the budget; and loop detection never runs a fourth
//! identical call, ending the run with a notice when the model insists.

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, Role, Usage};
use knowledgelens::protocol::view::SessionView;
use knowledgelens::state::memory::{Failure, Reflection};
use knowledgelens::state::{self, Next, PageInfo, RunStatus, SessionState};
use knowledgelens::testing::{
    ManualClock, MemoryStore, RecordingSink, Reply, RequestKind, ScriptedLlm,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::ToolCall;
use proptest::prelude::*;

const ALTERNATIVE: &str = "Take an alternative approach: another tool, or other arguments.";
const NOTICE: &str = "Stopped repeating read_page: it was called with the same arguments 3 times and gave the same result each time.";

struct Outcome {
    state: SessionState,
    llm: ScriptedLlm,
    sink: RecordingSink,
    store: MemoryStore,
}

fn page() -> PageInfo {
    PageInfo {
        title: "Photosynthesis".into(),
        url: "http://127.0.0.1/article".into(),
        text: "Plants turn light into sugar. ".repeat(20),
        ..Default::default()
    }
}

fn config() -> RunConfig {
    RunConfig {
        max_steps: 10,
        ..RunConfig::default()
    }
}

fn run_model(llm: ScriptedLlm, config: RunConfig) -> Outcome {
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("tab:7", 1_000);
    state.begin_run("What do plants do with light?", Some(page()), config, 1_000);
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new()).drive(&mut state),
    );
    Outcome {
        state,
        llm,
        sink,
        store,
    }
}

fn run(replies: Vec<Reply>, config: RunConfig) -> Outcome {
    run_model(ScriptedLlm::new(replies), config)
}

fn control(go: bool, answer: Option<&str>, failed: bool) -> Reply {
    Reply::text(
        serde_json::json!({"should_continue": go, "final_answer": answer, "failed": failed})
            .to_string(),
    )
}

fn reflections(state: &SessionState) -> Vec<(Reflection, bool)> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::Reflection {
                reflection,
                alternative,
            } => Some((reflection.clone(), *alternative)),
            _ => None,
        })
        .collect()
}

fn user_texts(request: &ChatRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect()
}

fn is_reflection_call(request: &ChatRequest) -> bool {
    request
        .response_format
        .as_ref()
        .is_some_and(|f| f.name == "reflection")
}

/// A failed action of the kinds that trigger reflection.
#[derive(Debug, Clone)]
enum Failing {
    /// Arguments that do not match the schema.
    InvalidArguments,
    /// A tool that does not exist.
    UnknownTool,
    /// `request_input` with a blank question.
    BlankQuestion,
    /// A result the Observe phase judges a failure.
    JudgedFailed,
}

impl Failing {
    /// The replies up to the reflection call, and the failed call's tool and error type.
    fn script(&self) -> (Vec<Reply>, &'static str, &'static str) {
        match self {
            Self::InvalidArguments => (
                vec![Reply::tool("read_page", r#"{"offset": "ten"}"#)],
                "read_page",
                "invalid_arguments",
            ),
            Self::UnknownTool => (
                vec![Reply::tool("no_such_tool", "{}")],
                "no_such_tool",
                "not_found",
            ),
            Self::BlankQuestion => (
                vec![Reply::tool("request_input", r#"{"question": "  "}"#)],
                "request_input",
                "invalid_arguments",
            ),
            Self::JudgedFailed => (
                vec![
                    Reply::tool("read_page", r#"{"offset": 0}"#),
                    control(true, None, true),
                ],
                "read_page",
                "judged_failed",
            ),
        }
    }
}

fn arb_failing() -> impl Strategy<Value = Failing> {
    prop_oneof![
        Just(Failing::InvalidArguments),
        Just(Failing::UnknownTool),
        Just(Failing::BlankQuestion),
        Just(Failing::JudgedFailed),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 6: for any failed action that triggers reflection, the reflection is stored
    /// in episodic memory and carried by the retry's request.
    #[test]
    fn a_reflection_is_stored_and_in_the_retrys_request(
        failing in arb_failing(),
        analysis in "[A-Za-z][A-Za-z0-9 .,]{0,50}",
        fix in "[A-Za-z][A-Za-z0-9 .,]{0,50}",
        constrained in any::<bool>(),
    ) {
        let (mut replies, tool, error_type) = failing.script();
        let reflect_at = replies.len();
        replies.push(Reply::reflection(&analysis, &fix));
        replies.push(Reply::text("Plants make sugar from light."));
        let out = run(replies, RunConfig { constrained_output: constrained, ..config() });
        let s = &out.state;
        prop_assert_eq!(s.status, RunStatus::Completed);
        let (analysis, fix) = (analysis.trim(), fix.trim());
        // Stored in memory, counted, and recorded.
        prop_assert_eq!(s.memory.reflections.len(), 1);
        let stored = &s.memory.reflections[0];
        prop_assert_eq!(&stored.tool, tool);
        prop_assert_eq!(&stored.error_type, error_type);
        prop_assert!(stored.analysis.ends_with(analysis), "{}", stored.analysis);
        prop_assert_eq!(&stored.suggested_fix, fix);
        prop_assert!(!stored.fallback);
        prop_assert_eq!(s.memory.error_counts.get(error_type).copied(), Some(1));
        prop_assert_eq!(reflections(s), vec![(stored.clone(), false)]);
        // The reflection call: constrained to the "reflection" schema when asked, no tools.
        let requests = out.llm.requests.borrow();
        prop_assert_eq!(requests.len(), reflect_at + 2);
        let reflect = &requests[reflect_at];
        prop_assert_eq!(is_reflection_call(reflect), constrained);
        prop_assert!(reflect.tools.is_empty());
        let instruction = user_texts(reflect).last().copied().unwrap_or_default().to_string();
        prop_assert!(instruction.starts_with(&format!("Your call to {tool} with the arguments ")), "{}", instruction);
        // The retry's Reason request carries it, right after the failed result (the last
        // message).
        let retry = &requests[reflect_at + 1];
        prop_assert_eq!(RequestKind::of(retry), RequestKind::Reason, "the retry is a Reason call");
        let note = format!("Reflection on the failed call to {tool} ({error_type}): {} Suggested fix: {fix}", stored.analysis);
        let last = retry.messages.last().expect("messages");
        prop_assert_eq!(last.role, Role::User);
        prop_assert_eq!(&last.content, &note);
        prop_assert_eq!(out.sink.names().iter().filter(|n| **n == "reflecting").count(), 1);
        // And it is saved.
        let saved = futures::executor::block_on(state::load(&out.store, "tab:7")).expect("load").expect("saved");
        prop_assert_eq!(&saved.memory, &s.memory);
    }
}

#[test]
fn a_repeated_error_type_asks_for_an_alternative() {
    let out = run(
        vec![
            Reply::tool("read_page", r#"{"offset": "ten"}"#),
            Reply::reflection("The offset was text.", "Give a number."),
            Reply::tool("read_page", r#"{"offset": "eleven"}"#),
            Reply::reflection("Again text.", "Give a number."),
            Reply::text("Plants make sugar."),
        ],
        config(),
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    let found = reflections(&out.state);
    assert_eq!(found.len(), 2);
    assert!(!found[0].1, "the first of its type asks for a fix");
    assert!(found[1].1, "the second of its type asks for an alternative");
    assert_eq!(
        out.state.memory.error_counts.get("invalid_arguments"),
        Some(&2)
    );
    let requests = out.llm.requests.borrow();
    let retry = requests.last().expect("the retry");
    let notes: Vec<&str> = user_texts(retry)
        .into_iter()
        .filter(|t| t.starts_with("Reflection on the failed call"))
        .collect();
    assert_eq!(notes.len(), 2);
    assert!(!notes[0].contains(ALTERNATIVE));
    assert!(notes[1].ends_with(ALTERNATIVE), "{}", notes[1]);
    // The second reflection call was shown the first (same tool, same type).
    let second = requests
        .iter()
        .filter(|r| is_reflection_call(r))
        .nth(1)
        .expect("two");
    let instruction = user_texts(second).last().copied().unwrap_or_default();
    assert!(
        instruction.contains("Reflections on earlier failures of the same tool or of the same kind:\n- read_page (invalid_arguments): (scripted) The offset was text. Suggested fix: Give a number."),
        "{instruction}"
    );
}

#[test]
fn reflections_are_bounded_by_max_retries() {
    let out = run(
        vec![
            Reply::tool("read_page", r#"{"offset": "ten"}"#),
            Reply::reflection("The offset was text.", "Give a number."),
            Reply::tool("read_page", r#"{"offset": "eleven"}"#),
            // No reflection left: the failure goes to Observe, as without Reflexion.
            control(true, None, false),
            Reply::tool("no_such_tool", "{}"),
            control(false, Some("Sugar."), true),
        ],
        RunConfig {
            max_retries: 1,
            ..config()
        },
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, "Sugar.");
    assert_eq!(reflections(&out.state).len(), 1);
    assert_eq!(
        out.llm
            .requests
            .borrow()
            .iter()
            .filter(|r| is_reflection_call(r))
            .count(),
        1
    );
}

#[test]
fn no_reflection_with_max_retries_zero() {
    let out = run(
        vec![
            Reply::tool("read_page", r#"{"offset": "ten"}"#),
            control(false, Some("Sugar."), true),
        ],
        RunConfig {
            max_retries: 0,
            ..config()
        },
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(reflections(&out.state).is_empty());
    assert!(out.state.memory.is_empty());
}

fn fallback_of(out: &Outcome) -> Reflection {
    let found = reflections(&out.state);
    assert_eq!(found.len(), 1);
    assert_eq!(out.state.memory.reflections, vec![found[0].0.clone()]);
    found[0].0.clone()
}

/// The reflection stored when the reflection call after `failing` gets `answer`: the
/// fallback, after which the run goes on.
fn fallback_after(failing: Reply, answer: Reply) -> Outcome {
    let out = run(
        vec![failing, answer, Reply::text("Plants make sugar.")],
        config(),
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(out.state.error.is_none());
    assert!(fallback_of(&out).fallback);
    out
}

#[test]
fn a_reply_that_does_not_parse_gives_the_fallback() {
    let failing = Reply::tool("read_page", r#"{"offset": "ten"}"#);
    let out = fallback_after(failing, Reply::text("I am not sure what went wrong."));
    let r = fallback_of(&out);
    assert_eq!(r.error_type, "invalid_arguments");
    assert!(
        r.analysis.starts_with("field \"offset\": invalid type"),
        "{}",
        r.analysis
    );
    assert_eq!(
        r.suggested_fix,
        "Check the tool's schema and call it again with valid arguments."
    );
}

#[test]
fn a_failed_reflection_call_gives_the_fallback_and_is_not_retried() {
    let out = fallback_after(Reply::tool("no_such_tool", "{}"), Reply::status(503));
    assert_eq!(fallback_of(&out).error_type, "not_found");
    assert!(out.state.trajectory.iter().any(|e| matches!(
        e.item,
        Item::Error {
            retrying: false,
            ..
        }
    )));
}

#[test]
fn no_budget_for_the_reflection_gives_the_fallback_without_a_call() {
    let llm = ScriptedLlm::new(vec![Reply::tool("read_page", r#"{"offset": "ten"}"#)]);
    llm.usage.set(Some(Usage::new(4_990, 5)));
    let out = run_model(
        llm,
        RunConfig {
            token_budget: 5_000,
            ..config()
        },
    );
    assert_eq!(out.llm.calls(), 1, "no reflection call was made");
    assert!(fallback_of(&out).fallback);
    // The retry does not fit either: the run ends with its best answer and the notice.
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(out.state.partial);
}

#[test]
fn reflection_calls_count_against_the_budget() {
    let llm = ScriptedLlm::new(vec![
        Reply::tool("read_page", r#"{"offset": "ten"}"#),
        Reply::reflection("Text offset.", "Give a number."),
        Reply::text("Plants make sugar."),
    ]);
    llm.usage.set(Some(Usage::new(100, 10)));
    let out = run_model(llm, config());
    assert_eq!(out.state.model_calls, 3);
    assert_eq!(out.state.usage.input, 300);
    assert_eq!(out.state.usage.output, 30);
    assert_eq!(out.state.metrics(0).model_calls, 3);
}

fn read_same() -> Reply {
    Reply::tool("read_page", r#"{"offset": 0, "max_chars": 50}"#)
}

/// Three reads of the same passage, each observed, and a fourth identical call.
fn three_reads_and_a_fourth() -> Vec<Reply> {
    let mut replies = Vec::new();
    for _ in 0..3 {
        replies.push(read_same());
        replies.push(control(true, None, false));
    }
    replies.push(read_same());
    replies
}

fn executed_reads(out: &Outcome) -> usize {
    out.sink
        .events
        .borrow()
        .iter()
        .filter(|e| {
            matches!(&e.event.kind, knowledgelens::agent::events::EventKind::Executing { tool } if tool == "read_page")
        })
        .count()
}

#[test]
fn a_fourth_identical_call_never_runs_and_insisting_ends_the_run_with_a_notice() {
    let mut replies = three_reads_and_a_fourth();
    replies.push(Reply::reflection(
        "It keeps giving the same text.",
        "Read further on.",
    ));
    replies.push(read_same());
    replies.push(Reply::text("Plants make sugar from light."));
    let out = run(replies, config());
    let s = &out.state;
    assert_eq!(
        executed_reads(&out),
        3,
        "the same call ran only three times"
    );
    assert_eq!(s.status, RunStatus::Completed);
    assert!(s.partial);
    assert_eq!(s.answer, "Plants make sugar from light.");
    assert_eq!(s.notices, vec![NOTICE.to_string()]);
    let notices: Vec<String> = out
        .sink
        .events
        .borrow()
        .iter()
        .filter_map(|e| match &e.event.kind {
            knowledgelens::agent::events::EventKind::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notices, vec![NOTICE.to_string()]);
    let found = reflections(s);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0.error_type, "repeated_call");
    assert!(found[0].1, "a repeated call asks for an alternative");
    // The blocked calls' results say why; every call has its result.
    let blocked = s
        .trajectory
        .iter()
        .filter(|e| matches!(&e.item, Item::ToolResult { ok: false, content, .. } if content.contains("not run: read_page was already called with these arguments 3 times and gave the same result each time")))
        .count();
    assert_eq!(blocked, 2);
    let calls = s
        .trajectory
        .iter()
        .filter(|e| matches!(e.item, Item::ToolCall { .. }))
        .count();
    let results = s
        .trajectory
        .iter()
        .filter(|e| matches!(e.item, Item::ToolResult { .. }))
        .count();
    assert_eq!(calls, results);
    // The answer came from the synthesis call that says why.
    let requests = out.llm.requests.borrow();
    let last = user_texts(requests.last().expect("synthesis"))
        .last()
        .copied()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with("You were stopped from repeating a tool call")
            && last.ends_with("\n\nThe question: What do plants do with light?"),
        "{last}"
    );
}

#[test]
fn after_the_loop_reflection_another_call_runs() {
    let mut replies = three_reads_and_a_fourth();
    replies.push(Reply::reflection("Same text.", "Read further on."));
    replies.push(Reply::tool(
        "read_page",
        r#"{"offset": 50, "max_chars": 50}"#,
    ));
    replies.push(control(false, Some("Sugar."), false));
    let out = run(replies, config());
    assert_eq!(executed_reads(&out), 4);
    assert_eq!(out.state.answer, "Sugar.");
    assert!(out.state.notices.is_empty());
}

#[test]
fn with_no_reflection_left_the_first_blocked_call_ends_the_run() {
    let mut replies = three_reads_and_a_fourth();
    replies.push(Reply::text("Plants make sugar."));
    let out = run(
        replies,
        RunConfig {
            max_retries: 0,
            ..config()
        },
    );
    assert_eq!(executed_reads(&out), 3);
    assert_eq!(out.state.notices, vec![NOTICE.to_string()]);
    assert!(reflections(&out.state).is_empty());
}

#[test]
fn observe_failed_triggers_reflection_and_the_retry() {
    let out = run(
        vec![
            Reply::tool("read_page", r#"{"offset": 0}"#),
            control(true, None, true),
            Reply::reflection(
                "The passage was about something else.",
                "Read later passages.",
            ),
            Reply::text("Plants make sugar."),
        ],
        config(),
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    let found = reflections(&out.state);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0.error_type, "judged_failed");
    // An observation that has the answer completes, failed or not.
    let done = run(
        vec![
            Reply::tool("read_page", r#"{"offset": 0}"#),
            control(false, Some("Sugar."), true),
        ],
        config(),
    );
    assert_eq!(done.state.answer, "Sugar.");
    assert!(reflections(&done.state).is_empty());
}

fn reflecting_state() -> SessionState {
    let mut s = SessionState::new("tab:7", 5);
    s.begin_run("q", None, RunConfig::default(), 5);
    s.step = 1;
    let call = ToolCall {
        id: "c".into(),
        name: "read_page".into(),
        arguments: "{}".into(),
    };
    s.next = Some(Next::Reflect {
        failure: Failure {
            call,
            error_type: "not_found".into(),
            error: "no page".into(),
        },
    });
    s.memory.store(Reflection {
        tool: "read_page".into(),
        arguments: "{}".into(),
        error_type: "not_found".into(),
        analysis: "a".into(),
        suggested_fix: "f".into(),
        fallback: true,
    });
    s.record(
        6,
        Item::Reflection {
            reflection: s.memory.reflections[0].clone(),
            alternative: false,
        },
    );
    s
}

#[test]
fn a_snapshot_during_the_phase_says_reflecting_and_the_step_is_a_reflection() {
    let s = reflecting_state();
    let view = SessionView::of(&s);
    assert_eq!(view.phase.as_deref(), Some("reflecting"));
    let step = &s.steps()[0];
    assert_eq!(step.kind, "reflection");
    assert_eq!(step.tool.as_deref(), Some("read_page"));
    assert_eq!(step.text, "not_found: a Suggested fix: f");
}

#[test]
fn the_new_phase_and_memory_save_and_load() {
    let store = MemoryStore::new();
    let mut s = reflecting_state();
    futures::executor::block_on(state::save(&store, &mut s)).expect("save");
    let loaded = futures::executor::block_on(state::load(&store, "tab:7"))
        .expect("load")
        .expect("present");
    assert_eq!(loaded, s);
}

#[test]
fn old_records_without_the_new_fields_load() {
    let mut s = SessionState::new("tab:7", 5);
    s.begin_run("q", None, RunConfig::default(), 5);
    s.record(
        6,
        Item::Observation {
            text: String::new(),
            should_continue: true,
            final_answer: None,
        },
    );
    let value = serde_json::to_value(&s).expect("serialize");
    assert!(value.get("memory").is_none(), "empty memory is not written");
    let loaded: SessionState = serde_json::from_value(value).expect("an old record loads");
    assert!(loaded.memory.is_empty());
    assert_eq!(loaded.next, Some(Next::Reason));
    // A reflection entry without its optional fields loads too.
    let entry = serde_json::json!({"reflection": {"reflection": {
        "tool": "t", "arguments": "{}", "error_type": "e", "analysis": "a", "suggested_fix": "f"
    }}});
    let item: Item = serde_json::from_value(entry).expect("loads");
    assert!(
        matches!(item, Item::Reflection { alternative: false, reflection } if !reflection.fallback)
    );
}

#[test]
fn a_new_run_keeps_the_memory() {
    let mut s = reflecting_state();
    s.memory.pending = Some(Failure {
        call: ToolCall {
            id: "x".into(),
            name: "read_page".into(),
            arguments: "{}".into(),
        },
        error_type: "timeout".into(),
        error: "slow".into(),
    });
    s.begin_run("again", None, RunConfig::default(), 9);
    assert_eq!(s.memory.reflections.len(), 1);
    assert_eq!(s.memory.count("not_found"), 1);
    assert!(s.memory.pending.is_none());
}

#[test]
fn memory_keeps_the_last_twenty_reflections() {
    let mut s = SessionState::new("tab:7", 5);
    for i in 0..25 {
        s.memory.store(Reflection {
            tool: "t".into(),
            arguments: i.to_string(),
            error_type: "e".into(),
            analysis: "a".into(),
            suggested_fix: "f".into(),
            fallback: false,
        });
    }
    assert_eq!(s.memory.reflections.len(), 20);
    assert_eq!(s.memory.reflections[0].arguments, "5");
    assert_eq!(s.memory.count("e"), 25);
}

#[test]
fn a_failure_among_a_replys_calls_is_reflected_on_after_the_last_of_them() {
    use knowledgelens::llm::ChatResponse;
    let calls = vec![
        ToolCall {
            id: "a".into(),
            name: "read_page".into(),
            arguments: r#"{"offset": "ten"}"#.into(),
        },
        ToolCall {
            id: "b".into(),
            name: "read_page".into(),
            arguments: r#"{"offset": 0}"#.into(),
        },
    ];
    let out = run(
        vec![
            Reply::Raw(ChatResponse {
                content: "Reading twice.".into(),
                tool_calls: calls,
                finish_reason: Some("tool_calls".into()),
                ..Default::default()
            }),
            Reply::reflection("Text offset.", "Give a number."),
            Reply::text("Plants make sugar."),
        ],
        config(),
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    let requests = out.llm.requests.borrow();
    let reflect = &requests[1];
    assert!(is_reflection_call(reflect));
    // The calls' message is followed by both results, then the instruction.
    let roles: Vec<Role> = reflect
        .messages
        .iter()
        .rev()
        .take(4)
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Tool, Role::Tool, Role::Assistant]);
    // The retry: both results, then the reflection's note (the last message).
    let retry = &requests[2];
    let roles: Vec<Role> = retry
        .messages
        .iter()
        .rev()
        .take(4)
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Tool, Role::Tool, Role::Assistant]);
    assert_eq!(reflections(&out.state)[0].0.error_type, "invalid_arguments");
}
