//! Agentic web search driven natively with a scripted model and a scripted
//! search client: the search is graded in one batched call per page of results, rewritten
//! when fewer than half are relevant (at most 2 rewrites, 3 searches, a repeated rewrite
//! asked for once more), answered citing only relevant results, and falls back to a
//! model-only answer with a disclaimer when the search fails. Properties 7, 8, 9 and 14.

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, LlmError, LlmErrorKind, Role};
use knowledgelens::state::search::{normalized, Fallback, Verdict};
use knowledgelens::state::{RunStatus, SessionState};
use knowledgelens::testing::{
    search_result, ManualClock, MemoryStore, RecordingSink, Reply, RequestKind, ResponderLlm,
    ScriptedSearch,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::{SearchError, SearchResult};
use proptest::prelude::*;
use std::cell::RefCell;
use std::collections::VecDeque;

const QUESTION: &str = "When was the Eddystone lighthouse built?";

fn config() -> RunConfig {
    RunConfig {
        web_search: true,
        ..RunConfig::default()
    }
}

fn results(prefix: &str, n: usize) -> Vec<SearchResult> {
    (1..=n)
        .map(|i| {
            search_result(
                &format!("{prefix} {i}"),
                &format!("https://example.org/{prefix}/{i}"),
                &format!("About {prefix} {i}: the tower was finished in 1882."),
            )
        })
        .collect()
}

/// The scripted model's replies by the kind of call; each queue must be used up exactly.
#[derive(Default)]
struct Script {
    reason: VecDeque<Reply>,
    grading: VecDeque<Reply>,
    rewrite: VecDeque<Reply>,
    observe: VecDeque<Reply>,
    synthesis: VecDeque<Reply>,
    reflection: VecDeque<Reply>,
}

struct Outcome {
    state: SessionState,
    requests: Vec<ChatRequest>,
    search: ScriptedSearch,
}

fn run(script: Script, search: ScriptedSearch, config: RunConfig) -> Outcome {
    run_on(script, search, config, None)
}

fn run_on(
    script: Script,
    search: ScriptedSearch,
    config: RunConfig,
    page: Option<knowledgelens::types::PageInfo>,
) -> Outcome {
    let script = RefCell::new(script);
    let llm = ResponderLlm::new(|request: &ChatRequest, n| {
        let mut s = script.borrow_mut();
        let queue = match RequestKind::of(request) {
            RequestKind::Reason => &mut s.reason,
            RequestKind::Grading => &mut s.grading,
            RequestKind::Rewrite => &mut s.rewrite,
            RequestKind::Observe => &mut s.observe,
            RequestKind::Synthesis => &mut s.synthesis,
            RequestKind::Reflection => &mut s.reflection,
            other => panic!("unexpected call #{n}: {other:?}"),
        };
        queue.pop_front().unwrap_or_else(|| {
            panic!(
                "call #{n} ({:?}) has no reply left",
                RequestKind::of(request)
            )
        })
    });
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("popup", 1_000);
    state.begin_run(QUESTION, page, config, 1_000);
    state.nonce = "n0nce".into();
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new())
            .with_search(Some(&search))
            .drive(&mut state),
    );
    let requests = llm.requests.borrow().clone();
    let left = script.borrow();
    assert!(
        left.reason.is_empty() && left.grading.is_empty() && left.rewrite.is_empty(),
        "scripted replies never asked for"
    );
    Outcome {
        state,
        requests,
        search,
    }
}

fn search_call(query: &str) -> Reply {
    Reply::tool(
        "search_web_for_info",
        &serde_json::json!({ "query": query }).to_string(),
    )
}

fn answer(text: &str) -> Reply {
    Reply::text(
        serde_json::json!({"should_continue": false, "final_answer": text, "failed": false})
            .to_string(),
    )
}

fn fallbacks(state: &SessionState) -> Vec<Fallback> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::SearchFallback { fallback, .. } => Some(fallback.clone()),
            _ => None,
        })
        .collect()
}

