//! The search phase (agentic RAG) as pure transitions: a search tool call
//! becomes [`Next::Search`], persisted after every stage. `search_web_for_info` searches
//! (a failure retried once), grades every result in one batched model call per page of
//! results, and when fewer than [`RELEVANT_THRESHOLD_PCT`] percent are relevant rewrites
//! the query and searches again (at most [`MAX_REWRITES`](crate::state::search::MAX_REWRITES) rewrites, [`MAX_SEARCHES`]
//! searches; a rewrite equal to an earlier query is asked for once more). The loop gets
//! the relevant results, numbered for citation; when there are none, the answer comes from
//! the model alone with a disclaimer saying why (property 14). `grade_search_results` and
//! `rewrite_search_query` run one stage each.

pub mod prompt;

use super::*;
use crate::agent::step::search::prompt as prompts_search;
use crate::ports::SearchQuery;
use crate::state::search::{
    normalized, Fallback, Grade, QueryRound, SearchMode, SearchRun, SearchStage, Verdict,
    GRADES_PER_CALL, MAX_SEARCHES, RELEVANT_THRESHOLD_PCT, RESULTS_PER_SEARCH,
};
use crate::state::trajectory::{Graded, Hit};
use crate::tools::search::{
    check_page_text, checked_query, GradeResultsArgs, RewriteQueryArgs, SearchWebArgs, MAX_GRADED,
};
use crate::tools::{GRADE_RESULTS, REWRITE_QUERY, SEARCH_WEB};
use crate::types::{SearchError, SearchResult};

/// Characters of a result's content the loop gets.
pub const RESULT_CHARS: usize = 1_500;

/// Whether `name` is one of the search tools (the engine runs them).
pub(super) fn is_search_tool(name: &str) -> bool {
    [SEARCH_WEB, GRADE_RESULTS, REWRITE_QUERY].contains(&name)
}

/// Starts a search tool call (already checked against the run's policy): its arguments
/// decoded, the search begins. Bad arguments are the call's error result.
pub(super) fn begin(state: &mut SessionState, ctx: &StepCtx<'_>, call: ToolCall, out: &mut Out) {
    let run = search_run(&call).and_then(|run| {
        let query = run.current().map(|r| r.query.as_str()).unwrap_or_default();
        check_page_text(query, &page_texts(state))?;
        Ok(run)
    });
    match run {
        Ok(run) => set_next(state, Next::Search(Box::new(run))),
        Err(err) => tool_done(state, ctx, &call, Err(err), out),
    }
}

/// The page's text a query may not carry to the search provider: the page, the selection
/// and its paragraph.
fn page_texts(state: &SessionState) -> Vec<&str> {
    let page = state.page.as_ref().map(|p| p.text.as_str());
    let selection = state.selection.as_ref();
    let selected = selection
        .into_iter()
        .flat_map(|s| [s.text.as_str(), s.context.as_str()]);
    page.into_iter().chain(selected).collect()
}

fn search_run(call: &ToolCall) -> Result<SearchRun, ToolError> {
    let run = |mode, round, stage| SearchRun {
        call: call.clone(),
        mode,
        rounds: vec![round],
        stage,
        problem: String::new(),
    };
    match call.name.as_str() {
        GRADE_RESULTS => {
            let args = decode_args::<GradeResultsArgs>(&call.arguments)?;
            if args.results.is_empty() || args.results.len() > MAX_GRADED {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    format!(
                        "\"results\" must hold 1 to {MAX_GRADED} results (got {})",
                        args.results.len()
                    ),
                ));
            }
            let mut round = QueryRound::new(checked_query(&args.query)?);
            round.results = args
                .results
                .into_iter()
                .map(|r| SearchResult {
                    title: r.title,
                    url: r.url,
                    content: r.snippet.clone(),
                    snippet: r.snippet,
                })
                .collect();
            Ok(run(
                SearchMode::GradeOnly,
                round,
                SearchStage::Grade { from: 0 },
            ))
        }
        REWRITE_QUERY => {
            let args = decode_args::<RewriteQueryArgs>(&call.arguments)?;
            let round = QueryRound::new(checked_query(&args.query)?);
            let mut run = run(
                SearchMode::RewriteOnly,
                round,
                SearchStage::Rewrite { reask: false },
            );
            run.problem = prompts_search::one_line(&args.problem, 300);
            if run.problem.is_empty() {
                run.problem = "it found nothing useful".into();
            }
            Ok(run)
        }
        _ => {
            let args = decode_args::<SearchWebArgs>(&call.arguments)?;
            Ok(run(
                SearchMode::Full,
                QueryRound::new(checked_query(&args.query)?),
                SearchStage::Search { failures: 0 },
            ))
        }
    }
}

