//! A screenshot on every vendor's wire: a user message with an image, as each
//! vendor's documentation shows it, and what is known about which models take images and
//! which server errors say a model does not.
//! - OpenAI-compatible: content parts, `{"type": "image_url", "image_url": {"url":
//!   "data:image/png;base64,..."}}` (https://platform.openai.com/docs/guides/images-vision);
//! - Anthropic: `{"type": "image", "source": {"type": "base64", "media_type": "image/png",
//!   "data": ...}}` (https://docs.anthropic.com/en/docs/build-with-claude/vision);
//! - Gemini: a part `{"inline_data": {"mime_type": "image/png", "data": ...}}`
//!   (https://ai.google.dev/gemini-api/docs/image-understanding);
//! - Ollama: `"images": [<base64>]` on the message
//!   (https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-images);
//! - Chrome's built-in model: the prompt's images, sent as `{type: "image", value}` content
//!   in a session whose `expectedInputs` name `image`
//!   (https://developer.chrome.com/docs/ai/prompt-api#multimodal_capabilities).

use knowledgelens::llm::formats::{anthropic, builtin, gemini, ollama, openai};
use knowledgelens::llm::prompted_tools::tools_in_prompt;
use knowledgelens::llm::provider::reads_images;
use knowledgelens::llm::transport::refuses_images;
use knowledgelens::llm::{
    ChatMessage, ChatRequest, LlmError, LlmErrorKind, Provider, ProviderConfig, Role,
};
use knowledgelens::testing::test_png;
use serde_json::{json, Value};

fn request() -> (ChatRequest, String) {
    let image = test_png(4, 3);
    let data = image.data.clone();
    let mut user = ChatMessage::new(Role::User, "Transcribe the text.");
    user.images.push(image);
    let request = ChatRequest {
        messages: vec![ChatMessage::new(Role::System, "You read text."), user],
        max_tokens: Some(100),
        ..Default::default()
    };
    (request, data)
}

fn config(provider: Provider) -> ProviderConfig {
    ProviderConfig {
        provider,
        ..ProviderConfig::openai("http://127.0.0.1:1/v1", "a-vision-model", "key")
    }
}

fn body(http: &knowledgelens::ports::HttpRequest) -> Value {
    serde_json::from_str(http.body.as_deref().expect("a body")).expect("JSON")
}

#[test]
fn openai_compatible_sends_a_text_part_and_an_image_url_part() {
    let (request, data) = request();
    let sent = body(&openai::build_request(
        &config(Provider::OpenaiCompatible),
        &request,
    ));
    assert_eq!(sent["messages"][0]["content"], "You read text.");
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Transcribe the text."},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}
        ])
    );
}

#[test]
fn anthropic_sends_a_base64_image_block() {
    let (request, data) = request();
    let sent = body(&anthropic::build_request(
        &config(Provider::Anthropic),
        &request,
    ));
    assert_eq!(sent["system"][0]["text"], "You read text.");
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Transcribe the text."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        ]}])
    );
}

#[test]
fn gemini_sends_an_inline_data_part() {
    let (request, data) = request();
    let sent = body(&gemini::build_request(&config(Provider::Gemini), &request));
    assert_eq!(
        sent["contents"],
        json!([{"role": "user", "parts": [
            {"text": "Transcribe the text."},
            {"inline_data": {"mime_type": "image/png", "data": data}}
        ]}])
    );
}

#[test]
fn ollama_sends_the_images_on_the_message() {
    let (request, data) = request();
    let sent = body(&ollama::build_request(&config(Provider::Ollama), &request));
    assert_eq!(sent["messages"][1]["content"], "Transcribe the text.");
    assert_eq!(sent["messages"][1]["images"], json!([data]));
    assert!(sent["messages"][0].get("images").is_none());
}

#[test]
fn the_built_in_model_prompts_with_the_images() {
    let (request, _) = request();
    let plan = builtin::plan(&request);
    assert_eq!(plan.prompt, "Transcribe the text.");
    assert_eq!(plan.images, request.messages[1].images);
    // Moving tools into the prompt keeps a user turn's image.
    let moved = tools_in_prompt(&request);
    assert_eq!(moved.messages[1].images, request.messages[1].images);
    // A request without images has none.
    let plain = ChatRequest {
        messages: vec![ChatMessage::new(Role::User, "Hi.")],
        ..Default::default()
    };
    assert!(builtin::plan(&plain).images.is_empty());
}

#[test]
fn a_message_without_images_is_unchanged_on_every_wire() {
    let plain = ChatRequest {
        messages: vec![ChatMessage::new(Role::User, "Hi.")],
        ..Default::default()
    };
    let sent = body(&openai::build_request(
        &config(Provider::OpenaiCompatible),
        &plain,
    ));
    assert_eq!(sent["messages"][0]["content"], "Hi.");
    let sent = body(&ollama::build_request(&config(Provider::Ollama), &plain));
    assert!(sent["messages"][0].get("images").is_none());
    // Nor does a message without images save an `images` field.
    let saved = serde_json::to_value(&plain.messages[0]).expect("serializes");
    assert!(saved.get("images").is_none());
}

#[test]
fn models_known_to_take_text_only_are_not_sent_images() {
    for model in [
        "llama3.2",
        "llama3.1:8b",
        "gpt-3.5-turbo",
        "deepseek-r1:7b",
        "smollm2-135m",
        "qwen2.5-coder:7b",
    ] {
        assert!(!reads_images(Provider::Ollama, model), "{model}");
    }
    for model in [
        "llama3.2-vision",
        "gpt-4o-mini",
        "qwen2.5vl:7b",
        "llava",
        "gemma3",
        "claude-sonnet-4-5",
        "",
        "vision-model",
    ] {
        assert!(reads_images(Provider::OpenaiCompatible, model), "{model}");
    }
    assert!(!Provider::Ollama.capabilities("llama3.2").images);
    assert!(Provider::Gemini.capabilities("gemini-2.5-flash").images);
}

#[test]
fn servers_saying_the_model_cannot_take_images_are_recognized() {
    let refusal = |kind, message: &str, detail: Option<&str>| {
        let mut err = LlmError::new(kind, message);
        err.detail = detail.map(str::to_string);
        err
    };
    for (message, detail) in [
        ("The request was rejected (HTTP 400).", Some("Invalid content type. image_url is only supported by certain models.")),
        ("The request was rejected (HTTP 400).", Some("image input is not supported - hint: if this is unexpected, you may need to provide the mmproj")),
        ("The request was rejected (HTTP 400).", Some("smollm is not a multimodal model")),
        ("Model does not support images. Please use a model that does.", None),
        ("Chrome's built-in model cannot read images on this device (its image input is unavailable).", None),
    ] {
        assert!(refuses_images(&refusal(LlmErrorKind::BadRequest, message, detail)), "{message} {detail:?}");
    }
    assert!(!refuses_images(&refusal(
        LlmErrorKind::BadRequest,
        "The request was rejected (HTTP 400).",
        Some("max_tokens is too large")
    )));
    // A network failure never counts, whatever it says.
    assert!(!refuses_images(&refusal(
        LlmErrorKind::Network,
        "image input is not supported",
        None
    )));
}
