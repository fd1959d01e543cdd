//! Google's Gemini API (`models/{model}:generateContent`, `:streamGenerateContent?alt=sse`
//! streamed as server-sent events, models from `GET /models`): pure `build_request` /
//! `parse_response` / stream accumulation, and [`GeminiWire`], its [`WireFormat`] for
//! [`crate::llm::transport::HttpLlm`]. The key travels in the `x-goog-api-key` header, never in the
//! URL (URLs end up in logs). Pure: no browser access.
//! Wire format: <https://ai.google.dev/api/generate-content>,
//! <https://ai.google.dev/gemini-api/docs/function-calling>, <https://ai.google.dev/api/models>.
//!
//! Choices worth knowing:
//! - Tool parameters go in `parameters`, which takes an OpenAPI subset of JSON Schema:
//!   [`function_parameters`] keeps only the keywords Gemini accepts (see [`SCHEMA_KEYS`]),
//!   turns `"type": ["integer", "null"]` into `"type": "integer", "nullable": true`,
//!   inlines local `$ref`s, keeps `format` only where Gemini knows it, and drops the
//!   parameters of a tool whose object has no properties (Gemini rejects an empty object).
//!   The constrained-output schema goes in `responseJsonSchema`, which takes JSON Schema
//!   as is.
//! - Thinking models sign their function calls (`thoughtSignature`), and Gemini 3 refuses
//!   a conversation whose calls come back unsigned. The signature rides in the call's id
//!   (`<id>~ts~<signature>`), so it survives the trajectory and a resumed run; a call
//!   without one (another provider's, an older run's) is sent with the placeholder
//!   signature Google documents for that case.
//! - A prompt Gemini blocks outright (`promptFeedback.blockReason`, no candidates) is an
//!   error of kind [`LlmErrorKind::BadRequest`] that names the reason: there is no answer to
//!   show, and retrying the same prompt gets the same refusal. A candidate that stops for
//!   `SAFETY`, `RECITATION`, ... keeps whatever text it has, with the reason in lower case
//!   as the finish reason.

use serde_json::{Map, Value};

use kljson::{self as json, json};

use crate::llm::diagnosis::doctor;
use crate::llm::formats::turns::{self, Block};
use crate::llm::provider::ProviderConfig;
use crate::llm::transport::sse::SseParser;
use crate::llm::transport::{StreamDecoder, WireFormat};
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, ToolCall, Usage};
use crate::ports::HttpRequest;

mod schema;

pub use schema::{function_parameters, SCHEMA_KEYS};

/// Separates a call id from the thought signature it carries.
pub const SIGNATURE_MARK: &str = "~ts~";

/// The signature Google documents for function calls that have none (history from another
/// model): it tells Gemini 3 to skip the check.
pub const PLACEHOLDER_SIGNATURE: &str = "skip_thought_signature_validator";

/// The model name as the URL wants it (without a `models/` prefix).
fn model(config: &ProviderConfig) -> &str {
    let m = config.model.trim();
    m.strip_prefix("models/").unwrap_or(m)
}

/// The endpoint of one call (streamed calls ask for server-sent events).
pub fn endpoint(config: &ProviderConfig, stream: bool) -> String {
    if stream {
        format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            config.base(),
            model(config)
        )
    } else {
        format!("{}/models/{}:generateContent", config.base(), model(config))
    }
}

fn key_header(config: &ProviderConfig) -> Vec<(String, String)> {
    vec![("x-goog-api-key".into(), config.api_key.trim().to_string())]
}

/// A call id carrying `signature`.
pub fn signed_id(id: &str, signature: Option<&str>) -> String {
    match signature.filter(|s| !s.is_empty()) {
        Some(s) => format!("{id}{SIGNATURE_MARK}{s}"),
        None => id.to_string(),
    }
}

