//! The search phase's two model calls: the batched grading of one page of
//! results, and the rewrite of a query that found too little; and their replies' parsers.
//! Both requests are standalone (the goal, the query, the results; not the conversation),
//! so they are small and their size is bounded. Results are web text: quoted inside the
//! run's fence. Pure.

use serde_json::Value;

use crate::agent::context;
use crate::agent::fence::Fence;
use crate::agent::prompts::{standalone, strings};
use crate::llm::ChatRequest;
use crate::state::search::{Confidence, Grade, SearchRun, Verdict};
use crate::state::SessionState;
use crate::template::{BuiltinTemplate, Loaded, Template, TemplateError};
use crate::types::json_text::json_objects;
use crate::types::SearchResult;

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "search.tpl",
    text: include_str!("search.tpl"),
    sections: &[
        "grade_system",
        "grade_request",
        "rewrite_system",
        "rewrite_request",
        "rewrite_repeated",
    ],
};

/// The search template, loaded and validated once.
fn template() -> Result<&'static Template, TemplateError> {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE.loaded(&LOADED)
}

/// The JSON schema name of a grading reply.
pub const GRADES_SCHEMA: &str = "search_grades";
/// The JSON schema name of a rewrite reply.
pub const REWRITE_SCHEMA: &str = "search_rewrite";

/// Characters of a result's content shown to the grader (after its snippet).
const GRADED_CONTENT_CHARS: usize = 600;
/// Longest reason kept per grade (characters).
pub const MAX_REASON_CHARS: usize = 300;

/// The user's goal, as the grader and the rewriter see it.
fn goal(state: &SessionState) -> String {
    context::grounding(state).goal
}

/// The grading call for `results` (numbered from 1) found for `query`: JSON output
/// constrained to [`grades_schema`] when the run asks for constrained output.
pub fn grade(
    state: &SessionState,
    query: &str,
    results: &[SearchResult],
) -> Result<ChatRequest, TemplateError> {
    let fence = Fence::new(&state.nonce);
    let system = template()?.render(&strings(&[("fence_tag", &fence.tag())]), &["grade_system"])?;
    let listed: Vec<String> = results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (content, cut) = crate::types::text::clip(r.content.trim(), GRADED_CONTENT_CHARS);
            let more = if cut { "…" } else { "" };
            let body = if r.snippet.trim() == r.content.trim() || content.is_empty() {
                r.snippet.trim().to_string()
            } else {
                format!("{}\n{content}{more}", r.snippet.trim())
            };
            format!("[{}] {}\n{}\n{body}", i + 1, r.title.trim(), r.url)
        })
        .collect();
    let count = results.len().to_string();
    let request = template()?.render(
        &strings(&[
            ("goal", &goal(state)),
            ("query", query),
            ("count", &count),
            ("results", &fence.wrap(&listed.join("\n\n"))),
        ]),
        &["grade_request"],
    )?;
    // About 60 tokens a grade, and room for the JSON around them.
    let max_tokens = u32::try_from(results.len()).unwrap_or(u32::MAX) * 80 + 64;
    Ok(standalone(
        state,
        system,
        request,
        (GRADES_SCHEMA, grades_schema()),
        max_tokens,
    ))
}

/// The schema of a grading reply (`reason` at most [`MAX_REASON_CHARS`]). Kept as text and
/// parsed when used: a `json!` literal this size costs about 6 KB of wasm.
const GRADES_SCHEMA_JSON: &str = r#"{"type":"object","properties":{"grades":{"type":"array","items":{"type":"object","properties":{"index":{"type":"integer","minimum":1},"relevant":{"type":"boolean"},"confidence":{"type":"number","minimum":0,"maximum":1},"reason":{"type":"string","maxLength":300}},"required":["index","relevant","confidence","reason"],"additionalProperties":false}}},"required":["grades"],"additionalProperties":false}"#;

/// The schema of a rewrite reply (`query` at most `MAX_QUERY_CHARS`).
const REWRITE_SCHEMA_JSON: &str = r#"{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":200}},"required":["query"],"additionalProperties":false}"#;

/// The schema of a grading reply.
pub fn grades_schema() -> Value {
    kljson::parse_value(GRADES_SCHEMA_JSON).unwrap_or_default()
}