fn tool_result(state: &SessionState) -> String {
    state
        .trajectory
        .iter()
        .find_map(|e| match &e.item {
            Item::ToolResult { name, content, .. } if name == "search_web_for_info" => {
                Some(content.clone())
            }
            _ => None,
        })
        .expect("the search call has a result")
}

#[test]
fn relevant_results_are_returned_numbered_and_only_they_are_cited() {
    let script = Script {
        reason: [search_call("Eddystone lighthouse")].into(),
        grading: [Reply::grades(&[
            (true, 0.9, "says when it was built"),
            (false, 0.8, "a different lighthouse"),
            (true, 0.7, "mentions 1882"),
        ])]
        .into(),
        observe: [answer("It was finished in 1882 [1][2], not 1759 [3] [9].")].into(),
        ..Script::default()
    };
    let out = run(
        script,
        ScriptedSearch::new(vec![Ok(results("Eddystone", 3))]),
        config(),
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    // Results 1 and 3 were relevant: they are [1] and [2]; [3] and [9] name nothing.
    assert_eq!(
        out.state.answer,
        "It was finished in 1882 [1][2], not 1759."
    );
    let sources: Vec<(&str, &str)> = out
        .state
        .sources
        .iter()
        .map(|s| (s.id.as_str(), s.url.as_str()))
        .collect();
    assert_eq!(
        sources,
        [
            ("1", "https://example.org/Eddystone/1"),
            ("2", "https://example.org/Eddystone/3")
        ]
    );
    let result = tool_result(&out.state);
    assert!(result.contains("[1] Eddystone 1"), "{result}");
    assert!(result.contains("[2] Eddystone 3"), "{result}");
    assert!(!result.contains("Eddystone 2"), "{result}");
    assert!(out.state.notices.is_empty(), "{:?}", out.state.notices);
    // One grading call for the three results, fenced as data, with the goal.
    let grading: Vec<&ChatRequest> = out
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Grading)
        .collect();
    assert_eq!(grading.len(), 1);
    let user = &grading[0].messages[1];
    assert_eq!(user.role, Role::User);
    assert!(user.content.contains(QUESTION));
    assert!(user.content.contains("<page-n0nce>\n[1] Eddystone 1"));
    assert_eq!(
        grading[0].response_format.as_ref().map(|f| f.name.as_str()),
        Some("search_grades")
    );
    assert_eq!(out.search.texts(), ["Eddystone lighthouse"]);
    // The Reason call says search is on and how to cite.
    let reason = &out.requests[0];
    assert!(reason.tools.iter().any(|t| t.name == "search_web_for_info"));
    assert!(reason.messages[0].content.contains("Web search is on."));
    assert!(reason.messages[0].content.contains("like [1] or [2]"));
}

#[test]
fn irrelevant_results_lead_to_a_rewrite_and_a_second_search() {
    let script = Script {
        reason: [search_call("eddystone")].into(),
        grading: [
            Reply::grades(&[(false, 0.9, "a rock band"), (false, 0.9, "a village")]),
            Reply::grades(&[(true, 0.9, "the lighthouse"), (true, 0.6, "its history")]),
        ]
        .into(),
        rewrite: [Reply::rewrite("Eddystone lighthouse history")].into(),
        observe: [answer("Built in 1882 [2].")].into(),
        ..Script::default()
    };
    let search = ScriptedSearch::new(vec![Ok(results("band", 2)), Ok(results("tower", 2))]);
    let out = run(script, search, config());
    assert_eq!(
        out.search.texts(),
        ["eddystone", "Eddystone lighthouse history"]
    );
    assert_eq!(out.state.answer, "Built in 1882 [2].");
    let rewrite = out
        .requests
        .iter()
        .find(|r| RequestKind::of(r) == RequestKind::Rewrite)
        .expect("a rewrite call");
    let text = &rewrite.messages[1].content;
    assert!(text.contains("- eddystone"), "{text}");
    assert!(
        text.contains("a rock band"),
        "the grader's reasons say why: {text}"
    );
    assert!(out.state.trajectory.iter().any(|e| matches!(
        &e.item,
        Item::Rewrite { from, to, .. } if from == "eddystone" && to == "Eddystone lighthouse history"
    )));
}

