//! The conversation as strictly alternating user and model turns, for the vendors whose APIs
//! require that shape (Anthropic's `messages`, Gemini's `contents`): system text pulled out,
//! tool calls paired with the results that answer them, same-role messages merged, and a
//! conversation that starts and ends with the user. Pure: no browser access.
//!
//! A tool call travels as a native block only when the request can carry it: its tool is
//! offered in the request and its result follows it directly. Otherwise (the Observe and
//! Synthesis calls offer no tools, a phase offers a subset, a run stopped between a call
//! and its result) the call and its result are written as text, because both vendors
//! reject tool blocks without a matching tool definition or partner block.

use serde_json::Value;

use crate::types::VecMap;
use kljson::json;

use crate::llm::{ChatRequest, Role};

/// What a user turn says when the conversation would otherwise start or end with the model
/// (Anthropic's newer models refuse an assistant message in last place).
pub(crate) const CONTINUE: &str = "Continue.";

/// One piece of a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// Text (never empty).
    Text(String),
    /// A tool call the request carries natively.
    Call {
        /// The id used in this request (unique, `[A-Za-z0-9_-]+`).
        id: String,
        /// The id the call had in the conversation.
        original_id: String,
        /// Tool name.
        name: String,
        /// The arguments as a JSON object.
        args: Value,
    },
    /// An image a user message shows (a screenshot).
    Image(crate::types::Image),
    /// The result of a native call in the previous turn.
    Result {
        /// The request id of the call it answers.
        id: String,
        /// The tool's name.
        name: String,
        /// What the tool returned.
        content: String,
    },
}

/// A run of blocks by one side.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// Written by the model (else by the user, or tool results).
    pub(crate) model: bool,
    /// What it says, in order.
    pub(crate) blocks: Vec<Block>,
}

/// A request's conversation, reshaped.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Conversation {
    /// All system messages, joined by blank lines (empty: none).
    pub(crate) system: String,
    /// Alternating turns, the first and the last by the user.
    pub(crate) turns: Vec<Turn>,
}

/// Tool-call arguments (a JSON string) as the JSON object both vendors require: an object
/// as is, nothing as `{}`, anything else under `"value"`.
pub(crate) fn arguments_object(arguments: &str) -> Value {
    let text = arguments.trim();
    if text.is_empty() {
        return json!({});
    }
    match kljson::parse_value(text) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) => json!({ "value": other }),
        Err(_) => json!({ "value": text }),
    }
}

fn call_text(name: &str, arguments: &str) -> String {
    format!("[called {name}({})]", arguments.trim())
}

