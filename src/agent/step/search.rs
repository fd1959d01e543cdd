//! The search phase (seed 004 §6, agentic RAG) as pure transitions: a search tool call
//! becomes [`Next::Search`], persisted after every stage. `search_web_for_info` searches
//! (a failure retried once), grades every result in one batched model call per page of
//! results, and when fewer than [`RELEVANT_THRESHOLD_PCT`] percent are relevant rewrites
//! the query and searches again (at most [`MAX_REWRITES`] rewrites, [`MAX_SEARCHES`]
//! searches; a rewrite equal to an earlier query is asked for once more). The loop gets
//! the relevant results, numbered for citation; when there are none, the answer comes from
//! the model alone with a disclaimer saying why (property 14). `grade_search_results` and
//! `rewrite_search_query` run one stage each.

use super::*;
use crate::agent::prompts::search as prompts_search;
use crate::ports::SearchQuery;
use crate::state::search::{
    normalized, Fallback, Grade, QueryRound, SearchMode, SearchRun, SearchStage, Verdict,
    GRADES_PER_CALL, MAX_SEARCHES, RELEVANT_THRESHOLD_PCT, RESULTS_PER_SEARCH,
};
use crate::state::trajectory::{Graded, Hit};
use crate::tools::search::{
    checked_query, GradeResultsArgs, RewriteQueryArgs, SearchWebArgs, MAX_GRADED,
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
    match search_run(&call) {
        Ok(run) => set_next(state, Next::Search(Box::new(run))),
        Err(err) => tool_done(state, ctx, &call, Err(err), out),
    }
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
            round.searched = true;
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
            let mut round = QueryRound::new(checked_query(&args.query)?);
            round.searched = true;
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
                round.searched = true;
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

/// A rewrite call answered: a new query is searched; one equal to an earlier query (or
/// none) is asked for once more, then the rewrites are exhausted.
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
    let new = prompts_search::parse_rewrite(&reply.content).filter(|q| {
        let q = normalized(q);
        run.rounds.iter().all(|r| normalized(&r.query) != q)
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

/// The search is over: the loop gets the relevant results (numbered as the answer cites
/// them), or the ungraded ones, or nothing and the disclaimer of `why`.
fn finish(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    run: SearchRun,
    why: Option<Fallback>,
    out: &mut Out,
) {
    let call = run.call.clone();
    match run.mode {
        SearchMode::RewriteOnly => {
            let err = ToolError::new(
                ToolErrorKind::NotFound,
                "no query different from the one given could be found",
            );
            return tool_done(state, ctx, &call, Err(err), out);
        }
        SearchMode::GradeOnly => {
            let content = grades_text(state, &run);
            return tool_done(state, ctx, &call, Ok(content), out);
        }
        SearchMode::Full => {}
    }
    let numbers: Vec<(u32, String)> = state
        .web_sources()
        .into_iter()
        .map(|(n, h)| (n, h.url.clone()))
        .collect();
    let mut relevant: Vec<(u32, &SearchResult)> = Vec::new();
    for round in &run.rounds {
        for (result, grade) in round.results.iter().zip(&round.grades) {
            let n = numbers.iter().find(|(_, url)| *url == result.url);
            if let (Verdict::Relevant, Some((n, _))) = (grade.verdict, n) {
                if !relevant.iter().any(|(m, _)| m == n) {
                    relevant.push((*n, result));
                }
            }
        }
    }
    let queries: Vec<String> = run
        .rounds
        .iter()
        .map(|r| format!("\"{}\"", r.query))
        .collect();
    let searched = format!("Web search ({}: {})", queries.len(), queries.join(", "));
    if !relevant.is_empty() {
        let listed: Vec<String> = relevant
            .iter()
            .map(|(n, r)| result_text(&format!("[{n}]"), r))
            .collect();
        let content = format!(
            "{searched}. Relevant results:\n\n{}\n\nCite these results as [n] where you use them; cite nothing else.",
            listed.join("\n\n")
        );
        return tool_done(state, ctx, &call, Ok(content), out);
    }
    let ungraded: Vec<&SearchResult> = run
        .current()
        .map(|round| {
            round
                .results
                .iter()
                .zip(&round.grades)
                .filter(|(_, g)| g.verdict == Verdict::Ungraded)
                .map(|(r, _)| r)
                .collect()
        })
        .unwrap_or_default();
    let (fallback, content) = if ungraded.is_empty() {
        let fallback = why.unwrap_or(Fallback::RewritesExhausted);
        let content = format!(
            "{searched}: no usable results ({}). Answer from your own knowledge, and say that no web source could be found.",
            reason(&fallback, &run)
        );
        (fallback, content)
    } else {
        let message = run
            .current()
            .and_then(|r| r.grades.iter().find(|g| g.verdict == Verdict::Ungraded))
            .map(|g| g.reason.clone())
            .unwrap_or_default();
        let listed: Vec<String> = ungraded.iter().map(|r| result_text("-", r)).collect();
        let content = format!(
            "{searched}. These results could not be checked for relevance; use them with care and do not cite them:\n\n{}",
            listed.join("\n\n")
        );
        (Fallback::Ungraded { message }, content)
    };
    let message = disclaimer(&fallback, &run);
    record(
        state,
        ctx,
        Item::SearchFallback {
            fallback,
            message: message.clone(),
        },
    );
    if !state.notices.contains(&message) {
        state.notices.push(message.clone());
        out.emit(EventKind::Notice { message });
    }
    tool_done(state, ctx, &call, Ok(content), out);
}

fn result_text(label: &str, result: &SearchResult) -> String {
    let (content, cut) = context::clip(result.content.trim(), RESULT_CHARS);
    let more = if cut { "…" } else { "" };
    format!(
        "{label} {} — {}\n{content}{more}",
        result.title.trim(),
        result.url
    )
}

/// The grades of a `grade_search_results` call, one line per result; a relevant result
/// says the number the answer cites it by.
fn grades_text(state: &SessionState, run: &SearchRun) -> String {
    let Some(round) = run.current() else {
        return String::new();
    };
    let numbers = state.web_sources();
    round
        .results
        .iter()
        .zip(&round.grades)
        .map(|(r, g)| {
            let confidence = g
                .confidence
                .map(|c| format!(", confidence {:.2}", c.get()))
                .unwrap_or_default();
            let cite = numbers
                .iter()
                .find(|(_, h)| g.verdict == Verdict::Relevant && h.url == r.url)
                .map(|(n, _)| format!(" Cite it as [{n}]."))
                .unwrap_or_default();
            format!(
                "- {} — {}: {}{confidence}: {}{cite}",
                r.title.trim(),
                r.url,
                g.verdict.name(),
                g.reason
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why nothing usable came, in a few words.
fn reason(fallback: &Fallback, run: &SearchRun) -> String {
    match fallback {
        Fallback::Unreachable { message } => format!("the search failed: {message}"),
        Fallback::RewritesExhausted => format!(
            "nothing relevant after {} quer{}",
            run.searches(),
            if run.searches() == 1 { "y" } else { "ies" }
        ),
        Fallback::Ungraded { message } => format!("grading failed: {message}"),
    }
}

/// The disclaimer the answer carries (a notice, in the Steps view and the export).
pub fn disclaimer(fallback: &Fallback, run: &SearchRun) -> String {
    let first = run.rounds.first().map(|r| r.query.as_str()).unwrap_or("");
    match fallback {
        Fallback::Unreachable { message } => format!(
            "Web search failed, so this answer comes from the model alone, without web sources. {message}"
        ),
        Fallback::RewritesExhausted => format!(
            "Web search found nothing relevant for \"{first}\" ({}), so this answer comes from the model alone, without web sources.",
            reason(fallback, run)
        ),
        Fallback::Ungraded { message } => format!(
            "The web results for \"{first}\" could not be checked for relevance ({message}); the answer uses them unchecked and cites none of them."
        ),
    }
}
