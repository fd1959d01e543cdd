//! Prompt-cache keys, so that a provider sends calls over the same prompt prefix to the same
//! cache. Pure: no browser, no clock.
//!
//! The conversation's calls share one key per page: every question about the same page sends
//! the same system text and page block first (see `agent::prompts`), so the key is a short
//! hash of the session id and the page's fence nonce (kept while the session stays on the
//! page). A bounded phase's context (research, its subtopics) gets a key per run and label.
//! A key is never user text, keys or page content, and it does not reveal the nonce; it is
//! stable across a worker restart (derived again from the saved state). OpenAI-compatible
//! servers get it as `prompt_cache_key`
//! (<https://platform.openai.com/docs/guides/prompt-caching>).

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

/// The cache key of the conversation about one page: `kl-` and 16 hex digits over the
/// session and the page's fence nonce.
pub fn page_key(session: &str, nonce: &str) -> String {
    let mut hasher = FnvHasher::default();
    for part in [b"page".as_slice(), session.as_bytes(), nonce.as_bytes()] {
        hasher.write(&(part.len() as u64).to_le_bytes());
        hasher.write(part);
    }
    format!("kl-{:016x}", hasher.finish())
}

/// The cache key of the context the run's next call belongs to: the conversation's key for
/// its page, else (a phase, or a run without a nonce) the key of the run and label. A label
/// started afresh (`continue_context = false`) gets a new key: its old prefix is gone.
pub fn of(state: &SessionState) -> String {
    let label = state
        .phases
        .run
        .as_ref()
        .map_or(PRIMARY, |p| p.label.as_str());
    let resets = state.phases.resets.get(label).copied().unwrap_or(0);
    if label == PRIMARY && resets == 0 && !state.nonce.is_empty() {
        return page_key(&state.session, &state.nonce);
    }
    match resets {
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

    #[test]
    fn the_conversation_keeps_one_key_per_page_and_hides_the_nonce() {
        let mut state = SessionState::new("tab:3", 1_000);
        state.begin_run("first?", None, Default::default(), 1_000);
        state.nonce = "0123456789abcdef".into();
        let first = of(&state);
        state.begin_run("second?", None, Default::default(), 2_000);
        state.nonce = "0123456789abcdef".into();
        assert_eq!(of(&state), first, "a second question on the same page");
        assert!(!first.contains("0123456789abcdef"));
        state.nonce = "fedcba9876543210".into();
        assert_ne!(of(&state), first, "another page");
        assert_ne!(
            page_key("tab:4", "0123456789abcdef"),
            first,
            "another session"
        );
    }
}
