//! Chrome's built-in model adapter (`BuiltinModel`) against a stand-in `LanguageModel` with
//! the Prompt API's documented shape (`availability()`, `create({initialPrompts})`,
//! `prompt` / `promptStreaming` with `responseConstraint` and `signal`, `destroy()`, and,
//! when asked for, the context accounting `contextUsage`, `contextWindow`,
//! `measureContextUsage` or their older names, counting words as tokens):
//! Debian's Chromium has no on-device model, so the real one is only checked end to end
//! for its unavailable path. Runs in Node, a Chromium page and a service worker.
#![cfg(target_arch = "wasm32")]

use js_sys::{Function, Reflect};
use knowledgelens::llm::{
    ChatMessage, ChatRequest, JsonSchemaFormat, LlmErrorKind, Role, ToolSpec, Usage,
};
use knowledgelens::ports::LlmClient;
use knowledgelens::web::builtin::{availability, BuiltinModel};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

/// The context accounting a stand-in session offers: the member names (current or older)
/// and the window as a JS expression. Tokens are words; a prompt also counts one token for
/// the model's reply prefix, as Chrome's measure does (prompt-api issue 164).
struct Accounting {
    usage: &'static str,
    window: &'static str,
    measure: &'static str,
    window_tokens: &'static str,
    measure_throws: bool,
}

impl Accounting {
    fn current(window_tokens: &'static str) -> Self {
        Self {
            usage: "contextUsage",
            window: "contextWindow",
            measure: "measureContextUsage",
            window_tokens,
            measure_throws: false,
        }
    }

    fn older(window_tokens: &'static str) -> Self {
        Self {
            usage: "inputUsage",
            window: "inputQuota",
            measure: "measureInputUsage",
            window_tokens,
            measure_throws: false,
        }
    }

    /// JS run on a new session (`session`, `options`, `words` in scope).
    fn install(&self) -> String {
        let Self {
            usage,
            window,
            measure,
            window_tokens,
            measure_throws,
        } = self;
        format!(
            r#"
            session.{usage} = (options.initialPrompts ?? []).reduce((n, p) => n + words(p.content), 0);
            log.usageAtCreate = session.{usage};
            session.{window} = {window_tokens};
            session.{measure} = async function (input, o) {{
              log.measured.push({{ input, constraint: o?.responseConstraint ?? null }});
              if ({measure_throws}) throw new DOMException('cannot measure', 'UnknownError');
              return words(input) + 1;
            }};
            session.grow = function (input, reply) {{ this.{usage} += words(input) + 1 + words(reply); }};
            "#
        )
    }
}

/// Installs a `LanguageModel` stand-in reporting `state`, whose sessions answer `reply`
/// (streamed in `chunks` pieces, or whole), and records what it was given on
/// `globalThis.__lm`. Its sessions have no context accounting.
fn install_language_model(state: &str, chunks: &[&str]) {
    install_counting_language_model(state, chunks, None);
}

/// [`install_language_model`] whose sessions keep the context accounting `accounting`.
fn install_counting_language_model(state: &str, chunks: &[&str], accounting: Option<Accounting>) {
    let chunks = serde_json::to_string(chunks).expect("chunks");
    let accounting = accounting.map(|a| a.install()).unwrap_or_default();
    let body = format!(
        r#"
        const log = {{ availability: [], created: [], prompts: [], measured: [], destroyed: 0 }};
        globalThis.__lm = log;
        const words = (t) => String(t).split(/\s+/).filter(Boolean).length;
        globalThis.LanguageModel = {{
          async availability(options) {{ log.availability.push(options); return '{state}'; }},
          async create(options) {{
            log.created.push(options);
            const session = {{
              async prompt(input, options) {{
                log.prompts.push({{ input, constraint: options?.responseConstraint ?? null, signal: !!options?.signal, streaming: false }});
                const reply = {chunks}.join('');
                this.grow?.(input, reply);
                return reply;
              }},
              promptStreaming(input, options) {{
                log.prompts.push({{ input, constraint: options?.responseConstraint ?? null, signal: !!options?.signal, streaming: true }});
                const parts = {chunks};
                const self = this;
                return new ReadableStream({{ start(c) {{
                  for (const p of parts) c.enqueue(p);
                  self.grow?.(input, parts.join(''));
                  c.close();
                }} }});
              }},
              destroy() {{ log.destroyed += 1; }},
            }};
            {accounting}
            return session;
          }},
        }};
        "#
    );
    Function::new_no_args(&body)
        .call0(&JsValue::NULL)
        .expect("install LanguageModel");
}