fn result_text(name: &str, content: &str) -> String {
    format!("[result of {name}]\n{content}")
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reshapes `request`'s messages into alternating turns.
pub(crate) fn conversation(request: &ChatRequest) -> Conversation {
    let offered: VecMap<&str, ()> = request
        .tools
        .iter()
        .map(|t| (t.name.as_str(), ()))
        .collect();
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    // Native calls of the latest assistant message still waiting for their result:
    // original id -> (request id, name).
    let mut pending: VecMap<String, (String, String)> = VecMap::new();
    // Every call's name by original id, for results written as text.
    let mut names: VecMap<String, String> = VecMap::new();
    let mut used: VecMap<String, ()> = VecMap::new();
    let mut fresh = 0usize;
    let messages = &request.messages;
    for (i, m) in messages.iter().enumerate() {
        let mut blocks = Vec::new();
        match m.role {
            Role::System => {
                if !m.content.trim().is_empty() {
                    system.push(&m.content);
                }
                pending.clear();
                continue;
            }
            Role::User => {
                pending.clear();
                if !m.content.trim().is_empty() {
                    blocks.push(Block::Text(m.content.clone()));
                }
                blocks.extend(m.images.iter().cloned().map(Block::Image));
            }
            Role::Assistant => {
                pending.clear();
                let answered: VecMap<&str, ()> = messages[i + 1..]
                    .iter()
                    .take_while(|n| n.role == Role::Tool)
                    .filter_map(|n| Some((n.tool_call_id.as_deref()?, ())))
                    .collect();
                if !m.content.trim().is_empty() {
                    blocks.push(Block::Text(m.content.clone()));
                }
                for call in &m.tool_calls {
                    names.insert(call.id.clone(), call.name.clone());
                    let native = offered.contains_key(call.name.as_str())
                        && answered.contains_key(call.id.as_str())
                        && !pending.contains_key(&call.id);
                    if !native {
                        blocks.push(Block::Text(call_text(&call.name, &call.arguments)));
                        continue;
                    }
                    let id = if valid_id(&call.id) && !used.contains_key(&call.id) {
                        call.id.clone()
                    } else {
                        loop {
                            let candidate = format!("call_kl{fresh}");
                            fresh += 1;
                            if !used.contains_key(&candidate) {
                                break candidate;
                            }
                        }
                    };
                    used.insert(id.clone(), ());
                    pending.insert(call.id.clone(), (id.clone(), call.name.clone()));
                    blocks.push(Block::Call {
                        id,
                        original_id: call.id.clone(),
                        name: call.name.clone(),
                        args: arguments_object(&call.arguments),
                    });
                }
            }
            Role::Tool => {
                let answered = m.tool_call_id.as_ref().and_then(|id| pending.remove(id));
                match answered {
                    Some((id, name)) => blocks.push(Block::Result {
                        id,
                        name,
                        content: m.content.clone(),
                    }),
                    None => {
                        let name = m
                            .tool_call_id
                            .as_ref()
                            .and_then(|id| names.get(id))
                            .map_or("tool", String::as_str);
                        blocks.push(Block::Text(result_text(name, &m.content)));
                    }
                }
            }
        }
        if blocks.is_empty() {
            continue;
        }
        let model = m.role == Role::Assistant;
        match turns.last_mut() {
            Some(last) if last.model == model => last.blocks.extend(blocks),
            _ => turns.push(Turn { model, blocks }),
        }
    }
    let nudge = || Turn {
        model: false,
        blocks: vec![Block::Text(CONTINUE.into())],
    };
    if turns.first().is_none_or(|t| t.model) {
        turns.insert(0, nudge());
    }
    if turns.last().is_some_and(|t| t.model) {
        turns.push(nudge());
    }
    Conversation {
        system: system.join("\n\n"),
        turns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ToolCall, ToolSpec};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_page".into(),
            arguments: r#"{"offset": 4}"#.into(),
        }
    }

    fn assistant(calls: Vec<ToolCall>) -> ChatMessage {
        let mut m = ChatMessage::new(Role::Assistant, "");
        m.tool_calls = calls;
        m
    }

    fn tool(id: &str) -> ChatMessage {
        let mut m = ChatMessage::new(Role::Tool, "text");
        m.tool_call_id = Some(id.into());
        m
    }

    fn request(messages: Vec<ChatMessage>, tools: bool) -> ChatRequest {
        ChatRequest {
            messages,
            tools: if tools {
                vec![ToolSpec {
                    name: "read_page".into(),
                    description: "d".into(),
                    parameters: json!({"type": "object"}).into(),
                }]
            } else {
                Vec::new()
            },
            ..Default::default()
        }
    }

    #[test]
    fn answered_offered_calls_are_native_and_ids_unique() {
        let c = conversation(&request(
            vec![
                ChatMessage::new(Role::System, "a"),
                ChatMessage::new(Role::System, "b"),
                ChatMessage::new(Role::User, "q"),
                assistant(vec![call("call_0")]),
                tool("call_0"),
                assistant(vec![call("call_0")]),
                tool("call_0"),
            ],
            true,
        ));
        assert_eq!(c.system, "a\n\nb");
        assert_eq!(c.turns.len(), 5);
        let ids: Vec<&str> = c
            .turns
            .iter()
            .flat_map(|t| &t.blocks)
            .filter_map(|b| match b {
                Block::Call { id, .. } | Block::Result { id, .. } => Some(id.as_str()),
                Block::Text(_) | Block::Image(_) => None,
            })
            .collect();
        assert_eq!(ids, ["call_0", "call_0", "call_kl0", "call_kl0"]);
    }

    #[test]
    fn calls_without_tools_or_results_become_text_and_the_user_speaks_last() {
        let c = conversation(&request(
            vec![
                ChatMessage::new(Role::User, "q"),
                assistant(vec![call("a")]),
                tool("a"),
                ChatMessage::new(Role::Assistant, "Observation: more"),
            ],
            false,
        ));
        let texts: Vec<(bool, String)> = c
            .turns
            .iter()
            .map(|t| {
                (
                    t.model,
                    t.blocks
                        .iter()
                        .map(|b| match b {
                            Block::Text(s) => s.clone(),
                            _ => "native".into(),
                        })
                        .collect::<Vec<_>>()
                        .join("|"),
                )
            })
            .collect();
        assert_eq!(
            texts,
            [
                (false, "q".to_string()),
                (true, "[called read_page({\"offset\": 4})]".to_string()),
                (false, "[result of read_page]\ntext".to_string()),
                (true, "Observation: more".to_string()),
                (false, CONTINUE.to_string()),
            ]
        );
        let orphan = conversation(&request(
            vec![
                ChatMessage::new(Role::User, "q"),
                assistant(vec![call("a")]),
            ],
            true,
        ));
        assert!(matches!(&orphan.turns[1].blocks[0], Block::Text(t) if t.starts_with("[called")));
    }

    #[test]
    fn arguments_are_always_objects() {
        assert_eq!(arguments_object(""), json!({}));
        assert_eq!(arguments_object(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(arguments_object("[1]"), json!({"value": [1]}));
        assert_eq!(arguments_object("nope"), json!({"value": "nope"}));
    }
}
