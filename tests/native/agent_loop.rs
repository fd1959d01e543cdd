//! The Reason -> Act -> Observe loop driven natively through its ports with scripted models
//! and a manual clock: the step contract, bounds, budget, stop, retries and events, plus
//! property tests of the loop (bounded steps, budget, events in order, stop, retries).

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, Usage};
use knowledgelens::ports::LlmClient;
use knowledgelens::state::{self, PageInfo, RunStatus, SessionState};
use knowledgelens::testing::{
    ManualClock, MemoryStore, RecordingSink, Reply, RequestKind, ScriptedLlm,
};
use knowledgelens::tools::ToolBox;
use proptest::prelude::*;
use std::future::Future;

struct Outcome {
    state: SessionState,
    llm: ScriptedLlm,
    sink: RecordingSink,
    store: MemoryStore,
    clock: std::rc::Rc<ManualClock>,
}

fn page() -> PageInfo {
    PageInfo {
        title: "Photosynthesis".into(),
        url: "http://127.0.0.1/article".into(),
        text: "Plants turn light into sugar. ".repeat(20),
        ..Default::default()
    }
}

fn run_with(
    replies: Vec<Reply>,
    config: RunConfig,
    stop: StopSignal,
    usage: Option<Usage>,
) -> Outcome {
    run_model(ScriptedLlm::new(replies), config, stop, usage)
}

fn run_model(
    llm: ScriptedLlm,
    config: RunConfig,
    stop: StopSignal,
    usage: Option<Usage>,
) -> Outcome {
    run_model_on(page(), llm, config, stop, usage)
}

fn run_model_on(
    page: PageInfo,
    llm: ScriptedLlm,
    config: RunConfig,
    stop: StopSignal,
    usage: Option<Usage>,
) -> Outcome {
    llm.usage.set(usage);
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("tab:7", 1_000);
    state.begin_run("What do plants do with light?", Some(page), config, 1_000);
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, stop);
        futures::executor::block_on(engine.drive(&mut state));
    }
    Outcome {
        state,
        llm,
        sink,
        store,
        clock,
    }
}

fn run(replies: Vec<Reply>) -> Outcome {
    run_with(replies, RunConfig::default(), StopSignal::new(), None)
}

fn control(go: bool, answer: Option<&str>) -> Reply {
    Reply::text(serde_json::json!({"should_continue": go, "final_answer": answer}).to_string())
}

#[test]
fn prose_only_model_finishes_in_one_call() {
    let out = run(vec![Reply::text("Plants make sugar from light.")]);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, "Plants make sugar from light.");
    assert!(!out.state.partial);
    assert_eq!(out.llm.calls(), 1);
    assert_eq!(
        out.sink.names(),
        [
            "run_started",
            "step_started",
            "thinking",
            "answer_delta",
            "answer_delta",
            "answer_delta",
            "answer_delta",
            "answer_delta",
            "step_item",
            "step_item",
            "completed"
        ]
    );
}

#[test]
fn tool_step_then_observation_with_final_answer() {
    // A page longer than the excerpt: the first request shows its start and offers the
    // tools that read the rest.
    let config = RunConfig {
        page_excerpt_chars: 200,
        ..RunConfig::default()
    };
    let out = run_with(
        vec![
            Reply::tool("read_page", r#"{"offset": 0}"#),
            control(false, Some("They make sugar.")),
        ],
        config,
        StopSignal::new(),
        None,
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, "They make sugar.");
    assert_eq!(out.llm.calls(), 2);
    let kinds: Vec<&str> = out
        .state
        .trajectory
        .iter()
        .map(|e| item_name(&e.item))
        .collect();
    assert_eq!(
        kinds,
        [
            "thought",
            "tool_call",
            "tool_result",
            "observation",
            "answer"
        ]
    );
    let Item::ToolResult { ok, content, .. } = &out.state.trajectory[2].item else {
        panic!("tool result expected")
    };
    assert!(ok);
    assert!(
        content.contains("Plants turn light into sugar"),
        "{content}"
    );
    // The Reason call offered the tool that finds more of a cut page, request_input and the
    // summary (not read_page, whose call still runs: the run has it); the Observe call asked
    // for the control block.
    let requests = out.llm.requests.borrow();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        offered,
        ["query_page", "request_input", "summarize_page_content"]
    );
    assert!(requests[1].tools.is_empty() && requests[1].response_format.is_some());
    // The observe prompt carries the tool result.
    assert!(requests[1]
        .messages
        .iter()
        .any(|m| m.tool_call_id.is_some() && m.content.contains("Plants turn light")));
    let names = out.sink.names();
    for phase in ["executing", "tool_completed", "analyzing", "answer_reset"] {
        assert!(names.contains(&phase), "{phase} missing from {names:?}");
    }
}

