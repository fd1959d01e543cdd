//! Gemini's `generateContent` / `streamGenerateContent` wire format against fixtures
//! written from its docs (tests/fixtures/gemini; https://ai.google.dev/api/generate-content,
//! https://ai.google.dev/gemini-api/docs/function-calling, https://ai.google.dev/api/models):
//! requests built (roles, function calls and responses, the schema subset, the key in a
//! header), replies and SSE streams parsed (cut into arbitrary chunks), thought signatures
//! carried round, blocked prompts, errors mapped to kinds with the doctor's wording, the
//! model list and the constrained-output fallback.

use std::rc::Rc;

use crate::wire_common::*;
use knowledgelens::llm::diagnosis::doctor::{diagnose, DoctorContext, Problem};
use knowledgelens::llm::formats::gemini::{self, GeminiWire};
use knowledgelens::llm::transport::{HttpLlm, WireFormat};
use knowledgelens::llm::{
    wire_for, ChatMessage, ChatRequest, LlmErrorKind, Provider, ProviderConfig, Role,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const SSE: &str = "text/event-stream";
const JSON: &str = "application/json; charset=UTF-8";

fn config() -> ProviderConfig {
    ProviderConfig {
        provider: Provider::Gemini,
        base_url: Provider::Gemini.default_base_url().into(),
        model: "gemini-2.5-flash".into(),
        api_key: "AIza-test".into(),
        context_window: 0,
    }
}

fn llm(http: &Rc<ScriptedHttp>) -> HttpLlm {
    client(http, Box::new(GeminiWire::new(config())))
}

fn fx(name: &str) -> String {
    fixture("gemini", name)
}

fn body_of(request: &ChatRequest) -> Value {
    let req = gemini::build_request(&config(), request);
    serde_json::from_str(req.body.as_deref().expect("body")).expect("json")
}

#[test]
fn the_request_is_the_documented_generate_content_body() {
    let req = gemini::build_request(&config(), &representative(false));
    assert_eq!(req.method, "POST");
    assert_eq!(
        req.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(header(&req, "x-goog-api-key"), Some("AIza-test"));
    assert!(!req.url.contains("AIza"), "the key never goes in the URL");
    let body: Value = serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body, fixture_json("gemini", "generate_request.json"));
}

#[test]
fn streaming_uses_stream_generate_content_with_sse_and_the_same_body() {
    let req = gemini::build_request(&config(), &representative(true));
    assert_eq!(
        req.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        body_of(&representative(true)),
        fixture_json("gemini", "generate_request.json")
    );
    let prefixed = ProviderConfig {
        model: "models/gemini-2.5-pro".into(),
        ..config()
    };
    assert!(gemini::build_request(&prefixed, &question(false))
        .url
        .ends_with("/models/gemini-2.5-pro:generateContent"));
}

#[test]
fn wire_for_gives_the_native_wire() {
    let wire = wire_for(config()).expect("http provider");
    assert!(wire
        .build_request(&question(false))
        .url
        .ends_with(":generateContent"));
}

#[test]
fn a_plain_question_has_no_tools_and_no_json_mode() {
    let body = body_of(&question(false));
    assert!(body.get("tools").is_none());
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 256}));
    let mut no_cap = question(false);
    no_cap.max_tokens = None;
    assert!(body_of(&no_cap).get("generationConfig").is_none());
}

#[test]
fn schemas_keep_only_what_gemini_accepts() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "when": {"type": "string", "format": "date-time", "examples": ["2024-01-01T00:00:00Z"]},
            "url": {"type": "string", "format": "uri", "default": "x"},
            "mode": {"const": "fast"},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
            "choice": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "count": {"type": "integer", "format": "int64", "exclusiveMinimum": 0}
        },
        "required": ["when", "ghost"],
        "$defs": {"Tag": {"title": "Tag", "type": "string", "enum": ["a", "b"]}}
    });
    let clean = gemini::function_parameters(&schema).expect("parameters");
    assert_eq!(
        clean,
        json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "url": {"type": "string"},
                "mode": {"enum": ["fast"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "choice": {"anyOf": [{"type": "string"}], "nullable": true},
                "count": {"type": "integer", "format": "int64"}
            },
            "required": ["when"]
        })
    );
    assert_eq!(
        gemini::function_parameters(&json!({"type": "object"})),
        None
    );
    assert_eq!(
        gemini::function_parameters(&json!({"type": "object", "properties": {}})),
        None
    );
    let recursive = json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}});
    assert!(gemini::function_parameters(&recursive).is_some());
}

