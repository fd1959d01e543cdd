//! Episodic memory (the reflect capability): the reflections a session's runs made on their failed
//! actions, and how often each kind of error happened. Persisted with the session, bounded,
//! and read back when a failed action is retried. Pure data: no browser access.

use serde::Serialize;

use crate::types::{ToolCall, VecMap};
use kljson::{FromJson, ToJson};

/// Most reflections kept per session (the oldest go first).
pub const MAX_REFLECTIONS: usize = 20;

/// A failed action the run reflects on (the persisted argument of `Next::Reflect`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Failure {
    /// The call that failed.
    pub call: ToolCall,
    /// The error type: a tool error kind (`invalid_arguments`, `not_found`, ...),
    /// `judged_failed` (the Observe phase judged the result a failure) or `repeated_call`.
    pub error_type: String,
    /// What went wrong, as the model saw it.
    pub error: String,
}

/// What the run learned from one failed action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Reflection {
    /// The tool of the failed call.
    pub tool: String,
    /// The failed call's JSON arguments.
    pub arguments: String,
    /// The error type (see [`Failure::error_type`]): errors are counted by it.
    pub error_type: String,
    /// Why it failed.
    pub analysis: String,
    /// What to do instead.
    pub suggested_fix: String,
    /// Whether the model's reflection was unusable and this is the built-in one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
}

/// The reflections of a session and the count of each error type.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
pub struct EpisodicMemory {
    /// The last [`MAX_REFLECTIONS`] reflections, oldest first.
    #[serde(default)]
    pub reflections: Vec<Reflection>,
    /// How often each error type was reflected on.
    #[serde(default)]
    pub error_counts: VecMap<String, u32>,
    /// A failure of the current reply's calls, reflected on once the reply's other calls
    /// have run (a reflection between them would split the calls from their results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Failure>,
}

impl EpisodicMemory {
    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.reflections.is_empty() && self.error_counts.is_empty() && self.pending.is_none()
    }

    /// What a new run of the session starts with: the reflections and counts, no pending
    /// failure.
    pub fn for_next_run(self) -> Self {
        Self {
            pending: None,
            ..self
        }
    }

    /// Stores `reflection` (dropping the oldest beyond the bound) and counts its error
    /// type; returns the new count.
    pub fn store(&mut self, reflection: Reflection) -> u32 {
        let count = self
            .error_counts
            .get_or_default(reflection.error_type.clone());
        *count += 1;
        let count = *count;
        self.reflections.push(reflection);
        let excess = self.reflections.len().saturating_sub(MAX_REFLECTIONS);
        self.reflections.drain(..excess);
        count
    }

    /// How often `error_type` happened.
    pub fn count(&self, error_type: &str) -> u32 {
        self.error_counts.get(error_type).copied().unwrap_or(0)
    }

    /// The reflections relevant to a failure of `tool` with `error_type`: same tool or
    /// same error type, oldest first.
    pub fn relevant<'a>(
        &'a self,
        tool: &'a str,
        error_type: &'a str,
    ) -> impl Iterator<Item = &'a Reflection> + 'a {
        self.reflections
            .iter()
            .filter(move |r| r.tool == tool || r.error_type == error_type)
    }
}