#[test]
fn a_repeated_rewrite_is_asked_for_once_more_then_the_rewrites_are_exhausted() {
    let script = Script {
        reason: [search_call("Eddystone  Light")].into(),
        grading: [Reply::grades(&[(false, 0.9, "off topic")])].into(),
        rewrite: [
            Reply::rewrite("eddystone light"),
            Reply::rewrite("EDDYSTONE LIGHT "),
        ]
        .into(),
        observe: [answer("From memory: 1882 [1].")].into(),
        ..Script::default()
    };
    let search = ScriptedSearch::new(vec![Ok(results("off", 1))]);
    let out = run(script, search, config());
    let rewrites: Vec<&ChatRequest> = out
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Rewrite)
        .collect();
    assert_eq!(rewrites.len(), 2);
    assert!(rewrites[1].messages[1]
        .content
        .contains("repeated a query already tried"));
    assert_eq!(fallbacks(&out.state), [Fallback::RewritesExhausted]);
    assert!(
        out.state.notices[0].contains("comes from the model alone"),
        "{:?}",
        out.state.notices
    );
    // Nothing was graded relevant: the citation goes.
    assert_eq!(out.state.answer, "From memory: 1882.");
    assert!(out.state.sources.is_empty());
}

#[test]
fn a_search_that_fails_is_retried_once_then_the_answer_carries_the_disclaimer() {
    let script = Script {
        reason: [search_call("Eddystone")].into(),
        observe: [answer("The model says 1882.")].into(),
        ..Script::default()
    };
    let search = ScriptedSearch::new(vec![
        Err(SearchError::timeout("Wikipedia", 20_000)),
        Err(SearchError::status("Wikipedia", 503, "busy")),
    ]);
    let out = run(script, search, config());
    assert_eq!(out.search.texts().len(), 2);
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(matches!(
        fallbacks(&out.state)[..],
        [Fallback::Unreachable { .. }]
    ));
    assert!(out.state.notices[0].starts_with("Web search failed"));
    assert!(tool_result(&out.state).contains("Answer from your own knowledge"));
}

#[test]
fn the_search_asks_in_the_page_language_and_without_one_leaves_it_to_the_service() {
    for (lang, expected) in [("de-AT", Some("de-AT")), ("", None)] {
        let script = Script {
            reason: [search_call("Leuchtturm")].into(),
            grading: [Reply::grades(&[(true, 0.9, "on topic")])].into(),
            observe: [answer("1882 [1].")].into(),
            ..Script::default()
        };
        let page = knowledgelens::types::PageInfo {
            title: "Leuchtturm".into(),
            url: "https://de.example/".into(),
            text: "Ein Leuchtturm.".into(),
            lang: lang.into(),
            ..Default::default()
        };
        let search = ScriptedSearch::new(vec![Ok(results("Leuchtturm", 1))]);
        let out = run_on(script, search, config(), Some(page));
        let asked = out.search.queries.borrow()[0].language.clone();
        assert_eq!(asked.as_deref(), expected);
        assert_eq!(out.state.answer, "1882 [1].");
    }
}

const EDDYSTONE: &str = "The Eddystone lighthouse was built by John Smeaton between 1756 and 1759 from dovetailed granite blocks, and it stood until 1877.";

fn eddystone_page() -> knowledgelens::types::PageInfo {
    knowledgelens::types::PageInfo {
        title: "Eddystone".into(),
        url: "https://example.com/eddystone".into(),
        text: EDDYSTONE.into(),
        ..Default::default()
    }
}

