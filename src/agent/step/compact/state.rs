//! The compact capability's state (`state::compact`): the session's compacted history and
//! what the run measured of the context window. Compiled into the state layer from the
//! capability's folder (see `state/mod.rs`).

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// The session's compacted history: a summary that replaces, in every later request, the
/// earlier turns before `turns` and the entries of run `run_id`'s trajectory before
/// `entries` (`agent::context`). The turns and entries themselves are kept (the Steps view,
/// the export and the grounding read them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Compaction {
    /// Earlier turns covered.
    pub turns: usize,
    /// The run whose trajectory `entries` counts.
    pub run_id: u32,
    /// Trajectory entries covered (of run `run_id`).
    pub entries: usize,
    /// The summary.
    pub summary: String,
    /// Whether the model wrote it (else the deterministic fallback).
    pub by_model: bool,
}

/// What the compact capability keeps in the session record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct CompactState {
    /// The session's compacted history, if it was compacted (kept from run to run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Prompt tokens of the run's last model call (for the share of the context window).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_prompt_tokens: u64,
    /// The provider's reported prompt tokens of the run's last call, as a percent of the
    /// estimate (0: nothing reported yet): scales later estimates up (`agent::context`).
    #[serde(default, skip_serializing_if = "crate::state::is_zero_u32")]
    pub prompt_scale_pct: u32,
    /// When the provider refused a request of this run as too long: the most tokens a
    /// request of the run may take from then on (a quarter under the refused one's
    /// estimate, so the retry is never the same request). 0: no refusal.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overflow_limit: u64,
}

impl CompactState {
    /// Whether there is nothing to keep (the record leaves the field out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// What the next run of the session starts with: the compacted history; the window's
    /// measurements are the run's own.
    pub fn for_next_run(&mut self) -> Self {
        Self {
            compaction: self.compaction.take(),
            ..Self::default()
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
