//! Tools for a model without native tool calling (Chrome's built-in model, and a server
//! that refused native tools once): the tools described in the system prompt, earlier calls
//! written as the JSON the model is asked to write, tool results as user turns. The calls
//! are read back from the reply's text by [`crate::tools::parse`].

use serde_json::Value;

use crate::llm::{ChatMessage, ChatRequest, Role, ToolSpec};
use crate::template::{BuiltinTemplate, Context, Loaded};

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "prompted_tools.tpl",
    text: include_str!("prompted_tools.tpl"),
    sections: &["instructions", "tool", "result"],
};

/// `section` of the template with `values` (empty if the template does not load, which the
/// tests rule out).
fn render(section: &str, values: &[(&str, &str)]) -> String {
    static LOADED: Loaded = Loaded::new();
    let mut context = Context::new();
    for (name, value) in values {
        context.insert((*name).to_string(), Value::String((*value).to_string()));
    }
    TEMPLATE
        .loaded(&LOADED)
        .and_then(|t| t.render(&context, &[section]))
        .unwrap_or_default()
}

/// How the tools are offered to a model without native tool calling.
pub fn tool_instructions(tools: &[ToolSpec]) -> String {
    let mut text = format!("\n\n{}\n", render("instructions", &[]));
    for tool in tools {
        let schema = kljson::to_string(&*tool.parameters);
        text.push_str(&render(
            "tool",
            &[
                ("name", &tool.name),
                ("description", &tool.description),
                ("schema", &schema),
            ],
        ));
        text.push('\n');
    }
    text
}

/// A tool result as the user turn a model without native tool calling reads.
pub(crate) fn result_text(content: &str) -> String {
    render("result", &[("content", content)])
}

/// A tool call as the JSON a model without native tool calling is asked to write.
pub(crate) fn call_text(name: &str, arguments: &str) -> String {
    let args: Value = kljson::parse_value(arguments).unwrap_or(Value::String(arguments.into()));
    kljson::to_string(&kljson::json!({ "name": name, "arguments": args }))
}

/// The request for a model without native tool calling: the tools described in the system
/// prompt, earlier tool calls written as the JSON the model is asked to write, and tool
/// results as user turns; no tool definitions.
pub fn tools_in_prompt(request: &ChatRequest) -> ChatRequest {
    let mut messages: Vec<ChatMessage> = Vec::with_capacity(request.messages.len());
    let instructions = tool_instructions(&request.tools);
    let mut described = false;
    for m in &request.messages {
        match m.role {
            Role::System if !described => {
                messages.push(ChatMessage::new(
                    Role::System,
                    format!("{}{instructions}", m.content),
                ));
                described = true;
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut content = m.content.clone();
                for call in &m.tool_calls {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&call_text(&call.name, &call.arguments));
                }
                messages.push(ChatMessage::new(Role::Assistant, content));
            }
            Role::Tool => messages.push(ChatMessage::new(Role::User, result_text(&m.content))),
            // Kept whole: a user turn's images stay with it.
            _ => messages.push(m.clone()),
        }
    }
    if !described {
        messages.insert(
            0,
            ChatMessage::new(Role::System, instructions.trim_start().to_string()),
        );
    }
    ChatRequest {
        messages,
        tools: Vec::new(),
        ..request.clone()
    }
}
