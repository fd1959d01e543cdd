//! Ollama's native `/api/chat` wire format against fixtures written from its API docs
//! (tests/fixtures/ollama, https://github.com/ollama/ollama/blob/main/docs/api.md):
//! requests built, replies and NDJSON streams parsed (cut into arbitrary chunks), errors
//! mapped to kinds with the doctor's wording, the model list and the `format` fallback.

use std::rc::Rc;

use crate::wire_common::*;
use knowledgelens::llm::diagnosis::doctor::{diagnose, DoctorContext, Problem};
use knowledgelens::llm::formats::ollama::{self, OllamaWire};
use knowledgelens::llm::transport::WireFormat;
use knowledgelens::llm::{
    wire_for, ChatMessage, LlmErrorKind, Provider, ProviderConfig, Role, ToolCall,
};
use proptest::prelude::*;
use serde_json::json;

const NDJSON: &str = "application/x-ndjson";
const JSON: &str = "application/json; charset=utf-8";

fn config() -> ProviderConfig {
    ProviderConfig {
        provider: Provider::Ollama,
        base_url: "http://localhost:11434/".into(),
        model: "llama3.2".into(),
        api_key: String::new(),
        context_window: 0,
    }
}

fn llm(http: &Rc<ScriptedHttp>) -> knowledgelens::llm::transport::HttpLlm {
    client(http, Box::new(OllamaWire::new(config())))
}

fn fx(name: &str) -> String {
    fixture("ollama", name)
}

#[test]
fn the_request_is_the_documented_chat_body() {
    let req = ollama::build_request(&config(), &representative(false));
    assert_eq!(req.method, "POST");
    assert_eq!(req.url, "http://localhost:11434/api/chat");
    assert_eq!(header(&req, "content-type"), Some("application/json"));
    assert_eq!(header(&req, "authorization"), None);
    let body: serde_json::Value =
        serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body, fixture_json("ollama", "chat_request.json"));
}

#[test]
fn streaming_a_plain_question_asks_for_the_stream_and_the_configured_window() {
    let mut config = config();
    config.context_window = 16_384;
    config.api_key = "secret".into();
    let req = ollama::build_request(&config, &question(true));
    let body: serde_json::Value =
        serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["options"],
        json!({"num_ctx": 16384, "num_predict": 256})
    );
    assert!(body.get("tools").is_none() && body.get("format").is_none());
    assert_eq!(header(&req, "authorization"), Some("Bearer secret"));
}

#[test]
fn wire_for_gives_the_native_wire() {
    let wire = wire_for(config()).expect("http provider");
    assert_eq!(
        wire.build_request(&question(false)).url,
        "http://localhost:11434/api/chat"
    );
}

#[test]
fn tool_arguments_are_objects_and_results_name_their_tool() {
    let mut call = ChatMessage::new(Role::Assistant, "");
    call.tool_calls = vec![
        ToolCall {
            id: "a".into(),
            name: "read_page".into(),
            arguments: String::new(),
        },
        ToolCall {
            id: "b".into(),
            name: "request_input".into(),
            arguments: "not json".into(),
        },
    ];
    let mut first = ChatMessage::new(Role::Tool, "r1");
    first.tool_call_id = Some("b".into());
    let mut orphan = ChatMessage::new(Role::Tool, "r2");
    orphan.tool_call_id = Some("zzz".into());
    let mut request = question(false);
    request.messages.extend([call, first, orphan]);
    let req = ollama::build_request(&config(), &request);
    let body: serde_json::Value =
        serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        json!({})
    );
    assert_eq!(
        messages[2]["tool_calls"][1]["function"]["arguments"],
        json!({"value": "not json"})
    );
    assert_eq!(messages[3]["tool_name"], "request_input");
    assert!(messages[4].get("tool_name").is_none());
}

