//! Reading and writing session records in the state store: a head record plus one key per
//! trajectory entry and per run's page text, migrations on load, making room when storage
//! is full (archived conversations go first), and quarantine of corrupted records. The
//! archived conversations themselves are in [`archive`].

mod archive;

pub use archive::*;

use serde::Serialize;

use super::trajectory::{Entry, Item};
use super::{migrate, RunStatus, SessionState, SCHEMA_VERSION, SESSION_PREFIX};
use crate::ports::{StateStore, StoreError};
use kljson::{FromJson, ToJson};

/// The storage key of session `session`.
pub fn session_key(session: &str) -> String {
    format!("{SESSION_PREFIX}{session}")
}

/// What of a session is known to be in the store (not serialized: it describes the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Saved {
    /// The run whose page and entries are stored (0: none).
    pub run_id: u32,
    /// Trajectory entries stored for that run.
    pub entries: usize,
}

/// Storage key of a run's page text.
pub fn page_key(session: &str, run_id: u32) -> String {
    format!("page:{session}:{run_id}")
}

/// Storage key of one trajectory entry.
pub fn entry_key(session: &str, run_id: u32, index: usize) -> String {
    format!("traj:{session}:{run_id}:{index}")
}

/// Most trajectory entries a head record may list. A run has at most
/// [`super::config::RunConfig::MAX_STEPS_LIMIT`] (20) steps, each of one reply of at most
/// [`crate::agent::step::MAX_CALLS_PER_REPLY`] (5) calls with their results, errors and retries,
/// reflections and its search or page-summary entries: a few hundred entries. The count comes
/// from storage and sizes the list of keys read with the head, so a record listing more than
/// this is treated as corrupted (quarantined, with a notice) instead of being believed.
pub const MAX_ENTRIES: usize = 10_000;

/// The head record: the state without its trajectory and page text, which are stored once
/// each under their own keys.
#[derive(Serialize, FromJson, ToJson)]
struct Head<S> {
    version: u32,
    entries: usize,
    state: S,
}

/// Why a stored state could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not valid JSON, or not a valid state.
    #[error("the saved session is corrupted ({0}); a fresh session was started")]
    Corrupted(String),
    /// Written by a newer version of KnowledgeLens.
    #[error("the saved session was written by a newer version of KnowledgeLens (schema {0}); a fresh session was started")]
    NewerVersion(u32),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A stored record parsed once, with its schema `version`, refused when it is missing or
/// newer than this build's (never guessed at).
pub(crate) fn parse_versioned(text: &str) -> Result<(serde_json::Value, u64), StateError> {
    let value = kljson::parse(text).map_err(|e| StateError::Corrupted(e.to_string()))?;
    let version = match value.get("version") {
        None | Some(serde_json::Value::Null) => {
            return Err(StateError::Corrupted("no version".into()))
        }
        Some(v) => v.as_u64().ok_or_else(|| {
            StateError::Corrupted(format!("version: invalid value {v}, expected a number"))
        })?,
    };
    if version > u64::from(SCHEMA_VERSION) {
        return Err(StateError::NewerVersion(
            version.min(u64::from(u32::MAX)) as u32
        ));
    }
    Ok((value, version))
}

/// Decodes a head record: the state (without trajectory and page text) and how many
/// trajectory entries belong to it. Never panics, whatever the input.
pub fn decode_head(text: &str) -> Result<(SessionState, usize), StateError> {
    let (value, version) = parse_versioned(text)?;
    decode_head_value(value, version)
}

/// [`decode_head`] of a head record already parsed, of schema `version`.
fn decode_head_value(
    mut value: serde_json::Value,
    version: u64,
) -> Result<(SessionState, usize), StateError> {
    if version < u64::from(SCHEMA_VERSION) {
        // A head of an older version (2 on): its state brought to the current schema.
        upgrade_record(&mut value, version as u32).map_err(StateError::Corrupted)?;
    }
    let head = <Head<SessionState> as FromJson>::from_json(value)
        .map_err(|e| StateError::Corrupted(e.to_string()))?;
    if head.entries > MAX_ENTRIES {
        return Err(StateError::Corrupted(format!(
            "it lists {} trajectory entries, more than a run can have ({MAX_ENTRIES})",
            head.entries
        )));
    }
    if head.state.version != head.version {
        return Err(StateError::Corrupted("version mismatch".into()));
    }
    Ok((head.state, head.entries))
}

