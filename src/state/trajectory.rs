//! The trajectory: every thought, tool call, tool result, observation, reflection and error
//! of a run, in order, with timestamps and step numbers, and the run's metrics. The prompts are derived
//! from it, and it is what "Export trajectory" downloads.

use serde::Serialize;

use crate::state::search::{Fallback, Grade, Verdict, MAX_SEARCHES, RELEVANT_THRESHOLD_PCT};
use crate::types::events::{GradeView, StepView};
pub use crate::types::ErrorInfo;
use crate::types::ToolCall;
use kljson::{FromJson, ToJson};

/// One trajectory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Entry {
    /// The step it belongs to (1-based; 0 for entries before the first step).
    pub step: u32,
    /// When it was recorded (ms since the epoch).
    pub at_ms: u64,
    /// What it records.
    pub item: Item,
}

impl Entry {
    /// The entry as the UI lists it, at position `index` of its run's trajectory.
    pub fn view(&self, index: usize) -> StepView {
        let mut tool = None;
        let mut arguments = None;
        let mut grades = None;
        let (kind, text, failed, retrying) = match &self.item {
            Item::Thought { text, .. } => ("thought", text.clone(), false, false),
            Item::ToolCall { call } => {
                tool = Some(call.name.clone());
                arguments = Some(StepView::capped(&call.arguments));
                ("tool_call", call.name.clone(), false, false)
            }
            Item::ToolResult {
                name, ok, content, ..
            } => {
                tool = Some(name.clone());
                ("tool_result", content.clone(), !ok, false)
            }
            Item::Observation {
                text,
                should_continue,
                final_answer,
            } => {
                let verdict = match (should_continue, final_answer) {
                    (_, Some(a)) => format!("Has the answer: {a}"),
                    (true, None) => "Needs more information.".to_string(),
                    (false, None) => "Ready to answer.".to_string(),
                };
                let text = if text.is_empty() {
                    verdict
                } else {
                    format!("{text} ({verdict})")
                };
                ("observation", text, false, false)
            }
            Item::Error { error, retrying } => ("error", error.message.clone(), true, *retrying),
            Item::Compaction {
                tokens_before,
                tokens_after,
                by_model,
                ..
            } => {
                let how = if *by_model {
                    "summarised by the model"
                } else {
                    "older results cut to their first lines"
                };
                let text = format!(
                    "Compacted the conversation: {} → {} tokens ({how}).",
                    crate::types::tokens::grouped(*tokens_before),
                    crate::types::tokens::grouped(*tokens_after)
                );
                ("compaction", text, false, false)
            }
            Item::Reflection { reflection, .. } => {
                tool = Some(reflection.tool.clone());
                let text = format!(
                    "{}: {} Suggested fix: {}",
                    reflection.error_type, reflection.analysis, reflection.suggested_fix
                );
                ("reflection", text, false, false)
            }
            Item::Search {
                query,
                round,
                hits,
                error,
                retrying,
            } => {
                let text = match error {
                    Some(error) => format!("Searching for \"{query}\" failed: {}", error.message),
                    None => format!(
                        "Searched for \"{query}\" (query {} of at most {MAX_SEARCHES}): {} result{}",
                        round + 1,
                        hits.len(),
                        if hits.len() == 1 { "" } else { "s" }
                    ),
                };
                ("search", text, error.is_some(), *retrying)
            }
            Item::Grades { query, graded } => {
                let relevant = graded
                    .iter()
                    .filter(|g| g.grade.verdict == Verdict::Relevant)
                    .count();
                let pct = if graded.is_empty() {
                    0
                } else {
                    relevant * 100 / graded.len()
                };
                let text = format!(
                    "{relevant} of {} results for \"{query}\" relevant ({pct}%; threshold {RELEVANT_THRESHOLD_PCT}%)",
                    graded.len()
                );
                grades = Some(graded.iter().map(Graded::view).collect());
                ("grades", text, false, false)
            }
            Item::Rewrite { from, to, reason } => (
                "rewrite",
                format!("Rewrote \"{from}\" as \"{to}\": {reason}"),
                false,
                false,
            ),
            Item::SearchFallback { message, .. } => {
                ("search_fallback", message.clone(), true, false)
            }
            Item::SectionSummary {
                index,
                of,
                heading,
                text,
            } => {
                let heading = if heading.is_empty() {
                    String::new()
                } else {
                    format!(" ({heading})")
                };
                let text = format!("Section {} of {of}{heading}: {text}", index + 1);
                ("section_summary", text, false, false)
            }
            Item::Phase { heading } => ("phase", heading.clone(), false, false),
            Item::Answer { text, partial } => {
                let text = if *partial {
                    format!("{text} (partial)")
                } else {
                    text.clone()
                };
                ("answer", text, false, false)
            }
        };
        let (text, text_chars) = StepView::capped(&text);
        StepView {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            step: self.step,
            kind: kind.to_string(),
            text,
            text_chars,
            failed,
            retrying,
            tool,
            arguments_chars: arguments.as_ref().map(|(_, n)| *n),
            arguments: arguments.map(|(a, _)| a),
            at_ms: self.at_ms,
            grades,
        }
    }
}

