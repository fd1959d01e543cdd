//! Research mode's transitions: beginning a research run with its first stage, and after
//! each stage's phase the next stage or the report (`agent::step::research::run` decides which, from
//! the phase's result alone). Every stage is a bounded phase in its own context label,
//! begun in the same transition that ended the one before, so a worker stopped anywhere
//! resumes in the stage it was in and never redoes a finished one.

pub mod prompt;
pub mod run;

use super::*;
use crate::agent::phase::{self, Phase, PhaseResult};
use crate::state::research::{ResearchRun, Stage};
use prompt as texts;
use run::{Directive, StagePlan};

/// Makes the run `begin_run` set up in `state` a research run of at most `subtopics`
/// subtopics, at its first stage.
pub fn begin(state: &mut SessionState, subtopics: u32, now: u64) -> Result<(), TemplateError> {
    state.research = Some(ResearchRun::new(subtopics));
    begin_stage(state, now, &run::first())
}

/// Whether the current call writes a research report (its text streams to the UI).
pub(super) fn streams(state: &SessionState) -> bool {
    state
        .research
        .as_ref()
        .is_some_and(|r| r.stage == Stage::Synthesize)
}

/// Whether the run is a research run (its phases end in [`next_stage`]).
pub(super) fn is_research(state: &SessionState) -> bool {
    state.research.is_some() && state.phases.run.is_some()
}

/// The phase of the current stage ended with `reason`: begins the next stage, or ends the
/// run with the report.
pub(super) fn next_stage(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reason: StopReason,
    out: &mut Out,
) {
    let (Some(mut run), Some(phase)) = (state.research.clone(), state.phases.run.as_ref()) else {
        return;
    };
    let result = PhaseResult {
        final_text: phase.result.final_text.clone(),
        tool_calls: phase.result.tool_calls.clone(),
        stop_reason: reason,
    };
    let mut directive = run::advance(&mut run, &state.question, &result);
    if ctx.stop && matches!(directive, Directive::Run(_)) {
        // Stop pressed while the stage's last call was answered: its result is kept, and
        // the research ends there.
        directive = run::stop(&mut run);
    }
    state.research = Some(run);
    state.queued_calls.clear();
    match directive {
        Directive::Run(plan) => {
            if let Err(e) = begin_stage(state, ctx.now, &plan) {
                let error = ErrorInfo::new(RunErrorKind::Internal, e.to_string());
                end_research(state, ctx, RunStatus::Failed, Some(error), out);
            }
        }
        Directive::Finish { stopped } => {
            if reason == StopReason::BudgetExhausted {
                let message = budget_notice(state);
                state.notices.push(message.clone());
                out.emit(EventKind::Notice { message });
            }
            let status = if stopped || ctx.stop {
                RunStatus::Stopped
            } else {
                RunStatus::Completed
            };
            end_research(state, ctx, status, None, out);
        }
    }
}

/// A model failure the retries could not fix ended the current stage: the run fails with
/// the best report it has.
pub(super) fn failed(state: &mut SessionState, ctx: &StepCtx<'_>, error: ErrorInfo, out: &mut Out) {
    if let Some(run) = state.research.as_mut() {
        run::conclude(run, true);
    }
    end_research(state, ctx, RunStatus::Failed, Some(error), out);
}

/// Ends the research run with its report (cited sources checked like any answer); the
/// stages' contexts are dropped, as they are never read again.
fn end_research(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    status: RunStatus,
    error: Option<ErrorInfo>,
    out: &mut Out,
) {
    let (report, partial) = state
        .research
        .as_ref()
        .map(|r| (r.report.clone(), r.partial))
        .unwrap_or_default();
    state.phases.run = None;
    state.queued_calls.clear();
    state.phases.contexts.clear();
    finish(state, ctx, status, report, partial, error, out);
}

/// Begins `plan`'s stage: its heading in the Steps view, then its phase in a fresh context.
fn begin_stage(state: &mut SessionState, now: u64, plan: &StagePlan) -> Result<(), TemplateError> {
    let Some(run) = state.research.as_ref() else {
        return Ok(());
    };
    let offered = offer(state);
    let searchable =
        matches!(plan.stage, Stage::Research(_)) && (offered.web_search || offered.page_text);
    let message = texts::opening(state, run, plan.stage, searchable)?;
    let system = texts::research_system(state)?;
    let heading = run.heading(plan.stage);
    let phase = Phase {
        message,
        tools: Some(plan.tools.clone()),
        max_iterations: plan.max_iterations,
        continue_context: false,
        context_label: Some(ResearchRun::label(plan.stage)),
        direct_tool_calls: None,
        format: texts::format(plan.stage),
    };
    state.record(now, Item::Phase { heading });
    phase::begin(state, &system, phase);
    Ok(())
}
