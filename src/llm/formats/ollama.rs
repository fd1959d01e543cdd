//! Ollama's native chat API (`POST /api/chat`, streamed as NDJSON, models from
//! `GET /api/tags`): pure `build_request` / `parse_response` / stream accumulation, and
//! [`OllamaWire`], its [`WireFormat`] for [`crate::llm::transport::HttpLlm`]. Unlike Ollama's `/v1`
//! it takes the context window per request (`options.num_ctx`), so long pages are not
//! silently cut to Ollama's small default window. Pure: no browser access.
//! Wire format: <https://github.com/ollama/ollama/blob/main/docs/api.md>.

use serde_json::Value;

use kljson::{self as json, json};

use crate::llm::diagnosis::doctor;
use crate::llm::formats::openai::{bearer_headers, function_tools};
use crate::llm::formats::turns::arguments_object;
use crate::llm::provider::ProviderConfig;
use crate::llm::transport::{StreamDecoder, WireFormat};
use crate::llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmError, LlmErrorKind, Role, ToolCall, Usage,
};
use crate::ports::HttpRequest;

/// The chat endpoint of `config`.
pub fn endpoint(config: &ProviderConfig) -> String {
    format!("{}/api/chat", config.base())
}

/// Builds the HTTP request for `request` (pure).
pub fn build_request(config: &ProviderConfig, request: &ChatRequest) -> HttpRequest {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_json(&request.messages[..i], m))
        .collect();
    let mut options = json!({ "num_ctx": config.context_window() });
    if let Some(max) = request.max_tokens {
        options["num_predict"] = json!(max);
    }
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "stream": request.stream,
        "options": options,
    });
    if !request.tools.is_empty() {
        body["tools"] = function_tools(&request.tools);
    }
    if let Some(format) = &request.response_format {
        body["format"] = format.schema.clone();
    }
    HttpRequest::post_json(
        endpoint(config),
        bearer_headers(config),
        json::to_string(&body),
    )
}

/// One message; `earlier` is the conversation before it (a tool result names its tool,
/// found from the call it answers).
fn message_json(earlier: &[ChatMessage], m: &ChatMessage) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut v = json!({ "role": role, "content": m.content });
    if !m.images.is_empty() {
        // Base64 images on the message
        // (https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-images).
        v["images"] = m.images.iter().map(|i| json!(i.data)).collect();
    }
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": arguments_object(&c.arguments)}}))
            .collect();
    }
    if m.role == Role::Tool {
        let name = m.tool_call_id.as_deref().and_then(|id| {
            earlier
                .iter()
                .rev()
                .flat_map(|e| e.tool_calls.iter())
                .find(|c| c.id == id)
                .map(|c| c.name.clone())
        });
        if let Some(name) = name {
            v["tool_name"] = json!(name);
        }
    }
    v
}

/// Accumulates Ollama chat chunks (streamed NDJSON lines, or one whole reply) into a
/// [`ChatResponse`].
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    response: ChatResponse,
    done_reason: Option<String>,
    done: bool,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one NDJSON line; returns the answer text it added, if any. A line that is
    /// not a JSON object is ignored; an `{"error": ...}` line is an error.
    pub fn apply(&mut self, line: &str) -> Result<Option<String>, LlmError> {
        let Ok(value) = kljson::parse_value(line.trim()) else {
            return Ok(None);
        };
        self.apply_value(&value)
    }

    fn apply_value(&mut self, value: &Value) -> Result<Option<String>, LlmError> {
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            // A streamed call reports errors after its 200 head, as a line; a refused
            // `format` is a bad request there too, so the fallback still applies.
            let text = error_text(err);
            let kind = if mentions_format(&text) {
                LlmErrorKind::BadRequest
            } else {
                LlmErrorKind::Server
            };
            let mut e = LlmError::new(kind, format!("Ollama reported an error: {text}"));
            e.detail = Some(text);
            return Err(e);
        }
        let message = value.get("message");
        for call in message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(f) = call.get("function") else {
                continue;
            };
            let Some(name) = f.get("name").and_then(Value::as_str) else {
                continue;
            };
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "{}".into(),
                Some(other) => json::to_string(other),
            };
            let n = self.response.tool_calls.len();
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{n}"), str::to_string);
            self.response.tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
        if value.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            if let Some(reason) = value.get("done_reason").and_then(Value::as_str) {
                self.done_reason = Some(reason.to_string());
            }
            let input = value.get("prompt_eval_count").and_then(Value::as_u64);
            let output = value.get("eval_count").and_then(Value::as_u64);
            if input.is_some() || output.is_some() {
                self.response.usage = Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)));
            }
        }
        match message.and_then(|m| m.get("content")) {
            Some(Value::String(s)) if !s.is_empty() => {
                self.response.content.push_str(s);
                Ok(Some(s.clone()))
            }
            _ => Ok(None),
        }
    }

    /// Whether the final (`done: true`) line was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The accumulated reply. `done_reason` becomes the finish reason (`stop` with tool
    /// calls becomes `tool_calls`).
    pub fn finish(mut self) -> ChatResponse {
        self.response.finish_reason = match self.done_reason.as_deref() {
            Some("stop") | None if !self.response.tool_calls.is_empty() => {
                Some("tool_calls".into())
            }
            Some(reason) => Some(reason.to_string()),
            None if self.done => Some("stop".into()),
            None => None,
        };
        self.response
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
        "`done: true`"
    }
    fn finish(self: Box<Self>) -> ChatResponse {
        StreamAccumulator::finish(*self)
    }
}

fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| json::to_string(other), str::to_string),
    }
}

/// Parses a non-streamed success body: one reply object, or a whole NDJSON stream (a
/// server that ignores `"stream": false`, or a stream sent with a JSON content type). A
/// body that is not JSON is taken as plain text, never an error.
pub fn parse_response(body: &str) -> Result<ChatResponse, LlmError> {
    let mut acc = StreamAccumulator::new();
    if let Ok(value) = kljson::parse_value(body) {
        if ["message", "done", "error"]
            .iter()
            .any(|k| value.get(k).is_some())
        {
            acc.apply_value(&value)?;
            return Ok(acc.finish());
        }
        // Some other JSON: show it rather than an empty answer.
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    }
    let mut any = false;
    for line in body.lines() {
        if let Ok(value) = kljson::parse_value(line.trim()) {
            if value.is_object() {
                any = true;
                acc.apply_value(&value)?;
            }
        }
    }
    if !any {
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    }
    Ok(acc.finish())
}

/// Whether `text` is Ollama refusing the `format` option (an invalid or unsupported
/// schema, or a server too old for schemas).
fn mentions_format(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    ["invalid format", "in format", "for format"]
        .iter()
        .any(|k| text.contains(k))
}

/// Maps an HTTP error status and body to an actionable [`LlmError`] (pure). Ollama's body
/// is `{"error": "..."}`; a 403 with an empty body is its origin check (`OLLAMA_ORIGINS`),
/// so an empty body leaves the detail empty for the doctor to recognize. A schema the
/// server cannot use is reported with a 500, but retrying cannot help: it is a bad request.
pub fn parse_error(config: &ProviderConfig, status: u16, body: &str) -> LlmError {
    let detail = match kljson::parse_value(body) {
        Ok(v) => v
            .get("error")
            .map(error_text)
            .or_else(|| Some(json::to_string(&v))),
        Err(_) => Some(body.trim().to_string()),
    }
    .filter(|d| !d.trim().is_empty());
    let kind = match LlmErrorKind::from_status(status) {
        LlmErrorKind::Server if detail.as_deref().is_some_and(mentions_format) => {
            LlmErrorKind::BadRequest
        }
        kind => kind,
    };
    let kind = crate::llm::transport::overflow_kind(kind, body);
    doctor::http_error(config, &endpoint(config), status, kind, detail)
}

/// Model names from a `GET /api/tags` body (`{"models": [{"name": ...}]}`).
pub fn parse_models(body: &str) -> Result<Vec<String>, LlmError> {
    let value: Value = kljson::parse_value(body).map_err(|e| {
        LlmError::new(
            LlmErrorKind::BadRequest,
            format!("The model list is not the JSON Ollama sends (GET /api/tags): {e}"),
        )
    })?;
    Ok(value
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            m.get("name")
                .or_else(|| m.get("model"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect())
}

/// Ollama's native [`WireFormat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaWire {
    config: ProviderConfig,
}

impl OllamaWire {
    /// The wire format for `config`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }
}

impl WireFormat for OllamaWire {
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
            format!("{}/api/tags", self.config.base()),
            bearer_headers(&self.config),
        )
    }
    fn parse_models(&self, body: &str) -> Result<Vec<String>, LlmError> {
        parse_models(body)
    }
    /// Ollama names its `format` option when it refuses a schema ("invalid JSON schema in
    /// format", "invalid format: ...", "... required for format").
    fn rejects_constrained_output(&self, err: &LlmError) -> bool {
        err.kind == LlmErrorKind::BadRequest && err.detail.as_deref().is_some_and(mentions_format)
    }
}
