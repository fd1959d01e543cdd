//! The OpenAI-compatible chat-completions wire format (OpenAI, Ollama's `/v1`, LM Studio,
//! llama.cpp's server, vLLM, OpenRouter, Groq): pure `build_request` / `parse_response` /
//! stream accumulation, and [`OpenAiWire`], its [`WireFormat`] for
//! [`crate::llm::transport::HttpLlm`]. Wire format: <https://platform.openai.com/docs/api-reference/chat>.

use serde_json::Value;

use crate::types::VecMap;
use kljson::{self as json, json};

use crate::llm::diagnosis::doctor;
use crate::llm::provider::ProviderConfig;
use crate::llm::transport::{StreamDecoder, WireFormat};
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, Role, ToolCall, Usage};
use crate::ports::HttpRequest;

/// The chat-completions endpoint of `config`.
pub fn endpoint(config: &ProviderConfig) -> String {
    format!("{}/chat/completions", config.base())
}

/// An `Authorization: Bearer` header when a key is set (also used by Ollama, for a server
/// behind a proxy or ollama.com).
pub(crate) fn bearer_headers(config: &ProviderConfig) -> Vec<(String, String)> {
    let key = config.api_key.trim();
    if key.is_empty() {
        Vec::new()
    } else {
        vec![("authorization".into(), format!("Bearer {key}"))]
    }
}

/// Tool definitions in the chat-completions shape (also Ollama's).
pub(crate) fn function_tools(tools: &[crate::llm::ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters }})
        })
        .collect()
}

/// Builds the HTTP request for `request` (pure).
pub fn build_request(config: &ProviderConfig, request: &ChatRequest) -> HttpRequest {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "stream": request.stream,
    });
    if request.stream {
        body["stream_options"] = json!({ "include_usage": true });
    }
    if !request.tools.is_empty() {
        body["tools"] = function_tools(&request.tools);
    }
    if let Some(format) = &request.response_format {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": format.name, "schema": format.schema, "strict": true }});
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    // Routes the run's calls over one prompt prefix to the same cache
    // (https://platform.openai.com/docs/guides/prompt-caching); a server that refuses it
    // gets calls without it from then on (see `rejects_cache_key`).
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    let mut headers = bearer_headers(config);
    if request.stream {
        headers.push(("accept".into(), "text/event-stream".into()));
    }
    HttpRequest::post_json(endpoint(config), headers, json::to_string(&body))
}

fn message_json(m: &crate::llm::ChatMessage) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut v = json!({ "role": role, "content": m.content });
    if !m.images.is_empty() {
        // Content parts: the text, then each image as a data URL
        // (https://platform.openai.com/docs/guides/images-vision).
        let mut parts = vec![json!({"type": "text", "text": m.content})];
        parts.extend(
            m.images
                .iter()
                .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
        );
        v["content"] = Value::Array(parts);
    }
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// Parses a non-streamed success body. A body that is not the expected JSON is taken as
/// plain text (never an error): some servers answer with bare text.
pub fn parse_response(body: &str) -> Result<ChatResponse, LlmError> {
    let Ok(value) = kljson::parse_value(body) else {
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    };
    if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
        return Err(LlmError::new(
            LlmErrorKind::Server,
            format!("The model server reported an error: {}", error_text(err)),
        ));
    }
    let Some(choice) = value.get("choices").and_then(|c| c.get(0)) else {
        return Ok(ChatResponse {
            content: text_of(&value),
            usage: usage_of(&value),
            ..Default::default()
        });
    };
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let content = message.get("content").map(text_of).unwrap_or_default();
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let f = c.get("function")?;
                    let name = f.get("name")?.as_str()?.to_string();
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => json::to_string(other),
                        None => "{}".into(),
                    };
                    let id = c
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("call_{i}"));
                    Some(ToolCall {
                        id,
                        name,
                        arguments,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        content,
        tool_calls,
        usage: usage_of(&value),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        // Content parts: [{"type":"text","text":"..."}]
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        other => json::to_string(other),
    }
}

