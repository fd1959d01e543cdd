//! [`BuiltinModel`]: an [`LlmClient`] on Chrome's built-in model (the Prompt API's global
//! `LanguageModel`, looked up at call time so tests can install a stand-in). Nothing leaves
//! the machine. The request mapping is pure ([`crate::llm::formats::builtin`]); this file only calls
//! the API: `availability()`, `create({initialPrompts})`, `prompt` / `promptStreaming`, and
//! `destroy()` plus an abort when the call is dropped (Stop, a timeout), and the session's
//! context accounting (`contextUsage`, `contextWindow`, `measureContextUsage`, or their older
//! names `inputUsage`, `inputQuota`, `measureInputUsage`; sources in
//! [`crate::llm::formats::builtin::ContextCount`]) to refuse a prompt that cannot fit and to report
//! the model's own token usage. Without those members the usage is left to the engine's
//! estimate.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortController;

use super::interop::{call, object, to_js, JsError};
use crate::llm::diagnosis::doctor;
use crate::llm::formats::builtin::{plan, Availability, ContextCount, StreamText};
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::ports::LlmClient;

/// The built-in model.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinModel;

impl BuiltinModel {
    /// A client for the built-in model.
    pub fn new() -> Self {
        Self
    }
}

/// The options passed to both `availability()` and `create()` (Chrome asks for the same);
/// with `images`, the inputs name `image` too
/// (<https://developer.chrome.com/docs/ai/prompt-api#multimodal_capabilities>).
fn language_options_for(images: bool) -> Result<js_sys::Object, JsError> {
    let text_en = || {
        object(&[
            ("type", JsValue::from_str("text")),
            (
                "languages",
                js_sys::Array::of1(&JsValue::from_str("en")).into(),
            ),
        ])
    };
    let inputs = js_sys::Array::of1(&text_en()?.into());
    if images {
        inputs.push(&object(&[("type", JsValue::from_str("image"))])?.into());
    }
    object(&[
        ("expectedInputs", inputs.into()),
        (
            "expectedOutputs",
            js_sys::Array::of1(&text_en()?.into()).into(),
        ),
    ])
}

/// The text-only options.
fn language_options() -> Result<js_sys::Object, JsError> {
    language_options_for(false)
}

/// The prompt with its images: one user message whose content is the text, then each
/// image as a `Blob` (`{type: "image", value}`).
fn prompt_with_images(text: &str, images: &[crate::types::Image]) -> Result<JsValue, JsError> {
    let content = js_sys::Array::of1(
        &object(&[
            ("type", JsValue::from_str("text")),
            ("value", JsValue::from_str(text)),
        ])?
        .into(),
    );
    for image in images {
        let bytes = crate::types::image::base64_decode(&image.data)
            .ok_or_else(|| JsError::new("DataError", "the image is not valid base64"))?;
        let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()).into());
        let kind = object(&[("type", JsValue::from_str(&image.mime_type))])?;
        let constructor: js_sys::Function = Reflect::get(&js_sys::global(), &"Blob".into())?
            .dyn_into()
            .map_err(|_| JsError::new("Unavailable", "Blob is not available here"))?;
        let blob = Reflect::construct(&constructor, &js_sys::Array::of2(&parts, &kind))?;
        content.push(&object(&[("type", JsValue::from_str("image")), ("value", blob)])?.into());
    }
    let message = object(&[
        ("role", JsValue::from_str("user")),
        ("content", content.into()),
    ])?;
    Ok(js_sys::Array::of1(&message.into()).into())
}

/// `globalThis.LanguageModel`, or `None` when this browser has no Prompt API here.
fn language_model() -> Option<JsValue> {
    Reflect::get(&js_sys::global(), &JsValue::from_str("LanguageModel"))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// What `LanguageModel.availability()` reports: `available`, `downloadable`,
/// `downloading`, `unavailable`, or `no_api` when there is no Prompt API.
pub async fn availability() -> Result<Availability, JsError> {
    let Some(lm) = language_model() else {
        return Ok(Availability::NoApi);
    };
    let result = call(&lm, "availability", &[language_options()?.into()]).await?;
    Ok(Availability::from_api(
        &result.as_string().unwrap_or_default(),
    ))
}

/// Destroys the session and aborts its prompt when dropped.
struct SessionGuard {
    session: JsValue,
    abort: Option<AbortController>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if let Some(controller) = self.abort.take() {
            controller.abort();
        }
        if let Ok(destroy) = Reflect::get(&self.session, &JsValue::from_str("destroy")) {
            if let Some(f) = wasm_bindgen::JsCast::dyn_ref::<js_sys::Function>(&destroy) {
                // Best effort: a session that cannot be destroyed is collected anyway.
                let _ignored = f.call0(&self.session);
            }
        }
    }
}

