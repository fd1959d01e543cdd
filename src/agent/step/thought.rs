//! The thought recorded before a reply's tool calls, so that every call has a non-empty
//! reason in the trajectory even when the provider sends calls without text (native tool
//! calling often does). Pure: no I/O.
//!
//! The rule: the reply's text (trimmed); else, for each call that runs (the first
//! [`MAX_CALLS_PER_REPLY`]), one line: its `reasoning` argument, else
//! "Calling {tool} with {arguments}" (compact JSON without the reasoning, cut at
//! [`ARGUMENTS_SHOWN_CHARS`] characters). One thought per reply, recorded before all of its
//! calls, because a reply's calls are one assistant message in the prompt.

use serde_json::Value;

use super::MAX_CALLS_PER_REPLY;
use crate::state::trajectory::Item;
use crate::tools::{split_reasoning, REASONING};
use crate::types::ToolCall;

/// Characters of a call's arguments shown in a "Calling ..." thought.
pub const ARGUMENTS_SHOWN_CHARS: usize = 200;

/// The thought item for a reply with `text` and (at least one) `calls`.
pub fn before_calls(text: &str, calls: &[ToolCall]) -> Item {
    let text = text.trim();
    if !text.is_empty() || calls.is_empty() {
        return Item::thought(text);
    }
    let lines: Vec<String> = calls
        .iter()
        .take(MAX_CALLS_PER_REPLY)
        .map(|call| reasoning_of(call).unwrap_or_else(|| described(call)))
        .collect();
    Item::derived_thought(lines.join("\n"))
}

/// The call's `reasoning`, when it gives a usable one (a string, not blank).
fn reasoning_of(call: &ToolCall) -> Option<String> {
    split_reasoning(&call.arguments).ok().and_then(|(r, _)| r)
}

/// "Calling {tool} with {arguments}".
fn described(call: &ToolCall) -> String {
    let arguments = match kljson::parse_value(&call.arguments) {
        Ok(Value::Object(mut obj)) => {
            obj.remove(REASONING);
            kljson::to_string(&Value::Object(obj))
        }
        Ok(other) => kljson::to_string(&other),
        Err(_) if call.arguments.trim().is_empty() => "{}".to_string(),
        Err(_) => call
            .arguments
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    };
    format!(
        "Calling {} with {}",
        call.name,
        crate::types::text::clip_marked(&arguments, ARGUMENTS_SHOWN_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: format!("call_{name}"),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn derived(text: &str) -> Item {
        Item::derived_thought(text)
    }

    #[test]
    fn the_reply_text_comes_first() {
        let calls = [call(
            "read_page",
            r#"{"offset": 4, "reasoning": "read on"}"#,
        )];
        assert_eq!(
            before_calls("  I need the next part.\n", &calls),
            Item::thought("I need the next part.")
        );
    }

    #[test]
    fn without_text_the_reasoning_is_the_thought() {
        let calls = [call(
            "read_page",
            r#"{"offset": 4000, "reasoning": "  The excerpt stops before the results. "}"#,
        )];
        assert_eq!(
            before_calls("", &calls),
            derived("The excerpt stops before the results.")
        );
    }

    #[test]
    fn without_text_or_reasoning_the_call_is_described() {
        let calls = [call(
            "read_page",
            "{\n  \"offset\": 4000,\n  \"max_chars\": 100\n}",
        )];
        assert_eq!(
            before_calls(" \n", &calls),
            derived(r#"Calling read_page with {"max_chars":100,"offset":4000}"#)
        );
        // A blank or non-string reasoning does not count; it is not shown either.
        let calls = [call(
            "request_input",
            r#"{"question": "Which one?", "reasoning": 3}"#,
        )];
        assert_eq!(
            before_calls("", &calls),
            derived(r#"Calling request_input with {"question":"Which one?"}"#)
        );
        let calls = [call("read_page", "")];
        assert_eq!(
            before_calls("", &calls),
            derived("Calling read_page with {}")
        );
        let calls = [call("read_page", "{not json")];
        assert_eq!(
            before_calls("", &calls),
            derived("Calling read_page with {not json")
        );
    }

    #[test]
    fn long_arguments_are_cut() {
        let long = format!(r#"{{"question": "{}"}}"#, "é".repeat(500));
        let Item::Thought { text, derived } = before_calls("", &[call("request_input", &long)])
        else {
            panic!("a thought");
        };
        assert!(derived);
        let shown = text
            .strip_prefix("Calling request_input with ")
            .expect("prefix");
        assert_eq!(shown.chars().count(), ARGUMENTS_SHOWN_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn several_calls_give_one_line_each_for_those_that_run() {
        let mut calls = vec![
            call(
                "read_page",
                r#"{"offset": 0, "reasoning": "start at the top"}"#,
            ),
            call("read_page", r#"{"offset": 4000}"#),
        ];
        calls.extend((0..6).map(|i| call("read_page", &format!(r#"{{"offset": {i}}}"#))));
        let Item::Thought { text, derived } = before_calls("", &calls) else {
            panic!("a thought");
        };
        assert!(derived);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_CALLS_PER_REPLY);
        assert_eq!(lines[0], "start at the top");
        assert_eq!(lines[1], r#"Calling read_page with {"offset":4000}"#);
        assert_eq!(lines[4], r#"Calling read_page with {"offset":2}"#);
    }
}
