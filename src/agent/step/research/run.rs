//! Research mode's orchestration: decompose the question into subtopics,
//! research each in its own context label, synthesise the report in the primary context
//! from the findings only, then review it once. Each stage is a bounded phase on the
//! persisted engine; this module decides what comes after a phase from its [`PhaseResult`]
//! alone (final text, tool calls, stop reason): it never sees token counts or cost, and
//! reads nothing else of the run. Pure: the step glue (`agent::step::research`) begins the
//! stage it names, and the run's state is saved like any other transition.

use serde_json::Value;

use crate::agent::phase::PhaseResult;
use crate::agent::step::research::prompt::{MAX_FINDINGS_CHARS, MAX_SUBTOPIC_CHARS};
use crate::state::research::{ResearchRun, Stage, Subtopic, SUBTOPIC_ROUNDS};
use crate::state::StopReason;
use crate::tools::{QueryPage, ReadPage, TypedTool, SEARCH_WEB};
use crate::types::json_text::json_objects;

/// The tools the subtopic stage may use (the rest are refused with a permission error).
pub const SUBTOPIC_TOOLS: [&str; 3] = [SEARCH_WEB, QueryPage::NAME, ReadPage::NAME];

/// Longest tool result kept in findings written from a subtopic's tool results (chars).
const RESULT_FINDING_CHARS: usize = 600;

/// One stage to run: which, its tools and its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    /// The stage.
    pub stage: Stage,
    /// The tools offered and accepted (empty: none).
    pub tools: Vec<String>,
    /// Most rounds of model call + tools.
    pub max_iterations: u32,
}

impl StagePlan {
    fn of(stage: Stage) -> Self {
        let (tools, max_iterations) = match stage {
            Stage::Research(_) => (
                SUBTOPIC_TOOLS.iter().map(|t| (*t).to_string()).collect(),
                SUBTOPIC_ROUNDS,
            ),
            _ => (Vec::new(), 1),
        };
        Self {
            stage,
            tools,
            max_iterations,
        }
    }
}

/// What follows a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// Run this stage next.
    Run(StagePlan),
    /// The research is over: its report and partial flag are in the run; `stopped` says
    /// whether Stop ended it.
    Finish {
        /// Whether Stop ended it.
        stopped: bool,
    },
}

/// The first stage of a research run.
pub fn first() -> StagePlan {
    StagePlan::of(Stage::Decompose)
}

/// What follows the phase of `run`'s current stage, which ended with `result`; `run`
/// records what the phase produced and moves to the next stage. A budget or stop ends the
/// research with the best report so far, marked partial.
pub fn advance(run: &mut ResearchRun, question: &str, result: &PhaseResult) -> Directive {
    let cut = matches!(
        result.stop_reason,
        StopReason::BudgetExhausted | StopReason::StopRequested
    );
    let stopped = result.stop_reason == StopReason::StopRequested;
    match run.stage {
        Stage::Decompose => {
            if cut {
                return finish(run, true, stopped);
            }
            run.subtopics = subtopics(&result.final_text, run.max_subtopics as usize)
                .into_iter()
                .map(|title| Subtopic {
                    title,
                    findings: String::new(),
                    stop_reason: None,
                })
                .collect();
            if run.subtopics.is_empty() {
                // Nothing usable: the question itself is the one subtopic.
                run.subtopics.push(Subtopic {
                    title: clip(question, MAX_SUBTOPIC_CHARS),
                    findings: String::new(),
                    stop_reason: None,
                });
            }
            go(run, Stage::Research(0))
        }
        Stage::Research(n) => {
            if let Some(subtopic) = run.subtopics.get_mut(n) {
                subtopic.findings = findings(result);
                subtopic.stop_reason = Some(result.stop_reason);
            }
            if cut {
                return finish(run, true, stopped);
            }
            if n + 1 < run.subtopics.len() {
                go(run, Stage::Research(n + 1))
            } else {
                go(run, Stage::Synthesize)
            }
        }
        Stage::Synthesize => {
            run.report = result.final_text.trim().to_string();
            if cut || run.report.is_empty() {
                return finish(run, true, stopped);
            }
            go(run, Stage::Review)
        }
        Stage::Review => {
            if !cut {
                let fixes = fixes(&result.final_text);
                let (report, applied) = apply_fixes(&run.report, &fixes);
                run.report = report;
                run.fixes_applied = applied;
            }
            finish(run, cut, stopped)
        }
    }
}

/// Stop was pressed between stages: the research ends with the best report so far.
pub fn stop(run: &mut ResearchRun) -> Directive {
    finish(run, true, true)
}

fn go(run: &mut ResearchRun, stage: Stage) -> Directive {
    run.stage = stage;
    Directive::Run(StagePlan::of(stage))
}

