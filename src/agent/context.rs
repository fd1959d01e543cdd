//! The context manager (docs/architecture.md, "How the window is kept"): what of the session goes into a request, and how it is
//! kept inside the model's window. Pure and deterministic: everything here is derived from
//! the persisted state, so a resumed run rebuilds exactly the request it had.
//!
//! - Every request is estimated whole (messages, tool definitions, the output schema and the
//!   reply cap) against the window minus a 10% margin (other vendors' tokenizers count
//!   differently from the estimator), and is never sent when it does not fit.
//! - The grounding (goal, completed subtasks, key decisions, user preferences) is derived
//!   from the state, never written by the model, and sent as the last user message of every
//!   request, so the prefix before it stays stable for provider prompt caching.
//! - When the request passes the "Compact at" share of the window, the older history (every
//!   turn but the last, every trajectory entry before the most recent step) is compacted: a
//!   summary replaces it in later requests ([`Compaction`]). The model writes the summary;
//!   when it cannot, [`fallback_summary`] keeps the first lines of what was said.
//! - When compacting is not possible or not enough, [`Fit`] shrinks the page excerpt, then
//!   the oldest tool results, then the reply cap; when that is not enough and nothing is
//!   left to compact, it leaves out tools (on a small window their definitions are a large
//!   share of the request), so a small window still gets an answer.

use crate::state::trajectory::Item;
use crate::state::{Compaction, SessionState};
use crate::tools::REQUEST_INPUT;
use crate::types::chat::estimate_request_tokens;
use crate::types::text::clip;
use crate::types::tokens::estimate_tokens;
use crate::types::ChatRequest;

/// The share of the window kept free (percent).
pub const MARGIN_PCT: u64 = 10;
/// After the provider answered "too long", requests of the run take at most this share of
/// the refused request's estimate (percent): the estimate was evidently low for this model.
pub const OVERFLOW_RETRY_PCT: u64 = 75;
/// Compaction runs only when the older entries are at least this share of the request
/// (percent); below it, shrinking the excerpt and the oldest results gains more.
pub const MIN_OLDER_SHARE_PCT: u64 = 40;
/// A compaction must leave at most this share of the context's tokens (percent).
pub const MAX_REMAINING_PCT: u64 = 80;
pub use crate::state::config::{COMPACT_AT_RANGE, DEFAULT_COMPACT_AT_PCT};
pub use crate::state::MAX_KEPT_ANSWERS;
/// A tool result shrunk by [`Fit`] keeps this many characters.
pub const CUT_RESULT_CHARS: usize = 300;
/// The smallest reply cap [`Fit`] goes down to.
pub const MIN_REPLY_TOKENS: u32 = 128;

/// The tokens a request takes from the window: its messages and tool definitions, the
/// output schema, and the reply it allows.
pub fn request_tokens(request: &ChatRequest) -> u64 {
    let schema = request
        .response_format
        .as_ref()
        .map_or(0, |f| estimate_tokens(&kljson::to_string(&f.schema)) + 8);
    let names: u64 = request
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.name) + 4)
        .sum();
    estimate_request_tokens(request) + schema + names + u64::from(request.max_tokens.unwrap_or(0))
}

/// Most a provider's reported usage may scale the estimates up (percent).
pub const MAX_SCALE_PCT: u32 = 200;

/// The tokens a request takes from the window as this run counts them: the estimate of its
/// prompt scaled up by what the provider reported for the run's last call when that was
/// more than estimated (the provider's tokenizer is the truth; an under-count is what
/// overflows), plus the reply it allows.
pub fn window_use(state: &SessionState, request: &ChatRequest) -> u64 {
    let reply = u64::from(request.max_tokens.unwrap_or(0));
    let prompt = request_tokens(request) - reply;
    let scale = u64::from(state.compact.prompt_scale_pct.clamp(100, MAX_SCALE_PCT));
    prompt * scale / 100 + reply
}

/// The most tokens a request of this run may take (`None`: the window is unknown).
pub fn limit(state: &SessionState) -> Option<u64> {
    let window = u64::from(state.config.context_window);
    let overflow = match state.compact.overflow_limit {
        0 => u64::MAX,
        n => n,
    };
    (window > 0).then(|| (window * (100 - MARGIN_PCT) / 100).min(overflow))
}

/// The request size from which the older history is compacted (`None`: unknown window).
pub fn compact_threshold(state: &SessionState) -> Option<u64> {
    let window = u64::from(state.config.context_window);
    let pct = u64::from(
        state
            .config
            .compact_at_pct
            .clamp(COMPACT_AT_RANGE.0, COMPACT_AT_RANGE.1),
    );
    (window > 0).then(|| (window * pct / 100).min(limit(state).unwrap_or(u64::MAX)))
}

