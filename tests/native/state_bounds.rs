//! Bounds on what a stored record can make the worker do: a head record's `entries` count
//! (it sizes the list of keys read with the head) is capped at `MAX_ENTRIES`, a record over
//! it is quarantined with a notice like any corrupted record, and only the newest
//! `MAX_QUARANTINED` quarantined records are kept.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use knowledgelens::ports::{StateStore, StoreError};
use knowledgelens::service::{Ports, Service};
use knowledgelens::state::{
    self, SessionState, StateError, MAX_ENTRIES, MAX_QUARANTINED, QUARANTINE_PREFIX,
};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, ScriptedLlm, StaticPages,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const SESSION: &str = "tab:1";

/// A memory store that notes the most keys one `get_many` was asked for.
#[derive(Default)]
struct CountingStore {
    inner: MemoryStore,
    most_keys: Cell<usize>,
}

impl StateStore for CountingStore {
    fn get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, StoreError>> {
        self.inner.get(key)
    }
    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>> {
        self.most_keys.set(self.most_keys.get().max(keys.len()));
        self.inner.get_many(keys)
    }
    fn set(&self, items: Vec<(String, String)>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        self.inner.set(items)
    }
    fn remove(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        self.inner.remove(keys)
    }
    fn keys<'a>(&'a self, prefix: &'a str) -> LocalBoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.inner.keys(prefix)
    }
}

/// A saved session with two trajectory entries whose head record then says `entries`.
fn store_with_entries(store: &dyn StateStore, entries: Value) {
    let mut saved = SessionState::new(SESSION, 500);
    saved.begin_run("Why tides?", None, Default::default(), 500);
    saved.record(600, knowledgelens::agent::trajectory::Item::thought("One."));
    saved.record(700, knowledgelens::agent::trajectory::Item::thought("Two."));
    futures::executor::block_on(state::save(store, &mut saved)).unwrap();
    let key = format!("session:{SESSION}");
    let text = futures::executor::block_on(store.get(&key))
        .unwrap()
        .unwrap();
    let mut head: Value = serde_json::from_str(&text).unwrap();
    head["entries"] = entries;
    futures::executor::block_on(store.set(vec![(key, head.to_string())])).unwrap();
}

#[test]
fn a_head_listing_more_entries_than_a_run_can_have_is_quarantined_with_a_notice() {
    let sessions = Rc::new(MemoryStore::new());
    store_with_entries(sessions.as_ref(), json!(MAX_ENTRIES + 1));
    let text = sessions.data.borrow()[&format!("session:{SESSION}")].clone();
    assert!(matches!(
        state::decode_head(&text),
        Err(StateError::Corrupted(why)) if why.contains("trajectory entries")
    ));
    let ports = Ports {
        capture: Rc::new(knowledgelens::ports::NoCapture),
        sessions: sessions.clone(),
        settings: Rc::new(MemoryStore::new()),
        clock: ManualClock::new(9_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(BTreeMap::new())),
        models: Rc::new(FixedModel(Rc::new(ScriptedLlm::new(vec![])))),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(3)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    let service = Service::new(ports);
    // A worker start does not resume it (nor fall over it).
    assert!(futures::executor::block_on(service.resume_all()).is_empty());
    let (snap, run) = futures::executor::block_on(
        service.handle_json(json!({"id": 1, "type": "snapshot", "session": SESSION})),
    );
    assert!(run.is_none());
    assert_eq!(snap["ok"], true, "{snap}");
    let notice = snap["data"]["notices"][0].as_str().unwrap();
    assert!(notice.contains("corrupted"), "{notice}");
    assert!(notice.contains("quarantine:tab:1:9000"), "{notice}");
    assert!(sessions.data.borrow().contains_key("quarantine:tab:1:9000"));
}

#[test]
fn a_head_at_the_cap_is_read_as_usual() {
    // The cap is no limit a real record meets: a count that matches its entries loads.
    let store = MemoryStore::new();
    store_with_entries(&store, json!(2));
    let loaded = futures::executor::block_on(state::load(&store, SESSION))
        .unwrap()
        .unwrap();
    assert_eq!(loaded.trajectory.len(), 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever `entries` a head record holds, loading it never panics, never asks the store
    /// for more than `MAX_ENTRIES` entry keys (plus the page), and only a true count loads.
    #[test]
    fn any_entries_count_is_read_without_panicking_or_allocating_by_it(
        entries in prop_oneof![
            any::<u64>().prop_map(|n| json!(n)),
            (0u64..(MAX_ENTRIES as u64 + 10)).prop_map(|n| json!(n)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            Just(json!("12")),
            Just(json!(null)),
        ],
    ) {
        let store = CountingStore::default();
        store_with_entries(&store, entries.clone());
        let loaded = futures::executor::block_on(state::load(&store, SESSION));
        prop_assert!(store.most_keys.get() <= MAX_ENTRIES + 1, "{} keys", store.most_keys.get());
        match loaded {
            Ok(Some(state)) => prop_assert_eq!(entries, json!(state.trajectory.len())),
            Ok(None) => prop_assert!(false, "the session is there"),
            Err(StateError::Corrupted(_)) => {}
            Err(other) => prop_assert!(false, "{other}"),
        }
    }
}

#[test]
fn only_the_newest_quarantined_records_are_kept() {
    let store = MemoryStore::new();
    // Older leftovers, out of order, some of other sessions.
    for (session, at) in [("tab:7", 40), ("popup", 10), ("tab:1", 30), ("tab:9", 20)] {
        store.data.borrow_mut().insert(
            format!("{QUARANTINE_PREFIX}{session}:{at}"),
            "{broken".into(),
        );
    }
    let session_key = format!("session:{SESSION}");
    for at in [100, 200, 300] {
        store
            .data
            .borrow_mut()
            .insert(session_key.clone(), "{broken".into());
        futures::executor::block_on(state::quarantine(&store, SESSION, at)).unwrap();
    }
    let kept: Vec<String> = store
        .data
        .borrow()
        .keys()
        .filter(|k| k.starts_with(QUARANTINE_PREFIX))
        .cloned()
        .collect();
    assert_eq!(kept.len(), MAX_QUARANTINED);
    let mut want = vec![
        "quarantine:tab:1:100",
        "quarantine:tab:1:200",
        "quarantine:tab:1:300",
        "quarantine:tab:1:30",
        "quarantine:tab:7:40",
    ];
    want.sort();
    assert_eq!(kept, want);
}
