//! The built-in tool `request_input` (the model asks the user; the engine answers it).

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{
    RateLimit, ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool, REQUEST_INPUT,
};
use kljson::FromJson;

/// `request_input`: asks the user a clarifying question. The engine answers it (the run
/// pauses until the user replies), so [`Tool::run`](super::Tool::run) is never the way it is carried out.
pub struct RequestInput;

/// Arguments of `request_input`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestInputArgs {
    /// The question for the user: short, specific, answerable in a few words.
    #[schemars(length(min = 1, max = 500))]
    pub question: String,
}

impl RequestInputArgs {
    /// The question, trimmed; an empty or overlong one is an invalid-arguments error.
    pub fn checked_question(&self) -> Result<String, ToolError> {
        let question = self.question.trim();
        let chars = question.chars().count();
        if chars == 0 || chars > 500 {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("\"question\" must be 1 to 500 characters (got {chars})"),
            ));
        }
        Ok(question.to_string())
    }
}

impl TypedTool for RequestInput {
    const NAME: &'static str = REQUEST_INPUT;
    type Args = RequestInputArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({"question": "Do you mean the 1861 lighthouse or the 1902 one?"}),
            description: "the page describes two lighthouses and the question could mean either"
                .into(),
        }]
    }

    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(3),
            per_minute: None,
        }
    }

    fn call<'a>(
        &'a self,
        _args: RequestInputArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            Err(ToolError::new(
                ToolErrorKind::Permission,
                "request_input can only be used by the model during a run",
            ))
        }
        .boxed_local()
    }
}
