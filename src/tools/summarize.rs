//! `summarize_page_content`: a summary of the whole page, however long. Its definition
//! lives here; the engine runs it (`agent::step::summarize`), because it calls the model
//! once per section in persisted stages (map, then reduce), so its [`TypedTool::call`]
//! refuses.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{RateLimit, ToolContext, ToolError, ToolErrorKind, TypedTool};
use kljson::FromJson;

/// The name of the summary tool.
pub const SUMMARIZE_PAGE: &str = "summarize_page_content";

/// `summarize_page_content`.
pub struct SummarizePage;

/// Arguments of `summarize_page_content`: none of its own (only the optional reasoning).
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizePageArgs {}

impl TypedTool for SummarizePage {
    const NAME: &'static str = SUMMARIZE_PAGE;
    type Args = SummarizePageArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(2),
            per_minute: None,
        }
    }

    fn needs_page(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _args: SummarizePageArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            Err(ToolError::new(
                ToolErrorKind::Permission,
                "the page summary is run by the agent itself",
            ))
        }
        .boxed_local()
    }
}