#[test]
fn a_query_carrying_page_text_is_refused_with_a_reflection_and_never_searched() {
    let (text, page) = (EDDYSTONE, eddystone_page());
    // The page's first 100 characters as a query; then one of more than 200 characters.
    let copied = format!("check: {}", &text[..100]);
    let long = "Eddystone lighthouse history ".repeat(8);
    for (query, says) in [
        (copied.as_str(), "characters copied from the page"),
        (long.as_str(), "1 to 200 characters"),
    ] {
        let script = Script {
            reason: [search_call(query), Reply::text("Smeaton built it [p1].")].into(),
            reflection: [Reply::reflection(
                "the query was page text",
                "search with keywords",
            )]
            .into(),
            ..Script::default()
        };
        // Any search would fail the test: the scripted search has no answer.
        let out = run_on(
            script,
            ScriptedSearch::new(Vec::new()),
            config(),
            Some(page.clone()),
        );
        assert!(out.search.queries.borrow().is_empty(), "{query}");
        let result = tool_result(&out.state);
        assert!(
            result.starts_with("Error:") && result.contains(says),
            "{result}"
        );
        assert!(out
            .requests
            .iter()
            .any(|r| RequestKind::of(r) == RequestKind::Reflection));
        assert_eq!(out.state.status, knowledgelens::state::RunStatus::Completed);
    }
}

#[test]
fn a_rewrite_carrying_page_text_is_asked_for_once_more_and_never_searched() {
    let (text, page) = (EDDYSTONE, eddystone_page());
    let script = Script {
        reason: [search_call("Eddystone builder")].into(),
        grading: [Reply::grades(&[(false, 0.9, "off topic")])].into(),
        rewrite: [Reply::rewrite(&text[..95]), Reply::rewrite(&text[4..120])].into(),
        observe: [answer("From memory: Smeaton.")].into(),
        ..Script::default()
    };
    let search = ScriptedSearch::new(vec![Ok(results("off", 1))]);
    let out = run_on(script, search, config(), Some(page));
    // One search, for the model's own query; neither rewrite reached the search service.
    let queries: Vec<String> = out
        .search
        .queries
        .borrow()
        .iter()
        .map(|q| q.text.clone())
        .collect();
    assert_eq!(queries, ["Eddystone builder"]);
    assert_eq!(fallbacks(&out.state), [Fallback::RewritesExhausted]);
}

#[test]
fn a_refused_key_is_not_retried() {
    let script = Script {
        reason: [search_call("Eddystone")].into(),
        observe: [answer("1882.")].into(),
        ..Script::default()
    };
    let search = ScriptedSearch::new(vec![Err(SearchError::unauthorized(
        "Brave Search",
        401,
        "",
    ))]);
    let out = run(script, search, config());
    assert_eq!(out.search.texts().len(), 1);
    assert!(out.state.notices[0].contains("refused the API key"));
}

#[test]
fn failed_grading_uses_the_results_unchecked_with_a_disclaimer_and_cites_none() {
    let script = Script {
        reason: [search_call("Eddystone")].into(),
        grading: [Reply::status(400)].into(),
        observe: [answer("Finished in 1882 [1].")].into(),
        ..Script::default()
    };
    let out = run(
        script,
        ScriptedSearch::new(vec![Ok(results("Eddystone", 2))]),
        config(),
    );
    assert!(matches!(
        fallbacks(&out.state)[..],
        [Fallback::Ungraded { .. }]
    ));
    assert!(tool_result(&out.state).contains("could not be checked"));
    assert_eq!(out.state.answer, "Finished in 1882.");
}

#[test]
fn a_grading_call_that_times_out_is_not_retried_and_its_results_go_ungraded() {
    // Before, a timeout was retried like any network error: three more waits as long
    // before the answer could start. (The grading queue holds one reply: a retry panics.)
    let script = Script {
        reason: [search_call("Eddystone")].into(),
        grading: [Reply::Fail(LlmError::new(
            LlmErrorKind::Timeout,
            "the model did not answer within 90 s",
        ))]
        .into(),
        observe: [answer("Finished in 1882 [1].")].into(),
        ..Script::default()
    };
    let out = run(
        script,
        ScriptedSearch::new(vec![Ok(results("Eddystone", 2))]),
        config(),
    );
    let gradings = out
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Grading)
        .count();
    assert_eq!(gradings, 1);
    assert!(matches!(
        fallbacks(&out.state)[..],
        [Fallback::Ungraded { .. }]
    ));
    assert!(tool_result(&out.state).contains("could not be checked"));
    // The error is recorded as given up at once, not as retrying.
    assert!(out.state.trajectory.iter().any(|e| matches!(
        &e.item,
        Item::Error { retrying: false, error } if error.message.contains("90 s")
    )));
    assert_eq!(out.state.answer, "Finished in 1882.");
}