/// Earlier turns the session's summary covers.
pub fn covered_turns(state: &SessionState) -> usize {
    state
        .compact
        .compaction
        .as_ref()
        .map_or(0, |c| c.turns.min(state.turns.len()))
}

/// Entries of this run's trajectory the session's summary covers.
pub fn covered_entries(state: &SessionState) -> usize {
    match &state.compact.compaction {
        Some(c) if c.run_id == state.run_id => c.entries.min(state.trajectory.len()),
        _ => 0,
    }
}

/// Where the older history ends: turns before `turns` and trajectory entries before
/// `entries` may be compacted. The last turn and the most recent step stay whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Older {
    /// End of the compactable turns.
    pub turns: usize,
    /// End of the compactable trajectory entries.
    pub entries: usize,
}

/// The older history not yet compacted, if there is any.
pub fn older(state: &SessionState) -> Option<Older> {
    let turns = state
        .turns
        .len()
        .saturating_sub(1)
        .max(covered_turns(state));
    let last_step = state.trajectory.last().map(|e| e.step);
    let entries = last_step
        .and_then(|step| state.trajectory.iter().position(|e| e.step == step))
        .unwrap_or(0)
        .max(covered_entries(state));
    let fresh = turns > covered_turns(state) || entries > covered_entries(state);
    fresh.then_some(Older { turns, entries })
}

/// How a request is shrunk to fit: the page excerpt's length, how many of the oldest tool
/// results are cut to their first [`CUT_RESULT_CHARS`] characters, the reply cap, and how
/// many of the offered tools are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fit {
    /// Page excerpt characters (`None`: the run's setting).
    pub excerpt_chars: Option<usize>,
    /// The oldest tool results cut (counted over the results the request carries).
    pub cut_results: usize,
    /// Whether the earlier turns the request carries are cut like tool results.
    pub cut_turns: bool,
    /// Reply cap (`None`: the run's setting).
    pub reply_cap: Option<u32>,
    /// The last of the offered tools left out (the built-in tool box lists the tools that
    /// read the page first); with all of them left out, the model answers from what the
    /// request has.
    pub dropped_tools: usize,
}

impl Fit {
    /// No shrinking.
    pub const NONE: Fit = Fit {
        excerpt_chars: None,
        cut_results: 0,
        cut_turns: false,
        reply_cap: None,
        dropped_tools: 0,
    };

    /// The tools a request shrunk by this fit offers, of `offered`.
    pub fn tools<T>(&self, mut offered: Vec<T>) -> Vec<T> {
        offered.truncate(offered.len().saturating_sub(self.dropped_tools));
        offered
    }

    /// The shrinking steps to try, in order: the excerpt to 3/4, 1/2, 1/4 and none; then
    /// each of the oldest tool results in turn; then the earlier turns; then the reply cap
    /// halved down to [`MIN_REPLY_TOKENS`].
    pub fn ladder(state: &SessionState) -> Vec<Fit> {
        let excerpt = state.config.page_excerpt_chars;
        let mut steps: Vec<Fit> = [3, 2, 1, 0]
            .into_iter()
            .map(|quarters| Fit {
                excerpt_chars: Some(excerpt * quarters / 4),
                ..Fit::NONE
            })
            .collect();
        let results = state.trajectory[covered_entries(state)..]
            .iter()
            .filter(|e| matches!(e.item, Item::ToolResult { .. }))
            .count();
        let none = Fit {
            excerpt_chars: Some(0),
            ..Fit::NONE
        };
        steps.extend((1..=results).map(|cut_results| Fit {
            cut_results,
            ..none
        }));
        let all = Fit {
            cut_results: results,
            cut_turns: true,
            ..none
        };
        steps.push(all);
        let mut cap = state.config.max_output_tokens;
        while cap > MIN_REPLY_TOKENS {
            cap = (cap / 2).max(MIN_REPLY_TOKENS);
            steps.push(Fit {
                reply_cap: Some(cap),
                ..all
            });
        }
        steps
    }

    /// The steps after the whole [`ladder`](Fit::ladder) (and compacting) for a request
    /// offering `tools` tools: this fit with the tools left out one by one, the last
    /// offered first.
    pub fn dropping_tools(self, tools: usize) -> impl Iterator<Item = Fit> {
        (1..=tools).map(move |dropped_tools| Fit {
            dropped_tools,
            ..self
        })
    }
}

