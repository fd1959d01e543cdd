//! Hostile and broken model servers, natively, through `HttpLlm` with scripted HTTP and a
//! manual clock: a huge tool-call index, a body over the reply's byte cap, a line that never
//! ends, a stream cut before its terminator (every vendor), an HTML page answering 200,
//! keep-alive comments that would hold a call forever, and a first byte later than the
//! deadline. Each ends with a clear error of a kind that decides its retry, never a panic.
//! Streaming format: <https://platform.openai.com/docs/api-reference/chat-streaming>.

use std::rc::Rc;

use crate::wire_common::*;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use knowledgelens::llm::formats::{
    anthropic::AnthropicWire, gemini::GeminiWire, ollama::OllamaWire, openai::OpenAiWire,
};
use knowledgelens::llm::transport::bounds::{self, WithDeadline};
use knowledgelens::llm::transport::{HttpLlm, Timeouts, WireFormat};
use knowledgelens::llm::{
    ChatRequest, ChatResponse, LlmError, LlmErrorKind, Provider, ProviderConfig,
};
use knowledgelens::ports::LlmClient;
use knowledgelens::ports::{Clock, HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};
use knowledgelens::testing::{poll_times, ManualClock};
use serde_json::json;

const SSE: &str = "text/event-stream";
const BASE: &str = "http://127.0.0.1:9/v1";

fn openai() -> Box<dyn WireFormat> {
    Box::new(OpenAiWire::new(ProviderConfig::openai(BASE, "tiny", "")))
}

fn vendor(provider: Provider) -> Box<dyn WireFormat> {
    let config = ProviderConfig {
        provider,
        base_url: BASE.into(),
        model: "tiny".into(),
        api_key: "k".into(),
        context_window: 0,
    };
    knowledgelens::llm::wire_for(config).expect("an HTTP provider")
}

fn chunk(delta: serde_json::Value) -> String {
    let c = json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    format!("data: {c}\n\n")
}

#[test]
fn a_huge_tool_call_index_is_a_protocol_error_not_an_allocation() {
    let http = Rc::new(ScriptedHttp::default());
    let body = chunk(
        json!({"tool_calls": [{"index": 4_294_967_295u64, "id": "x", "function": {"name": "read_page", "arguments": "{}"}}]}),
    ) + "data: [DONE]\n\n";
    http.push(200, SSE, &body);
    let (reply, _) = complete(&client(&http, openai()), &question(true));
    let err = reply.expect_err("an index past the cap fails");
    assert_eq!(err.kind, LlmErrorKind::BadRequest, "not retried: {err:?}");
    assert!(err.message.contains("4294967295"), "{}", err.message);
    assert!(err.message.contains("at most 64"), "{}", err.message);
}

#[test]
fn tool_call_indexes_under_the_cap_key_their_calls() {
    let http = Rc::new(ScriptedHttp::default());
    let body = chunk(
        json!({"tool_calls": [{"index": 63, "id": "late", "function": {"name": "b", "arguments": "{}"}}]}),
    ) + &chunk(
        json!({"tool_calls": [{"index": 2, "id": "early", "function": {"name": "a", "arguments": "{\"x\":1}"}}]}),
    ) + "data: [DONE]\n\n";
    http.push(200, SSE, &body);
    let reply = complete(&client(&http, openai()), &question(true))
        .0
        .expect("reply");
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["early", "late"]);
}

#[test]
fn a_streamed_body_over_the_reply_cap_is_abandoned_with_a_clear_error() {
    // max_tokens 256 gives the floor, 1 MB; the server streams 2 MB of content.
    let http = Rc::new(ScriptedHttp::default());
    let piece = chunk(json!({"content": "x".repeat(16 * 1024)}));
    let chunks: Vec<Vec<u8>> = (0..(2 * 1024 * 1024 / piece.len()))
        .map(|_| piece.clone().into_bytes())
        .collect();
    http.push_chunks(200, SSE, chunks);
    let (reply, deltas) = complete(&client(&http, openai()), &question(true));
    let err = reply.expect_err("over the cap");
    assert_eq!(err.kind, LlmErrorKind::BadRequest);
    assert!(err.message.contains("more than 1 MB"), "{}", err.message);
    let streamed: usize = deltas.iter().map(String::len).sum();
    assert!(
        streamed <= bounds::REPLY_BYTES_FLOOR,
        "{streamed} bytes passed on"
    );
}

