//! A tool's outcome as a transition: emitted, recorded in the trajectory (and a bounded
//! phase's context), and what follows it (the reply's next call, a reflection, Observe, or
//! the phase's next round).

use super::*;

/// A tool call's outcome, or its retry: a failure the policy retries (a timeout or a
/// network error of a tool without side effects, up to `max_retries` times) is recorded as
/// an error that is retried, and the same call is made again after the returned delay, the
/// backoff a model call's retry waits (the engine saves the state first, and Stop ends the
/// wait). Anything else is [`tool_done`].
pub fn tool_outcome(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    side_effects: bool,
    result: Result<String, ToolError>,
    out: &mut Out,
) -> Option<u64> {
    let policy = RetryPolicy::of(&state.config);
    match result {
        Err(err) if policy.retries_tool(&err, state.attempts + 1, side_effects) => {
            state.attempts += 1;
            let kind = if err.kind == ToolErrorKind::Timeout {
                crate::types::LlmErrorKind::Timeout
            } else {
                crate::types::LlmErrorKind::Network
            };
            let error = ErrorInfo::new(kind, format!("{}: {}", call.name, err.message));
            record(
                state,
                ctx,
                Item::Error {
                    error,
                    retrying: true,
                },
            );
            Some(policy.tool_backoff_ms(ctx.now, state.attempts, state.run_id))
        }
        result => {
            tool_done(state, ctx, call, result, out);
            None
        }
    }
}

/// A tool's outcome: emitted, recorded (the model sees errors as the result text), and the
/// next queued call, the Observe phase, or the phase's next round follows.
pub fn tool_done(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    result: Result<String, ToolError>,
    out: &mut Out,
) {
    let failure = result
        .as_ref()
        .err()
        .and_then(|err| crate::agent::step::reflect::reflexion::tool_failure(call, err));
    tool_done_as(state, ctx, call, result, failure, out);
}

/// [`tool_done`], with the failure the run reflects on (once the reply's calls have run).
pub(super) fn tool_done_as(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    result: Result<String, ToolError>,
    failure: Option<crate::state::memory::Failure>,
    out: &mut Out,
) {
    let tool = call.name.clone();
    let (ok, content) = match result {
        Ok(text) => {
            out.emit(EventKind::ToolCompleted { tool });
            (true, text)
        }
        Err(err) => {
            let content = err.for_model();
            out.emit(EventKind::ToolFailed {
                tool,
                error: content.clone(),
            });
            (false, content)
        }
    };
    record_result(state, ctx, call, ok, content);
    if reflect::after_result(state, failure) {
        return;
    }
    if !state.queued_calls.is_empty() {
        let next = state.queued_calls.remove(0);
        set_next(
            state,
            Next::Act {
                call: next,
                started: false,
            },
        );
    } else if state.phases.run.as_ref().is_some_and(|p| p.tool_only) {
        end_phase(state, ctx, StopReason::Done, out);
    } else if further::made(call) {
        // The search the run made itself: nothing to judge (the call was not the model's),
        // and a Reason request would get "does not say" again (the system text names it);
        // the answer is written from the passages found.
        set_next(
            state,
            Next::Synthesize {
                why: SynthesisReason::Ready,
            },
        );
    } else if state.phases.run.is_some() || state.step == 0 {
        // A call decided before the first step (an explanation's context) goes straight
        // to the first Reason, which then has its result.
        set_next(state, Next::Reason);
    } else {
        set_next(state, Next::Observe);
    }
}

pub(super) fn record_result(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    ok: bool,
    content: String,
) {
    if let Some(phase) = state.phases.run.as_mut() {
        phase.result.tool_calls.push(ToolOutcome {
            call: call.clone(),
            ok,
            content: content.clone(),
        });
        let label = phase.label.clone();
        if !phase.tool_only {
            // Page and web data reach the model inside the run's fence, as in any run.
            let seen = prompts::tool_content(state, &call.name, ok, &content);
            let mut message = ChatMessage::new(Role::Tool, seen);
            message.tool_call_id = Some(call.id.clone());
            state.phases.contexts.get_or_default(label).push(message);
        }
    }
    record(
        state,
        ctx,
        Item::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            ok,
            content,
        },
    );
}
