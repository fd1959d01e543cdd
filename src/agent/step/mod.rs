//! The step logic as pure transitions: from the persisted state and what just happened (a
//! model reply, a model error, a tool result, stop, user input, a deadline) to the next
//! state, the trajectory items (recorded in the state) and the events. No I/O and no clock:
//! the time comes in [`StepCtx`]. The driver ([`crate::agent::Engine`]) performs the
//! [`Action`] a state asks for and saves after every transition.
//!
//! The capabilities (search, summarize, screenshot, research, reflect, compact) are folders
//! here, each with its transitions, prompt code, template and state type
//! ([`crate::agent::capabilities`] lists them); this module dispatches to them and holds
//! the loop's own transitions (`thought`, `reply`, `tool`, `call`, `end`, `further`).

use crate::agent::context::Fit;
use crate::agent::executor::{self, RetryPolicy};
use crate::agent::{citations, control};
use crate::agent::{context, prompts};
use crate::llm::ToolSpec;
use crate::state::trajectory::{ErrorInfo, Item};
use crate::state::{
    Next, PendingInput, PhaseRun, RunStatus, SessionState, StopReason, SynthesisReason, ToolOutcome,
};
use crate::template::TemplateError;
use crate::tools::{decode_args, RequestInputArgs};
use crate::tools::{parse, Offer, ToolBox, ToolError, ToolErrorKind, REQUEST_INPUT};
use crate::tools::{ReadPage, TypedTool, EXPLAIN_TEXT_WITH_CONTEXT};
use crate::types::events::EventKind;
use crate::types::tokens::estimate_tokens;
use crate::types::{
    ChatMessage, ChatRequest, ChatResponse, LlmError, Role, RunErrorKind, ToolCall,
};

/// Most tool calls run from one reply; the rest are answered "not run".
pub const MAX_CALLS_PER_REPLY: usize = 5;

/// What a transition needs besides the state.
pub struct StepCtx<'a> {
    /// Now (ms).
    pub now: u64,
    /// The tools.
    pub tools: &'a ToolBox,
    /// Whether Stop was pressed.
    pub stop: bool,
}

/// What a transition produced for the UI: events to emit now, and the terminal event to
/// emit once the final state is saved.
#[derive(Debug, Default)]
pub struct Out {
    /// Events, in order.
    pub events: Vec<EventKind>,
    /// The run's terminal event.
    pub terminal: Option<EventKind>,
}

impl Out {
    fn emit(&mut self, kind: EventKind) {
        self.events.push(kind);
    }
}

/// Which model call of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Reason (with tools), or a bounded phase's round.
    Reason,
    /// Judge the last tool results.
    Observe,
    /// Write the answer.
    Synthesize(SynthesisReason),
    /// Summarise the older history.
    Compact,
    /// Reflect on a failed action.
    Reflect,
    /// Grade a page of web search results.
    Grade,
    /// Rewrite a search query.
    Rewrite,
    /// Read the text of a screenshot.
    Transcribe,
    /// Summarise a section of the page, or combine the section summaries.
    Summarize,
}

/// A model call to make.
#[derive(Debug)]
pub struct ModelCall {
    /// The request.
    pub request: ChatRequest,
    /// Which call.
    pub purpose: Purpose,
    /// Its prompt estimate.
    pub estimate: u64,
    /// Whether its streamed text is the draft answer.
    pub stream_answer: bool,
}

/// What the driver does next.
#[derive(Debug)]
pub enum Action {
    /// The run is over.
    Done,
    /// A transition without I/O happened: save, then plan again.
    Continue,
    /// Call the model (after [`before_call`]).
    Model(ModelCall),
    /// Run a checked tool call (a side effect is marked started first).
    Tool {
        /// The call.
        call: ToolCall,
        /// Whether it has side effects.
        side_effects: bool,
    },
    /// Wait for the user's answer.
    Input,
    /// Search the web (Stop abandons it).
    Search(crate::ports::SearchQuery),
    /// Take a screenshot of tab `tab` for the screenshot tool's `call`, while it shows `page`.
    Capture {
        /// The call.
        call: ToolCall,
        /// The tab.
        tab: i64,
        /// The address of the run's page (nothing is captured while the tab shows another):
        /// the page read at the start, or the address of one that could not be read.
        page: Option<String>,
    },
}