#[test]
fn a_text_reply_with_counts() {
    let reply = ollama::parse_response(&fx("chat_reply_text.json")).expect("reply");
    assert_eq!(
        reply.content,
        "The sky is blue because of Rayleigh scattering."
    );
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((26, 298)));
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn tool_calls_get_stable_ids_and_string_arguments() {
    let reply = ollama::parse_response(&fx("chat_reply_tool_calls.json")).expect("reply");
    assert_eq!(reply.content, "");
    let calls: Vec<(&str, &str)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        calls,
        [("call_0", "read_page"), ("call_1", "request_input")]
    );
    let args: serde_json::Value =
        serde_json::from_str(&reply.tool_calls[0].arguments).expect("json");
    assert_eq!(args, json!({"offset": 4000, "max_chars": 2000}));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((122, 33)));
    let with_id = r#"{"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","function":{"name":"read_page","arguments":{}}}]},"done":true}"#;
    assert_eq!(
        ollama::parse_response(with_id).expect("reply").tool_calls[0].id,
        "call_x1"
    );
}

#[test]
fn a_streamed_reply_arrives_as_deltas_and_a_cut_off_is_length() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, NDJSON, &fx("chat_stream.ndjson"));
    let (reply, deltas) = complete(&llm(&http), &question(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas, ["The", " sky is", " blue"]);
    assert_eq!(reply.content, "The sky is blue");
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((26, 3)));
}

#[test]
fn a_streamed_tool_call() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, NDJSON, &fx("chat_stream_tool_calls.ndjson"));
    let (reply, deltas) = complete(&llm(&http), &representative(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas, ["Reading on."]);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_0");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"offset":4000}"#);
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((180, 21)));
}

#[test]
fn a_whole_ndjson_body_is_accepted_as_a_reply() {
    // A stream sent with a JSON content type, or a server that ignores `stream: false`.
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("chat_stream.ndjson"));
    let (reply, deltas) = complete(&llm(&http), &question(false));
    let reply = reply.expect("reply");
    assert_eq!(reply.content, "The sky is blue");
    assert_eq!(deltas, ["The sky is blue"]);
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
}

#[test]
fn an_error_line_mid_stream_is_an_error() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        200,
        NDJSON,
        "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n{\"error\":\"an unknown error was encountered while running the model\"}\n",
    );
    let (reply, _) = complete(&llm(&http), &question(true));
    let err = reply.expect_err("error");
    assert_eq!(err.kind, LlmErrorKind::Server);
    assert!(err.message.contains("unknown error"), "{}", err.message);
}

#[test]
fn errors_map_to_kinds_with_the_servers_words() {
    let cases = [
        (
            404,
            fx("error_model_not_found.json"),
            LlmErrorKind::NotFound,
            "model \"llama3\" not found, try pulling it first",
            "http://localhost:11434",
        ),
        (
            400,
            fx("error_bad_request.json"),
            LlmErrorKind::BadRequest,
            "registry.ollama.ai/library/gemma3:latest does not support tools",
            "rejected the request",
        ),
        (
            500,
            fx("error_format.json"),
            LlmErrorKind::BadRequest,
            "invalid JSON schema in format",
            "HTTP 500",
        ),
        (
            500,
            r#"{"error":"llama runner process has terminated"}"#.to_string(),
            LlmErrorKind::Server,
            "llama runner process has terminated",
            "failed",
        ),
        (
            502,
            "<html>Bad Gateway</html>".to_string(),
            LlmErrorKind::Server,
            "<html>Bad Gateway</html>",
            "HTTP 502",
        ),
    ];
    for (status, body, kind, detail, needle) in cases {
        let http = Rc::new(ScriptedHttp::default());
        http.push(status, JSON, &body);
        let err = complete(&llm(&http), &question(false))
            .0
            .expect_err("error");
        assert_eq!(err.kind, kind, "{status} {body}");
        assert_eq!(err.status, Some(status));
        assert_eq!(err.detail.as_deref(), Some(detail));
        assert!(err.message.contains(needle), "{status}: {}", err.message);
    }
}