/// The thought signature a call id carries, if any.
pub fn signature_of(id: &str) -> Option<&str> {
    id.split_once(SIGNATURE_MARK)
        .map(|(_, s)| s)
        .filter(|s| !s.is_empty())
}

/// Builds the HTTP request for `request` (pure).
pub fn build_request(config: &ProviderConfig, request: &ChatRequest) -> HttpRequest {
    let conversation = turns::conversation(request);
    let contents: Vec<Value> = conversation
        .turns
        .iter()
        .map(|t| {
            let signed = t.blocks.iter().any(
                |b| matches!(b, Block::Call { original_id, .. } if signature_of(original_id).is_some()),
            );
            let mut placeholder = !signed;
            let parts: Vec<Value> = t
                .blocks
                .iter()
                .map(|b| {
                    let mut part = part_json(b);
                    if let Block::Call { original_id, .. } = b {
                        if let Some(sig) = signature_of(original_id) {
                            part["thoughtSignature"] = json!(sig);
                        } else if placeholder {
                            // Only the first call of a turn is signed (parallel calls).
                            part["thoughtSignature"] = json!(PLACEHOLDER_SIGNATURE);
                            placeholder = false;
                        }
                    }
                    part
                })
                .collect();
            json!({ "role": if t.model { "model" } else { "user" }, "parts": parts })
        })
        .collect();
    let mut body = json!({ "contents": contents });
    if !conversation.system.is_empty() {
        body["systemInstruction"] = json!({ "parts": [{ "text": conversation.system }] });
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                let mut d = json!({ "name": t.name, "description": t.description });
                if let Some(parameters) = function_parameters(&t.parameters) {
                    d["parameters"] = parameters;
                }
                d
            })
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
    }
    let mut generation = Map::new();
    if let Some(max) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(format) = &request.response_format {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), format.schema.clone());
    }
    if !generation.is_empty() {
        body["generationConfig"] = Value::Object(generation);
    }
    HttpRequest::post_json(
        endpoint(config, request.stream),
        key_header(config),
        json::to_string(&body),
    )
}

fn part_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({ "text": text }),
        Block::Call { name, args, .. } => json!({ "functionCall": { "name": name, "args": args } }),
        Block::Result { name, content, .. } => {
            json!({ "functionResponse": { "name": name, "response": { "content": content } } })
        }
        // https://ai.google.dev/gemini-api/docs/image-understanding#inline-image (REST)
        Block::Image(image) => {
            json!({ "inline_data": { "mime_type": image.mime_type, "data": image.data } })
        }
    }
}