/// The schema of a rewrite reply.
pub fn rewrite_schema() -> Value {
    kljson::parse_value(REWRITE_SCHEMA_JSON).unwrap_or_default()
}

/// The grades of a grading reply for `count` results: one entry per result, `None` where
/// the reply gave none (a result graded twice keeps its first grade; grades of numbers out
/// of range are ignored). `None` when the reply has no grades at all.
pub fn parse_grades(text: &str, count: usize) -> Option<Vec<Option<Grade>>> {
    let text = text.trim();
    let grades = std::iter::once(text)
        .chain(json_objects(text))
        .find_map(|candidate| {
            let value: Value = kljson::parse_value(candidate).ok()?;
            value.get("grades")?.as_array().cloned()
        })?;
    let mut out: Vec<Option<Grade>> = vec![None; count];
    let mut any = false;
    for grade in &grades {
        let Some(index) = grade.get("index").and_then(Value::as_u64) else {
            continue;
        };
        let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| out.get_mut(i))
        else {
            continue;
        };
        if slot.is_some() {
            continue;
        }
        let verdict = match grade.get("relevant") {
            Some(Value::Bool(true)) => Verdict::Relevant,
            Some(Value::Bool(false)) => Verdict::NotRelevant,
            Some(Value::String(s)) if s == "relevant" || s == "yes" => Verdict::Relevant,
            Some(Value::String(s)) if s == "not_relevant" || s == "no" => Verdict::NotRelevant,
            _ => continue,
        };
        let confidence = grade
            .get("confidence")
            .and_then(Value::as_f64)
            .map_or(Confidence::new(0.5), Confidence::new);
        let reason = grade
            .get("reason")
            .and_then(Value::as_str)
            .map(|r| one_line(r, MAX_REASON_CHARS))
            .unwrap_or_default();
        *slot = Some(Grade {
            verdict,
            confidence: Some(confidence),
            reason,
        });
        any = true;
    }
    any.then_some(out)
}

/// `text` on one line (whitespace runs made one space), cut to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (kept, cut) = crate::types::text::clip(&line, max);
    if cut {
        format!("{kept}…")
    } else {
        kept.to_string()
    }
}

/// The rewrite call for `run`'s last query; `repeated`: the last rewrite repeated an
/// earlier query (asked once more).
pub fn rewrite(
    state: &SessionState,
    run: &SearchRun,
    repeated: bool,
) -> Result<ChatRequest, TemplateError> {
    let fence = Fence::new(&state.nonce);
    let system = template()?.render(
        &strings(&[("fence_tag", &fence.tag())]),
        &["rewrite_system"],
    )?;
    // The grader's reasons were written from web text: quoted as data.
    let problem = fence.wrap(&run.problem);
    let mut values = strings(&[("goal", &goal(state)), ("problem", &problem)]);
    let tried: Vec<Value> = run
        .rounds
        .iter()
        .map(|r| Value::String(format!("- {}", r.query)))
        .collect();
    values.insert("tried".into(), Value::Array(tried));
    let mut sections = vec!["rewrite_request"];
    if repeated {
        sections.push("rewrite_repeated");
    }
    let request = template()?.render(&values, &sections)?;
    Ok(standalone(
        state,
        system,
        request,
        (REWRITE_SCHEMA, rewrite_schema()),
        128,
    ))
}

/// The query of a rewrite reply: its JSON `query`, else the reply's first non-empty line
/// (quotes trimmed); `None` when there is none or it is too long.
pub fn parse_rewrite(text: &str) -> Option<String> {
    let text = text.trim();
    let from_json = std::iter::once(text)
        .chain(json_objects(text))
        .find_map(|candidate| {
            let value: Value = kljson::parse_value(candidate).ok()?;
            value.get("query")?.as_str().map(str::to_string)
        });
    let query = match from_json {
        Some(q) => q,
        None if text.starts_with('{') => return None,
        None => text
            .lines()
            .map(|l| l.trim().trim_matches(|c| c == '"' || c == '\''))
            .find(|l| !l.is_empty())?
            .to_string(),
    };
    crate::tools::search::checked_query(&query).ok()
}