fn remove_language_model() {
    Function::new_no_args("delete globalThis.LanguageModel; globalThis.__lm = null;")
        .call0(&JsValue::NULL)
        .expect("remove LanguageModel");
}

fn log(path: &str) -> JsValue {
    Function::new_no_args(&format!("return globalThis.__lm.{path};"))
        .call0(&JsValue::NULL)
        .expect("log")
}

/// The `type` of the `responseConstraint` a logged prompt or measure was given.
fn constraint_type(entry: &JsValue) -> Option<String> {
    let constraint = Reflect::get(entry, &"constraint".into()).expect("constraint");
    Reflect::get(&constraint, &"type".into())
        .expect("type")
        .as_string()
}

fn assert_destroyed_once() {
    assert_eq!(
        log("destroyed").as_f64(),
        Some(1.0),
        "the session was not destroyed"
    );
}

fn request(stream: bool) -> ChatRequest {
    let mut assistant = ChatMessage::new(Role::Assistant, "");
    assistant.tool_calls.push(knowledgelens::llm::ToolCall {
        id: "c1".into(),
        name: "read_page".into(),
        arguments: r#"{"offset":0}"#.into(),
    });
    let mut tool = ChatMessage::new(Role::Tool, "The moon pulls the oceans.");
    tool.tool_call_id = Some("c1".into());
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "You are KnowledgeLens."),
            ChatMessage::new(Role::User, "Why are there tides?"),
            assistant,
            tool,
        ],
        tools: vec![ToolSpec {
            name: "read_page".into(),
            description: "Reads more of the page.".into(),
            parameters: serde_json::json!({"type": "object"}).into(),
        }],
        response_format: Some(JsonSchemaFormat {
            name: "control".into(),
            schema: serde_json::json!({"type": "object", "properties": {"should_continue": {"type": "boolean"}}}),
        }),
        max_tokens: Some(64),
        stream,
        cache_key: None,
    }
}

#[wasm_bindgen_test]
async fn without_the_prompt_api_the_model_is_unavailable() {
    remove_language_model();
    assert_eq!(
        availability().await.expect("availability"),
        knowledgelens::llm::formats::builtin::Availability::NoApi
    );
    let err = BuiltinModel::new()
        .complete(&request(false), &mut |_| {})
        .await
        .expect_err("unavailable");
    assert_eq!(err.kind, LlmErrorKind::Unavailable);
    assert_eq!(err.detail.as_deref(), Some("no_api"));
    assert!(err.message.contains("Chrome 138"), "{}", err.message);
}

#[wasm_bindgen_test]
async fn a_model_still_to_download_is_reported_not_created() {
    install_language_model("downloadable", &["never"]);
    let err = BuiltinModel::new()
        .complete(&request(false), &mut |_| {})
        .await
        .expect_err("downloadable");
    assert_eq!(err.kind, LlmErrorKind::Unavailable);
    assert_eq!(err.detail.as_deref(), Some("downloadable"));
    assert_eq!(
        js_sys::Array::from(&log("created")).length(),
        0,
        "create() was called"
    );
    // availability() gets the same language options create() would.
    let options = js_sys::Array::from(&log("availability")).get(0);
    let inputs = Reflect::get(&options, &"expectedInputs".into()).expect("expectedInputs");
    assert_eq!(js_sys::Array::from(&inputs).length(), 1);
    remove_language_model();
}

