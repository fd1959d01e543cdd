//! Prompt-cache keys: one per run and context label, so that a provider can send a run's
//! calls over the same prompt prefix to the same cache. Pure: no browser, no clock.
//!
//! A key is a short hash of the session id, the run number, the run's start time and the
//! label: never user text, keys or page content, and stable across a worker restart (it is
//! derived again from the saved state). OpenAI-compatible servers get it as
//! `prompt_cache_key` (<https://platform.openai.com/docs/guides/prompt-caching>).

use std::hash::Hasher;

use crate::page::FnvHasher;
use crate::state::SessionState;

/// The label of the run's primary context (the conversation with the user).
pub const PRIMARY: &str = "";

/// The cache key of `label` in run `run_id` of `session`, started at `started_at` (ms):
/// `kl-` and 16 hex digits (64-bit FNV-1a, the page index's hasher, over the length-prefixed
/// parts).
pub fn key(session: &str, run_id: u32, started_at: u64, label: &str) -> String {
    let mut hasher = FnvHasher::default();
    let mut feed = |bytes: &[u8]| {
        hasher.write(&(bytes.len() as u64).to_le_bytes());
        hasher.write(bytes);
    };
    feed(session.as_bytes());
    feed(&run_id.to_le_bytes());
    feed(&started_at.to_le_bytes());
    feed(label.as_bytes());
    format!("kl-{:016x}", hasher.finish())
}

/// The cache key of the context the run's next call belongs to: the current phase's label,
/// else the primary context. A label started afresh (`continue_context = false`) gets a new
/// key: its old prefix is gone.
pub fn of(state: &SessionState) -> String {
    let label = state.phase.as_ref().map_or(PRIMARY, |p| p.label.as_str());
    match state.context_resets.get(label).copied().unwrap_or(0) {
        0 => key(&state.session, state.run_id, state.started_at, label),
        resets => key(
            &state.session,
            state.run_id,
            state.started_at,
            &format!("{label}\u{0}{resets}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_every_part_and_hide_them() {
        let base = key("tab:3", 1, 1_000, PRIMARY);
        assert_eq!(base, key("tab:3", 1, 1_000, PRIMARY));
        assert_eq!(base.len(), 19);
        assert!(base.starts_with("kl-"));
        for other in [
            key("tab:4", 1, 1_000, PRIMARY),
            key("tab:3", 2, 1_000, PRIMARY),
            key("tab:3", 1, 1_001, PRIMARY),
            key("tab:3", 1, 1_000, "subtopic 1"),
            // Length prefixes keep the parts apart.
            key("tab:31", 1, 1_000, PRIMARY),
        ] {
            assert_ne!(base, other);
        }
        assert!(!key("secret question", 1, 0, "label").contains("secret"));
    }
}
