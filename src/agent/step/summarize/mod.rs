//! The page summary (`summarize_page_content`) as pure transitions: the call becomes
//! [`Next::Summarize`], persisted after every model call. The page's passages are grouped
//! into sections that fit the model's window (`page::sections`); a page of one section is
//! summarised in one call, a longer one section by section (map: each summary recorded as a
//! `section_summary` entry), then the section summaries are combined (reduce). Before each
//! section the token budget is checked with room kept for the combination and the loop's
//! next call; when it cannot cover the next section, mapping stops and the summary says
//! which sections it covers ("sections 1–5 of 12; the budget allows no more"). Stop keeps
//! the sections done: they are the tool's result, and the answer is written from them.

pub mod prompt;

use super::*;
use crate::agent::step::summarize::prompt as prompts_summary;
use crate::page;
use crate::state::summary::{Shortfall, SummaryRun, SummaryStage};
use crate::tools::summarize::SummarizePageArgs;
use crate::tools::SUMMARIZE_PAGE;

/// Tokens kept for the text around the combined summary in the loop's next call, about.
const LOOP_RESERVE_TOKENS: u64 = 256;

/// Whether `name` is the summary tool (the engine runs it).
pub(super) fn is_summarize_tool(name: &str) -> bool {
    name == SUMMARIZE_PAGE
}

/// Starts a summary call (already checked against the run's policy): the page's sections
/// are fixed now. No page text, or bad arguments, is the call's error result.
pub(super) fn begin(state: &mut SessionState, ctx: &StepCtx<'_>, call: ToolCall, out: &mut Out) {
    if let Err(err) = decode_args::<SummarizePageArgs>(&call.arguments) {
        return tool_done(state, ctx, &call, Err(err), out);
    }
    let text = state
        .page
        .as_ref()
        .map(|p| p.text.clone())
        .filter(|t| !t.trim().is_empty());
    let Some(text) = text else {
        let err = ToolError::new(
            ToolErrorKind::NotFound,
            "no page text is available for this question",
        );
        return tool_done(state, ctx, &call, Err(err), out);
    };
    let index = page::index_of(&text);
    let passages = index.passages();
    // Sized for the longest label a section can have ("Section 99 of 99").
    let max = prompts_summary::section_tokens(state, 99);
    let sections = page::sections::sections(passages, &text, max);
    set_next(
        state,
        Next::Summarize(Box::new(SummaryRun::new(call, sections))),
    );
}

