//! The transport every HTTP model provider shares: one [`WireFormat`] per vendor (pure
//! request building and response parsing) and [`HttpLlm`], the [`LlmClient`] that sends its
//! requests over any [`HttpClient`] with time limits, streaming (SSE or NDJSON, chosen by
//! the response's content type), error mapping and the constrained-output fallback. Pure:
//! the HTTP client and the clock are ports.

use std::cell::Cell;
use std::rc::Rc;

use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;

pub mod bounds;
mod retry;
mod scrub;
pub mod sse;

pub use retry::parse_retry_after;

use crate::llm::diagnosis::doctor;
use crate::llm::provider::ProviderConfig;
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind};
use crate::ports::{read_body_to_string, Clock, HttpClient, HttpError, HttpRequest, LlmClient};
pub use sse::LineSplitter;
use sse::SseParser;

/// Turns a vendor's streamed payloads (SSE `data:` fields or NDJSON lines) into a reply.
pub trait StreamDecoder {
    /// Applies one payload; returns the answer text it added, if any. A payload that is
    /// not the expected JSON is ignored; an error the stream reports is returned.
    fn apply(&mut self, payload: &str) -> Result<Option<String>, LlmError>;
    /// Whether the stream said it is complete.
    fn is_done(&self) -> bool;
    /// What says a stream is complete, as a user may read it (`[DONE]`, `message_stop`).
    fn terminator(&self) -> &'static str;
    /// How many payloads were not of this format at all (the reply is then checked: one
    /// with nothing readable is an error, not an empty answer).
    fn unreadable(&self) -> usize {
        0
    }
    /// The reply accumulated so far.
    fn finish(self: Box<Self>) -> ChatResponse;
}

/// One vendor's wire format. Everything here is pure, so it is tested natively against
/// fixtures written from the vendor's documentation.
pub trait WireFormat {
    /// Where and how to reach the provider.
    fn config(&self) -> &ProviderConfig;
    /// The HTTP request for one chat call.
    fn build_request(&self, request: &ChatRequest) -> HttpRequest;
    /// A non-streamed success body. A body that is not the expected JSON is taken as plain
    /// text, never an error.
    fn parse_response(&self, body: &str) -> Result<ChatResponse, LlmError>;
    /// A non-success status and its body, as an actionable error.
    fn parse_error(&self, status: u16, body: &str) -> LlmError;
    /// A decoder for a streamed reply.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;
    /// The request that lists the provider's models.
    fn models_request(&self) -> HttpRequest;
    /// Model names from the model-list body.
    fn parse_models(&self, body: &str) -> Result<Vec<String>, LlmError>;
    /// Whether `err` is the server refusing tool definitions (then the call is retried with
    /// the tools described in the prompt, and they stay there for this client).
    fn rejects_native_tools(&self, err: &LlmError) -> bool {
        err.kind == LlmErrorKind::BadRequest && {
            let text = format!("{} {}", err.message, err.detail.as_deref().unwrap_or(""))
                .to_ascii_lowercase();
            TOOLS_REFUSED.iter().any(|k| text.contains(k))
        }
    }
    /// Whether `err` is the server refusing the prompt-cache key (then the call is retried
    /// without it, and it stays off for this client). Only formats that send one refuse it.
    fn rejects_cache_key(&self, _err: &LlmError) -> bool {
        false
    }
    /// Whether `err` is the server refusing the constrained-output option (then the call
    /// is retried without it, and it stays off for this client).
    fn rejects_constrained_output(&self, err: &LlmError) -> bool {
        err.kind == LlmErrorKind::BadRequest && {
            let text = format!("{} {}", err.message, err.detail.as_deref().unwrap_or(""))
                .to_ascii_lowercase();
            [
                "response_format",
                "json_schema",
                "response format",
                "responsejsonschema",
                "response_json_schema",
                "responseschema",
                "response_schema",
                "responsemimetype",
                "response_mime_type",
            ]
            .iter()
            .any(|k| text.contains(k))
        }
    }
}