fn set_next(state: &mut SessionState, next: Next) {
    state.next = Some(next);
    state.attempts = 0;
}

fn record(state: &mut SessionState, ctx: &StepCtx<'_>, item: Item) {
    state.record(ctx.now, item);
}

/// Decides the next action, applying the transitions that need no I/O (a new step, the
/// step limit, Stop, a policy refusal, a question to the user, a side effect cut off).
/// `quiet` is set while retrying a model call (its progress event was already sent).
pub fn plan(state: &mut SessionState, ctx: &StepCtx<'_>, quiet: bool, out: &mut Out) -> Action {
    if state.status != RunStatus::Running {
        return Action::Done;
    }
    let next = state.next.clone().unwrap_or(Next::Reason);
    // A pending question hears the Stop itself (its tool call gets a result first).
    if ctx.stop && !matches!(next, Next::Synthesize { .. } | Next::AwaitInput) {
        if summarize::stopped(state, ctx, out) {
            return Action::Continue;
        }
        if state.phases.run.is_some() {
            end_phase(state, ctx, StopReason::StopRequested, out);
        } else {
            set_next(
                state,
                Next::Synthesize {
                    why: SynthesisReason::Stopped,
                },
            );
        }
        return Action::Continue;
    }
    match next {
        Next::Reason if state.phases.run.is_some() => plan_phase_round(state, ctx, quiet, out),
        Next::Reason => plan_reason(state, ctx, quiet, out),
        Next::Act { call, started } => plan_act(state, ctx, call, started, out),
        Next::Observe => {
            let may_compact = state.attempts == 0 && !ctx.stop;
            let fitted = compact::fit(state, may_compact, |fit| prompts::observe(state, fit));
            let Some(request) = compact::fitted_request(state, ctx, fitted, Next::Observe, out)
            else {
                return Action::Continue;
            };
            if !quiet {
                out.emit(EventKind::Analyzing);
            }
            model_call(state, Ok(request), Purpose::Observe, false, ctx, out)
        }
        Next::Synthesize { why } => {
            let may_compact = state.attempts == 0 && !ctx.stop;
            let fitted = compact::fit(state, may_compact, |fit| {
                prompts::synthesis(state, why, fit)
            });
            let Some(request) =
                compact::fitted_request(state, ctx, fitted, Next::Synthesize { why }, out)
            else {
                return Action::Continue;
            };
            if !quiet {
                out.emit(EventKind::Synthesizing);
            }
            model_call(state, Ok(request), Purpose::Synthesize(why), true, ctx, out)
        }
        Next::AwaitInput => Action::Input,
        Next::Compact { .. } => compact::plan_compact(state, ctx, quiet, out),
        Next::Reflect { failure } => reflect::plan_reflect(state, ctx, failure, quiet, out),
        Next::Search(run) => search::plan_search(state, ctx, *run, quiet, out),
        Next::Summarize(run) => summarize::plan_summarize(state, ctx, *run, quiet, out),
    }
}

/// What the run has, for the tools offered only with it.
fn offer(state: &SessionState) -> Offer {
    Offer {
        page_text: state.page.as_ref().is_some_and(|p| !p.text.is_empty()),
        selection: state.explains(),
        web_search: state.config.web_search,
        little_text: screenshot::offered(state),
    }
}

