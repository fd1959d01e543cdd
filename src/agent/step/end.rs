//! Transitions that end a run or a phase: halting early, finishing with an answer and the
//! terminal event, and the best answer a run has without another call.

use super::*;
use crate::agent::prompts::ABSTAIN;
use crate::tools::SEARCH_WEB;

/// Ends a bounded phase with `reason`; the run completes with the phase's last text.
pub(super) fn end_phase(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reason: StopReason,
    out: &mut Out,
) {
    let text = match state.phases.run.as_mut() {
        Some(PhaseRun { result, .. }) => {
            result.stop_reason = Some(reason);
            result.final_text.clone()
        }
        None => String::new(),
    };
    if research::is_research(state) {
        return research::next_stage(state, ctx, reason, out);
    }
    state.queued_calls.clear();
    finish(
        state,
        ctx,
        RunStatus::Completed,
        text,
        reason != StopReason::Done,
        None,
        out,
    );
}

pub(super) fn fail_phase(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    error: ErrorInfo,
    out: &mut Out,
) {
    if research::is_research(state) {
        return research::failed(state, ctx, error, out);
    }
    state.queued_calls.clear();
    let text = state
        .phases
        .run
        .as_ref()
        .map(|p| p.result.final_text.clone())
        .unwrap_or_default();
    finish(state, ctx, RunStatus::Failed, text, true, Some(error), out);
}

/// Ends the run early for `why`, with the best answer it has.
pub fn halt(state: &mut SessionState, ctx: &StepCtx<'_>, why: Halt, out: &mut Out) {
    if state.phases.run.is_some() {
        return match why {
            Halt::Budget => end_phase(state, ctx, StopReason::BudgetExhausted, out),
            Halt::Failed(error) => fail_phase(state, ctx, error, out),
            Halt::Stopped | Halt::Interrupted => {
                end_phase(state, ctx, StopReason::StopRequested, out)
            }
        };
    }
    let best = best_answer(state);
    match why {
        Halt::Budget => {
            let message = budget_notice(state);
            state.notices.push(message.clone());
            out.emit(EventKind::Notice { message });
            let status = if ctx.stop {
                RunStatus::Stopped
            } else {
                RunStatus::Completed
            };
            finish(state, ctx, status, best, true, None, out);
        }
        Halt::Failed(error) => finish(state, ctx, RunStatus::Failed, best, true, Some(error), out),
        Halt::Stopped => finish(state, ctx, RunStatus::Stopped, best, true, None, out),
        // Stopped while the answer was being written: it ends where it was, as the user saw
        // it, without another call. (Not text that begins a tool call or a control block:
        // that goes to the stopped synthesis as before.)
        Halt::Interrupted if reads_as_answer(ctx, &state.draft) => {
            let shown = state.draft.trim().to_string();
            finish(state, ctx, RunStatus::Stopped, shown, true, None, out);
        }
        Halt::Interrupted => {
            out.emit(EventKind::AnswerReset);
            state.draft.clear();
            if matches!(state.next, Some(Next::Synthesize { .. })) {
                finish(state, ctx, RunStatus::Stopped, best, true, None, out);
            } else {
                set_next(
                    state,
                    Next::Synthesize {
                        why: SynthesisReason::Stopped,
                    },
                );
            }
        }
    }
}

pub(super) fn complete(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    answer: String,
    partial: bool,
    out: &mut Out,
) {
    finish(state, ctx, RunStatus::Completed, answer, partial, None, out);
}

