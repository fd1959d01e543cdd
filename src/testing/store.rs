//! In-memory state stores for tests: [`MemoryStore`] (counters, history, injectable faults)
//! and [`YieldingStore`] (every operation a point at which a worker can be stopped).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;

use super::yield_now;
use crate::ports::{StateStore, StoreError};

/// A store in memory, with counters and injectable faults.
#[derive(Default)]
pub struct MemoryStore {
    /// The data.
    pub data: RefCell<BTreeMap<String, String>>,
    /// The next `set` calls fail with these errors, in order.
    pub fail_sets: RefCell<VecDeque<StoreError>>,
    /// Number of `set` calls.
    pub sets: Cell<u32>,
    /// Bytes written by `set` calls.
    pub bytes_written: Cell<u64>,
    /// Bytes written by each `set` call, in order.
    pub set_sizes: RefCell<Vec<u64>>,
    /// Total bytes (keys plus values) the store may hold; a `set` beyond it fails with
    /// `QuotaExceeded`, like `chrome.storage`.
    pub quota_bytes: Cell<Option<u64>>,
    /// A copy of the data after every successful `set` (when `keep_history` is on).
    pub history: RefCell<Vec<BTreeMap<String, String>>>,
    /// Whether to fill `history`.
    pub keep_history: Cell<bool>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding a copy of `data`.
    pub fn with_data(data: BTreeMap<String, String>) -> Self {
        Self {
            data: RefCell::new(data),
            ..Self::default()
        }
    }

    /// Bytes held (keys plus values).
    pub fn used_bytes(&self) -> u64 {
        self.data
            .borrow()
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum()
    }
}

impl StateStore for MemoryStore {
    fn quota(&self) -> Option<u64> {
        self.quota_bytes.get()
    }
    fn get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, StoreError>> {
        future::ready(Ok(self.data.borrow().get(key).cloned())).boxed_local()
    }
    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>> {
        let data = self.data.borrow();
        future::ready(Ok(keys.iter().map(|k| data.get(k).cloned()).collect())).boxed_local()
    }
    fn set(&self, items: Vec<(String, String)>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        self.sets.set(self.sets.get() + 1);
        if let Some(err) = self.fail_sets.borrow_mut().pop_front() {
            return future::ready(Err(err)).boxed_local();
        }
        let size: u64 = items.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        if let Some(quota) = self.quota_bytes.get() {
            let data = self.data.borrow();
            let replaced: u64 = items
                .iter()
                .filter_map(|(k, _)| data.get(k).map(|v| (k.len() + v.len()) as u64))
                .sum();
            drop(data);
            if self.used_bytes() - replaced + size > quota {
                return future::ready(Err(StoreError::QuotaExceeded(
                    "QUOTA_BYTES quota exceeded".into(),
                )))
                .boxed_local();
            }
        }
        self.set_sizes.borrow_mut().push(size);
        self.bytes_written.set(self.bytes_written.get() + size);
        self.data.borrow_mut().extend(items);
        if self.keep_history.get() {
            self.history.borrow_mut().push(self.data.borrow().clone());
        }
        future::ready(Ok(())).boxed_local()
    }
    fn remove(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        let mut data = self.data.borrow_mut();
        for k in keys {
            data.remove(&k);
        }
        future::ready(Ok(())).boxed_local()
    }
    fn keys<'a>(&'a self, prefix: &'a str) -> LocalBoxFuture<'a, Result<Vec<String>, StoreError>> {
        future::ready(Ok(self
            .data
            .borrow()
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()))
        .boxed_local()
    }
}

/// A [`MemoryStore`] whose every operation yields before it takes effect, and whose writes
/// yield once more after they took effect (written, not yet acknowledged): a run stopped
/// at any of these points has written either all of a `set` or none of it, as with
/// `chrome.storage`.
pub struct YieldingStore(pub Rc<MemoryStore>);

impl StateStore for YieldingStore {
    fn quota(&self) -> Option<u64> {
        self.0.quota()
    }
    fn get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, StoreError>> {
        async move {
            yield_now().await;
            self.0.get(key).await
        }
        .boxed_local()
    }
    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>> {
        async move {
            yield_now().await;
            self.0.get_many(keys).await
        }
        .boxed_local()
    }
    fn set(&self, items: Vec<(String, String)>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        async move {
            yield_now().await;
            let result = self.0.set(items).await;
            yield_now().await;
            result
        }
        .boxed_local()
    }
    fn remove(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), StoreError>> {
        async move {
            yield_now().await;
            self.0.remove(keys).await
        }
        .boxed_local()
    }
    fn keys<'a>(&'a self, prefix: &'a str) -> LocalBoxFuture<'a, Result<Vec<String>, StoreError>> {
        async move {
            yield_now().await;
            self.0.keys(prefix).await
        }
        .boxed_local()
    }
}

impl MemoryStore {
    /// The session `session` as saved now (`None`: nothing saved).
    pub fn session(&self, session: &str) -> Option<crate::state::SessionState> {
        futures::executor::block_on(crate::state::load(self, session))
            .expect("the saved session loads")
    }

    /// The head record of `session` as it is now: what a new worker would resume from.
    pub fn head(&self, session: &str) -> Option<crate::state::SessionState> {
        let text = self
            .data
            .borrow()
            .get(&crate::state::session_key(session))
            .cloned()?;
        crate::state::decode_head(&text).ok().map(|(s, _)| s)
    }
}

/// What a restarted worker does: resume every interrupted run of `service`, to its end.
pub fn resume_all(service: Rc<crate::service::Service>) -> LocalBoxFuture<'static, ()> {
    async move {
        let runs = service.resume_all().await;
        future::join_all(runs).await;
    }
    .boxed_local()
}
