//! Tool calls written as JSON in the model's text, for models without native tool calling:
//! `{"name": "read_page", "arguments": {"offset": 0}}` (also `tool` / `parameters` / `args`),
//! alone, fenced or inside prose. Only names of offered tools count, so a JSON example in a
//! prose answer is not mistaken for a call.

use serde_json::Value;

use crate::types::json_text::json_objects;
use crate::types::ToolCall;

/// A tool call written in the model's text: it has no provider id, so the caller names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCall {
    /// Tool name (one of the offered tools).
    pub name: String,
    /// Arguments as a JSON string.
    pub arguments: String,
}

impl TextCall {
    /// The call with the id `id`.
    pub fn with_id(self, id: String) -> ToolCall {
        ToolCall {
            id,
            name: self.name,
            arguments: self.arguments,
        }
    }
}

/// The first tool call in `text` naming one of `tools`. Never panics, whatever the text.
pub fn tool_call_in_text(text: &str, tools: &[String]) -> Option<TextCall> {
    json_objects(text).find_map(|candidate| {
        let value: Value = kljson::parse_value(candidate).ok()?;
        let obj = value.as_object()?;
        let name = ["name", "tool", "tool_name"]
            .iter()
            .find_map(|k| obj.get(*k)?.as_str())?;
        if !tools.iter().any(|t| t == name) {
            return None;
        }
        let arguments = match ["arguments", "parameters", "args", "input"]
            .iter()
            .find_map(|k| obj.get(*k))
        {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => kljson::to_string(v),
            None => "{}".to_string(),
            Some(_) => return None,
        };
        Some(TextCall {
            name: name.to_string(),
            arguments,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        vec!["read_page".into()]
    }

    #[test]
    fn fenced_prose_and_string_arguments() {
        let call = tool_call_in_text(
            "I'll read.\n```json\n{\"name\": \"read_page\", \"arguments\": {\"offset\": 40}}\n```",
            &tools(),
        )
        .expect("call");
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("read_page", r#"{"offset":40}"#)
        );
        let call = tool_call_in_text(
            r#"{"tool": "read_page", "parameters": "{\"offset\": 2}"}"#,
            &tools(),
        )
        .expect("call");
        assert_eq!(call.arguments, r#"{"offset": 2}"#);
        assert_eq!(
            tool_call_in_text(r#"{"name": "delete_everything"}"#, &tools()),
            None
        );
        assert_eq!(tool_call_in_text("The answer is {42}.", &tools()), None);
    }
}