/// Whether `err` is a 400 that names `prompt_cache_key` (a server that does not know the
/// field and says so: "Unrecognized request argument supplied: prompt_cache_key", "extra
/// inputs are not permitted" with the field's location, ...).
pub(crate) fn names_cache_key(err: &LlmError) -> bool {
    err.kind == LlmErrorKind::BadRequest
        && format!("{} {}", err.message, err.detail.as_deref().unwrap_or(""))
            .to_ascii_lowercase()
            .contains("prompt_cache_key")
}

/// Phrases servers use to refuse tool definitions for a model without tool support
/// (Ollama: `"llama2" does not support tools`; OpenAI-compatible servers and proxies:
/// "tools are not supported", "tool use is not supported", "function calling is not
/// supported").
const TOOLS_REFUSED: [&str; 5] = [
    "does not support tools",
    "tools are not supported",
    "tool use is not supported",
    "function calling is not supported",
    "does not support function calling",
];

/// What providers say when a request does not fit the model's context window (matched
/// case-insensitively anywhere in the error body, so nested and quoted bodies count too):
/// - OpenAI: `"code": "context_length_exceeded"`, "This model's maximum context length is M
///   tokens" (https://platform.openai.com/docs/guides/error-codes);
/// - llama.cpp's server (and Ollama with `truncate: false`, which passes its body on):
///   `"type": "exceed_context_size_error"`, "request (N tokens) exceeds the available context
///   size (M tokens)" (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/server-context.cpp);
/// - Ollama's own wording: "the input length exceeds the context length", "the prompt is
///   longer than the context length" (https://github.com/ollama/ollama/pull/17944);
/// - Anthropic: "prompt is too long: N tokens > M maximum"
///   (https://docs.anthropic.com/en/api/errors);
/// - Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)"
///   (https://ai.google.dev/gemini-api/docs/troubleshooting).
const CONTEXT_OVERFLOW: [&str; 7] = [
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "exceeds the context length",
    "longer than the context length",
    "prompt is too long",
    "exceeds the maximum number of tokens allowed",
];

/// What servers say when a model cannot take the image a request carries (matched
/// case-insensitively in the message and the server's own text):
/// - OpenAI: "Invalid content type. image_url is only supported by certain models.";
/// - llama.cpp's server without a projector: "image input is not supported - hint: ...
///   provide the mmproj" (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md);
/// - vLLM: "... is not a multimodal model";
/// - LM Studio, Ollama and proxies: "does not support images", "images are not supported",
///   "does not support vision";
/// - Chrome's built-in model without image input (our own wording): "cannot read images".
const IMAGES_REFUSED: [&str; 8] = [
    "image_url is only supported",
    "image input is not supported",
    "not a multimodal model",
    "does not support image",
    "images are not supported",
    "image inputs are not supported",
    "does not support vision",
    "cannot read images",
];

/// Whether a failed call is the model refusing the image it was sent (never a network,
/// time or rate failure, whatever its text).
pub fn refuses_images(err: &LlmError) -> bool {
    !matches!(
        err.kind,
        LlmErrorKind::Network | LlmErrorKind::Timeout | LlmErrorKind::RateLimited
    ) && {
        let text =
            format!("{} {}", err.message, err.detail.as_deref().unwrap_or("")).to_ascii_lowercase();
        IMAGES_REFUSED.iter().any(|k| text.contains(k))
    }
}

/// Whether an error body says the request does not fit the model's context window.
pub fn is_context_overflow(body: &str) -> bool {
    let text = body.to_ascii_lowercase();
    CONTEXT_OVERFLOW.iter().any(|k| text.contains(k))
}

/// `kind`, read again with the body: a rejected request (400, 413) whose body says it does
/// not fit the context window is [`LlmErrorKind::ContextTooLong`]. So is a server failure
/// that says so (Ollama reports some refusals as 500, and streamed errors carry no status).
pub fn overflow_kind(kind: LlmErrorKind, body: &str) -> LlmErrorKind {
    match kind {
        LlmErrorKind::BadRequest | LlmErrorKind::Server if is_context_overflow(body) => {
            LlmErrorKind::ContextTooLong
        }
        kind => kind,
    }
}

