//! The OpenAI-compatible chat-completions wire format (OpenAI, Ollama's `/v1`, LM Studio,
//! llama.cpp's server, vLLM, OpenRouter, Groq): pure `build_request` / `parse_response` /
//! stream accumulation, plus [`OpenAiCompatible`], an [`LlmClient`] over any
//! [`HttpClient`]. Wire format: <https://platform.openai.com/docs/api-reference/chat>.

use std::cell::Cell;
use std::rc::Rc;

use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;
use serde_json::{json, Value};

use super::sse::SseParser;
use super::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, Role, ToolCall, Usage};
use crate::ports::{read_body_to_string, Clock, HttpClient, HttpRequest, LlmClient};

/// Where and how to reach an OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL including the version path, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key (empty: none is sent).
    pub api_key: String,
}

impl OpenAiConfig {
    /// The chat-completions endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// Builds the HTTP request for `request` (pure).
pub fn build_request(config: &OpenAiConfig, request: &ChatRequest) -> HttpRequest {
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
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters }})
            })
            .collect();
    }
    if let Some(format) = &request.response_format {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": format.name, "schema": format.schema, "strict": true }});
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if request.stream {
        headers.push(("accept".into(), "text/event-stream".into()));
    }
    if !config.api_key.is_empty() {
        headers.push(("authorization".into(), format!("Bearer {}", config.api_key)));
    }
    HttpRequest {
        method: "POST".into(),
        url: config.endpoint(),
        headers,
        body: Some(body.to_string()),
    }
}

fn message_json(m: &super::ChatMessage) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut v = json!({ "role": role, "content": m.content });
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
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return Ok(ChatResponse {
            content: body.trim().to_string(),
            ..Default::default()
        });
    };
    if let Some(err) = value.get("error") {
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
                        Some(other) => other.to_string(),
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
        other => other.to_string(),
    }
}

fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    let input = u.get("prompt_tokens").and_then(Value::as_u64)?;
    let output = u
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage { input, output })
}

fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(_) => err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string()),
        other => other.to_string(),
    }
}

/// Maps an HTTP error status and body to an actionable [`LlmError`] (pure).
pub fn parse_error(
    config: &OpenAiConfig,
    status: u16,
    body: &str,
    retry_after: Option<&str>,
) -> LlmError {
    let kind = LlmErrorKind::from_status(status);
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").map(error_text))
        .unwrap_or_else(|| body.chars().take(300).collect::<String>());
    let detail = detail.trim();
    let suffix = if detail.is_empty() {
        String::new()
    } else {
        format!(" The server said: {detail}")
    };
    let message = match kind {
        LlmErrorKind::Auth if status == 403 && body.trim().is_empty() => format!(
            "The model server at {} refused the request (HTTP 403). If it is Ollama, allow the extension's origin (set OLLAMA_ORIGINS=chrome-extension://* and restart Ollama); otherwise check the API key in Options.",
            config.base_url
        ),
        LlmErrorKind::Auth => format!("The API key was rejected (HTTP {status}): check the API key in Options.{suffix}"),
        LlmErrorKind::NotFound => format!(
            "The server answered 404 for {}: check the Base URL in Options (it must include the version path, e.g. /v1) and the model name \"{}\".{suffix}",
            config.endpoint(), config.model
        ),
        LlmErrorKind::RateLimited => format!("The provider is rate limiting requests (HTTP 429).{suffix}"),
        LlmErrorKind::Server => format!("The model server failed (HTTP {status}).{suffix}"),
        LlmErrorKind::Timeout => format!("The model server timed out (HTTP {status}).{suffix}"),
        _ => format!("The model server rejected the request (HTTP {status}).{suffix}"),
    };
    LlmError {
        kind,
        message,
        status: Some(status),
        retry_after_ms: retry_after.and_then(parse_retry_after),
    }
}

/// `Retry-After` in seconds (the HTTP-date form is treated as absent).
pub fn parse_retry_after(value: &str) -> Option<u64> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).min(600_000.0) as u64)
}

/// Accumulates streamed chat-completion chunks into a [`ChatResponse`].
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    response: ChatResponse,
    done: bool,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one SSE `data:` payload; returns the content delta it carried, if any.
    /// `[DONE]` marks the end; a payload that is not JSON is ignored.
    pub fn apply(&mut self, data: &str) -> Result<Option<String>, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return Ok(None);
        };
        if let Some(err) = value.get("error") {
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
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            while self.response.tool_calls.len() <= index {
                let n = self.response.tool_calls.len();
                self.response.tool_calls.push(ToolCall {
                    id: format!("call_{n}"),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let slot = &mut self.response.tool_calls[index];
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
                    Some(other) => slot.arguments.push_str(&other.to_string()),
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
        self.response.tool_calls.retain(|c| !c.name.is_empty());
        for c in &mut self.response.tool_calls {
            if c.arguments.trim().is_empty() {
                c.arguments = "{}".into();
            }
        }
        self.response
    }
}

/// Time limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Until the response head arrives.
    pub first_byte_ms: u64,
    /// Between two body chunks.
    pub idle_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            first_byte_ms: 90_000,
            idle_ms: 60_000,
        }
    }
}

