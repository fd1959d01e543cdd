//! [`Phases`]: bounded phases ([`crate::agent::phase`]) driven on their own by the
//! persisted [`Engine`], for tests: [`Phases::run_bounded`] turns a [`Phase`] into a run and
//! returns its [`PhaseResult`]; with a store ([`Phases::with_store`]) every transition is
//! saved like any run, and [`Phases::load`] + [`Phases::resume`] finish a phase cut off by a
//! worker stop.

use std::cell::RefCell;
use std::rc::Rc;

use crate::agent::engine::{Engine, StopSignal};
use crate::agent::phase::{begin, Phase, PhaseResult, StopReason};
use crate::ports::{Clock, EventSink, LlmClient, StateStore, StoreError};
use crate::state::config::RunConfig;
use crate::state::{self, RunStatus, SessionState, StateError};
use crate::tools::ToolBox;
use crate::types::events::EventEnvelope;
use crate::types::{ChatMessage, ErrorInfo, PageInfo, Usage};

/// A failure that ends a phase (a model failure after the retries it allowed).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.message)]
pub struct PhaseError(pub ErrorInfo);

/// Saves nothing: phases run in memory unless given a store.
struct Unsaved;

impl StateStore for Unsaved {
    fn get<'a>(
        &'a self,
        _key: &'a str,
    ) -> futures::future::LocalBoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async { Ok(None) })
    }
    fn get_many(
        &self,
        keys: Vec<String>,
    ) -> futures::future::LocalBoxFuture<'_, Result<Vec<Option<String>>, StoreError>> {
        Box::pin(async move { Ok(vec![None; keys.len()]) })
    }
    fn set(
        &self,
        _items: Vec<(String, String)>,
    ) -> futures::future::LocalBoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn remove(
        &self,
        _keys: Vec<String>,
    ) -> futures::future::LocalBoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn keys<'a>(
        &'a self,
        _prefix: &'a str,
    ) -> futures::future::LocalBoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// Hears nothing: phases emit to no UI unless given a sink.
struct Unheard;

impl EventSink for Unheard {
    fn emit(&self, _event: &EventEnvelope) {}
}

/// One run's bounded phases over the ports: the state (contexts, budget, tool-call history)
/// is a [`SessionState`], driven by the [`Engine`].
pub struct Phases<'a> {
    llm: &'a dyn LlmClient,
    clock: &'a dyn Clock,
    tools: &'a ToolBox,
    stop: StopSignal,
    store: &'a dyn StateStore,
    events: &'a dyn EventSink,
    system: String,
    state: Rc<RefCell<SessionState>>,
}

impl<'a> Phases<'a> {
    /// Phases of one run: `system` opens every context; bounds, budget and the permitted
    /// risk come from `config`. In memory until [`Phases::with_store`].
    pub fn new(
        llm: &'a dyn LlmClient,
        clock: &'a dyn Clock,
        tools: &'a ToolBox,
        stop: StopSignal,
        config: RunConfig,
        system: impl Into<String>,
    ) -> Self {
        let mut state = SessionState::new("phases", clock.now_ms());
        state.run_id = 1;
        state.config = config.sanitized();
        Self {
            llm,
            clock,
            tools,
            stop,
            store: &Unsaved,
            events: &Unheard,
            system: system.into(),
            state: Rc::new(RefCell::new(state)),
        }
    }

    /// The page tools such as `read_page` work on.
    #[must_use]
    pub fn with_page(self, page: Option<PageInfo>) -> Self {
        self.state.borrow_mut().page = page;
        self
    }

    /// Saves every transition to `store` under session `session`, and sends events to
    /// `events`, like any run.
    #[must_use]
    pub fn with_store(
        self,
        store: &'a dyn StateStore,
        events: &'a dyn EventSink,
        session: &str,
    ) -> Self {
        self.state.borrow_mut().session = session.to_string();
        Self {
            store,
            events,
            ..self
        }
    }

    /// The phases saved under `session` (to [`Phases::resume`] one cut off by a worker
    /// stop); `Ok(None)` when nothing is saved.
    #[allow(clippy::too_many_arguments)]
    pub async fn load(
        llm: &'a dyn LlmClient,
        clock: &'a dyn Clock,
        tools: &'a ToolBox,
        stop: StopSignal,
        store: &'a dyn StateStore,
        events: &'a dyn EventSink,
        session: &str,
    ) -> Result<Option<Phases<'a>>, StateError> {
        let Some(state) = state::load(store, session).await? else {
            return Ok(None);
        };
        let system = state
            .phases
            .run
            .as_ref()
            .map(|p| p.system.clone())
            .unwrap_or_default();
        Ok(Some(Self {
            llm,
            clock,
            tools,
            stop,
            store,
            events,
            system,
            state: Rc::new(RefCell::new(state)),
        }))
    }

    /// Tokens used by every phase so far, across all contexts (for the run's summary; never
    /// part of a [`PhaseResult`]).
    pub fn usage(&self) -> Usage {
        self.state.borrow().usage
    }

    /// The history of a context (without the system prompt).
    pub fn history(&self, label: Option<&str>) -> Vec<ChatMessage> {
        self.state
            .borrow()
            .phases
            .contexts
            .get(label.unwrap_or(""))
            .cloned()
            .unwrap_or_default()
    }

    /// The session state the phases run in (a copy).
    pub fn state(&self) -> SessionState {
        self.state.borrow().clone()
    }

    /// Runs one phase. A model failure that retries could not fix is an error; everything
    /// a tool or the model gets wrong is data in the result.
    pub async fn run_bounded(&self, phase: Phase) -> Result<PhaseResult, PhaseError> {
        if self.stop.is_raised() {
            return Ok(empty(StopReason::StopRequested));
        }
        if !self.begin(phase) {
            return Ok(empty(StopReason::Done));
        }
        self.drive().await
    }

    /// Finishes the phase a stopped worker left running (`None`: no phase was running).
    pub async fn resume(&self) -> Option<Result<PhaseResult, PhaseError>> {
        let running = {
            let state = self.state.borrow();
            state.status == RunStatus::Running && state.phases.run.is_some()
        };
        if running {
            Some(self.drive().await)
        } else {
            None
        }
    }

    /// Sets the state up for `phase`; `false` when there is nothing to run.
    fn begin(&self, phase: Phase) -> bool {
        begin(&mut self.state.borrow_mut(), &self.system, phase)
    }

    async fn drive(&self) -> Result<PhaseResult, PhaseError> {
        let engine = Engine::new(
            self.llm,
            self.clock,
            self.events,
            self.store,
            self.tools,
            self.stop.clone(),
        );
        engine.drive_shared(&self.state).await;
        let state = self.state.borrow();
        if let (RunStatus::Failed, Some(error)) = (state.status, &state.error) {
            return Err(PhaseError(error.clone()));
        }
        let outcome = state.phases.run.as_ref().map(|p| p.result.clone());
        Ok(match outcome {
            Some(o) => PhaseResult {
                final_text: o.final_text,
                tool_calls: o.tool_calls,
                stop_reason: o.stop_reason.unwrap_or(StopReason::StopRequested),
            },
            None => empty(StopReason::StopRequested),
        })
    }
}

/// A result with no text and no calls.
fn empty(stop_reason: StopReason) -> PhaseResult {
    PhaseResult {
        final_text: String::new(),
        tool_calls: Vec::new(),
        stop_reason,
    }
}
