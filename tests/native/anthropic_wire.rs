//! Anthropic's Messages API wire format against fixtures written from its docs
//! (tests/fixtures/anthropic; https://docs.anthropic.com/en/api/messages,
//! https://docs.anthropic.com/en/docs/build-with-claude/streaming,
//! https://docs.anthropic.com/en/api/errors): requests built (alternating roles, tool
//! blocks, the browser header), replies and event streams parsed (cut into arbitrary
//! chunks), errors mapped to kinds with the doctor's wording, and the model list.

use std::rc::Rc;

use crate::wire_common::*;
use knowledgelens::llm::diagnosis::doctor::{diagnose, DoctorContext, Problem};
use knowledgelens::llm::formats::anthropic::{self, AnthropicWire};
use knowledgelens::llm::transport::{HttpLlm, WireFormat};
use knowledgelens::llm::{
    wire_for, ChatMessage, ChatRequest, LlmErrorKind, Provider, ProviderConfig, Role, ToolCall,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const SSE: &str = "text/event-stream; charset=utf-8";
const JSON: &str = "application/json";

fn config() -> ProviderConfig {
    ProviderConfig {
        provider: Provider::Anthropic,
        base_url: Provider::Anthropic.default_base_url().into(),
        model: "claude-sonnet-4-5".into(),
        api_key: "sk-ant-test".into(),
        context_window: 0,
    }
}

fn llm(http: &Rc<ScriptedHttp>) -> HttpLlm {
    client(http, Box::new(AnthropicWire::new(config())))
}

fn fx(name: &str) -> String {
    fixture("anthropic", name)
}

fn body_of(request: &ChatRequest) -> Value {
    let req = anthropic::build_request(&config(), request);
    serde_json::from_str(req.body.as_deref().expect("body")).expect("json")
}

#[test]
fn the_request_is_the_documented_messages_body() {
    let req = anthropic::build_request(&config(), &representative(false));
    assert_eq!(req.method, "POST");
    assert_eq!(req.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(header(&req, "x-api-key"), Some("sk-ant-test"));
    assert_eq!(header(&req, "anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        header(&req, "anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
    assert_eq!(header(&req, "content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body, fixture_json("anthropic", "messages_request.json"));
    assert_eq!(body_of(&representative(true))["stream"], true);
}

#[test]
fn wire_for_gives_the_native_wire() {
    let wire = wire_for(config()).expect("http provider");
    assert_eq!(
        wire.build_request(&question(false)).url,
        "https://api.anthropic.com/v1/messages"
    );
}

#[test]
fn max_tokens_defaults_and_systems_join() {
    let mut request = question(false);
    request.max_tokens = None;
    request
        .messages
        .insert(1, ChatMessage::new(Role::System, "Be brief."));
    let body = body_of(&request);
    assert_eq!(body["max_tokens"], anthropic::DEFAULT_MAX_TOKENS);
    assert_eq!(
        body["system"][0]["text"],
        "You are KnowledgeLens.\n\nBe brief."
    );
    assert!(body.get("tools").is_none());
}

fn roles(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().expect("role").to_string())
        .collect()
}

#[test]
fn roles_alternate_start_and_end_with_the_user() {
    // The engine's Reason call after an Observation ends with an assistant message, and a
    // history may start with one: Anthropic wants user first and (Claude 4.6+) last.
    let mut request = question(false);
    request.messages = vec![
        ChatMessage::new(Role::Assistant, "Hello."),
        ChatMessage::new(Role::User, "Q1"),
        ChatMessage::new(Role::User, "Q2"),
        ChatMessage::new(Role::Assistant, "Observation: need more."),
        ChatMessage::new(Role::Assistant, "   "),
    ];
    let body = body_of(&request);
    assert_eq!(
        roles(&body),
        ["user", "assistant", "user", "assistant", "user"]
    );
    assert_eq!(
        body["messages"][2]["content"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(body["messages"][4]["content"][0]["text"], "Continue.");
}

#[test]
fn without_tools_calls_and_results_are_text() {
    // The Observe and Synthesis calls offer no tools; Anthropic rejects tool blocks then.
    let mut request = representative(false);
    request.tools.clear();
    let body = body_of(&request);
    let text = body.to_string();
    assert!(
        !text.contains("tool_use") && !text.contains("tool_result"),
        "{text}"
    );
    assert_eq!(roles(&body), ["user", "assistant", "user"]);
    assert_eq!(
        body["messages"][1]["content"][1]["text"],
        "[called read_page({\"offset\":4000})]"
    );
    assert_eq!(
        body["messages"][2]["content"][0]["text"],
        "[result of read_page]\nTides are caused by the Moon."
    );
}

#[test]
fn tool_ids_are_unique_and_valid() {
    let mut request = representative(false);
    let mut again = ChatMessage::new(Role::Assistant, "");
    again.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "read_page".into(),
        arguments: "{}".into(),
    }];
    let mut result = ChatMessage::new(Role::Tool, "more");
    result.tool_call_id = Some("call_1".into());
    let mut gemini = ChatMessage::new(Role::Assistant, "");
    gemini.tool_calls = vec![ToolCall {
        id: "call_0~ts~AbC+/=".into(),
        name: "read_page".into(),
        arguments: "{}".into(),
    }];
    let mut result2 = ChatMessage::new(Role::Tool, "even more");
    result2.tool_call_id = Some("call_0~ts~AbC+/=".into());
    request.messages.extend([again, result, gemini, result2]);
    let body = body_of(&request);
    let mut uses = Vec::new();
    let mut results = Vec::new();
    for m in body["messages"].as_array().expect("messages") {
        for b in m["content"].as_array().expect("blocks") {
            match b["type"].as_str() {
                Some("tool_use") => uses.push(b["id"].as_str().expect("id").to_string()),
                Some("tool_result") => {
                    results.push(b["tool_use_id"].as_str().expect("id").to_string())
                }
                _ => {}
            }
        }
    }
    assert_eq!(uses, ["call_1", "call_kl0", "call_kl1"]);
    assert_eq!(uses, results);
}

#[test]
fn a_text_reply() {
    let reply = anthropic::parse_response(&fx("reply_text.json")).expect("reply");
    assert_eq!(
        reply.content,
        "The sky is blue because of Rayleigh scattering."
    );
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((2095, 503)));
}

#[test]
fn a_tool_use_reply() {
    let reply = anthropic::parse_response(&fx("reply_tool_use.json")).expect("reply");
    assert_eq!(reply.content, "I'll read the next part of the page.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(reply.tool_calls[0].name, "read_page");
    let args: Value = serde_json::from_str(&reply.tool_calls[0].arguments).expect("json");
    assert_eq!(args, json!({"offset": 4000, "max_chars": 2000}));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn max_tokens_is_length_and_cache_counts_as_input() {
    let reply = anthropic::parse_response(&fx("reply_max_tokens.json")).expect("reply");
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    assert_eq!(
        reply.usage.map(|u| (u.input, u.output)),
        Some((21 + 188_086, 8))
    );
}

#[test]
fn a_streamed_text_reply() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &fx("stream_text.sse"));
    let (reply, deltas) = complete(&llm(&http), &question(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas, ["Hello", "!"]);
    assert_eq!(reply.content, "Hello!");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((25, 15)));
    assert_eq!(http.body(0)["stream"], true);
}

#[test]
fn a_streamed_tool_use() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &fx("stream_tool_use.sse"));
    let (reply, deltas) = complete(&llm(&http), &representative(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas.concat(), "Okay, let me read further.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(reply.tool_calls[0].arguments, "{\"offset\": 4000}");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((472, 89)));
}

#[test]
fn an_event_stream_with_a_json_content_type_is_still_read() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("stream_text.sse"));
    let (reply, _) = complete(&llm(&http), &question(true));
    assert_eq!(reply.expect("reply").content, "Hello!");
}

#[test]
fn an_overloaded_stream_is_a_retryable_error() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &fx("stream_error.sse"));
    let (reply, deltas) = complete(&llm(&http), &question(true));
    let err = reply.expect_err("error");
    assert_eq!(deltas, ["Tides"]);
    assert_eq!(err.kind, LlmErrorKind::Server);
    assert!(err.kind.is_retryable());
    assert_eq!(err.detail.as_deref(), Some("Overloaded"));
}