#[wasm_bindgen_test]
async fn a_streamed_reply_arrives_as_deltas_with_the_conversation_and_constraint() {
    install_language_model("available", &["The moon ", "pulls the ", "oceans."]);
    let mut deltas = Vec::new();
    let reply = BuiltinModel::new()
        .complete(&request(true), &mut |d| deltas.push(d.to_string()))
        .await
        .expect("reply");
    assert_eq!(reply.content, "The moon pulls the oceans.");
    assert_eq!(deltas, ["The moon ", "pulls the ", "oceans."]);
    assert_eq!(reply.usage, None, "a session without context accounting");
    let created = js_sys::Array::from(&log("created")).get(0);
    let prompts = js_sys::Array::from(
        &Reflect::get(&created, &"initialPrompts".into()).expect("initialPrompts"),
    );
    let roles: Vec<String> = prompts
        .iter()
        .map(|p| {
            Reflect::get(&p, &"role".into())
                .expect("role")
                .as_string()
                .expect("string")
        })
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    let system = Reflect::get(&prompts.get(0), &"content".into())
        .expect("content")
        .as_string()
        .expect("text");
    assert!(
        system.contains("- read_page: Reads more of the page."),
        "{system}"
    );
    let prompt = js_sys::Array::from(&log("prompts")).get(0);
    assert_eq!(
        Reflect::get(&prompt, &"input".into())
            .expect("input")
            .as_string()
            .as_deref(),
        Some("Tool result:\nThe moon pulls the oceans.")
    );
    assert!(Reflect::get(&prompt, &"streaming".into())
        .expect("streaming")
        .is_truthy());
    assert!(Reflect::get(&prompt, &"signal".into())
        .expect("signal")
        .is_truthy());
    assert_eq!(constraint_type(&prompt).as_deref(), Some("object"));
    assert_destroyed_once();
    remove_language_model();
}

#[wasm_bindgen_test]
async fn a_whole_reply_comes_from_prompt() {
    install_language_model("available", &["Because of ", "the moon."]);
    let mut deltas = Vec::new();
    let reply = BuiltinModel::new()
        .complete(&request(false), &mut |d| deltas.push(d.to_string()))
        .await
        .expect("reply");
    assert_eq!(reply.content, "Because of the moon.");
    assert_eq!(deltas, ["Because of the moon."]);
    assert_eq!(reply.usage, None, "a session without context accounting");
    let prompt = js_sys::Array::from(&log("prompts")).get(0);
    assert!(!Reflect::get(&prompt, &"streaming".into())
        .expect("streaming")
        .is_truthy());
    assert_destroyed_once();
    remove_language_model();
}

fn number(path: &str) -> u64 {
    log(path).as_f64().expect("a number") as u64
}

/// "Tool result:\nThe moon pulls the oceans." is 7 words, plus the reply prefix.
const PROMPT_TOKENS: u64 = 8;

#[wasm_bindgen_test]
async fn a_streamed_reply_reports_the_sessions_own_usage() {
    install_counting_language_model(
        "available",
        &["The moon ", "pulls the ", "oceans."],
        Some(Accounting::current("100000")),
    );
    let reply = BuiltinModel::new()
        .complete(&request(true), &mut |_| {})
        .await
        .expect("reply");
    let before = number("usageAtCreate");
    assert!(before > 0, "the initial prompts were not counted");
    assert_eq!(reply.usage, Some(Usage::new(before + PROMPT_TOKENS, 5)));
    // The prompt was measured as it was sent: same text, same responseConstraint.
    let measured = js_sys::Array::from(&log("measured")).get(0);
    assert_eq!(
        Reflect::get(&measured, &"input".into())
            .expect("input")
            .as_string()
            .as_deref(),
        Some("Tool result:\nThe moon pulls the oceans.")
    );
    assert_eq!(constraint_type(&measured).as_deref(), Some("object"));
    assert_destroyed_once();
    remove_language_model();
}

#[wasm_bindgen_test]
async fn older_builds_report_usage_under_the_older_names() {
    install_counting_language_model(
        "available",
        &["Because of ", "the moon."],
        Some(Accounting::older("Infinity")),
    );
    let reply = BuiltinModel::new()
        .complete(&request(false), &mut |_| {})
        .await
        .expect("reply");
    assert_eq!(
        reply.usage,
        Some(Usage::new(number("usageAtCreate") + PROMPT_TOKENS, 4))
    );
    remove_language_model();
}

#[wasm_bindgen_test]
async fn a_prompt_over_the_window_is_refused_before_it_is_sent() {
    install_counting_language_model("available", &["never"], Some(Accounting::current("20")));
    let err = BuiltinModel::new()
        .complete(&request(false), &mut |_| {})
        .await
        .expect_err("over the window");
    assert_eq!(err.kind, LlmErrorKind::ContextTooLong);
    let needed = number("usageAtCreate") + PROMPT_TOKENS;
    let detail = err.detail.clone().unwrap_or_default();
    assert!(
        detail.contains(&format!("needs {needed} tokens of the session's 20-token")),
        "{detail}"
    );
    assert!(err.message.contains("(20 tokens)"), "{}", err.message);
    assert_eq!(
        js_sys::Array::from(&log("prompts")).length(),
        0,
        "the prompt was sent"
    );
    assert_destroyed_once();
    remove_language_model();
}