/// The tools a Reason request shaped by `fit` offers: those of [`offer`], sized to the
/// request, since every definition is prompt tokens a CPU model reads before its first
/// word: no page tools when it shows the whole page (nothing more to read or summarize
/// section by section), and then no `request_input` either (a question about what the user
/// sees); no `explain_text_with_context` once the run has its result. The same for every
/// step of a run, so each request repeats the previous one's prefix. A call to a tool the
/// run has but the request does not offer still runs (`reply::calls_of`).
pub(super) fn reason_tools(state: &SessionState, ctx: &StepCtx<'_>, fit: &Fit) -> Vec<ToolSpec> {
    // A selection action (not Explain) is one request and its answer: no tools.
    if state.action.is_some() {
        return Vec::new();
    }
    let mut offer = offer(state);
    let whole = offer.page_text && prompts::shows_page_whole(state, fit);
    offer.page_text &= !whole;
    offer.selection &= !state.trajectory.iter().any(|e| {
        matches!(&e.item, Item::ToolResult { name, ok: true, .. } if name == EXPLAIN_TEXT_WITH_CONTEXT)
    });
    let mut tools = ctx.tools.offered(None, offer);
    // Beside a cut page, query_page finds what the excerpt lacks and the summary covers the
    // whole page; read_page is left out (about 180 tokens more for each request) and still
    // runs when called. A model that answers "does not say" instead of calling a tool gets
    // query_page called for it (`further`).
    tools.retain(|t| !(whole && t.name == REQUEST_INPUT) && t.name != ReadPage::NAME);
    tools
}

fn plan_reason(state: &mut SessionState, ctx: &StepCtx<'_>, quiet: bool, out: &mut Out) -> Action {
    if state.attempts == 0 && state.step >= state.config.max_steps {
        set_next(
            state,
            Next::Synthesize {
                why: SynthesisReason::StepLimit,
            },
        );
        return Action::Continue;
    }
    let may_compact = state.attempts == 0 && !ctx.stop;
    let fitted = compact::fit(state, may_compact, |fit| {
        prompts::reason(state, reason_tools(state, ctx, fit), fit)
    });
    let Some(request) = compact::fitted_request(state, ctx, fitted, Next::Reason, out) else {
        return Action::Continue;
    };
    if state.attempts == 0 {
        state.step += 1;
        out.emit(EventKind::StepStarted);
    }
    if !quiet {
        out.emit(EventKind::Thinking);
    }
    model_call(state, Ok(request), Purpose::Reason, true, ctx, out)
}

fn plan_phase_round(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    quiet: bool,
    out: &mut Out,
) -> Action {
    let Some(phase) = state.phases.run.clone() else {
        return Action::Done;
    };
    if state.attempts == 0 {
        if phase.iterations >= phase.max_iterations {
            end_phase(state, ctx, StopReason::MaxIterations, out);
            return Action::Continue;
        }
        if let Some(p) = state.phases.run.as_mut() {
            p.iterations += 1;
        }
        state.step += 1;
        out.emit(EventKind::StepStarted);
    }
    if !quiet {
        out.emit(EventKind::Thinking);
    }
    let tools = ctx.tools.offered(phase.tools.as_deref(), offer(state));
    let request = prompts::phase(state, &phase.system, tools);
    // A research report streams to the UI as it is written, like any answer.
    let stream = research::streams(state);
    model_call(state, Ok(request), Purpose::Reason, stream, ctx, out)
}

fn model_call(
    state: &mut SessionState,
    request: Result<ChatRequest, TemplateError>,
    purpose: Purpose,
    stream_answer: bool,
    ctx: &StepCtx<'_>,
    out: &mut Out,
) -> Action {
    match request {
        Ok(request) => Action::Model(ModelCall {
            estimate: executor::estimate(&request),
            request,
            purpose,
            stream_answer,
        }),
        Err(err) => {
            halt(state, ctx, Halt::Failed(template_error(&err)), out);
            Action::Continue
        }
    }
}

