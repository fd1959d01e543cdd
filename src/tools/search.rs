//! The web search tools: `search_web_for_info`, `grade_search_results` and
//! `rewrite_search_query`. Offered only when web search is on. Their definitions (schemas,
//! limits) live here; the engine runs them (`agent::step::search`), because they call the
//! search service and the model in persisted stages, so their [`TypedTool::call`] refuses.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{RateLimit, Risk, ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool};
use kljson::FromJson;

/// The name of the search tool.
pub const SEARCH_WEB: &str = "search_web_for_info";
/// The name of the grading tool.
pub const GRADE_RESULTS: &str = "grade_search_results";
/// The name of the rewriting tool.
pub const REWRITE_QUERY: &str = "rewrite_search_query";

/// Longest query (characters): keywords, not passages.
pub const MAX_QUERY_CHARS: usize = 200;
/// Longest run of page text a query may hold (characters): more is the page being sent to
/// the search provider, not a search.
pub const MAX_PAGE_RUN_CHARS: usize = 80;
/// Most results `grade_search_results` takes.
pub const MAX_GRADED: usize = 10;

/// `search_web_for_info`.
pub struct SearchWeb;

/// Arguments of `search_web_for_info`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchWebArgs {
    /// What to search the web for: a few specific keywords.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
}

/// `grade_search_results`.
pub struct GradeResults;

/// One result to grade.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultToGrade {
    /// The result's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// Its excerpt.
    #[serde(default)]
    pub snippet: String,
}

/// Arguments of `grade_search_results`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeResultsArgs {
    /// The query the results were found for.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// The results (at most 10).
    #[schemars(length(min = 1, max = 10))]
    pub results: Vec<ResultToGrade>,
}

/// `rewrite_search_query`.
pub struct RewriteQuery;

/// Arguments of `rewrite_search_query`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewriteQueryArgs {
    /// The query that found nothing useful.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// What was wrong with its results.
    #[serde(default)]
    pub problem: String,
}

/// `query` trimmed, or an invalid-arguments error when it is empty or too long.
pub fn checked_query(query: &str) -> Result<String, ToolError> {
    let query = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = query.chars().count();
    if chars == 0 || chars > MAX_QUERY_CHARS {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("\"query\" must be 1 to {MAX_QUERY_CHARS} characters (got {chars}): search engines want a few keywords"),
        ));
    }
    Ok(query)
}

/// An invalid-arguments error when `query` holds a run of more than
/// [`MAX_PAGE_RUN_CHARS`] characters of any of `texts` (the page, the selection): page text
/// would go to the search provider. Case and white space aside.
pub fn check_page_text(query: &str, texts: &[&str]) -> Result<(), ToolError> {
    match longest_page_run(query, texts) {
        Some(run) => Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("the query holds {run} characters copied from the page, which would send the page's text to the search engine: search with a few keywords of your own instead"),
        )),
        None => Ok(()),
    }
}

/// The length of the longest run of `query` found in one of `texts`, when it is more than
/// [`MAX_PAGE_RUN_CHARS`] characters (compared folded: case, punctuation and spacing aside;
/// [`crate::page::copied`]).
pub fn longest_page_run(query: &str, texts: &[&str]) -> Option<usize> {
    use crate::page::copied::{fold, longest_copied};
    let texts: Vec<String> = texts.iter().map(|t| fold(t)).collect();
    let longest = longest_copied(&fold(query), &texts, MAX_PAGE_RUN_CHARS + 1);
    (longest > MAX_PAGE_RUN_CHARS).then_some(longest)
}

/// Calls of each search tool a run may make.
const PER_RUN: RateLimit = RateLimit {
    per_run: Some(4),
    per_minute: None,
};

fn run_by_engine<'a>(name: &'static str) -> LocalBoxFuture<'a, Result<String, ToolError>> {
    async move {
        Err(ToolError::new(
            ToolErrorKind::Permission,
            format!("{name} can only be used by the model during a run with web search on"),
        ))
    }
    .boxed_local()
}

impl TypedTool for SearchWeb {
    const NAME: &'static str = SEARCH_WEB;
    type Args = SearchWebArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({"query": "Eddystone lighthouse 1882 construction"}),
            description: "the question needs facts the page does not have".into(),
        }]
    }

    fn risk(&self) -> Risk {
        Risk::Medium
    }

    fn rate_limit(&self) -> RateLimit {
        PER_RUN
    }

    fn needs_search(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _args: SearchWebArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        run_by_engine(SEARCH_WEB)
    }
}

impl TypedTool for GradeResults {
    const NAME: &'static str = GRADE_RESULTS;
    type Args = GradeResultsArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn rate_limit(&self) -> RateLimit {
        PER_RUN
    }

    fn needs_search(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _args: GradeResultsArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        run_by_engine(GRADE_RESULTS)
    }
}

impl TypedTool for RewriteQuery {
    const NAME: &'static str = REWRITE_QUERY;
    type Args = RewriteQueryArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn rate_limit(&self) -> RateLimit {
        PER_RUN
    }

    fn needs_search(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _args: RewriteQueryArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        run_by_engine(REWRITE_QUERY)
    }
}

#[cfg(test)]
mod tests {
    // The run search itself is held to brute force in `page::copied`.
    use super::*;

    const PAGE: &str = "The harbour opened in 1861. Its first keeper, Agnes Mole, kept a log of every ship that passed the breakwater in the great storm of 1871, and the log is now in the town museum.";

    #[test]
    fn a_query_holding_more_than_80_characters_of_the_page_is_refused() {
        let copied = &PAGE[28..118]; // 90 characters, 88 folded (two commas)
        assert_eq!(longest_page_run(copied, &[PAGE]), Some(88));
        // Shouted, after other words, or with its punctuation dropped and + for spaces.
        let shouted = format!("find   {}", copied.to_uppercase());
        assert_eq!(longest_page_run(&shouted, &["", PAGE]), Some(89)); // and the space before
        let plussed = copied.replace([',', '.'], "").replace(' ', "+");
        assert_eq!(longest_page_run(&plussed, &[PAGE]), Some(88));
        assert!(check_page_text(copied, &[PAGE]).is_err());
        // 80 characters, or keywords, are searches.
        assert_eq!(longest_page_run(&PAGE[28..108], &[PAGE]), None);
        assert_eq!(
            longest_page_run("Agnes Mole harbour keeper 1861 log", &[PAGE]),
            None
        );
        assert!(check_page_text("Agnes Mole harbour keeper", &[PAGE]).is_ok());
    }

    #[test]
    fn a_query_longer_than_200_characters_is_refused() {
        assert!(checked_query(&"word ".repeat(40)).is_ok());
        let err = checked_query(&"words ".repeat(40)).unwrap_err();
        assert!(
            err.message.contains("1 to 200 characters"),
            "{}",
            err.message
        );
    }
}
