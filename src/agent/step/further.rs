//! Looking further before answering: when the passage of a page that best matches the
//! question did not fit in the run's first request (a passage longer than the excerpt's
//! room, on a small context window), the run calls `query_page` with the question itself
//! after the model's first reply, whatever that reply said, and the answer is then written
//! from the passages found (a Synthesis request).
//!
//! Small models rarely decide to call a page tool: on a 1,000-character excerpt the 1.5B
//! answered from what it had, or said the page does not say. Whether the best passage was
//! given follows from the page text, the question and the excerpt alone. The answer comes
//! from a Synthesis request, not a Reason one: the system text names "The page does not
//! say.", and after the search a Reason request got that phrase from the 1.5B even with
//! the passage before it (3 of 3 attempts of the real-model tool test, and all 18 of the
//! benchmark's questions whose page was searched so). The model's first reply stays in the Steps view; the call and its
//! result are an ordinary step (persisted and retried like any other).

use super::*;

use crate::tools::{QueryPage, ReadPage, TypedTool, SUMMARIZE_PAGE};

/// Characters of the question the call looks for (`query_page`'s `query` allows 300).
const QUERY_CHARS: usize = 300;

/// How the ids of the calls the run makes itself begin.
const CALL_ID_PREFIX: &str = "further_";

/// Whether the run made `call` itself (its result goes to a Synthesis request, not to an
/// Observe request: the model has nothing of its own to judge).
pub(super) fn made(call: &ToolCall) -> bool {
    call.id.starts_with(CALL_ID_PREFIX)
}

/// Why the run looks further, shown in the Steps view.
pub const LOOKING_FURTHER: &str =
    "The passage that best matches the question did not fit in the first request, so the page is searched for it before answering.";

/// The call to make instead of ending with the model's first answer, or `None` when that
/// answer stands: not a question about page text (an explanation, research, a phase), a
/// page tool or the summary run already, no `query_page` in the run's tools, or the
/// passage that best matches the question given (always so for a page shown whole), or
/// none that shares a rare word with it.
pub(super) fn call_for(state: &SessionState, ctx: &StepCtx<'_>) -> Option<ToolCall> {
    if state.selection.is_some() || state.research.is_some() || state.phases.run.is_some() {
        return None;
    }
    let text = state.page.as_ref().map(|p| p.text.as_str())?;
    let looked = state.trajectory.iter().any(|e| {
        matches!(&e.item, Item::ToolCall { call }
            if [QueryPage::NAME, ReadPage::NAME, SUMMARIZE_PAGE].contains(&call.name.as_str()))
    });
    if looked || ctx.tools.definition(QueryPage::NAME).is_none() {
        return None;
    }
    let index = crate::page::index_of(text);
    let best = index.search(text, &state.question, 1).first()?.index;
    if state.passages_given().contains(&best) || !index.matches_rare_word(&state.question, best) {
        return None;
    }
    let query = crate::types::text::clip(state.question.trim(), QUERY_CHARS).0;
    Some(ToolCall {
        id: format!("{CALL_ID_PREFIX}{}_{}", state.step, state.trajectory.len()),
        name: QueryPage::NAME.to_string(),
        arguments: kljson::to_string(&serde_json::json!({ "query": query })),
    })
}

/// Takes back the streamed answer and queues `call`: the model's reply is already in the
/// trajectory; the derived thought says why the run goes on (and keeps the reply out of the
/// call's assistant message, so the model reads the passages, not its own first answer).
pub(super) fn look(state: &mut SessionState, ctx: &StepCtx<'_>, call: ToolCall, out: &mut Out) {
    out.emit(EventKind::AnswerReset);
    state.draft.clear();
    record(state, ctx, Item::derived_thought(LOOKING_FURTHER));
    queue_calls(state, ctx, vec![call]);
}