/// What a run on `page` cut to `chars` characters did with `replies`: the names of
/// its trajectory items, its query_page calls' arguments, and the outcome.
fn cut_page_run(
    page: PageInfo,
    chars: usize,
    replies: Vec<Reply>,
) -> (Outcome, Vec<&'static str>, Vec<String>) {
    let config = RunConfig {
        page_excerpt_chars: chars,
        ..RunConfig::default()
    };
    let out = run_model_on(
        page,
        ScriptedLlm::new(replies),
        config,
        StopSignal::new(),
        None,
    );
    let kinds = out
        .state
        .trajectory
        .iter()
        .map(|e| item_name(&e.item))
        .collect();
    let queries = out
        .state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolCall { call } if call.name == "query_page" => Some(call.arguments.clone()),
            _ => None,
        })
        .collect();
    (out, kinds, queries)
}

/// A page of 11 passages of about 600 characters, whose first one answers the question.
fn page_with_answer_first() -> PageInfo {
    let filler = "Roots take up water and salts from the soil. They grow towards moisture. ";
    let mut text = format!("Plants turn light into sugar. {}\n\n", filler.repeat(7));
    for i in 0..10 {
        text.push_str(&format!("Part {i}. {}\n\n", filler.repeat(8)));
    }
    PageInfo { text, ..page() }
}

