//! Chrome's built-in model (the Prompt API, `LanguageModel`) seen from the core: how a
//! [`ChatRequest`] becomes the API's `initialPrompts`, prompt and `responseConstraint`,
//! and how its text becomes a [`ChatResponse`]. The model has no native tool calling, so
//! tools are described in the system prompt and calls are read from the text (see
//! [`crate::tools::parse`]). Pure: the `web` layer makes the calls.
//! API shape: <https://developer.chrome.com/docs/ai/prompt-api>.

use serde::Serialize;
use serde_json::Value;

pub use crate::llm::provider::Availability;
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, Role, Usage};
use kljson::ToJson;

use crate::llm::prompted_tools::{call_text, result_text, tool_instructions};

/// One entry of `initialPrompts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
pub struct PromptMessage {
    /// `system` (first only), `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// What to pass to `LanguageModel.create` and `session.prompt`.
#[derive(Debug, Clone, PartialEq, Serialize, ToJson)]
pub struct PromptPlan {
    /// The conversation before the prompt (`create({initialPrompts})`).
    pub initial_prompts: Vec<PromptMessage>,
    /// The text to prompt with.
    pub prompt: String,
    /// The JSON schema to constrain the reply to (`responseConstraint`), if any.
    pub response_constraint: Option<Value>,
    /// Images the prompt shows (the last user turn's): sent as `{type: "image", value}`
    /// content after the text, in a session created with `expectedInputs` naming `image`
    /// (<https://developer.chrome.com/docs/ai/prompt-api#multimodal_capabilities>).
    #[serde(skip)]
    pub images: Vec<crate::types::Image>,
}

/// Maps a chat request onto the Prompt API. Tool results become user turns; the last
/// user turn (or tool result) is the prompt.
pub fn plan(request: &ChatRequest) -> PromptPlan {
    let mut messages: Vec<PromptMessage> = Vec::new();
    let mut system = String::new();
    for m in &request.messages {
        match m.role {
            Role::System => {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&m.content);
            }
            Role::User => messages.push(PromptMessage {
                role: "user",
                content: m.content.clone(),
            }),
            Role::Assistant => {
                let mut content = m.content.clone();
                for call in &m.tool_calls {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&call_text(&call.name, &call.arguments));
                }
                messages.push(PromptMessage {
                    role: "assistant",
                    content,
                });
            }
            Role::Tool => messages.push(PromptMessage {
                role: "user",
                content: result_text(&m.content),
            }),
        }
    }
    if !request.tools.is_empty() {
        system.push_str(&tool_instructions(&request.tools));
    }
    let prompt = match messages.last() {
        Some(last) if last.role == "user" => messages.pop().map(|m| m.content).unwrap_or_default(),
        _ => "Continue.".to_string(),
    };
    // Only the prompt carries images (a screenshot is always the last user turn).
    let images = match request.messages.last() {
        Some(last) if last.role == Role::User => last.images.clone(),
        _ => Vec::new(),
    };
    let mut initial_prompts = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        initial_prompts.push(PromptMessage {
            role: "system",
            content: system,
        });
    }
    initial_prompts.extend(messages);
    PromptPlan {
        initial_prompts,
        prompt,
        response_constraint: request.response_format.as_ref().map(|f| f.schema.clone()),
        images,
    }
}

/// Accumulates `promptStreaming` chunks. Chrome streams deltas; some versions streamed the
/// whole text so far, which is recognized and turned into a delta.
#[derive(Debug, Default)]
pub struct StreamText {
    text: String,
}

impl StreamText {
    /// Nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one chunk; returns the new text it carried.
    pub fn push(&mut self, chunk: &str) -> String {
        let delta = if !self.text.is_empty()
            && chunk.len() > self.text.len()
            && chunk.starts_with(&self.text)
        {
            chunk[self.text.len()..].to_string()
        } else {
            chunk.to_string()
        };
        self.text.push_str(&delta);
        delta
    }

    /// The reply.
    pub fn finish(self) -> ChatResponse {
        ChatResponse {
            content: self.text,
            finish_reason: Some("stop".into()),
            ..Default::default()
        }
    }
}

/// A Prompt API failure as an [`LlmError`], from the `DOMException`'s name and message.
/// `QuotaExceededError` is the prompt (with the session's earlier turns) not fitting the
/// model's context window: "When contextUsage would exceed contextWindow, subsequent method
/// calls throw a QuotaExceededError"
/// (https://developer.mozilla.org/en-US/docs/Web/API/LanguageModel/contextUsage).
pub fn failure(name: &str, message: &str) -> LlmError {
    let detail = format!("{name}: {message}");
    let kind = match name {
        "AbortError" => LlmErrorKind::Timeout,
        "NotSupportedError" | "NotAllowedError" | "InvalidStateError" => LlmErrorKind::Unavailable,
        "QuotaExceededError" => {
            return crate::llm::diagnosis::doctor::builtin_context_too_long(detail, None)
        }
        _ => LlmErrorKind::Server,
    };
    let mut e = LlmError::new(kind, format!("Chrome's built-in model failed: {message}"));
    e.detail = Some(detail);
    e
}