/// Brings a record of `version` that holds a `state` (a head record, an archived
/// conversation) to the current schema: its `state` by the migrations, then its own
/// `version`.
pub(crate) fn upgrade_record(value: &mut serde_json::Value, version: u32) -> Result<(), String> {
    let head = value
        .as_object_mut()
        .ok_or("a session record must be an object")?;
    if head
        .get("state")
        .and_then(|s| s.get("version"))
        .and_then(|v| v.as_u64())
        != Some(u64::from(version))
    {
        return Err("version mismatch".into());
    }
    let state = head.remove("state").ok_or("the record has no state")?;
    head.insert("state".into(), migrate::upgrade(state, version)?);
    head.insert("version".into(), serde_json::Value::from(SCHEMA_VERSION));
    Ok(())
}

/// Encodes the head record of `state` (without cloning the trajectory or the page).
pub fn encode_head(state: &mut SessionState) -> String {
    let trajectory = std::mem::take(&mut state.trajectory);
    let text = state.page.as_mut().map(|p| std::mem::take(&mut p.text));
    let head = Head {
        version: SCHEMA_VERSION,
        entries: trajectory.len(),
        state: &*state,
    };
    // Serializing plain data structures to a String cannot fail.
    let encoded = kljson::to_string(&head);
    state.trajectory = trajectory;
    if let (Some(page), Some(text)) = (state.page.as_mut(), text) {
        page.text = text;
    }
    encoded
}

/// Loads the state of `session`: `Ok(None)` when there is none.
pub async fn load(
    store: &dyn StateStore,
    session: &str,
) -> Result<Option<SessionState>, StateError> {
    let Some(text) = store.get(&session_key(session)).await? else {
        return Ok(None);
    };
    load_with_head(store, session, &text).await.map(Some)
}

/// [`load`] when the head record's `text` was just read: reads the rest (trajectory entries
/// and page text), saving the caller a second read of the head.
pub async fn load_with_head(
    store: &dyn StateStore,
    session: &str,
    text: &str,
) -> Result<SessionState, StateError> {
    let (value, version) = parse_versioned(text)?;
    if version == 1 {
        // One inline record per session: migrate it, and store it in the current layout
        // (version 2 on has the current layout, a head plus entries, which
        // `decode_head_value` brings up to date).
        let mut state = migrate::to_current(value, 1)?;
        if state.session != session {
            return Err(StateError::Corrupted(format!(
                "record of session {} stored under {session}",
                state.session
            )));
        }
        save(store, &mut state).await?;
        return Ok(state);
    }
    let (mut state, entries) = decode_head_value(value, version)?;
    if state.session != session {
        return Err(StateError::Corrupted(format!(
            "record of session {} stored under {session}",
            state.session
        )));
    }
    let run = state.run_id;
    let mut keys: Vec<String> = (0..entries).map(|i| entry_key(session, run, i)).collect();
    let has_page = state.page.is_some();
    if has_page {
        keys.push(page_key(session, run));
    }
    let mut values = store.get_many(keys).await?;
    if has_page {
        let text = values
            .pop()
            .flatten()
            .ok_or_else(|| StateError::Corrupted("the page text is missing".into()))?;
        if let Some(page) = state.page.as_mut() {
            page.text = text;
        }
    }
    let mut trajectory = Vec::with_capacity(values.len());
    for (i, v) in values.into_iter().enumerate() {
        let v =
            v.ok_or_else(|| StateError::Corrupted(format!("trajectory entry {i} is missing")))?;
        let entry = kljson::decode::<Entry>(&v)
            .map_err(|e| StateError::Corrupted(format!("trajectory entry {i}: {e}")))?;
        trajectory.push(entry);
    }
    state.trajectory = trajectory;
    state.saved = Saved {
        run_id: run,
        entries,
    };
    super::read_pages::load_added_texts(store, &mut state).await?;
    Ok(state)
}

