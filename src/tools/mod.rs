//! Tools the agent can call. A tool is written against [`TypedTool`] (name, description, an
//! argument type, an output); its parameter schema is derived from the argument type with
//! `schemars`, and its arguments are validated by decoding into that same type, so the
//! schema and the validation cannot disagree. [`Tool`] is the type-erased form the
//! [`ToolBox`] holds. Tool errors are data for the model ("Error: ... try another
//! approach"), never a reason to abort the run; [`ToolErrorKind`] decides in one place
//! whether a failure is worth retrying and what the model is told.
//!
//! Every tool also takes an optional [`REASONING`] argument ("why this tool, now"): it is
//! added to each schema here, in one place, and taken out of the arguments before they are
//! decoded, so no argument type declares it. A call may give it or not; a reasoning that is
//! not a string is an invalid-arguments error like any other.

mod args;
mod builtin;
pub mod descriptions;
pub mod explain;
mod page;
pub mod parse;
pub mod schemas;
pub mod screenshot;
pub mod search;
pub mod summarize;

pub use args::{
    decode_args, schema_of, split_reasoning, with_reasoning, REASONING, REASONING_MAX_CHARS,
};
pub use builtin::{RequestInput, RequestInputArgs};
pub use explain::{ExplainTextWithContext, EXPLAIN_TEXT_WITH_CONTEXT};
pub use page::{
    own_limit, passages_across, passages_of_call, QueryPage, QueryPageArgs, ReadPage, ReadPageArgs,
    QUERY_PAGE_K, READ_PAGE_CHARS,
};
pub use screenshot::EXTRACT_SCREENSHOT_TEXT;
pub use search::{GRADE_RESULTS, REWRITE_QUERY, SEARCH_WEB};
pub use summarize::SUMMARIZE_PAGE;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::types::{PageInfo, Selection, ToolSpec};
use kljson::{FromJson, ToJson};

/// The name of the built-in tool the model calls to ask the user.
pub const REQUEST_INPUT: &str = "request_input";

/// The tools whose successful results are page or web text: the prompt quotes them inside
/// the page fence, as data.
pub const PAGE_DATA_TOOLS: [&str; 7] = [
    ReadPage::NAME,
    QueryPage::NAME,
    EXPLAIN_TEXT_WITH_CONTEXT,
    SEARCH_WEB,
    GRADE_RESULTS,
    EXTRACT_SCREENSHOT_TEXT,
    SUMMARIZE_PAGE,
];

/// What a tool may read while it runs.
pub struct ToolContext<'a> {
    /// The page the question is about.
    pub page: Option<&'a PageInfo>,
    /// The selection an explanation run is about.
    pub selection: Option<&'a Selection>,
    /// The pages added to the conversation (questions across pages; a removed one with no
    /// text), which `query_page` searches beside the page.
    pub added: &'a [crate::page::across::AddedText],
}

/// The kinds of tool failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments do not match the schema.
    InvalidArguments,
    /// What the tool needs is not there (or no such tool).
    NotFound,
    /// The tool took too long.
    Timeout,
    /// Called too often.
    RateLimited,
    /// A network failure inside the tool.
    Network,
    /// Not allowed in this run (risk level, tool subset).
    Permission,
    /// A side-effecting call was cut off by the worker stopping; it is not repeated.
    Interrupted,
}

kljson::named_enum!(ToolErrorKind {
    InvalidArguments = "invalid_arguments",
    NotFound = "not_found",
    Timeout = "timeout",
    RateLimited = "rate_limited",
    Network = "network",
    Permission = "permission",
    Interrupted = "interrupted",
});

impl ToolErrorKind {
    /// Whether running the tool again may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::Timeout | Self::Network)
    }

    /// What the model is told to do about it.
    fn advice(self) -> &'static str {
        match self {
            Self::InvalidArguments => {
                "Fix the arguments to match the tool's schema and call it again."
            }
            Self::NotFound => "Try another approach.",
            Self::Timeout | Self::Network => {
                "The tool may work if tried later; try another approach meanwhile."
            }
            Self::RateLimited => "Do not call this tool again now; use what you have.",
            Self::Permission => "This tool is not available in this run; answer without it.",
            Self::Interrupted => "Check whether it took effect before trying anything else.",
        }
    }
}

