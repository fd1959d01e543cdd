//! Reasoning before every action: every tool takes an optional `reasoning`, and
//! the thought recorded before a reply's calls is the reply's text, else the calls'
//! reasoning, else "Calling {tool} with {arguments}". Property: over scripted runs mixing
//! replies with and without text and calls with and without reasoning (valid, blank, not a
//! string), every recorded call is preceded by a non-empty thought, and a thought the model
//! did not write is never replayed to it as its own words. The scripted model is strict:
//! each script is exactly the calls the run makes.

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::step::MAX_CALLS_PER_REPLY;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatResponse, Role, ToolCall};
use knowledgelens::state::{PageInfo, RunStatus, SessionState};
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use knowledgelens::tools::{decode_args, ReadPageArgs, RequestInputArgs, ToolBox, ToolErrorKind};
use proptest::prelude::*;
use serde_json::json;

/// What a call says about itself.
#[derive(Debug, Clone)]
enum Why {
    Nothing,
    Says(String),
    Blank,
    NotAString,
}

fn arguments(offset: u32, why: &Why) -> String {
    let mut args = json!({"offset": offset, "max_chars": 40});
    match why {
        Why::Nothing => {}
        Why::Says(text) => args["reasoning"] = json!(text),
        Why::Blank => args["reasoning"] = json!("  "),
        Why::NotAString => args["reasoning"] = json!(["not", "text"]),
    }
    args.to_string()
}

/// One Reason reply: its text and its calls.
#[derive(Debug, Clone)]
struct Round {
    text: String,
    calls: Vec<(u32, Why)>,
}

fn arb_why() -> impl Strategy<Value = Why> {
    prop_oneof![
        2 => Just(Why::Nothing),
        2 => "[A-Za-z][a-z ]{0,30}".prop_map(Why::Says),
        1 => Just(Why::Blank),
        1 => Just(Why::NotAString),
    ]
}

fn arb_round() -> impl Strategy<Value = Round> {
    let text = prop_oneof![
        Just(String::new()),
        Just(" \n ".to_string()),
        "[A-Za-z][a-z ]{0,30}"
    ];
    let calls = proptest::collection::vec((0u32..500, arb_why()), 1..=MAX_CALLS_PER_REPLY + 2);
    (text, calls).prop_map(|(text, calls)| Round { text, calls })
}

fn page() -> PageInfo {
    PageInfo {
        title: "Photosynthesis".into(),
        url: "http://127.0.0.1/article".into(),
        text: "Plants turn light into sugar. ".repeat(20),
        ..Default::default()
    }
}

/// The replies of a run of `rounds`: each a Reason reply and the Observe that goes on, then
/// the answer.
fn script(rounds: &[Round]) -> Vec<Reply> {
    let mut replies = Vec::new();
    for (r, round) in rounds.iter().enumerate() {
        let tool_calls = round
            .calls
            .iter()
            .enumerate()
            .map(|(c, (offset, why))| ToolCall {
                id: format!("call_{r}_{c}"),
                name: "read_page".into(),
                arguments: arguments(*offset, why),
            })
            .collect();
        replies.push(Reply::Raw(ChatResponse {
            content: round.text.clone(),
            tool_calls,
            finish_reason: Some("tool_calls".into()),
            ..Default::default()
        }));
        replies.push(Reply::text(
            r#"{"should_continue": true, "final_answer": null}"#,
        ));
    }
    replies.push(Reply::text("Plants make sugar from light."));
    replies
}

fn run(rounds: &[Round]) -> (SessionState, ScriptedLlm) {
    let config = RunConfig {
        max_steps: rounds.len() as u32 + 1,
        token_budget: 10_000_000,
        // No reflection calls between the rounds (some calls fail): thoughts are the
        // subject here; tests/native/reflexion.rs covers reflections.
        max_retries: 0,
        ..RunConfig::default()
    };
    run_script(script(rounds), config)
}

