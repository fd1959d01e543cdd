//! Anthropic's Messages API (`POST /v1/messages`, streamed as server-sent events, models
//! from `GET /v1/models`): pure `build_request` / `parse_response` / stream accumulation,
//! and [`AnthropicWire`], its [`WireFormat`] for [`crate::llm::transport::HttpLlm`]. Requests carry
//! the header Anthropic requires for calls made from a browser. No constrained output:
//! `response_format` is ignored (the prompt asks for JSON and the engine reads it from the
//! text). Pure: no browser access.
//! Wire format: <https://docs.anthropic.com/en/api/messages>,
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>,
//! <https://docs.anthropic.com/en/api/errors>.

use serde_json::Value;

use crate::types::VecMap;
use kljson::{self as json, json};

use crate::llm::diagnosis::doctor;
use crate::llm::formats::turns::{self, Block};
use crate::llm::provider::ProviderConfig;
use crate::llm::transport::sse::SseParser;
use crate::llm::transport::{StreamDecoder, WireFormat};
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, ToolCall, Usage};
use crate::ports::HttpRequest;

/// The API version every request names (`anthropic-version`).
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the request sets none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// The messages endpoint of `config`.
pub fn endpoint(config: &ProviderConfig) -> String {
    format!("{}/messages", config.base())
}

/// The headers every call carries: the key, the API version, and the opt-in Anthropic
/// requires before it answers a request from a browser (CORS).
fn headers(config: &ProviderConfig) -> Vec<(String, String)> {
    vec![
        ("x-api-key".into(), config.api_key.trim().to_string()),
        ("anthropic-version".into(), API_VERSION.into()),
        (
            "anthropic-dangerous-direct-browser-access".into(),
            "true".into(),
        ),
    ]
}

/// Builds the HTTP request for `request` (pure). Messages strictly alternate and start
/// and end with the user (see the `turns` module); `response_format` is ignored.
pub fn build_request(config: &ProviderConfig, request: &ChatRequest) -> HttpRequest {
    let conversation = turns::conversation(request);
    let mut messages: Vec<Value> = conversation
        .turns
        .iter()
        .map(|t| {
            let content: Vec<Value> = t.blocks.iter().map(block_json).collect();
            json!({ "role": if t.model { "assistant" } else { "user" }, "content": content })
        })
        .collect();
    // The page block (the first block of the first user turn) is the same for every question
    // on a page: a cache breakpoint there, so a second question reuses it. The stable prefix
    // of a run's later calls ends with the message before the last (the last changes every
    // call): a breakpoint there too.
    // (Not on a request of one turn of one text, or of a text and an image: nothing to
    // reuse.)
    let several = messages.len() > 1
        || messages
            .first()
            .and_then(|m| m["content"].as_array())
            .is_some_and(|blocks| blocks.iter().filter(|b| b["type"] == "text").count() > 1);
    if let Some(first) = messages.first_mut().filter(|_| several) {
        mark_first_cached(first);
    }
    if let Some(before_last) = messages.len().checked_sub(2) {
        mark_cached(&mut messages[before_last]);
    }
    let mut body = json!({
        "model": config.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": request.stream,
    });
    if !conversation.system.is_empty() {
        // The system text as one block with a cache breakpoint: tools and system are the
        // prefix every call of the run shares.
        body["system"] = json!([{ "type": "text", "text": conversation.system,
            "cache_control": ephemeral() }]);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
            .collect();
    }
    HttpRequest::post_json(endpoint(config), headers(config), json::to_string(&body))
}

/// A prompt-cache breakpoint: the prefix up to and including the block that carries it is
/// cached for five minutes. At most 4 per request; this format sets 3 (the system block, the
/// page block and the message before the last).
/// <https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching>
fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

/// Puts a cache breakpoint on the last content block of `message` (not on an empty text
/// block, which the API refuses to cache).
fn mark_cached(message: &mut Value) {
    let last = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.last_mut());
    if let Some(block) = last.filter(|b| !is_text(b, str::is_empty)) {
        block["cache_control"] = ephemeral();
    }
}

/// Puts a cache breakpoint on the first content block of `message` when it is a user
/// turn's non-empty text (the page block).
fn mark_first_cached(message: &mut Value) {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return;
    }
    let first = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.first_mut());
    if let Some(block) = first.filter(|b| is_text(b, |t| !t.is_empty())) {
        block["cache_control"] = ephemeral();
    }
}

/// Whether `block` is a text block whose text (none counts as empty) satisfies `holds`.
fn is_text(block: &Value, holds: impl Fn(&str) -> bool) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && holds(block.get("text").and_then(Value::as_str).unwrap_or(""))
}

fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({ "type": "text", "text": text }),
        Block::Call { id, name, args, .. } => {
            json!({ "type": "tool_use", "id": id, "name": name, "input": args })
        }
        Block::Result { id, content, .. } => {
            json!({ "type": "tool_result", "tool_use_id": id, "content": content })
        }
        // https://docs.anthropic.com/en/docs/build-with-claude/vision#base64-encoded-image-example
        Block::Image(image) => json!({ "type": "image", "source": {
            "type": "base64", "media_type": image.mime_type, "data": image.data } }),
    }
}

