//! Tools the agent can call, behind one small trait, and the built-in `read_page` tool.
//! Tool errors are data for the model ("Error: ... try another approach"), never a reason
//! to abort the run.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde::Deserialize;
use serde_json::json;

use crate::llm::ToolSpec;
use crate::state::PageInfo;

/// What a tool may read while it runs.
pub struct ToolContext<'a> {
    /// The page the question is about.
    pub page: Option<&'a PageInfo>,
}

/// A tool failure, shown to the model as the tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments did not match the schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// No tool of that name.
    #[error("unknown tool \"{0}\"")]
    UnknownTool(String),
    /// What the tool needs is not there.
    #[error("not found: {0}")]
    NotFound(String),
    /// A side-effecting call was cut off by the worker stopping; it is not repeated.
    #[error("this action was interrupted before its result was saved; it was not repeated because it may already have taken effect")]
    Interrupted,
}

impl ToolError {
    /// Whether running the tool again may succeed.
    pub fn is_retryable(&self) -> bool {
        false
    }

    /// The tool result text the model sees.
    pub fn for_model(&self) -> String {
        format!("Error: {self}. Try another approach.")
    }
}

/// A tool.
pub trait Tool {
    /// Its definition for the model.
    fn spec(&self) -> ToolSpec;
    /// Whether running it changes something outside the run (such a call is never repeated
    /// after an interruption).
    fn side_effects(&self) -> bool {
        false
    }
    /// Runs it with the model's JSON arguments.
    fn run<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>>;
}

/// The tools of a run.
#[derive(Default)]
pub struct ToolBox {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolBox {
    /// The built-in tools.
    pub fn builtin() -> Self {
        Self {
            tools: vec![Box::new(ReadPage)],
        }
    }

    /// Specs of all tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Adds a tool.
    pub fn with(mut self, tool: Box<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Whether the tool `name` has side effects (unknown tools have none).
    pub fn has_side_effects(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.spec().name == name && t.side_effects())
    }

    /// Runs the tool `name`.
    pub async fn run(
        &self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext<'_>,
    ) -> Result<String, ToolError> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.spec().name == name)
            .ok_or_else(|| ToolError::UnknownTool(name.to_string()))?;
        tool.run(arguments, ctx).await
    }
}

/// `read_page`: returns a window of the page text.
pub struct ReadPage;

/// Characters `read_page` returns by default.
pub const READ_PAGE_CHARS: usize = 4000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadPageArgs {
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    max_chars: Option<usize>,
}

impl Tool for ReadPage {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_page".into(),
            description: "Read the text of the page the user is looking at, from a character offset. Use it when the excerpt in the prompt is not enough.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "offset": {"type": "integer", "minimum": 0, "description": "Character offset to start at (default 0)."},
                    "max_chars": {"type": "integer", "minimum": 1, "maximum": 8000, "description": "How many characters to return (default 4000)."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            let args: ReadPageArgs = if arguments.trim().is_empty() {
                ReadPageArgs {
                    offset: 0,
                    max_chars: None,
                }
            } else {
                serde_json::from_str(arguments)
                    .map_err(|e| ToolError::InvalidArguments(e.to_string()))?
            };
            let page = ctx.page.filter(|p| !p.text.is_empty()).ok_or_else(|| {
                ToolError::NotFound("no page text is available for this question".into())
            })?;
            let total = page.text.chars().count();
            let take = args.max_chars.unwrap_or(READ_PAGE_CHARS).clamp(1, 8000);
            if args.offset >= total {
                return Err(ToolError::NotFound(format!(
                    "offset {} is past the end of the page ({total} characters)",
                    args.offset
                )));
            }
            let text: String = page.text.chars().skip(args.offset).take(take).collect();
            let end = args.offset + text.chars().count();
            Ok(format!(
                "[{} — characters {}..{} of {total}]\n{text}",
                page.title, args.offset, end
            ))
        }
        .boxed_local()
    }
}
