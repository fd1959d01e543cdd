//! `summarize_page_content` driven natively with a scripted model that fails on
//! any call it does not expect: a page that fits the window is summarised in one call; a
//! long one section by section (each a `section_summary` entry, with "Summarizing section
//! k of n" events), then combined; a budget that cannot cover every section stops the
//! mapping and says so; Stop keeps the sections done; and a worker stopped mid-summary
//! redoes at most the section in flight.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::events::EventKind;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, Role};
use knowledgelens::state::{self, Next, RunStatus, SessionState};
use knowledgelens::testing::{
    poll_times, polls_to_finish, ManualClock, MemoryStore, RecordingSink, Reply, RequestKind,
    ResponderLlm, YieldingLlm,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::PageInfo;

const QUESTION: &str = "Summarize this page";
const SESSION: &str = "popup";

/// A page of `parts` parts, each under a `## Part k` heading with about 900 tokens of text.
fn long_page(parts: usize) -> PageInfo {
    let text: Vec<String> = (1..=parts)
        .map(|k| {
            let body =
                format!("Part {k} tells how the harbour grew in its {k}th decade. ").repeat(60);
            format!("## Part {k}\n{body}")
        })
        .collect();
    PageInfo {
        title: "The harbour".into(),
        url: "http://127.0.0.1/harbour".into(),
        text: text.join("\n\n"),
        ..Default::default()
    }
}

fn short_page() -> PageInfo {
    PageInfo {
        title: "The harbour".into(),
        url: "http://127.0.0.1/harbour".into(),
        text: "## Harbour\nThe harbour opened in 1861.\n\n## Ferry\nThe ferry leaves at noon."
            .into(),
        ..Default::default()
    }
}

/// A 2,048-token window: a part's section fits, two parts do not.
fn config() -> RunConfig {
    RunConfig {
        context_window: 2_048,
        ..RunConfig::default()
    }
}

fn summarize_call() -> Reply {
    Reply::tool(
        "summarize_page_content",
        r#"{"reasoning": "the user asked for a summary"}"#,
    )
}

fn answer(text: &str) -> Reply {
    Reply::text(
        serde_json::json!({"should_continue": false, "final_answer": text, "failed": false})
            .to_string(),
    )
}

/// The scripted replies by kind; a call of another kind, or past its queue, fails the test.
#[derive(Default)]
struct Script {
    reason: VecDeque<Reply>,
    observe: VecDeque<Reply>,
    synthesis: VecDeque<Reply>,
    combine: VecDeque<Reply>,
}

/// What the model answers a summary call: "Summary of section k." (k from the request).
fn section_reply(request: &ChatRequest) -> Reply {
    let user = &request.messages[1].content;
    let k = user
        .split("Section ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or("0");
    if user.contains("The page (its title, then its text)") {
        Reply::text("Summary of the whole page.")
    } else {
        Reply::text(format!("Summary of section {k}."))
    }
}

struct Outcome {
    state: SessionState,
    requests: Vec<ChatRequest>,
    sink: RecordingSink,
}

impl Outcome {
    fn kinds(&self) -> Vec<RequestKind> {
        self.requests.iter().map(RequestKind::of).collect()
    }
    fn summaries(&self) -> Vec<(u32, u32, String)> {
        section_summaries(&self.state)
    }
    fn tool_result(&self) -> String {
        self.state
            .trajectory
            .iter()
            .find_map(|e| match &e.item {
                Item::ToolResult { name, content, .. } if name == "summarize_page_content" => {
                    Some(content.clone())
                }
                _ => None,
            })
            .expect("the summary call has a result")
    }
    fn progress(&self) -> Vec<(Option<u32>, u32)> {
        self.sink
            .events
            .borrow()
            .iter()
            .filter_map(|e| match e.event.kind {
                EventKind::Summarizing { section, of } => Some((section, of)),
                _ => None,
            })
            .collect()
    }
}

fn section_summaries(state: &SessionState) -> Vec<(u32, u32, String)> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::SectionSummary {
                index, of, text, ..
            } => Some((*index, *of, text.clone())),
            _ => None,
        })
        .collect()
}

fn responder(
    script: &RefCell<Script>,
    stop_at_section: Option<(usize, StopSignal)>,
) -> impl Fn(&ChatRequest, usize) -> Reply + '_ {
    let sections = Cell::new(0);
    move |request: &ChatRequest, n| {
        let mut s = script.borrow_mut();
        let kind = RequestKind::of(request);
        let reply = match kind {
            RequestKind::Summary => {
                sections.set(sections.get() + 1);
                if let Some((at, stop)) = &stop_at_section {
                    if sections.get() == *at {
                        stop.raise();
                    }
                }
                Some(section_reply(request))
            }
            RequestKind::Reason => s.reason.pop_front(),
            RequestKind::Observe => s.observe.pop_front(),
            RequestKind::Synthesis => s.synthesis.pop_front(),
            RequestKind::Combine => s.combine.pop_front(),
            _ => None,
        };
        reply.unwrap_or_else(|| panic!("unexpected call #{n}: {kind:?}"))
    }
}