#[test]
fn a_tool_without_parameters_is_declared_without_them() {
    let mut request = representative(false);
    request.tools[0].parameters = json!({"type": "object", "properties": {}}).into();
    let body = body_of(&request);
    let declaration = &body["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration["name"], "read_page");
    assert!(declaration.get("parameters").is_none());
}

#[test]
fn without_tools_calls_and_results_are_text_and_the_user_speaks_last() {
    let mut request = representative(false);
    request.tools.clear();
    request.messages.pop();
    request.messages.push(ChatMessage::new(
        Role::Assistant,
        "Observation: more needed.",
    ));
    let body = body_of(&request);
    let text = body.to_string();
    assert!(
        !text.contains("functionCall") && !text.contains("functionResponse"),
        "{text}"
    );
    let roles: Vec<&str> = body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .map(|c| c["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["user", "model", "user", "model", "user"]);
    assert_eq!(body["contents"][4]["parts"][0]["text"], "Continue.");
}

#[test]
fn a_text_reply_counts_thinking_as_output() {
    let reply = gemini::parse_response(&fx("reply_text.json")).expect("reply");
    assert_eq!(
        reply.content,
        "The sky is blue because of Rayleigh scattering."
    );
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((8, 42)));
}

#[test]
fn a_function_call_keeps_its_signature_for_the_next_request() {
    let reply = gemini::parse_response(&fx("reply_function_call.json")).expect("reply");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.tool_calls.len(), 1);
    let call = &reply.tool_calls[0];
    assert_eq!(call.name, "read_page");
    assert_eq!(call.arguments, r#"{"offset":4000}"#);
    assert_eq!(
        gemini::signature_of(&call.id),
        Some("CiQB0e2Kb7n4zT1Xw+0Yk8vM/Q==")
    );
    // The engine records the call and its result; the next request sends it back signed.
    let mut request = representative(false);
    request.messages[2].tool_calls = vec![call.clone()];
    request.messages[3].tool_call_id = Some(call.id.clone());
    let body = body_of(&request);
    let part = &body["contents"][1]["parts"][1];
    assert_eq!(part["thoughtSignature"], "CiQB0e2Kb7n4zT1Xw+0Yk8vM/Q==");
    assert_eq!(part["functionCall"]["name"], "read_page");
    assert!(part["functionCall"].get("id").is_none());
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"]["name"],
        "read_page"
    );
}

#[test]
fn parallel_calls_only_the_first_is_signed_and_nothing_is_made_up() {
    let reply = gemini::parse_response(&fx("reply_parallel_calls.json")).expect("reply");
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(
        gemini::signature_of(&reply.tool_calls[0].id),
        Some("Sig1A+/=")
    );
    assert_eq!(gemini::signature_of(&reply.tool_calls[1].id), None);
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
    let mut said = ChatMessage::new(Role::Assistant, "");
    said.tool_calls = reply.tool_calls.clone();
    let mut request = question(false);
    request.tools = representative(false).tools;
    request.messages.push(said);
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let mut result = ChatMessage::new(Role::Tool, format!("part {i}"));
        result.tool_call_id = Some(c.id.clone());
        request.messages.push(result);
    }
    let body = body_of(&request);
    let parts = body["contents"][1]["parts"].as_array().expect("parts");
    assert_eq!(parts[0]["thoughtSignature"], "Sig1A+/=");
    assert!(parts[1].get("thoughtSignature").is_none());
    let responses = body["contents"][2]["parts"].as_array().expect("parts");
    assert_eq!(responses.len(), 2, "one response per call");
}

#[test]
fn cut_off_and_safety_stops_keep_their_text() {
    let reply = gemini::parse_response(&fx("reply_max_tokens.json")).expect("reply");
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    assert_eq!(reply.content, "Tides rise and fall twice a day because");
    let reply = gemini::parse_response(&fx("reply_safety.json")).expect("reply");
    assert_eq!(reply.finish_reason.as_deref(), Some("safety"));
    assert_eq!(reply.content, "The article describes");
}