#[test]
fn with_search_off_the_search_tools_are_neither_offered_nor_run() {
    let script = Script {
        reason: [search_call("Eddystone"), Reply::text("1882.")].into(),
        reflection: [Reply::reflection("search is off", "answer without it")].into(),
        ..Script::default()
    };
    let out = run(script, ScriptedSearch::new(vec![]), RunConfig::default());
    let offered: Vec<&str> = out.requests[0]
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(!offered.contains(&"search_web_for_info"), "{offered:?}");
    assert!(tool_result(&out.state).contains("web search is off"));
}

#[test]
fn grade_and_rewrite_tools_work_on_their_own() {
    let results: Vec<serde_json::Value> = (1..=7)
        .map(|i| serde_json::json!({"title": format!("R{i}"), "url": format!("https://r.org/{i}")}))
        .collect();
    let script = Script {
        reason: [
            Reply::tool(
                "grade_search_results",
                &serde_json::json!({"query": "tides", "results": results}).to_string(),
            ),
            Reply::tool(
                "rewrite_search_query",
                r#"{"query": "tides", "problem": "all about a band"}"#,
            ),
        ]
        .into(),
        // Seven results: two grading calls (five, then two).
        grading: [
            Reply::grades(&[(true, 0.9, "a"); 5]),
            Reply::grades(&[(false, 0.2, "b"), (true, 0.4, "c")]),
        ]
        .into(),
        rewrite: [Reply::rewrite("ocean tides moon")].into(),
        observe: [
            Reply::text(r#"{"should_continue": true, "final_answer": null, "failed": false}"#),
            answer("Tides [6]."),
        ]
        .into(),
        ..Script::default()
    };
    let out = run(script, ScriptedSearch::new(vec![]), config());
    let results: Vec<(String, String)> = out
        .state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolResult { name, content, .. } => Some((name.clone(), content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results[0].0, "grade_search_results");
    assert_eq!(results[0].1.lines().count(), 7);
    assert!(results[0]
        .1
        .contains("- R6 — https://r.org/6: not_relevant, confidence 0.20: b\n"));
    assert!(results[0]
        .1
        .ends_with("- R7 — https://r.org/7: relevant, confidence 0.40: c Cite it as [6]."));
    assert_eq!(
        results[1],
        ("rewrite_search_query".into(), "ocean tides moon".into())
    );
    // R7 is the sixth relevant result: [6] is citable.
    assert_eq!(out.state.answer, "Tides [6].");
}

/// One grading reply as the property tests script it.
#[derive(Debug, Clone)]
enum GradingReply {
    /// A grade per result from these verdicts (cycled).
    Verdicts(Vec<bool>),
    /// Grades for some results only, with duplicates and numbers out of range.
    Ragged(Vec<(u8, bool)>),
    /// Not JSON.
    Garbage,
    /// An HTTP failure.
    Fails(u16),
}

impl GradingReply {
    fn reply(&self, count: usize) -> Reply {
        match self {
            Self::Verdicts(v) => {
                let grades: Vec<(bool, f64, &str)> = (0..count)
                    .map(|i| (v[i % v.len()], 0.5, "scripted"))
                    .collect();
                Reply::grades(&grades)
            }
            Self::Ragged(pairs) => {
                let grades: Vec<serde_json::Value> = pairs
                    .iter()
                    .map(|(i, r)| serde_json::json!({"index": i, "relevant": r, "confidence": 2.0, "reason": "x"}))
                    .collect();
                Reply::text(serde_json::json!({ "grades": grades }).to_string())
            }
            Self::Garbage => Reply::text("I think they are all fine."),
            Self::Fails(status) => Reply::status(*status),
        }
    }
}

fn arb_grading() -> impl Strategy<Value = GradingReply> {
    prop_oneof![
        4 => proptest::collection::vec(any::<bool>(), 1..4).prop_map(GradingReply::Verdicts),
        1 => proptest::collection::vec((0u8..9, any::<bool>()), 0..8).prop_map(GradingReply::Ragged),
        1 => Just(GradingReply::Garbage),
        1 => prop_oneof![Just(400u16), Just(401)].prop_map(GradingReply::Fails),
    ]
}

/// A run of `search_web_for_info` against arbitrary searches, gradings and rewrites; the
/// model answers each grading and rewrite call in turn (cycling the scripts).
fn searched_run(
    found: Vec<usize>,
    gradings: Vec<GradingReply>,
    rewrites: Vec<String>,
    final_answer: String,
) -> (SessionState, Vec<String>, usize) {
    let counts: RefCell<VecDeque<usize>> = RefCell::new(VecDeque::new());
    let graded = RefCell::new(0usize);
    let rewritten = RefCell::new(0usize);
    let reasons = RefCell::new(0usize);
    let llm = ResponderLlm::new(|request: &ChatRequest, n| match RequestKind::of(request) {
        RequestKind::Reason => {
            *reasons.borrow_mut() += 1;
            if *reasons.borrow() == 1 {
                search_call("first query")
            } else {
                Reply::text(final_answer.clone())
            }
        }
        RequestKind::Grading => {
            let count = request.messages[1].content.matches("\n[").count() + 1;
            counts.borrow_mut().push_back(count);
            let i = *graded.borrow();
            *graded.borrow_mut() += 1;
            gradings[i % gradings.len()].reply(count)
        }
        RequestKind::Rewrite => {
            let i = *rewritten.borrow();
            *rewritten.borrow_mut() += 1;
            Reply::rewrite(&rewrites[i % rewrites.len()])
        }
        RequestKind::Observe => answer(&final_answer),
        RequestKind::Synthesis => Reply::text(final_answer.clone()),
        other => panic!("unexpected call #{n}: {other:?}"),
    });
    let answers: Vec<_> = found
        .iter()
        .enumerate()
        .map(|(i, n)| Ok(results(&format!("q{i}"), *n)))
        .collect();
    let search = ScriptedSearch::new(answers).lenient();
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("popup", 1_000);
    state.begin_run(QUESTION, None, config(), 1_000);
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new())
            .with_search(Some(&search))
            .drive(&mut state),
    );
    let rewrite_calls = *rewritten.borrow();
    (state, search.texts(), rewrite_calls)
}