/// `usage` of a completion or of the last stream chunk, with the prompt tokens served
/// from the cache (`usage.prompt_tokens_details.cached_tokens`,
/// <https://platform.openai.com/docs/api-reference/chat/object>).
fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    let input = u.get("prompt_tokens").and_then(Value::as_u64)?;
    let output = u
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cached = u
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage::new(input, output).with_cached(cached))
}

fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(_) => err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| json::to_string(err)),
        other => json::to_string(other),
    }
}

/// Maps an HTTP error status and body to an actionable [`LlmError`] (pure).
pub fn parse_error(config: &ProviderConfig, status: u16, body: &str) -> LlmError {
    let detail = kljson::parse_value(body)
        .ok()
        .and_then(|v| v.get("error").map(error_text))
        .unwrap_or_else(|| body.to_string());
    let kind = crate::llm::transport::overflow_kind(LlmErrorKind::from_status(status), body);
    doctor::http_error(config, &endpoint(config), status, kind, Some(detail))
}

/// Model ids from a `GET /models` body (`{"data": [{"id": ...}]}`).
pub fn parse_models(body: &str) -> Result<Vec<String>, LlmError> {
    let value: Value = kljson::parse_value(body).map_err(|e| {
        LlmError::new(
            LlmErrorKind::BadRequest,
            format!("The model list is not the JSON an OpenAI-compatible server sends: {e}"),
        )
    })?;
    Ok(value
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect())
}

/// Most tool calls one streamed reply may carry: a stream's `index` beyond this is a
/// protocol error, never a size (a hostile `"index": 4294967295` must not allocate).
pub const MAX_STREAMED_TOOL_CALLS: u64 = 64;

/// Accumulates streamed chat-completion chunks into a [`ChatResponse`].
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    response: ChatResponse,
    /// Tool calls by their stream `index` (at most [`MAX_STREAMED_TOOL_CALLS`]).
    calls: VecMap<u64, ToolCall>,
    /// Payloads that were not a chunk of this format (not JSON, or fields of the wrong type).
    unreadable: usize,
    done: bool,
}