#[test]
fn a_blocked_prompt_is_a_clear_error() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("reply_blocked.json"));
    let err = complete(&llm(&http), &question(false))
        .0
        .expect_err("blocked");
    assert_eq!(err.kind, LlmErrorKind::BadRequest);
    assert!(!err.kind.is_retryable());
    assert!(
        err.message.contains("blocked the prompt (SAFETY)"),
        "{}",
        err.message
    );
    assert_eq!(err.detail.as_deref(), Some("SAFETY"));
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        200,
        SSE,
        &format!("data: {}\n\n", fx("reply_blocked.json").replace('\n', "")),
    );
    let err = complete(&llm(&http), &question(true))
        .0
        .expect_err("blocked");
    assert!(err.message.contains("SAFETY"));
}

#[test]
fn a_streamed_reply() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &fx("stream.sse"));
    let (reply, deltas) = complete(&llm(&http), &question(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas, ["The", " sky is blue", "."]);
    assert_eq!(reply.content, "The sky is blue.");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((8, 5)));
    assert!(http.seen.borrow()[0].url.ends_with("?alt=sse"));
}

#[test]
fn a_streamed_function_call() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, SSE, &fx("stream_function_call.sse"));
    let (reply, deltas) = complete(&llm(&http), &representative(true));
    let reply = reply.expect("reply");
    assert_eq!(deltas, ["Reading on."]);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "read_page");
    assert!(reply.tool_calls[0].id.starts_with("call_0"));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((120, 58)));
}

#[test]
fn a_json_array_of_chunks_is_accepted_as_a_reply() {
    // `streamGenerateContent` without `alt=sse` answers a JSON array of chunks.
    let chunks: Vec<Value> = fx("stream.sse")
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("json"))
        .collect();
    let reply = gemini::parse_response(&Value::Array(chunks).to_string()).expect("reply");
    assert_eq!(reply.content, "The sky is blue.");
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("stream.sse"));
    let (reply, _) = complete(&llm(&http), &question(true));
    assert_eq!(reply.expect("reply").content, "The sky is blue.");
}

#[test]
fn errors_map_to_kinds_with_the_servers_words() {
    let cases = [
        (
            400,
            "error_api_key_invalid.json",
            LlmErrorKind::Auth,
            "API key was rejected (HTTP 400)",
        ),
        (
            400,
            "error_invalid_argument.json",
            LlmErrorKind::BadRequest,
            "rejected the request",
        ),
        (
            403,
            "error_permission_denied.json",
            LlmErrorKind::Auth,
            "API key was rejected",
        ),
        (
            404,
            "error_not_found.json",
            LlmErrorKind::NotFound,
            "gemini-2.5-flash",
        ),
        (
            429,
            "error_resource_exhausted.json",
            LlmErrorKind::RateLimited,
            "rate limiting",
        ),
        (500, "error_internal.json", LlmErrorKind::Server, "HTTP 500"),
        (
            503,
            "error_unavailable.json",
            LlmErrorKind::Server,
            "HTTP 503",
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
        let message = fixture_json("gemini", file)["error"]["message"]
            .as_str()
            .expect("message")
            .to_string();
        let shown: String = message.chars().take(300).collect();
        assert_eq!(err.detail.as_deref(), Some(shown.as_str()), "{file}");
        assert!(err.message.contains(needle), "{file}: {}", err.message);
    }
    let quota = gemini::parse_error(&config(), 429, &fx("error_resource_exhausted.json"));
    assert_eq!(quota.retry_after_ms, Some(37_000));
    let wrapped = format!("[{}]", fx("error_not_found.json"));
    assert_eq!(
        gemini::parse_error(&config(), 404, &wrapped).kind,
        LlmErrorKind::NotFound
    );
    let bare = gemini::parse_error(&config(), 502, "");
    assert_eq!((bare.kind, bare.detail), (LlmErrorKind::Server, None));
}

#[test]
fn the_doctor_says_the_key_was_rejected_and_where_to_get_one() {
    let err = gemini::parse_error(&config(), 400, &fx("error_api_key_invalid.json"));
    let d = diagnose(&config(), &err, &DoctorContext::default());
    assert_eq!(d.problem, Problem::Auth);
    assert!(
        d.steps[0].contains("aistudio.google.com/apikey"),
        "{:?}",
        d.steps
    );
    let wrong = gemini::parse_error(&config(), 404, &fx("error_not_found.json"));
    let models = gemini::parse_models(&fx("models.json")).expect("models");
    let d = diagnose(
        &ProviderConfig {
            model: "gemini-2.5-flsh".into(),
            ..config()
        },
        &wrong,
        &DoctorContext {
            models: Some(models),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::NotFound);
    assert_eq!(
        d.suggestions.first().map(String::as_str),
        Some("gemini-2.5-flash")
    );
}

#[test]
fn models_that_generate_content_without_the_prefix() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, JSON, &fx("models.json"));
    let models = list_models(&llm(&http)).expect("models");
    assert_eq!(models, ["gemini-2.5-flash", "gemini-2.5-pro"]);
    let seen = http.seen.borrow();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(
        seen[0].url,
        "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000"
    );
    assert_eq!(header(&seen[0], "x-goog-api-key"), Some("AIza-test"));
}

