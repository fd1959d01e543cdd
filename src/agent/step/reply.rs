//! Transitions on a model's reply: Reason (tool calls queued, or the answer), Observe,
//! Synthesis, and a bounded phase's round.

use super::*;

pub(super) fn check_warning(state: &mut SessionState, out: &mut Out) {
    let threshold = (state.config.token_budget as f64 * state.config.warning_ratio) as u64;
    if !state.budget_warned && state.tokens_used() >= threshold {
        state.budget_warned = true;
        out.emit(EventKind::BudgetWarning {
            used: state.tokens_used(),
            budget: state.config.token_budget,
        });
    }
}

/// The calls of a reply: native ones, else one written in the text (given an id) to a tool
/// the request offered or, with `run` (a Reason reply), one the run has: a request sized to
/// a page shown whole offers no page tool, but a model that writes a read_page call still
/// gets its result, not its call as the answer.
pub(super) fn calls_of(
    state: &SessionState,
    run: Option<&StepCtx<'_>>,
    call: &ModelCall,
    reply: &ChatResponse,
) -> Vec<ToolCall> {
    if !reply.tool_calls.is_empty() {
        return reply.tool_calls.clone();
    }
    let mut offered: Vec<String> = call.request.tools.iter().map(|t| t.name.clone()).collect();
    let has = run.map(|ctx| ctx.tools.offered(None, offer(state)));
    for spec in has.into_iter().flatten() {
        if !offered.contains(&spec.name) {
            offered.push(spec.name);
        }
    }
    parse::tool_call_in_text(&reply.content, &offered)
        .map(|c| vec![c.with_id(format!("call_{}_{}", state.step, state.trajectory.len()))])
        .unwrap_or_default()
}

pub(super) fn reason_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    reply: ChatResponse,
    out: &mut Out,
) {
    let thought = reply.content.trim().to_string();
    let calls = calls_of(state, Some(ctx), call, &reply);
    if !calls.is_empty() {
        out.emit(EventKind::AnswerReset);
        state.draft.clear();
        record(state, ctx, thought::before_calls(&thought, &calls));
        queue_calls(state, ctx, calls);
        return;
    }
    record(state, ctx, Item::thought(thought.clone()));
    match control::parse(&thought) {
        Some(control::Control {
            final_answer: Some(answer),
            ..
        }) => complete(state, ctx, answer, false, out),
        Some(control::Control {
            should_continue: true,
            ..
        }) => set_next(state, Next::Reason),
        Some(control::Control {
            should_continue: false,
            final_answer: None,
            ..
        }) => set_next(
            state,
            Next::Synthesize {
                why: SynthesisReason::Ready,
            },
        ),
        None if thought.is_empty() => {
            let error = ErrorInfo::new(RunErrorKind::EmptyReply, "The model replied with nothing.");
            record(
                state,
                ctx,
                Item::Error {
                    error,
                    retrying: false,
                },
            );
            set_next(state, Next::Reason);
        }
        None => {
            let truncated = reply.finish_reason.as_deref() == Some("length");
            match further::call_for(state, ctx) {
                Some(call) => further::look(state, ctx, call, out),
                None => complete(state, ctx, thought, truncated, out),
            }
        }
    }
}

pub(super) fn observe_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reply: &ChatResponse,
    out: &mut Out,
) {
    let parsed = control::parse(&reply.content);
    let (should_continue, final_answer, failed) = match &parsed {
        Some(c) => (c.should_continue, c.final_answer.clone(), c.failed),
        None => (true, None, false),
    };
    let text = if parsed.is_some() {
        String::new()
    } else {
        reply.content.trim().to_string()
    };
    record(
        state,
        ctx,
        Item::Observation {
            text,
            should_continue,
            final_answer: final_answer.clone(),
        },
    );
    match (should_continue, final_answer) {
        (false, Some(answer)) => complete(state, ctx, answer, false, out),
        // The instruction asks for a final answer only when the model can answer now: one
        // given with `should_continue: true` (small models set both) is taken, unless the
        // call failed (then the run reflects on it, as for any failure).
        (true, Some(answer)) if !failed && !answer.trim().is_empty() => {
            complete(state, ctx, answer, false, out)
        }
        (false, None) => set_next(
            state,
            Next::Synthesize {
                why: SynthesisReason::Ready,
            },
        ),
        (true, _) if failed && reflect::reflect_on(state, last_call(state).map(judged)) => {}
        (true, _) => set_next(state, Next::Reason),
    }
}

/// The last tool call of the run.
fn last_call(state: &SessionState) -> Option<ToolCall> {
    state.trajectory.iter().rev().find_map(|e| match &e.item {
        Item::ToolCall { call } => Some(call.clone()),
        _ => None,
    })
}

fn judged(call: ToolCall) -> crate::state::memory::Failure {
    crate::agent::step::reflect::reflexion::judged_failure(&call)
}

pub(super) fn synthesis_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    why: SynthesisReason,
    reply: &ChatResponse,
    out: &mut Out,
) {
    let partial = why != SynthesisReason::Ready;
    let text = reply.content.trim();
    let (answer, partial) = if text.is_empty() {
        (best_answer(state), true)
    } else {
        let truncated = reply.finish_reason.as_deref() == Some("length");
        (text.to_string(), partial || truncated)
    };
    if why == SynthesisReason::Stopped {
        finish(state, ctx, RunStatus::Stopped, answer, true, None, out);
    } else {
        complete(state, ctx, answer, partial, out);
    }
}

pub(super) fn phase_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    reply: ChatResponse,
    out: &mut Out,
) {
    let calls = calls_of(state, None, call, &reply);
    let label = state
        .phases
        .run
        .as_ref()
        .map(|p| p.label.clone())
        .unwrap_or_default();
    let mut said = ChatMessage::new(Role::Assistant, reply.content.clone());
    said.tool_calls = calls.clone();
    state.phases.contexts.get_or_default(label).push(said);
    if let Some(phase) = state.phases.run.as_mut() {
        phase.result.final_text = reply.content.trim().to_string();
    }
    record(state, ctx, thought::before_calls(&reply.content, &calls));
    if calls.is_empty() {
        end_phase(state, ctx, StopReason::Done, out);
    } else {
        queue_calls(state, ctx, calls);
    }
}
