//! The engine-overhead benchmark, shared by the native runner and the wasm build (feature
//! `bench`): runs of 5 tool steps plus a final answer against a zero-latency scripted model,
//! a ~1 KB question, ~2 KB tool results, and the state saved after every phase.

use crate::agent::{Engine, StopSignal};
use crate::state::config::RunConfig;
use crate::state::{PageInfo, RunStatus, SessionState};
use crate::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use crate::tools::ToolBox;

/// Steps per benchmark run (5 tool steps and the answer step).
pub const STEPS_PER_RUN: u32 = 6;

fn script() -> Vec<Reply> {
    let mut replies = Vec::new();
    for i in 0..5 {
        replies.push(Reply::tool(
            "read_page",
            &format!("{{\"offset\": {}, \"max_chars\": 2000}}", i * 2000),
        ));
        replies.push(Reply::text(
            r#"{"should_continue": true, "final_answer": null}"#,
        ));
    }
    replies.push(Reply::text(
        "Plants turn light, water and carbon dioxide into sugar and oxygen.",
    ));
    replies
}

/// One run; returns its duration in ms as measured by `now`.
pub fn one_run(now: &dyn Fn() -> f64) -> f64 {
    let llm = ScriptedLlm::new(script());
    llm.record_requests.set(false);
    let clock = ManualClock::new(0);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let page = PageInfo {
        title: "Photosynthesis".into(),
        url: "https://example.test/p".into(),
        text: "Chlorophyll absorbs light. ".repeat(500),
        ..Default::default()
    };
    let question =
        "Explain, step by step, how the light reactions feed the Calvin cycle. ".repeat(14);
    let mut state = SessionState::new("tab:1", 0);
    let config = RunConfig {
        max_steps: STEPS_PER_RUN,
        page_excerpt_chars: 1000,
        ..RunConfig::default()
    };
    state.begin_run(&question, Some(page), config, 0);
    let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
    let start = now();
    futures::executor::block_on(engine.drive(&mut state));
    let elapsed = now() - start;
    assert!(
        state.status == RunStatus::Completed && state.step == STEPS_PER_RUN,
        "benchmark run did not complete as scripted"
    );
    elapsed
}

/// Per-step overhead (ms) of `runs` runs after `warmup` unmeasured ones.
pub fn step_overhead(runs: usize, warmup: usize, now: &dyn Fn() -> f64) -> Vec<f64> {
    for _ in 0..warmup {
        one_run(now);
    }
    (0..runs)
        .map(|_| one_run(now) / f64::from(STEPS_PER_RUN))
        .collect()
}

