//! What each part of a request costs in prompt tokens, the README's table "What a request
//! costs": generated here from the frozen requests (`tests/fixtures/prompts.json`, which
//! `prompts::` holds to the code) and the built-in tools' model-facing definitions, counted
//! with the crate's estimator (o200k_base within a few percent). A prompt or tool change
//! that moves a figure fails this test until the table is rewritten:
//! `KL_BLESS=1 cargo test --all-features --test native -- prompt_costs::`.

use knowledgelens::tools::ToolBox;
use knowledgelens::types::tokens::estimate_tokens;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/prompts.json");
const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
const BEGIN: &str = "<!-- prompt-costs: tests/native/prompt_costs.rs -->\n";
const END: &str = "<!-- /prompt-costs -->";

fn fixture() -> Vec<Value> {
    let text = std::fs::read_to_string(FIXTURE).expect("the prompts fixture");
    serde_json::from_str(&text).expect("the prompts fixture is JSON")
}

/// The text of message `index` (negative: from the end) of the frozen request `case`.
fn message(requests: &[Value], case: &str, index: isize) -> String {
    let request = requests
        .iter()
        .find(|r| r["case"] == case)
        .unwrap_or_else(|| panic!("no frozen request {case}"));
    let messages = request["messages"].as_array().expect("messages");
    let at = if index < 0 {
        messages.len() as isize + index
    } else {
        index
    };
    messages[at as usize]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("{case} message {index} has text"))
        .to_string()
}

fn tokens(text: &str) -> u64 {
    estimate_tokens(text)
}

/// The table's rows: what the part is, and its tokens.
fn rows() -> Vec<(String, u64)> {
    let requests = fixture();
    let whole = message(&requests, "fresh_with_page/reason", 0);
    let cut = message(&requests, "cut_excerpt_unicode/reason", 0);
    let expert = message(&requests, "reading_expert/reason", 0);
    let mut rows = vec![
        (
            "System text (role, fence, \"The page does not say.\")".to_string(),
            tokens(&whole),
        ),
        (
            "… beside a cut page (the query_page sentence)".to_string(),
            tokens(&cut) - tokens(&whole),
        ),
        (
            "… reading level Simple or Expert".to_string(),
            tokens(&expert).saturating_sub(tokens(&whole)),
        ),
        (
            "Page block around the text (heading, fence, title, URL, citation rule)".to_string(),
            tokens(&message(&requests, "cut_excerpt_unicode/reason", 1)),
        ),
        (
            "Cut-page note (\"You have seen only part of the page …\")".to_string(),
            tokens(&message(&requests, "cut_excerpt_unicode/reason", 2)),
        ),
        (
            "Observe instruction (after a tool result, with the question)".to_string(),
            tokens(&message(&requests, "cut_excerpt_unicode/observe", -1)),
        ),
        (
            "Synthesis instruction (with the question)".to_string(),
            tokens(&message(
                &requests,
                "cut_excerpt_unicode/synthesis_ready",
                -1,
            )),
        ),
    ];
    for spec in ToolBox::builtin().specs() {
        let json = serde_json::to_string(&spec).expect("a tool spec is JSON");
        rows.push((format!("Tool definition `{}`", spec.name), tokens(&json)));
    }
    rows
}

fn table() -> String {
    let mut out = String::from("| part of a request | tokens |\n| --- | ---: |\n");
    for (part, tokens) in rows() {
        out.push_str(&format!("| {part} | {tokens} |\n"));
    }
    out
}

#[test]
fn the_readme_says_what_each_part_of_a_request_costs() {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let start = readme
        .find(BEGIN)
        .expect("README.md has the prompt-costs table")
        + BEGIN.len();
    let end = start + readme[start..].find(END).expect("the table's end marker");
    let want = table();
    if std::env::var_os("KL_BLESS").is_some() {
        let mut blessed = readme.clone();
        blessed.replace_range(start..end, &want);
        std::fs::write(README, blessed).expect("write README.md");
        return;
    }
    assert_eq!(
        &readme[start..end],
        want,
        "README.md's prompt-costs table is stale: KL_BLESS=1 cargo test --all-features --test native -- prompt_costs::"
    );
}

/// The parts are what they claim: the system texts differ only by their sentences, and no
/// part is empty (a renamed case or a template that lost a section would give 0).
#[test]
fn every_part_is_measured_on_real_text() {
    let rows = rows();
    assert!(rows.len() >= 7 + 4, "{rows:?}");
    for (part, tokens) in &rows {
        assert!(*tokens > 0, "{part} costs 0 tokens");
    }
    let requests = fixture();
    let whole = message(&requests, "fresh_with_page/reason", 0);
    let cut = message(&requests, "cut_excerpt_unicode/reason", 0);
    assert!(cut.contains("query_page") && !whole.contains("query_page"));
}