#[test]
fn a_question_whose_best_passage_did_not_fit_gets_the_page_searched_before_the_answer() {
    // The page is one passage of 600 characters: a 200-character excerpt cannot hold it.
    for first in ["The page does not say.", "They make sugar."] {
        let (out, kinds, queries) = cut_page_run(
            page(),
            200,
            vec![Reply::text(first), Reply::text("They turn it into sugar.")],
        );
        assert_eq!(out.state.status, RunStatus::Completed);
        assert_eq!(out.state.answer, "They turn it into sugar.");
        assert_eq!(out.llm.calls(), 2);
        // The model's reply, why the run goes on, the call with the question, its result,
        // then the answer of a Synthesis request (no Observe: the call was the run's).
        assert_eq!(
            kinds,
            ["thought", "thought", "tool_call", "tool_result", "answer"]
        );
        assert_eq!(queries, [r#"{"query":"What do plants do with light?"}"#]);
        let Item::Thought { text, derived } = &out.state.trajectory[0].item else {
            panic!("the model's reply first")
        };
        assert_eq!((text.as_str(), *derived), (first, false));
        let Item::ToolResult { ok, content, .. } = &out.state.trajectory[3].item else {
            panic!("the result")
        };
        assert!(
            *ok && content.contains("Plants turn light into sugar"),
            "{content}"
        );
        // The streamed first answer was taken back before the call.
        let names = out.sink.names();
        let reset = names.iter().position(|n| *n == "answer_reset");
        let executing = names.iter().position(|n| *n == "executing");
        assert!(reset.is_some() && reset < executing, "{names:?}");
        // The Synthesis request holds the result, not the model's first answer as what it
        // said.
        let requests = out.llm.requests.borrow();
        assert_eq!(RequestKind::of(&requests[1]), RequestKind::Synthesis);
        let call = requests[1]
            .messages
            .iter()
            .find(|m| !m.tool_calls.is_empty())
            .expect("the call's assistant message");
        assert_eq!(call.content, "");
    }
}

#[test]
fn the_page_is_searched_once_and_not_when_the_best_passage_was_given() {
    // After the run searched the page itself, the next answer ends the run.
    let (out, _, queries) = cut_page_run(
        page(),
        200,
        vec![
            Reply::text("The page does not say."),
            Reply::text("The page does not say."),
        ],
    );
    assert_eq!(out.state.answer, "The page does not say.");
    assert_eq!((out.llm.calls(), queries.len()), (2, 1));
    // The model searched the page first: its answer after that stands.
    let (out, _, queries) = cut_page_run(
        page(),
        200,
        vec![
            Reply::tool("query_page", r#"{"query": "light"}"#),
            control(true, None),
            Reply::text("The page does not say."),
        ],
    );
    assert_eq!(out.state.answer, "The page does not say.");
    assert_eq!((out.llm.calls(), queries.len()), (3, 1));
    // The passage that answers was in the first request: whatever the model says stands.
    for answer in ["The page does not say.", "They turn light into sugar."] {
        let (out, kinds, queries) =
            cut_page_run(page_with_answer_first(), 2_000, vec![Reply::text(answer)]);
        assert!(out.state.page_coverage().is_some(), "the page was cut");
        assert_eq!(out.state.answer, answer);
        assert_eq!(
            (out.llm.calls(), kinds, queries.len()),
            (1, vec!["thought", "answer"], 0)
        );
    }
    // A page shown whole has nothing more to search.
    let out = run(vec![Reply::text("The page does not say.")]);
    assert_eq!(out.state.answer, "The page does not say.");
    assert_eq!(out.llm.calls(), 1);
}

#[test]
fn a_summary_the_same_as_an_earlier_one_is_not_made_again() {
    // A page longer than the excerpt, summarized section by section (one model call per
    // section, then one to merge); the model asks for the summary a second time.
    let config = RunConfig {
        page_excerpt_chars: 200,
        ..RunConfig::default()
    };
    let llm = ScriptedLlm::new(vec![
        Reply::tool("summarize_page_content", r#"{"reasoning": "overview"}"#),
        Reply::text("Plants make sugar from light."),
        control(true, None),
        Reply::tool(
            "summarize_page_content",
            r#"{"reasoning": "overview again"}"#,
        ),
        control(false, Some("They make sugar.")),
    ]);
    let out = run_model(llm, config, StopSignal::new(), None);
    assert_eq!(
        out.state.status,
        RunStatus::Completed,
        "{:?}",
        out.state.error
    );
    assert_eq!(out.state.answer, "They make sugar.");
    let results: Vec<&str> = out
        .state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolResult {
                ok: true, content, ..
            } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(
        results[1],
        knowledgelens::agent::step::reflect::reflexion::same_as_before_text(
            "summarize_page_content"
        )
    );
    // Five model calls: the scripted model fails on a sixth (a second summary).
    assert_eq!(out.llm.calls(), 5);
}

#[test]
fn an_observation_with_a_final_answer_ends_the_run_even_when_it_says_continue() {
    // Small models set both; the instruction asks for a final answer only when the model
    // can answer now. (The scripted model fails on a third call.)
    let out = run(vec![
        Reply::tool("read_page", r#"{"offset": 0}"#),
        Reply::text(
            r#"{"should_continue": true, "final_answer": "They make sugar.", "failed": false}"#,
        ),
    ]);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, "They make sugar.");
    assert_eq!(out.llm.calls(), 2);
}

#[test]
fn a_page_shown_whole_gets_no_page_tools() {
    // The whole page is in the request: nothing more to read, and a question about what
    // the user sees needs no question back: no tools (nor their tokens) at all.
    let out = run(vec![Reply::text("They make sugar [p1].")]);
    assert_eq!(out.state.status, RunStatus::Completed);
    let requests = out.llm.requests.borrow();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, Vec::<&str>::new());
    assert!(!requests[0].messages[0]
        .content
        .contains("query_page to find"));
}

#[test]
fn malformed_control_block_means_continue_and_step_bound_synthesizes() {
    let config = RunConfig {
        max_steps: 2,
        ..RunConfig::default()
    };
    let replies = vec![
        Reply::tool("read_page", "{}"),
        Reply::text("I am not sure yet"),
        Reply::tool("read_page", r#"{"offset": 100}"#),
        control(true, None),
        Reply::text("Best effort: sugar."),
    ];
    let out = run_with(replies, config, StopSignal::new(), None);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(out.state.partial, "a bound-reached answer is partial");
    assert_eq!(out.state.answer, "Best effort: sugar.");
    assert_eq!(out.state.step, 2);
    assert_eq!(out.llm.calls(), 5, "2 x max_steps + 1");
    assert!(out.sink.names().contains(&"synthesizing"));
    assert_eq!(out.llm.remaining(), 0);
}

#[test]
fn invalid_tool_arguments_go_back_to_the_model() {
    let out = run(vec![
        Reply::tool("read_page", r#"{"offset": "ten"}"#),
        Reply::reflection("The offset was not a number.", "Give a number."),
        control(false, Some("ok")),
    ]);
    let Item::ToolResult { ok, content, .. } = &out.state.trajectory[2].item else {
        panic!()
    };
    assert!(!ok);
    assert!(
        content.starts_with("Error: field \"offset\": invalid type"),
        "{content}"
    );
    assert!(out.sink.names().contains(&"tool_failed"));
    assert_eq!(out.state.status, RunStatus::Completed);
}

#[test]
fn rate_limit_then_server_error_recovers_with_backoff() {
    let mut limited = LlmError::new(LlmErrorKind::RateLimited, "429");
    limited.retry_after_ms = Some(2_000);
    let out = run(vec![
        Reply::Fail(limited),
        Reply::status(500),
        Reply::text("Recovered answer."),
    ]);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, "Recovered answer.");
    let sleeps = out.clock.sleeps.borrow();
    assert_eq!(sleeps.len(), 2);
    assert_eq!(sleeps[0], 2_000, "Retry-After is honoured");
    assert!(
        (500..=1_000).contains(&sleeps[1]),
        "second backoff with jitter: {}",
        sleeps[1]
    );
    let errors = out
        .state
        .trajectory
        .iter()
        .filter(|e| matches!(e.item, Item::Error { retrying: true, .. }))
        .count();
    assert_eq!(errors, 2);
}

#[test]
fn retries_are_bounded_then_the_run_fails_with_a_clear_message() {
    let out = run((0..4).map(|_| Reply::status(503)).collect());
    assert_eq!(out.state.status, RunStatus::Failed);
    assert_eq!(out.llm.calls(), 4, "max_retries 3 => 4 attempts");
    let error = out.state.error.as_ref().expect("error");
    assert_eq!(error.kind, "server");
    assert!(
        error.message.contains("Gave up after 4 attempts"),
        "{}",
        error.message
    );
    assert_eq!(out.sink.names().last(), Some(&"failed"));
}

#[test]
fn auth_errors_fail_fast() {
    let out = run(vec![Reply::status(401)]);
    assert_eq!(out.state.status, RunStatus::Failed);
    assert_eq!(out.llm.calls(), 1);
    assert_eq!(
        out.state.error.as_ref().map(|e| e.kind.name()),
        Some("auth")
    );
    assert!(out.clock.sleeps.borrow().is_empty());
}

#[test]
fn stop_before_start_synthesizes_a_stopped_answer() {
    let stop = StopSignal::new();
    stop.raise();
    let out = run_with(
        vec![Reply::text("Partial: sugar.")],
        RunConfig::default(),
        stop,
        None,
    );
    assert_eq!(out.state.status, RunStatus::Stopped);
    assert_eq!(out.state.answer, "Partial: sugar.");
    assert!(out.sink.names().contains(&"stopped"));
    assert!(out.llm.requests.borrow()[0]
        .messages
        .last()
        .expect("msg")
        .content
        .contains("asked you to stop"));
}

#[test]
fn budget_exhaustion_ends_with_best_partial_and_a_warning() {
    let config = RunConfig {
        token_budget: 3_000,
        ..RunConfig::default()
    };
    let usage = Some(Usage::new(1_200, 400));
    let replies = vec![
        Reply::tool("read_page", "{}"),
        Reply::text("Observation: plants make sugar, need more."),
    ];
    let out = run_with(replies, config, StopSignal::new(), usage);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(out.state.partial);
    assert_eq!(
        out.state.answer,
        "Observation: plants make sugar, need more."
    );
    assert_eq!(out.llm.calls(), 2, "the third call would exceed the budget");
    let names = out.sink.names();
    assert_eq!(names.iter().filter(|n| **n == "budget_warning").count(), 1);
    assert!(
        out.state.notices.iter().any(|n| n.contains("token budget")),
        "{:?}",
        out.state.notices
    );
}

#[test]
fn state_is_saved_after_every_phase_and_loads_back() {
    let out = run(vec![
        Reply::tool("read_page", "{}"),
        Reply::reflection("There is no page.", "Answer from general knowledge."),
        control(false, Some("Sugar.")),
    ]);
    assert!(
        out.store.sets.get() >= 3,
        "saved after reason, act and observe: {}",
        out.store.sets.get()
    );
    let loaded = futures::executor::block_on(state::load(&out.store, "tab:7"))
        .expect("load")
        .expect("present");
    assert_eq!(loaded, out.state);
}

#[test]
fn storage_failure_warns_once_and_the_run_goes_on() {
    let llm = ScriptedLlm::new(vec![
        Reply::tool("read_page", "{}"),
        Reply::reflection("There is no page.", "Answer from general knowledge."),
        control(false, Some("Sugar.")),
    ]);
    let clock = ManualClock::new(0);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    for _ in 0..10 {
        store
            .fail_sets
            .borrow_mut()
            .push_back(knowledgelens::ports::StoreError::Unavailable(
                "denied".into(),
            ));
    }
    let mut state = SessionState::new("popup", 0);
    state.begin_run("q", None, RunConfig::default(), 0);
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new()).drive(&mut state),
    );
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(sink.names().iter().filter(|n| **n == "notice").count(), 1);
}

#[test]
fn truncated_reply_is_a_partial_answer() {
    let reply = ChatResponse {
        content: "Plants make".into(),
        finish_reason: Some("length".into()),
        ..Default::default()
    };
    let out = run(vec![Reply::Raw(reply)]);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(out.state.partial);
}

fn item_name(item: &Item) -> &'static str {
    match item {
        Item::Thought { .. } => "thought",
        Item::ToolCall { .. } => "tool_call",
        Item::ToolResult { .. } => "tool_result",
        Item::Observation { .. } => "observation",
        Item::Error { .. } => "error",
        Item::Reflection { .. } => "reflection",
        Item::Answer { .. } => "answer",
        Item::Compaction { .. } => "compaction",
        Item::Search { .. } => "search",
        Item::Grades { .. } => "grades",
        Item::Rewrite { .. } => "rewrite",
        Item::SearchFallback { .. } => "search_fallback",
        Item::SectionSummary { .. } => "section_summary",
        Item::Phase { .. } => "phase",
    }
}

fn arb_reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        3 => "[a-z ]{0,30}".prop_map(Reply::Text),
        3 => (0usize..300).prop_map(|o| Reply::tool("read_page", &format!("{{\"offset\": {o}}}"))),
        1 => Just(Reply::tool("read_page", "{not json")),
        1 => Just(Reply::tool("no_such_tool", "{}")),
        2 => (any::<bool>(), proptest::option::of("[a-z]{1,10}")).prop_map(|(go, a)| control(go, a.as_deref())),
        1 => Just(Reply::text("```json\n{\"should_continue\": false, \"final_answer\": \"fenced\"}\n```")),
        1 => prop_oneof![Just(429u16), Just(500), Just(503), Just(401), Just(404), Just(400)].prop_map(Reply::status),
        1 => Just(Reply::Fail(LlmError::new(LlmErrorKind::Network, "refused"))),
        1 => Just(Reply::Fail(LlmError::new(LlmErrorKind::Timeout, "slow"))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Properties 1, 2, 3, 13 and 17 over arbitrary scripts.
    #[test]
    fn any_script_respects_bounds_and_records_everything(
        replies in proptest::collection::vec(arb_reply(), 0..30),
        max_steps in 1u32..7,
        max_retries in 0u32..4,
    ) {
        let config = RunConfig { max_steps, max_retries, ..RunConfig::default() };
        // Lenient: a random script may run out (the run then sees a BadRequest) or outlast the run.
        let out = run_model(ScriptedLlm::new(replies).lenient(), config, StopSignal::new(), None);
        let s = &out.state;
        // The run always ends.
        prop_assert_ne!(s.status, RunStatus::Running);
        // Property 1: steps and attempts are bounded.
        prop_assert!(s.step <= max_steps);
        let per_call = max_retries + 1;
        // Reflection calls (at most max_retries per run) are never retried.
        prop_assert!(out.llm.calls() as u32 <= (2 * max_steps + 1) * per_call + max_retries, "calls {}", out.llm.calls());
        let mut consecutive = 0;
        let mut step = 0;
        for e in &s.trajectory {
            if step != e.step { step = e.step; consecutive = 0; }
            // Failed attempts of one call follow each other; an empty reply is a separate event.
            if let Item::Error { retrying, ref error } = e.item {
                if error.kind == "empty_reply" {
                    consecutive = 0;
                    continue;
                }
                consecutive += 1;
                if retrying { prop_assert!(consecutive <= max_retries, "{} retries in one step", consecutive); }
            } else {
                consecutive = 0;
            }
        }
        // Property 2: a thought precedes every tool call, in the same step.
        for (i, e) in s.trajectory.iter().enumerate() {
            if let Item::ToolCall { .. } = e.item {
                prop_assert!(i > 0);
                let prev = &s.trajectory[i - 1];
                let thought_first = matches!(prev.item, Item::Thought { .. }) && prev.step == e.step;
                prop_assert!(thought_first, "no thought before a tool call");
            }
        }
        // Property 3: an observation (or, after a failure, a reflection) follows every tool
        // result unless the run ended there.
        for (i, e) in s.trajectory.iter().enumerate() {
            if let Item::ToolResult { .. } = e.item {
                let rest: Vec<&Item> = s.trajectory[i + 1..].iter().map(|e| &e.item).filter(|it| !matches!(it, Item::Error { .. })).collect();
                let observed = matches!(rest.first(), Some(Item::Observation { .. } | Item::Reflection { .. }));
                let ended_here = rest.iter().all(|it| matches!(it, Item::Answer { .. }));
                prop_assert!(observed || ended_here, "tool result not observed: {:?}", rest);
            }
        }
        // Property 13: every entry has a step in range and time never goes back.
        let mut last = 0;
        for e in &s.trajectory {
            prop_assert!(e.step >= 1 && e.step <= max_steps);
            prop_assert!(e.at_ms >= last);
            last = e.at_ms;
        }
        let calls = s.trajectory.iter().filter(|e| matches!(e.item, Item::ToolCall { .. })).count();
        let results = s.trajectory.iter().filter(|e| matches!(e.item, Item::ToolResult { .. })).count();
        prop_assert_eq!(calls, results);
        // Property 17: every phase emitted its event, and exactly one terminal event ends the stream.
        let names = out.sink.names();
        let count = |n: &str| names.iter().filter(|x| **x == n).count();
        let thoughts = s.trajectory.iter().filter(|e| matches!(e.item, Item::Thought { .. })).count();
        let observations = s.trajectory.iter().filter(|e| matches!(e.item, Item::Observation { .. })).count();
        prop_assert!(count("thinking") >= thoughts);
        // A call stopped as a loop is not executed.
        let blocked = s.trajectory.iter().filter(|e| matches!(&e.item, Item::ToolResult { content, .. } if content.contains("was already called with these arguments"))).count();
        prop_assert_eq!(count("executing") + blocked, results);
        prop_assert_eq!(count("tool_completed") + count("tool_failed"), results);
        prop_assert!(count("analyzing") >= observations);
        prop_assert_eq!(count("step_started") as u32, s.step);
        prop_assert_eq!(count("completed") + count("failed") + count("stopped"), 1);
        let last_name = *names.last().expect("events");
        prop_assert!(["completed", "failed", "stopped"].contains(&last_name));
        prop_assert_eq!(names[0], "run_started");
        // The saved state is the final state.
        let saved = futures::executor::block_on(state::load(&out.store, "tab:7")).expect("load").expect("saved");
        prop_assert_eq!(&saved, s);
    }

    /// Property 15: once the budget is used up no further call is made, and the run ends
    /// with the best available result.
    #[test]
    fn budget_is_enforced(
        replies in proptest::collection::vec(arb_reply(), 1..20),
        budget in 1_000u64..12_000,
        per_call in 200u64..3_000,
    ) {
        let config = RunConfig { token_budget: budget, max_retries: 1, ..RunConfig::default() };
        // Lenient: a random script may run out (the run then sees a BadRequest) or outlast the run.
        let usage = Some(Usage::new(per_call, per_call / 4));
        let out = run_model(ScriptedLlm::new(replies).lenient(), config, StopSignal::new(), usage);
        let s = &out.state;
        prop_assert_ne!(s.status, RunStatus::Running);
        let spent_per_call = per_call + per_call / 4;
        // Every call was allowed by the pre-call check, so at most one call overshoots.
        prop_assert!(s.tokens_used() <= budget + spent_per_call, "used {} of {}", s.tokens_used(), budget);
        // A run the budget cut short says so and ends partial with the best it had.
        let cut_short = s.notices.iter().any(|n| n.contains("token budget"));
        if cut_short {
            prop_assert!(s.partial && s.status == RunStatus::Completed);
        }
        // Nothing was spent after the budget was reached: the usage before the last call was
        // under the budget.
        if out.llm.calls() > 0 {
            prop_assert!(s.tokens_used().saturating_sub(spent_per_call) < budget);
        }
        let warned = out.sink.names().iter().filter(|n| **n == "budget_warning").count();
        prop_assert!(warned <= 1);
        prop_assert_eq!(warned == 1, s.budget_warned);
        // The warning comes with the call that reached 80% of the budget: not before (the
        // usage before that call was under it), not later, and not at all when the run never
        // reached it.
        let threshold = budget * 8 / 10;
        let warning = out.sink.events.borrow().iter().find_map(|e| match &e.event.kind {
            knowledgelens::types::events::EventKind::BudgetWarning { used, budget: b } => Some((*used, *b)),
            _ => None,
        });
        match warning {
            Some((used, b)) => {
                prop_assert_eq!(b, budget);
                prop_assert!(used >= threshold && used < threshold + spent_per_call, "warned at {} of {}", used, budget);
            }
            None => prop_assert!(s.tokens_used() < threshold, "used {} of {} without a warning", s.tokens_used(), budget),
        }
    }
}

#[test]
fn stop_abandons_a_hung_model_call_then_synthesizes() {
    // A hung server: the first call streams nothing and never answers.
    let llm = HungMidAnswer(std::cell::Cell::new(0), &[]);
    let (state, sink, _) = stopped_mid_call(&llm);
    assert_eq!(state.status, RunStatus::Stopped);
    assert_eq!(state.answer, "Synthesized.");
    assert_eq!(llm.0.get(), 2);
    let names = sink.names();
    assert!(
        names.contains(&"synthesizing") && names.last() == Some(&"stopped"),
        "{names:?}"
    );
}

/// A model whose first call streams `deltas`, then hangs; later calls answer "Synthesized.".
struct HungMidAnswer(std::cell::Cell<usize>, &'static [&'static str]);

