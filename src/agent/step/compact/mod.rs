//! The context manager's transitions: fitting a request into the window before it is sent,
//! the persisted compaction phase, and compact-and-retry-once when the provider refuses a
//! request as too long. The decisions themselves are in [`crate::agent::context`].

pub mod prompt;

use super::*;
use crate::agent::context::{self, Fit, Older};
use crate::types::LlmErrorKind;

/// What to do with a request about to be built.
pub(super) enum Fitted {
    /// Send it (shrunk if it had to be).
    Send(ChatRequest),
    /// Compact the older history first.
    Compact,
    /// Even shrunk as far as it goes, it does not fit: never sent.
    TooLarge {
        /// Its estimate, unshrunk.
        tokens: u64,
        /// What the window allows.
        limit: u64,
    },
}

/// Builds the request with `build`, and decides: send it as it is, compact first (when the
/// request passes "Compact at", `may_compact`, and the older history is worth it), send it
/// shrunk by the first [`Fit`] of the ladder that fits, compact after all when nothing of
/// the ladder fits, or else send it shrunk as far as the ladder goes with the fewest tools
/// left out that make it fit.
pub(super) fn fit(
    state: &SessionState,
    may_compact: bool,
    build: impl Fn(&Fit) -> Result<ChatRequest, TemplateError>,
) -> Result<Fitted, TemplateError> {
    let request = build(&Fit::NONE)?;
    let (Some(limit), Some(threshold)) = (context::limit(state), context::compact_threshold(state))
    else {
        return Ok(Fitted::Send(request));
    };
    let tokens = context::window_use(state, &request);
    if tokens > threshold && may_compact && worth_compacting(state)? {
        return Ok(Fitted::Compact);
    }
    if tokens <= limit {
        return Ok(Fitted::Send(request));
    }
    let first_that_fits = |fits: &mut dyn Iterator<Item = Fit>| {
        for fit in fits {
            let shrunk = build(&fit)?;
            if context::window_use(state, &shrunk) <= limit {
                return Ok(Some(shrunk));
            }
        }
        Ok(None)
    };
    let ladder = Fit::ladder(state);
    if let Some(shrunk) = first_that_fits(&mut ladder.iter().copied())? {
        return Ok(Fitted::Send(shrunk));
    }
    // Shrinking is not enough: compacting, worth it or not, is what is left.
    if may_compact && context::older(state).is_some() {
        return Ok(Fitted::Compact);
    }
    // Nothing left to compact: fewer tools, down to none (the model answers from what it
    // has), rather than no answer.
    let smallest = ladder.last().copied().unwrap_or(Fit::NONE);
    if let Some(shrunk) = first_that_fits(&mut smallest.dropping_tools(request.tools.len()))? {
        return Ok(Fitted::Send(shrunk));
    }
    Ok(Fitted::TooLarge { tokens, limit })
}

/// The request to send for phase `next`, or `None` when the run compacts first or ends
/// (the request does not fit, or a template failed).
pub(super) fn fitted_request(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    fitted: Result<compact::Fitted, TemplateError>,
    next: Next,
    out: &mut Out,
) -> Option<ChatRequest> {
    match fitted {
        Ok(Fitted::Send(request)) => Some(request),
        Ok(Fitted::Compact) => {
            start(state, next, 0);
            None
        }
        Ok(Fitted::TooLarge { tokens, limit }) => {
            too_large(state, ctx, tokens, limit, out);
            None
        }
        Err(err) => {
            halt(state, ctx, Halt::Failed(template_error(&err)), out);
            None
        }
    }
}

/// Whether the older history (with the summary so far) is at least
/// [`context::MIN_OLDER_SHARE_PCT`] of the context (the messages; tool definitions and the
/// reply cap are no part of it).
fn worth_compacting(state: &SessionState) -> Result<bool, TemplateError> {
    let Some(older) = context::older(state) else {
        return Ok(false);
    };
    let before = prompts::context_tokens(state)?;
    let mut without = state.clone();
    without.compact.compaction = Some(context::compacted(state, older, String::new(), false));
    let older_tokens = before.saturating_sub(prompts::context_tokens(&without)?);
    Ok(older_tokens * 100 >= before * context::MIN_OLDER_SHARE_PCT)
}

/// Goes to the compaction phase, then on with `resume` (its attempts kept).
pub(super) fn start(state: &mut SessionState, resume: Next, resume_attempts: u32) {
    set_next(
        state,
        Next::Compact {
            resume: Box::new(resume),
            resume_attempts,
        },
    );
}

fn resume(state: &mut SessionState) {
    if let Some(Next::Compact {
        resume,
        resume_attempts,
    }) = state.next.take()
    {
        set_next(state, *resume);
        state.attempts = resume_attempts;
    }
}

/// A request that does not fit even shrunk: the run ends with what it has, and says why.
pub(super) fn too_large(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    tokens: u64,
    limit: u64,
    out: &mut Out,
) {
    let error = ErrorInfo::new(
        RunErrorKind::Llm(LlmErrorKind::ContextTooLong),
        format!(
            "This request needs about {} tokens even with the conversation compacted and the page excerpt left out, more than the {} the model's context window of {} tokens allows. Set a larger Context window in Options if the model has one, choose a model with a larger window, or start a new conversation with a shorter question.",
            grouped(tokens),
            grouped(limit),
            grouped(u64::from(state.config.context_window)),
        ),
    );
    halt(state, ctx, Halt::Failed(error), out);
}