/// Whether a chunk's fields have types no chat-completion chunk has (`choices` not a list,
/// a `delta` that is not an object, `content` that is not text, ...).
fn misshapen(chunk: &Value) -> bool {
    let wrong =
        |v: Option<&Value>, ok: fn(&Value) -> bool| v.is_some_and(|v| !v.is_null() && !ok(v));
    if !chunk.is_object() || wrong(chunk.get("choices"), Value::is_array) {
        return true;
    }
    let choice = chunk.get("choices").and_then(|c| c.get(0));
    if wrong(choice, Value::is_object) {
        return true;
    }
    let delta = choice.and_then(|c| c.get("delta"));
    wrong(delta, Value::is_object)
        || wrong(delta.and_then(|d| d.get("content")), Value::is_string)
        || wrong(delta.and_then(|d| d.get("tool_calls")), Value::is_array)
        || wrong(chunk.get("usage"), Value::is_object)
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one SSE `data:` payload; returns the content delta it carried, if any.
    /// `[DONE]` marks the end; a payload that is not JSON is ignored; a tool-call index of
    /// [`MAX_STREAMED_TOOL_CALLS`] or more is an error.
    pub fn apply(&mut self, data: &str) -> Result<Option<String>, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let Ok(value) = kljson::parse_value(data) else {
            self.unreadable += 1;
            return Ok(None);
        };
        if misshapen(&value) {
            self.unreadable += 1;
        }
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            return Err(LlmError::new(
                LlmErrorKind::Server,
                format!(
                    "The model server reported an error mid-stream: {}",
                    error_text(err)
                ),
            ));
        }
        if let Some(usage) = usage_of(&value) {
            self.response.usage = Some(usage);
        }
        let Some(choice) = value.get("choices").and_then(|c| c.get(0)) else {
            return Ok(None);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.response.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(None);
        };
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if index >= MAX_STREAMED_TOOL_CALLS {
                return Err(LlmError::new(
                    LlmErrorKind::BadRequest,
                    format!(
                        "The model server sent a tool call numbered {index}; a reply may carry at most {MAX_STREAMED_TOOL_CALLS}. It does not speak the OpenAI streaming format correctly: check the Base URL and the server in Options."
                    ),
                ));
            }
            let slot = self.calls.get_or_insert_with(index, || ToolCall {
                id: format!("call_{index}"),
                name: String::new(),
                arguments: String::new(),
            });
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                slot.id = id.to_string();
            }
            if let Some(f) = call.get("function") {
                if let Some(name) = f.get("name").and_then(Value::as_str) {
                    slot.name.push_str(name);
                }
                match f.get("arguments") {
                    Some(Value::String(s)) => slot.arguments.push_str(s),
                    Some(Value::Null) | None => {}
                    Some(other) => json::write_value(&mut slot.arguments, other),
                }
            }
        }
        match delta.get("content") {
            Some(Value::String(s)) if !s.is_empty() => {
                self.response.content.push_str(s);
                Ok(Some(s.clone()))
            }
            _ => Ok(None),
        }
    }

    /// Whether `[DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The accumulated response (tool calls without a name are dropped).
    pub fn finish(mut self) -> ChatResponse {
        self.response.tool_calls = std::mem::take(&mut self.calls).into_values().collect();
        self.response.tool_calls.retain(|c| !c.name.is_empty());
        for c in &mut self.response.tool_calls {
            if c.arguments.trim().is_empty() {
                c.arguments = "{}".into();
            }
        }
        self.response
    }
}

/// The OpenAI-compatible [`WireFormat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiWire {
    config: ProviderConfig,
}

impl OpenAiWire {
    /// The wire format for `config`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }
}

impl StreamDecoder for StreamAccumulator {
    fn apply(&mut self, payload: &str) -> Result<Option<String>, LlmError> {
        StreamAccumulator::apply(self, payload)
    }
    fn is_done(&self) -> bool {
        StreamAccumulator::is_done(self)
    }
    fn terminator(&self) -> &'static str {
        "`[DONE]`"
    }
    fn unreadable(&self) -> usize {
        self.unreadable
    }
    fn finish(self: Box<Self>) -> ChatResponse {
        StreamAccumulator::finish(*self)
    }
}

impl WireFormat for OpenAiWire {
    fn config(&self) -> &ProviderConfig {
        &self.config
    }
    fn build_request(&self, request: &ChatRequest) -> HttpRequest {
        build_request(&self.config, request)
    }
    fn parse_response(&self, body: &str) -> Result<ChatResponse, LlmError> {
        parse_response(body)
    }
    fn parse_error(&self, status: u16, body: &str) -> LlmError {
        parse_error(&self.config, status, body)
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(StreamAccumulator::new())
    }
    fn models_request(&self) -> HttpRequest {
        HttpRequest::get(
            format!("{}/models", self.config.base()),
            bearer_headers(&self.config),
        )
    }
    fn parse_models(&self, body: &str) -> Result<Vec<String>, LlmError> {
        parse_models(body)
    }
    fn rejects_cache_key(&self, err: &LlmError) -> bool {
        // OpenAI itself documents the field: its refusals are about something else.
        !is_openai(&self.config) && crate::llm::transport::names_cache_key(err)
    }
}

/// Whether `config` points at OpenAI's own API (`api.openai.com`).
pub fn is_openai(config: &ProviderConfig) -> bool {
    crate::llm::provider::origin_of(&config.base_url)
        .is_some_and(|origin| origin.eq_ignore_ascii_case("https://api.openai.com"))
}
