//! The reflection call's prompt (the conversation, then what failed and the relevant
//! reflections of the session's episodic memory) and the note a stored reflection adds to
//! the conversation for the retry. Pure: no browser access.

use serde_json::Value;

use crate::agent::context::Fit;
use crate::agent::prompts::{builtin, instructed, strings};
use crate::agent::step::reflect::reflexion;
use crate::llm::{ChatRequest, JsonSchemaFormat};
use crate::state::memory::{Failure, Reflection};
use crate::state::SessionState;
use crate::template::{BuiltinTemplate, Loaded, Template, TemplateError};

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "reflect.tpl",
    text: include_str!("reflect.tpl"),
    sections: &["instruction", "earlier"],
};

/// The reflect template, loaded and validated once.
fn template() -> Result<&'static Template, TemplateError> {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE.loaded(&LOADED)
}

/// The reflection call on `failure` (the conversation shrunk by `fit`, then the
/// instruction): no tools; JSON output constrained to [`reflexion::schema`] when the
/// run asks for constrained output.
pub fn reflect(
    state: &SessionState,
    failure: &Failure,
    fit: &Fit,
) -> Result<ChatRequest, TemplateError> {
    let templates = builtin()?;
    let mut context = strings(&[
        ("tool", &failure.call.name),
        ("arguments", &failure.call.arguments),
        ("error_type", &failure.error_type),
        ("error", &failure.error),
    ]);
    let earlier: Vec<Value> = state
        .memory
        .relevant(&failure.call.name, &failure.error_type)
        .map(|r| Value::String(format!("- {}", line(r))))
        .collect();
    let mut sections = vec!["instruction"];
    if !earlier.is_empty() {
        context.insert("earlier".into(), Value::Array(earlier));
        sections.push("earlier");
    }
    let instruction = template()?.render(&context, &sections)?;
    Ok(ChatRequest {
        messages: instructed(state, templates, fit, instruction)?,
        tools: Vec::new(),
        response_format: state.config.constrained_output.then(|| JsonSchemaFormat {
            name: reflexion::SCHEMA_NAME.into(),
            schema: reflexion::schema(),
        }),
        max_tokens: crate::agent::prompts::reply_cap(state, fit),
        stream: state.config.stream,
        cache_key: None,
    })
}

/// One remembered reflection on a line.
fn line(r: &Reflection) -> String {
    format!(
        "{} ({}): {} Suggested fix: {}",
        r.tool, r.error_type, r.analysis, r.suggested_fix
    )
}