/// An error a reply carried inside a success (a streamed error event, an error object in
/// a 200 body): one that says the request does not fit the context window becomes
/// [`LlmErrorKind::ContextTooLong`], worded by the doctor; others are kept.
pub fn reported_overflow(config: &ProviderConfig, mut err: LlmError) -> LlmError {
    let text = format!("{} {}", err.message, err.detail.as_deref().unwrap_or(""));
    if overflow_kind(err.kind, &text) == LlmErrorKind::ContextTooLong {
        err.kind = LlmErrorKind::ContextTooLong;
        err.detail.get_or_insert_with(|| err.message.clone());
        err.message = doctor::context_message(config, doctor::reported_window(&text));
    }
    err
}

/// Time limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Until the response head arrives.
    pub first_byte_ms: u64,
    /// Between two body chunks.
    pub idle_ms: u64,
    /// For the whole call, however steadily chunks (or keep-alive comments) arrive.
    pub total_ms: u64,
}

/// The default total deadline of one model call (the "Model call deadline" setting).
pub const DEFAULT_TOTAL_MS: u64 = 300_000;

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            first_byte_ms: 90_000,
            idle_ms: 60_000,
            total_ms: DEFAULT_TOTAL_MS,
        }
    }
}

impl Timeouts {
    /// The default limits with a total deadline of `total_ms` (the first byte and the gap
    /// between chunks are never allowed longer than the whole call).
    pub fn with_total_ms(total_ms: u64) -> Self {
        let d = Self::default();
        Self {
            first_byte_ms: d.first_byte_ms.min(total_ms),
            idle_ms: d.idle_ms.min(total_ms),
            total_ms,
        }
    }
}

/// How a streamed body is framed, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Sse,
    Lines,
    Whole,
}

fn framing(content_type: Option<&str>) -> Framing {
    let t = content_type.unwrap_or_default().to_ascii_lowercase();
    if t.contains("text/event-stream") {
        Framing::Sse
    } else if t.contains("ndjson") || t.contains("jsonl") || t.contains("json-seq") {
        Framing::Lines
    } else {
        Framing::Whole
    }
}

/// An [`LlmClient`] for any HTTP provider, speaking `wire` over `http`.
pub struct HttpLlm {
    http: Rc<dyn HttpClient>,
    clock: Rc<dyn Clock>,
    wire: Box<dyn WireFormat>,
    timeouts: Timeouts,
    /// Switched off after the server rejects constrained output with a 400.
    constrained_output: Cell<bool>,
    /// Switched off after the server rejects tool definitions (a model without tools).
    native_tools: Cell<bool>,
    /// Switched off after the server rejects the prompt-cache key with a 400.
    cache_key: Cell<bool>,
}

impl HttpLlm {
    /// A client speaking `wire`.
    pub fn new(http: Rc<dyn HttpClient>, clock: Rc<dyn Clock>, wire: Box<dyn WireFormat>) -> Self {
        Self {
            http,
            clock,
            wire,
            timeouts: Timeouts::default(),
            constrained_output: Cell::new(true),
            native_tools: Cell::new(true),
            cache_key: Cell::new(true),
        }
    }

    /// Overrides the time limits.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Whether constrained output is still requested.
    pub fn constrained_output(&self) -> bool {
        self.constrained_output.get()
    }

    /// Whether the prompt-cache key is still sent.
    pub fn cache_key(&self) -> bool {
        self.cache_key.get()
    }

    /// Whether tools are still sent as native tool definitions.
    pub fn native_tools(&self) -> bool {
        self.native_tools.get()
    }