#[wasm_bindgen_test]
async fn a_measure_that_throws_leaves_usage_to_the_estimate() {
    let mut accounting = Accounting::current("20");
    accounting.measure_throws = true;
    install_counting_language_model("available", &["Because of ", "the moon."], Some(accounting));
    let reply = BuiltinModel::new()
        .complete(&request(false), &mut |_| {})
        .await
        .expect("reply");
    assert_eq!(reply.content, "Because of the moon.");
    assert_eq!(reply.usage, None);
    assert_eq!(js_sys::Array::from(&log("measured")).length(), 1);
    remove_language_model();
}

/// A transcription request: one user message carrying a screenshot.
fn image_request() -> ChatRequest {
    let mut user = ChatMessage::new(Role::User, "Transcribe the text.");
    user.images.push(knowledgelens::testing::test_png(4, 3));
    ChatRequest {
        messages: vec![ChatMessage::new(Role::System, "You read text."), user],
        max_tokens: Some(64),
        ..Default::default()
    }
}

/// What the stand-in was given for an image prompt, as JSON: the inputs each availability
/// check and the session expected, and the prompt's role and content (a Blob for the image).
fn image_prompt_log() -> serde_json::Value {
    let text = Function::new_no_args(
        r#"
        const log = globalThis.__lm;
        const inputs = (o) => (o?.expectedInputs ?? []).map((i) => i.type);
        const input = log.prompts[0]?.input;
        const content = Array.isArray(input) ? input[0].content : [];
        return JSON.stringify({
          availability: log.availability.map(inputs),
          created: log.created.map(inputs),
          role: Array.isArray(input) ? input[0].role : null,
          kinds: content.map((c) => c.type),
          text: content[0]?.value ?? null,
          blob: content[1]?.value instanceof Blob,
          mime: content[1]?.value?.type ?? null,
          size: content[1]?.value?.size ?? 0,
        });
        "#,
    )
    .call0(&JsValue::NULL)
    .expect("log")
    .as_string()
    .expect("json");
    serde_json::from_str(&text).expect("json")
}

#[wasm_bindgen_test]
async fn an_image_is_prompted_as_image_content_in_a_session_expecting_images() {
    install_language_model("available", &["FERRY ", "TO ISLAY"]);
    let reply = BuiltinModel::new()
        .complete(&image_request(), &mut |_| {})
        .await
        .expect("a reply");
    assert_eq!(reply.content, "FERRY TO ISLAY");
    let log = image_prompt_log();
    assert_eq!(
        log["availability"],
        serde_json::json!([["text"], ["text", "image"]])
    );
    assert_eq!(log["created"], serde_json::json!([["text", "image"]]));
    assert_eq!(log["role"], "user");
    assert_eq!(log["kinds"], serde_json::json!(["text", "image"]));
    assert_eq!(log["text"], "Transcribe the text.");
    assert_eq!(log["blob"], true);
    assert_eq!(log["mime"], "image/png");
    assert_eq!(log["size"], 33);
    assert_destroyed_once();
    remove_language_model();
}

#[wasm_bindgen_test]
async fn a_device_without_image_input_says_the_model_cannot_read_images() {
    install_language_model("available", &["never"]);
    // Text is available; image input is not.
    Function::new_no_args(
        r#"
        const lm = globalThis.LanguageModel;
        const log = globalThis.__lm;
        lm.availability = async (o) => {
          log.availability.push(o);
          return (o?.expectedInputs ?? []).some((i) => i.type === 'image') ? 'unavailable' : 'available';
        };
        "#,
    )
    .call0(&JsValue::NULL)
    .expect("patch");
    let err = BuiltinModel::new()
        .complete(&image_request(), &mut |_| {})
        .await
        .expect_err("no image input");
    assert!(
        knowledgelens::llm::transport::refuses_images(&err),
        "{err:?}"
    );
    assert!(
        err.message.contains("cannot read images"),
        "{}",
        err.message
    );
    assert_eq!(
        log("created.length").as_f64(),
        Some(0.0),
        "no session for an image it cannot read"
    );
    remove_language_model();
}