#[test]
fn an_empty_403_is_the_origin_check_and_the_doctor_explains_ollama_origins() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(403, "text/plain", "");
    let err = complete(&llm(&http), &question(false))
        .0
        .expect_err("error");
    assert_eq!(err.kind, LlmErrorKind::Auth);
    assert_eq!(err.detail, None);
    assert!(err.message.contains("OLLAMA_ORIGINS"), "{}", err.message);
    let d = diagnose(
        &config(),
        &err,
        &DoctorContext {
            extension_origin: "chrome-extension://abc".into(),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::OllamaOrigin);
    assert!(d
        .steps
        .join("\n")
        .contains("OLLAMA_ORIGINS=chrome-extension://abc ollama serve"));
}

#[test]
fn a_missing_model_suggests_the_pulled_ones() {
    let err = ollama::parse_error(&config(), 404, &fx("error_model_not_found.json"));
    let models = ollama::parse_models(&fx("tags.json")).expect("models");
    let d = diagnose(
        &ProviderConfig {
            model: "llama3".into(),
            ..config()
        },
        &err,
        &DoctorContext {
            models: Some(models),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::NotFound);
    assert_eq!(d.suggestions, ["llama3.2:latest"]);
}

#[test]
fn models_come_from_api_tags() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("tags.json"));
    let models = list_models(&llm(&http)).expect("models");
    assert_eq!(models, ["llama3.2:latest", "qwen2.5:7b"]);
    let seen = http.seen.borrow();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].url, "http://localhost:11434/api/tags");
    assert!(ollama::parse_models("<html>").is_err());
}

#[test]
fn a_rejected_format_is_switched_off_and_the_call_retried() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(500, JSON, &fx("error_format.json"));
    http.push(200, JSON, r#"{"message":{"role":"assistant","content":"{\"should_continue\": false, \"final_answer\": \"x\"}"},"done":true}"#);
    http.push(
        200,
        JSON,
        r#"{"message":{"role":"assistant","content":"again"},"done":true}"#,
    );
    let llm = llm(&http);
    let (reply, _) = complete(&llm, &representative(false));
    assert!(reply.expect("reply").content.contains("should_continue"));
    assert!(!llm.constrained_output());
    complete(&llm, &representative(false)).0.expect("reply");
    assert!(http.body(0).get("format").is_some());
    assert!(http.body(1).get("format").is_none());
    assert!(
        http.body(2).get("format").is_none(),
        "off for the rest of the session"
    );
}

