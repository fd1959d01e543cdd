//! The compaction call (`compact.tpl`): the older history summarised towards the run's
//! grounding, as a standalone request whose size the caller bounds. Pure.

use crate::agent::context::{self, Older};
use crate::agent::fence::Fence;
use crate::agent::prompts::{builtin, grounding_with, standalone, strings};
use crate::llm::ChatRequest;
use crate::state::SessionState;
use crate::template::{BuiltinTemplate, Loaded, Template, TemplateError};

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "compact.tpl",
    text: include_str!("compact.tpl"),
    sections: &["system", "request"],
};

/// The compaction template, loaded and validated once.
fn template() -> Result<&'static Template, TemplateError> {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE.loaded(&LOADED)
}

/// The compaction call over the `older` history, each result and answer cut to `detail`
/// characters, asking for a summary of at most `words` words (constrained JSON where the
/// provider supports it). The grounding goes in verbatim, for the model to summarise
/// towards, and is never rewritten: later requests derive it again.
pub fn compaction(
    state: &SessionState,
    older: Older,
    detail: usize,
    words: u32,
) -> Result<ChatRequest, TemplateError> {
    let templates = builtin()?;
    let template = template()?;
    let fence = Fence::new(&state.nonce);
    let system = template.render(&strings(&[("fence_tag", &fence.tag())]), &["system"])?;
    let text = context::older_text(state, older, detail);
    let values = strings(&[
        ("grounding", &grounding_with(state, templates)?),
        ("older", &fence.wrap(&text)),
        ("words", &words.to_string()),
    ]);
    let request = template.render(&values, &["request"])?;
    let schema = kljson::json!({
        "type": "object",
        "properties": {
            "summary": { "type": "string", "maxLength": context::MAX_SUMMARY_CHARS }
        },
        "required": ["summary"],
        "additionalProperties": false
    });
    Ok(standalone(
        state,
        system,
        request,
        ("compaction", schema),
        words * 2 + 64,
    ))
}
