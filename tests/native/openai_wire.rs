//! The OpenAI-compatible client against a scripted HTTP peer: request shape, SSE and JSON
//! replies (cut into arbitrary chunks), tool-call deltas, usage, error mapping and the
//! constrained-output fallback. Wire format: https://platform.openai.com/docs/api-reference/chat

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::llm::formats::openai::{build_request, OpenAiWire};
use knowledgelens::llm::transport::HttpLlm;
use knowledgelens::llm::ProviderConfig;
use knowledgelens::llm::{
    ChatMessage, ChatRequest, JsonSchemaFormat, LlmErrorKind, Role, ToolSpec,
};
use knowledgelens::ports::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse, LlmClient};
use knowledgelens::testing::ManualClock;
use proptest::prelude::*;

struct Canned {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<Vec<u8>>,
}

struct ChunkBody(VecDeque<Vec<u8>>);

impl HttpBody for ChunkBody {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        future::ready(Ok(self.0.pop_front())).boxed_local()
    }
}

/// Answers requests from a script, in order, and records them; fails the test on a request
/// it has no reply for and, when dropped, on replies never asked for.
#[derive(Default)]
struct ScriptedHttp {
    replies: RefCell<VecDeque<Result<Canned, HttpError>>>,
    seen: RefCell<Vec<HttpRequest>>,
}

/// Every scripted reply must have been asked for (unless the test already failed).
impl Drop for ScriptedHttp {
    fn drop(&mut self) {
        let left = self.replies.get_mut().len();
        if left > 0 && !std::thread::panicking() {
            panic!(
                "ScriptedHttp: {left} scripted repl{} never asked for after {} request(s)",
                if left == 1 { "y was" } else { "ies were" },
                self.seen.get_mut().len()
            );
        }
    }
}

impl HttpClient for ScriptedHttp {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        self.seen.borrow_mut().push(request);
        let reply = self
            .replies
            .borrow_mut()
            .pop_front()
            .expect("unexpected HTTP request");
        future::ready(reply.map(|c| HttpResponse {
            status: c.status,
            headers: c.headers,
            body: Box::new(ChunkBody(c.chunks.into())),
        }))
        .boxed_local()
    }
}

fn config() -> ProviderConfig {
    ProviderConfig::openai("http://127.0.0.1:9/v1", "tiny", "sk-test")
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "sys"),
            ChatMessage::new(Role::User, "Why is the sky blue?"),
        ],
        tools: vec![ToolSpec {
            name: "read_page".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}).into(),
        }],
        response_format: None,
        max_tokens: Some(256),
        stream,
        cache_key: None,
    }
}

fn sse(events: &[serde_json::Value]) -> String {
    let mut s = String::from(": keep-alive\n\n");
    for e in events {
        s.push_str(&format!("data: {e}\n\n"));
    }
    s.push_str("data: [DONE]\n\n");
    s
}

fn client(http: Rc<ScriptedHttp>) -> HttpLlm {
    HttpLlm::new(
        http,
        Rc::new(ManualClock::new(0)),
        Box::new(OpenAiWire::new(config())),
    )
}

fn canned(status: u16, content_type: &str, body: &str) -> Result<Canned, HttpError> {
    Ok(Canned {
        status,
        headers: vec![("content-type".into(), content_type.into())],
        chunks: vec![body.as_bytes().to_vec()],
    })
}

#[test]
fn request_has_the_documented_shape() {
    let req = build_request(&config(), &request(true));
    assert_eq!(req.url, "http://127.0.0.1:9/v1/chat/completions");
    assert!(req
        .headers
        .contains(&("authorization".into(), "Bearer sk-test".into())));
    let body: serde_json::Value =
        serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body["model"], "tiny");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_page");
    assert_eq!(body["max_tokens"], 256);
    let no_key = build_request(
        &ProviderConfig {
            api_key: String::new(),
            ..config()
        },
        &request(false),
    );
    assert!(!no_key.headers.iter().any(|(k, _)| k == "authorization"));
}

#[test]
fn streamed_text_tool_calls_and_usage_are_accumulated() {
    let http = Rc::new(ScriptedHttp::default());
    let body = sse(&[
        serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "read."}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_page", "arguments": "{\"off"}}]}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "set\": 4}"}}]}, "finish_reason": "tool_calls"}]}),
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}}),
    ]);
    http.replies
        .borrow_mut()
        .push_back(canned(200, "text/event-stream; charset=utf-8", &body));
    let mut deltas = Vec::new();
    let reply = futures::executor::block_on(
        client(http.clone()).complete(&request(true), &mut |d| deltas.push(d.to_string())),
    )
    .expect("reply");
    assert_eq!(reply.content, "Let me read.");
    assert_eq!(deltas, ["Let me ", "read."]);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_a");
    assert_eq!(reply.tool_calls[0].arguments, "{\"offset\": 4}");
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((50, 7)));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn a_json_body_is_accepted_even_when_streaming_was_asked() {
    let http = Rc::new(ScriptedHttp::default());
    let body = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Rayleigh scattering."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 3}});
    http.replies
        .borrow_mut()
        .push_back(canned(200, "application/json", &body.to_string()));
    let mut deltas = String::new();
    let reply = futures::executor::block_on(
        client(http).complete(&request(true), &mut |d| deltas.push_str(d)),
    )
    .expect("reply");
    assert_eq!(reply.content, "Rayleigh scattering.");
    assert_eq!(deltas, "Rayleigh scattering.");
}

