//! The context manager: every request fits the model's window with a
//! 10% margin; the older history is compacted (by the model, else the deterministic
//! fallback) with the grounding kept; a provider's "too long" answer compacts and retries
//! once. Properties: no request exceeds the window over arbitrary sessions and windows from
//! 2,048 to 200,000 tokens; property 10 (a compaction of a context whose older entries are
//! at least 40% of it cuts it by at least 20%); property 11 (goal, key decisions and user
//! preferences are identical before and after). The model doubles answer by request kind
//! and panic on a kind the test did not expect.

use knowledgelens::agent::context::{self, Fit};
use knowledgelens::agent::prompts;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, LlmError, LlmErrorKind, Role, ToolCall};
use knowledgelens::settings::Settings;
use knowledgelens::state::{Next, PageInfo, RunStatus, SessionState, Turn};
use knowledgelens::testing::{
    ManualClock, MemoryStore, RecordingSink, Reply, RequestKind, ResponderLlm,
};
use knowledgelens::tools::ToolBox;
use proptest::prelude::*;

/// Words of a readable page or answer, `n` characters or so.
fn prose(seed: usize, n: usize) -> String {
    const WORDS: [&str; 12] = [
        "canal", "lock", "barge", "water", "engineer", "1790", "trade", "stone", "valley", "route",
        "toll", "mill",
    ];
    let mut out = String::with_capacity(n + 16);
    let mut i = seed;
    while out.len() < n {
        out.push_str(WORDS[i % WORDS.len()]);
        out.push(if i % 11 == 0 { '.' } else { ' ' });
        if i % 11 == 0 {
            out.push(' ');
        }
        i = i.wrapping_mul(7).wrapping_add(3);
    }
    out
}

/// A session on a page of `page_chars`, with `turns` earlier questions answered in
/// `answer_chars` each, and the current run `steps` steps in, each a read_page call with a
/// result of `result_chars` and an observation that asked for more.
#[derive(Debug, Clone)]
struct Session {
    window: u32,
    page_chars: usize,
    turns: usize,
    answer_chars: usize,
    steps: u32,
    result_chars: usize,
}

impl From<(u32, usize, usize, usize, u32, usize)> for Session {
    fn from(
        (window, page_chars, turns, answer_chars, steps, result_chars): (
            u32,
            usize,
            usize,
            usize,
            u32,
            usize,
        ),
    ) -> Self {
        Self {
            window,
            page_chars,
            turns,
            answer_chars,
            steps,
            result_chars,
        }
    }
}

fn session(s: &Session) -> SessionState {
    // A budget that never ends these runs: the window is what is tested.
    let settings = Settings {
        context_window: s.window,
        token_budget: 10_000_000,
        ..Settings::default()
    };
    let mut state = SessionState::new("tab:3", 1_000);
    let page = PageInfo {
        title: "Canals of the valley".into(),
        url: "http://127.0.0.1/canals".into(),
        text: prose(1, s.page_chars),
        ..Default::default()
    };
    state.begin_run(
        "When was the first lock built?",
        Some(page),
        settings.run_config(None),
        1_000,
    );
    state.turns = (0..s.turns)
        .map(|i| Turn {
            question: format!("Question {i} about the canal's {}?", prose(i, 40)),
            answer: prose(i + 5, s.answer_chars),
            status: RunStatus::Completed,
            explain: false,
            ..Default::default()
        })
        .collect();
    for step in 1..=s.steps {
        state.step = step;
        let call = ToolCall {
            id: format!("c{step}"),
            name: "read_page".into(),
            arguments: format!("{{\"offset\": {}}}", step * 100),
        };
        state.record(1_000, Item::thought(format!("Reading more, part {step}.")));
        state.record(1_000, Item::ToolCall { call: call.clone() });
        state.record(
            1_000,
            Item::ToolResult {
                call_id: call.id,
                name: call.name,
                ok: true,
                content: format!("[p{step}] {}", prose(step as usize, s.result_chars)),
            },
        );
        state.record(
            1_000,
            Item::Observation {
                text: String::new(),
                should_continue: true,
                final_answer: None,
            },
        );
    }
    state
}

