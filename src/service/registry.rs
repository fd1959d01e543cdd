//! The run registry: the runs going on in this worker, each with the state it shares with
//! its engine (snapshots of a live run read it), its stop signal and its inbox, and the
//! tabs whose sessions are deleted when their run ends.

use std::cell::RefCell;
use std::rc::Rc;

use crate::agent::{Inbox, StopSignal};
use crate::protocol::SessionKey;
use crate::state::SessionState;
use crate::types::VecMap;

/// A session registered as running in this worker: what its run is driven with. Until
/// [`Registry::attach`] gives it a state, the session is claimed but has no live state.
pub(super) struct Claim {
    /// The session.
    pub key: SessionKey,
    /// Raised by `stop`.
    pub stop: StopSignal,
    /// Input for the run (`request_input` answers and acknowledgements).
    pub inbox: Inbox,
}

#[derive(Default)]
struct Slot {
    stop: StopSignal,
    inbox: Inbox,
    state: Option<Rc<RefCell<SessionState>>>,
}

/// The runs of this worker.
#[derive(Default)]
pub(super) struct Registry {
    runs: RefCell<VecMap<SessionKey, Slot>>,
    closed_tabs: RefCell<VecMap<SessionKey, ()>>,
}

impl Registry {
    /// Registers `key` as running here; `None` if it is already. The one way a run starts,
    /// for a new question and a resumed run alike.
    pub fn register(&self, key: SessionKey) -> Option<Claim> {
        let mut runs = self.runs.borrow_mut();
        if runs.contains_key(&key) {
            return None;
        }
        let slot = Slot::default();
        let claim = Claim {
            key,
            stop: slot.stop.clone(),
            inbox: slot.inbox.clone(),
        };
        runs.insert(key, slot);
        Some(claim)
    }

    /// Gives the claimed session the state its run drives; returns the shared state to
    /// hand to the engine.
    pub fn attach(&self, claim: &Claim, state: SessionState) -> Rc<RefCell<SessionState>> {
        let shared = Rc::new(RefCell::new(state));
        if let Some(slot) = self.runs.borrow_mut().get_mut(&claim.key) {
            slot.state = Some(shared.clone());
        }
        shared
    }

    /// The run of `key` ended (or never started): it leaves the registry. True when its tab
    /// was closed meanwhile, so its session is to be deleted now.
    pub fn finish(&self, key: SessionKey) -> bool {
        self.runs.borrow_mut().remove(&key);
        self.closed_tabs.borrow_mut().remove(&key).is_some()
    }

    /// Whether a run of `key` goes on (or is being claimed) here.
    pub fn is_running(&self, key: SessionKey) -> bool {
        self.runs.borrow().contains_key(&key)
    }

    /// Runs going on here.
    pub fn len(&self) -> usize {
        self.runs.borrow().len()
    }

    /// Raises the stop signal of `key`'s run; false when none goes on here.
    pub fn stop(&self, key: SessionKey) -> bool {
        let signal = self.runs.borrow().get(&key).map(|s| s.stop.clone());
        signal.map(|s| s.raise()).is_some()
    }

    /// The inbox of `key`'s run, if one goes on here.
    pub fn inbox(&self, key: SessionKey) -> Option<Inbox> {
        self.runs.borrow().get(&key).map(|s| s.inbox.clone())
    }

    /// `f` of the live state of `key`'s run (`None`: no run here, or not started yet).
    /// The engine never holds the state borrowed across an await, so what `f` sees
    /// reflects every event emitted so far.
    pub fn with_live<R>(&self, key: SessionKey, f: impl FnOnce(&SessionState) -> R) -> Option<R> {
        let shared = self.runs.borrow().get(&key)?.state.clone()?;
        let state = shared.borrow();
        Some(f(&state))
    }

    /// The tab of `key` was closed: its run is stopped (nobody is left to read its answer or
    /// answer its question). True when the run goes on until it has stopped (the session is
    /// deleted by [`Registry::finish`]'s caller), false when it can be deleted now.
    pub fn close_tab(&self, key: SessionKey) -> bool {
        if !self.stop(key) {
            return false;
        }
        self.closed_tabs.borrow_mut().insert(key, ());
        true
    }
}
