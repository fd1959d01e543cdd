//! Tools for a model without native tool calling (Chrome's built-in model, and a server
//! that refused native tools once): the tools described in the system prompt, earlier calls
//! written as the JSON the model is asked to write, tool results as user turns. The calls
//! are read back from the reply's text by [`crate::tools::parse`].

use serde_json::Value;

use crate::llm::{ChatMessage, ChatRequest, Role, ToolSpec};

/// How the tools are offered to a model without native tool calling.
pub fn tool_instructions(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "\n\nYou can use these tools. To use one, reply with only a JSON object of the form \
{\"name\": \"<tool name>\", \"arguments\": {...}} and nothing else. To answer, reply in plain prose.\n",
    );
    for tool in tools {
        text.push_str(&format!(
            "- {}: {} Arguments (JSON schema): {}\n",
            tool.name,
            tool.description,
            kljson::to_string(&*tool.parameters)
        ));
    }
    text
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
            Role::Tool => messages.push(ChatMessage::new(
                Role::User,
                format!("Tool result:\n{}", m.content),
            )),
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