/// A token count the Prompt API reported (a JS number), if it is one: finite and not
/// negative. `Infinity` (a window without a limit) and `NaN` are not counts.
pub fn token_count(value: f64) -> Option<u64> {
    // The cast saturates at u64::MAX; counts are integers, so nothing is rounded away.
    (value.is_finite() && value >= 0.0).then(|| value.round() as u64)
}

/// The session's context accounting before the prompt, from the Prompt API: how many tokens
/// the session already holds (`session.contextUsage`: its initial prompts) and how many the
/// prompt will add (`session.measureContextUsage(prompt, {responseConstraint})`).
/// Sources: <https://developer.mozilla.org/en-US/docs/Web/API/LanguageModel/contextUsage>,
/// <https://developer.mozilla.org/en-US/docs/Web/API/LanguageModel/contextWindow>,
/// <https://developer.mozilla.org/en-US/docs/Web/API/LanguageModel/measureContextUsage>;
/// older Chrome builds name them `inputUsage`, `inputQuota` and `measureInputUsage`
/// (the web-platform test `ai/language-model/language-model-prompt.tentative.https.window.js`,
/// <https://github.com/webmachinelearning/prompt-api/issues/164>).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextCount {
    /// Tokens in the session before the prompt.
    pub before: u64,
    /// Tokens the prompt adds, as measured. The measure includes the model's reply prefix
    /// (prompt-api issue 164), so it is what `prompt()` itself adds before the reply.
    pub prompt: u64,
}

impl ContextCount {
    /// From the API's numbers: `None` when either is missing or not a count (the caller
    /// then reports no usage, as for a build without context accounting).
    pub fn from_api(before: Option<f64>, prompt: Option<f64>) -> Option<Self> {
        Some(Self {
            before: token_count(before?)?,
            prompt: token_count(prompt?)?,
        })
    }

    /// The tokens the session needs to take the prompt.
    pub fn needed(self) -> u64 {
        self.before.saturating_add(self.prompt)
    }

    /// Whether the prompt fits the session's window (`contextWindow` as the API reported it;
    /// missing or `Infinity`: no limit to check). When it does not, the error the API's
    /// `QuotaExceededError` would give, saying how many tokens it needed of how many, so
    /// the prompt is never sent.
    pub fn check(self, window: Option<f64>) -> Result<(), LlmError> {
        let Some(window) = window.and_then(token_count) else {
            return Ok(());
        };
        if self.needed() <= window {
            return Ok(());
        }
        let message = format!(
            "the prompt needs {} tokens of the session's {window}-token context window \
({} already in the session, {} for the prompt)",
            self.needed(),
            self.before,
            self.prompt
        );
        Err(crate::llm::diagnosis::doctor::builtin_context_too_long(
            format!("QuotaExceededError: {message}"),
            Some(window),
        ))
    }

