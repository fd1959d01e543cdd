//! A provider's "the request does not fit the context window" answer, in every wire format,
//! is its own error kind (`context_too_long`), is never resent as is, and ends the run with
//! an actionable message. Each fixture body cites where the vendor's real body comes from.

use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::context;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::diagnosis::doctor;
use knowledgelens::llm::formats::{anthropic, builtin, gemini, ollama, openai};
use knowledgelens::llm::provider::Provider;
use knowledgelens::llm::{LlmError, LlmErrorKind, ProviderConfig};
use knowledgelens::state::{PageInfo, RunStatus, SessionState};
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::RunErrorKind;

// OpenAI: 400 with `code: context_length_exceeded`.
// https://platform.openai.com/docs/guides/error-codes ; real body as reported in
// https://github.com/ChatGPTNextWeb/NextChat/issues/2358
const OPENAI: &str = r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 16468 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

// llama.cpp's server: 400 `exceed_context_size_error` with the counts beside it.
// https://github.com/ggml-org/llama.cpp/blob/master/tools/server/server-context.cpp
// (send_error(..., ERROR_TYPE_EXCEED_CONTEXT_SIZE)) and tools/server/utils.hpp
// (format_error_response names the type "exceed_context_size_error").
const LLAMA_CPP: &str = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;

// Ollama with `truncate: false`: 400 `{"error": "..."}` carrying its runner's (llama.cpp's)
// body as a string. https://github.com/ollama/ollama/pull/17944 (docs: what happens when a
// prompt exceeds the context length; `truncate: false` turns the silent cut into a 400).
const OLLAMA: &str = r#"{"error":"{\"error\":{\"code\":400,\"message\":\"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":8889,\"n_ctx\":4096}}"}"#;

// Ollama's own wording (embeddings with `truncate: false`, and `shift: false`).
// https://github.com/ollama/ollama/blob/main/server/routes.go
const OLLAMA_PLAIN: &str = r#"{"error":"the input length exceeds the context length"}"#;

// Anthropic: 400 `invalid_request_error`, "prompt is too long: N tokens > M maximum".
// https://docs.anthropic.com/en/api/errors ; real body as reported in
// https://github.com/anthropics/claude-code/issues/14195
const ANTHROPIC: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 191989 tokens > 180000 maximum"},"request_id":"req_011CWAgPbMohjStFaYrkLZCm"}"#;

// Anthropic's other 400s stay bad requests (max_tokens over the model's output limit).
// https://github.com/ChatGPTNextWeb/NextChat/issues/4964
const ANTHROPIC_MAX_TOKENS: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620"}}"#;

// Gemini: 400 INVALID_ARGUMENT, "The input token count (N) exceeds the maximum number of
// tokens allowed (M)." https://ai.google.dev/gemini-api/docs/troubleshooting ; real body as
// reported in https://github.com/google-gemini/gemini-cli/issues/4118
const GEMINI: &str = r#"{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}"#;

fn config(provider: Provider, base_url: &str) -> ProviderConfig {
    ProviderConfig {
        provider,
        base_url: base_url.into(),
        model: "m".into(),
        api_key: "k".into(),
        context_window: 0,
    }
}

fn assert_too_long(err: &LlmError, window: &str) {
    assert_eq!(err.kind, LlmErrorKind::ContextTooLong, "{err:?}");
    assert!(!err.kind.is_retryable());
    assert!(
        err.message
            .starts_with("The conversation no longer fits the model's context window"),
        "{}",
        err.message
    );
    assert!(err.message.contains(window), "{}", err.message);
    assert!(
        err.message.contains("Start a new conversation"),
        "{}",
        err.message
    );
}

#[test]
fn openai_context_length_exceeded_is_context_too_long() {
    let c = config(Provider::OpenaiCompatible, "https://api.openai.com/v1");
    assert_too_long(&openai::parse_error(&c, 400, OPENAI), "(16,385 tokens)");
}

#[test]
fn llama_cpp_exceed_context_size_error_is_context_too_long() {
    let c = config(Provider::OpenaiCompatible, "http://localhost:8080/v1");
    let err = openai::parse_error(&c, 400, LLAMA_CPP);
    assert_too_long(&err, "(4,096 tokens)");
    assert!(err.message.contains("raise the Context window in Options"));
}

#[test]
fn ollama_context_errors_are_context_too_long() {
    let c = config(Provider::Ollama, "http://localhost:11434");
    assert_too_long(&ollama::parse_error(&c, 400, OLLAMA), "(4,096 tokens)");
    // Without a window in the body, the one in effect for the settings is named.
    let mut c = c;
    c.context_window = 8_192;
    assert_too_long(
        &ollama::parse_error(&c, 400, OLLAMA_PLAIN),
        "(8,192 tokens)",
    );
    assert_too_long(
        &ollama::parse_error(&c, 500, OLLAMA_PLAIN),
        "(8,192 tokens)",
    );
}