impl LlmClient for HungMidAnswer {
    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> futures::future::LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.0.set(self.0.get() + 1);
        if self.0.get() > 1 {
            on_delta("Synthesized.");
            return Box::pin(futures::future::ready(Ok(ChatResponse {
                content: "Synthesized.".into(),
                ..Default::default()
            })));
        }
        for delta in self.1 {
            on_delta(delta);
        }
        Box::pin(futures::future::pending())
    }
}

/// Drives a run on `llm` on `page()`, raising Stop once its first call hangs.
fn stopped_mid_call(llm: &HungMidAnswer) -> (SessionState, RecordingSink, MemoryStore) {
    let clock = ManualClock::new(0);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let stop = StopSignal::new();
    let mut state = SessionState::new("popup", 0);
    state.begin_run(
        "What do plants do with light?",
        Some(page()),
        RunConfig::default(),
        0,
    );
    {
        let engine = Engine::new(llm, &clock, &sink, &store, &tools, stop.clone());
        let mut fut = Box::pin(engine.drive(&mut state));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(fut.as_mut().poll(&mut cx).is_pending(), "the call hangs");
        stop.raise();
        assert!(fut.as_mut().poll(&mut cx).is_ready(), "stop ends the run");
    }
    (state, sink, store)
}

#[test]
fn stop_while_a_tool_call_is_written_as_text_synthesizes_the_answer() {
    // Streamed text that begins a call (a model without native tool calls) is no answer.
    let llm = HungMidAnswer(
        std::cell::Cell::new(0),
        &[r#"{"name": "query_page", "#, r#""arguments": {"query": "#],
    );
    let (state, sink, _) = stopped_mid_call(&llm);
    assert_eq!(state.status, RunStatus::Stopped);
    assert_eq!(state.answer, "Synthesized.");
    assert_eq!(llm.0.get(), 2);
    assert!(sink.names().contains(&"answer_reset"), "{:?}", sink.names());
}

#[test]
fn stop_while_the_answer_is_written_ends_the_run_with_the_text_so_far() {
    // Before, the call was abandoned, the text reset, and a synthesis call made that ran to
    // its end (up to 300 s). Now the run ends at once with what the user saw.
    let llm = HungMidAnswer(
        std::cell::Cell::new(0),
        &["Plants make sugar ", "from light"],
    );
    let (state, sink, store) = stopped_mid_call(&llm);
    assert_eq!(state.status, RunStatus::Stopped);
    assert_eq!(state.answer, "Plants make sugar from light");
    assert!(state.partial);
    assert_eq!(llm.0.get(), 1, "no call after Stop");
    let names = sink.names();
    assert!(
        !names.contains(&"synthesizing") && !names.contains(&"answer_reset"),
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"stopped"));
    // And it is saved so.
    let saved = futures::executor::block_on(state::load(&store, "popup"))
        .expect("load")
        .expect("saved");
    assert_eq!(saved.answer, state.answer);
}

#[test]
fn an_answer_that_names_what_the_page_does_not_is_replaced_by_the_abstain_phrase() {
    // The model guessed a name and a year the page does not hold.
    let guess = "Plants turn light into sugar, as Jan Ingenhousz showed in 1779 [p1].";
    let out = run(vec![Reply::text(guess)]);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(out.state.answer, knowledgelens::agent::prompts::ABSTAIN);
    // The model's answer is in the Steps view, with the terms the page lacks.
    let note = out
        .state
        .trajectory
        .iter()
        .find_map(|e| match &e.item {
            Item::Thought {
                text,
                derived: true,
            } => Some(text.clone()),
            _ => None,
        })
        .expect("a note in the steps");
    assert!(
        note.starts_with(
            "The answer named \"Jan\", \"Ingenhousz\" and \"1779\" and the page does not"
        ),
        "{note}"
    );
    assert!(note.ends_with(guess), "{note}");
    // An answer in the page's own terms is given as it is.
    let out = run(vec![Reply::text("Plants turn light into sugar [p1].")]);
    assert_eq!(out.state.answer, "Plants turn light into sugar [p1].");
    assert!(!out
        .state
        .trajectory
        .iter()
        .any(|e| matches!(e.item, Item::Thought { derived: true, .. })));
}
