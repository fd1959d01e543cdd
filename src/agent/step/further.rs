//! Looking further before giving up: when the model answers a question about a page it was
//! given only part of with "The page does not say" (or with an answer whose names and
//! numbers the page does not hold, `agent::grounding`), and the run has not searched the
//! page yet, the run calls `query_page` with the question itself instead of ending.
//!
//! Small models rarely decide to call a page tool, and when they are told how to abstain
//! they abstain rather than look; with this rule they can be told both, and the run looks
//! for them. The model's reply stays in the Steps view; the call and its result are an
//! ordinary step (persisted, retried, observed like any other).

use super::reply::queue_calls;
use super::*;
use crate::agent::prompts::ABSTAIN;
use crate::tools::{QueryPage, ReadPage, TypedTool, SUMMARIZE_PAGE};

/// Characters of the question the call looks for (`query_page`'s `query` allows 300).
const QUERY_CHARS: usize = 300;

/// Why the run looks further, shown in the Steps view.
pub const LOOKING_FURTHER: &str =
    "The passages the model was given did not answer the question, so the rest of the page is searched for it.";

/// The call to make instead of ending with `answer`, or `None` when the answer stands: not
/// a question about page text (an explanation, research, a phase), the whole page given
/// already, a page tool or the summary run already, no `query_page` in the run's tools, or
/// an answer the page supports.
pub(super) fn call_for(state: &SessionState, ctx: &StepCtx<'_>, answer: &str) -> Option<ToolCall> {
    if state.selection.is_some() || state.research.is_some() || state.phase.is_some() {
        return None;
    }
    state.page_coverage()?;
    let looked = state.trajectory.iter().any(|e| {
        matches!(&e.item, Item::ToolCall { call }
            if [QueryPage::NAME, ReadPage::NAME, SUMMARIZE_PAGE].contains(&call.name.as_str()))
    });
    if looked || ctx.tools.definition(QueryPage::NAME).is_none() {
        return None;
    }
    let abstained = answer.trim() == ABSTAIN;
    if !abstained && end::unsupported(state, RunStatus::Completed, answer).is_none() {
        return None;
    }
    let query = crate::types::text::clip(state.question.trim(), QUERY_CHARS).0;
    if query.is_empty() {
        return None;
    }
    Some(ToolCall {
        id: format!("call_{}_{}", state.step, state.trajectory.len()),
        name: QueryPage::NAME.to_string(),
        arguments: crate::types::json::to_string(&serde_json::json!({ "query": query })),
    })
}

/// Takes back the streamed answer and queues `call`: the model's reply is already in the
/// trajectory; the derived thought says why the run goes on (and keeps the reply out of the
/// call's assistant message, so the model does not read its own "does not say" again).
pub(super) fn look(state: &mut SessionState, ctx: &StepCtx<'_>, call: ToolCall, out: &mut Out) {
    out.emit(EventKind::AnswerReset);
    state.draft.clear();
    record(state, ctx, Item::derived_thought(LOOKING_FURTHER));
    queue_calls(state, ctx, vec![call]);
}
