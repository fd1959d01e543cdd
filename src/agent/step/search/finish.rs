//! The end of a search: what the loop gets (the relevant results numbered as the answer
//! cites them, the ungraded ones, or nothing), and the disclaimer when nothing relevant came.

use super::*;

/// The search is over: the loop gets the relevant results (numbered as the answer cites
/// them), or the ungraded ones, or nothing and the disclaimer of `why`.
pub(super) fn finish(
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
    let (content, cut) = crate::types::text::clip(result.content.trim(), RESULT_CHARS);
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
                .map(|c| format!(", confidence {}", c.two_decimals()))
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