/// `stop_reason` as the engine's finish reason: `max_tokens` (and a full context window)
/// is `length`, `tool_use` is `tool_calls`, a natural end is `stop`; others (`refusal`,
/// `pause_turn`) are kept.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "max_tokens" | "model_context_window_exceeded" => "length".into(),
        "tool_use" => "tool_calls".into(),
        "end_turn" | "stop_sequence" => "stop".into(),
        other => other.into(),
    }
}

/// Prompt tokens: fresh input plus what was written to or read from the prompt cache.
/// Usage fields: <https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance>.
fn input_tokens(usage: &Value) -> Option<u64> {
    let fresh = usage.get("input_tokens").and_then(Value::as_u64)?;
    let cached: u64 = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| usage.get(k).and_then(Value::as_u64))
        .sum();
    Some(fresh.saturating_add(cached))
}

/// The prompt tokens read from the cache (`cache_read_input_tokens`; cache writes are
/// billed like fresh input, so they are not counted as cached).
fn cache_read(usage: &Value) -> Option<u64> {
    usage.get("cache_read_input_tokens").and_then(Value::as_u64)
}

/// The kind of an Anthropic error `type` (`None`: unknown, decide by status).
fn kind_of(error_type: &str) -> Option<LlmErrorKind> {
    Some(match error_type {
        "invalid_request_error" | "request_too_large" => LlmErrorKind::BadRequest,
        "authentication_error" | "permission_error" => LlmErrorKind::Auth,
        "not_found_error" => LlmErrorKind::NotFound,
        "rate_limit_error" => LlmErrorKind::RateLimited,
        "api_error" | "overloaded_error" => LlmErrorKind::Server,
        "timeout_error" => LlmErrorKind::Timeout,
        _ => return None,
    })
}

/// `(type, message)` of an error body `{"type": "error", "error": {"type", "message"}}`.
fn error_parts(value: &Value) -> Option<(String, String)> {
    let err = value.get("error")?;
    let kind = err
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| json::to_string(err), str::to_string);
    Some((kind, message))
}

/// An error Anthropic reported inside a successful response (a stream's `error` event).
fn reported_error(error_type: &str, message: &str) -> LlmError {
    let kind = kind_of(error_type).unwrap_or(LlmErrorKind::Server);
    let mut err = LlmError::new(
        kind,
        format!("Anthropic stopped the reply with an error ({error_type}): {message}"),
    );
    err.detail = Some(message.to_string());
    err
}

/// A streamed `tool_use` block.
#[derive(Debug, Default)]
struct ToolBlock {
    id: String,
    name: String,
    /// The input the start event carried (usually `{}`).
    start_input: String,
    /// The `input_json_delta` parts so far.
    json: String,
}

/// Accumulates a Messages stream (the `data` of each event) into a [`ChatResponse`].
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    content: String,
    /// Tool-use blocks by index.
    tools: VecMap<u64, ToolBlock>,
    input: Option<u64>,
    /// The part of `input` read from the prompt cache.
    cached: Option<u64>,
    output: Option<u64>,
    stop_reason: Option<String>,
    done: bool,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one event's data; returns the answer text it added, if any. Data that is
    /// not JSON, `ping` and unknown events are ignored; an `error` event is an error.
    pub fn apply(&mut self, data: &str) -> Result<Option<String>, LlmError> {
        let Ok(event) = kljson::parse_value(data.trim()) else {
            return Ok(None);
        };
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                if let Some(usage) = event.get("message").and_then(|m| m.get("usage")) {
                    self.input = input_tokens(usage).or(self.input);
                    self.cached = cache_read(usage).or(self.cached);
                    self.output = usage
                        .get("output_tokens")
                        .and_then(Value::as_u64)
                        .or(self.output);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let text = |k: &str| {
                            block
                                .get(k)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        let start_input = block
                            .get("input")
                            .filter(|v| !v.is_null())
                            .map(kljson::to_string)
                            .unwrap_or_default();
                        self.tools.insert(
                            index,
                            ToolBlock {
                                id: text("id"),
                                name: text("name"),
                                start_input,
                                json: String::new(),
                            },
                        );
                    }
                    Some("text") => return Ok(self.text(block.get("text"))),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => return Ok(self.text(delta.get("text"))),
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if let Some(tool) = self.tools.get_mut(&index) {
                            tool.json.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = event.get("usage") {
                    self.output = usage
                        .get("output_tokens")
                        .and_then(Value::as_u64)
                        .or(self.output);
                    self.input = input_tokens(usage).or(self.input);
                    self.cached = cache_read(usage).or(self.cached);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let (kind, message) = error_parts(&event)
                    .unwrap_or_else(|| ("error".into(), json::to_string(&event)));
                return Err(reported_error(&kind, &message));
            }
            _ => {}
        }
        Ok(None)
    }

    fn text(&mut self, text: Option<&Value>) -> Option<String> {
        let text = text.and_then(Value::as_str).filter(|t| !t.is_empty())?;
        self.content.push_str(text);
        Some(text.to_string())
    }

    /// Whether `message_stop` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The accumulated reply (tool uses in block order, their input from the deltas, else
    /// from the start event, else `{}`).
    pub fn finish(self) -> ChatResponse {
        let tool_calls = self
            .tools
            .into_values()
            .filter(|t| !t.name.is_empty())
            .enumerate()
            .map(|(i, t)| ToolCall {
                id: if t.id.is_empty() {
                    format!("call_{i}")
                } else {
                    t.id
                },
                name: t.name,
                arguments: [t.json, t.start_input]
                    .into_iter()
                    .find(|s| !s.trim().is_empty())
                    .unwrap_or_else(|| "{}".into()),
            })
            .collect();
        let usage = (self.input.is_some() || self.output.is_some()).then(|| {
            Usage::new(self.input.unwrap_or(0), self.output.unwrap_or(0))
                .with_cached(self.cached.unwrap_or(0))
        });
        ChatResponse {
            content: self.content,
            tool_calls,
            usage,
            finish_reason: self.stop_reason.as_deref().map(finish_reason),
        }
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
        "`message_stop`"
    }
    fn finish(self: Box<Self>) -> ChatResponse {
        StreamAccumulator::finish(*self)
    }
}

