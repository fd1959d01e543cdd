//! The driver: performs the I/O each state asks for ([`step::plan`]), feeds the outcome back
//! to the pure transitions in [`crate::agent::step`], saves once per transition, and emits
//! the events with their `(rev, seq)`. The phase to run next is part of the persisted state,
//! so [`Engine::drive`] continues any saved run from its last transition.
//!
//! The state lives in a `RefCell` shared with the run registry: it is borrowed only in
//! synchronous sections, never across an await, and is updated before the events that
//! describe it are emitted, so a snapshot of a live run is exact.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;

use futures::future::{self, Either};

use crate::agent::input::transitions::{self as waiting, Heard};
use crate::agent::input::Inbox;
use crate::agent::signal::{wake_all, Wakers};
use crate::agent::step::{self, Action, ModelCall, Out, StepCtx};
use crate::ports::{
    Clock, EventSink, LlmClient, NoCapture, ScreenCapture, SearchClient, SearchQuery, StateStore,
};
use crate::state::{self, RunStatus, SessionState, STORAGE_FULL_NOTICE};
use crate::tools::{ToolBox, ToolContext};
use crate::types::events::{AgentEvent, EventEnvelope, EventKind};

/// A stop request shared between the UI handler and a running engine. [`StopSignal::wait`]
/// resolves when it is raised, so an in-flight model call can be abandoned at once.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Rc<RefCell<StopInner>>);

#[derive(Debug, Default)]
struct StopInner {
    raised: bool,
    wakers: Wakers,
}

impl StopSignal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks the run to stop.
    pub fn raise(&self) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            inner.raised = true;
            inner.wakers.take()
        };
        wake_all(wakers);
    }
    /// Whether stop was asked.
    pub fn is_raised(&self) -> bool {
        self.0.borrow().raised
    }
    /// Resolves once stop is asked.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        future::poll_fn(move |cx| {
            let mut inner = self.0.borrow_mut();
            if inner.raised {
                Poll::Ready(())
            } else {
                inner.wakers.register(cx);
                Poll::Pending
            }
        })
    }
}

/// Drives runs through the ports.
pub struct Engine<'a> {
    /// The model.
    pub llm: &'a dyn LlmClient,
    /// Time.
    pub clock: &'a dyn Clock,
    /// The UI.
    pub events: &'a dyn EventSink,
    /// Where state is saved.
    pub store: &'a dyn StateStore,
    /// The tools.
    pub tools: &'a ToolBox,
    /// Stop requests.
    pub stop: StopSignal,
    /// Acknowledgements and answers for `request_input`.
    pub inbox: Inbox,
    /// The web search service (`None`: search is off).
    pub search: Option<&'a dyn SearchClient>,
    /// Screenshots of the run's tab (for `extract_screenshot_text`).
    pub capture: &'a dyn ScreenCapture,
    storage_warned: Cell<bool>,
    compaction_noted: Cell<bool>,
}

/// Puts a state taken out for [`Engine::drive`] back, even when the drive is dropped.
struct WriteBack<'s> {
    target: &'s mut SessionState,
    cell: Rc<RefCell<SessionState>>,
}

impl Drop for WriteBack<'_> {
    fn drop(&mut self) {
        std::mem::swap(self.target, &mut self.cell.borrow_mut());
    }
}

impl<'a> Engine<'a> {
    /// An engine over the given ports.
    pub fn new(
        llm: &'a dyn LlmClient,
        clock: &'a dyn Clock,
        events: &'a dyn EventSink,
        store: &'a dyn StateStore,
        tools: &'a ToolBox,
        stop: StopSignal,
    ) -> Self {
        Self {
            llm,
            clock,
            events,
            store,
            tools,
            stop,
            inbox: Inbox::new(),
            search: None,
            capture: &NoCapture,
            storage_warned: Cell::new(false),
            compaction_noted: Cell::new(false),
        }
    }

    /// The engine, taking `request_input` messages from `inbox`.
    #[must_use]
    pub fn with_inbox(mut self, inbox: Inbox) -> Self {
        self.inbox = inbox;
        self
    }

    /// The engine, searching the web with `search`.
    #[must_use]
    pub fn with_search(mut self, search: Option<&'a dyn SearchClient>) -> Self {
        self.search = search;
        self
    }

    /// The engine, taking screenshots with `capture`.
    #[must_use]
    pub fn with_capture(mut self, capture: &'a dyn ScreenCapture) -> Self {
        self.capture = capture;
        self
    }