/// The session's tokens so far: `contextUsage`, or `inputUsage` in older Chrome builds.
const USAGE: [&str; 2] = ["contextUsage", "inputUsage"];
/// The session's context window: `contextWindow`, or `inputQuota` in older Chrome builds.
const WINDOW: [&str; 2] = ["contextWindow", "inputQuota"];
/// What a prompt would add: `measureContextUsage`, or `measureInputUsage` in older builds.
const MEASURE: [&str; 2] = ["measureContextUsage", "measureInputUsage"];

/// A number the session reports under its current name, else under its older one.
fn session_number(session: &JsValue, names: [&str; 2]) -> Option<f64> {
    names.iter().find_map(|name| {
        Reflect::get(session, &JsValue::from_str(name))
            .ok()?
            .as_f64()
    })
}

/// The tokens `prompt` would add to the session with these prompt options, or `None` when
/// the session cannot measure (no such method, or the measuring call throws).
async fn measure(session: &JsValue, prompt: &JsValue, options: &JsValue) -> Option<f64> {
    let name = MEASURE.into_iter().find(|name| {
        Reflect::get(session, &JsValue::from_str(name)).is_ok_and(|f| f.is_function())
    })?;
    call(session, name, &[prompt.clone(), options.clone()])
        .await
        .ok()?
        .as_f64()
}

fn failed(err: JsError) -> LlmError {
    crate::llm::formats::builtin::failure(&err.name, &err.message)
}

async fn complete(
    request: &ChatRequest,
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResponse, LlmError> {
    let Some(lm) = language_model() else {
        return Err(doctor::builtin_unavailable(Availability::NoApi));
    };
    let state = availability().await.map_err(failed)?;
    if state != Availability::Available {
        return Err(doctor::builtin_unavailable(state));
    }
    let plan = plan(request);
    let images = !plan.images.is_empty();
    if images {
        // Text works here; an image needs the model's multimodal input too.
        let options = language_options_for(true).map_err(failed)?;
        let result = call(&lm, "availability", &[options.into()])
            .await
            .map_err(failed)?;
        if Availability::from_api(&result.as_string().unwrap_or_default())
            != Availability::Available
        {
            return Err(LlmError::new(
                crate::llm::LlmErrorKind::Unavailable,
                "Chrome's built-in model cannot read images on this device (its image input is unavailable).",
            ));
        }
    }
    let options = language_options_for(images).map_err(failed)?;
    Reflect::set(
        &options,
        &JsValue::from_str("initialPrompts"),
        &to_js(&plan.initial_prompts).map_err(failed)?,
    )
    .map_err(|e| failed(e.into()))?;
    let session = call(&lm, "create", &[options.into()])
        .await
        .map_err(failed)?;
    let controller = AbortController::new().map_err(|e| failed(e.into()))?;
    let prompt_options = object(&[("signal", controller.signal().into())]).map_err(failed)?;
    if let Some(schema) = &plan.response_constraint {
        Reflect::set(
            &prompt_options,
            &JsValue::from_str("responseConstraint"),
            &to_js(schema).map_err(failed)?,
        )
        .map_err(|e| failed(e.into()))?;
    }
    let guard = SessionGuard {
        session: session.clone(),
        abort: Some(controller),
    };
    let prompt = if images {
        prompt_with_images(&plan.prompt, &plan.images).map_err(failed)?
    } else {
        JsValue::from_str(&plan.prompt)
    };
    let prompt_options: JsValue = prompt_options.into();
    // Measured after the guard exists: a dropped call aborts the measure (same signal)
    // and destroys the session, and a refused prompt destroys it too.
    let count = ContextCount::from_api(
        session_number(&session, USAGE),
        measure(&session, &prompt, &prompt_options).await,
    );
    if let Some(count) = count {
        count.check(session_number(&session, WINDOW))?;
    }
    let mut response = if request.stream {
        let stream = call(&session, "promptStreaming", &[prompt, prompt_options])
            .await
            .map_err(failed)?;
        let reader = call(&stream, "getReader", &[]).await.map_err(failed)?;
        let mut text = StreamText::new();
        loop {
            let chunk = call(&reader, "read", &[]).await.map_err(failed)?;
            let done = Reflect::get(&chunk, &JsValue::from_str("done"))
                .map(|d| d.is_truthy())
                .unwrap_or(true);
            if done {
                break;
            }
            let value = Reflect::get(&chunk, &JsValue::from_str("value"))
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default();
            let delta = text.push(&value);
            if !delta.is_empty() {
                on_delta(&delta);
            }
        }
        text.finish()
    } else {
        let reply = call(&session, "prompt", &[prompt, prompt_options])
            .await
            .map_err(failed)?;
        let mut text = StreamText::new();
        let content = reply.as_string().unwrap_or_default();
        if !content.is_empty() {
            on_delta(&text.push(&content));
        }
        text.finish()
    };
    response.usage = count.and_then(|c| c.usage(session_number(&session, USAGE)));
    drop(guard);
    Ok(response)
}

impl LlmClient for BuiltinModel {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        complete(request, on_delta).boxed_local()
    }
}
