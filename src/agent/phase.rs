//! Bounded phases (docs/architecture.md, research mode): a [`Phase`] (a message, the tools it may use, its
//! bound, its context) that [`begin`] sets up as a run of the persisted engine (same retries,
//! budget, tool checks and saves), and the [`PhaseResult`] it yields (final text, tool calls
//! made, stop reason), which never carries token or cost figures: the budget is kept in the
//! state, global across all contexts, and only its effect (`budget_exhausted`) is visible.
//! Research runs its stages this way; the harness that drives phases on their own for tests
//! is `testing::Phases` (feature `testing`).
//!
//! - Context labels: `None` is the primary context; every `Some(label)` keeps its own
//!   history (saved with the state). `continue_context = false` resets only that label.
//! - A tool subset restricts what is offered and what is accepted: a call outside it is
//!   refused with a permission error result (recorded, never an exception).
//! - A tool-only phase (`direct_tool_calls`) makes no model call: it is not gated by the
//!   budget, and is still gated by stop, the permitted risk level and rate limits.
//! - With a store, every transition is saved like any run, and a phase cut off by a worker
//!   stop is finished where it was (`testing::Phases::resume`).

use crate::state::{Next, PhaseOutcome, PhaseRun, RunStatus, SessionState};
use crate::types::{ChatMessage, JsonSchemaFormat, Role, ToolCall};
use kljson::{FromJson, ToJson};

pub use crate::state::{StopReason, ToolOutcome};

/// What a phase produced. Deliberately without token or cost figures.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, FromJson, ToJson)]
pub struct PhaseResult {
    /// The model's last text (empty for tool-only phases and phases that made no call).
    pub final_text: String,
    /// The tool calls made, in order, with their outcomes.
    pub tool_calls: Vec<ToolOutcome>,
    /// Why the phase returned.
    pub stop_reason: StopReason,
}

/// One phase to run.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// The user message that opens the phase (ignored by tool-only phases).
    pub message: String,
    /// The tools offered and accepted (`None`: all of the tool box).
    pub tools: Option<Vec<String>>,
    /// Most rounds of model call + tools (ignored by tool-only phases).
    pub max_iterations: u32,
    /// Keep the context's history (`false` resets this label only).
    pub continue_context: bool,
    /// The context (`None`: the primary one).
    pub context_label: Option<String>,
    /// Run these calls with no model call (a tool-only phase).
    pub direct_tool_calls: Option<Vec<ToolCall>>,
    /// Ask for JSON matching this schema (where the run's provider supports it).
    pub format: Option<JsonSchemaFormat>,
}

impl Phase {
    /// A model phase of `max_iterations` rounds in the primary context, continuing it.
    pub fn new(message: impl Into<String>, max_iterations: u32) -> Self {
        Self {
            message: message.into(),
            max_iterations,
            continue_context: true,
            ..Self::default()
        }
    }

    /// The same phase in the context named `label`.
    #[must_use]
    pub fn in_context(mut self, label: impl Into<String>) -> Self {
        self.context_label = Some(label.into());
        self
    }

    /// The same phase offering only `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: &[&str]) -> Self {
        self.tools = Some(tools.iter().map(|t| (*t).to_string()).collect());
        self
    }

    /// The same phase, starting its context afresh.
    #[must_use]
    pub fn fresh(mut self) -> Self {
        self.continue_context = false;
        self
    }

    /// A tool-only phase running `calls`.
    pub fn tool_only(calls: Vec<ToolCall>) -> Self {
        Self {
            direct_tool_calls: Some(calls),
            ..Self::default()
        }
    }
}

/// Sets `state` up to run `phase` with the system text `system` (the context's history
/// reset first unless it continues); `false` when there is nothing to run.
pub fn begin(state: &mut SessionState, system: &str, phase: Phase) -> bool {
    let label = phase.context_label.unwrap_or_default();
    let mut run = PhaseRun {
        system: system.to_string(),
        label: label.clone(),
        tools: phase.tools,
        max_iterations: phase.max_iterations,
        iterations: 0,
        tool_only: false,
        format: phase.format,
        result: PhaseOutcome {
            final_text: String::new(),
            tool_calls: Vec::new(),
            stop_reason: None,
        },
    };
    let next = match phase.direct_tool_calls {
        Some(calls) => {
            let mut calls = calls.into_iter();
            let Some(first) = calls.next() else {
                return false;
            };
            run.tool_only = true;
            state.queued_calls = calls.collect();
            Next::Act {
                call: first,
                started: false,
            }
        }
        None => {
            if !phase.continue_context {
                let resets = state.phases.resets.get_or_default(label.clone());
                *resets = resets.saturating_add(1);
            }
            let history = state.phases.contexts.get_or_default(label);
            if !phase.continue_context {
                history.clear();
            }
            history.push(ChatMessage::new(Role::User, phase.message));
            Next::Reason
        }
    };
    state.phases.run = Some(run);
    state.status = RunStatus::Running;
    state.next = Some(next);
    state.attempts = 0;
    state.error = None;
    state.ended_at = None;
    state.answer.clear();
    true
}