/// Plans the search's next stage: a search, a grading call or a rewrite call; a stage whose
/// call cannot be made (over budget, too large, cut off too often) goes on without it.
pub(super) fn plan_search(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    mut run: SearchRun,
    quiet: bool,
    out: &mut Out,
) -> Action {
    let Some(round) = run.current().cloned() else {
        finish(state, ctx, run, None, out);
        return Action::Continue;
    };
    match run.stage {
        SearchStage::Search { .. } => {
            if !quiet {
                out.emit(EventKind::Searching {
                    query: round.query.clone(),
                });
            }
            // The page's language when known, else the service's default (the browser's).
            let language = [
                state.selection.as_ref().map(|s| s.lang.as_str()),
                state.page.as_ref().map(|p| p.lang.as_str()),
            ]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string);
            Action::Search(SearchQuery {
                text: round.query,
                limit: RESULTS_PER_SEARCH,
                language,
            })
        }
        SearchStage::Grade { from } => {
            let end = (from + GRADES_PER_CALL).min(round.results.len());
            if from >= end {
                graded(state, ctx, run, out);
                return Action::Continue;
            }
            let page = &round.results[from..end];
            let request = match prompts_search::grade(state, &round.query, page) {
                Ok(request) => request,
                Err(err) => {
                    halt(state, ctx, Halt::Failed(template_error(&err)), out);
                    return Action::Continue;
                }
            };
            let estimate = executor::estimate(&request);
            let problem = if state.attempts > state.config.max_retries {
                Some("grading was cut off too often")
            } else if !executor::budget_allows(state, estimate) {
                Some("the token budget does not allow grading")
            } else if context::limit(state)
                .is_some_and(|l| context::window_use(state, &request) > l)
            {
                Some("the results are too long to grade within the model's context window")
            } else {
                None
            };
            if let Some(problem) = problem {
                add_grades(&mut run, vec![Grade::ungraded(problem); end - from]);
                set_next(state, Next::Search(Box::new(run)));
                return Action::Continue;
            }
            if !quiet {
                out.emit(EventKind::Grading {
                    count: u32::try_from(end - from).unwrap_or(u32::MAX),
                });
            }
            Action::Model(ModelCall {
                request,
                purpose: Purpose::Grade,
                estimate,
                stream_answer: false,
            })
        }
        SearchStage::Rewrite { reask } => {
            let request = match prompts_search::rewrite(state, &run, reask) {
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
                finish(state, ctx, run, Some(Fallback::RewritesExhausted), out);
                return Action::Continue;
            }
            if !quiet {
                out.emit(EventKind::Rewriting);
            }
            Action::Model(ModelCall {
                request,
                purpose: Purpose::Rewrite,
                estimate,
                stream_answer: false,
            })
        }
    }
}

fn current_run(state: &SessionState) -> Option<SearchRun> {
    match &state.next {
        Some(Next::Search(run)) => Some((**run).clone()),
        _ => None,
    }
}

fn hit(result: &SearchResult) -> Hit {
    Hit {
        title: result.title.clone(),
        url: result.url.clone(),
        snippet: result.snippet.clone(),
    }
}

/// The search came back (`None`: Stop was pressed during it).
pub fn after_search(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    result: Option<Result<Vec<SearchResult>, SearchError>>,
    out: &mut Out,
) {
    let Some(mut run) = current_run(state) else {
        return;
    };
    let round_no = u32::try_from(run.rounds.len().saturating_sub(1)).unwrap_or(u32::MAX);
    let failures = match run.stage {
        SearchStage::Search { failures } => failures,
        _ => 0,
    };
    let query = run.current().map(|r| r.query.clone()).unwrap_or_default();
    match result {
        None => {
            let stopped = ToolError::new(
                ToolErrorKind::Permission,
                "the search was stopped by the user",
            );
            tool_done(state, ctx, &run.call, Err(stopped), out);
        }
        Some(Ok(mut results)) => {
            // A server may send more than was asked for; never more than asked is kept.
            results.truncate(RESULTS_PER_SEARCH);
            record(
                state,
                ctx,
                Item::Search {
                    query,
                    round: round_no,
                    hits: results.iter().map(hit).collect(),
                    error: None,
                    retrying: false,
                },
            );
            if let Some(round) = run.current_mut() {
                round.results = results;
                round.grades.clear();
            }
            run.stage = SearchStage::Grade { from: 0 };
            set_next(state, Next::Search(Box::new(run)));
        }
        Some(Err(err)) => {
            let retrying = failures == 0 && err.is_retryable();
            let message = err.message.clone();
            record(
                state,
                ctx,
                Item::Search {
                    query,
                    round: round_no,
                    hits: Vec::new(),
                    error: Some(err),
                    retrying,
                },
            );
            if retrying {
                run.stage = SearchStage::Search {
                    failures: failures + 1,
                };
                set_next(state, Next::Search(Box::new(run)));
            } else {
                finish(
                    state,
                    ctx,
                    run,
                    Some(Fallback::Unreachable { message }),
                    out,
                );
            }
        }
    }
}

/// Adds grades for the next results of the current round, and moves to the next page.
fn add_grades(run: &mut SearchRun, grades: Vec<Grade>) {
    let Some(round) = run.current_mut() else {
        return;
    };
    let n = grades.len();
    round.grades.extend(grades);
    if let SearchStage::Grade { from } = &mut run.stage {
        *from += n;
    }
}