    /// The call's usage from the session's `contextUsage` after the reply: the input is
    /// what the session held plus the prompt, the output is whatever else the session grew
    /// by (saturating: a reply cannot use fewer than none). `None` when the count after the
    /// reply is missing.
    pub fn usage(self, after: Option<f64>) -> Option<Usage> {
        let after = token_count(after?)?;
        Some(Usage::new(
            self.needed(),
            after.saturating_sub(self.needed()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::prompted_tools::tools_in_prompt;
    use crate::llm::{ChatMessage, JsonSchemaFormat, ToolCall, ToolSpec};

    fn request() -> ChatRequest {
        let mut assistant = ChatMessage::new(Role::Assistant, "Let me read.");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_page".into(),
            arguments: r#"{"offset":0}"#.into(),
        });
        let mut tool = ChatMessage::new(Role::Tool, "page text");
        tool.tool_call_id = Some("c1".into());
        ChatRequest {
            messages: vec![
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, "What is it?"),
                assistant,
                tool,
            ],
            tools: vec![ToolSpec {
                name: "read_page".into(),
                description: "Reads the page.".into(),
                parameters: kljson::json!({"type": "object"}).into(),
            }],
            response_format: Some(JsonSchemaFormat {
                name: "control".into(),
                schema: kljson::json!({"type": "object"}),
            }),
            max_tokens: Some(10),
            stream: true,
            cache_key: None,
        }
    }

    #[test]
    fn a_request_maps_to_initial_prompts_and_a_prompt() {
        let plan = plan(&request());
        let roles: Vec<&str> = plan.initial_prompts.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
        assert!(plan.initial_prompts[0].content.starts_with("Be brief."));
        assert!(plan.initial_prompts[0]
            .content
            .contains("- read_page: Reads the page."));
        assert!(plan.initial_prompts[2]
            .content
            .contains(r#"{"arguments":{"offset":0},"name":"read_page"}"#));
        assert_eq!(plan.prompt, "Tool result:\npage text");
        assert_eq!(
            plan.response_constraint,
            Some(kljson::json!({"type": "object"}))
        );
        // The tool instructions use the format the text tool-call parser reads.
        let parsed = crate::tools::parse::tool_call_in_text(
            r#"{"name": "read_page", "arguments": {"offset": 5}}"#,
            &["read_page".to_string()],
        );
        assert!(parsed.is_some());
    }

    #[test]
    fn tools_move_into_the_prompt_for_a_model_without_tool_calling() {
        let plain = tools_in_prompt(&request());
        assert!(plain.tools.is_empty());
        assert!(plain.messages[0].content.starts_with("Be brief."));
        assert!(plain.messages[0]
            .content
            .contains("- read_page: Reads the page."));
        assert_eq!(plain.messages[2].role, Role::Assistant);
        assert!(plain.messages[2].tool_calls.is_empty());
        assert!(plain.messages[2]
            .content
            .ends_with(r#"{"arguments":{"offset":0},"name":"read_page"}"#));
        assert_eq!(plain.messages[3].role, Role::User);
        assert_eq!(plain.messages[3].content, "Tool result:\npage text");
        assert_eq!(plain.response_format, request().response_format);
    }

    #[test]
    fn a_conversation_ending_with_the_model_is_continued() {
        let mut r = request();
        r.messages.truncate(3);
        r.tools.clear();
        let plan = plan(&r);
        assert_eq!(plan.prompt, "Continue.");
        assert!(!plan.initial_prompts[0]
            .content
            .contains("You can use these tools"));
    }

    #[test]
    fn streamed_chunks_may_be_deltas_or_the_whole_text_so_far() {
        let mut deltas = StreamText::new();
        assert_eq!(deltas.push("Hel"), "Hel");
        assert_eq!(deltas.push("lo"), "lo");
        assert_eq!(deltas.finish().content, "Hello");
        let mut whole = StreamText::new();
        assert_eq!(whole.push("Hel"), "Hel");
        assert_eq!(whole.push("Hello"), "lo");
        assert_eq!(whole.push("Hello there"), " there");
        assert_eq!(whole.finish().content, "Hello there");
    }

    #[test]
    fn token_counts_are_finite_non_negative_numbers() {
        assert_eq!(token_count(12.0), Some(12));
        assert_eq!(token_count(0.0), Some(0));
        assert_eq!(token_count(f64::INFINITY), None);
        assert_eq!(token_count(f64::NAN), None);
        assert_eq!(token_count(-1.0), None);
    }

    #[test]
    fn the_context_count_needs_every_number() {
        assert_eq!(
            ContextCount::from_api(Some(40.0), Some(7.0)),
            Some(ContextCount {
                before: 40,
                prompt: 7
            })
        );
        assert_eq!(ContextCount::from_api(None, Some(7.0)), None);
        assert_eq!(ContextCount::from_api(Some(40.0), None), None);
        assert_eq!(ContextCount::from_api(Some(f64::NAN), Some(7.0)), None);
    }

    #[test]
    fn usage_splits_the_sessions_growth_into_input_and_output() {
        let count = ContextCount {
            before: 40,
            prompt: 7,
        };
        assert_eq!(count.usage(Some(60.0)), Some(Usage::new(47, 13)));
        // A session that grew by less than the measure (the measure counted a reply
        // prefix the session did not keep) reports no output, never a wrapped count.
        assert_eq!(count.usage(Some(45.0)), Some(Usage::new(47, 0)));
        assert_eq!(count.usage(None), None);
        assert_eq!(count.usage(Some(f64::INFINITY)), None);
    }

    #[test]
    fn a_prompt_over_the_window_is_refused_with_what_it_needed() {
        let count = ContextCount {
            before: 40,
            prompt: 7,
        };
        assert!(count.check(Some(47.0)).is_ok());
        assert!(count.check(Some(f64::INFINITY)).is_ok());
        assert!(count.check(None).is_ok());
        let err = count.check(Some(46.0)).expect_err("over the window");
        assert_eq!(err.kind, LlmErrorKind::ContextTooLong);
        let detail = err.detail.as_deref().unwrap_or_default();
        assert!(detail.starts_with("QuotaExceededError: "), "{detail}");
        assert!(
            detail.contains("needs 47 tokens of the session's 46-token"),
            "{detail}"
        );
        assert!(err.message.contains("(46 tokens)"), "{}", err.message);
        // The same kind and remedy as the API's own QuotaExceededError.
        let thrown = failure("QuotaExceededError", "The input is too large.");
        assert_eq!(thrown.kind, err.kind);
        assert!(
            err.message.ends_with("Start a new conversation."),
            "{}",
            err.message
        );
    }
}
