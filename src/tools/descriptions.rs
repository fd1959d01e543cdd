//! What the built-in tools say they do, for the model: one section of `tools.tpl` per tool,
//! by the tool's name (the prompt text beside the tools, like every prompt's).

use crate::template::{BuiltinTemplate, Context, Loaded};

/// The template file, and the sections rendered from it (one per built-in tool).
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "tools.tpl",
    text: include_str!("tools.tpl"),
    sections: &[
        "read_page",
        "query_page",
        "request_input",
        "explain_text_with_context",
        "summarize_page_content",
        "extract_screenshot_text",
        "search_web_for_info",
        "grade_search_results",
        "rewrite_search_query",
    ],
};

/// The description of built-in tool `name` (empty if the template does not load, which the
/// tests rule out).
pub fn of(name: &str) -> String {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE
        .loaded(&LOADED)
        .and_then(|t| t.render(&Context::new(), &[name]))
        .map(|text| text.trim_end().to_string())
        .unwrap_or_default()
}
