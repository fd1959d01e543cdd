//! Chat-model wire types shared by every provider and the agent: messages, tools, tool
//! calls, replies, usage, and the token estimates used when a provider reports none.

use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user (or the agent speaking for the user).
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

kljson::named_enum!(Role {
    System = "system",
    User = "user",
    Assistant = "assistant",
    Tool = "tool",
});

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct ChatMessage {
    /// The author.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images a user message shows the model (a screenshot). Only ever in a live request:
    /// never in anything saved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::image::Image>,
}

impl ChatMessage {
    /// A message with text only.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, FromJson, ToJson)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments (root is an object), shared with the tool's definition:
    /// offering a tool to the model on every request copies no schema.
    pub parameters: Arc<Value>,
}

/// A tool call chosen by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct ToolCall {
    /// Provider-assigned id (made up when the provider gives none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string, exactly as the model wrote them.
    pub arguments: String,
}

/// Ask the model for JSON matching a schema (where the provider supports it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct JsonSchemaFormat {
    /// Schema name.
    pub name: String,
    /// The schema.
    pub schema: Value,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Tools offered (empty: none).
    pub tools: Vec<ToolSpec>,
    /// Constrained output, if requested.
    pub response_format: Option<JsonSchemaFormat>,
    /// Cap on generated tokens.
    pub max_tokens: Option<u32>,
    /// Whether to stream the reply.
    pub stream: bool,
    /// The prompt-cache key of the run and context label this call belongs to (a short
    /// hash, never user text): OpenAI-compatible servers get it as `prompt_cache_key`.
    pub cache_key: Option<String>,
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
pub struct Usage {
    /// Prompt tokens (cached ones included).
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// The part of `input` the provider read from its prompt cache (0: none reported).
    /// Absent from records written before it was counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input: u64,
}

impl Usage {
    /// `input` prompt and `output` generated tokens, none of them cached.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input,
            output,
            cached_input: 0,
        }
    }

    /// The same counts with `cached` of the prompt tokens read from the cache (at most
    /// `input`: a server reporting more is not believed past the prompt's size).
    #[must_use]
    pub fn with_cached(self, cached: u64) -> Self {
        Self {
            cached_input: cached.min(self.input),
            ..self
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatResponse {
    /// The text of the reply (may be empty when it only calls tools).
    pub content: String,
    /// Tool calls in the reply.
    pub tool_calls: Vec<ToolCall>,
    /// Usage reported by the provider, if any.
    pub usage: Option<Usage>,
    /// Why generation stopped (`stop`, `length`, `tool_calls`, ...), if reported.
    pub finish_reason: Option<String>,
}

pub use super::tokens::estimate_tokens;
use super::tokens::{estimate_json_tokens_memo, estimate_tokens_memo};
use kljson::{FromJson, ToJson};

/// Estimated prompt tokens of a request.
pub fn estimate_request_tokens(request: &ChatRequest) -> u64 {
    let messages: u64 = request
        .messages
        .iter()
        .map(|m| {
            4 + estimate_tokens_memo(&m.content)
                + m.tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.arguments) + 4)
                    .sum::<u64>()
                + m.images
                    .iter()
                    .map(super::image::Image::estimated_tokens)
                    .sum::<u64>()
        })
        .sum();
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| {
            estimate_tokens_memo(&t.description) + estimate_json_tokens_memo(&t.parameters) + 4
        })
        .sum();
    messages + tools
}