/// A tool failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// The kind.
    pub kind: ToolErrorKind,
    /// What went wrong, specifically.
    pub message: String,
}

impl ToolError {
    /// An error of `kind`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The interruption of a side-effecting call.
    pub fn interrupted() -> Self {
        Self::new(
            ToolErrorKind::Interrupted,
            "this action was interrupted before its result was saved; it was not repeated because it may already have taken effect",
        )
    }

    /// Whether running the tool again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// The tool result text the model sees.
    pub fn for_model(&self) -> String {
        format!("Error: {}. {}", self.message, self.kind.advice())
    }
}

/// How risky a tool is; a run permits tools up to a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads what the user already shows it.
    #[default]
    Low,
    /// Reaches outside the page (the web).
    Medium,
    /// Changes something outside the run.
    High,
}

kljson::named_enum!(Risk {
    Low = "low",
    Medium = "medium",
    High = "high",
});

/// How often a tool may be called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, FromJson, Default, ToJson)]
pub struct RateLimit {
    /// Calls per run (`None`: unlimited).
    pub per_run: Option<u32>,
    /// Calls per minute (`None`: unlimited).
    pub per_minute: Option<u32>,
}

/// An example call shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize, FromJson, ToJson)]
pub struct ToolExample {
    /// The arguments.
    pub input: Value,
    /// When to call it like this.
    pub description: String,
}

/// Everything the registry and the model know about a tool. Serializes to JSON and parses
/// back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, FromJson, ToJson)]
pub struct ToolDefinition {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of the arguments (root: an object).
    pub parameters: std::sync::Arc<Value>,
    /// Example calls.
    pub examples: Vec<ToolExample>,
    /// Risk level.
    pub risk: Risk,
    /// Whether it changes something outside the run.
    pub side_effects: bool,
    /// Rate limits.
    pub rate_limit: RateLimit,
    /// Offered only when the run has page text (the page tools).
    #[serde(default)]
    pub needs_page: bool,
    /// Offered only in a run that explains a selection.
    #[serde(default)]
    pub needs_selection: bool,
    /// Offered only when web search is on.
    #[serde(default)]
    pub needs_search: bool,
}

impl ToolDefinition {
    /// The form sent to the model: the description carries the examples; the parameters'
    /// schema keeps what the model needs to write a call ([`args::model_schema`]).
    pub fn spec(&self) -> ToolSpec {
        let mut description = self.description.clone();
        for example in &self.examples {
            description.push_str(&format!(
                "\nExample: {} — {}",
                kljson::to_string(&example.input),
                example.description
            ));
        }
        ToolSpec {
            name: self.name.clone(),
            description,
            parameters: args::model_schema(&self.parameters).into(),
        }
    }
}

/// A tool with typed arguments. Implement this; the registry uses its erased [`Tool`] form.
pub trait TypedTool {
    /// Name the model calls it by.
    const NAME: &'static str;
    /// What it does, for the model (the built-in tools' come from `tools.tpl` through
    /// [`TypedTool::description`] instead).
    const DESCRIPTION: &'static str = "";
    /// The arguments (`#[serde(deny_unknown_fields)]` so unknown fields are rejected).
    type Args: FromJson + JsonSchema;
    /// The result (text for the model).
    type Output: Into<String>;

    /// What it does, for the model: [`TypedTool::DESCRIPTION`]. Built-in tools return their
    /// section of `tools.tpl` ([`descriptions::of`]).
    fn description(&self) -> String {
        Self::DESCRIPTION.to_string()
    }

    /// The JSON schema of the arguments (before the optional `reasoning` is added): derived
    /// with `schemars`. Built-in tools return their generated one ([`schemas::builtin`]).
    fn parameters(&self) -> Value {
        schema_of::<Self::Args>()
    }