#[test]
fn anthropic_prompt_too_long_is_context_too_long_and_other_400s_are_not() {
    let c = config(Provider::Anthropic, "https://api.anthropic.com/v1");
    let err = anthropic::parse_error(&c, 400, ANTHROPIC);
    assert_too_long(&err, "(180,000 tokens)");
    assert!(err.message.contains("larger context window"));
    assert_eq!(
        anthropic::parse_error(&c, 400, ANTHROPIC_MAX_TOKENS).kind,
        LlmErrorKind::BadRequest
    );
}

#[test]
fn gemini_input_token_count_is_context_too_long() {
    let c = config(
        Provider::Gemini,
        "https://generativelanguage.googleapis.com/v1beta",
    );
    assert_too_long(&gemini::parse_error(&c, 400, GEMINI), "(131,072 tokens)");
    // Gemini CLI saw the same body wrapped in an array.
    let wrapped = format!("[{GEMINI}]");
    assert_too_long(&gemini::parse_error(&c, 400, &wrapped), "(131,072 tokens)");
}

// Chrome's built-in model: `QuotaExceededError` when the prompt would pass the window.
// https://developer.mozilla.org/en-US/docs/Web/API/LanguageModel/contextUsage
#[test]
fn builtin_quota_exceeded_is_context_too_long() {
    let err = builtin::failure("QuotaExceededError", "The input is too large.");
    assert_too_long(&err, "tokens)");
    assert_eq!(
        err.detail.as_deref(),
        Some("QuotaExceededError: The input is too large.")
    );
    assert_eq!(
        builtin::failure("AbortError", "aborted").kind,
        LlmErrorKind::Timeout
    );
}

#[test]
fn the_kind_has_a_wire_name_and_a_diagnosis() {
    let kind = RunErrorKind::Llm(LlmErrorKind::ContextTooLong);
    assert_eq!(kind.name(), "context_too_long");
    assert!(RunErrorKind::ALL.contains(&kind));
    assert_eq!(RunErrorKind::from_name("context_too_long"), kind);
    assert_eq!(
        RunErrorKind::from_name("some_future_kind"),
        RunErrorKind::Unknown
    );
    let c = config(Provider::Ollama, "http://localhost:11434");
    let err = ollama::parse_error(&c, 400, OLLAMA);
    let d = doctor::diagnose(&c, &err, &doctor::DoctorContext::default());
    assert_eq!(d.problem, doctor::Problem::ContextTooLong);
    assert!(d.steps.iter().any(|s| s.contains("Context window")));
}

#[test]
fn a_context_too_long_answer_is_retried_once_smaller_and_then_ends_with_its_message() {
    let c = config(Provider::OpenaiCompatible, "http://localhost:8080/v1");
    let too_long = openai::parse_error(&c, 400, LLAMA_CPP);
    // Strict: a third call would panic the test.
    let llm = ScriptedLlm::new(vec![Reply::Fail(too_long.clone()), Reply::Fail(too_long)]);
    let clock = ManualClock::new(1_000);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let mut state = SessionState::new("tab:7", 1_000);
    let page = PageInfo {
        title: "Photosynthesis".into(),
        url: "http://127.0.0.1/article".into(),
        text: "Plants turn light into sugar. ".repeat(400),
        ..Default::default()
    };
    let config = RunConfig {
        context_window: 8_192,
        ..RunConfig::default()
    };
    state.begin_run("What do plants do?", Some(page), config, 1_000);
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        futures::executor::block_on(engine.drive(&mut state));
    }
    let requests = llm.requests.borrow().clone();
    assert_eq!(requests.len(), 2, "retried once, then never resent");
    let (first, second) = (
        context::request_tokens(&requests[0]),
        context::request_tokens(&requests[1]),
    );
    assert!(
        second * 100 <= first * context::OVERFLOW_RETRY_PCT,
        "the retry is a quarter smaller, not the same request: {first} -> {second}"
    );
    assert!(sink.names().contains(&"compacting"));
    assert!(
        clock.sleeps.borrow().is_empty(),
        "no backoff: nothing to retry"
    );
    assert_eq!(state.status, RunStatus::Failed);
    let error = state.error.as_ref().expect("error");
    assert_eq!(error.kind, "context_too_long");
    assert_eq!(
        error.message,
        "The conversation no longer fits the model's context window (4,096 tokens). Start a new conversation or raise the Context window in Options."
    );
    assert!(!error.message.contains("Gave up"), "{}", error.message);
    assert_eq!(sink.names().last(), Some(&"failed"));
}
