//! Archived conversations: when the user starts a new conversation, the session's current
//! one (its turns, last question, answer and trajectory, without the page text) is kept
//! under `conv:<session>:<n>` in the session store. A tab closing leaves them alone (they
//! go when the browser restarts, with the session store), and they are the first thing
//! removed when the store is full.

use serde::Serialize;

use super::{
    drop_oldest_finished, eviction_may_fit, log_store_error, parse_versioned, upgrade_record,
    StateError, Write,
};
use crate::ports::{StateStore, StoreError};
use crate::state::{SessionState, SCHEMA_VERSION};
use kljson::{FromJson, ToJson};

/// Storage key prefix of archived conversations.
pub const ARCHIVE_PREFIX: &str = "conv:";

/// Longest title (the conversation's first question), in characters.
pub const TITLE_CHARS: usize = 120;

/// The storage key (and id) of the `n`th conversation archived from `session`.
pub fn archive_key(session: &str, n: u32) -> String {
    format!("{ARCHIVE_PREFIX}{session}:{n}")
}

/// An archived conversation as `history` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ArchiveSummary {
    /// `conv:<session>:<n>`.
    pub id: String,
    /// The session it was archived from.
    pub session: String,
    /// Its first question (cut to [`TITLE_CHARS`] characters).
    pub title: String,
    /// Questions asked in it.
    pub turns: u32,
    /// Its last change (ms).
    pub updated_at: u64,
}

/// The stored record: the summary, readable on its own, and the state.
#[derive(Serialize, FromJson, ToJson)]
struct Record<S> {
    version: u32,
    #[serde(flatten)]
    summary: ArchiveSummary,
    state: S,
}

/// The summary part of a record (the state is skipped unread).
#[derive(FromJson)]
struct SummaryOnly {
    #[serde(flatten)]
    summary: ArchiveSummary,
}

/// Whether `state` holds a conversation worth archiving (a question was asked).
pub fn has_conversation(state: &SessionState) -> bool {
    !state.question.is_empty() || !state.turns.is_empty()
}

/// The number after `session:` in an archive key of `session`.
fn number_of(key: &str, session: &str) -> Option<u32> {
    key.strip_prefix(ARCHIVE_PREFIX)?
        .strip_prefix(session)?
        .strip_prefix(':')?
        .parse()
        .ok()
}

