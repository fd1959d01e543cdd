//! Prompt caching per context, on the wire and through the engine: the run's
//! `prompt_cache_key` on OpenAI-compatible requests (and its fallback when a server refuses
//! it), Anthropic's `cache_control` breakpoints, and the cached prompt tokens each vendor
//! reports, parsed from fixtures written from its docs:
//! - OpenAI: <https://platform.openai.com/docs/guides/prompt-caching> and
//!   `usage.prompt_tokens_details.cached_tokens`,
//!   <https://platform.openai.com/docs/api-reference/chat/object>;
//! - Anthropic: <https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching>;
//! - Gemini: `usageMetadata.cachedContentTokenCount`,
//!   <https://ai.google.dev/api/generate-content#UsageMetadata>;
//! - Ollama reports no cached count.

use std::rc::Rc;

use crate::wire_common::*;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::phase::Phase;
use knowledgelens::agent::{cache, Engine, StopSignal};
use knowledgelens::llm::formats::anthropic::AnthropicWire;
use knowledgelens::llm::formats::gemini::GeminiWire;
use knowledgelens::llm::formats::ollama::OllamaWire;
use knowledgelens::llm::formats::openai::OpenAiWire;
use knowledgelens::llm::{LlmErrorKind, Provider, ProviderConfig, Usage};
use knowledgelens::state::{PageInfo, SessionState};
use knowledgelens::testing::Phases;
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use knowledgelens::tools::ToolBox;
use serde_json::Value;

const SSE: &str = "text/event-stream";
const JSON: &str = "application/json";

fn openai(base_url: &str) -> ProviderConfig {
    ProviderConfig::openai(base_url, "gpt-4o-mini", "sk-test")
}

fn vendor(provider: Provider, model: &str) -> ProviderConfig {
    ProviderConfig {
        provider,
        base_url: provider.default_base_url().into(),
        model: model.into(),
        api_key: "key-test".into(),
        context_window: 0,
    }
}

fn openai_llm(http: &Rc<ScriptedHttp>, base_url: &str) -> knowledgelens::llm::transport::HttpLlm {
    client(http, Box::new(OpenAiWire::new(openai(base_url))))
}

fn unknown_key_error(http: &ScriptedHttp) {
    http.push(
        400,
        JSON,
        &fixture("openai", "error_unknown_cache_key.json"),
    );
}

// ---- prompt_cache_key on OpenAI-compatible requests ----

#[test]
fn the_cache_key_goes_to_openai_and_to_other_compatible_servers() {
    for base in [
        "https://api.openai.com/v1",
        "http://localhost:1234/v1",
        "https://openrouter.ai/api/v1",
    ] {
        let http = Rc::new(ScriptedHttp::default());
        http.push(200, JSON, &fixture("openai", "completion_cached.json"));
        let llm = openai_llm(&http, base);
        complete(&llm, &representative(false)).0.expect("reply");
        assert_eq!(http.body(0)["prompt_cache_key"], CACHE_KEY, "{base}");
    }
    let mut plain = representative(false);
    plain.cache_key = None;
    let body = knowledgelens::llm::formats::openai::build_request(&openai("http://x/v1"), &plain);
    let body: Value = serde_json::from_str(body.body.as_deref().expect("body")).expect("json");
    assert!(body.get("prompt_cache_key").is_none());
}

#[test]
fn a_server_refusing_the_cache_key_gets_calls_without_it_from_then_on() {
    let http = Rc::new(ScriptedHttp::default());
    unknown_key_error(&http);
    http.push(200, JSON, &fixture("openai", "completion_cached.json"));
    http.push(200, JSON, &fixture("openai", "completion_cached.json"));
    let llm = openai_llm(&http, "http://localhost:8080/v1");
    let reply = complete(&llm, &representative(false))
        .0
        .expect("retried reply");
    assert_eq!(
        reply.content,
        "The sky is blue because of Rayleigh scattering."
    );
    assert!(!llm.cache_key());
    assert_eq!(http.body(0)["prompt_cache_key"], CACHE_KEY);
    // The retry is the same request without the key (constrained output kept) ...
    let (first, retry) = (http.body(0), http.body(1));
    assert!(retry.get("prompt_cache_key").is_none());
    assert_eq!(retry["response_format"], first["response_format"]);
    assert_eq!(retry["messages"], first["messages"]);
    // ... and so is every later call of this client.
    complete(&llm, &representative(false)).0.expect("reply");
    assert!(http.body(2).get("prompt_cache_key").is_none());
    assert!(llm.constrained_output());
}

#[test]
fn openai_itself_keeps_the_cache_key_and_other_400s_keep_it_too() {
    // api.openai.com documents the field: a 400 there is about something else.
    let http = Rc::new(ScriptedHttp::default());
    unknown_key_error(&http);
    let llm = openai_llm(&http, "https://api.openai.com/v1");
    let err = complete(&llm, &representative(false)).0.expect_err("400");
    assert_eq!(err.kind, LlmErrorKind::BadRequest);
    assert!(llm.cache_key());
    // A 400 that does not name the field does not switch it off elsewhere either.
    let http = Rc::new(ScriptedHttp::default());
    http.push(
        400,
        JSON,
        r#"{"error": {"message": "messages: at least one message is required"}}"#,
    );
    let llm = openai_llm(&http, "http://localhost:8080/v1");
    complete(&llm, &representative(false)).0.expect_err("400");
    assert!(llm.cache_key());
    assert_eq!(http.seen.borrow().len(), 1);
}

