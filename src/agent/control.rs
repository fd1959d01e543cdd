//! The Observe phase's control block `{"should_continue": bool, "final_answer": string|null,
//! "failed": bool}` (`failed` is optional, default false: the tool result was a failure):
//! its JSON schema for constrained output, and a tolerant parser for models that write it
//! inside code fences or prose. A missing or malformed block is `None` ("continue").

use serde_json::Value;

use kljson::json;

use crate::types::json_text::json_objects;

/// The parsed control block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// Whether the run should take another step.
    pub should_continue: bool,
    /// The answer, when the model has one.
    pub final_answer: Option<String>,
    /// Whether the model judged the last tool result a failure (absent: false).
    pub failed: bool,
}

/// Longest final answer accepted through constrained output.
pub const MAX_FINAL_ANSWER_CHARS: u64 = 8000;

/// The JSON schema sent as `response_format` for Observe calls.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "should_continue": { "type": "boolean" },
            "final_answer": { "type": ["string", "null"], "maxLength": MAX_FINAL_ANSWER_CHARS },
            "failed": { "type": "boolean" }
        },
        "required": ["should_continue", "final_answer", "failed"],
        "additionalProperties": false
    })
}

/// Finds a control block in `text`: the whole text as JSON, a fenced block, or the first
/// balanced `{...}` that has a boolean `should_continue`.
pub fn parse(text: &str) -> Option<Control> {
    let text = text.trim();
    from_json(text).or_else(|| json_objects(text).find_map(from_json))
}

fn from_json(candidate: &str) -> Option<Control> {
    let value: Value = kljson::parse_value(candidate).ok()?;
    let should_continue = value.get("should_continue")?.as_bool()?;
    let final_answer = match value.get("final_answer") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    };
    let failed = value
        .get("failed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Some(Control {
        should_continue,
        final_answer,
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_fenced_and_prose_blocks_parse() {
        let want = Some(Control {
            should_continue: false,
            final_answer: Some("It is 42.".into()),
            failed: false,
        });
        assert_eq!(
            parse(r#"{"should_continue": false, "final_answer": "It is 42."}"#),
            want
        );
        assert_eq!(
            parse("```json\n{\"should_continue\": false, \"final_answer\": \"It is 42.\"}\n```"),
            want
        );
        assert_eq!(parse("Sure! Here: {\"note\": \"}\"} then {\"should_continue\":false,\"final_answer\":\"It is 42.\"} ok"), want);
        assert_eq!(
            parse(r#"{"should_continue": true, "final_answer": null}"#),
            Some(Control {
                should_continue: true,
                final_answer: None,
                failed: false,
            })
        );
        assert_eq!(
            parse(r#"{"should_continue": true, "final_answer": null, "failed": true}"#),
            Some(Control {
                should_continue: true,
                final_answer: None,
                failed: true,
            })
        );
        assert_eq!(
            parse(r#"{"should_continue": true, "final_answer": null, "failed": "yes"}"#)
                .map(|c| c.failed),
            Some(false),
            "a non-boolean failed is the default"
        );
    }

    #[test]
    fn missing_or_malformed_is_none() {
        assert_eq!(parse("The answer is 42."), None);
        assert_eq!(parse(r#"{"should_continue": "no"}"#), None);
        assert_eq!(parse(r#"{"should_continue": false"#), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn embedded_block_is_found(prefix in "[a-zA-Z .,]{0,40}", suffix in "[a-zA-Z .,]{0,40}", go in any::<bool>(), answer in "[a-zA-Z0-9 .]{1,40}") {
            let block = json!({"should_continue": go, "final_answer": answer}).to_string();
            let parsed = parse(&format!("{prefix}{block}{suffix}")).expect("block present");
            prop_assert_eq!(parsed.should_continue, go);
            let want = answer.trim();
            prop_assert_eq!(parsed.final_answer.as_deref(), if want.is_empty() { None } else { Some(want) });
        }
    }
}