#[test]
fn errors_map_to_kinds_with_the_servers_words() {
    let cases = [
        (
            400,
            "error_invalid_request.json",
            LlmErrorKind::BadRequest,
            "rejected the request",
        ),
        (
            401,
            "error_authentication.json",
            LlmErrorKind::Auth,
            "API key was rejected",
        ),
        (
            403,
            "error_permission.json",
            LlmErrorKind::Auth,
            "API key was rejected",
        ),
        (
            404,
            "error_not_found.json",
            LlmErrorKind::NotFound,
            "claude-sonnet-4-5",
        ),
        (
            429,
            "error_rate_limit.json",
            LlmErrorKind::RateLimited,
            "rate limiting",
        ),
        (500, "error_api.json", LlmErrorKind::Server, "HTTP 500"),
        (
            529,
            "error_overloaded.json",
            LlmErrorKind::Server,
            "HTTP 529",
        ),
    ];
    for (status, file, kind, needle) in cases {
        let http = Rc::new(ScriptedHttp::default());
        http.push(status, JSON, &fx(file));
        let err = complete(&llm(&http), &question(false))
            .0
            .expect_err("error");
        assert_eq!(err.kind, kind, "{file}");
        assert_eq!(err.status, Some(status));
        let message = fixture_json("anthropic", file)["error"]["message"]
            .as_str()
            .expect("message")
            .to_string();
        assert_eq!(err.detail.as_deref(), Some(message.as_str()), "{file}");
        assert!(err.message.contains(needle), "{file}: {}", err.message);
    }
    let overloaded = anthropic::parse_error(&config(), 529, &fx("error_overloaded.json"));
    assert!(overloaded.kind.is_retryable());
    let bare = anthropic::parse_error(&config(), 502, "<html>bad gateway</html>");
    assert_eq!(bare.kind, LlmErrorKind::Server);
    assert_eq!(bare.detail.as_deref(), Some("<html>bad gateway</html>"));
}

