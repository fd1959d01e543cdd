//! Chat-model wire types shared by every provider, the error kinds of a model call and the
//! single place that decides which of them are worth retrying. Pure: no browser access.

pub mod anthropic;
pub mod builtin;
pub mod doctor;
pub mod gemini;
pub mod json_text;
pub mod ollama;
pub mod openai;
pub mod provider;
pub mod sse;
mod turns;
pub mod wire;

pub use provider::{Capabilities, Provider, ProviderConfig};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl ChatMessage {
    /// A message with text only.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments (root is an object).
    pub parameters: Value,
}

/// A tool call chosen by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id (made up when the provider gives none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string, exactly as the model wrote them.
    pub arguments: String,
}

/// Ask the model for JSON matching a schema (where the provider supports it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
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

/// What kind of failure a model call had. [`LlmErrorKind::is_retryable`] is the one place
/// that decides whether a failure is worth another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// No response: connection refused, DNS, CORS, the body broke off.
    Network,
    /// No response in time.
    Timeout,
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx.
    Server,
    /// HTTP 401/403: the key was rejected or is missing.
    Auth,
    /// HTTP 404: wrong base URL or model.
    NotFound,
    /// HTTP 400 and other 4xx: the request was rejected.
    BadRequest,
    /// The settings cannot make a request (no base URL, bad URL).
    Config,
    /// The model cannot run here (Chrome's built-in model is unavailable on this device).
    Unavailable,
}

impl LlmErrorKind {
    /// Whether another attempt may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Network | Self::Timeout | Self::RateLimited | Self::Server
        )
    }

    /// The kind for an HTTP status that is not a success.
    pub fn from_status(status: u16) -> Self {
        match status {
            401 | 403 => Self::Auth,
            404 => Self::NotFound,
            408 => Self::Timeout,
            429 => Self::RateLimited,
            500..=599 => Self::Server,
            _ => Self::BadRequest,
        }
    }
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// The kind, deciding retry and wording.
    pub kind: LlmErrorKind,
    /// An actionable message for the user.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// How long the server asked us to wait (`Retry-After`), in ms.
    pub retry_after_ms: Option<u64>,
    /// What the server itself said (its error message or body), if anything.
    pub detail: Option<String>,
}

impl LlmError {
    /// An error of `kind` with `message`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
            detail: None,
        }
    }
}

/// Rough token estimate for text when the provider reports no usage (~4 characters a token).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Estimated prompt tokens of a request.
pub fn estimate_request_tokens(request: &ChatRequest) -> u64 {
    let messages: u64 = request
        .messages
        .iter()
        .map(|m| {
            4 + estimate_tokens(&m.content)
                + m.tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.arguments) + 4)
                    .sum::<u64>()
        })
        .sum();
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.description) + estimate_tokens(&t.parameters.to_string()) + 4)
        .sum();
    messages + tools
}

/// The wire format for `config`'s provider, or `None` for Chrome's built-in model (which
/// the browser layer provides without HTTP).
pub fn wire_for(config: ProviderConfig) -> Option<Box<dyn wire::WireFormat>> {
    match config.provider {
        Provider::OpenaiCompatible => Some(Box::new(openai::OpenAiWire::new(config))),
        Provider::Ollama => Some(Box::new(ollama::OllamaWire::new(config))),
        Provider::Anthropic => Some(Box::new(anthropic::AnthropicWire::new(config))),
        Provider::Gemini => Some(Box::new(gemini::GeminiWire::new(config))),
        Provider::ChromeBuiltin => None,
    }
}