/// Accumulates `GenerateContentResponse` chunks (a stream's events, or one whole reply)
/// into a [`ChatResponse`].
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    response: ChatResponse,
    finish: Option<String>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one event's data; returns the answer text it added, if any. Data that is
    /// not JSON is ignored; an error object or a blocked prompt is an error.
    pub fn apply(&mut self, data: &str) -> Result<Option<String>, LlmError> {
        let Ok(value) = kljson::parse_value(data.trim()) else {
            return Ok(None);
        };
        self.apply_value(&value)
    }

    fn apply_value(&mut self, value: &Value) -> Result<Option<String>, LlmError> {
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| json::to_string(err), str::to_string);
            let mut e = LlmError::new(
                status_kind(err).unwrap_or(LlmErrorKind::Server),
                format!("Gemini stopped the reply with an error: {message}"),
            );
            e.detail = Some(message);
            return Err(e);
        }
        if let Some(usage) = value.get("usageMetadata") {
            if let Some(input) = usage.get("promptTokenCount").and_then(Value::as_u64) {
                // Thinking is billed as output, so it counts against the budget too.
                let output: u64 = ["candidatesTokenCount", "thoughtsTokenCount"]
                    .iter()
                    .filter_map(|k| usage.get(k).and_then(Value::as_u64))
                    .sum();
                // Tokens served from a cache: `cachedContentTokenCount`
                // (https://ai.google.dev/api/generate-content#UsageMetadata).
                let cached = usage
                    .get("cachedContentTokenCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.response.usage = Some(Usage::new(input, output).with_cached(cached));
            }
        }
        let Some(candidate) = value
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            let blocked = value
                .get("promptFeedback")
                .and_then(|f| f.get("blockReason"))
                .and_then(Value::as_str);
            return match blocked {
                Some(reason) => Err(blocked_prompt(
                    reason,
                    value
                        .get("promptFeedback")
                        .and_then(|f| f.get("blockReasonMessage"))
                        .and_then(Value::as_str),
                )),
                None => Ok(None),
            };
        };
        let mut added = String::new();
        for part in candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                added.push_str(text);
            }
            if let Some(call) = part.get("functionCall") {
                let Some(name) = call.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let n = self.response.tool_calls.len();
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty() && !id.contains(SIGNATURE_MARK))
                    .map_or_else(|| format!("call_{n}"), str::to_string);
                let signature = part
                    .get("thoughtSignature")
                    .or_else(|| call.get("thoughtSignature"))
                    .and_then(Value::as_str);
                self.response.tool_calls.push(ToolCall {
                    id: signed_id(&id, signature),
                    name: name.to_string(),
                    arguments: call
                        .get("args")
                        .filter(|a| !a.is_null())
                        .map_or_else(|| "{}".into(), kljson::to_string),
                });
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        if added.is_empty() {
            return Ok(None);
        }
        self.response.content.push_str(&added);
        Ok(Some(added))
    }

    /// Whether a chunk carried the finish reason (Gemini's last chunk does).
    pub fn is_done(&self) -> bool {
        self.finish.is_some()
    }

    /// The accumulated reply: `MAX_TOKENS` is `length`, `STOP` is `stop` (`tool_calls` when
    /// the reply calls tools), any other reason is kept in lower case.
    pub fn finish(mut self) -> ChatResponse {
        self.response.finish_reason = self.finish.map(|r| match r.as_str() {
            "MAX_TOKENS" => "length".into(),
            "STOP" if !self.response.tool_calls.is_empty() => "tool_calls".into(),
            "STOP" => "stop".into(),
            other => other.to_ascii_lowercase(),
        });
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
        "a `finishReason`"
    }
    fn finish(self: Box<Self>) -> ChatResponse {
        StreamAccumulator::finish(*self)
    }
}

/// The error for a prompt Gemini refused to answer at all.
fn blocked_prompt(reason: &str, message: Option<&str>) -> LlmError {
    let mut e = LlmError::new(
        LlmErrorKind::BadRequest,
        format!(
            "Gemini blocked the prompt ({reason}) and gave no answer: the page or the question tripped its content filters. Rephrase the question, or ask about another part of the page."
        ),
    );
    e.detail = Some(match message {
        Some(m) => format!("{reason}: {m}"),
        None => reason.to_string(),
    });
    e
}

/// Parses a non-streamed success body: one `GenerateContentResponse`, an array of them
/// (`streamGenerateContent` without `alt=sse`), or a whole event stream. A body that is not
/// JSON is taken as plain text, never an error.
pub fn parse_response(body: &str) -> Result<ChatResponse, LlmError> {
    let mut acc = StreamAccumulator::new();
    match kljson::parse_value(body) {
        Ok(Value::Array(chunks)) => {
            for chunk in &chunks {
                acc.apply_value(chunk)?;
            }
        }
        Ok(value)
            if ["candidates", "promptFeedback", "error", "usageMetadata"]
                .iter()
                .any(|k| value.get(k).is_some()) =>
        {
            acc.apply_value(&value)?;
        }
        Ok(_) => {
            return Ok(ChatResponse {
                content: body.trim().to_string(),
                ..Default::default()
            })
        }
        Err(_) if body.trim_start().starts_with("data:") => {
            let mut parser = SseParser::new();
            for event in parser
                .push(body.as_bytes())
                .into_iter()
                .chain(parser.finish())
            {
                acc.apply(&event.data)?;
            }
        }
        Err(_) => {
            return Ok(ChatResponse {
                content: body.trim().to_string(),
                ..Default::default()
            })
        }
    }
    Ok(acc.finish())
}