// ---- cache_control on Anthropic requests ----

#[test]
fn anthropic_marks_the_system_block_the_page_block_and_the_message_before_the_last() {
    let config = vendor(Provider::Anthropic, "claude-sonnet-4-5");
    let req =
        knowledgelens::llm::formats::anthropic::build_request(&config, &representative(false));
    let body: Value = serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    let ephemeral = serde_json::json!({"type": "ephemeral"});
    assert_eq!(body["system"][0]["cache_control"], ephemeral);
    let messages = body["messages"].as_array().expect("messages");
    let marked: Vec<(usize, usize)> = messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            let blocks = m["content"].as_array().expect("blocks");
            blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.get("cache_control").is_some())
                .map(move |(j, _)| (i, j))
                .collect::<Vec<_>>()
        })
        .collect();
    let before_last = messages.len() - 2;
    let last_block = messages[before_last]["content"].as_array().unwrap().len() - 1;
    // The first block of the first user turn (the page block, the same for every question
    // on a page) and the message before the last.
    assert_eq!(marked, [(0, 0), (before_last, last_block)]);
    assert_eq!(messages[0]["role"], "user");
    // Breakpoints: the system block and those, within Anthropic's limit of 4; the key
    // itself is never sent to Anthropic.
    assert!(marked.len() < 4);
    assert!(!req.body.as_deref().unwrap().contains(CACHE_KEY));
    // A lone question: only the system block is marked (no stable message before it).
    let req = knowledgelens::llm::formats::anthropic::build_request(&config, &question(false));
    let body: Value = serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    assert_eq!(body["system"][0]["cache_control"], ephemeral);
    assert!(body["messages"][0]["content"][0]
        .get("cache_control")
        .is_none());
}

#[test]
fn anthropic_marks_the_page_block_of_a_first_question() {
    // The page block and the question are one user turn of two text blocks: the page block
    // is marked, so the next question on the page reads it from the cache.
    use knowledgelens::llm::{ChatMessage, ChatRequest, Role};
    let config = vendor(Provider::Anthropic, "claude-sonnet-4-5");
    let request = ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "You are KnowledgeLens.".to_string()),
            ChatMessage::new(Role::User, "The page: <page-x>Tides.</page-x>".to_string()),
            ChatMessage::new(Role::User, "Why tides?".to_string()),
        ],
        ..ChatRequest::default()
    };
    let req = knowledgelens::llm::formats::anthropic::build_request(&config, &request);
    let body: Value = serde_json::from_str(req.body.as_deref().expect("body")).expect("json");
    let blocks = body["messages"][0]["content"].as_array().expect("blocks");
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0]["cache_control"],
        serde_json::json!({"type": "ephemeral"})
    );
    assert!(blocks[1].get("cache_control").is_none());
}

// ---- cached prompt tokens in the usage ----

fn usage_of(
    wire: Box<dyn knowledgelens::llm::transport::WireFormat>,
    content_type: &str,
    body: &str,
    stream: bool,
) -> Usage {
    let http = Rc::new(ScriptedHttp::default());
    http.push(200, content_type, body);
    let llm = client(&http, wire);
    let reply = complete(&llm, &question(stream)).0.expect("reply");
    reply.usage.expect("usage")
}

#[test]
fn openai_cached_tokens_are_read_from_replies_and_streams() {
    let wire = || Box::new(OpenAiWire::new(openai("http://localhost:8080/v1")));
    let whole = usage_of(
        wire(),
        JSON,
        &fixture("openai", "completion_cached.json"),
        false,
    );
    assert_eq!(whole, Usage::new(2006, 300).with_cached(1920));
    let streamed = usage_of(wire(), SSE, &fixture("openai", "stream_cached.sse"), true);
    assert_eq!(streamed, whole);
}

#[test]
fn anthropic_cache_reads_are_counted_apart_and_input_keeps_every_prompt_token() {
    let wire = || {
        Box::new(AnthropicWire::new(vendor(
            Provider::Anthropic,
            "claude-sonnet-4-5",
        )))
    };
    // Input: 21 fresh + 188 written to the cache + 1800 read from it.
    let whole = usage_of(
        wire(),
        JSON,
        &fixture("anthropic", "reply_cache_read.json"),
        false,
    );
    assert_eq!(whole, Usage::new(2009, 393).with_cached(1800));
    let streamed = usage_of(
        wire(),
        SSE,
        &fixture("anthropic", "stream_cache_read.sse"),
        true,
    );
    assert_eq!(streamed, Usage::new(2009, 15).with_cached(1800));
}