/// Longest detail of each result and answer sent to the model for summarising, then the
/// shorter one tried when that does not fit.
const MODEL_DETAIL: [usize; 2] = [2_000, 200];

/// The compaction phase: the model summarises the older history (when the request fits,
/// the budget allows it, and the call was not cut off more often than `max_retries`), else
/// the fallback compacts without it. A compaction never ends a run.
pub(super) fn plan_compact(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    quiet: bool,
    out: &mut Out,
) -> Action {
    if !quiet {
        out.emit(EventKind::Compacting);
    }
    let Some(older) = context::older(state) else {
        resume(state);
        return Action::Continue;
    };
    if state.attempts <= state.config.max_retries {
        let limit = context::limit(state).unwrap_or(u64::MAX);
        let words = summary_words(state, older);
        for detail in MODEL_DETAIL {
            let request = match prompt::compaction(state, older, detail, words) {
                Ok(request) => request,
                Err(err) => {
                    halt(state, ctx, Halt::Failed(template_error(&err)), out);
                    return Action::Continue;
                }
            };
            let estimate = executor::estimate(&request);
            if context::window_use(state, &request) <= limit
                && executor::budget_allows(state, estimate)
            {
                return Action::Model(ModelCall {
                    request,
                    purpose: Purpose::Compact,
                    estimate,
                    stream_answer: false,
                });
            }
        }
    }
    apply(state, ctx, older, None);
    resume(state);
    Action::Continue
}

/// The words asked for: about a quarter of the older history's tokens, 60 to 300.
fn summary_words(state: &SessionState, older: Older) -> u32 {
    let tokens = estimate_tokens(&context::older_text(state, older, usize::MAX));
    u32::try_from(tokens / 4).unwrap_or(u32::MAX).clamp(60, 300)
}

/// The compaction call answered: its summary, if it has one and it cuts enough, else the
/// fallback.
pub(super) fn compact_reply(state: &mut SessionState, ctx: &StepCtx<'_>, reply: &ChatResponse) {
    if let Some(older) = context::older(state) {
        apply(state, ctx, older, context::parse_summary(&reply.content));
    }
    resume(state);
}

/// The compaction call failed: the fallback compacts, and the run goes on.
pub(super) fn compact_failed(state: &mut SessionState, ctx: &StepCtx<'_>, err: &LlmError) {
    let mut error = ErrorInfo::from(err);
    error.message = format!(
        "Compacting with the model failed ({}); older results were cut to their first lines instead.",
        error.message
    );
    record(
        state,
        ctx,
        Item::Error {
            error,
            retrying: false,
        },
    );
    if let Some(older) = context::older(state) {
        apply(state, ctx, older, None);
    }
    resume(state);
}

/// The provider refused a request as too long: compact, then retry it once with the run's
/// requests kept to a smaller share of the window. `false`: it already happened once.
pub(super) fn after_too_long(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    err: &LlmError,
) -> bool {
    let refused = context::window_use(state, &call.request);
    if err.kind != LlmErrorKind::ContextTooLong
        || state.compact.overflow_limit > 0
        || state.phases.run.is_some()
        || state.config.context_window == 0
    {
        return false;
    }
    let Some(next @ (Next::Reason | Next::Observe | Next::Synthesize { .. })) = state.next.clone()
    else {
        return false;
    };
    state.compact.overflow_limit = (refused * context::OVERFLOW_RETRY_PCT / 100).max(1);
    record(
        state,
        ctx,
        Item::Error {
            error: ErrorInfo::from(err),
            retrying: true,
        },
    );
    let attempts = state.attempts;
    start(state, next, attempts);
    true
}

/// Compacts `older` into `summary` when it cuts the context to at most
/// [`context::MAX_REMAINING_PCT`] and the next request then fits under "Compact at", else
/// into the first fallback level that does (the last level otherwise), and records it.
fn apply(state: &mut SessionState, ctx: &StepCtx<'_>, older: Older, summary: Option<String>) {
    let before = prompts::context_tokens(state).unwrap_or(0);
    // What a request adds to the context (tool definitions, the reply cap): a summary is
    // enough when the next request fits under "Compact at" with it.
    let tools = crate::agent::step::reason_tools(state, ctx, &Fit::NONE);
    let overhead = prompts::reason(state, tools, &Fit::NONE)
        .map_or(0, |r| context::window_use(state, &r).saturating_sub(before));
    let threshold = context::compact_threshold(state).unwrap_or(u64::MAX);
    let enough = |after: u64| {
        after * 100 <= before * context::MAX_REMAINING_PCT && after + overhead <= threshold
    };
    let mut candidates: Vec<(String, bool)> = summary.into_iter().map(|s| (s, true)).collect();
    candidates.extend(
        (0..context::FALLBACK_DETAIL.len())
            .map(|level| (context::fallback_summary(state, older, level), false)),
    );
    let last = candidates.len() - 1;
    let mut after = before;
    let mut by_model = false;
    for (i, (text, model)) in candidates.into_iter().enumerate() {
        state.compact.compaction = Some(context::compacted(&*state, older, text, model));
        after = prompts::context_tokens(state).unwrap_or(0);
        by_model = model;
        if enough(after) || i == last {
            break;
        }
    }
    record(
        state,
        ctx,
        Item::Compaction {
            turns: older.turns,
            entries: older.entries,
            tokens_before: before,
            tokens_after: after,
            by_model,
        },
    );
}