#[test]
fn a_whole_body_over_the_reply_cap_is_abandoned_too() {
    let http = Rc::new(ScriptedHttp::default());
    let big = vec![b'x'; bounds::REPLY_BYTES_FLOOR + 1];
    http.push_chunks(200, "text/plain", vec![big]);
    let err = complete(&client(&http, openai()), &question(false))
        .0
        .expect_err("over the cap");
    assert!(err.message.contains("more than 1 MB"), "{}", err.message);
}

#[test]
fn a_line_that_never_ends_is_abandoned_at_the_line_cap() {
    // No token cap: the reply may reach 8 MB, but one line may not pass 1 MB.
    let http = Rc::new(ScriptedHttp::default());
    let mut chunks = vec![b"data: {\"choices\": [".to_vec()];
    chunks.extend((0..24).map(|_| vec![b' '; 64 * 1024]));
    http.push_chunks(200, SSE, chunks);
    let request = ChatRequest {
        max_tokens: None,
        ..question(true)
    };
    let err = complete(&client(&http, openai()), &request)
        .0
        .expect_err("line too long");
    assert_eq!(err.kind, LlmErrorKind::BadRequest);
    assert!(
        err.message.contains("line longer than 1 MB"),
        "{}",
        err.message
    );
}

#[test]
fn an_ndjson_line_that_never_ends_is_abandoned_too() {
    let http = Rc::new(ScriptedHttp::default());
    let chunks = (0..24).map(|_| vec![b'{'; 64 * 1024]).collect();
    http.push_chunks(200, "application/x-ndjson", chunks);
    let request = ChatRequest {
        max_tokens: None,
        ..question(true)
    };
    let err = complete(&client(&http, vendor(Provider::Ollama)), &request)
        .0
        .expect_err("line too long");
    assert!(
        err.message.contains("line longer than 1 MB"),
        "{}",
        err.message
    );
}

/// A stream of every vendor cut right before its terminator: a retried network error.
#[test]
fn a_stream_cut_before_its_terminator_is_a_network_error_for_every_vendor() {
    let cases: [(Box<dyn WireFormat>, &str, String, &str); 4] = [
        (
            openai(),
            SSE,
            chunk(json!({"content": "The sky is"})),
            "[DONE]",
        ),
        (
            Box::new(AnthropicWire::new(ProviderConfig {
                provider: Provider::Anthropic,
                ..ProviderConfig::openai(BASE, "m", "k")
            })),
            SSE,
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The sky is\"}}\n\n".into(),
            "message_stop",
        ),
        (
            Box::new(OllamaWire::new(ProviderConfig {
                provider: Provider::Ollama,
                ..ProviderConfig::openai(BASE, "m", "")
            })),
            "application/x-ndjson",
            "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"The sky is\"},\"done\":false}\n".into(),
            "done: true",
        ),
        (
            Box::new(GeminiWire::new(ProviderConfig {
                provider: Provider::Gemini,
                ..ProviderConfig::openai(BASE, "m", "k")
            })),
            SSE,
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"The sky is\"}],\"role\":\"model\"}}]}\n\n".into(),
            "finishReason",
        ),
    ];
    for (wire, content_type, body, terminator) in cases {
        let http = Rc::new(ScriptedHttp::default());
        http.push(200, content_type, &body);
        let (reply, deltas) = complete(&client(&http, wire), &question(true));
        assert_eq!(deltas, ["The sky is"], "{terminator}");
        let err = reply.expect_err("a cut stream is not an answer");
        assert_eq!(err.kind, LlmErrorKind::Network, "{terminator}: retried");
        assert!(err.message.contains("cut off"), "{}", err.message);
        assert!(err.message.contains(terminator), "{}", err.message);
    }
}