/// A tool result cut by [`Fit`]: its first characters and a note of what was cut.
pub fn cut_result(content: &str) -> String {
    let (kept, cut) = clip(content, CUT_RESULT_CHARS);
    if !cut {
        return content.to_string();
    }
    let left = content.chars().count() - CUT_RESULT_CHARS;
    format!("{kept}\n[… {left} more characters cut to fit the context window; call the tool again to read them]")
}

/// The grounding of a cycle, derived from the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grounding {
    /// The user's question (for an explanation: what to explain).
    pub goal: String,
    /// One line per successful tool call of the run.
    pub completed: Vec<String>,
    /// The observations' verdicts.
    pub decisions: Vec<String>,
    /// Reading level, answer language, and the user's answers to `request_input`.
    pub preferences: Vec<String>,
    /// The user's answers to `request_input`: earlier runs' first, then this run's.
    pub answers: Vec<String>,
}

/// Longest goal line (characters): a long selection is named by its start.
const GOAL_CHARS: usize = 400;
/// Longest argument text in a completed-subtask line.
const ARGS_CHARS: usize = 120;

/// The grounding of the state's run.
pub fn grounding(state: &SessionState) -> Grounding {
    let (question, cut) = clip(state.question.trim(), GOAL_CHARS);
    let ellipsis = if cut { "…" } else { "" };
    let goal = if state.selection.is_some() {
        // The selection is page text: fenced like every other quote of the page.
        let quote =
            crate::agent::fence::Fence::new(&state.nonce).wrap(&format!("{question}{ellipsis}"));
        match &state.action {
            Some(action) => format!(
                "{}: the text the user selected on the page:\n{quote}",
                action.name
            ),
            None => format!("explain the text the user selected on the page:\n{quote}"),
        }
    } else {
        format!("{question}{ellipsis}")
    };
    let mut completed = Vec::new();
    let mut decisions = Vec::new();
    let mut answers = state.input.kept_answers.clone();
    for entry in &state.trajectory {
        match &entry.item {
            Item::ToolResult {
                call_id, name, ok, ..
            } if *ok && name != REQUEST_INPUT => {
                let args = state.trajectory.iter().find_map(|e| match &e.item {
                    Item::ToolCall { call } if &call.id == call_id => Some(call.arguments.trim()),
                    _ => None,
                });
                let (args, cut) = clip(args.unwrap_or(""), ARGS_CHARS);
                let more = if cut { "…" } else { "" };
                completed.push(format!("- {name} {args}{more}"));
            }
            Item::ToolResult {
                name, ok, content, ..
            } if *ok && name == REQUEST_INPUT => answers.push(content.clone()),
            Item::Observation {
                should_continue,
                final_answer,
                ..
            } => {
                let verdict = match (should_continue, final_answer) {
                    (_, Some(_)) => "the results answer the question",
                    (true, None) => "more information was needed",
                    (false, None) => "ready to answer",
                };
                decisions.push(format!("- Step {}: {verdict}", entry.step));
            }
            _ => {}
        }
    }
    let mut preferences = vec![format!(
        "- Reading level: {}",
        state.config.reading_level.name()
    )];
    let language = state
        .selection
        .as_ref()
        .map(|s| s.lang.trim())
        .filter(|l| !l.is_empty());
    let target = state
        .action
        .as_ref()
        .filter(|a| a.id == "translate")
        .map(|a| a.target_language.as_str());
    preferences.push(match (target, language) {
        (Some(target), _) => format!("- Answer language: {target} (the translation's)"),
        (None, language) => match language {
            Some(lang) => format!(
                "- Answer language: {lang} (the selection's), unless the user writes in another"
            ),
            None => "- Answer language: the language of the user's question".to_string(),
        },
    });
    let answers: Vec<String> = answers.iter().map(|a| format!("- {}", a.trim())).collect();
    preferences.extend(answers.iter().cloned());
    Grounding {
        goal,
        completed,
        decisions,
        preferences,
        answers,
    }
}

/// The summary in the reply to the compaction call
/// ([`crate::agent::step::compact::prompt::compaction`]), if it gave one.
pub fn parse_summary(text: &str) -> Option<String> {
    let text = text.trim();
    let from_json = |candidate: &str| {
        let value: serde_json::Value = kljson::parse_value(candidate).ok()?;
        Some(value.get("summary")?.as_str()?.trim().to_string())
    };
    let summary = from_json(text)
        .or_else(|| crate::types::json_text::json_objects(text).find_map(from_json))
        .or_else(|| (!text.starts_with('{')).then(|| text.to_string()))?;
    (!summary.is_empty()).then_some(summary)
}

/// Longest summary kept (characters).
pub const MAX_SUMMARY_CHARS: usize = 6_000;