#[test]
fn a_rejected_response_schema_is_switched_off_and_the_call_retried() {
    let http = Rc::new(ScriptedHttp::default());
    http.push(400, JSON, &fx("error_invalid_argument.json"));
    http.push(200, JSON, &fx("reply_text.json"));
    http.push(200, JSON, &fx("reply_text.json"));
    let llm = llm(&http);
    complete(&llm, &representative(false)).0.expect("reply");
    assert!(!llm.constrained_output());
    complete(&llm, &representative(false)).0.expect("reply");
    assert!(http.body(0)["generationConfig"]
        .get("responseJsonSchema")
        .is_some());
    for i in [1, 2] {
        let config = &http.body(i)["generationConfig"];
        assert!(config.get("responseJsonSchema").is_none(), "{i}");
        assert!(config.get("responseMimeType").is_none(), "{i}");
        assert_eq!(config["maxOutputTokens"], 512);
    }
    let wire = GeminiWire::new(config());
    let key = wire.parse_error(400, &fx("error_api_key_invalid.json"));
    assert!(!wire.rejects_constrained_output(&key));
}

#[test]
fn odd_bodies_are_text_not_errors() {
    assert_eq!(
        gemini::parse_response("just words").expect("text").content,
        "just words"
    );
    assert_eq!(
        gemini::parse_response(r#"{"unexpected": 1}"#)
            .expect("text")
            .content,
        r#"{"unexpected": 1}"#
    );
    let empty =
        gemini::parse_response(r#"{"candidates": [], "usageMetadata": {"promptTokenCount": 3}}"#)
            .expect("empty");
    assert_eq!(empty.content, "");
    let err = gemini::parse_response(&fx("error_internal.json")).expect_err("error");
    assert_eq!(err.kind, LlmErrorKind::Server);
}

fn stream(words: &[String]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        let mut chunk = json!({"candidates": [{"content": {"parts": [{"text": w}], "role": "model"}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": i + 1}});
        if i + 1 == words.len() {
            chunk["candidates"][0]["content"]["parts"]
                .as_array_mut()
                .expect("parts")
                .push(json!({"functionCall": {"name": "read_page", "args": {"offset": 1}}, "thoughtSignature": "c2ln+/=="}));
            chunk["candidates"][0]["finishReason"] = json!("STOP");
        }
        s.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// However the network cuts the event stream, the reply is the same.
    #[test]
    fn any_chunking_of_a_stream_gives_the_same_reply(
        words in proptest::collection::vec("[a-zA-Zé{}\" ]{1,8}", 1..8),
        cuts in proptest::collection::vec(0usize..3000, 0..12),
    ) {
        let body = stream(&words).into_bytes();
        let http = Rc::new(ScriptedHttp::default());
        http.push_chunks(200, SSE, cut(&body, cuts));
        let (reply, deltas) = complete(&llm(&http), &representative(true));
        let reply = reply.expect("reply");
        prop_assert_eq!(&reply.content, &words.concat());
        prop_assert_eq!(deltas.concat(), words.concat());
        prop_assert_eq!(reply.tool_calls.len(), 1);
        prop_assert_eq!(gemini::signature_of(&reply.tool_calls[0].id), Some("c2ln+/=="));
        prop_assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        prop_assert_eq!(reply.usage.map(|u| (u.input, u.output)), Some((8, words.len() as u64)));
    }

    /// No body makes the parsers panic.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", json_ish in "[{}\\[\\]\":,a-zA-Z_0-9 \\n]{0,200}") {
        for body in [&text, &json_ish] {
            let _ = gemini::parse_response(body);
            let _ = gemini::parse_error(&config(), 400, body);
            let _ = gemini::parse_models(body);
            let _ = gemini::function_parameters(&serde_json::from_str(body).unwrap_or(Value::Null));
            let mut acc = gemini::StreamAccumulator::new();
            for line in body.lines() {
                let _ = acc.apply(line);
            }
            let _ = acc.finish();
        }
    }
}
