//! The persisted state of a web search (agentic RAG): the queries tried in
//! order (the original and its rewrites), each one's results and their grades, and the
//! stage the search is at. It lives in [`crate::state::Next::Search`], so a worker stopped in the
//! middle of a search redoes at most the one request that was in flight.

use serde::Serialize;

pub use crate::types::search::Confidence;
use crate::types::{SearchResult, ToolCall};
use kljson::{FromJson, ToJson};

/// Most searches of one `search_web_for_info` call (the original query and two rewrites).
pub const MAX_SEARCHES: usize = 3;
/// Most rewrites of one `search_web_for_info` call.
pub const MAX_REWRITES: usize = MAX_SEARCHES - 1;
/// Below this share of relevant results (percent), the query is rewritten.
pub const RELEVANT_THRESHOLD_PCT: u32 = 50;
/// Results asked for per search.
pub const RESULTS_PER_SEARCH: usize = 5;
/// Results graded per model call (one batched call per page of results).
pub const GRADES_PER_CALL: usize = 5;

/// What the search tool call asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// `search_web_for_info`: search, grade, rewrite, search again.
    Full,
    /// `grade_search_results`: grade the results given.
    GradeOnly,
    /// `rewrite_search_query`: one rewrite of the query given.
    RewriteOnly,
}

kljson::named_enum!(SearchMode {
    Full = "full",
    GradeOnly = "grade_only",
    RewriteOnly = "rewrite_only",
});

/// A grade's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Relevant to the query and the user's goal: may be used and cited.
    Relevant,
    /// Not relevant: dropped, never cited.
    NotRelevant,
    /// Grading failed for it: used with a disclaimer, never cited.
    Ungraded,
}

kljson::named_enum!(Verdict {
    Relevant = "relevant",
    NotRelevant = "not_relevant",
    Ungraded = "ungraded",
});

impl Verdict {}

/// One result's grade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Grade {
    /// The verdict.
    pub verdict: Verdict,
    /// How sure the grader was (`None` for an ungraded result).
    pub confidence: Option<Confidence>,
    /// One line: why.
    pub reason: String,
}

impl Grade {
    /// The grade of a result the grading could not judge, saying why.
    pub fn ungraded(reason: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Ungraded,
            confidence: None,
            reason: reason.into(),
        }
    }
}

/// One query of a search and what it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct QueryRound {
    /// The query.
    pub query: String,
    /// Its results (empty until searched, and when nothing was found).
    #[serde(default)]
    pub results: Vec<SearchResult>,
    /// One grade per result, in order (shorter while grading).
    #[serde(default)]
    pub grades: Vec<Grade>,
}

impl QueryRound {
    /// A query not searched yet.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            results: Vec::new(),
            grades: Vec::new(),
        }
    }

    /// Relevant results, as a percent of all (no results: 0).
    pub fn relevant_pct(&self) -> u32 {
        let relevant = self.count(Verdict::Relevant);
        if self.results.is_empty() {
            0
        } else {
            u32::try_from(relevant * 100 / self.results.len()).unwrap_or(100)
        }
    }

    /// Results with `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.grades.iter().filter(|g| g.verdict == verdict).count()
    }
}

/// What the search does next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum SearchStage {
    /// Search the last query (`failures`: failed attempts so far; one retry).
    Search {
        /// Failed attempts of this search.
        #[serde(default)]
        failures: u32,
    },
    /// Grade the last query's results from `from` on (one page per model call).
    Grade {
        /// The first result not graded yet.
        from: usize,
    },
    /// Rewrite the query (`reask`: the first rewrite repeated an earlier query).
    Rewrite {
        /// Whether this is the one re-ask after a repeated query.
        #[serde(default)]
        reask: bool,
    },
}

/// Why a search gave the loop no graded relevant results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The search service failed after its retry (the message says how).
    Unreachable {
        /// What went wrong.
        message: String,
    },
    /// Every query was tried (or the rewrite kept repeating one) and nothing relevant came.
    RewritesExhausted,
    /// Grading failed: the results are used as they came, not checked.
    Ungraded {
        /// What went wrong.
        message: String,
    },
}

/// One search tool call in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct SearchRun {
    /// The tool call it answers.
    pub call: ToolCall,
    /// What it does.
    pub mode: SearchMode,
    /// The queries in order (the last one is current).
    pub rounds: Vec<QueryRound>,
    /// The next stage.
    pub stage: SearchStage,
    /// Why the rewrite is asked for (the grader's reasons, or the user's for
    /// `rewrite_search_query`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub problem: String,
}

impl SearchRun {
    /// The current query round.
    pub fn current(&self) -> Option<&QueryRound> {
        self.rounds.last()
    }

    /// The current query round, to change.
    pub fn current_mut(&mut self) -> Option<&mut QueryRound> {
        self.rounds.last_mut()
    }

    /// Searches made or begun.
    pub fn searches(&self) -> usize {
        self.rounds.len()
    }
}

/// A query with case and spacing normalised, to tell rewrites apart.
pub fn normalized(query: &str) -> String {
    query
        .split_whitespace()
        .map(crate::types::case::fold)
        .collect::<Vec<_>>()
        .join(" ")
}
