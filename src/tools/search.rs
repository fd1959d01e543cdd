//! The web search tools (seed 004 §6): `search_web_for_info`, `grade_search_results` and
//! `rewrite_search_query`. Offered only when web search is on. Their definitions (schemas,
//! limits) live here; the engine runs them (`agent::step::search`), because they call the
//! search service and the model in persisted stages, so their [`TypedTool::call`] refuses.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{RateLimit, Risk, ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool};
use crate::types::json::FromJson;

/// The name of the search tool.
pub const SEARCH_WEB: &str = "search_web_for_info";
/// The name of the grading tool.
pub const GRADE_RESULTS: &str = "grade_search_results";
/// The name of the rewriting tool.
pub const REWRITE_QUERY: &str = "rewrite_search_query";

/// Longest query (characters).
pub const MAX_QUERY_CHARS: usize = 300;
/// Most results `grade_search_results` takes.
pub const MAX_GRADED: usize = 10;

/// `search_web_for_info`.
pub struct SearchWeb;

/// Arguments of `search_web_for_info`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchWebArgs {
    /// What to search the web for: a few specific keywords.
    #[schemars(length(min = 1, max = 300))]
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
    #[schemars(length(min = 1, max = 300))]
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
    #[schemars(length(min = 1, max = 300))]
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
            format!("\"query\" must be 1 to {MAX_QUERY_CHARS} characters (got {chars})"),
        ));
    }
    Ok(query)
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
    const DESCRIPTION: &'static str = "Search the web. The results are graded for relevance to the query and the user's question; when too few are relevant the query is rewritten and searched again (at most 3 searches). Returns the relevant results numbered [1], [2], ...: cite them by those numbers.";
    type Args = SearchWebArgs;
    type Output = String;
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: crate::types::json::json!({"query": "Eddystone lighthouse 1882 construction"}),
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
    const DESCRIPTION: &'static str = "Grade search results for relevance to a query and the user's question: each gets relevant or not_relevant, a confidence in [0, 1] and a one-line reason.";
    type Args = GradeResultsArgs;
    type Output = String;
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
    const DESCRIPTION: &'static str = "Rewrite a web search query that found nothing useful into a different one (other keywords, more specific or more general).";
    type Args = RewriteQueryArgs;
    type Output = String;
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
