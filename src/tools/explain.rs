//! `explain_text_with_context`: gives the model the selection an explanation run is about,
//! with its context (the enclosing paragraph, the heading path, the page title, URL and
//! language). It makes no model call: the context was captured with the selection. An
//! explanation run starts with this call already decided ([`prepared_call`]), and the tool
//! stays offered in that run (only there) for later calls.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool};
use crate::types::{Selection, ToolCall};
use kljson::FromJson;

/// The tool's name.
pub const EXPLAIN_TEXT_WITH_CONTEXT: &str = "explain_text_with_context";

/// The id of the call an explanation run starts with.
pub const PREPARED_CALL_ID: &str = "explain-context";

/// The thought recorded before the prepared call.
pub const PREPARED_THOUGHT: &str =
    "The user asked for an explanation of their selection: read it with its context first.";

/// `explain_text_with_context`.
pub struct ExplainTextWithContext;

/// Arguments of `explain_text_with_context`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// The part of the user's selection to explain (a quote from it, or "selection" for all
    /// of it).
    #[schemars(length(max = 4000))]
    pub text: String,
    /// What you want to know about where it appears (e.g. "paragraph and headings").
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub context: String,
}

/// The call an explanation run starts with (its arguments carry no page text: the page's
/// words reach the model only in the result, inside the page fence). Its `reasoning` is
/// the common one every tool takes ([`super::REASONING`]).
pub fn prepared_call() -> ToolCall {
    ToolCall {
        id: PREPARED_CALL_ID.to_string(),
        name: EXPLAIN_TEXT_WITH_CONTEXT.to_string(),
        arguments: kljson::to_string(&kljson::json!({
            "text": "selection",
            "context": "paragraph, headings, title, URL and language",
            "reasoning": PREPARED_THOUGHT,
        })),
    }
}

/// The captured context as the model reads it (page data: the prompt puts it inside the
/// page fence).
pub fn describe(selection: &Selection) -> String {
    let mut out = String::new();
    let chars = selection.text.chars().count();
    if selection.truncated {
        out.push_str(&format!(
            "Selected text (cut: the first {chars} of {} characters):\n",
            selection.full_length
        ));
    } else {
        out.push_str(&format!("Selected text ({chars} characters):\n"));
    }
    out.push_str(&selection.text);
    out.push_str("\n\nThe paragraph around it:\n");
    out.push_str(if selection.context.is_empty() {
        "(unknown)"
    } else {
        &selection.context
    });
    let or_unknown = |text: &str| {
        if text.is_empty() {
            "(unknown)".to_string()
        } else {
            text.to_string()
        }
    };
    out.push_str(&format!(
        "\n\nHeadings: {}\nPage title: {}\nURL: {}\nLanguage: {}",
        or_unknown(&selection.heading_path()),
        or_unknown(&selection.title),
        or_unknown(&selection.url),
        or_unknown(&selection.lang),
    ));
    out
}

/// What the model is told, outside the fence, when the selection was cut (at
/// [`crate::types::page::MAX_SELECTION_CHARS`], or by the capture script).
pub fn cut_instruction(selection: &Selection) -> Option<String> {
    selection.truncated.then(|| {
        format!(
            "The selection was cut: only its first {} characters (of {}) are shown. Your answer must say that it explains only the beginning of the selection.",
            selection.text.chars().count(),
            selection.full_length
        )
    })
}

impl TypedTool for ExplainTextWithContext {
    const NAME: &'static str = EXPLAIN_TEXT_WITH_CONTEXT;
    type Args = ExplainArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({"text": "selection", "context": "paragraph and headings", "reasoning": "check which section the term belongs to"}),
            description: "read the selection and where it appears again".into(),
        }]
    }

    fn needs_selection(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _args: ExplainArgs,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            let selection = ctx.selection.ok_or_else(|| {
                ToolError::new(
                    ToolErrorKind::NotFound,
                    "this question is not about a selection",
                )
            })?;
            Ok(describe(selection))
        }
        .boxed_local()
    }
}
