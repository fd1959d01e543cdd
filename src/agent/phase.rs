//! Bounded phases (seeds 000 and 001) on the persisted engine: [`Phases::run_bounded`] turns
//! a [`Phase`] into a run of the same [`Engine`] (same retries, budget, tool checks and
//! saves) and returns a [`PhaseResult`] (final text, tool calls made, stop reason) that never
//! carries token or cost figures: the budget is kept in the state, global across all
//! contexts, and only its effect (`budget_exhausted`) is visible to the caller.
//!
//! - Context labels: `None` is the primary context; every `Some(label)` keeps its own
//!   history (saved with the state). `continue_context = false` resets only that label.
//! - A tool subset restricts what is offered and what is accepted: a call outside it is
//!   refused with a permission error result (recorded, never an exception).
//! - A tool-only phase (`direct_tool_calls`) makes no model call: it is not gated by the
//!   budget, and is still gated by stop, the permitted risk level and rate limits.
//! - With a store ([`Phases::with_store`]), every transition is saved like any run, and
//!   [`Phases::load`] + [`Phases::resume`] finish a phase cut off by a worker stop.

use std::cell::RefCell;
use std::rc::Rc;

use crate::agent::engine::{Engine, StopSignal};
use crate::ports::{Clock, EventSink, LlmClient, StateStore, StoreError};
use crate::state::config::RunConfig;
use crate::state::{self, Next, PhaseOutcome, PhaseRun, RunStatus, SessionState, StateError};
use crate::tools::ToolBox;
use crate::types::events::EventEnvelope;
use crate::types::json::{FromJson, ToJson};
use crate::types::{ChatMessage, ErrorInfo, JsonSchemaFormat, PageInfo, Role, ToolCall, Usage};

pub use crate::state::{StopReason, ToolOutcome};

/// What a phase produced. Deliberately without token or cost figures.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, FromJson, ToJson)]
pub struct PhaseResult {
    /// The model's last text (empty for tool-only phases and phases that made no call).
    pub final_text: String,
    /// The tool calls made, in order, with their outcomes.
    pub tool_calls: Vec<ToolOutcome>,
    /// Why the phase returned.
    pub stop_reason: StopReason,
}

impl PhaseResult {
    fn empty(stop_reason: StopReason) -> Self {
        Self {
            final_text: String::new(),
            tool_calls: Vec::new(),
            stop_reason,
        }
    }
}

/// One phase to run.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// The user message that opens the phase (ignored by tool-only phases).
    pub message: String,
    /// The tools offered and accepted (`None`: all of the tool box).
    pub tools: Option<Vec<String>>,
    /// Most rounds of model call + tools (ignored by tool-only phases).
    pub max_iterations: u32,
    /// Keep the context's history (`false` resets this label only).
    pub continue_context: bool,
    /// The context (`None`: the primary one).
    pub context_label: Option<String>,
    /// Run these calls with no model call (a tool-only phase).
    pub direct_tool_calls: Option<Vec<ToolCall>>,
    /// Ask for JSON matching this schema (where the run's provider supports it).
    pub format: Option<JsonSchemaFormat>,
}

impl Phase {
    /// A model phase of `max_iterations` rounds in the primary context, continuing it.
    pub fn new(message: impl Into<String>, max_iterations: u32) -> Self {
        Self {
            message: message.into(),
            max_iterations,
            continue_context: true,
            ..Self::default()
        }
    }

    /// The same phase in the context named `label`.
    #[must_use]
    pub fn in_context(mut self, label: impl Into<String>) -> Self {
        self.context_label = Some(label.into());
        self
    }

    /// The same phase offering only `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: &[&str]) -> Self {
        self.tools = Some(tools.iter().map(|t| (*t).to_string()).collect());
        self
    }

    /// The same phase, starting its context afresh.
    #[must_use]
    pub fn fresh(mut self) -> Self {
        self.continue_context = false;
        self
    }

    /// A tool-only phase running `calls`.
    pub fn tool_only(calls: Vec<ToolCall>) -> Self {
        Self {
            direct_tool_calls: Some(calls),
            ..Self::default()
        }
    }
}

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
            .phase
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
            return Ok(PhaseResult::empty(StopReason::StopRequested));
        }
        if !self.begin(phase) {
            return Ok(PhaseResult::empty(StopReason::Done));
        }
        self.drive().await
    }

    /// Finishes the phase a stopped worker left running (`None`: no phase was running).
    pub async fn resume(&self) -> Option<Result<PhaseResult, PhaseError>> {
        let running = {
            let state = self.state.borrow();
            state.status == RunStatus::Running && state.phase.is_some()
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
        let outcome = state.phase.as_ref().map(|p| p.result.clone());
        Ok(match outcome {
            Some(o) => PhaseResult {
                final_text: o.final_text,
                tool_calls: o.tool_calls,
                stop_reason: o.stop_reason.unwrap_or(StopReason::StopRequested),
            },
            None => PhaseResult::empty(StopReason::StopRequested),
        })
    }
}

/// Sets `state` up to run `phase` with the system text `system` (the context's history
/// reset first unless it continues); `false` when there is nothing to run.
pub fn begin(state: &mut SessionState, system: &str, phase: Phase) -> bool {
    let label = phase.context_label.unwrap_or_default();
    let mut run = PhaseRun {
        system: system.to_string(),
        label: label.clone(),
        tools: phase.tools,
        max_iterations: phase.max_iterations,
        iterations: 0,
        tool_only: false,
        format: phase.format,
        result: PhaseOutcome {
            final_text: String::new(),
            tool_calls: Vec::new(),
            stop_reason: None,
        },
    };
    let next = match phase.direct_tool_calls {
        Some(calls) => {
            let mut calls = calls.into_iter();
            let Some(first) = calls.next() else {
                return false;
            };
            run.tool_only = true;
            state.queued_calls = calls.collect();
            Next::Act {
                call: first,
                started: false,
            }
        }
        None => {
            if !phase.continue_context {
                let resets = state.context_resets.get_or_default(label.clone());
                *resets = resets.saturating_add(1);
            }
            let history = state.contexts.get_or_default(label);
            if !phase.continue_context {
                history.clear();
            }
            history.push(ChatMessage::new(Role::User, phase.message));
            Next::Reason
        }
    };
    state.phase = Some(run);
    state.status = RunStatus::Running;
    state.next = Some(next);
    state.attempts = 0;
    state.error = None;
    state.ended_at = None;
    state.answer.clear();
    true
}