fn plan_act(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: ToolCall,
    started: bool,
    out: &mut Out,
) -> Action {
    if let Some(action) = reflect::guard_loop(state, ctx, &call, out) {
        return action;
    }
    out.emit(EventKind::Executing {
        tool: call.name.clone(),
    });
    let side_effects = ctx.tools.has_side_effects(&call.name);
    if side_effects && started {
        // The worker stopped after this action began and before its result was saved: it
        // may have taken effect, so it is never run a second time.
        tool_done(state, ctx, &call, Err(ToolError::interrupted()), out);
        return Action::Continue;
    }
    if let Err(refused) = executor::check(ctx.tools, state, &call, ctx.now) {
        tool_done(state, ctx, &call, Err(refused), out);
        return Action::Continue;
    }
    if call.name == REQUEST_INPUT {
        ask_user(state, ctx, call, out);
        return Action::Continue;
    }
    // A call that costs model calls (a summary of the whole page: one per section; a web
    // search: its grading), the same as one that already gave its result, is not run again:
    // small models repeat such calls (the loop guard stops cheap ones after three results).
    let costly = summarize::is_summarize_tool(&call.name) || search::is_search_tool(&call.name);
    if costly
        && state.phases.run.is_none()
        && crate::agent::step::reflect::reflexion::succeeded_before(state, &call)
    {
        let again = crate::agent::step::reflect::reflexion::same_as_before_text(&call.name);
        tool_done(state, ctx, &call, Ok(again), out);
        return Action::Continue;
    }
    if screenshot::is_screenshot_tool(&call.name) {
        return screenshot::begin(state, ctx, call, out);
    }
    if search::is_search_tool(&call.name) {
        if state.config.web_search {
            search::begin(state, ctx, call, out);
        } else {
            let off = ToolError::new(
                ToolErrorKind::Permission,
                "web search is off for this run (the user can turn it on in Options)",
            );
            tool_done(state, ctx, &call, Err(off), out);
        }
        return Action::Continue;
    }
    if summarize::is_summarize_tool(&call.name) {
        summarize::begin(state, ctx, call, out);
        return Action::Continue;
    }
    Action::Tool { call, side_effects }
}

/// The transition "about to run a tool with side effects": saved before it runs.
pub fn tool_started(state: &mut SessionState) {
    if let Some(Next::Act { started, .. }) = &mut state.next {
        *started = true;
    }
}

/// Why a run ends without its normal last phase.
pub enum Halt {
    /// The budget does not allow the call.
    Budget,
    /// A fatal error, or retries used up.
    Failed(ErrorInfo),
    /// Stop was pressed while waiting to retry.
    Stopped,
    /// Stop was pressed during the call: the call was abandoned.
    Interrupted,
}

/// A model call answered.
pub fn after_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ModelCall,
    reply: ChatResponse,
    out: &mut Out,
) {
    let used = executor::usage_of(&reply, call.estimate);
    state.usage.input += used.input;
    state.usage.output += used.output;
    state.usage.cached_input += used.cached_input;
    if !matches!(
        call.purpose,
        Purpose::Compact
            | Purpose::Grade
            | Purpose::Rewrite
            | Purpose::Transcribe
            | Purpose::Summarize
    ) {
        state.compact.last_prompt_tokens = used.input;
    }
    if reply.usage.is_some() && call.estimate > 0 {
        // The provider counted this prompt: later estimates lean on its count.
        state.compact.prompt_scale_pct =
            u32::try_from(used.input.saturating_mul(100) / call.estimate)
                .unwrap_or(u32::MAX)
                .min(context::MAX_SCALE_PCT);
    }
    check_warning(state, out);
    match call.purpose {
        Purpose::Reason if state.phases.run.is_some() => phase_reply(state, ctx, call, reply, out),
        Purpose::Reason => reason_reply(state, ctx, call, reply, out),
        Purpose::Observe => observe_reply(state, ctx, &reply, out),
        Purpose::Synthesize(why) => synthesis_reply(state, ctx, why, &reply, out),
        Purpose::Compact => compact::compact_reply(state, ctx, &reply),
        Purpose::Reflect => reflect::reflect_reply(state, ctx, &reply),
        Purpose::Grade => search::grade_reply(state, &reply),
        Purpose::Rewrite => search::rewrite_reply(state, ctx, &reply, out),
        Purpose::Transcribe => screenshot::transcribed(state, ctx, &reply, out),
        Purpose::Summarize => summarize::summary_reply(state, ctx, &reply, out),
    }
}