#[test]
fn unexpected_bodies_are_plain_text_not_errors() {
    let http = Rc::new(ScriptedHttp::default());
    http.replies
        .borrow_mut()
        .push_back(canned(200, "text/plain", "just words"));
    let reply = futures::executor::block_on(client(http).complete(&request(false), &mut |_| {}))
        .expect("reply");
    assert_eq!(reply.content, "just words");
}

#[test]
fn errors_map_to_kinds_with_actionable_messages() {
    let cases: Vec<(u16, &str, LlmErrorKind, &str)> = vec![
        (
            401,
            r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#,
            LlmErrorKind::Auth,
            "API key",
        ),
        (
            404,
            r#"{"error": {"message": "model 'tiny' not found"}}"#,
            LlmErrorKind::NotFound,
            "Base URL",
        ),
        (
            429,
            r#"{"error": {"message": "Rate limit reached"}}"#,
            LlmErrorKind::RateLimited,
            "rate limiting",
        ),
        (500, "oops", LlmErrorKind::Server, "HTTP 500"),
        (403, "", LlmErrorKind::Auth, "OLLAMA_ORIGINS"),
        (
            400,
            r#"{"error": "bad field"}"#,
            LlmErrorKind::BadRequest,
            "bad field",
        ),
    ];
    for (status, body, kind, needle) in cases {
        let http = Rc::new(ScriptedHttp::default());
        let mut reply = canned(status, "application/json", body).expect("canned");
        reply.headers.push(("retry-after".into(), "3".into()));
        http.replies.borrow_mut().push_back(Ok(reply));
        let err = futures::executor::block_on(client(http).complete(&request(false), &mut |_| {}))
            .expect_err("error");
        assert_eq!(err.kind, kind, "status {status}");
        assert!(
            err.message.contains(needle),
            "status {status}: {}",
            err.message
        );
        assert_eq!(err.retry_after_ms, Some(3_000));
    }
}

#[test]
fn connection_failure_is_a_network_error_naming_the_url() {
    let http = Rc::new(ScriptedHttp::default());
    http.replies.borrow_mut().push_back(Err(HttpError {
        message: "Failed to fetch".into(),
        ..Default::default()
    }));
    let err = futures::executor::block_on(client(http).complete(&request(false), &mut |_| {}))
        .expect_err("error");
    assert_eq!(err.kind, LlmErrorKind::Network);
    assert!(err.kind.is_retryable());
    assert!(
        err.message.contains("http://127.0.0.1:9/v1"),
        "{}",
        err.message
    );
}

#[test]
fn a_rejected_response_format_is_switched_off_and_the_call_retried() {
    let http = Rc::new(ScriptedHttp::default());
    http.replies.borrow_mut().push_back(canned(
        400,
        "application/json",
        r#"{"error": {"message": "response_format json_schema is not supported"}}"#,
    ));
    http.replies.borrow_mut().push_back(canned(200, "application/json", r#"{"choices": [{"message": {"content": "{\"should_continue\": false, \"final_answer\": \"x\"}"}}]}"#));
    http.replies.borrow_mut().push_back(canned(
        200,
        "application/json",
        r#"{"choices": [{"message": {"content": "again"}}]}"#,
    ));
    let llm = client(http.clone());
    let mut req = request(false);
    req.response_format = Some(JsonSchemaFormat {
        name: "control".into(),
        schema: serde_json::json!({"type": "object"}),
    });
    let reply = futures::executor::block_on(llm.complete(&req, &mut |_| {})).expect("reply");
    assert!(reply.content.contains("should_continue"));
    assert!(!llm.constrained_output());
    futures::executor::block_on(llm.complete(&req, &mut |_| {})).expect("reply");
    let seen = http.seen.borrow();
    assert_eq!(seen.len(), 3);
    assert!(seen[0]
        .body
        .as_deref()
        .expect("b")
        .contains("response_format"));
    assert!(!seen[1]
        .body
        .as_deref()
        .expect("b")
        .contains("response_format"));
    assert!(
        !seen[2]
            .body
            .as_deref()
            .expect("b")
            .contains("response_format"),
        "off for the rest of the session"
    );
}

#[test]
fn missing_model_is_a_config_error() {
    let http = Rc::new(ScriptedHttp::default());
    let llm = HttpLlm::new(
        http,
        Rc::new(ManualClock::new(0)),
        Box::new(OpenAiWire::new(ProviderConfig {
            model: String::new(),
            ..config()
        })),
    );
    let err = futures::executor::block_on(llm.complete(&request(false), &mut |_| {}))
        .expect_err("config");
    assert_eq!(err.kind, LlmErrorKind::Config);
    assert!(err.message.contains("Options"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// However the network cuts the stream, the reply is the same.
    #[test]
    fn any_chunking_of_a_stream_gives_the_same_reply(words in proptest::collection::vec("[a-zA-Zé ]{1,8}", 1..8), cuts in proptest::collection::vec(0usize..2000, 0..12)) {
        let events: Vec<serde_json::Value> = words.iter().map(|w| serde_json::json!({"choices": [{"delta": {"content": w}}]})).collect();
        let body = sse(&events).into_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for c in cuts { chunks.push(body[start..c].to_vec()); start = c; }
        chunks.push(body[start..].to_vec());
        let http = Rc::new(ScriptedHttp::default());
        http.replies.borrow_mut().push_back(Ok(Canned { status: 200, headers: vec![("content-type".into(), "text/event-stream".into())], chunks }));
        let reply = futures::executor::block_on(client(http).complete(&request(true), &mut |_| {})).expect("reply");
        prop_assert_eq!(reply.content, words.concat());
    }
}