/// Ends the run: status, answer, the `Answer` item, and the terminal event (sent by the
/// driver once this state is saved, so a snapshot taken on it never shows the run going).
pub fn finish(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    status: RunStatus,
    answer: String,
    partial: bool,
    error: Option<ErrorInfo>,
    out: &mut Out,
) {
    let answer = crate::agent::fence::Fence::new(&state.nonce).strip(&answer);
    let answer = match unsupported(state, status, &answer) {
        Some(terms) => {
            // The model's answer stays in the Steps view, with why it was not given.
            let note = format!(
                "The answer named {} and the page does not, so it was replaced by \"{ABSTAIN}\". The model's answer: {answer}",
                quoted(&terms)
            );
            record(
                state,
                ctx,
                Item::Thought {
                    text: note,
                    derived: true,
                },
            );
            ABSTAIN.to_string()
        }
        None => answer,
    };
    let answer = without_leaking_links(state, ctx, answer);
    let answer = if state.phases.run.is_none() {
        let (answer, notice) = with_sources(state, &answer);
        if let Some(message) = notice {
            out.emit(EventKind::Notice { message });
        }
        answer
    } else {
        answer
    };
    state.status = status;
    state.next = None;
    state.attempts = 0;
    state.answer = answer.clone();
    state.partial = partial;
    state.ended_at = Some(ctx.now);
    state.draft.clear();
    if !answer.is_empty() {
        record(
            state,
            ctx,
            Item::Answer {
                text: answer.clone(),
                partial,
            },
        );
    }
    // The sources travel with the answer, so a UI never shows it without its citations.
    let sources = state.sources.clone();
    out.terminal = Some(match (status, error) {
        (RunStatus::Failed, Some(error)) => {
            state.error = Some(error.clone());
            EventKind::Failed {
                error,
                answer,
                sources,
            }
        }
        (RunStatus::TimedOut, Some(error)) => {
            state.error = Some(error.clone());
            EventKind::TimedOut {
                error,
                answer,
                sources,
            }
        }
        (RunStatus::Stopped, _) => EventKind::Stopped { answer, sources },
        _ => EventKind::Completed {
            answer,
            partial,
            sources,
        },
    });
}

/// `answer` with every link that carries the session's text replaced by its text and a
/// note ([`crate::agent::links`]); each removal is said in the Steps view.
fn without_leaking_links(state: &mut SessionState, ctx: &StepCtx<'_>, answer: String) -> String {
    let (answer, removed) = {
        let mut known: Vec<&str> = vec![state.question.as_str()];
        known.extend(state.page.as_ref().map(|p| p.text.as_str()));
        if let Some(selection) = &state.selection {
            known.extend([selection.text.as_str(), selection.context.as_str()]);
        }
        for turn in &state.turns {
            known.extend([turn.question.as_str(), turn.answer.as_str()]);
        }
        for entry in &state.trajectory {
            match &entry.item {
                Item::ToolResult { content, .. } => known.push(content),
                Item::SectionSummary { text, .. } => known.push(text),
                _ => {}
            }
        }
        let mut own: Vec<&str> = state.page.iter().map(|p| p.url.as_str()).collect();
        for entry in &state.trajectory {
            if let Item::Search { hits, .. } = &entry.item {
                own.extend(hits.iter().map(|h| h.url.as_str()));
            }
        }
        crate::agent::links::disarm(&answer, &known, &own)
    };
    for host in removed {
        let text = format!("A link to {host} in the answer was shown as text: its address carried text from this page or conversation.");
        record(state, ctx, Item::derived_thought(text));
    }
    answer
}

/// `answer` without citations of sources the run does not have; the sources it cites are
/// kept in the state. When the model was not given the whole page, a notice says how much
/// of it the answer rests on (returned when it is new, to be emitted).
fn with_sources(state: &mut SessionState, answer: &str) -> (String, Option<String>) {
    let available = state.available_sources();
    let ids: Vec<&str> = available.iter().map(|s| s.id.as_str()).collect();
    let cleaned = citations::clean(answer, &ids);
    state.sources = cleaned
        .cited
        .iter()
        .filter_map(|id| available.iter().find(|s| &s.id == id).cloned())
        .collect();
    let mut added = None;
    if let Some((given, total)) = state.page_coverage().filter(|_| !cleaned.text.is_empty()) {
        let notice = coverage_notice(given, total);
        if !state.notices.contains(&notice) {
            state.notices.push(notice.clone());
            added = Some(notice);
        }
    }
    (cleaned.text, added)
}