#[test]
fn only_format_errors_switch_constrained_output_off() {
    let wire = OllamaWire::new(config());
    for (status, body, rejects) in [
        (500, r#"{"error":"invalid JSON schema in format"}"#, true),
        (
            400,
            r#"{"error":"invalid format: \"yaml\"; expected \"json\" or a valid JSON Schema object"}"#,
            true,
        ),
        (
            500,
            r#"{"error":"failed to load model vocabulary required for format"}"#,
            true,
        ),
        (
            400,
            r#"{"error":"registry.ollama.ai/library/gemma3:latest does not support tools"}"#,
            false,
        ),
        (
            500,
            r#"{"error":"llama runner process has terminated"}"#,
            false,
        ),
        (403, "", false),
    ] {
        let err = wire.parse_error(status, body);
        assert_eq!(
            wire.rejects_constrained_output(&err),
            rejects,
            "{status} {body}"
        );
    }
}

#[test]
fn odd_bodies_are_text_not_errors() {
    assert_eq!(
        ollama::parse_response("just words").expect("text").content,
        "just words"
    );
    assert_eq!(
        ollama::parse_response(r#"{"unexpected": 1}"#)
            .expect("text")
            .content,
        r#"{"unexpected": 1}"#
    );
    assert_eq!(ollama::parse_response("").expect("empty").content, "");
}

fn ndjson(words: &[String], crlf: bool) -> String {
    let nl = if crlf { "\r\n" } else { "\n" };
    let mut s = String::new();
    for w in words {
        s.push_str(
            &json!({"model": "m", "message": {"role": "assistant", "content": w}, "done": false})
                .to_string(),
        );
        s.push_str(nl);
    }
    s.push_str(&json!({"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "read_page", "arguments": {"offset": 1}}}]}, "done": false}).to_string());
    s.push_str(nl);
    s.push_str(&json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 9, "eval_count": 4}).to_string());
    s.push_str(nl);
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// However the network cuts the NDJSON stream, the reply is the same.
    #[test]
    fn any_chunking_of_a_stream_gives_the_same_reply(
        words in proptest::collection::vec("[a-zA-Zé{}\" ]{1,8}", 1..8),
        cuts in proptest::collection::vec(0usize..3000, 0..12),
        crlf in any::<bool>(),
    ) {
        let body = ndjson(&words, crlf).into_bytes();
        let http = Rc::new(ScriptedHttp::default());
        http.push_chunks(200, NDJSON, cut(&body, cuts));
        let (reply, deltas) = complete(&llm(&http), &representative(true));
        let reply = reply.expect("reply");
        prop_assert_eq!(&reply.content, &words.concat());
        prop_assert_eq!(deltas.concat(), words.concat());
        prop_assert_eq!(reply.tool_calls.len(), 1);
        prop_assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        prop_assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((9, 4)));
    }

    /// No body makes the parsers panic.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", json_ish in "[{}\\[\\]\":,a-z0-9 \\n]{0,200}") {
        for body in [&text, &json_ish] {
            let _ = ollama::parse_response(body);
            let _ = ollama::parse_error(&config(), 500, body);
            let _ = ollama::parse_models(body);
            let mut acc = ollama::StreamAccumulator::new();
            for line in body.lines() {
                let _ = acc.apply(line);
            }
            let _ = acc.finish();
        }
    }
}

#[test]
fn a_format_error_after_the_stream_started_still_switches_format_off() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        200,
        NDJSON,
        "{\"error\":\"invalid JSON schema in format\"}\n",
    );
    http.push(200, NDJSON, &fx("chat_stream.ndjson"));
    let llm = llm(&http);
    let (reply, _) = complete(&llm, &representative(true));
    assert_eq!(reply.expect("reply").content, "The sky is blue");
    assert!(!llm.constrained_output());
    assert!(http.body(1).get("format").is_none());
}

/// A model without tool support (Ollama: 400 `"gemma3" does not support tools`): the call is
/// retried with the tools described in the prompt, a call written as JSON in the text is
/// what the engine then reads, and the tools stay in the prompt for the session.
#[test]
fn a_model_without_tools_gets_them_in_the_prompt() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        400,
        JSON,
        r#"{"error":"registry.ollama.ai/library/gemma3:latest does not support tools"}"#,
    );
    http.push(
        200,
        JSON,
        r#"{"message":{"role":"assistant","content":"{\"name\": \"read_page\", \"arguments\": {\"offset\": 0}}"},"done":true}"#,
    );
    http.push(
        200,
        JSON,
        r#"{"message":{"role":"assistant","content":"fine"},"done":true}"#,
    );
    let llm = llm(&http);
    let request = representative(false);
    assert!(!request.tools.is_empty());
    let reply = complete(&llm, &request).0.expect("reply");
    let call =
        knowledgelens::tools::parse::tool_call_in_text(&reply.content, &["read_page".to_string()])
            .expect("a text tool call");
    assert_eq!(call.name, "read_page");
    assert!(!llm.native_tools());
    assert!(http.body(0).get("tools").is_some());
    for i in [1, 2] {
        if i == 2 {
            complete(&llm, &request).0.expect("reply");
        }
        let body = http.body(i);
        assert!(body.get("tools").is_none(), "request {i} still sends tools");
        let system = body["messages"][0]["content"].as_str().expect("system");
        assert!(system.contains("- read_page:"), "request {i}: {system}");
        assert!(
            body["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .all(|m| m["role"] != "tool"),
            "request {i} still has tool messages"
        );
    }
}