#[test]
fn the_doctor_says_the_key_was_rejected_and_where_to_get_one() {
    let err = anthropic::parse_error(&config(), 401, &fx("error_authentication.json"));
    assert!(
        err.message.contains("The API key was rejected (HTTP 401)"),
        "{}",
        err.message
    );
    assert!(err.message.contains("invalid x-api-key"));
    let d = diagnose(&config(), &err, &DoctorContext::default());
    assert_eq!(d.problem, Problem::Auth);
    assert!(d.steps[0].contains("console.anthropic.com"));
    let wrong_model = anthropic::parse_error(&config(), 404, &fx("error_not_found.json"));
    let d = diagnose(&config(), &wrong_model, &DoctorContext::default());
    assert_eq!(d.problem, Problem::NotFound);
    assert!(
        d.steps[0].contains("https://api.anthropic.com/v1"),
        "{:?}",
        d.steps
    );
}

#[test]
fn models_come_from_v1_models_with_the_same_headers() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("models.json"));
    let models = list_models(&llm(&http)).expect("models");
    assert_eq!(
        models,
        ["claude-3-5-haiku-20241022", "claude-sonnet-4-5-20250929"]
    );
    let seen = http.seen.borrow();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(
        seen[0].url,
        "https://api.anthropic.com/v1/models?limit=1000"
    );
    assert_eq!(header(&seen[0], "x-api-key"), Some("sk-ant-test"));
    assert_eq!(
        header(&seen[0], "anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
}

#[test]
fn response_format_is_never_sent_so_never_refused() {
    let body = body_of(&representative(false)).to_string();
    assert!(!body.contains("should_continue"), "{body}");
    let wire = AnthropicWire::new(config());
    let err = wire.parse_error(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"response_format: Extra inputs are not permitted"}}"#,
    );
    assert!(!wire.rejects_constrained_output(&err));
}