/// What an answer rests on when the model was not given the whole page.
pub fn coverage_notice(given: usize, total: usize) -> String {
    format!(
        "Based on {given} of the page's {total} passages{}.",
        if given == 0 {
            " (the page text did not fit the model's window)"
        } else {
            ", chosen for the question"
        }
    )
}

/// The best answer the run has without another call: the last final answer an
/// observation gave, else the last substantial thing the model wrote.
pub fn best_answer(state: &SessionState) -> String {
    state
        .trajectory
        .iter()
        .rev()
        .find_map(|e| match &e.item {
            Item::Observation {
                final_answer: Some(a),
                ..
            } => Some(a.clone()),
            Item::Observation { text, .. }
            | Item::Thought {
                text,
                derived: false,
            } if !text.trim().is_empty() && control::parse(text).is_none() => {
                Some(text.trim().to_string())
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// The run was driven [`crate::state::MAX_DRIVE_ATTEMPTS`] times in a row without a
/// completed transition (each worker crashed, or was stopped, first): it fails with what it
/// has. It does as little as it can, because the state is suspect: no prompt, no citation
/// clean-up, nothing that could trip over the same data again.
pub fn crashed(state: &mut SessionState, ctx: &StepCtx<'_>, out: &mut Out) {
    let error = ErrorInfo::new(RunErrorKind::Internal, crate::state::CRASHED_TWICE);
    state.status = RunStatus::Failed;
    state.next = None;
    state.attempts = 0;
    state.queued_calls.clear();
    state.input.pending = None;
    state.partial = true;
    state.ended_at = Some(ctx.now);
    state.draft.clear();
    state.error = Some(error.clone());
    record(
        state,
        ctx,
        Item::Error {
            error: error.clone(),
            retrying: false,
        },
    );
    out.terminal = Some(EventKind::Failed {
        error,
        answer: state.answer.clone(),
        sources: state.sources.clone(),
    });
}

/// The names and numbers of a completed answer about a page when none of them is in what
/// the run read (`agent::grounding`); `None` when the check does not apply: not a question
/// about page text (an explanation, research, web search results, no page text), or not a
/// completed run.
pub(super) fn unsupported(
    state: &SessionState,
    status: RunStatus,
    answer: &str,
) -> Option<Vec<String>> {
    let page = state.page.as_ref().filter(|p| !p.text.is_empty())?;
    let searched = state
        .trajectory
        .iter()
        .any(|e| matches!(&e.item, Item::ToolResult { name, ok: true, .. } if name == SEARCH_WEB));
    if status != RunStatus::Completed
        || state.phases.run.is_some()
        || state.research.is_some()
        || state.selection.is_some()
        || searched
        || answer.trim() == ABSTAIN
    {
        return None;
    }
    let mut known: Vec<&str> = vec![&page.title, &page.url, &page.text];
    for turn in &state.turns {
        known.push(&turn.question);
        known.push(&turn.answer);
    }
    known.extend(state.input.kept_answers.iter().map(String::as_str));
    if let Some(compaction) = &state.compact.compaction {
        known.push(&compaction.summary);
    }
    // Successful results only: a failed query_page repeats the model's own words.
    for entry in &state.trajectory {
        if let Item::ToolResult {
            content, ok: true, ..
        } = &entry.item
        {
            known.push(content);
        }
    }
    crate::agent::grounding::unsupported(answer, &state.question, &known)
}

/// `terms` as `"a"`, `"a" and "b"`, or `"a", "b" and "c"`.
fn quoted(terms: &[String]) -> String {
    let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// Whether streamed text is the start of an answer: not empty, and not the start of a call
/// or a control block written as text (JSON, markup, a code fence, or a call to one of the
/// run's tools).
fn reads_as_answer(ctx: &StepCtx<'_>, draft: &str) -> bool {
    let text = draft.trim();
    if text.is_empty() || text.starts_with(['{', '<', '[', '`']) {
        return false;
    }
    let tools: Vec<String> = ctx.tools.definitions().map(|d| d.name.clone()).collect();
    crate::tools::parse::tool_call_in_text(text, &tools).is_none()
        && crate::agent::control::parse(text).is_none()
}