/// Runs `replies` on a strict scripted model.
fn run_script(replies: Vec<Reply>, config: RunConfig) -> (SessionState, ScriptedLlm) {
    let llm = ScriptedLlm::new(replies);
    let (clock, sink, store, tools) = (
        ManualClock::new(1_000),
        RecordingSink::default(),
        MemoryStore::new(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("tab:7", 1_000);
    state.begin_run("What do plants do with light?", Some(page()), config, 1_000);
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        futures::executor::block_on(engine.drive(&mut state));
    }
    (state, llm)
}

/// The thought the rule gives for `round`.
fn expected_thought(round: &Round) -> (String, bool) {
    if !round.text.trim().is_empty() {
        return (round.text.trim().to_string(), false);
    }
    let lines: Vec<String> = round
        .calls
        .iter()
        .take(MAX_CALLS_PER_REPLY)
        .map(|(offset, why)| match why {
            Why::Says(text) if !text.trim().is_empty() => text.trim().to_string(),
            _ => format!(r#"Calling read_page with {{"max_chars":40,"offset":{offset}}}"#),
        })
        .collect();
    (lines.join("\n"), true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 2, strengthened: a non-empty thought precedes every tool call, in its step.
    #[test]
    fn every_call_follows_a_non_empty_thought(rounds in proptest::collection::vec(arb_round(), 0..5)) {
        let (state, llm) = run(&rounds);
        prop_assert_eq!(state.status, RunStatus::Completed);
        let mut thoughts_before_calls = Vec::new();
        let mut last_thought: Option<(u32, String, bool)> = None;
        let mut previous_was_call_or_thought = false;
        for e in &state.trajectory {
            match &e.item {
                Item::Thought { text, derived } => {
                    last_thought = Some((e.step, text.clone(), *derived));
                    previous_was_call_or_thought = true;
                }
                Item::ToolCall { .. } => {
                    prop_assert!(previous_was_call_or_thought, "a call not right after its thought");
                    let (step, text, derived) = last_thought.clone().expect("a thought before the call");
                    prop_assert_eq!(step, e.step);
                    prop_assert!(!text.trim().is_empty(), "an empty thought before a call");
                    // Several calls of one reply share its thought (two rounds may
                    // write the same one: told apart by their step).
                    if thoughts_before_calls.last().map(|(s, _)| *s) != Some(step) {
                        thoughts_before_calls.push((step, (text, derived)));
                    }
                }
                _ => previous_was_call_or_thought = false,
            }
        }
        let expected: Vec<(String, bool)> = rounds.iter().map(expected_thought).collect();
        prop_assert_eq!(thoughts_before_calls.len(), rounds.len());
        for ((_, got), want) in thoughts_before_calls.iter().zip(&expected) {
            prop_assert_eq!(got, want);
        }
        // What the model is shown as its own words is only what it wrote.
        let requests = llm.requests.borrow();
        let last = requests.last().expect("requests");
        let said: Vec<&str> = last
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
            .map(|m| m.content.as_str())
            .collect();
        let written: Vec<&str> = rounds.iter().map(|r| if r.text.trim().is_empty() { "" } else { r.text.trim() }).collect();
        prop_assert_eq!(said, written);
    }
}

#[test]
fn every_tool_offers_an_optional_string_reasoning() {
    let tools = ToolBox::builtin();
    let names: Vec<&str> = tools.definitions().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_page",
            "query_page",
            "request_input",
            "explain_text_with_context",
            "search_web_for_info",
            "grade_search_results",
            "rewrite_search_query",
            "extract_screenshot_text",
            "summarize_page_content"
        ]
    );
    for def in tools.definitions() {
        let reasoning = &def.parameters["properties"]["reasoning"];
        assert_eq!(reasoning["type"], "string", "{}", def.name);
        assert!(reasoning["description"]
            .as_str()
            .is_some_and(|d| d.contains("Why")));
        let required = def.parameters["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            !required.contains(&json!("reasoning")),
            "{} requires it",
            def.name
        );
    }
}

#[test]
fn calls_parse_with_or_without_reasoning() {
    let with: ReadPageArgs =
        decode_args(r#"{"offset": 40, "reasoning": "read on"}"#).expect("with");
    let without: ReadPageArgs = decode_args(r#"{"offset": 40}"#).expect("without");
    assert_eq!((with.offset, without.offset), (40, 40));
    let asked: RequestInputArgs =
        decode_args(r#"{"reasoning": "two lighthouses", "question": "Which one?"}"#).expect("ask");
    assert_eq!(asked.question, "Which one?");
    for bad in [
        r#"{"offset": 1, "reasoning": 7}"#,
        r#"{"offset": 1, "reasoning": null}"#,
        r#"{"reasoning": {"why": "x"}}"#,
    ] {
        let err = decode_args::<ReadPageArgs>(bad).expect_err(bad);
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{bad}");
        assert!(
            err.message.starts_with("field \"reasoning\": invalid type"),
            "{}",
            err.message
        );
    }
    // Other fields are still checked, and still named.
    let err =
        decode_args::<ReadPageArgs>(r#"{"offset": "x", "reasoning": "ok"}"#).expect_err("offset");
    assert!(
        err.message.starts_with("field \"offset\""),
        "{}",
        err.message
    );
    let err =
        decode_args::<ReadPageArgs>(r#"{"page": 2, "reasoning": "ok"}"#).expect_err("unknown");
    assert!(
        err.message.contains("unknown field `page`"),
        "{}",
        err.message
    );
}

/// A run whose only thoughts were derived ends, at its step limit, without taking a
/// derived thought for an answer.
#[test]
fn a_derived_thought_is_never_the_answer() {
    let round = Round {
        text: String::new(),
        calls: vec![(0, Why::Says("Read the opening.".into()))],
    };
    let mut replies = script(std::slice::from_ref(&round));
    replies.pop();
    // The step limit: the synthesis call answers with nothing.
    replies.push(Reply::text(""));
    let config = RunConfig {
        max_steps: 1,
        ..RunConfig::default()
    };
    let (state, _llm) = run_script(replies, config);
    let answer = state.trajectory.iter().find_map(|e| match &e.item {
        Item::Answer { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert!(state.trajectory.iter().any(|e| e.item
        == Item::Thought {
            text: "Read the opening.".into(),
            derived: true
        }));
    assert_ne!(answer.as_deref(), Some("Read the opening."));
}
