//! The screenshot tool (`extract_screenshot_text`): reads the text of what the
//! tab shows from a screenshot, for pages with little or no text a script can read (canvas
//! apps, images of text, the PDF viewer). Its definition lives here; the engine runs it
//! (`agent::step::screenshot`), because it needs the screen-capture port and a model call
//! that carries the image, so its [`TypedTool::call`] refuses. The screenshot is never
//! stored: only the text read from it becomes the tool's result.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{RateLimit, ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool};
use kljson::FromJson;

/// The name of the screenshot tool.
pub const EXTRACT_SCREENSHOT_TEXT: &str = "extract_screenshot_text";

/// The tool is offered only when the page has fewer characters of text than this (or none,
/// or could not be read at all), and the run is about a tab.
pub const LITTLE_TEXT_CHARS: usize = 500;

/// `extract_screenshot_text`.
pub struct ExtractScreenshotText;

/// Arguments of `extract_screenshot_text`: none of its own (only the common `reasoning`).
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractScreenshotTextArgs {}

impl TypedTool for ExtractScreenshotText {
    const NAME: &'static str = EXTRACT_SCREENSHOT_TEXT;
    type Args = ExtractScreenshotTextArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({}),
            description: "the page has little or no readable text".into(),
        }]
    }

    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(2),
            per_minute: None,
        }
    }

    fn call<'a>(
        &'a self,
        _args: ExtractScreenshotTextArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            Err(ToolError::new(
                ToolErrorKind::Permission,
                format!("{EXTRACT_SCREENSHOT_TEXT} can only be used by the model during a run about a tab"),
            ))
        }
        .boxed_local()
    }
}