/// Answers by kind: Reason reads the page once then answers, Observe asks for more,
/// compaction summarises, synthesis answers. Anything else fails the test.
fn responder(request: &ChatRequest, n: usize) -> Reply {
    match RequestKind::of(request) {
        RequestKind::Reason if n == 1 => Reply::tool("read_page", "{\"offset\": 0}"),
        RequestKind::Reason => Reply::text("The first lock was built in 1790."),
        RequestKind::Observe => Reply::text(r#"{"should_continue": true, "final_answer": null}"#),
        RequestKind::Compaction => Reply::text(
            r#"{"summary": "The user asked about the canal's locks, trade and tolls; the answers gave dates from 1790."}"#,
        ),
        RequestKind::Synthesis => Reply::text("The first lock was built in 1790."),
        // Without page text read_page fails, and the run reflects on it.
        RequestKind::Reflection => Reply::reflection(
            "There is no page text to read.",
            "Answer from what the conversation has.",
        ),
        other => panic!("unexpected request kind {other:?}"),
    }
}

fn drive<F: Fn(&ChatRequest, usize) -> Reply>(
    llm: &ResponderLlm<F>,
    state: &mut SessionState,
) -> RecordingSink {
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    {
        let engine = Engine::new(llm, &clock, &sink, &store, &tools, StopSignal::new());
        futures::executor::block_on(engine.drive(state));
    }
    sink
}

fn arb_session() -> impl Strategy<Value = Session> {
    (
        prop_oneof![Just(2_048u32), Just(4_096), Just(8_192), 2_048u32..=200_000],
        prop_oneof![Just(0usize), 100usize..200_000],
        0usize..14,
        0usize..9_000,
        0u32..4,
        0usize..24_000,
    )
        .prop_map(Session::from)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every request of a run fits the window minus the margin, whatever the conversation,
    /// the page, the tool results and the window; and the run answers.
    #[test]
    fn no_request_exceeds_the_window(s in arb_session()) {
        let mut state = session(&s);
        let limit = context::limit(&state).expect("a known window");
        prop_assert_eq!(limit, u64::from(s.window) * 9 / 10);
        let llm = ResponderLlm::new(responder);
        drive(&llm, &mut state);
        for (i, request) in llm.requests.borrow().iter().enumerate() {
            let tokens = context::request_tokens(request);
            prop_assert!(tokens <= limit, "request {} takes {} of {} tokens", i + 1, tokens, limit);
        }
        prop_assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
        prop_assert!(state.answer.contains("1790"));
    }
}

/// A session whose older history is at least `MIN_OLDER_SHARE_PCT` of its context (and at
/// least 1,000 tokens), about to compact; `None` when `s` does not give one.
fn compactable(s: &Session) -> Option<SessionState> {
    let mut state = session(s);
    let older = context::older(&state)?;
    let before = prompts::context_tokens(&state).ok()?;
    let mut without = state.clone();
    without.compact.compaction = Some(context::compacted(&state, older, String::new(), false));
    let older_tokens = before.saturating_sub(prompts::context_tokens(&without).ok()?);
    if before < 1_000 || older_tokens * 100 < before * context::MIN_OLDER_SHARE_PCT {
        return None;
    }
    state.next = Some(Next::Compact {
        resume: Box::new(Next::Reason),
        resume_attempts: 0,
    });
    Some(state)
}

/// How the compaction call goes.
#[derive(Debug, Clone)]
enum Summary {
    Good,
    TooLong,
    Garbage,
    Fails,
}

fn compaction_responder(summary: Summary) -> impl Fn(&ChatRequest, usize) -> Reply {
    move |request, _| match RequestKind::of(request) {
        RequestKind::Compaction => match &summary {
            Summary::Good => {
                Reply::text(r#"{"summary": "Locks were built from 1790; tolls paid for them."}"#)
            }
            Summary::TooLong => Reply::text(format!(
                "{{\"summary\": \"{}\"}}",
                prose(3, context::MAX_SUMMARY_CHARS)
            )),
            Summary::Garbage => Reply::text("{\"summary\": 42}"),
            Summary::Fails => Reply::Fail(LlmError::new(LlmErrorKind::Server, "HTTP 500")),
        },
        // The answer comes from a Reason request, or, when the passage that best matches the
        // question did not fit the first request, from the synthesis after the engine's own
        // `query_page` (`agent::step::further`).
        RequestKind::Reason | RequestKind::Synthesis => {
            Reply::text("The first lock was built in 1790.")
        }
        other => panic!("unexpected request kind {other:?}"),
    }
}

fn arb_compactable() -> impl Strategy<Value = Session> {
    (
        prop_oneof![Just(4_096u32), Just(8_192), 2_048u32..=131_072],
        0usize..20_000,
        1usize..14,
        200usize..9_000,
        0u32..4,
        0usize..16_000,
    )
        .prop_map(Session::from)
}

fn arb_summary() -> impl Strategy<Value = Summary> {
    prop_oneof![
        Just(Summary::Good),
        Just(Summary::TooLong),
        Just(Summary::Garbage),
        Just(Summary::Fails)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 10: a compaction of a context whose older entries are at least 40% of its
    /// tokens cuts them by at least 20%, whether the model's summary is used or not.
    #[test]
    fn compaction_cuts_the_context_by_a_fifth_or_more(s in arb_compactable(), how in arb_summary()) {
        let state = compactable(&s);
        prop_assume!(state.is_some());
        let mut state = state.unwrap();
        let before = prompts::context_tokens(&state).unwrap();
        let llm = ResponderLlm::new(compaction_responder(how));
        let sink = drive(&llm, &mut state);
        prop_assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
        prop_assert!(sink.names().contains(&"compacting"));
        let after = prompts::context_tokens(&state).unwrap();
        let at = state.trajectory.iter().position(|e| matches!(e.item, Item::Compaction { .. }));
        let recorded = at.and_then(|at| match state.trajectory[at].item {
            Item::Compaction { tokens_before, tokens_after, .. } => Some((tokens_before, tokens_after)),
            _ => None,
        });
        let (recorded_before, recorded_after) = recorded.expect("a compaction entry");
        prop_assert_eq!(recorded_before, before);
        prop_assert!(recorded_after * 100 <= before * 80, "{} -> {} tokens", before, recorded_after);
        // What the compaction recorded is the context it left. When the best passage did
        // not fit, the engine then looked it up (`agent::step::further`): the context grew
        // by that result after the compaction, never shrank.
        let looked_up = state.trajectory[at.unwrap_or(0)..]
            .iter()
            .any(|e| matches!(e.item, Item::ToolResult { .. }));
        if looked_up {
            prop_assert!(recorded_after <= after, "{} then {}", recorded_after, after);
        } else {
            prop_assert_eq!(recorded_after, after);
        }
    }

    /// Property 11: goal, key decisions and user preferences are identical before and after a
    /// compaction, and the compaction request carries the grounding verbatim.
    #[test]
    fn compaction_keeps_the_grounding(s in arb_compactable(), how in arb_summary(), answered in proptest::option::of("[A-Za-z ]{1,40}")) {
        let state = compactable(&s);
        prop_assume!(state.is_some());
        let mut state = state.unwrap();
        if let Some(answer) = &answered {
            state.input.kept_answers.push(format!("The user answered: {answer}"));
        }
        let grounding = context::grounding(&state);
        let text = prompts::grounding_text(&state).unwrap();
        let system_before = prompts::conversation(&state).unwrap()[0].content.clone();
        let llm = ResponderLlm::new(compaction_responder(how));
        drive(&llm, &mut state);
        let after = context::grounding(&state);
        prop_assert_eq!(&after.goal, &grounding.goal);
        prop_assert_eq!(&after.decisions, &grounding.decisions);
        prop_assert_eq!(&after.preferences, &grounding.preferences);
        // The text too, unless the run made a call after the compaction (the engine's own
        // look-up of the best passage, `agent::step::further`), which is then completed.
        let compacted_at = state.trajectory.iter().position(|e| matches!(e.item, Item::Compaction { .. }));
        let called_after = compacted_at.is_some_and(|at| {
            state.trajectory[at..].iter().any(|e| matches!(e.item, Item::ToolResult { .. }))
        });
        if !called_after {
            prop_assert_eq!(prompts::grounding_text(&state).unwrap(), text.clone());
        }
        let requests = llm.requests.borrow();
        if let Some(compaction) = requests.iter().find(|r| RequestKind::of(r) == RequestKind::Compaction) {
            prop_assert!(compaction.messages.iter().any(|m| m.content.contains(&text)));
        }
        // The user's earlier answer reaches every later request, in the notes before the
        // question (never in the system text), and no request ends with the grounding.
        let last = requests.last().unwrap();
        if let Some(answer) = &answered {
            let notes = last.messages.iter().find(|m| m.content.starts_with("Notes kept by KnowledgeLens"));
            let line = format!("The user answered: {answer}");
            let line = line.trim();
            prop_assert!(notes.is_some_and(|m| m.role == Role::User && m.content.contains(line)), "{:?}", last.messages);
            prop_assert!(!last.messages[0].content.contains(line));
        }
        prop_assert!(!last.messages.last().unwrap().content.starts_with("Grounding"));
        // What the model is told after the compaction (the state itself is never compacted,
        // so the comparisons above hold by construction): the same system text, the goal as
        // the question, and, once trajectory entries were summarized, every completed call
        // and every decision in the notes.
        let compaction_at = requests.iter().position(|r| RequestKind::of(r) == RequestKind::Compaction);
        if let Some(at) = compaction_at.filter(|at| *at + 1 < requests.len()) {
            let after = &requests[at + 1];
            prop_assert_eq!(&system_before, &after.messages[0].content);
            prop_assert!(after.messages.iter().any(|m| m.role == Role::User && m.content == state.question));
            if context::covered_entries(&state) > 0 {
                let notes = after.messages.iter().find(|m| m.content.starts_with("Notes kept by KnowledgeLens"));
                prop_assert!(notes.is_some(), "{:?}", after.messages);
                let notes = &notes.unwrap().content;
                for line in grounding.completed.iter().chain(&grounding.decisions) {
                    prop_assert!(notes.contains(line.trim()), "{line:?} not in {notes}");
                }
            }
        }
    }
}

#[test]
fn follow_up_questions_stop_growing_the_requests() {
    // Twelve questions in one session on a 4,096-token window, each answer 2,000 characters:
    // without compaction the twelfth request would need about 7,000 tokens.
    let settings = Settings {
        context_window: 4_096,
        ..Settings::default()
    };
    let mut state = SessionState::new("tab:5", 1_000);
    let mut largest = 0;
    let mut compactions = 0;
    let mut by_model = false;
    for i in 0..12 {
        state.begin_run(
            &format!("Follow-up {i}: what else about the locks?"),
            Some(PageInfo {
                title: "Canals".into(),
                url: "http://127.0.0.1/canals".into(),
                text: prose(2, 100_000),
                ..Default::default()
            }),
            settings.run_config(None),
            1_000,
        );
        let answer = prose(i, 2_000);
        let llm =
            ResponderLlm::new(
                move |request: &ChatRequest, _| match RequestKind::of(request) {
                    RequestKind::Reason => Reply::text(answer.clone()),
                    RequestKind::Compaction => {
                        Reply::text(r#"{"summary": "Earlier answers covered the locks."}"#)
                    }
                    other => panic!("unexpected request kind {other:?}"),
                },
            );
        let sink = drive(&llm, &mut state);
        assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
        compactions += sink.names().iter().filter(|n| **n == "compacting").count();
        by_model |= state
            .compact
            .compaction
            .as_ref()
            .is_some_and(|c| c.by_model);
        for request in llm.requests.borrow().iter() {
            largest = largest.max(context::request_tokens(request));
        }
    }
    assert!(largest <= 4_096 * 9 / 10, "largest request {largest}");
    assert!(compactions >= 2, "compacted {compactions} times");
    // The model's summary was used where it cut enough (later ones may fall back: the
    // request around the context, tool definitions included, leaves a summary little room).
    assert!(by_model, "no compaction used the model's summary");
    // The summary replaced the older turns: the last request carries at most two of them.
    assert!(context::covered_turns(&state) >= 8);
}

#[test]
fn compact_at_sets_when_compaction_starts() {
    let sizes = Session {
        window: 16_384,
        page_chars: 2_000,
        turns: 8,
        answer_chars: 5_000,
        steps: 0,
        result_chars: 0,
    };
    let request_tokens = {
        let state = session(&sizes);
        let tools = ToolBox::builtin().offered(
            None,
            knowledgelens::tools::Offer {
                page_text: true,
                ..Default::default()
            },
        );
        context::request_tokens(&prompts::reason(&state, tools, &Fit::NONE).unwrap())
    };
    let share = request_tokens * 100 / 16_384;
    assert!(
        (55..90).contains(&share),
        "the request takes {share}% of the window"
    );
    for (at, compacts) in [(50, true), (share as u32 + 3, false)] {
        let mut state = session(&sizes);
        state.config.compact_at_pct = at;
        let llm = ResponderLlm::new(|request: &ChatRequest, _| match RequestKind::of(request) {
            RequestKind::Reason => Reply::text("The first lock was built in 1790."),
            RequestKind::Compaction => Reply::text(r#"{"summary": "Locks."}"#),
            other => panic!("unexpected request kind {other:?}"),
        });
        let sink = drive(&llm, &mut state);
        assert_eq!(
            sink.names().contains(&"compacting"),
            compacts,
            "Compact at {at}%"
        );
        assert_eq!(state.compact.compaction.is_some(), compacts);
    }
}

#[test]
fn a_failed_or_useless_compaction_call_falls_back_and_says_what_was_cut() {
    for how in [Summary::Fails, Summary::Garbage, Summary::TooLong] {
        let s = Session {
            window: 4_096,
            page_chars: 3_000,
            turns: 6,
            answer_chars: 3_000,
            steps: 1,
            result_chars: 2_000,
        };
        let mut state = compactable(&s).expect("compactable");
        let llm = ResponderLlm::new(compaction_responder(how.clone()));
        drive(&llm, &mut state);
        assert_eq!(state.status, RunStatus::Completed);
        let compaction = state.compact.compaction.as_ref().expect("compacted");
        assert!(!compaction.by_model, "{how:?}");
        assert!(
            compaction.summary.contains("cut to their first lines")
                || compaction.summary.contains("were removed"),
            "{how:?}: {}",
            compaction.summary
        );
        assert_eq!(
            llm.calls(),
            2,
            "one compaction call, never retried: {how:?}"
        );
    }
}

#[test]
fn a_page_that_cannot_fit_is_shrunk_not_sent_whole() {
    // No older history to compact: the excerpt is shrunk instead.
    let mut state = session(&Session {
        window: 2_048,
        page_chars: 50_000,
        turns: 0,
        answer_chars: 0,
        steps: 0,
        result_chars: 0,
    });
    state.config.page_excerpt_chars = 6_000;
    let llm = ResponderLlm::new(|request: &ChatRequest, _| match RequestKind::of(request) {
        RequestKind::Reason => Reply::text("The first lock was built in 1790."),
        other => panic!("unexpected request kind {other:?}"),
    });
    let sink = drive(&llm, &mut state);
    assert_eq!(state.status, RunStatus::Completed);
    assert!(!sink.names().contains(&"compacting"));
    let request = &llm.requests.borrow()[0];
    assert!(context::request_tokens(request) <= 2_048 * 9 / 10);
    let cut = &request.messages[request.messages.len() - 2].content;
    assert!(
        cut.starts_with("You have seen only part of the page ("),
        "the request says the page was cut: {cut}"
    );
}

#[test]
fn a_question_too_large_for_the_window_is_never_sent() {
    let mut state = session(&Session {
        window: 2_048,
        page_chars: 0,
        turns: 0,
        answer_chars: 0,
        steps: 0,
        result_chars: 0,
    });
    state.question = prose(4, 12_000);
    let llm = ResponderLlm::new(|_: &ChatRequest, _| -> Reply { panic!("nothing is sent") });
    drive(&llm, &mut state);
    assert_eq!(state.status, RunStatus::Failed);
    let error = state.error.as_ref().unwrap();
    assert_eq!(error.kind, "context_too_long");
    assert!(
        error.message.contains("Context window"),
        "{}",
        error.message
    );
    assert_eq!(llm.calls(), 0);
}

#[test]
fn a_too_long_answer_compacts_and_the_retry_succeeds() {
    let s = Session {
        window: 8_192,
        page_chars: 3_000,
        turns: 5,
        answer_chars: 2_000,
        steps: 0,
        result_chars: 0,
    };
    let mut state = session(&s);
    let llm = ResponderLlm::new(
        |request: &ChatRequest, n| match (n, RequestKind::of(request)) {
            (1, RequestKind::Reason) => Reply::Fail(LlmError::new(
                LlmErrorKind::ContextTooLong,
                "This model's maximum context length is 4096 tokens.",
            )),
            (2, RequestKind::Compaction) => Reply::text(r#"{"summary": "Earlier: locks."}"#),
            (3, RequestKind::Reason) => Reply::text("The first lock was built in 1790."),
            other => panic!("unexpected call {other:?}"),
        },
    );
    let sink = drive(&llm, &mut state);
    assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
    assert!(sink.names().contains(&"compacting"));
    let requests = llm.requests.borrow();
    let (refused, retried) = (
        context::request_tokens(&requests[0]),
        context::request_tokens(&requests[2]),
    );
    assert!(retried * 100 <= refused * 75, "{refused} -> {retried}");
    assert_eq!(state.step, 1, "the retry is the same step");
}

#[test]
fn a_provider_counting_more_than_the_estimate_makes_later_requests_smaller() {
    // The first reply reports 180% of the estimated prompt (a tokenizer that splits this
    // text finer than o200k_base): later requests are sized with that count, so the page
    // excerpt is cut where the estimate alone would have sent it whole.
    let mut state = session(&Session {
        window: 4_096,
        page_chars: 40_000,
        turns: 0,
        answer_chars: 0,
        steps: 0,
        result_chars: 0,
    });
    let llm = ResponderLlm::new(|request: &ChatRequest, n| {
        let estimate = knowledgelens::agent::executor::estimate(request);
        let usage = Some(knowledgelens::llm::Usage::new(estimate * 18 / 10, 20));
        let reply = match (n, RequestKind::of(request)) {
            (1, RequestKind::Reason) => knowledgelens::llm::ChatResponse {
                content: "Reading on.".into(),
                tool_calls: vec![ToolCall {
                    id: "r1".into(),
                    name: "read_page".into(),
                    arguments: "{\"offset\": 3000, \"max_chars\": 3000}".into(),
                }],
                usage,
                ..Default::default()
            },
            (2, RequestKind::Observe) => knowledgelens::llm::ChatResponse {
                content:
                    r#"{"should_continue": false, "final_answer": "In 1790.", "failed": false}"#
                        .into(),
                usage,
                ..Default::default()
            },
            other => panic!("unexpected call {other:?}"),
        };
        Reply::Raw(reply)
    });
    drive(&llm, &mut state);
    assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
    assert!(
        (179..=180).contains(&state.compact.prompt_scale_pct),
        "{}",
        state.compact.prompt_scale_pct
    );
    let requests = llm.requests.borrow();
    let limit = 4_096 * 9 / 10;
    let excerpt = |r: &ChatRequest| r.messages[1].content.chars().count();
    // Unscaled, the second request would have fitted with the whole excerpt...
    let mut whole = state.clone();
    whole.compact.prompt_scale_pct = 0;
    let unscaled = prompts::observe(&whole, &Fit::NONE).unwrap();
    assert!(context::request_tokens(&unscaled) <= limit);
    // ...scaled, it did not, so the excerpt was cut; and what was sent fits either way.
    assert!(context::window_use(&state, &unscaled) > limit);
    assert!(excerpt(&requests[1]) < excerpt(&requests[0]));
    assert!(context::window_use(&state, &requests[1]) <= limit);
}

#[test]
fn a_small_window_leaves_out_tools_rather_than_fail() {
    // Found by `no_request_exceeds_the_window` (tests/context.proptest-regressions): after the
    // compaction and the whole ladder the Reason request still took 1,844 of 1,843 tokens.
    // Nothing is left to compact, so the last offered tool is left out instead of failing.
    // (Shorter prompts and tool definitions since then fit that case; this one, a page cut to
    // its start with three tools offered, is as tight with today's: at 1,456 all three fit.)
    let s = Session {
        window: 1_452,
        page_chars: 9_000,
        turns: 10,
        answer_chars: 298,
        steps: 2,
        result_chars: 200,
    };
    let mut state = session(&s);
    let limit = context::limit(&state).expect("a known window");
    let llm = ResponderLlm::new(responder);
    drive(&llm, &mut state);
    assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
    assert!(state.answer.contains("1790"));
    let requests = llm.requests.borrow();
    for request in requests.iter() {
        assert!(context::request_tokens(request) <= limit);
    }
    let reason = requests
        .iter()
        .rfind(|r| RequestKind::of(r) == RequestKind::Reason)
        .expect("a Reason request");
    let names: Vec<&str> = reason.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["query_page", "request_input"],
        "only the last offered tool (summarize_page_content) is left out"
    );
}