fn graded_entries(state: &SessionState) -> Vec<(String, Vec<Verdict>)> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::Grades { query, graded } => Some((
                query.clone(),
                graded.iter().map(|g| g.grade.verdict).collect(),
            )),
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 7: every result gets exactly one grade (relevant, not relevant, or
    /// ungraded when the grader gave none), whatever the grader replies.
    #[test]
    fn every_result_gets_exactly_one_grade(
        found in proptest::collection::vec(0usize..8, 3),
        gradings in proptest::collection::vec(arb_grading(), 1..4),
        rewrites in proptest::collection::vec("[a-z]{3,8}( [a-z]{3,8})?", 1..3),
    ) {
        let (state, _, _) = searched_run(found, gradings, rewrites, "Done.".into());
        let searches: Vec<(String, usize)> = state.trajectory.iter().filter_map(|e| match &e.item {
            Item::Search { query, hits, error: None, .. } => Some((query.clone(), hits.len())),
            _ => None,
        }).collect();
        let grades = graded_entries(&state);
        let with_results: Vec<&(String, usize)> = searches.iter().filter(|(_, n)| *n > 0).collect();
        prop_assert_eq!(grades.len(), with_results.len());
        for ((query, verdicts), (searched, hits)) in grades.iter().zip(with_results) {
            prop_assert_eq!(query, searched);
            prop_assert_eq!(verdicts.len(), *hits);
        }
        prop_assert_eq!(state.status, RunStatus::Completed);
    }

    /// Property 8: a round with fewer than half its results relevant leads to a rewritten
    /// query that differs from every earlier one (case and spacing aside), at most 2
    /// rewrites and 3 searches; a round at or over half ends the search.
    #[test]
    fn few_relevant_results_lead_to_a_new_query_at_most_twice(
        found in proptest::collection::vec(0usize..6, 3),
        verdicts in proptest::collection::vec(proptest::collection::vec(any::<bool>(), 1..4), 3),
        rewrites in proptest::collection::vec(prop_oneof![
            Just("first query".to_string()),
            Just("FIRST  query".to_string()),
            "[a-z]{3,8}( [a-z]{3,8})?",
        ], 1..5),
    ) {
        let gradings: Vec<GradingReply> = verdicts.into_iter().map(GradingReply::Verdicts).collect();
        let (state, searched, rewrite_calls) = searched_run(found, gradings, rewrites, "Done.".into());
        prop_assert!(searched.len() <= 3);
        for (i, q) in searched.iter().enumerate() {
            for earlier in &searched[..i] {
                prop_assert_ne!(normalized(q), normalized(earlier));
            }
        }
        let rewrites = state.trajectory.iter().filter(|e| matches!(e.item, Item::Rewrite { .. })).count();
        prop_assert_eq!(rewrites, searched.len() - 1);
        // Every round but the last was under the threshold; the last one ended the search.
        let rounds: Vec<(usize, usize)> = state.trajectory.iter().filter_map(|e| match &e.item {
            Item::Search { hits, error: None, .. } => Some(hits.len()),
            _ => None,
        }).zip(0..).map(|(hits, i)| {
            let relevant = graded_entries(&state)
                .into_iter()
                .filter(|(q, _)| *q == searched[i])
                .map(|(_, v)| v.iter().filter(|v| **v == Verdict::Relevant).count())
                .next()
                .unwrap_or(0);
            (relevant, hits)
        }).collect();
        for (relevant, hits) in &rounds[..rounds.len() - 1] {
            prop_assert!(*hits == 0 || relevant * 2 < *hits, "{:?}", rounds);
        }
        // And the converse: a last round under the threshold ends the search only at the
        // third search or once a rewrite was asked for twice and kept repeating a query.
        if let Some((relevant, hits)) = rounds.last() {
            let under = *hits == 0 || relevant * 2 < *hits;
            if under && searched.len() < 3 {
                prop_assert!(rewrite_calls >= searched.len() - 1 + 2, "{} rewrite calls: {:?} {:?}", rewrite_calls, rounds, searched);
            }
        }
    }

    /// Property 9: every citation in a saved answer points at a result graded relevant.
    #[test]
    fn every_citation_points_at_a_relevant_result(
        found in proptest::collection::vec(0usize..6, 3),
        gradings in proptest::collection::vec(arb_grading(), 1..4),
        cited in proptest::collection::vec(1u32..12, 0..6),
    ) {
        let text: String = cited.iter().map(|n| format!("Fact [{n}]. ")).collect();
        let (state, _, _) = searched_run(found, gradings, vec!["other words".into()], text);
        let relevant: Vec<String> = state.trajectory.iter().filter_map(|e| match &e.item {
            Item::Grades { graded, .. } => Some(graded.iter().filter(|g| g.grade.verdict == Verdict::Relevant).map(|g| g.hit.url.clone()).collect::<Vec<_>>()),
            _ => None,
        }).flatten().collect();
        for citation in knowledgelens::agent::citations::find(&state.answer) {
            let source = state.sources.iter().find(|s| s.id == citation.id);
            prop_assert!(source.is_some(), "[{}] is cited but is no source", citation.id);
            prop_assert!(relevant.contains(&source.unwrap().url));
        }
        for source in &state.sources {
            prop_assert!(relevant.contains(&source.url));
        }
    }

    /// Property 14: a search that fails after its retry leads to a model-only answer that
    /// carries the disclaimer (a notice, and a trajectory entry the export holds).
    #[test]
    fn a_failing_search_gives_a_model_only_answer_with_the_disclaimer(
        kind in 0usize..3,
        service in "[A-Z][a-z]{2,12}( [A-Z][a-z]{2,8})?",
        detail in "[a-z]{3,10}( [a-z]{3,10}){0,3}",
        status in prop_oneof![Just(429u16), 500u16..600],
        waited_ms in 1_000u64..60_000,
    ) {
        // Any service, any reason, any retryable status: the disclaimer names what failed.
        let failure = || match kind {
            0 => SearchError::network(&service, &detail),
            1 => SearchError::timeout(&service, waited_ms),
            _ => SearchError::status(&service, status, &detail),
        };
        let script = Script {
            reason: [search_call("Eddystone")].into(),
            observe: [answer("From the model: 1882 [1].")].into(),
            ..Script::default()
        };
        let out = run(script, ScriptedSearch::new(vec![Err(failure()), Err(failure())]), config());
        prop_assert_eq!(out.search.texts().len(), 2);
        prop_assert_eq!(out.state.status, RunStatus::Completed);
        prop_assert_eq!(&out.state.answer, "From the model: 1882.");
        prop_assert!(out.state.sources.is_empty());
        prop_assert!(out.state.notices.iter().any(|n| n.starts_with("Web search failed") && n.contains(&failure().message)));
        prop_assert!(failure().message.contains(&service), "{}", failure().message);
        let unreachable = matches!(fallbacks(&out.state)[..], [Fallback::Unreachable { .. }]);
        prop_assert!(unreachable, "{:?}", fallbacks(&out.state));
    }
}

