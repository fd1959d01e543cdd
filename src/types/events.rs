//! The typed event stream a run emits to the UI. Event names are API (the popup and tests
//! match them): `tests/native/event_names.rs` freezes them.

use serde::Serialize;

use crate::types::error::ErrorInfo;
use crate::types::source::Source;
use kljson::{FromJson, ToJson};

/// Token usage as the UI sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct UsageView {
    /// Prompt tokens so far.
    pub input: u64,
    /// Generated tokens so far.
    pub output: u64,
    /// The run's token budget.
    pub budget: u64,
    /// The part of `input` the provider read from its prompt cache (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A finite number (never NaN or infinite), so that it compares as `Eq`: prices, costs
/// and shares on the wire, as a plain JSON number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Finite(f64);

impl Eq for Finite {}

impl Finite {
    /// `value`, if it is finite.
    pub fn new(value: f64) -> Option<Self> {
        value.is_finite().then_some(Self(value))
    }

    /// The number.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl FromJson for Finite {
    fn from_json(value: serde_json::Value) -> Result<Self, kljson::Error> {
        let value = f64::from_json(value)?;
        Self::new(value).ok_or_else(|| kljson::Error::new("not a finite number"))
    }

    fn placeholder() -> Self {
        Self(0.0)
    }
}

kljson::deserialize_via_json!(Finite);

/// One trajectory entry as the UI lists it: in `SessionView.steps` and in `step_item`
/// events. Long texts are cut to [`StepView::MAX_CHARS`] characters; their full length is
/// kept beside them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct StepView {
    /// Position in the run's trajectory (0-based): unique per run, so a list built from a
    /// snapshot and later `step_item` events has no duplicates.
    pub index: u32,
    /// The step it belongs to.
    pub step: u32,
    /// `thought`, `tool_call`, `tool_result`, `observation`, `reflection`, `error`,
    /// `section_summary` (and the web search's kinds) or `answer`.
    pub kind: String,
    /// What it says, cut to [`StepView::MAX_CHARS`] characters.
    pub text: String,
    /// The length of the whole text, in characters.
    pub text_chars: u64,
    /// Whether it records a failure.
    pub failed: bool,
    /// Whether the run retries after this error.
    pub retrying: bool,
    /// The tool (tool calls and results).
    pub tool: Option<String>,
    /// A tool call's JSON arguments, cut to [`StepView::MAX_CHARS`] characters.
    pub arguments: Option<String>,
    /// The length of the whole arguments, in characters.
    pub arguments_chars: Option<u64>,
    /// When it was recorded (ms since the epoch).
    pub at_ms: u64,
    /// A `grades` entry's results with their grades, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grades: Option<Vec<GradeView>>,
}

/// A graded web search result, as the Steps view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct GradeView {
    /// The result's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// `relevant`, `not_relevant` or `ungraded`.
    pub grade: String,
    /// How sure the grader was, in [0, 1] (`None`: ungraded).
    pub confidence: Option<crate::types::search::Confidence>,
    /// Why, in one line.
    pub reason: String,
}

impl StepView {
    /// Longest text (and arguments) shown per entry.
    pub const MAX_CHARS: usize = 4_000;