#[test]
fn an_html_page_answering_200_names_what_came_back() {
    for (content_type, body) in [
        (
            "text/html; charset=utf-8",
            "<html><body>Please sign in to the Wi-Fi</body></html>",
        ),
        (
            "text/plain",
            "<!DOCTYPE html>\n<html><title>Proxy</title></html>",
        ),
    ] {
        for stream in [false, true] {
            let http = Rc::new(ScriptedHttp::default());
            http.push(200, content_type, body);
            let err = complete(&client(&http, openai()), &question(stream))
                .0
                .expect_err("an HTML page is not an answer");
            assert_eq!(err.kind, LlmErrorKind::Config);
            assert_eq!(
                err.message,
                format!("The server at {BASE} answered with an HTML page, not an OpenAI-compatible reply: check the Base URL in Options (a proxy or sign-in page may be in the way).")
            );
        }
    }
}

#[test]
fn a_json_typed_body_that_is_not_json_is_an_error_not_the_answer() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        200,
        "application/json",
        "{\"choices\": [{\"message\": {\"content\": \"Hal",
    );
    let err = complete(&client(&http, openai()), &question(false))
        .0
        .expect_err("broken JSON");
    assert!(
        err.message.contains("a body that is not valid JSON"),
        "{}",
        err.message
    );
}

/// A body that sends `piece` every second of the clock, forever.
struct Trickle {
    clock: Rc<ManualClock>,
    piece: &'static [u8],
}

impl HttpBody for Trickle {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        let sleep = self.clock.sleep(1_000);
        let piece = self.piece.to_vec();
        async move {
            sleep.await;
            Ok(Some(piece))
        }
        .boxed_local()
    }
}

/// Answers after `head_ms` of the clock with a [`Trickle`] of `piece`.
struct Slow {
    clock: Rc<ManualClock>,
    head_ms: u64,
    piece: &'static [u8],
}

impl HttpClient for Slow {
    fn send(&self, _request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        let sleep = self.clock.sleep(self.head_ms);
        async move {
            sleep.await;
            Ok(HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), SSE.into())],
                body: Box::new(Trickle {
                    clock: self.clock.clone(),
                    piece: self.piece,
                }),
            })
        }
        .boxed_local()
    }
}

/// Drives `llm.complete` second by second of the clock (up to `max_secs`); the result and
/// the seconds it took.
fn drive(
    llm: &dyn LlmClient,
    clock: &ManualClock,
    max_secs: u64,
) -> Option<(Result<ChatResponse, LlmError>, u64)> {
    let request = question(true);
    let mut sink = |_: &str| {};
    let mut call = llm.complete(&request, &mut sink);
    for second in 0..=max_secs {
        if let Some(result) = poll_times(call.as_mut(), 4) {
            return Some((result, second));
        }
        clock.advance(1_000);
    }
    None
}

#[test]
fn keep_alive_comments_cannot_hold_a_call_past_its_deadline() {
    let clock = ManualClock::held(0);
    let http = Rc::new(Slow {
        clock: clock.clone(),
        head_ms: 0,
        piece: b": keep-alive\n\n",
    });
    // The default limits: 60 s between chunks never passes, the 300 s deadline does.
    let llm = HttpLlm::new(http, clock.clone(), openai());
    let (result, secs) = drive(&llm, &clock, 400).expect("the call ends");
    let err = result.expect_err("past the deadline");
    assert_eq!(secs, 300);
    assert_eq!(err.kind, LlmErrorKind::Deadline);
    assert!(!err.kind.is_retryable());
    assert!(
        err.message.contains("model call deadline (300 s)"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("\"Model call deadline\" in Options"),
        "{}",
        err.message
    );
}

#[test]
fn a_first_byte_later_than_a_short_deadline_ends_at_the_deadline() {
    let clock = ManualClock::held(0);
    let http = Rc::new(Slow {
        clock: clock.clone(),
        head_ms: 60_000,
        piece: b"data: [DONE]\n\n",
    });
    let llm =
        HttpLlm::new(http, clock.clone(), openai()).with_timeouts(Timeouts::with_total_ms(10_000));
    let (result, secs) = drive(&llm, &clock, 100).expect("the call ends");
    assert_eq!(
        secs, 10,
        "the first byte is never waited for longer than the whole call"
    );
    assert_eq!(result.expect_err("late").kind, LlmErrorKind::Deadline);
}

#[test]
fn the_first_byte_limit_stays_90_s_under_a_longer_deadline() {
    let t = Timeouts::with_total_ms(600_000);
    assert_eq!(
        (t.first_byte_ms, t.idle_ms, t.total_ms),
        (90_000, 60_000, 600_000)
    );
    let t = Timeouts::with_total_ms(30_000);
    assert_eq!((t.first_byte_ms, t.idle_ms), (30_000, 30_000));
}

/// A model that never answers (Chrome's built-in model stuck on a prompt).
struct Stuck;

impl LlmClient for Stuck {
    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
        _on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        futures::future::pending().boxed_local()
    }
}