    /// Runs `state` until it is no longer running.
    pub async fn drive(&self, state: &mut SessionState) {
        let placeholder = SessionState::new(&state.session, 0);
        let taken = std::mem::replace(state, placeholder);
        let guard = WriteBack {
            target: state,
            cell: Rc::new(RefCell::new(taken)),
        };
        self.drive_shared(&guard.cell).await;
    }

    /// Runs the shared `state` until it is no longer running; emits `run_started` first
    /// when the run has not started a step yet. The run registry reads the same state for
    /// snapshots.
    pub async fn drive_shared(&self, shared: &Rc<RefCell<SessionState>>) {
        let cell: &RefCell<SessionState> = shared;
        {
            let mut state = cell.borrow_mut();
            if state.status != RunStatus::Running {
                return;
            }
            if state.is_fresh() {
                let mut events = vec![EventKind::RunStarted {
                    question: state.question.clone(),
                }];
                events.extend(
                    state
                        .notices
                        .iter()
                        .map(|m| EventKind::Notice { message: m.clone() }),
                );
                self.emit_all(&mut state, events);
            } else {
                // Resumed in a new worker: everything from now on is newer than anything
                // the previous worker sent.
                state.rev += 1;
            }
        }
        self.begin_drive(cell).await;
        let mut quiet = false;
        loop {
            let mut out = Out::default();
            let action = self.transition(cell, &mut out, |state, ctx, out| {
                step::plan(state, ctx, quiet, out)
            });
            quiet = false;
            match action {
                Action::Done => return,
                Action::Continue => {}
                Action::Model(call) => quiet = self.model_call(cell, call, &mut out).await,
                Action::Tool { call, side_effects } => {
                    if side_effects {
                        // The intent is saved before acting.
                        step::tool_started(&mut cell.borrow_mut());
                        self.persist(cell).await;
                    }
                    let result = {
                        let (page, selection, added) = {
                            let state = cell.borrow();
                            (
                                state.page.clone(),
                                state.selection.clone(),
                                std::rc::Rc::clone(&state.added_texts),
                            )
                        };
                        let ctx = ToolContext {
                            page: page.as_ref(),
                            selection: selection.as_ref(),
                            added: &added,
                        };
                        self.tools.run(&call.name, &call.arguments, &ctx).await
                    };
                    let retry = self.transition(cell, &mut out, |state, ctx, out| {
                        step::tool_outcome(state, ctx, &call, side_effects, result, out)
                    });
                    if let Some(delay) = retry {
                        self.wait_to_retry(cell, delay, &mut out).await;
                    }
                }
                Action::Input => self.await_input(cell, &mut out).await,
                Action::Capture { call, tab, page } => {
                    // The screenshot lives only in the request of this one model call.
                    let shot = self.capture.capture_visible(tab, page.as_deref()).await;
                    let transcribe = self.transition(cell, &mut out, |state, ctx, out| {
                        step::screenshot::captured(state, ctx, &call, shot, out)
                    });
                    if let Some(model) = transcribe {
                        quiet = self.model_call(cell, model, &mut out).await;
                    }
                }
                Action::Search(query) => {
                    let result = self.search(&query).await;
                    self.transition(cell, &mut out, |state, ctx, out| {
                        step::search::after_search(state, ctx, result, out);
                    });
                }
            }
            self.complete_transition(cell, &mut out).await;
        }
    }

    /// Never twice: counts this drive in the saved state before doing anything else, so a
    /// worker that crashes on the run (a panic aborts it mid-drive) leaves the count behind.
    /// A run found with [`state::MAX_DRIVE_ATTEMPTS`] drives and no completed transition
    /// since fails with [`state::CRASHED_TWICE`] instead of being driven again.
    async fn begin_drive(&self, cell: &RefCell<SessionState>) {
        let crashed = {
            let mut state = cell.borrow_mut();
            if matches!(state.next, Some(state::Next::AwaitInput)) {
                // A run waiting for the user's answer got somewhere: it waits. Resuming the
                // wait in each new worker is not a crash loop (the answer's transition saves).
                if state.drive_attempts == 0 {
                    return;
                }
                state.drive_attempts = 0;
                false
            } else if state.drive_attempts >= state::MAX_DRIVE_ATTEMPTS {
                true
            } else {
                state.drive_attempts += 1;
                false
            }
        };
        if !crashed {
            return self.save(cell).await;
        }
        crate::ports::log("a run that crashed the worker twice was failed instead of resumed");
        let mut out = Out::default();
        self.transition(cell, &mut out, step::crashed);
        self.complete_transition(cell, &mut out).await;
    }