/// Saves what changed since the last save: the head record, new trajectory entries, and the
/// page text once per run, in one store write; a previous run's page and entries are
/// removed. A step therefore writes a bounded number of bytes however long the run is.
pub async fn save(store: &dyn StateStore, state: &mut SessionState) -> Result<(), StoreError> {
    let plan = plan_save(state);
    store.set(plan.items).await?;
    state.saved = plan.saved;
    remove_stale(store, plan.stale).await;
    Ok(())
}

/// What one save writes, planned synchronously from the state (so a shared state is never
/// borrowed across the write).
pub struct SavePlan {
    /// Items to write in one store call (the head last).
    pub items: Vec<(String, String)>,
    /// What will be stored once the write succeeds.
    pub saved: Saved,
    /// Keys of the previous run to remove after the write.
    pub stale: Vec<String>,
}

/// Plans a save of what changed since the last one: the head record, new trajectory
/// entries, and the page text once per run.
pub fn plan_save(state: &mut SessionState) -> SavePlan {
    let session = state.session.clone();
    let run = state.run_id;
    let previous = state.saved;
    let same_run = previous.run_id == run && previous.entries <= state.trajectory.len();
    let mut items = Vec::new();
    if !same_run {
        if let Some(page) = &state.page {
            items.push((page_key(&session, run), page.text.clone()));
        }
    }
    let from = if same_run { previous.entries } else { 0 };
    for (i, entry) in state.trajectory.iter().enumerate().skip(from) {
        items.push((entry_key(&session, run, i), kljson::to_string(entry)));
    }
    items.push((session_key(&session), encode_head(state)));
    // The new head and its entries are written in one call before the previous run's
    // entries go, so a reader sees either the old head with all its entries or the new one.
    let mut stale = Vec::new();
    if !same_run && previous.run_id != 0 && previous.run_id != run {
        stale = (0..previous.entries)
            .map(|i| entry_key(&session, previous.run_id, i))
            .collect();
        stale.push(page_key(&session, previous.run_id));
    }
    SavePlan {
        items,
        saved: Saved {
            run_id: run,
            entries: state.trajectory.len(),
        },
        stale,
    }
}

/// Removes a previous run's keys. Best effort: leftovers are only space (they go with the
/// session's other keys), so a failure is logged to the trajectory of nobody, only reported.
async fn remove_stale(store: &dyn StateStore, stale: Vec<String>) {
    if stale.is_empty() {
        return;
    }
    if let Err(err) = store.remove(stale).await {
        // Nothing the user loses: the keys are orphans that delete_session also removes.
        log_store_error("removing a previous run's entries", &err);
    }
}

/// Reports a store failure the user loses nothing by (through [`crate::ports::log`]).
pub(crate) fn log_store_error(what: &str, err: &StoreError) {
    crate::ports::log(&format!("{what} failed: {err}"));
}

/// The largest write that may make room by removing History and other sessions: 4 MiB,
/// 40% of `chrome.storage.session`'s 10 MiB. A larger write is one oversized record (a
/// huge page's text): it fails as it is rather than take the user's History and other
/// tabs' sessions with it.
pub const MAX_EVICTING_WRITE_BYTES: usize = 4 * 1024 * 1024;