#[test]
fn a_model_without_http_gets_the_same_deadline() {
    let clock = ManualClock::held(0);
    let config = ProviderConfig {
        provider: Provider::ChromeBuiltin,
        ..ProviderConfig::openai("", "", "")
    };
    let clock_port: Rc<dyn Clock> = clock.clone();
    let llm = WithDeadline::new(Rc::new(Stuck), clock_port, config, 300_000);
    let (result, secs) = drive(&llm, &clock, 400).expect("the call ends");
    assert_eq!(secs, 300);
    let err = result.expect_err("past the deadline");
    assert_eq!(err.kind, LlmErrorKind::Deadline);
    assert!(
        err.message
            .starts_with("Chrome's built-in model did not finish"),
        "{}",
        err.message
    );
}

/// The e2e suite's `bad-json` stream: every field of the wrong type, `"error": null`, a
/// chunk that is not JSON. Nothing in it is an answer or a tool call: an error naming it.
#[test]
fn malformed_json_in_every_field_is_an_error_naming_it() {
    let events = [
        json!({"id": 5, "object": [], "created": "yesterday", "model": {}, "choices": "none"}),
        json!({"choices": [{"index": "first", "delta": "hello", "finish_reason": 3}]}),
        json!({"choices": [{"delta": {"role": 7, "content": 42, "tool_calls": "all of them"}}]}),
        json!({"choices": [{"delta": {"content": {"text": "nested"}, "tool_calls": [{"index": -3, "id": 9, "function": "read_page"}]}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"index": 1.5, "function": {"name": 12, "arguments": {"a": 1}}}]}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"index": "2", "function": {"name": null, "arguments": null}}]}}]}),
        json!({"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": -1}}),
        json!({"choices": null, "error": null, "usage": []}),
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: {\"choices\": [{\"delta\": {\"content\": \"unterminated\n\n");
    body.push_str("data: \u{0}\u{1} not json at all\n\ndata: [DONE]\n\n");
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &body);
    let (reply, deltas) = complete(&client(&http, openai()), &question(true));
    assert!(deltas.is_empty(), "{deltas:?}");
    let err = reply.expect_err("nothing readable is not an empty answer");
    assert_eq!(err.kind, LlmErrorKind::BadRequest, "not retried");
    assert_eq!(
        err.message,
        format!("The OpenAI-compatible server at {BASE} sent a reply with no answer or tool call that could be read (7 of its parts were not in the OpenAI-compatible format). Check the Base URL in Options and that the server speaks this provider's API.")
    );
}

#[test]
fn an_empty_answer_in_the_right_shape_is_still_an_empty_answer() {
    let http = Rc::new(ScriptedHttp::default());
    let body = chunk(json!({"role": "assistant", "content": ""}))
        + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
        + ": keep-alive\n\n"
        + "data: [DONE]\n\n";
    http.push(200, SSE, &body);
    let reply = complete(&client(&http, openai()), &question(true))
        .0
        .expect("an empty reply");
    assert_eq!(reply.content, "");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
}