fn finish(run: &mut ResearchRun, cut: bool, stopped: bool) -> Directive {
    conclude(run, cut);
    Directive::Finish { stopped }
}

/// Ends `run` with the best report it has (partial when `cut`): the synthesis when it was
/// written, else the findings themselves, one section per subtopic researched.
pub fn conclude(run: &mut ResearchRun, cut: bool) {
    run.partial |= cut;
    if run.report.trim().is_empty() {
        run.report = run
            .subtopics
            .iter()
            .filter(|s| !s.findings.trim().is_empty())
            .map(|s| format!("## {}\n\n{}", s.title, s.findings.trim()))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
}

/// `text` cut to `max` characters, on one line.
fn clip(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(max).collect()
}

/// The subtopics a decompose reply lists (its JSON `subtopics`, else its lines), without
/// duplicates (ignoring case and spacing), at most `max`.
pub fn subtopics(reply: &str, max: usize) -> Vec<String> {
    let listed: Vec<String> = match json_field(reply, "subtopics") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => reply
            .lines()
            // "Here are the subtopics:" introduces the list; it is not one of them.
            .filter(|l| !l.trim_end().ends_with(':'))
            .map(|l| {
                l.trim()
                    .trim_start_matches(|c: char| {
                        c.is_ascii_digit() || matches!(c, '-' | '*' | '.' | ')' | '•')
                    })
                    .to_string()
            })
            .collect(),
    };
    let mut kept: Vec<String> = Vec::new();
    for item in listed {
        let title = clip(
            item.trim_matches(|c: char| c.is_whitespace() || c == '"'),
            MAX_SUBTOPIC_CHARS,
        );
        if title.is_empty() {
            continue;
        }
        let key = crate::types::case::fold(&title);
        if kept.iter().any(|k| crate::types::case::fold(k) == key) {
            continue;
        }
        kept.push(title);
        if kept.len() == max {
            break;
        }
    }
    kept
}

/// A field of the JSON object `reply` is (whole, fenced or embedded).
fn json_field(reply: &str, name: &str) -> Option<Value> {
    let reply = reply.trim();
    let parse = |s: &str| {
        kljson::parse_value(s)
            .ok()
            .and_then(|v| v.get(name).cloned())
    };
    parse(reply).or_else(|| json_objects(reply).find_map(parse))
}

/// What a subtopic's research found: the model's findings, else (it ran out of rounds
/// while still calling tools) the start of each successful tool result, so nothing it
/// found is lost.
fn findings(result: &PhaseResult) -> String {
    let text = result.final_text.trim();
    if !text.is_empty() && result.stop_reason == StopReason::Done {
        return text.chars().take(MAX_FINDINGS_CHARS).collect();
    }
    let mut found: Vec<String> = Vec::new();
    if !text.is_empty() {
        found.push(text.to_string());
    }
    found.extend(
        result
            .tool_calls
            .iter()
            .filter(|t| t.ok && !t.content.trim().is_empty())
            .map(|t| {
                let (start, cut) = crate::types::text::clip(t.content.trim(), RESULT_FINDING_CHARS);
                format!("{start}{}", if cut { "…" } else { "" })
            }),
    );
    found
        .join("\n\n")
        .chars()
        .take(MAX_FINDINGS_CHARS)
        .collect()
}

/// One fix of the review: replace `find` (an exact part of the report) with `replace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// The exact text to change.
    pub find: String,
    /// What it becomes (empty: removed).
    pub replace: String,
}

/// The fixes a review reply lists (its JSON `fixes`); none when it has none or is not JSON.
pub fn fixes(reply: &str) -> Vec<Fix> {
    let Some(Value::Array(items)) = json_field(reply, "fixes") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let find = item.get("find")?.as_str()?.trim().to_string();
            let replace = item
                .get("replace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            (!find.is_empty()).then_some(Fix { find, replace })
        })
        .collect()
}

/// `report` with each fix applied once (its first occurrence; a fix whose text is not in
/// the report is skipped), and how many were applied. A fix never touches a heading: one
/// whose match spans lines or lies on a `#` line is skipped.
pub fn apply_fixes(report: &str, fixes: &[Fix]) -> (String, u32) {
    let mut text = report.to_string();
    let mut applied = 0;
    for fix in fixes {
        if fix.find.contains('\n') || fix.replace.contains('\n') {
            continue;
        }
        let Some(at) = text.find(&fix.find) else {
            continue;
        };
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..].starts_with('#') {
            continue;
        }
        let mut start = at;
        let mut end = at + fix.find.len();
        if fix.replace.is_empty() {
            // Removing a claim takes the space before it too.
            if text[..start].ends_with(' ') {
                start -= 1;
            } else if text[end..].starts_with(' ') {
                end += 1;
            }
        }
        text.replace_range(start..end, &fix.replace);
        applied += 1;
    }
    (text, applied)
}
