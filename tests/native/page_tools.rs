//! The page as a knowledge base in a run: the prompt holds the passages that
//! best match the question, `query_page` finds more, the answer keeps only citations of
//! passages the run was given, and says how much of the page it rests on.

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::page;
use knowledgelens::state::{RunStatus, SessionState};
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use knowledgelens::tools::{QueryPage, ReadPage, Tool, ToolBox, ToolContext, ToolErrorKind};
use knowledgelens::types::PageInfo;

const FACT: &str = "The lighthouse keeper's cat is called Marmalade.";

/// About 1 MB of sections about the harbour, and one fact near the end.
fn big_page() -> PageInfo {
    let filler = "The harbour master logs every ship that passes the light. ".repeat(12);
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 1_000_000 {
        n += 1;
        text.push_str(&format!("## Log {n}\n{filler}\n\n"));
    }
    text.push_str(&format!("## Keeper\n{FACT}\n\n## Afterword\n{filler}"));
    PageInfo {
        title: "Harbour log".into(),
        url: "http://127.0.0.1/log".into(),
        text,
        ..Default::default()
    }
}

fn fact_id(page: &PageInfo) -> String {
    let index = page::PageIndex::build(&page.text);
    let i = index
        .passages()
        .iter()
        .position(|p| page.text[p.range.clone()].contains(FACT))
        .expect("the fact is in a passage");
    page::passage_id(i)
}

fn query(args: &str, page: &PageInfo) -> Result<String, knowledgelens::tools::ToolError> {
    let ctx = ToolContext {
        page: Some(page),
        selection: None,
        added: &[],
    };
    futures::executor::block_on(QueryPage.run(args, &ctx))
}

#[test]
fn query_page_gives_the_best_passages_with_labels_and_heading_paths() {
    let page = big_page();
    let id = fact_id(&page);
    let out = query(r#"{"query": "keeper cat ship", "k": 2}"#, &page).expect("found");
    assert!(
        out.starts_with("2 passages for \"keeper cat ship\", best first (the page has "),
        "{out}"
    );
    let first = out.split("\n\n").nth(1).expect("a passage");
    assert_eq!(first, format!("[{id}] Keeper\n## Keeper\n{FACT}"));
    assert!(out.contains(FACT));
    let err = query(r#"{"query": "zebra quagga"}"#, &page).expect_err("nothing matches");
    assert_eq!(err.kind, ToolErrorKind::NotFound);
    assert!(err.message.contains("zebra quagga"), "{}", err.message);
    let err = query(r#"{"query": "cat", "k": 11}"#, &page).expect_err("k is at most 10");
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    let err = query(r#"{"query": "  "}"#, &page).expect_err("blank");
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
}

fn control(answer: &str) -> Reply {
    Reply::text(serde_json::json!({"should_continue": false, "final_answer": answer}).to_string())
}

fn run(question: &str, page: PageInfo, replies: Vec<Reply>) -> (SessionState, ScriptedLlm) {
    let llm = ScriptedLlm::new(replies);
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("tab:3", 1_000);
    state.begin_run(question, Some(page), RunConfig::default(), 1_000);
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        futures::executor::block_on(engine.drive(&mut state));
    }
    (state, llm)
}

#[test]
fn a_fact_near_the_end_of_a_large_page_reaches_the_prompt_and_is_cited() {
    let page = big_page();
    let id = fact_id(&page);
    let answer = format!("The cat is called Marmalade [{id}], like the jam [p2000].");
    let (state, llm) = run(
        "What is the lighthouse keeper's cat called?",
        page,
        vec![Reply::text(&answer)],
    );
    assert_eq!(state.status, RunStatus::Completed);
    let requests = llm.requests.borrow();
    // The page block is the page's start; the fact's passage comes in a message of its own,
    // then what was shown, just before the question.
    let block = &requests[0].messages[1].content;
    assert!(!block.contains(FACT));
    let messages = &requests[0].messages;
    let cut = &messages[messages.len() - 2].content;
    assert!(
        cut.starts_with("You have seen only part of the page ("),
        "{cut}"
    );
    let extra = &messages[messages.len() - 3].content;
    assert!(
        extra.starts_with(
            "Passages from further on in the page that match the question best:\n<page-"
        ) && extra.contains(&format!("[{id}] Keeper\n## Keeper\n{FACT}")),
        "{extra}"
    );
    assert!(block.chars().count() + extra.chars().count() < 8_000);
    // p2000 was not given (the block holds the first passages, the extra the best ones).
    assert_eq!(
        state.answer,
        format!("The cat is called Marmalade [{id}], like the jam.")
    );
    let ids: Vec<&str> = state.sources.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [id.as_str()]);
    assert_eq!(state.sources[0].excerpt, format!("Keeper\n{FACT}"));
    let total = page::index_of(&state.page.as_ref().unwrap().text)
        .passages()
        .len();
    let given = state.passages_given().len();
    assert!(given > 1 && given < 20, "{given}");
    assert!(
        state.notices.contains(&format!(
            "Based on {given} of the page's {total} passages, chosen for the question."
        )),
        "{:?}",
        state.notices
    );
}

#[test]
fn passages_found_by_query_page_become_citable() {
    let page = big_page();
    let id = fact_id(&page);
    // The question shares no word with the fact: the prompt holds other passages, the
    // model asks query_page.
    let answer = format!("Marmalade [{id}].");
    let (state, llm) = run(
        "Who lives with the keeper?",
        page,
        vec![
            Reply::tool("query_page", r#"{"query": "keeper cat", "k": 1}"#),
            control(&answer),
        ],
    );
    assert_eq!(state.status, RunStatus::Completed, "{:?}", state.error);
    assert_eq!(state.answer, answer);
    assert_eq!(state.sources.len(), 1);
    let requests = llm.requests.borrow();
    let observe = requests.last().expect("observe request");
    assert!(observe.messages.iter().any(|m| m.content.contains(FACT)));
}

#[test]
fn arguments_outside_the_schemas_limits_are_refused_with_the_field_and_its_range() {
    // Found before by clamping (max_chars) or not at all (a query of any length): the model
    // now sees what to correct.
    let page = big_page();
    let ctx = ToolContext {
        page: Some(&page),
        selection: None,
        added: &[],
    };
    let read = |args: &str| futures::executor::block_on(ReadPage.run(args, &ctx));
    for (args, message) in [
        (
            r#"{"max_chars": 0}"#,
            "field \"max_chars\": must be 1 to 8000 (got 0)",
        ),
        (
            r#"{"offset": 10, "max_chars": 9000}"#,
            "field \"max_chars\": must be 1 to 8000 (got 9000)",
        ),
    ] {
        let err = read(args).expect_err(args);
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{args}");
        assert_eq!(err.message, message);
    }
    assert!(read(r#"{"max_chars": 8000}"#).is_ok());
    assert!(read(r#"{"max_chars": 1}"#).is_ok());
    let long = "keeper ".repeat(50);
    let err = query(&format!(r#"{{"query": "{long}"}}"#), &page).expect_err("too long");
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    assert_eq!(
        err.message,
        "field \"query\": must be 1 to 300 characters long (got 350)"
    );
    let err = query(r#"{"query": "cat", "k": 0}"#, &page).expect_err("k is at least 1");
    assert_eq!(err.message, "field \"k\": must be 1 to 10 (got 0)");
    // The reasoning's length is a hint to the model, not a limit.
    let reasoning = "x".repeat(600);
    assert!(query(
        &format!(r#"{{"query": "cat", "reasoning": "{reasoning}"}}"#),
        &page
    )
    .is_ok());
}