/// The kind of a Google API error, from its `details[].reason` (an invalid key is
/// reported as 400 `INVALID_ARGUMENT` with reason `API_KEY_INVALID`) and its `status`.
fn status_kind(err: &Value) -> Option<LlmErrorKind> {
    let key_rejected = err
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("reason").and_then(Value::as_str))
        .any(|r| r.starts_with("API_KEY_"));
    if key_rejected {
        return Some(LlmErrorKind::Auth);
    }
    Some(match err.get("status").and_then(Value::as_str)? {
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => LlmErrorKind::Auth,
        "NOT_FOUND" => LlmErrorKind::NotFound,
        "RESOURCE_EXHAUSTED" => LlmErrorKind::RateLimited,
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => LlmErrorKind::BadRequest,
        "INTERNAL" | "UNAVAILABLE" | "UNKNOWN" => LlmErrorKind::Server,
        "DEADLINE_EXCEEDED" => LlmErrorKind::Timeout,
        _ => return None,
    })
}

/// `RetryInfo.retryDelay` (`"37s"`, `"1.5s"`) of a 429, in milliseconds.
fn retry_delay_ms(err: &Value) -> Option<u64> {
    err.get("details")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .find_map(|delay| crate::llm::transport::parse_retry_after(delay.trim().strip_suffix('s')?))
}

/// Maps an HTTP error status and body to an actionable [`LlmError`] (pure). The body is
/// `{"error": {"code", "message", "status", "details"}}` (sometimes inside an array); the
/// detail is its `message`, and a 429's `RetryInfo` becomes the wait.
pub fn parse_error(config: &ProviderConfig, status: u16, body: &str) -> LlmError {
    let value = kljson::parse_value(body).ok();
    let value = match value {
        Some(Value::Array(mut items)) if !items.is_empty() => items.swap_remove(0),
        other => other.unwrap_or(Value::Null),
    };
    let err = value.get("error");
    let kind = err
        .and_then(status_kind)
        .unwrap_or_else(|| LlmErrorKind::from_status(status));
    let kind = crate::llm::transport::overflow_kind(kind, body);
    let detail = match err {
        Some(e) => e
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| json::to_string(e), str::to_string),
        None => body.trim().to_string(),
    };
    let detail = (!detail.trim().is_empty()).then_some(detail);
    let mut e = doctor::http_error(config, &endpoint(config, false), status, kind, detail);
    e.retry_after_ms = err.and_then(retry_delay_ms);
    e
}

/// Model names from a `GET /models` body: those that support `generateContent` (or do not
/// say), without the `models/` prefix.
pub fn parse_models(body: &str) -> Result<Vec<String>, LlmError> {
    let value: Value = kljson::parse_value(body).map_err(|e| {
        LlmError::new(
            LlmErrorKind::BadRequest,
            format!("The model list is not the JSON Gemini sends (GET /models): {e}"),
        )
    })?;
    Ok(value
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("supportedGenerationMethods")
                .and_then(Value::as_array)
                .is_none_or(|methods| methods.iter().any(|x| x == "generateContent"))
        })
        .filter_map(|m| m.get("name").and_then(Value::as_str))
        .map(|n| n.strip_prefix("models/").unwrap_or(n).to_string())
        .collect())
}

/// Gemini's [`WireFormat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiWire {
    config: ProviderConfig,
}

impl GeminiWire {
    /// The wire format for `config`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }
}

impl WireFormat for GeminiWire {
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
            format!("{}/models?pageSize=1000", self.config.base()),
            key_header(&self.config),
        )
    }
    fn parse_models(&self, body: &str) -> Result<Vec<String>, LlmError> {
        parse_models(body)
    }
}