    /// Example calls.
    fn examples(&self) -> Vec<ToolExample> {
        Vec::new()
    }
    /// Risk level.
    fn risk(&self) -> Risk {
        Risk::Low
    }
    /// Whether it changes something outside the run (never repeated after an interruption).
    fn side_effects(&self) -> bool {
        false
    }
    /// Rate limits.
    fn rate_limit(&self) -> RateLimit {
        RateLimit::default()
    }
    /// Whether it is offered only when the run has page text.
    fn needs_page(&self) -> bool {
        false
    }
    /// Whether it is offered only in a run that explains a selection.
    fn needs_selection(&self) -> bool {
        false
    }
    /// Whether it is offered only when web search is on.
    fn needs_search(&self) -> bool {
        false
    }

    /// Runs it.
    fn call<'a>(
        &'a self,
        args: Self::Args,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<Self::Output, ToolError>>;
}

/// A tool with its arguments as JSON text: the form the registry holds.
pub trait Tool {
    /// Its definition.
    fn definition(&self) -> ToolDefinition;
    /// Validates the arguments and runs it.
    fn run<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>>;
}

impl<T: TypedTool> Tool for T {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: T::NAME.to_string(),
            description: self.description(),
            parameters: with_reasoning(self.parameters()).into(),
            examples: self.examples(),
            risk: self.risk(),
            side_effects: self.side_effects(),
            rate_limit: self.rate_limit(),
            needs_page: self.needs_page(),
            needs_selection: self.needs_selection(),
            needs_search: self.needs_search(),
        }
    }

    fn run<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            args::check_limits(&self.parameters(), arguments)?;
            let args = decode_args::<T::Args>(arguments)?;
            self.call(args, ctx).await.map(Into::into)
        }
        .boxed_local()
    }
}

/// What a run allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy<'a> {
    /// Highest risk level permitted.
    pub permitted_risk: Risk,
    /// Tools offered and accepted (`None`: all).
    pub subset: Option<&'a [String]>,
}

/// Calls of one tool made so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallCounts {
    /// In this run.
    pub in_run: u32,
    /// In the last minute.
    pub in_last_minute: u32,
}

/// What a run has, for the tools that are offered only with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    /// The run has page text (the page tools).
    pub page_text: bool,
    /// The run explains a selection (its tool).
    pub selection: bool,
    /// Web search is on (the search tools).
    pub web_search: bool,
    /// The run is about a tab whose page has little or no text (the screenshot tool).
    pub little_text: bool,
}

/// The tools of a run.
#[derive(Default)]
pub struct ToolBox {
    tools: Vec<(ToolDefinition, Box<dyn Tool>)>,
}

impl ToolBox {
    /// The built-in tools.
    pub fn builtin() -> Self {
        Self::default()
            .with(Box::new(ReadPage))
            .with(Box::new(QueryPage))
            .with(Box::new(RequestInput))
            .with(Box::new(ExplainTextWithContext))
            .with(Box::new(search::SearchWeb))
            .with(Box::new(search::GradeResults))
            .with(Box::new(search::RewriteQuery))
            .with(Box::new(screenshot::ExtractScreenshotText))
            .with(Box::new(summarize::SummarizePage))
    }

    /// Adds a tool.
    pub fn with(mut self, tool: Box<dyn Tool>) -> Self {
        self.tools.push((tool.definition(), tool));
        self
    }