/// `text` cut to [`TITLE_CHARS`] characters.
fn title_of(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Archives `state`'s conversation as the session's next `conv:<session>:<n>`, making room
/// when the store is full (older archives first, then finished sessions other than this
/// one). `Ok(None)` when there is nothing to archive. Nothing of `state` is changed.
pub async fn archive_conversation(
    store: &dyn StateStore,
    state: &SessionState,
) -> Result<Option<ArchiveSummary>, StoreError> {
    if !has_conversation(state) {
        return Ok(None);
    }
    let session = state.session.clone();
    let next = store
        .keys(&format!("{ARCHIVE_PREFIX}{session}:"))
        .await?
        .iter()
        .filter_map(|k| number_of(k, &session))
        .max()
        .unwrap_or(0)
        + 1;
    let mut kept = state.clone();
    // The page text is the largest part and can be read again; the phases' private
    // histories are not part of the conversation.
    if let Some(page) = kept.page.as_mut() {
        page.text.clear();
    }
    kept.phases.contexts.clear();
    kept.draft.clear();
    let first = state
        .turns
        .first()
        .map_or(state.question.as_str(), |t| t.question.as_str());
    let asked = state.turns.len() + usize::from(!state.question.is_empty());
    let summary = ArchiveSummary {
        id: archive_key(&session, next),
        session: session.clone(),
        title: title_of(first),
        turns: u32::try_from(asked).unwrap_or(u32::MAX),
        updated_at: state.updated_at,
    };
    let record = Record {
        version: SCHEMA_VERSION,
        summary: summary.clone(),
        state: &kept,
    };
    // Plain data with string keys: serializing cannot fail.
    let text = kljson::to_string(&record);
    let mut rounds = 0;
    loop {
        match store.set(vec![(summary.id.clone(), text.clone())]).await {
            Ok(()) => return Ok(Some(summary)),
            // An oversized record, or one that removing the rest could not make fit, removes
            // nothing for itself.
            Err(StoreError::QuotaExceeded(message)) if rounds < 16 => {
                rounds += 1;
                let write = Write::of(&[(summary.id.clone(), text.clone())]);
                let freed = eviction_may_fit(store, &session, &write).await
                    && (drop_oldest_archived(store).await?
                        || drop_oldest_finished(store, &session).await?);
                if !freed {
                    return Err(StoreError::QuotaExceeded(message));
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// A fresh session to follow `state` once its conversation is archived: empty, with a new
/// run id (so the stored entries of the old run are removed by the next save) and a higher
/// revision (so every UI takes its view as newer than what it shows).
pub fn fresh_conversation(state: &SessionState, now_ms: u64) -> SessionState {
    let mut fresh = SessionState::new(&state.session, now_ms);
    fresh.run_id = state.run_id + 1;
    fresh.rev = state.rev + 1;
    fresh.saved = state.saved;
    fresh
}

/// Every archived conversation's summary, newest first. An unreadable record is skipped
/// (and logged), never fatal to the list.
pub async fn list_archived(store: &dyn StateStore) -> Result<Vec<ArchiveSummary>, StoreError> {
    let keys = store.keys(ARCHIVE_PREFIX).await?;
    let values = store.get_many(keys.clone()).await?;
    let mut list: Vec<ArchiveSummary> = keys
        .iter()
        .zip(values)
        .filter_map(|(key, value)| {
            let text = value?;
            match kljson::decode::<SummaryOnly>(&text) {
                Ok(s) if s.summary.id == *key => Some(s.summary),
                Ok(_) => {
                    crate::ports::log(&format!(
                        "archived conversation {key}: stored under another id"
                    ));
                    None
                }
                Err(e) => {
                    crate::ports::log(&format!("archived conversation {key} is unreadable: {e}"));
                    None
                }
            }
        })
        .collect();
    crate::types::order::sort_by(&mut list, |a, b| {
        (b.updated_at, archive_order(&b.id)).cmp(&(a.updated_at, archive_order(&a.id)))
    });
    Ok(list)
}

/// The number at the end of an archive id (ties of `updated_at` list later archives first).
fn archive_order(id: &str) -> u32 {
    id.rsplit(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The archived conversation `id`: `Ok(None)` when there is none.
pub async fn load_archived(
    store: &dyn StateStore,
    id: &str,
) -> Result<Option<SessionState>, StateError> {
    let Some(text) = store.get(id).await? else {
        return Ok(None);
    };
    let (mut value, version) = parse_versioned(&text)?;
    if version < u64::from(SCHEMA_VERSION) {
        // A conversation archived by an older version: its state migrated like a session's.
        upgrade_record(&mut value, version as u32).map_err(StateError::Corrupted)?;
    }
    let record = <Record<SessionState> as FromJson>::from_json(value)
        .map_err(|e| StateError::Corrupted(e.to_string()))?;
    if record.summary.id != id {
        return Err(StateError::Corrupted(format!(
            "record of {} stored under {id}",
            record.summary.id
        )));
    }
    Ok(Some(record.state))
}

/// Deletes every archived conversation; returns how many there were.
pub async fn clear_archived(store: &dyn StateStore) -> Result<u32, StoreError> {
    let keys = store.keys(ARCHIVE_PREFIX).await?;
    let count = u32::try_from(keys.len()).unwrap_or(u32::MAX);
    if !keys.is_empty() {
        store.remove(keys).await?;
    }
    Ok(count)
}

/// Frees space by deleting the least recently updated archived conversation (an unreadable
/// one first). Returns whether one was deleted.
pub async fn drop_oldest_archived(store: &dyn StateStore) -> Result<bool, StoreError> {
    let keys = store.keys(ARCHIVE_PREFIX).await?;
    if keys.is_empty() {
        return Ok(false);
    }
    let values = store.get_many(keys.clone()).await?;
    let oldest = keys
        .into_iter()
        .zip(values)
        .map(|(key, value)| {
            let updated = value
                .and_then(|t| kljson::decode::<SummaryOnly>(&t).ok())
                .map_or(0, |s| s.summary.updated_at);
            (updated, archive_order(&key), key)
        })
        .min();
    match oldest {
        Some((_, _, key)) => store.remove(vec![key]).await.map(|()| true),
        None => Ok(false),
    }
}

/// Frees space for a save of session `keep`: the least recently used page kept for
/// questions across pages that `keep`'s conversation does not use (`protected`) first, then
/// an archived conversation, else the least recently updated finished session. Returns
/// whether anything was deleted.
pub async fn make_room(store: &dyn StateStore, keep: &str, protected: &[u64]) -> bool {
    match crate::state::read_pages::drop_least_used(store, protected).await {
        Ok(true) => return true,
        Ok(false) => {}
        Err(err) => log_store_error("removing a page read earlier to make room", &err),
    }
    match drop_oldest_archived(store).await {
        Ok(true) => return true,
        Ok(false) => {}
        Err(err) => log_store_error("removing an archived conversation to make room", &err),
    }
    match drop_oldest_finished(store, keep).await {
        Ok(freed) => freed,
        Err(err) => {
            log_store_error("removing a finished session to make room", &err);
            false
        }
    }
}
