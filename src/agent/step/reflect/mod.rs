//! The Reflect phase: after a failed action, one model call that reflects on
//! it; the reflection goes into the session's episodic memory and the trajectory (whose
//! note the retry's prompt carries). A reflection that cannot be had (the call fails, its
//! reply does not parse, the budget does not allow it, it was cut off twice) is the
//! built-in fallback: a failed reflection never ends the run. Also loop detection: a call
//! that already gave the same result [`reflexion::MAX_IDENTICAL_RESULTS`] times is not run.

pub mod prompt;
pub mod reflexion;

use super::*;
use crate::state::memory::{Failure, Reflection};

/// Most attempts of one reflection call (a worker stopped during it redoes it once).
const MAX_REFLECT_ATTEMPTS: u32 = 2;

/// Whether the run may reflect: not a bounded phase, a step begun, fewer than
/// `max_retries` reflections in this run.
fn may_reflect(state: &SessionState) -> bool {
    state.phases.run.is_none()
        && state.step > 0
        && reflexion::reflections_in_run(state) < state.config.max_retries
}

/// Reflects on `failure` next when the run may. Returns whether it will.
pub(super) fn reflect_on(state: &mut SessionState, failure: Option<Failure>) -> bool {
    match failure {
        Some(failure) if may_reflect(state) => {
            set_next(state, Next::Reflect { failure });
            true
        }
        _ => false,
    }
}

/// After a tool result: a failure waits until the reply's last call has run (a repeated
/// call's failure before any other), then the run reflects on it. Returns whether it will.
pub(super) fn after_result(state: &mut SessionState, failure: Option<Failure>) -> bool {
    if let Some(failure) = failure {
        let pending = &mut state.memory.pending;
        if pending.is_none() || failure.error_type == reflexion::REPEATED_CALL {
            *pending = Some(failure);
        }
    }
    if !state.queued_calls.is_empty() {
        return false;
    }
    let pending = state.memory.pending.take();
    reflect_on(state, pending)
}

/// Plans the reflection call, or stores the fallback when the call cannot be made.
pub(super) fn plan_reflect(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    failure: Failure,
    quiet: bool,
    out: &mut Out,
) -> Action {
    if !quiet {
        out.emit(EventKind::Reflecting);
    }
    if state.attempts >= MAX_REFLECT_ATTEMPTS {
        store(state, ctx, reflexion::fallback(&failure));
        return Action::Continue;
    }
    // Fitted to the window like every request; one that does not fit is not sent.
    let fitted =
        crate::agent::step::compact::fit(state, false, |fit| prompt::reflect(state, &failure, fit));
    let Ok(crate::agent::step::compact::Fitted::Send(request)) = fitted else {
        store(state, ctx, reflexion::fallback(&failure));
        return Action::Continue;
    };
    let estimate = executor::estimate(&request);
    if !executor::budget_allows(state, estimate) {
        store(state, ctx, reflexion::fallback(&failure));
        return Action::Continue;
    }
    Action::Model(ModelCall {
        request,
        purpose: Purpose::Reflect,
        estimate,
        stream_answer: false,
    })
}

/// The reflection call answered: its reflection, or the fallback when it does not parse.
pub(super) fn reflect_reply(state: &mut SessionState, ctx: &StepCtx<'_>, reply: &ChatResponse) {
    if let Some(Next::Reflect { failure }) = state.next.clone() {
        store(state, ctx, reflexion::from_reply(&failure, &reply.content));
    }
}

/// The reflection call failed: recorded, never retried; the fallback is stored. `false`
/// when the run is not reflecting.
pub(super) fn reflect_failed(state: &mut SessionState, ctx: &StepCtx<'_>, err: &LlmError) -> bool {
    let Some(Next::Reflect { failure }) = state.next.clone() else {
        return false;
    };
    record(
        state,
        ctx,
        Item::Error {
            error: ErrorInfo::from(err),
            retrying: false,
        },
    );
    store(state, ctx, reflexion::fallback(&failure));
    true
}

/// Stores `reflection` in memory and the trajectory; the run goes on with a new Reason
/// step (the retry).
fn store(state: &mut SessionState, ctx: &StepCtx<'_>, reflection: Reflection) {
    let repeated_call = reflection.error_type == reflexion::REPEATED_CALL;
    let count = state.memory.store(reflection.clone());
    let alternative = repeated_call || count >= 2;
    record(
        state,
        ctx,
        Item::Reflection {
            reflection,
            alternative,
        },
    );
    set_next(state, Next::Reason);
}

/// Loop detection before a call runs: a call that already gave the same result
/// [`reflexion::MAX_IDENTICAL_RESULTS`] times is not run. Its result says so; the first
/// time the run reflects on it (asking for an alternative); when the model insists, or no
/// reflection is left, the run ends with its best answer and a notice. `None`: run it.
pub(super) fn guard_loop(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    out: &mut Out,
) -> Option<Action> {
    if state.phases.run.is_some()
        || reflexion::identical_results(state, call) < reflexion::MAX_IDENTICAL_RESULTS
    {
        return None;
    }
    let error = ToolError::new(
        ToolErrorKind::RateLimited,
        reflexion::repeated_text(&call.name),
    );
    let failure = reflexion::repeated_failure(call);
    if !reflexion::insisted(state, call) && may_reflect(state) {
        tool_done_as(state, ctx, call, Err(error), Some(failure), out);
        return Some(Action::Continue);
    }
    out.emit(EventKind::ToolFailed {
        tool: call.name.clone(),
        error: error.for_model(),
    });
    record_result(state, ctx, call, false, error.for_model());
    for queued in std::mem::take(&mut state.queued_calls) {
        let not_run = ToolError::new(
            ToolErrorKind::RateLimited,
            format!("not run: the run stopped repeating {}", call.name),
        );
        record_result(state, ctx, &queued, false, not_run.for_model());
    }
    state.memory.pending = None;
    let message = reflexion::stopped_notice(&call.name);
    state.notices.push(message.clone());
    out.emit(EventKind::Notice { message });
    set_next(
        state,
        Next::Synthesize {
            why: SynthesisReason::Repeating,
        },
    );
    Some(Action::Continue)
}