fn run(script: Script, page: PageInfo, config: RunConfig) -> Outcome {
    run_stopping(script, page, config, None)
}

fn run_stopping(
    script: Script,
    page: PageInfo,
    config: RunConfig,
    stop_at_section: Option<usize>,
) -> Outcome {
    let script = RefCell::new(script);
    let stop = StopSignal::new();
    let llm = ResponderLlm::new(responder(
        &script,
        stop_at_section.map(|at| (at, stop.clone())),
    ));
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new(SESSION, 1_000);
    state.begin_run(QUESTION, Some(page), config, 1_000);
    state.nonce = "n0nce".into();
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, stop).drive(&mut state),
    );
    let left = script.borrow();
    assert!(
        left.reason.is_empty()
            && left.observe.is_empty()
            && left.synthesis.is_empty()
            && left.combine.is_empty(),
        "scripted replies never asked for"
    );
    let requests = llm.requests.borrow().clone();
    Outcome {
        state,
        requests,
        sink,
    }
}

#[test]
fn a_page_that_fits_the_window_is_summarised_in_one_call() {
    let script = Script {
        reason: [summarize_call()].into(),
        observe: [answer(
            "The harbour opened in 1861; the ferry leaves at noon.",
        )]
        .into(),
        ..Script::default()
    };
    let out = run(script, short_page(), config());
    assert_eq!(out.state.status, RunStatus::Completed);
    assert_eq!(
        out.kinds(),
        [
            RequestKind::Reason,
            RequestKind::Summary,
            RequestKind::Observe
        ]
    );
    assert_eq!(
        out.summaries(),
        [(0, 1, "Summary of the whole page.".into())]
    );
    assert_eq!(
        out.tool_result(),
        "Page summary (the whole page).\n\nSummary of the whole page."
    );
    assert_eq!(out.progress(), [(Some(1), 1)]);
    // The page text goes to the model fenced, as data, with the goal.
    let summary = &out.requests[1];
    assert_eq!(summary.messages[0].role, Role::System);
    assert!(summary.messages[0].content.contains("<page-n0nce>"));
    let user = &summary.messages[1].content;
    assert!(
        user.contains("The user's goal: Summarize this page"),
        "{user}"
    );
    assert!(
        user.contains(
            "<page-n0nce>\nTitle: \"The harbour\"\n\n## Harbour\nThe harbour opened in 1861."
        ),
        "{user}"
    );
    assert!(summary.tools.is_empty());
    // The loop sees the result inside the fence too.
    let observe = &out.requests[2];
    let result = observe
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("the tool result");
    assert!(
        result.content.starts_with("<page-n0nce>") && result.content.contains("Page summary"),
        "{}",
        result.content
    );
    assert!(out.state.notices.is_empty());
}

#[test]
fn a_long_page_is_mapped_by_section_and_reduced_within_the_window() {
    let script = Script {
        reason: [summarize_call()].into(),
        combine: [Reply::text("The harbour grew over twelve decades.")].into(),
        observe: [answer("It grew over twelve decades.")].into(),
        ..Script::default()
    };
    let out = run(script, long_page(12), config());
    assert_eq!(out.state.status, RunStatus::Completed);
    let summaries = out.summaries();
    assert_eq!(summaries.len(), 12, "{summaries:?}");
    for (i, (index, of, text)) in summaries.iter().enumerate() {
        assert_eq!((*index as usize, *of), (i, 12));
        assert_eq!(*text, format!("Summary of section {}.", i + 1));
    }
    let progress = out.progress();
    let expected: Vec<(Option<u32>, u32)> = (1..=12)
        .map(|k| (Some(k), 12))
        .chain([(None, 12)])
        .collect();
    assert_eq!(progress, expected);
    assert_eq!(
        out.tool_result(),
        "Page summary (sections 1–12 of 12).\n\nThe harbour grew over twelve decades."
    );
    // Every request fits the window: 90% of 2,048 tokens.
    for request in &out.requests {
        let tokens = knowledgelens::agent::context::request_tokens(request);
        assert!(tokens <= 2_048 * 9 / 10, "{tokens} tokens");
    }
    // Each section request holds its part only, under its heading.
    let sections: Vec<&ChatRequest> = out
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Summary)
        .collect();
    assert!(sections[2].messages[1]
        .content
        .contains("Section 3 of 12 of the page"));
    assert!(sections[2].messages[1]
        .content
        .contains("<page-n0nce>\nTitle: \"The harbour\"\nHeading: \"Part 3\"\n"));
    assert!(sections[2].messages[1]
        .content
        .contains("## Part 3\nPart 3 tells"));
    assert!(!sections[2].messages[1].content.contains("## Part 4"));
    // The combination lists every section summary, fenced.
    let combine = out
        .requests
        .iter()
        .find(|r| RequestKind::of(r) == RequestKind::Combine)
        .expect("a combination");
    let user = &combine.messages[1].content;
    assert!(user.contains("Summaries of sections 1–12 of 12"), "{user}");
    assert!(
        user.contains("Section 12 (Part 12): Summary of section 12."),
        "{user}"
    );
    // The Steps view lists each section summary.
    let views: Vec<String> = out
        .state
        .steps()
        .into_iter()
        .filter(|v| v.kind == "section_summary")
        .map(|v| v.text)
        .collect();
    assert_eq!(views[0], "Section 1 of 12 (Part 1): Summary of section 1.");
    assert!(out.state.tokens_used() <= out.state.config.token_budget);
}

