//! A model call's edges as transitions: counted before it goes out, its error (retried after
//! a backoff, or the run's end), and a Stop that ended it or the wait before its retry.

use super::*;

/// The transition "about to call the model (attempt n)": checks the budget and the attempts,
/// and counts the call. Saved before the call, so a call cut off by the worker stopping
/// counts as an attempt when the phase is redone. `false`: the run halted instead.
pub fn before_call(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    out: &mut Out,
) -> bool {
    if !executor::budget_allows(state, call.estimate) {
        halt(state, ctx, Halt::Budget, out);
        return false;
    }
    if state.attempts > state.config.max_retries {
        // Only reachable when a resumed run redoes a phase that kept being cut off.
        let error = ErrorInfo::new(
            RunErrorKind::Interrupted,
            format!(
                "This step was interrupted {} times (the extension's background worker kept stopping during the model call), so the run gave up. Ask again to retry.",
                state.attempts
            ),
        );
        halt(state, ctx, Halt::Failed(error), out);
        return false;
    }
    state.attempts += 1;
    state.model_calls += 1;
    true
}

/// A model call failed: recorded; `Some(delay)` when it is retried after `delay` ms.
pub fn after_error(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    err: &LlmError,
    out: &mut Out,
) -> Option<u64> {
    if matches!(state.next, Some(Next::Compact { .. })) {
        compact::compact_failed(state, ctx, err);
        return None;
    }
    if reflect::reflect_failed(state, ctx, err) {
        return None;
    }
    // A search's, a summary's and a screenshot's requests are their own (compacting cannot
    // shrink them).
    let standalone = matches!(state.next, Some(Next::Search(_) | Next::Summarize(_)))
        || call.purpose == Purpose::Transcribe;
    if !standalone && compact::after_too_long(state, ctx, call, err) {
        return None;
    }
    let policy = RetryPolicy::of(&state.config);
    // A grading call that timed out is not tried again: its results are used ungraded at
    // once (each retry would wait as long again before the answer can start).
    let grading_timeout =
        call.purpose == Purpose::Grade && err.kind == crate::types::LlmErrorKind::Timeout;
    let retrying = !grading_timeout && policy.retries_model(err, state.attempts);
    record(
        state,
        ctx,
        Item::Error {
            error: ErrorInfo::from(err),
            retrying,
        },
    );
    if retrying {
        if call.stream_answer && !state.draft.is_empty() {
            // The failed attempt's streamed text is not the answer: the retry streams anew.
            out.emit(EventKind::AnswerReset);
        }
        return Some(policy.backoff_ms(ctx.now, state.attempts, err, state.run_id));
    }
    if search::model_failed(state, ctx, err, out) || summarize::model_failed(state, ctx, err, out) {
        return None;
    }
    if call.purpose == Purpose::Transcribe && screenshot::model_failed(state, ctx, err, out) {
        return None;
    }
    let mut info = ErrorInfo::from(err);
    if err.kind.is_retryable() {
        info.message = format!(
            "{} Gave up after {} attempts.",
            info.message, state.attempts
        );
    }
    if state.phases.run.is_some() {
        fail_phase(state, ctx, info, out);
    } else {
        halt(state, ctx, Halt::Failed(info), out);
    }
    None
}

/// Stop was pressed while waiting to retry.
pub fn stopped_while_waiting(state: &mut SessionState, ctx: &StepCtx<'_>, out: &mut Out) {
    stopped(state, ctx, Halt::Stopped, out);
}

/// Stop was pressed during the call: it was abandoned.
pub fn interrupted(state: &mut SessionState, ctx: &StepCtx<'_>, out: &mut Out) {
    stopped(state, ctx, Halt::Interrupted, out);
}

/// Stop ends a summary's section round, a bounded phase, or the run (`halt` with `why`).
fn stopped(state: &mut SessionState, ctx: &StepCtx<'_>, why: Halt, out: &mut Out) {
    if summarize::stopped(state, ctx, out) {
        return;
    }
    if state.phases.run.is_some() {
        end_phase(state, ctx, StopReason::StopRequested, out);
    } else {
        halt(state, ctx, why, out);
    }
}