    /// Saves a completed transition, then sends its terminal event, if it has one.
    async fn complete_transition(&self, cell: &RefCell<SessionState>, out: &mut Out) {
        let terminal = out.terminal.take();
        if terminal.is_some() {
            // Its seq is saved with the final state, so a snapshot of that state is as new
            // as the event.
            cell.borrow_mut().seq += 1;
        }
        self.persist(cell).await;
        if let Some(kind) = terminal {
            let mut state = cell.borrow_mut();
            state.seq -= 1;
            self.emit_all(&mut state, vec![kind]);
        }
    }

    fn ctx(&self) -> StepCtx<'_> {
        StepCtx {
            now: self.clock.now_ms(),
            tools: self.tools,
            stop: self.stop.is_raised(),
        }
    }

    /// One model call: the attempt is counted and saved first; the reply, the error (and
    /// its backoff), or the Stop that abandoned it is the next transition. Returns whether
    /// the next plan is a quiet retry.
    async fn model_call(
        &self,
        cell: &RefCell<SessionState>,
        mut call: ModelCall,
        out: &mut Out,
    ) -> bool {
        let go = self.transition(cell, out, |state, ctx, out| {
            step::before_call(state, ctx, &call, out)
        });
        if !go {
            return false;
        }
        self.persist(cell).await;
        let mut on_delta = |text: &str| {
            if call.stream_answer && !text.is_empty() {
                let mut state = cell.borrow_mut();
                state.draft.push_str(text);
                self.emit_all(
                    &mut state,
                    vec![EventKind::AnswerDelta {
                        text: text.to_string(),
                    }],
                );
            }
        };
        // Every call of the run's context goes out with the same prompt-cache key.
        call.request.cache_key = Some(super::cache::of(&cell.borrow()));
        let request = self.llm.complete(&call.request, &mut on_delta);
        // A Stop pressed during the call abandons it; the call that writes the answer after
        // a Stop runs to its end.
        let result = if self.stop.is_raised() {
            Some(request.await)
        } else {
            match future::select(request, Box::pin(self.stop.wait())).await {
                Either::Left((result, _)) => Some(result),
                Either::Right(_) => None,
            }
        };
        let retry = self.transition(cell, out, |state, ctx, out| match result {
            Some(Ok(reply)) => {
                step::after_reply(state, ctx, &call, reply, out);
                None
            }
            Some(Err(err)) => step::after_error(state, ctx, &call, &err, out),
            None => {
                step::interrupted(state, ctx, out);
                None
            }
        });
        let Some(delay) = retry else {
            return false;
        };
        self.wait_to_retry(cell, delay, out).await
    }

    /// Waits `delay` ms before a retry (of a model call or a tool call), the state saved
    /// first; Stop ends the wait, and the run (which a server's Retry-After can make long).
    /// Returns whether the retry goes ahead.
    async fn wait_to_retry(&self, cell: &RefCell<SessionState>, delay: u64, out: &mut Out) -> bool {
        self.persist(cell).await;
        if !self.stop.is_raised() {
            future::select(self.clock.sleep(delay), Box::pin(self.stop.wait())).await;
        }
        if self.stop.is_raised() {
            self.transition(cell, out, step::stopped_while_waiting);
            return false;
        }
        true
    }

    /// One web search, abandoned when Stop is pressed (`None`). Without a search service
    /// (search turned off since the run began) it fails with the reason.
    async fn search(
        &self,
        query: &SearchQuery,
    ) -> Option<Result<Vec<crate::types::SearchResult>, crate::types::SearchError>> {
        let Some(search) = self.search else {
            return Some(Err(crate::types::SearchError::config(
                "Web search was turned off in Options after this question was asked.",
            )));
        };
        if self.stop.is_raised() {
            return None;
        }
        match future::select(search.search(query), Box::pin(self.stop.wait())).await {
            Either::Left((result, _)) => Some(result),
            Either::Right(_) => None,
        }
    }

    /// Waits for the answer to the pending question: acknowledgements move it from the
    /// first deadline to the second (saved), the answer becomes the tool result, Stop ends
    /// the wait, and a deadline passing ends the run as timed out.
    async fn await_input(&self, cell: &RefCell<SessionState>, out: &mut Out) {
        {
            let mut state = cell.borrow_mut();
            let Some(pending) = state.input.pending.clone() else {
                return waiting::lost(&mut state);
            };
            let event = EventKind::AwaitingInput {
                request_id: pending.request_id,
                question: pending.question,
            };
            self.emit_all(&mut state, vec![event]);
        }
        loop {
            for message in self.inbox.take() {
                let heard = self.transition(cell, out, |state, ctx, out| {
                    waiting::hear(state, ctx, message, out)
                });
                match heard {
                    Heard::Answered => return,
                    Heard::Acknowledged => self.persist(cell).await,
                    Heard::Nothing => {}
                }
            }
            let stop = self.stop.is_raised();
            let waits = self.transition(cell, out, |state, ctx, out| {
                if stop {
                    waiting::stopped(state, ctx, out);
                    return None;
                }
                let deadline = waiting::deadline(state);
                if let Some(deadline) = deadline.filter(|d| ctx.now >= *d) {
                    waiting::timed_out(state, ctx, deadline, out);
                    return None;
                }
                Some(deadline)
            });
            let Some(deadline) = waits else {
                return;
            };
            let now = self.clock.now_ms();
            let timer = match deadline {
                Some(d) => Either::Left(self.clock.sleep(d.saturating_sub(now))),
                None => Either::Right(future::pending::<()>()),
            };
            let woken = future::select(Box::pin(self.inbox.wait()), Box::pin(self.stop.wait()));
            future::select(woken, timer).await;
        }
    }

    /// Applies a transition to the shared state and emits its events, then one `step_item`
    /// per trajectory entry it recorded: one synchronous section, so the shared state
    /// always reflects every event emitted.
    fn transition<R>(
        &self,
        cell: &RefCell<SessionState>,
        out: &mut Out,
        apply: impl FnOnce(&mut SessionState, &StepCtx<'_>, &mut Out) -> R,
    ) -> R {
        let mut state = cell.borrow_mut();
        let before = state.trajectory.len();
        let result = apply(&mut state, &self.ctx(), out);
        self.emit_transition(&mut state, before, out);
        result
    }

    /// Emits a transition's events, then one `step_item` per trajectory entry from
    /// `before` on (not generic: every transition shares it).
    #[inline(never)]
    fn emit_transition(&self, state: &mut SessionState, before: usize, out: &mut Out) {
        let mut events = std::mem::take(&mut out.events);
        events.extend(
            state
                .trajectory
                .iter()
                .enumerate()
                .skip(before)
                .map(|(i, entry)| EventKind::StepItem {
                    item: entry.view(i),
                }),
        );
        self.emit_all(state, events);
    }

    /// Emits events, each with the state's revision and the next `seq`.
    fn emit_all(&self, state: &mut SessionState, kinds: Vec<EventKind>) {
        for kind in kinds {
            state.seq += 1;
            if matches!(kind, EventKind::AnswerReset) {
                state.draft.clear();
            }
            let event = AgentEvent {
                kind,
                step: state.step,
                max_steps: state.step_bound(),
                usage: state.usage_view(),
                rev: state.rev,
                seq: state.seq,
            };
            self.events
                .emit(&EventEnvelope::new(&state.session, state.run_id, event));
        }
    }

    /// Saves a transition: the run got somewhere, so its count of drives that got nowhere
    /// goes back to 0 (see [`Engine::begin_drive`]).
    async fn persist(&self, cell: &RefCell<SessionState>) {
        cell.borrow_mut().drive_attempts = 0;
        self.save(cell).await;
    }

    /// Saves the state (raising its revision), making room when storage is full. A failing
    /// store never stops the run: it goes on in memory and the user is warned once.
    async fn save(&self, cell: &RefCell<SessionState>) {
        {
            let mut state = cell.borrow_mut();
            state.updated_at = self.clock.now_ms();
            state.rev += 1;
        }
        let mut result = state::save_shared_making_room(self.store, cell).await;
        if matches!(result, Ok(true)) && !self.compaction_noted.replace(true) {
            let noted = {
                let mut state = cell.borrow_mut();
                let fresh = !state.notices.iter().any(|n| n == STORAGE_FULL_NOTICE);
                if fresh {
                    let message = STORAGE_FULL_NOTICE.to_string();
                    state.notices.push(message.clone());
                    self.emit_all(&mut state, vec![EventKind::Notice { message }]);
                }
                fresh
            };
            if noted {
                result = state::save_shared_making_room(self.store, cell).await;
            }
        }
        if let Err(err) = result {
            crate::ports::log(&format!("saving a session failed: {err}"));
            if !self.storage_warned.replace(true) {
                let message = format!(
                    "Could not save this session ({err}); the run continues, but it will not survive the extension restarting."
                );
                let mut state = cell.borrow_mut();
                state.notices.push(message.clone());
                self.emit_all(&mut state, vec![EventKind::Notice { message }]);
            }
        }
    }
}