    /// Definitions of all tools.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.iter().map(|(d, _)| d)
    }

    /// Specs of the tools in `subset` (all when `None`) for the model.
    pub fn specs_in(&self, subset: Option<&[String]>) -> Vec<ToolSpec> {
        self.definitions()
            .filter(|d| subset.is_none_or(|s| s.contains(&d.name)))
            .map(ToolDefinition::spec)
            .collect()
    }

    /// Specs of the tools offered to a run: those in `subset` (all when `None`) whose own
    /// condition holds (page tools only when there is page text, the selection's tool only
    /// when the run explains one, the search tools only with web search on, the screenshot
    /// tool only for a tab with little or no text; `request_input` always).
    pub fn offered(&self, subset: Option<&[String]>, offer: Offer) -> Vec<ToolSpec> {
        self.definitions()
            .filter(|d| subset.is_none_or(|s| s.contains(&d.name)))
            .filter(|d| offer.page_text || !d.needs_page)
            .filter(|d| offer.selection || !d.needs_selection)
            .filter(|d| offer.web_search || !d.needs_search)
            .filter(|d| offer.little_text || d.name != EXTRACT_SCREENSHOT_TEXT)
            .map(ToolDefinition::spec)
            .collect()
    }

    /// Specs of all tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs_in(None)
    }

    /// The definition of `name`.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.definitions().find(|d| d.name == name)
    }

    /// Whether the tool `name` has side effects (unknown tools have none).
    pub fn has_side_effects(&self, name: &str) -> bool {
        self.definition(name).is_some_and(|d| d.side_effects)
    }

    /// Checks a call against the run's policy: known tool, in the subset, risk level, rate
    /// limits. A refusal is an error result for the model, not an abort.
    pub fn check(
        &self,
        name: &str,
        policy: &Policy<'_>,
        counts: CallCounts,
    ) -> Result<(), ToolError> {
        let def = self.definition(name).ok_or_else(|| {
            let known: Vec<&str> = self.definitions().map(|d| d.name.as_str()).collect();
            ToolError::new(
                ToolErrorKind::NotFound,
                format!(
                    "there is no tool \"{name}\" (available: {})",
                    known.join(", ")
                ),
            )
        })?;
        if policy.subset.is_some_and(|s| !s.iter().any(|n| n == name)) {
            return Err(ToolError::new(
                ToolErrorKind::Permission,
                format!("the tool \"{name}\" is not offered in this phase"),
            ));
        }
        if def.risk > policy.permitted_risk {
            return Err(ToolError::new(
                ToolErrorKind::Permission,
                format!(
                    "the tool \"{name}\" has risk level {:?}, above what this run permits ({:?})",
                    def.risk, policy.permitted_risk
                ),
            ));
        }
        if let Some(max) = def.rate_limit.per_run.filter(|max| counts.in_run >= *max) {
            return Err(ToolError::new(
                ToolErrorKind::RateLimited,
                format!("the tool \"{name}\" may be called {max} times per run"),
            ));
        }
        if let Some(max) = def
            .rate_limit
            .per_minute
            .filter(|max| counts.in_last_minute >= *max)
        {
            return Err(ToolError::new(
                ToolErrorKind::RateLimited,
                format!("the tool \"{name}\" may be called {max} times per minute"),
            ));
        }
        Ok(())
    }

    /// Runs the tool `name` (after [`ToolBox::check`]).
    pub async fn run(
        &self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext<'_>,
    ) -> Result<String, ToolError> {
        let (_, tool) = self
            .tools
            .iter()
            .find(|(d, _)| d.name == name)
            .ok_or_else(|| {
                ToolError::new(
                    ToolErrorKind::NotFound,
                    format!("there is no tool \"{name}\""),
                )
            })?;
        tool.run(arguments, ctx).await
    }
}

/// What `schemars` derives for each built-in tool's arguments, in the tool box's order (what
/// [`schemas::PATH`] holds, checked by `tests/native/tool_schemas.rs`).
pub fn derived_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (ReadPage::NAME, schema_of::<ReadPageArgs>()),
        (QueryPage::NAME, schema_of::<QueryPageArgs>()),
        (RequestInput::NAME, schema_of::<RequestInputArgs>()),
        (
            ExplainTextWithContext::NAME,
            schema_of::<explain::ExplainArgs>(),
        ),
        (
            search::SearchWeb::NAME,
            schema_of::<search::SearchWebArgs>(),
        ),
        (
            search::GradeResults::NAME,
            schema_of::<search::GradeResultsArgs>(),
        ),
        (
            search::RewriteQuery::NAME,
            schema_of::<search::RewriteQueryArgs>(),
        ),
        (
            screenshot::ExtractScreenshotText::NAME,
            schema_of::<screenshot::ExtractScreenshotTextArgs>(),
        ),
        (
            summarize::SummarizePage::NAME,
            schema_of::<summarize::SummarizePageArgs>(),
        ),
    ]
}
