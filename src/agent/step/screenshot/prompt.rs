//! The screenshot tool's one model call: the image of the visible part of the page, and
//! the instruction to transcribe its text (template `screenshot.tpl`). The request is
//! standalone (not the conversation), so it stays small; its reply becomes the tool's
//! result, which the loop's prompts quote inside the page fence like any page text. Pure.

use crate::llm::{ChatMessage, ChatRequest, Role};
use crate::state::SessionState;
use crate::template::{BuiltinTemplate, Context, Loaded, Template, TemplateError};
use crate::types::Image;

/// Most tokens the transcription may use.
pub const TRANSCRIPT_MAX_TOKENS: u32 = 2_048;

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "screenshot.tpl",
    text: include_str!("screenshot.tpl"),
    sections: &["system", "request"],
};

/// The screenshot template, loaded and validated once.
fn template() -> Result<&'static Template, TemplateError> {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE.loaded(&LOADED)
}

/// The transcription call: the instruction and `image` in one user message, no tools, no
/// constrained output.
pub fn transcribe(state: &SessionState, image: Image) -> Result<ChatRequest, TemplateError> {
    let template = template()?;
    let system = template.render(&Context::new(), &["system"])?;
    let mut request = ChatMessage::new(Role::User, template.render(&Context::new(), &["request"])?);
    request.images.push(image);
    Ok(ChatRequest {
        messages: vec![ChatMessage::new(Role::System, system), request],
        tools: Vec::new(),
        response_format: None,
        max_tokens: Some(TRANSCRIPT_MAX_TOKENS.min(state.config.max_output_tokens)),
        stream: state.config.stream,
        cache_key: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::image::fitted_size;

    #[test]
    fn the_template_loads_and_the_request_carries_the_image_last() {
        let state = SessionState::new("tab:3", 0);
        let (width, height) = fitted_size(3000, 2000);
        let image = Image {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
            width,
            height,
        };
        let request = transcribe(&state, image.clone()).expect("renders");
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0].role, Role::System);
        assert!(request.messages[0].images.is_empty());
        assert_eq!(request.messages[1].images, [image]);
        assert!(request.messages[1].content.contains("Transcribe"));
        assert!(request.tools.is_empty() && request.response_format.is_none());
    }
}