/// Parses a non-streamed success body (a Message: `content` blocks, `stop_reason`,
/// `usage`). A whole event stream (a JSON content type on a stream) is accepted too; a
/// body that is not JSON is taken as plain text, never an error.
pub fn parse_response(body: &str) -> Result<ChatResponse, LlmError> {
    let Ok(value) = kljson::parse_value(body) else {
        let trimmed = body.trim_start();
        if trimmed.starts_with("event:") || trimmed.starts_with("data:") {
            return parse_event_stream(body);
        }
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    };
    if value.get("type").and_then(Value::as_str) == Some("error") {
        let (kind, message) = error_parts(&value).unwrap_or_default();
        return Err(reported_error(&kind, &message));
    }
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    };
    let mut response = ChatResponse::default();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    response.content.push_str(text);
                }
            }
            Some("tool_use") => {
                let Some(name) = block.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let n = response.tool_calls.len();
                response.tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty())
                        .map_or_else(|| format!("call_{n}"), str::to_string),
                    name: name.to_string(),
                    arguments: block
                        .get("input")
                        .filter(|v| !v.is_null())
                        .map_or_else(|| "{}".into(), kljson::to_string),
                });
            }
            _ => {}
        }
    }
    if let Some(usage) = value.get("usage") {
        if let Some(input) = input_tokens(usage) {
            let output = usage
                .get("output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            response.usage =
                Some(Usage::new(input, output).with_cached(cache_read(usage).unwrap_or(0)));
        }
    }
    response.finish_reason = value
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(finish_reason);
    Ok(response)
}

fn parse_event_stream(body: &str) -> Result<ChatResponse, LlmError> {
    let mut parser = SseParser::new();
    let mut acc = StreamAccumulator::new();
    for event in parser
        .push(body.as_bytes())
        .into_iter()
        .chain(parser.finish())
    {
        acc.apply(&event.data)?;
    }
    Ok(acc.finish())
}

/// Maps an HTTP error status and body to an actionable [`LlmError`] (pure): the kind from
/// the body's error `type` (else the status; 529 `overloaded_error` is a retryable server
/// failure), the detail from its `message`.
pub fn parse_error(config: &ProviderConfig, status: u16, body: &str) -> LlmError {
    let parsed = kljson::parse_value(body).ok().and_then(|v| error_parts(&v));
    let kind = parsed
        .as_ref()
        .and_then(|(t, _)| kind_of(t))
        .unwrap_or_else(|| LlmErrorKind::from_status(status));
    let kind = crate::llm::transport::overflow_kind(kind, body);
    let detail = match parsed {
        Some((_, message)) => Some(message),
        None => Some(body.trim().to_string()),
    }
    .filter(|d| !d.trim().is_empty());
    doctor::http_error(config, &endpoint(config), status, kind, detail)
}

/// Model ids from a `GET /v1/models` body (`{"data": [{"id": ...}]}`).
pub fn parse_models(body: &str) -> Result<Vec<String>, LlmError> {
    let value: Value = kljson::parse_value(body).map_err(|e| {
        LlmError::new(
            LlmErrorKind::BadRequest,
            format!("The model list is not the JSON Anthropic sends (GET /v1/models): {e}"),
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

/// Anthropic's [`WireFormat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicWire {
    config: ProviderConfig,
}

impl AnthropicWire {
    /// The wire format for `config`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }
}

impl WireFormat for AnthropicWire {
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
            format!("{}/models?limit=1000", self.config.base()),
            headers(&self.config),
        )
    }
    fn parse_models(&self, body: &str) -> Result<Vec<String>, LlmError> {
        parse_models(body)
    }
    /// Anthropic is never sent constrained output, so nothing is a refusal of it.
    fn rejects_constrained_output(&self, _err: &LlmError) -> bool {
        false
    }
}