/// What a trajectory entry records (`{"thought": {"text": ...}}`: externally tagged, which
/// decodes without buffering and keeps the wasm small).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    /// The model's reasoning in a Reason phase, recorded before every tool call (never
    /// empty there): the reply's text, else what the calls say about themselves (see
    /// `derived`). May be empty only on a reply without calls.
    Thought {
        /// The text.
        text: String,
        /// Whether the text was derived from the reply's calls (their `reasoning`, else
        /// "Calling {tool} with {arguments}") because the reply had no text. A derived
        /// thought is shown and exported, but never replayed to the model as its own words
        /// nor taken as an answer.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        derived: bool,
    },
    /// The tool call the model selected.
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// What the tool returned.
    ToolResult {
        /// The id of the call.
        call_id: String,
        /// The tool.
        name: String,
        /// Whether it succeeded.
        ok: bool,
        /// The result text (or the error the model sees).
        content: String,
    },
    /// The Observe phase's judgement.
    Observation {
        /// The model's text.
        text: String,
        /// Whether the run should go on.
        should_continue: bool,
        /// A final answer, if the model gave one.
        final_answer: Option<String>,
    },
    /// A failure (a model call, a malformed reply, storage).
    Error {
        /// The error.
        error: ErrorInfo,
        /// Whether the run will retry.
        retrying: bool,
    },
    /// The older history was compacted (`agent::context`).
    Compaction {
        /// Earlier turns the summary now covers (in all).
        turns: usize,
        /// Entries of this run's trajectory it now covers (in all).
        entries: usize,
        /// The context's estimated tokens before.
        tokens_before: u64,
        /// And after.
        tokens_after: u64,
        /// Whether the model wrote the summary (else the deterministic fallback).
        by_model: bool,
    },
    /// A reflection on a failed action (also stored in the session's episodic memory).
    Reflection {
        /// The reflection.
        reflection: crate::state::memory::Reflection,
        /// Whether the retry is asked for an alternative approach (the error type
        /// repeated, or the call was stopped as a loop).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        alternative: bool,
    },
    /// A web search was made, or failed (`agent::step::search`).
    Search {
        /// The query.
        query: String,
        /// Which query of its search (0: the original, then the rewrites).
        round: u32,
        /// What was found (content left out: the tool result carries what is used).
        #[serde(default)]
        hits: Vec<Hit>,
        /// Why it failed, if it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<crate::types::SearchError>,
        /// Whether the failed search is tried again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        retrying: bool,
    },
    /// A query's results were graded: one grade per result, in order.
    Grades {
        /// The query.
        query: String,
        /// The results with their grades.
        graded: Vec<Graded>,
    },
    /// A query was rewritten because its results were not relevant enough.
    Rewrite {
        /// The query before.
        from: String,
        /// The new query.
        to: String,
        /// Why.
        reason: String,
    },
    /// A search gave the loop no graded relevant results: why, and the disclaimer the
    /// answer carries.
    SearchFallback {
        /// Why.
        fallback: Fallback,
        /// The disclaimer (also a notice of the run).
        message: String,
    },
    /// One section of the page summarised (`summarize_page_content`, map stage).
    SectionSummary {
        /// Which section (0-based).
        index: u32,
        /// Sections of the page.
        of: u32,
        /// The heading path where the section starts (may be empty).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        heading: String,
        /// The summary.
        text: String,
    },
    /// A research run began a stage (`agent::step::research::run`): the Steps view groups the entries
    /// that follow under this heading.
    Phase {
        /// The heading ("Subtopic 2 of 4: ...").
        heading: String,
    },
    /// The answer the run ended with.
    Answer {
        /// The text.
        text: String,
        /// Whether it is partial.
        partial: bool,
    },
}

impl Item {
    /// A thought the model wrote (its reply's text).
    pub fn thought(text: impl Into<String>) -> Self {
        Self::Thought {
            text: text.into(),
            derived: false,
        }
    }

    /// A thought KnowledgeLens wrote for a call (never shown to the model as its words).
    pub fn derived_thought(text: impl Into<String>) -> Self {
        Self::Thought {
            text: text.into(),
            derived: true,
        }
    }
}

/// A search result as the trajectory keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Hit {
    /// The title.
    pub title: String,
    /// The address.
    pub url: String,
    /// The excerpt the service gave.
    #[serde(default)]
    pub snippet: String,
}

/// A graded search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Graded {
    /// The result.
    pub hit: Hit,
    /// Its grade.
    pub grade: Grade,
}

impl Graded {
    /// As the Steps view shows it.
    pub fn view(&self) -> GradeView {
        let (title, _) = StepView::capped(&self.hit.title);
        let (reason, _) = StepView::capped(&self.grade.reason);
        GradeView {
            title,
            url: self.hit.url.clone(),
            grade: self.grade.verdict.name().to_string(),
            confidence: self.grade.confidence,
            reason,
        }
    }
}

/// Counters of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
pub struct Metrics {
    /// Steps begun.
    pub steps: u32,
    /// Model calls made (attempts included).
    pub model_calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// From the start to the end (or to now), in ms.
    pub duration_ms: u64,
    /// Error entries.
    pub errors: u32,
}