/// `request_input`: the question becomes pending and the run waits for the answer.
fn ask_user(state: &mut SessionState, ctx: &StepCtx<'_>, call: ToolCall, out: &mut Out) {
    let question =
        decode_args::<RequestInputArgs>(&call.arguments).and_then(|args| args.checked_question());
    let question = match question {
        Ok(q) => q,
        Err(err) => return tool_done(state, ctx, &call, Err(err), out),
    };
    let now = ctx.now;
    state.input.pending = Some(PendingInput {
        request_id: format!("{}-{}-{}", state.run_id, state.step, state.trajectory.len()),
        call,
        question,
        asked_at: now,
        ack_deadline: Some(now.saturating_add(state.config.ack_wait_ms())),
        acknowledged_at: None,
        answer_deadline: None,
    });
    set_next(state, Next::AwaitInput);
}

/// A built-in prompt template that does not load or render: our bug, which ends the run.
fn template_error(err: &TemplateError) -> ErrorInfo {
    ErrorInfo::new(
        RunErrorKind::Internal,
        format!(
            "KnowledgeLens could not build its prompt ({err}). This is a bug; please report it."
        ),
    )
}

pub(crate) use crate::types::tokens::grouped;

mod call;
pub mod compact;
mod end;
mod further;
pub mod reflect;
mod reply;
pub mod research;
pub mod screenshot;
pub mod search;
pub mod summarize;
pub mod thought;
mod tool;

/// Records the calls of a reply and queues those to run (at most
/// [`MAX_CALLS_PER_REPLY`]; the rest get a "not run" result at once).
pub(super) fn queue_calls(state: &mut SessionState, ctx: &StepCtx<'_>, mut calls: Vec<ToolCall>) {
    for call in &calls {
        record(state, ctx, Item::ToolCall { call: call.clone() });
    }
    let extra = calls.split_off(calls.len().min(MAX_CALLS_PER_REPLY));
    for call in extra {
        let error = ToolError::new(
            ToolErrorKind::RateLimited,
            format!("not run: too many calls in one reply (at most {MAX_CALLS_PER_REPLY})"),
        );
        record_result(state, ctx, &call, false, error.for_model());
    }
    let mut calls = calls.into_iter();
    if let Some(first) = calls.next() {
        state.queued_calls = calls.collect();
        set_next(
            state,
            Next::Act {
                call: first,
                started: false,
            },
        );
    }
}

/// The notice of a run's token budget used up.
pub(super) fn budget_notice(state: &SessionState) -> String {
    format!(
        "The token budget for this run is used up ({} of {} tokens); this is the best answer so far. Raise the Token budget in Options for longer runs.",
        grouped(state.tokens_used()),
        grouped(state.config.token_budget)
    )
}

pub use call::{after_error, before_call, interrupted, stopped_while_waiting};
pub use end::{best_answer, crashed, finish, halt};
use end::{complete, end_phase, fail_phase};
use reply::{check_warning, observe_reply, phase_reply, reason_reply, synthesis_reply};
pub use tool::tool_done;
pub use tool::tool_outcome;
use tool::{record_result, tool_done_as};

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1_000, "1,000"),
            (32_000, "32,000"),
            (1_234_567, "1,234,567"),
        ];
        for (n, text) in cases {
            assert_eq!(super::grouped(n), text);
        }
    }
}