/// A search service that never answers.
struct Silent;

impl knowledgelens::ports::SearchClient for Silent {
    fn search<'a>(
        &'a self,
        _query: &'a knowledgelens::ports::SearchQuery,
    ) -> futures::future::LocalBoxFuture<'a, Result<Vec<SearchResult>, SearchError>> {
        Box::pin(futures::future::pending())
    }
}

#[test]
fn stop_abandons_a_search_in_flight() {
    let script = RefCell::new(Script {
        reason: [search_call("Eddystone")].into(),
        synthesis: [Reply::text("Stopped before the search came back.")].into(),
        ..Script::default()
    });
    let llm = ResponderLlm::new(|request: &ChatRequest, n| {
        let mut s = script.borrow_mut();
        match RequestKind::of(request) {
            RequestKind::Reason => s.reason.pop_front(),
            RequestKind::Synthesis => s.synthesis.pop_front(),
            _ => None,
        }
        .unwrap_or_else(|| panic!("unexpected call #{n}"))
    });
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("popup", 1_000);
    state.begin_run(QUESTION, None, config(), 1_000);
    let stop = StopSignal::new();
    let engine =
        Engine::new(&llm, &clock, &sink, &store, &tools, stop.clone()).with_search(Some(&Silent));
    let mut run = Box::pin(engine.drive(&mut state));
    assert!(
        knowledgelens::testing::poll_times(run.as_mut(), 50).is_none(),
        "the search never answers, so the run waits"
    );
    stop.raise();
    assert!(knowledgelens::testing::poll_times(run.as_mut(), 50).is_some());
    drop(run);
    assert_eq!(state.status, RunStatus::Stopped);
    assert_eq!(state.answer, "Stopped before the search came back.");
    assert!(tool_result(&state).contains("stopped by the user"));
    assert!(sink.names().contains(&"searching"));
}

#[test]
fn the_reply_schemas_are_objects_with_the_limits_of_the_code() {
    use knowledgelens::agent::step::search::prompt::{
        grades_schema, rewrite_schema, MAX_REASON_CHARS,
    };
    let grades = grades_schema();
    let item = &grades["properties"]["grades"]["items"];
    assert_eq!(item["required"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        item["properties"]["reason"]["maxLength"].as_u64(),
        Some(MAX_REASON_CHARS as u64)
    );
    let rewrite = rewrite_schema();
    assert_eq!(
        rewrite["properties"]["query"]["maxLength"].as_u64(),
        Some(knowledgelens::tools::search::MAX_QUERY_CHARS as u64)
    );
    assert_eq!(rewrite["required"][0], "query");
}
