//! How a run stands and what it does next: its status, the phase to run, and what a phase
//! or tool call came to.

use kljson::{FromJson, ToJson};
use serde::Serialize;

use super::{memory, search, summary};
use crate::types::ToolCall;

/// Whether a run is going on, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// No run yet.
    #[default]
    Idle,
    /// A run is in progress (or was interrupted and will resume).
    Running,
    /// Ended with an answer (maybe partial).
    Completed,
    /// Stopped by the user.
    Stopped,
    /// Ended with an error.
    Failed,
    /// Ended because a question to the user went unanswered (or unseen) too long.
    TimedOut,
}

kljson::named_enum!(RunStatus {
    Idle = "idle",
    Running = "running",
    Completed = "completed",
    Stopped = "stopped",
    Failed = "failed",
    TimedOut = "timed_out",
});

/// Why the run synthesizes an answer instead of taking another step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SynthesisReason {
    /// The Observe phase said stop without giving the answer.
    Ready,
    /// `max_steps` was reached.
    StepLimit,
    /// The user pressed Stop.
    Stopped,
    /// The model kept asking for a call that was stopped as a loop.
    Repeating,
}

kljson::named_enum!(SynthesisReason {
    Ready = "ready",
    StepLimit = "step_limit",
    Stopped = "stopped",
    Repeating = "repeating",
});

/// The phase the run does next (persisted: a resumed run starts here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// Begin a step: call the model with the tools.
    Reason,
    /// Run a selected tool.
    Act {
        /// The call.
        call: ToolCall,
        /// Whether a tool with side effects began running (saved before it runs): a run
        /// resumed with `started` never runs it again.
        #[serde(default)]
        started: bool,
    },
    /// Judge the last tool result.
    Observe,
    /// Write the answer from what the run has.
    Synthesize {
        /// Why.
        why: SynthesisReason,
    },
    /// Wait for the user's answer to [`InputState::pending`] (in `SessionState::input`).
    AwaitInput,
    /// Compact the older history (`agent::context`), then go on with `resume`.
    Compact {
        /// The phase to go on with.
        resume: Box<Next>,
        /// The attempts `resume` had made (a call the provider refused as too long counts).
        #[serde(default)]
        resume_attempts: u32,
    },
    /// Reflect on a failed action (one model call; a fallback when it cannot be made).
    Reflect {
        /// What failed.
        failure: memory::Failure,
    },
    /// A web search tool call in progress: search, grade, rewrite (`agent::step::search`).
    Search(Box<search::SearchRun>),
    /// A `summarize_page_content` call in progress: section by section, then the combined
    /// summary (`agent::step::summarize`).
    Summarize(Box<summary::SummaryRun>),
}

/// A bounded phase (`agent::phase`) run on the persisted engine: its spec and progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct PhaseRun {
    /// The system text that opens every request of the phase.
    pub system: String,
    /// The context label (empty: the primary context).
    pub label: String,
    /// Tools offered and accepted (`None`: all).
    pub tools: Option<Vec<String>>,
    /// Most rounds of model call + tool calls.
    pub max_iterations: u32,
    /// Rounds begun.
    pub iterations: u32,
    /// A tool-only phase (its calls were queued; no model call).
    pub tool_only: bool,
    /// JSON asked of the phase's replies (where the provider supports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<crate::types::JsonSchemaFormat>,
    /// What the phase produced so far.
    pub result: PhaseOutcome,
}

/// Why a phase returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling a tool (or a tool-only phase ran its calls).
    Done,
    /// `max_iterations` rounds were used.
    MaxIterations,
    /// The run's token budget does not allow another model call.
    BudgetExhausted,
    /// Stop was requested.
    StopRequested,
}

kljson::named_enum!(StopReason {
    Done = "done",
    MaxIterations = "max_iterations",
    BudgetExhausted = "budget_exhausted",
    StopRequested = "stop_requested",
});

/// One tool call of a phase and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct ToolOutcome {
    /// The call as made.
    pub call: ToolCall,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its result, or the error text the model saw.
    pub content: String,
}

/// What a phase produced. Deliberately without token or cost figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct PhaseOutcome {
    /// The model's last text (empty for tool-only phases and phases that made no call).
    pub final_text: String,
    /// The tool calls made, in order, with their outcomes.
    pub tool_calls: Vec<ToolOutcome>,
    /// Why the phase returned (`None` while it runs).
    pub stop_reason: Option<StopReason>,
}