#[test]
fn a_budget_that_cannot_cover_every_section_summarises_those_that_fit_and_says_so() {
    let script = Script {
        reason: [summarize_call()].into(),
        combine: [Reply::text("The harbour grew in its first decades.")].into(),
        observe: [answer("It grew in its first decades.")].into(),
        ..Script::default()
    };
    let out = run(
        script,
        long_page(12),
        RunConfig {
            token_budget: 14_000,
            ..config()
        },
    );
    assert_eq!(out.state.status, RunStatus::Completed);
    assert!(
        !out.state.partial,
        "the run was not cut by the budget itself"
    );
    let done = out.summaries().len();
    assert!((2..12).contains(&done), "{done} sections");
    let coverage = format!("sections 1–{done} of 12; the budget allows no more");
    assert_eq!(
        out.tool_result(),
        format!("Page summary ({coverage}).\n\nThe harbour grew in its first decades.")
    );
    assert_eq!(out.state.notices, [format!("Summarized {coverage}.")]);
    assert!(
        out.state.tokens_used() <= 14_000,
        "{}",
        out.state.tokens_used()
    );
    // No section was asked for beyond those recorded; no question was asked of the user.
    let asked = out
        .kinds()
        .iter()
        .filter(|k| **k == RequestKind::Summary)
        .count();
    assert_eq!(asked, done);
}

#[test]
fn stop_keeps_the_sections_done() {
    let script = Script {
        reason: [summarize_call()].into(),
        synthesis: [Reply::text("So far: the harbour's first three decades.")].into(),
        ..Script::default()
    };
    // Stop is pressed while the third section's call is answered.
    let out = run_stopping(script, long_page(12), config(), Some(3));
    assert_eq!(out.state.status, RunStatus::Stopped);
    assert_eq!(
        out.state.answer,
        "So far: the harbour's first three decades."
    );
    assert_eq!(out.summaries().len(), 3);
    let result = out.tool_result();
    assert!(
        result.starts_with("Page summary (sections 1–3 of 12; stopped by the user)."),
        "{result}"
    );
    assert!(
        result.contains("Section 2 (Part 2): Summary of section 2."),
        "{result}"
    );
    // The answer was written from them: the synthesis saw the result.
    let synthesis = out.requests.last().expect("the synthesis");
    assert_eq!(RequestKind::of(synthesis), RequestKind::Synthesis);
    assert!(synthesis
        .messages
        .iter()
        .any(|m| m.role == Role::Tool && m.content.contains("Summary of section 3.")));
}

#[test]
fn a_worker_stopped_mid_summary_redoes_at_most_one_section() {
    let script = RefCell::new(Script {
        reason: [summarize_call()].into(),
        combine: [Reply::text("The harbour grew over six decades.")].into(),
        observe: [answer("It grew over six decades.")].into(),
        ..Script::default()
    });
    let llm = YieldingLlm::new(ResponderLlm::new(responder(&script, None)), 3);
    let summary_requests = || {
        llm.inner
            .requests
            .borrow()
            .iter()
            .filter(|r| RequestKind::of(r) == RequestKind::Summary)
            .count()
    };
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new(SESSION, 1_000);
    state.begin_run(QUESTION, Some(long_page(6)), config(), 1_000);
    state.nonce = "n0nce".into();
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        let mut run = Box::pin(engine.drive(&mut state));
        // Poll until the fourth section's call is in flight, then stop the worker.
        let fourth_began = || {
            sink.events.borrow().iter().any(|e| {
                e.event.kind
                    == EventKind::Summarizing {
                        section: Some(4),
                        of: 6,
                    }
            })
        };
        while !(fourth_began() && llm.started() > llm.finished()) {
            assert!(poll_times(run.as_mut(), 1).is_none(), "the run went on");
        }
    }
    let stored = futures::executor::block_on(state::load(&store, SESSION))
        .expect("loads")
        .expect("stored");
    assert!(matches!(stored.next, Some(Next::Summarize(_))));
    assert_eq!(
        section_summaries(&stored).len(),
        3,
        "three sections were saved"
    );
    let mut resumed = stored;
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        let mut run = Box::pin(engine.drive(&mut resumed));
        assert!(polls_to_finish(run.as_mut(), 10_000).is_some());
    }
    assert_eq!(resumed.status, RunStatus::Completed);
    let indices: Vec<u32> = section_summaries(&resumed).iter().map(|s| s.0).collect();
    assert_eq!(indices, [0, 1, 2, 3, 4, 5], "each section once, in order");
    // Reason, six sections, the combination and Observe, and the one section that was in
    // flight when the worker stopped, made again: nothing else was redone.
    assert_eq!(summary_requests(), 6, "each section answered once");
    assert_eq!(
        llm.started(),
        9 + 1,
        "only the section in flight was redone"
    );
}