/// A grading call answered: one grade per result of its page; a result the reply does not
/// grade is ungraded.
pub(super) fn grade_reply(state: &mut SessionState, reply: &ChatResponse) {
    let Some(mut run) = current_run(state) else {
        return;
    };
    let count = page_len(&run);
    let grades = match prompts_search::parse_grades(&reply.content, count) {
        Some(grades) => grades
            .into_iter()
            .map(|g| g.unwrap_or_else(|| Grade::ungraded("the grader gave this result no grade")))
            .collect(),
        None => vec![Grade::ungraded("the grader's reply could not be read"); count],
    };
    add_grades(&mut run, grades);
    set_next(state, Next::Search(Box::new(run)));
}

/// Results in the page the current grading call grades.
fn page_len(run: &SearchRun) -> usize {
    match (&run.stage, run.current()) {
        (SearchStage::Grade { from }, Some(round)) => {
            (from + GRADES_PER_CALL).min(round.results.len()) - from.min(&round.results.len())
        }
        _ => 0,
    }
}

/// A rewrite call answered: a new query is searched; one equal to an earlier query, one
/// holding page text (or none) is asked for once more, then the rewrites are exhausted.
pub(super) fn rewrite_reply(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reply: &ChatResponse,
    out: &mut Out,
) {
    let Some(mut run) = current_run(state) else {
        return;
    };
    let reask = matches!(run.stage, SearchStage::Rewrite { reask: true });
    // A rewrite carrying page text is no query either: asked for once more.
    let new = prompts_search::parse_rewrite(&reply.content).filter(|q| {
        let n = normalized(q);
        run.rounds.iter().all(|r| normalized(&r.query) != n)
            && check_page_text(q, &page_texts(state)).is_ok()
    });
    let Some(new) = new else {
        if reask {
            finish(state, ctx, run, Some(Fallback::RewritesExhausted), out);
        } else {
            run.stage = SearchStage::Rewrite { reask: true };
            set_next(state, Next::Search(Box::new(run)));
        }
        return;
    };
    let from = run.current().map(|r| r.query.clone()).unwrap_or_default();
    record(
        state,
        ctx,
        Item::Rewrite {
            from,
            to: new.clone(),
            reason: run.problem.clone(),
        },
    );
    if run.mode == SearchMode::RewriteOnly {
        tool_done(state, ctx, &run.call, Ok(new), out);
        return;
    }
    run.rounds.push(QueryRound::new(new));
    run.stage = SearchStage::Search { failures: 0 };
    set_next(state, Next::Search(Box::new(run)));
}

/// A grading or rewrite call failed after its retries: recorded; grading goes on with the
/// page ungraded, a rewrite ends the search. `false`: the run is not searching.
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
        SearchStage::Grade { .. } => {
            let count = page_len(&run);
            let reason = format!("grading failed: {}", err.message);
            add_grades(&mut run, vec![Grade::ungraded(reason); count]);
            set_next(state, Next::Search(Box::new(run)));
        }
        _ => finish(state, ctx, run, Some(Fallback::RewritesExhausted), out),
    }
    true
}

/// Every result of the current round is graded: recorded; then the search is done, or the
/// query is rewritten.
fn graded(state: &mut SessionState, ctx: &StepCtx<'_>, mut run: SearchRun, out: &mut Out) {
    let Some(round) = run.current().cloned() else {
        return finish(state, ctx, run, None, out);
    };
    if !round.results.is_empty() {
        record(
            state,
            ctx,
            Item::Grades {
                query: round.query.clone(),
                graded: round
                    .results
                    .iter()
                    .zip(&round.grades)
                    .map(|(r, g)| Graded {
                        hit: hit(r),
                        grade: g.clone(),
                    })
                    .collect(),
            },
        );
    }
    let all_ungraded =
        !round.results.is_empty() && round.count(Verdict::Ungraded) == round.results.len();
    if run.mode != SearchMode::Full
        || all_ungraded
        || round.relevant_pct() >= RELEVANT_THRESHOLD_PCT
    {
        return finish(state, ctx, run, None, out);
    }
    if run.searches() >= MAX_SEARCHES {
        return finish(state, ctx, run, Some(Fallback::RewritesExhausted), out);
    }
    run.problem = problem(&round);
    run.stage = SearchStage::Rewrite { reask: false };
    set_next(state, Next::Search(Box::new(run)));
}

/// Why a round's results were not good enough, for the rewrite.
fn problem(round: &QueryRound) -> String {
    if round.results.is_empty() {
        return "it found no results".into();
    }
    let relevant = round.count(Verdict::Relevant);
    let reasons: Vec<&str> = round
        .grades
        .iter()
        .filter(|g| g.verdict == Verdict::NotRelevant && !g.reason.is_empty())
        .map(|g| g.reason.as_str())
        .take(3)
        .collect();
    let mut text = format!(
        "only {relevant} of {} results {} relevant",
        round.results.len(),
        if relevant == 1 { "was" } else { "were" }
    );
    if !reasons.is_empty() {
        text.push_str(&format!(" ({})", reasons.join("; ")));
    }
    text
}

mod finish;
pub use finish::disclaimer;
use finish::finish;