/// The median and 95th percentile of `samples`.
pub fn median_p95(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

/// `text`'s characters from `start`, `len` of them (wrapping around).
fn slice_of(text: &str, start: usize, len: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    (0..len).map(|i| chars[(start + i) % chars.len()]).collect()
}

/// The share of the context (percent, tokens after / before) a compaction by the
/// deterministic fallback leaves, for one session built from fixture page `page`: four
/// earlier questions answered from it, then a run three read_page steps in (results of
/// 1,500 characters), compacting on a 16,384-token window before its fourth step. `others`
/// lends the earlier answers other texts' words. `None` when the run did not compact.
pub fn fallback_compaction_remaining_pct(page: &str, others: &[&str]) -> Option<f64> {
    use crate::llm::{LlmError, LlmErrorKind};
    use crate::state::trajectory::Item;
    use crate::state::{Next, Turn};
    use crate::types::ToolCall;

    let mut state = SessionState::new("tab:1", 0);
    let config = RunConfig {
        context_window: 16_384,
        token_budget: 10_000_000,
        ..RunConfig::default()
    };
    state.begin_run("What does the page say?", Some(page_info(page)), config, 0);
    state.turns = others
        .iter()
        .enumerate()
        .map(|(i, other)| Turn {
            question: format!("Question {i}: what does this part mean?"),
            answer: slice_of(other, i * 700, 1_200),
            status: RunStatus::Completed,
            explain: false,
            ..Default::default()
        })
        .collect();
    for step in 1..=3u32 {
        state.step = step;
        let call = ToolCall {
            id: format!("c{step}"),
            name: "read_page".into(),
            arguments: format!("{{\"offset\": {}, \"max_chars\": 1500}}", step * 1500),
        };
        state.record(0, Item::ToolCall { call: call.clone() });
        let content = slice_of(page, step as usize * 1_500, 1_500);
        state.record(
            0,
            Item::ToolResult {
                call_id: call.id,
                name: call.name,
                ok: true,
                content,
            },
        );
        state.record(
            0,
            Item::Observation {
                text: String::new(),
                should_continue: true,
                final_answer: None,
            },
        );
    }
    state.next = Some(Next::Compact {
        resume: Box::new(Next::Reason),
        resume_attempts: 0,
    });
    // The model fails the compaction call (the fallback compacts), then answers.
    let llm = ScriptedLlm::new(vec![
        Reply::Fail(LlmError::new(LlmErrorKind::Server, "HTTP 500")),
        Reply::text("The page says what it says."),
    ]);
    let clock = ManualClock::new(0);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
    futures::executor::block_on(engine.drive(&mut state));
    state.trajectory.iter().find_map(|e| match e.item {
        Item::Compaction {
            tokens_before,
            tokens_after,
            by_model: false,
            ..
        } if tokens_before > 0 => Some(tokens_after as f64 * 100.0 / tokens_before as f64),
        _ => None,
    })
}

fn page_info(text: &str) -> PageInfo {
    PageInfo {
        title: "Fixture page".into(),
        url: "https://example.test/fixture".into(),
        text: text.to_string(),
        ..Default::default()
    }
}

/// A page of about `bytes` characters for the retrieval benchmarks: sections under `##`
/// headings, paragraphs of sentences drawn from a vocabulary of 4,000 made-up words (a
/// fixed pseudo-random sequence, so every run indexes the same text).
pub fn rag_page(bytes: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "sa", "tor", "vel", "an", "dri", "ost", "ul", "pe", "qua", "zin",
        "ho", "bes",
    ];
    let word = |n: u32| -> String {
        let mut n = n % 4_000;
        let mut w = String::new();
        for _ in 0..3 {
            w.push_str(SYLLABLES[(n % 16) as usize]);
            n /= 16;
        }
        w
    };
    let mut seed: u32 = 0x2545_f491;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let mut text = String::with_capacity(bytes + 2_000);
    let mut section = 0;
    while text.len() < bytes {
        section += 1;
        text.push_str(&format!("## Section {section}\n"));
        for _ in 0..4 {
            for _ in 0..6 {
                let len = 6 + next() % 12;
                let words: Vec<String> = (0..len).map(|_| word(next())).collect();
                text.push_str(&words.join(" "));
                text.push_str(". ");
            }
            text.push_str("\n\n");
        }
    }
    text
}

/// Milliseconds each of `runs` builds of the passage index of `text` took.
pub fn rag_index(text: &str, runs: usize, now: &dyn Fn() -> f64) -> Vec<f64> {
    (0..runs)
        .map(|_| {
            let t0 = now();
            let index = crate::page::PageIndex::build(text);
            let ms = now() - t0;
            std::hint::black_box(index.passages().len());
            ms
        })
        .collect()
}

/// Milliseconds each of `runs` retrievals (the best 8 passages for a question of six words
/// from the page) took on the index of `text`.
pub fn rag_retrieve(text: &str, runs: usize, now: &dyn Fn() -> f64) -> Vec<f64> {
    let index = crate::page::PageIndex::build(text);
    let words: Vec<&str> = text.split_whitespace().collect();
    (0..runs)
        .map(|i| {
            let at = (i * 7_919) % words.len().saturating_sub(6).max(1);
            let query = words[at..(at + 6).min(words.len())].join(" ");
            let t0 = now();
            let hits = index.search(text, &query, 8);
            let ms = now() - t0;
            std::hint::black_box(hits.len());
            ms
        })
        .collect()
}