/// The bytes of a write, as the store counts them (keys and values).
pub fn write_bytes(items: &[(String, String)]) -> usize {
    items.iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// What a write that did not fit was: its keys and its bytes ([`write_bytes`]).
pub(crate) struct Write {
    keys: Vec<String>,
    bytes: usize,
}

impl Write {
    pub(crate) fn of(items: &[(String, String)]) -> Self {
        Self {
            keys: items.iter().map(|(k, _)| k.clone()).collect(),
            bytes: write_bytes(items),
        }
    }
}

/// Removes the oldest archived conversation or finished session for a write of `keep`'s
/// that did not fit: never for a write over [`MAX_EVICTING_WRITE_BYTES`], nor when removing
/// everything else could not make it fit ([`eviction_may_fit`]).
async fn make_room_for(
    store: &dyn StateStore,
    keep: &str,
    protected: &[u64],
    write: &Write,
) -> bool {
    eviction_may_fit(store, keep, write).await && make_room(store, keep, protected).await
}

/// Whether `write` may fit once everything but `keep`'s own records is removed: at most
/// [`MAX_EVICTING_WRITE_BYTES`], and its bytes with `keep`'s records it does not replace
/// within the store's quota (when the quota and the records can be read).
pub(crate) async fn eviction_may_fit(store: &dyn StateStore, keep: &str, write: &Write) -> bool {
    if write.bytes > MAX_EVICTING_WRITE_BYTES {
        return false;
    }
    let Some(quota) = store.quota() else {
        return true;
    };
    let Ok(own) = session_keys(store, keep).await else {
        return true;
    };
    let others: Vec<String> = own
        .into_iter()
        .filter(|k| !write.keys.contains(k))
        .collect();
    let Ok(values) = store.get_many(others.clone()).await else {
        return true;
    };
    let kept: usize = others
        .iter()
        .zip(values)
        .map(|(k, v)| v.map_or(0, |v| k.len() + v.len()))
        .sum();
    (write.bytes + kept) as u64 <= quota
}

/// [`save_making_room`] for a state shared with the run registry: it is borrowed only in
/// synchronous sections, never across a store call.
pub async fn save_shared_making_room(
    store: &dyn StateStore,
    state: &std::cell::RefCell<SessionState>,
) -> Result<bool, StoreError> {
    let mut made_room = false;
    let mut rounds = 0;
    loop {
        let plan = plan_save(&mut state.borrow_mut());
        let write = Write::of(&plan.items);
        match store.set(plan.items).await {
            Ok(()) => {
                state.borrow_mut().saved = plan.saved;
                remove_stale(store, plan.stale).await;
                return Ok(made_room);
            }
            Err(StoreError::QuotaExceeded(message)) if rounds < 16 => {
                rounds += 1;
                let (session, protected) = {
                    let state = state.borrow();
                    (state.session.clone(), state.protected_pages())
                };
                let freed = make_room_for(store, &session, &protected, &write).await;
                if !freed && !compact_trajectory(&mut state.borrow_mut()) {
                    return Err(StoreError::QuotaExceeded(message));
                }
                made_room = true;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Every key that belongs to `session` (its head, page texts and trajectory entries).
pub async fn session_keys(
    store: &dyn StateStore,
    session: &str,
) -> Result<Vec<String>, StoreError> {
    let mut keys = store.keys(&format!("page:{session}:")).await?;
    keys.extend(store.keys(&format!("traj:{session}:")).await?);
    keys.push(session_key(session));
    Ok(keys)
}

/// Removes everything stored for `session`.
pub async fn delete_session(store: &dyn StateStore, session: &str) -> Result<(), StoreError> {
    let keys = session_keys(store, session).await?;
    store.remove(keys).await
}

/// The kept pages (questions across pages) that some stored session's conversation uses.
pub async fn pages_in_use(store: &dyn StateStore) -> Result<Vec<u64>, StoreError> {
    let mut used = Vec::new();
    for key in store.keys(SESSION_PREFIX).await? {
        if let Some(Ok((s, _))) = store.get(&key).await?.map(|text| decode_head(&text)) {
            used.extend(s.protected_pages());
        }
    }
    Ok(used)
}

/// Frees space by deleting the least recently updated session whose run is not going on
/// (never `keep`). Returns whether one was deleted.
pub async fn drop_oldest_finished(store: &dyn StateStore, keep: &str) -> Result<bool, StoreError> {
    let mut oldest: Option<(u64, String)> = None;
    for key in store.keys(SESSION_PREFIX).await? {
        let session = &key[SESSION_PREFIX.len()..];
        if session == keep {
            continue;
        }
        let updated = match store.get(&key).await? {
            Some(text) => match decode_head(&text) {
                Ok((s, _)) if s.status == RunStatus::Running => continue,
                Ok((s, _)) => s.updated_at,
                Err(_) => 0,
            },
            None => continue,
        };
        if oldest.as_ref().is_none_or(|(t, _)| updated < *t) {
            oldest = Some((updated, session.to_string()));
        }
    }
    match oldest {
        Some((_, session)) => delete_session(store, &session).await.map(|()| true),
        None => Ok(false),
    }
}

/// The notice shown once a save had to make room (see [`save_making_room`]).
pub const STORAGE_FULL_NOTICE: &str = "Browser storage for KnowledgeLens was full: pages read earlier, the oldest archived conversations or finished sessions were removed, and if that was not enough, long tool results of earlier steps were shortened, to make room.";

/// [`save`], making room when the storage quota is exceeded: archived conversations, then
/// the least recently updated finished sessions are dropped first (never `state`'s own, and
/// never for a write over [`MAX_EVICTING_WRITE_BYTES`]), then `state`'s older tool results
/// are summarized, retrying the save after each. `Ok(true)` when room had to be made; the
/// quota error when nothing more can go.
pub async fn save_making_room(
    store: &dyn StateStore,
    state: &mut SessionState,
) -> Result<bool, StoreError> {
    let placeholder = SessionState::new(&state.session, state.updated_at);
    let cell = std::cell::RefCell::new(std::mem::replace(state, placeholder));
    let result = save_shared_making_room(store, &cell).await;
    *state = cell.into_inner();
    result
}

/// Characters a summarized tool result keeps.
const SUMMARY_CHARS: usize = 200;

/// Summarizes the tool results of all but the last two steps (their text is cut to a short
/// excerpt) and marks every entry for rewriting. Returns whether anything shrank.
pub fn compact_trajectory(state: &mut SessionState) -> bool {
    let keep_from = state.step.saturating_sub(1);
    let mut shrank = false;
    for entry in state.trajectory.iter_mut().filter(|e| e.step < keep_from) {
        if let Item::ToolResult { content, .. } = &mut entry.item {
            if let Some((cut, _)) = content.char_indices().nth(SUMMARY_CHARS) {
                let total = content.chars().count();
                content.truncate(cut);
                content.push_str(&format!(
                    " … [summarized to save space: {total} characters]"
                ));
                shrank = true;
            }
        }
    }
    if shrank {
        state.saved.entries = 0;
    }
    shrank
}

/// Storage key prefix under which corrupted records are kept for export.
pub const QUARANTINE_PREFIX: &str = "quarantine:";

/// Quarantined records kept: older ones are removed when a record is set aside.
pub const MAX_QUARANTINED: usize = 5;

/// Moves a corrupted session record aside (under `quarantine:<session>:<ms>`) and removes
/// the session's keys, so a fresh session can start; only the newest [`MAX_QUARANTINED`]
/// quarantined records are kept. Returns the quarantine key.
pub async fn quarantine(
    store: &dyn StateStore,
    session: &str,
    now_ms: u64,
) -> Result<String, StoreError> {
    let raw = store.get(&session_key(session)).await?.unwrap_or_default();
    let key = format!("{QUARANTINE_PREFIX}{session}:{now_ms}");
    store.set(vec![(key.clone(), raw)]).await?;
    delete_session(store, session).await?;
    prune_quarantine(store).await;
    Ok(key)
}

/// The time (ms) a quarantine key was written, from its last `:`-separated part.
fn quarantined_at(key: &str) -> u64 {
    key.rsplit(':')
        .next()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0)
}

/// Removes all but the newest [`MAX_QUARANTINED`] quarantined records. Best effort: a
/// leftover is only space, so a failure is logged.
async fn prune_quarantine(store: &dyn StateStore) {
    let mut keys = match store.keys(QUARANTINE_PREFIX).await {
        Ok(keys) => keys,
        Err(err) => return log_store_error("listing quarantined records", &err),
    };
    if keys.len() <= MAX_QUARANTINED {
        return;
    }
    // Newest first (ties by key, so the order is total).
    crate::types::order::sort_by(&mut keys, |a, b| {
        quarantined_at(b).cmp(&quarantined_at(a)).then(b.cmp(a))
    });
    let old = keys.split_off(MAX_QUARANTINED);
    if let Err(err) = store.remove(old).await {
        log_store_error("removing old quarantined records", &err);
    }
}