#[test]
fn odd_bodies_are_text_not_errors() {
    assert_eq!(
        anthropic::parse_response("just words")
            .expect("text")
            .content,
        "just words"
    );
    assert_eq!(
        anthropic::parse_response(r#"{"unexpected": 1}"#)
            .expect("text")
            .content,
        r#"{"unexpected": 1}"#
    );
    let err = anthropic::parse_response(&fx("error_overloaded.json")).expect_err("error");
    assert_eq!(err.kind, LlmErrorKind::Server);
}

fn event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("x").to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

fn stream(words: &[String], args: &[String]) -> String {
    let mut s = event(
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 12, "output_tokens": 1}}}),
    );
    s.push_str(&event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
    for w in words {
        s.push_str(&event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}})));
        s.push_str(&event(json!({"type": "ping"})));
    }
    s.push_str(&event(json!({"type": "content_block_stop", "index": 0})));
    s.push_str(&event(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_page", "input": {}}})));
    for a in args {
        s.push_str(&event(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": a}})));
    }
    s.push_str(&event(json!({"type": "content_block_stop", "index": 1})));
    s.push_str(&event(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}})));
    s.push_str(&event(json!({"type": "message_stop"})));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// However the network cuts the event stream, the reply is the same.
    #[test]
    fn any_chunking_of_a_stream_gives_the_same_reply(
        words in proptest::collection::vec("[a-zA-Zé{}\" ]{1,8}", 1..8),
        split in 0usize..20,
        cuts in proptest::collection::vec(0usize..4000, 0..12),
        crlf in any::<bool>(),
    ) {
        let input = r#"{"offset": 4000, "note": "é"}"#;
        let at = input.char_indices().map(|(i, _)| i).nth(split.min(input.chars().count() - 1)).unwrap_or(0);
        let args = vec![input[..at].to_string(), input[at..].to_string()];
        let mut text = stream(&words, &args);
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        let http = Rc::new(ScriptedHttp::default());
        http.push_chunks(200, SSE, cut(text.as_bytes(), cuts));
        let (reply, deltas) = complete(&llm(&http), &representative(true));
        let reply = reply.expect("reply");
        prop_assert_eq!(&reply.content, &words.concat());
        prop_assert_eq!(deltas.concat(), words.concat());
        prop_assert_eq!(reply.tool_calls.len(), 1);
        prop_assert_eq!(reply.tool_calls[0].arguments.as_str(), input);
        prop_assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        prop_assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((12, 7)));
    }

    /// No body makes the parsers panic.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", json_ish in "[{}\\[\\]\":,a-z_0-9 \\n]{0,200}") {
        for body in [&text, &json_ish] {
            let _ = anthropic::parse_response(body);
            let _ = anthropic::parse_error(&config(), 400, body);
            let _ = anthropic::parse_models(body);
            let mut acc = anthropic::StreamAccumulator::new();
            for line in body.lines() {
                let _ = acc.apply(line);
            }
            let _ = acc.finish();
        }
    }

    /// Events with any fields in any order never panic the decoder.
    #[test]
    fn arbitrary_events_never_panic(events in proptest::collection::vec(
        (prop_oneof![Just("message_start"), Just("content_block_start"), Just("content_block_delta"), Just("message_delta"), Just("error"), Just("ping")],
         0u64..4,
         prop_oneof![Just(json!(null)), Just(json!({"type": "tool_use"})), Just(json!({"type": "text_delta", "text": 5})), Just(json!({"type": "input_json_delta", "partial_json": "{"})), Just(json!([]))]),
        0..10)) {
        let mut acc = anthropic::StreamAccumulator::new();
        for (kind, index, inner) in events {
            let data = json!({"type": kind, "index": index, "delta": inner, "content_block": inner, "message": inner, "usage": inner, "error": inner});
            let _ = acc.apply(&data.to_string());
        }
        let _ = acc.finish();
    }
}