    /// `text` cut to [`StepView::MAX_CHARS`] characters (with an ellipsis when cut), and
    /// its full length in characters.
    pub fn capped(text: &str) -> (String, u64) {
        let chars = text.chars().count() as u64;
        (super::text::clip_marked(text, Self::MAX_CHARS), chars)
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    RunStarted {
        /// The question.
        question: String,
    },
    /// A Reason -> Act -> Observe step began.
    StepStarted,
    /// The model is reasoning.
    Thinking,
    /// A tool runs.
    Executing {
        /// The tool.
        tool: String,
    },
    /// A tool returned a result.
    ToolCompleted {
        /// The tool.
        tool: String,
    },
    /// A tool failed (the model sees the error).
    ToolFailed {
        /// The tool.
        tool: String,
        /// What went wrong.
        error: String,
    },
    /// The model judges a tool result.
    Analyzing,
    /// The model writes the answer from what the run has.
    Synthesizing,
    /// The model reflects on a failed action.
    Reflecting,
    /// Streamed answer text to append.
    AnswerDelta {
        /// The new text.
        text: String,
    },
    /// The streamed text was not the answer (the model chose a tool): clear the draft.
    AnswerReset,
    /// The budget threshold was crossed (once per run).
    BudgetWarning {
        /// Tokens used.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// Something the user should know that is not an error.
    Notice {
        /// The text.
        message: String,
    },
    /// The run was stopped by the user.
    Stopped {
        /// The partial answer.
        answer: String,
        /// The sources it cites.
        sources: Vec<Source>,
    },
    /// The run ended with an answer.
    Completed {
        /// The answer.
        answer: String,
        /// Whether it is partial (bounds or budget reached).
        partial: bool,
        /// The sources it cites.
        sources: Vec<Source>,
    },
    /// The run failed.
    Failed {
        /// What failed and how to fix it.
        error: ErrorInfo,
        /// The best partial answer (may be empty).
        answer: String,
        /// The sources it cites.
        sources: Vec<Source>,
    },
    /// The model asked the user a question; the run waits for the answer.
    AwaitingInput {
        /// Names the question in the acknowledgement and the answer.
        request_id: String,
        /// The question.
        question: String,
    },
    /// A question to the user went unseen or unanswered too long; the run ended.
    TimedOut {
        /// Which wait ran out.
        error: ErrorInfo,
        /// The best partial answer (may be empty).
        answer: String,
        /// The sources it cites.
        sources: Vec<Source>,
    },
    /// The older history is being compacted to fit the model's context window.
    Compacting,
    /// A web search for `query` is being made.
    Searching {
        /// The query.
        query: String,
    },
    /// The model grades `count` web search results.
    Grading {
        /// How many results this call grades.
        count: u32,
    },
    /// The model rewrites a query that found too little.
    Rewriting,
    /// The model summarises the page (`summarize_page_content`): section `section` (1-based)
    /// of `of`, or, with `section` `None`, combines the section summaries into one.
    Summarizing {
        /// The section being summarised (`None`: the summaries are being combined).
        section: Option<u32>,
        /// Sections of the page.
        of: u32,
    },
    /// A new trajectory entry (sent right after the transition that recorded it).
    StepItem {
        /// The entry.
        item: StepView,
    },
}

impl EventKind {
    /// Every event's wire name, in the order of the variants (for the generated protocol
    /// file; `tests/native/event_names.rs` checks it against [`EventKind::name`]).
    pub const NAMES: [&'static str; 24] = [
        "run_started",
        "step_started",
        "thinking",
        "executing",
        "tool_completed",
        "tool_failed",
        "analyzing",
        "synthesizing",
        "reflecting",
        "answer_delta",
        "answer_reset",
        "budget_warning",
        "notice",
        "stopped",
        "completed",
        "failed",
        "awaiting_input",
        "timed_out",
        "compacting",
        "searching",
        "grading",
        "rewriting",
        "summarizing",
        "step_item",
    ];

    /// The wire name (`"run_started"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "run_started",
            Self::StepStarted => "step_started",
            Self::Thinking => "thinking",
            Self::Executing { .. } => "executing",
            Self::ToolCompleted { .. } => "tool_completed",
            Self::ToolFailed { .. } => "tool_failed",
            Self::Analyzing => "analyzing",
            Self::Synthesizing => "synthesizing",
            Self::Reflecting => "reflecting",
            Self::AnswerDelta { .. } => "answer_delta",
            Self::AnswerReset => "answer_reset",
            Self::BudgetWarning { .. } => "budget_warning",
            Self::Notice { .. } => "notice",
            Self::Stopped { .. } => "stopped",
            Self::Completed { .. } => "completed",
            Self::Failed { .. } => "failed",
            Self::AwaitingInput { .. } => "awaiting_input",
            Self::TimedOut { .. } => "timed_out",
            Self::Compacting => "compacting",
            Self::Searching { .. } => "searching",
            Self::Grading { .. } => "grading",
            Self::Rewriting => "rewriting",
            Self::Summarizing { .. } => "summarizing",
            Self::StepItem { .. } => "step_item",
        }
    }
}

/// One event with the run's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct AgentEvent {
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The current step (0 before the first).
    pub step: u32,
    /// The step bound.
    pub max_steps: u32,
    /// Tokens so far.
    pub usage: UsageView,
    /// The session's persisted revision when the event was emitted (increases across
    /// worker restarts).
    #[serde(default)]
    pub rev: u64,
    /// The run's event counter. `(rev, seq)` orders every event and snapshot of a session:
    /// the UI applies only what is newer than what it shows.
    #[serde(default)]
    pub seq: u64,
}

/// An event addressed to a session, as broadcast to the UI:
/// `{"type": "event", "session": "tab:12", "event": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct EventEnvelope {
    /// Always `"event"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The session key.
    pub session: String,
    /// The run of the session it is about (the in-page panel shows only its own run's).
    pub run: u32,
    /// The event.
    pub event: AgentEvent,
}

impl EventEnvelope {
    /// Wraps `event` of run `run` for `session`.
    pub fn new(session: &str, run: u32, event: AgentEvent) -> Self {
        Self {
            kind: "event".into(),
            session: session.to_string(),
            run,
            event,
        }
    }
}