    /// The provider settings this client uses.
    pub fn config(&self) -> &ProviderConfig {
        self.wire.config()
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

    /// `fut` within `ms`, unless the whole call's deadline comes first anyway (then that
    /// one decides, so equal limits have one outcome).
    async fn limited<T>(&self, ms: u64, fut: impl std::future::Future<Output = T>) -> Option<T> {
        if ms >= self.timeouts.total_ms {
            return Some(fut.await);
        }
        self.with_timeout(ms, fut).await
    }

    fn network(&self, e: &HttpError) -> LlmError {
        if e.redirected {
            return crate::llm::diagnosis::keys::redirect_error(self.config());
        }
        doctor::network_error(self.config(), &e.message)
    }

    /// Sends `request` and returns the response head, mapping a non-success status to its
    /// error (with `Retry-After`).
    async fn send(&self, request: HttpRequest) -> Result<crate::ports::HttpResponse, LlmError> {
        let sent = self
            .limited(self.timeouts.first_byte_ms, self.http.send(request))
            .await;
        let mut response = match sent {
            None => {
                return Err(doctor::timeout_error(
                    self.config(),
                    self.timeouts.first_byte_ms,
                ))
            }
            Some(Err(e)) => return Err(self.network(&e)),
            Some(Ok(r)) => r,
        };
        if (200..300).contains(&response.status) {
            return Ok(response);
        }
        let retry_after_ms = response
            .header("retry-after-ms")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .or_else(|| response.header("retry-after").and_then(parse_retry_after));
        let body = self
            .limited(
                self.timeouts.idle_ms,
                read_body_to_string(response.body.as_mut(), 64 * 1024),
            )
            .await
            .and_then(Result::ok)
            .unwrap_or_default();
        let mut err = self.wire.parse_error(response.status, &body);
        err.status = Some(response.status);
        if retry_after_ms.is_some() {
            err.retry_after_ms = retry_after_ms;
        }
        Err(err)
    }

    async fn call(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError> {
        let mut response = self.send(self.wire.build_request(request)).await?;
        let stopped = || {
            LlmError::new(
                LlmErrorKind::Timeout,
                "The model server stopped sending its reply.",
            )
        };
        let content_type = response.header("content-type").map(str::to_string);
        let framing = framing(content_type.as_deref());
        let cap = bounds::reply_cap(request.max_tokens);
        if framing == Framing::Whole {
            let body = self
                .limited(
                    self.timeouts.idle_ms,
                    read_body_to_string(response.body.as_mut(), cap + 1),
                )
                .await
                .ok_or_else(stopped)?
                .map_err(|e| self.network(&e))?;
            if body.len() > cap {
                return Err(bounds::too_large(self.config(), cap));
            }
            if let Some(what) = bounds::not_a_reply(content_type.as_deref(), &body) {
                return Err(bounds::wrong_format(self.config(), what));
            }
            let parsed = self
                .wire
                .parse_response(&body)
                .map_err(|e| reported_overflow(self.config(), e))?;
            if !parsed.content.is_empty() {
                on_delta(&parsed.content);
            }
            return Ok(parsed);
        }
        let mut sse = SseParser::new();
        let mut lines = LineSplitter::new();
        let mut decoder = self.wire.stream_decoder();
        let mut received = 0usize;
        loop {
            let chunk = self
                .limited(self.timeouts.idle_ms, response.body.next_chunk())
                .await
                .ok_or_else(stopped)?
                .map_err(|e| self.network(&e))?;
            received = received.saturating_add(chunk.as_ref().map_or(0, Vec::len));
            if received > cap {
                return Err(bounds::too_large(self.config(), cap));
            }
            let payloads: Vec<String> = match (framing, &chunk) {
                (Framing::Sse, Some(bytes)) => {
                    sse.push(bytes).into_iter().map(|e| e.data).collect()
                }
                (Framing::Sse, None) => sse.finish().into_iter().map(|e| e.data).collect(),
                (_, Some(bytes)) => lines.push(bytes),
                (_, None) => lines.finish().into_iter().collect(),
            };
            if sse.pending().max(lines.pending()) > bounds::LINE_BYTES_CAP {
                return Err(bounds::line_too_long(self.config()));
            }
            for payload in payloads {
                let applied = decoder
                    .apply(&payload)
                    .map_err(|e| reported_overflow(self.config(), e))?;
                if let Some(delta) = applied {
                    on_delta(&delta);
                }
            }
            if decoder.is_done() {
                break;
            }
            if chunk.is_none() {
                return Err(bounds::cut_off(self.config(), decoder.terminator()));
            }
        }
        let unreadable = decoder.unreadable();
        let reply = decoder.finish();
        if unreadable > 0 && reply.content.is_empty() && reply.tool_calls.is_empty() {
            return Err(bounds::unreadable(self.config(), unreadable));
        }
        Ok(reply)
    }

    /// The names of the models the provider offers.
    pub async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        if let Some(err) = doctor::config_error(self.config(), false) {
            return Err(err);
        }
        self.with_timeout(self.timeouts.total_ms, self.fetch_models())
            .await
            .unwrap_or_else(|| Err(bounds::deadline(self.config(), self.timeouts.total_ms)))
    }

    async fn fetch_models(&self) -> Result<Vec<String>, LlmError> {
        let mut response = self.send(self.wire.models_request()).await?;
        let body = self
            .limited(
                self.timeouts.idle_ms,
                read_body_to_string(response.body.as_mut(), 4 * 1024 * 1024),
            )
            .await
            .ok_or_else(|| {
                LlmError::new(
                    LlmErrorKind::Timeout,
                    "The model server stopped sending the model list.",
                )
            })?
            .map_err(|e| self.network(&e))?;
        let mut models = self.wire.parse_models(&body)?;
        crate::types::order::sort(&mut models);
        models.dedup();
        Ok(models)
    }
}

impl HttpLlm {
    /// One chat call, with what the server says passed on as it is: callers use
    /// [`LlmClient::complete`], which scrubs the key from it ([`crate::llm::diagnosis::keys::scrub`]).
    pub(crate) fn complete_unscrubbed<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        async move {
            if let Some(err) = doctor::config_error(self.config(), true) {
                return Err(err);
            }
            // What the server refused once stays off for this client: the cache key,
            // constrained output, then native tools (described in the prompt instead, calls
            // read from the text).
            loop {
                let mut adapted = std::borrow::Cow::Borrowed(request);
                if adapted.cache_key.is_some() && !self.cache_key.get() {
                    adapted.to_mut().cache_key = None;
                }
                if adapted.response_format.is_some() && !self.constrained_output.get() {
                    adapted.to_mut().response_format = None;
                }
                if !adapted.tools.is_empty() && !self.native_tools.get() {
                    adapted = std::borrow::Cow::Owned(crate::llm::prompted_tools::tools_in_prompt(
                        &adapted,
                    ));
                }
                let within = self
                    .with_timeout(self.timeouts.total_ms, self.call(&adapted, on_delta))
                    .await;
                let result = within.unwrap_or_else(|| {
                    Err(bounds::deadline(self.config(), self.timeouts.total_ms))
                });
                match result {
                    Err(err)
                        if adapted.cache_key.is_some() && self.wire.rejects_cache_key(&err) =>
                    {
                        self.cache_key.set(false);
                    }
                    Err(err)
                        if adapted.response_format.is_some()
                            && self.wire.rejects_constrained_output(&err) =>
                    {
                        self.constrained_output.set(false);
                    }
                    Err(err)
                        if !adapted.tools.is_empty() && self.wire.rejects_native_tools(&err) =>
                    {
                        self.native_tools.set(false);
                    }
                    other => return other,
                }
            }
        }
        .boxed_local()
    }
}

impl LlmClient for HttpLlm {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        scrub::complete_scrubbed(self, request, on_delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_follows_the_content_type() {
        assert_eq!(
            framing(Some("text/event-stream; charset=utf-8")),
            Framing::Sse
        );
        assert_eq!(framing(Some("application/x-ndjson")), Framing::Lines);
        assert_eq!(framing(Some("application/json")), Framing::Whole);
        assert_eq!(framing(None), Framing::Whole);
    }
}