fn current_run(state: &SessionState) -> Option<SummaryRun> {
    match &state.next {
        Some(Next::Summarize(run)) => Some((**run).clone()),
        _ => None,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Section `index`'s heading path and text.
fn section_of(state: &SessionState, run: &SummaryRun, index: usize) -> (String, String) {
    let text = state.page.as_ref().map_or("", |p| p.text.as_str());
    let page_index = page::index_of(text);
    let passages = page_index.passages();
    let Some(range) = run.sections.get(index) else {
        return (String::new(), String::new());
    };
    let heading = passages
        .get(range.start)
        .map(page::Passage::heading_path)
        .unwrap_or_default();
    let body = page::sections::section_text(passages, text, range).to_string();
    (heading, body)
}

/// Tokens kept back before a section call: the combination of the summaries so far and
/// this one, and the loop's next call with the summary in it.
fn reserve(state: &SessionState, run: &SummaryRun) -> u64 {
    let section_cap = u64::from(prompts_summary::reply_cap(
        state,
        prompts_summary::SECTION_WORDS,
    ));
    let page_cap = u64::from(prompts_summary::reply_cap(
        state,
        prompts_summary::PAGE_WORDS,
    ));
    let combine = if run.of() > 1 {
        (count(run.done()) as u64 + 1) * section_cap + page_cap + LOOP_RESERVE_TOKENS
    } else {
        0
    };
    let next_call = state.compact.last_prompt_tokens
        + page_cap
        + LOOP_RESERVE_TOKENS
        + u64::from(state.config.max_output_tokens);
    combine + next_call
}

/// Plans the summary's next call: a section, or the combination; a call that cannot be made
/// (over budget, cut off too often) ends the mapping, or the summary, without it.
pub(super) fn plan_summarize(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    mut run: SummaryRun,
    quiet: bool,
    out: &mut Out,
) -> Action {
    match run.stage {
        SummaryStage::Map if run.done() >= run.of() => {
            run.stage = SummaryStage::Reduce;
            set_next(state, Next::Summarize(Box::new(run)));
            Action::Continue
        }
        SummaryStage::Map => {
            let index = run.done();
            let (heading, text) = section_of(state, &run, index);
            let fitted =
                prompts_summary::fit_text(&text, prompts_summary::section_tokens(state, run.of()));
            let request = match prompts_summary::section(state, index, run.of(), &heading, &fitted)
            {
                Ok(request) => request,
                Err(err) => {
                    halt(state, ctx, Halt::Failed(template_error(&err)), out);
                    return Action::Continue;
                }
            };
            let estimate = executor::estimate(&request);
            let cost = estimate + u64::from(request.max_tokens.unwrap_or(0));
            // A section cut off too often ends the mapping with the sections done.
            let shortfall = if state.attempts > state.config.max_retries {
                Some(Shortfall::CutOff)
            } else if !executor::budget_allows(state, cost + reserve(state, &run)) {
                Some(Shortfall::Budget)
            } else {
                None
            };
            if let Some(shortfall) = shortfall {
                run.shortfall = Some(shortfall);
                run.stage = SummaryStage::Reduce;
                set_next(state, Next::Summarize(Box::new(run)));
                return Action::Continue;
            }
            if !quiet {
                out.emit(EventKind::Summarizing {
                    section: Some(count(index + 1)),
                    of: count(run.of()),
                });
            }
            Action::Model(ModelCall {
                request,
                purpose: Purpose::Summarize,
                estimate,
                stream_answer: false,
            })
        }
        SummaryStage::Reduce if run.done() <= 1 => {
            finish(state, ctx, run, None, out);
            Action::Continue
        }
        SummaryStage::Reduce => {
            let request = match combine_request(state, &run) {
                Ok(request) => request,
                Err(err) => {
                    halt(state, ctx, Halt::Failed(template_error(&err)), out);
                    return Action::Continue;
                }
            };
            let estimate = executor::estimate(&request);
            if state.attempts > state.config.max_retries
                || !executor::budget_allows(state, estimate)
            {
                finish(state, ctx, run, None, out);
                return Action::Continue;
            }
            if !quiet {
                out.emit(EventKind::Summarizing {
                    section: None,
                    of: count(run.of()),
                });
            }
            Action::Model(ModelCall {
                request,
                purpose: Purpose::Summarize,
                estimate,
                stream_answer: false,
            })
        }
    }
}

/// A section's label in the combination and the joined fallback.
fn label(state: &SessionState, run: &SummaryRun, index: usize) -> String {
    let (heading, _) = section_of(state, run, index);
    if heading.is_empty() {
        format!("Section {}", index + 1)
    } else {
        format!("Section {} ({heading})", index + 1)
    }
}

/// The combination call, its summaries cut evenly when they do not fit the window.
fn combine_request(
    state: &SessionState,
    run: &SummaryRun,
) -> Result<ChatRequest, crate::template::TemplateError> {
    let labelled: Vec<(String, String)> = run
        .summaries
        .iter()
        .enumerate()
        .map(|(i, s)| (label(state, run, i), s.clone()))
        .collect();
    let covered = run.covered();
    let request = prompts_summary::combine(state, &covered, &labelled)?;
    let Some(limit) = context::limit(state) else {
        return Ok(request);
    };
    let used = context::window_use(state, &request);
    if used <= limit {
        return Ok(request);
    }
    let text_tokens: u64 = run.summaries.iter().map(|s| estimate_tokens(s)).sum();
    let room = text_tokens.saturating_sub(used - limit);
    let each = usize::try_from(room / count(run.done()).max(1) as u64).unwrap_or(0);
    let cut: Vec<(String, String)> = labelled
        .into_iter()
        .map(|(l, s)| (l, prompts_summary::fit_text(&s, each.max(16))))
        .collect();
    prompts_summary::combine(state, &covered, &cut)
}

/// A summary call answered: a section's summary is recorded and saved (the next section
/// follows), or the combination ends the summary.
pub(super) fn summary_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reply: &ChatResponse,
    out: &mut Out,
) {
    let Some(mut run) = current_run(state) else {
        return;
    };
    let summary = prompts_summary::parse_summary(&reply.content);
    match run.stage {
        SummaryStage::Map => {
            let index = run.done();
            let (heading, _) = section_of(state, &run, index);
            let text = summary.unwrap_or_else(|| "(the model wrote no summary of it)".into());
            record(
                state,
                ctx,
                Item::SectionSummary {
                    index: count(index),
                    of: count(run.of()),
                    heading,
                    text: text.clone(),
                },
            );
            run.summaries.push(text);
            set_next(state, Next::Summarize(Box::new(run)));
        }
        SummaryStage::Reduce => finish(state, ctx, run, summary, out),
    }
}

/// A summary call failed after its retries: mapping stops (the sections done are combined),
/// or the combination is replaced by the section summaries. `false`: the run is not
/// summarising.
pub(super) fn model_failed(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    err: &LlmError,
    out: &mut Out,
) -> bool {
    let Some(mut run) = current_run(state) else {
        return false;
    };
    match run.stage {
        SummaryStage::Map => {
            run.shortfall = Some(Shortfall::Failed {
                message: err.message.clone(),
            });
            run.stage = SummaryStage::Reduce;
            set_next(state, Next::Summarize(Box::new(run)));
        }
        SummaryStage::Reduce => finish(state, ctx, run, None, out),
    }
    true
}

/// Stop was pressed while summarising: the sections done are the tool's result, and the
/// answer is written from them. `false`: the run is not summarising.
pub(super) fn stopped(state: &mut SessionState, ctx: &StepCtx<'_>, out: &mut Out) -> bool {
    let Some(mut run) = current_run(state) else {
        return false;
    };
    if run.shortfall.is_none() && run.done() < run.of() {
        run.shortfall = Some(Shortfall::Stopped);
    }
    state.queued_calls.clear();
    finish(state, ctx, run, None, out);
    set_next(
        state,
        Next::Synthesize {
            why: SynthesisReason::Stopped,
        },
    );
    true
}

/// The summary is over: the loop gets the combined summary (or the section summaries, when
/// there is no combination) with what it covers; a shortfall is also a notice.
fn finish(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    run: SummaryRun,
    combined: Option<String>,
    out: &mut Out,
) {
    if run.done() == 0 {
        if run.shortfall == Some(Shortfall::CutOff) {
            // The worker, not the call, failed: nothing for the model to reflect on.
            let err = ToolError::new(
                ToolErrorKind::Network,
                "summarizing the page was cut off too often (the extension's background worker kept stopping)",
            );
            return tool_done_as(state, ctx, &run.call, Err(err), None, out);
        }
        let err = match &run.shortfall {
            Some(Shortfall::Budget) => ToolError::new(
                ToolErrorKind::RateLimited,
                format!(
                    "the token budget left does not allow summarizing the page (it has {} section{})",
                    run.of(),
                    if run.of() == 1 { "" } else { "s" }
                ),
            ),
            Some(Shortfall::Failed { message }) => ToolError::new(
                ToolErrorKind::Network,
                format!("summarizing the page failed: {message}"),
            ),
            Some(Shortfall::Stopped | Shortfall::CutOff) => ToolError::new(
                ToolErrorKind::Permission,
                "the summary was stopped by the user",
            ),
            None => ToolError::new(ToolErrorKind::NotFound, "the page has no text to summarize"),
        };
        return tool_done(state, ctx, &run.call, Err(err), out);
    }
    let summary = match combined {
        Some(text) if run.done() > 1 => text,
        _ if run.done() == 1 => run.summaries[0].clone(),
        _ => run
            .summaries
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}: {s}", label(state, &run, i)))
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    let coverage = run.coverage();
    if matches!(
        run.shortfall,
        Some(Shortfall::Budget | Shortfall::Failed { .. } | Shortfall::CutOff)
    ) {
        let message = format!("Summarized {coverage}.");
        if !state.notices.contains(&message) {
            state.notices.push(message.clone());
            out.emit(EventKind::Notice { message });
        }
    }
    let content = format!("Page summary ({coverage}).\n\n{summary}");
    tool_done(state, ctx, &run.call, Ok(content), out);
}