#[test]
fn gemini_cached_content_tokens_are_counted() {
    let wire = Box::new(GeminiWire::new(vendor(
        Provider::Gemini,
        "gemini-2.5-flash",
    )));
    let usage = usage_of(wire, JSON, &fixture("gemini", "reply_cached.json"), false);
    assert_eq!(usage, Usage::new(2100, 12).with_cached(2048));
}

#[test]
fn ollama_reports_no_cached_tokens() {
    let wire = Box::new(OllamaWire::new(vendor(Provider::Ollama, "llama3.2")));
    let usage = usage_of(
        wire,
        JSON,
        &fixture("ollama", "chat_reply_text.json"),
        false,
    );
    assert_eq!(usage.cached_input, 0);
    assert!(usage.input > 0);
}

// ---- keys through the engine ----

fn page() -> PageInfo {
    PageInfo {
        title: "Tides".into(),
        url: "http://127.0.0.1/tides".into(),
        text: "Tides are caused by the Moon. ".repeat(20),
        ..Default::default()
    }
}

/// Drives the session's current run to its end; returns the cache keys it sent.
fn drive(state: &mut SessionState, replies: Vec<Reply>, usage: Option<Usage>) -> Vec<String> {
    let llm = ScriptedLlm::new(replies);
    llm.usage.set(usage);
    let clock = ManualClock::new(state.started_at);
    let (store, sink, tools) = (
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    {
        let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
        futures::executor::block_on(engine.drive(state));
    }
    let keys = llm
        .requests
        .borrow()
        .iter()
        .map(|r| r.cache_key.clone().expect("every call carries a key"))
        .collect();
    keys
}

fn control(answer: &str) -> Reply {
    Reply::text(serde_json::json!({"should_continue": false, "final_answer": answer}).to_string())
}

#[test]
fn a_run_keeps_one_key_and_the_next_run_gets_another() {
    let question = "What causes the tides on my secret beach?";
    let mut state = SessionState::new("tab:7", 1_000);
    state.begin_run(question, Some(page()), RunConfig::default(), 1_000);
    let first = drive(
        &mut state,
        vec![
            Reply::tool("read_page", r#"{"offset": 0}"#),
            control("The Moon."),
        ],
        None,
    );
    assert_eq!(first.len(), 2);
    assert_eq!(first[0], first[1]);
    assert_eq!(first[0], cache::of(&state));
    assert!(first[0].starts_with("kl-") && first[0].len() == 19);
    assert!(!first[0].contains("secret") && !first[0].contains("tab"));

    state.begin_run(
        "And the spring tides?",
        Some(page()),
        RunConfig::default(),
        5_000,
    );
    let second = drive(&mut state, vec![Reply::text("The Sun helps.")], None);
    assert_ne!(second[0], first[0]);

    let mut other = SessionState::new("tab:8", 1_000);
    other.begin_run(question, Some(page()), RunConfig::default(), 1_000);
    let elsewhere = drive(&mut other, vec![Reply::text("The Moon.")], None);
    assert_ne!(elsewhere[0], first[0]);
}

#[test]
fn cached_tokens_add_up_in_the_run_usage_and_its_view() {
    let mut state = SessionState::new("tab:7", 1_000);
    state.begin_run("Why tides?", Some(page()), RunConfig::default(), 1_000);
    let used = Usage::new(1_000, 50).with_cached(600);
    drive(
        &mut state,
        vec![
            Reply::tool("read_page", r#"{"offset": 0}"#),
            control("The Moon."),
        ],
        Some(used),
    );
    assert_eq!(state.usage, Usage::new(2_000, 100).with_cached(1_200));
    let view = state.usage_view();
    assert_eq!((view.input, view.cached_input), (2_000, 1_200));
    let json = serde_json::to_value(view).expect("view");
    assert_eq!(json["cached_input"], 1_200);
}

#[test]
fn each_context_label_has_its_own_key() {
    let llm = ScriptedLlm::new(["a", "b", "c", "d", "e", "f"].map(Reply::text).to_vec());
    let clock = ManualClock::new(1_000);
    let tools = ToolBox::default();
    let phases = Phases::new(
        &llm,
        &clock,
        &tools,
        StopSignal::new(),
        RunConfig::default(),
        "You are a test.",
    );
    for phase in [
        Phase::new("1", 1),
        Phase::new("2", 1).in_context("subtopic 1"),
        Phase::new("3", 1).in_context("subtopic 2"),
        Phase::new("4", 1).in_context("subtopic 1"),
        // `continue_context = false` starts the label afresh: a key of its own.
        Phase::new("5", 1).in_context("subtopic 1").fresh(),
        Phase::new("6", 1).in_context("subtopic 1"),
    ] {
        futures::executor::block_on(phases.run_bounded(phase)).expect("phase");
    }
    let keys: Vec<String> = llm
        .requests
        .borrow()
        .iter()
        .map(|r| r.cache_key.clone().expect("key"))
        .collect();
    assert_eq!(keys.len(), 6);
    assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
    assert_eq!(keys[3], keys[1], "the same label continued keeps its key");
    assert!(
        !keys[..4].contains(&keys[4]),
        "a fresh context has a new key"
    );
    assert_eq!(keys[5], keys[4]);
}