/// The older history as text lines, for the compaction request (`detail`: characters kept
/// of each result and answer) and for the deterministic fallback.
pub fn older_text(state: &SessionState, older: Older, detail: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(c) = &state.compact.compaction {
        let (summary, cut) = clip(&c.summary, detail.saturating_mul(4));
        lines.push(format!(
            "Summary so far: {summary}{}",
            if cut { " …" } else { "" }
        ));
    }
    let first_line = |text: &str, max: usize| -> String {
        let text = text.trim();
        let line = text.lines().next().unwrap_or("");
        let (kept, cut) = clip(line, max);
        let rest = text.chars().count() - kept.chars().count();
        if cut || rest > 0 {
            format!("{kept} [… {rest} more characters cut]")
        } else {
            kept.to_string()
        }
    };
    for turn in &state.turns[covered_turns(state)..older.turns] {
        let asked = if turn.explain {
            "Asked to explain"
        } else {
            "Asked"
        };
        lines.push(format!("- {asked}: {}", first_line(&turn.question, detail)));
        lines.push(format!("  Answered: {}", first_line(&turn.answer, detail)));
    }
    for entry in &state.trajectory[covered_entries(state)..older.entries] {
        match &entry.item {
            Item::ToolCall { call } => lines.push(format!(
                "- Called {} {}",
                call.name,
                first_line(&call.arguments, ARGS_CHARS)
            )),
            Item::ToolResult {
                name, ok, content, ..
            } => {
                let what = if *ok { "Result" } else { "Failed" };
                lines.push(format!(
                    "  {what} of {name}: {}",
                    first_line(content, detail)
                ));
            }
            Item::Observation {
                should_continue,
                final_answer,
                ..
            } => lines.push(match final_answer {
                Some(a) => format!("  Observed: has the answer: {}", first_line(a, detail)),
                None if *should_continue => "  Observed: more information needed".to_string(),
                None => "  Observed: ready to answer".to_string(),
            }),
            Item::Error { error, .. } => lines.push(format!(
                "  Error: {}",
                first_line(&error.message, ARGS_CHARS)
            )),
            _ => {}
        }
    }
    lines.join("\n")
}

/// The levels of the deterministic fallback, most detailed first (characters of each
/// result and answer kept).
pub const FALLBACK_DETAIL: [usize; 3] = [200, 60, 0];

/// The deterministic summary at `level` of [`FALLBACK_DETAIL`]; the last level keeps only
/// a count of what was removed.
pub fn fallback_summary(state: &SessionState, older: Older, level: usize) -> String {
    let detail = FALLBACK_DETAIL[level.min(FALLBACK_DETAIL.len() - 1)];
    let turns = older.turns - covered_turns(state);
    let entries = older.entries - covered_entries(state);
    if detail == 0 {
        return format!(
            "({turns} earlier questions and {entries} earlier steps' entries were removed to fit the model's context window; ask the user or call the tools again if they matter.)"
        );
    }
    format!(
        "{}\n(Compacted without the model: older tool results and answers were cut to their first lines; call the tools again to read them in full.)",
        older_text(state, older, detail)
    )
}

/// The compaction record after compacting `older` into `summary`.
pub fn compacted(
    state: &SessionState,
    older: Older,
    summary: String,
    by_model: bool,
) -> Compaction {
    let (summary, _) = clip(&summary, MAX_SUMMARY_CHARS);
    Compaction {
        turns: older.turns,
        run_id: state.run_id,
        entries: older.entries,
        summary: summary.to_string(),
        by_model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_and_cut_count_characters_not_bytes() {
        assert_eq!(clip("héllo", 2), ("hé", true));
        assert_eq!(clip("hé", 2), ("hé", false));
        let long = "é".repeat(CUT_RESULT_CHARS + 5);
        let cut = cut_result(&long);
        assert!(cut.starts_with(&"é".repeat(CUT_RESULT_CHARS)));
        assert!(cut.contains("[… 5 more characters cut"));
        assert_eq!(cut_result("short"), "short");
    }

    #[test]
    fn a_summary_is_read_from_json_prose_or_fences() {
        assert_eq!(
            parse_summary(r#"{"summary": " A. "}"#).as_deref(),
            Some("A.")
        );
        assert_eq!(
            parse_summary("```json\n{\"summary\": \"B\"}\n```").as_deref(),
            Some("B")
        );
        assert_eq!(
            parse_summary("Plain words.").as_deref(),
            Some("Plain words.")
        );
        assert_eq!(parse_summary(r#"{"summary": ""}"#), None);
        assert_eq!(parse_summary(r#"{"other": 1}"#), None);
        assert_eq!(parse_summary("  "), None);
    }
}