/// An [`LlmClient`] for OpenAI-compatible servers over any [`HttpClient`].
pub struct OpenAiCompatible {
    http: Rc<dyn HttpClient>,
    clock: Rc<dyn Clock>,
    config: OpenAiConfig,
    timeouts: Timeouts,
    /// Switched off after the server rejects `response_format` with a 400.
    constrained_output: Cell<bool>,
}

impl OpenAiCompatible {
    /// A client for `config`.
    pub fn new(http: Rc<dyn HttpClient>, clock: Rc<dyn Clock>, config: OpenAiConfig) -> Self {
        Self {
            http,
            clock,
            config,
            timeouts: Timeouts::default(),
            constrained_output: Cell::new(true),
        }
    }

    /// Overrides the time limits.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Whether `response_format` is still sent.
    pub fn constrained_output(&self) -> bool {
        self.constrained_output.get()
    }

    async fn with_timeout<T>(
        &self,
        ms: u64,
        fut: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let sleep = self.clock.sleep(ms);
        match future::select(Box::pin(fut), sleep).await {
            Either::Left((value, _)) => Some(value),
            Either::Right(_) => None,
        }
    }

    async fn call(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError> {
        let http_request = build_request(&self.config, request);
        let sent = self
            .with_timeout(self.timeouts.first_byte_ms, self.http.send(http_request))
            .await;
        let mut response = match sent {
            None => return Err(LlmError::new(LlmErrorKind::Timeout, format!(
                "The model server at {} did not answer within {} s.", self.config.base_url, self.timeouts.first_byte_ms / 1000))),
            Some(Err(e)) => return Err(LlmError::new(LlmErrorKind::Network, format!(
                "Could not reach the model server at {} ({}). Is it running, and is the Base URL in Options right?",
                self.config.base_url, e.message))),
            Some(Ok(r)) => r,
        };
        let network = |e: crate::ports::HttpError| {
            LlmError::new(
                LlmErrorKind::Network,
                format!(
                    "The connection to the model server broke off: {}",
                    e.message
                ),
            )
        };
        if !(200..300).contains(&response.status) {
            let retry_after = response
                .header("retry-after-ms")
                .and_then(|v| v.trim().parse::<u64>().ok());
            let retry_after_header = response.header("retry-after").map(str::to_string);
            let body = self
                .with_timeout(
                    self.timeouts.idle_ms,
                    read_body_to_string(response.body.as_mut(), 64 * 1024),
                )
                .await
                .unwrap_or_else(|| Ok(String::new()))
                .unwrap_or_default();
            let mut err = parse_error(
                &self.config,
                response.status,
                &body,
                retry_after_header.as_deref(),
            );
            if retry_after.is_some() {
                err.retry_after_ms = retry_after;
            }
            return Err(err);
        }
        let is_sse = response
            .header("content-type")
            .is_some_and(|t| t.contains("text/event-stream"));
        if !is_sse {
            let body = self
                .with_timeout(
                    self.timeouts.idle_ms,
                    read_body_to_string(response.body.as_mut(), 8 * 1024 * 1024),
                )
                .await
                .ok_or_else(|| {
                    LlmError::new(
                        LlmErrorKind::Timeout,
                        "The model server stopped sending its reply.",
                    )
                })?
                .map_err(network)?;
            let parsed = parse_response(&body)?;
            if !parsed.content.is_empty() {
                on_delta(&parsed.content);
            }
            return Ok(parsed);
        }
        let mut parser = SseParser::new();
        let mut acc = StreamAccumulator::new();
        loop {
            let chunk = self
                .with_timeout(self.timeouts.idle_ms, response.body.next_chunk())
                .await
                .ok_or_else(|| {
                    LlmError::new(
                        LlmErrorKind::Timeout,
                        "The model server stopped streaming its reply.",
                    )
                })?
                .map_err(network)?;
            let events = match &chunk {
                Some(bytes) => parser.push(bytes),
                None => parser.finish().into_iter().collect(),
            };
            for event in events {
                if let Some(delta) = acc.apply(&event.data)? {
                    on_delta(&delta);
                }
            }
            if chunk.is_none() || acc.is_done() {
                break;
            }
        }
        Ok(acc.finish())
    }
}

fn rejects_response_format(err: &LlmError) -> bool {
    err.kind == LlmErrorKind::BadRequest && {
        let m = err.message.to_ascii_lowercase();
        m.contains("response_format") || m.contains("json_schema") || m.contains("response format")
    }
}

impl LlmClient for OpenAiCompatible {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        async move {
            if self.config.base_url.trim().is_empty() {
                return Err(LlmError::new(
                    LlmErrorKind::Config,
                    "No model server is configured: set the Base URL in Options.",
                ));
            }
            if self.config.model.trim().is_empty() {
                return Err(LlmError::new(
                    LlmErrorKind::Config,
                    "No model is set: enter the Model name in Options (for Ollama, e.g. llama3.2).",
                ));
            }
            if request.response_format.is_some() && !self.constrained_output.get() {
                let mut plain = request.clone();
                plain.response_format = None;
                return self.call(&plain, on_delta).await;
            }
            match self.call(request, on_delta).await {
                Err(err) if request.response_format.is_some() && rejects_response_format(&err) => {
                    self.constrained_output.set(false);
                    let mut plain = request.clone();
                    plain.response_format = None;
                    self.call(&plain, on_delta).await
                }
                other => other,
            }
        }
        .boxed_local()
    }
}
