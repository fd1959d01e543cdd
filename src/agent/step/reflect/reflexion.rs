//! Reflexion: what a failed action is, the reflection call's JSON schema and
//! a tolerant parser for its reply, the built-in fallback reflection used when the model's
//! is unusable, and loop detection (the same call giving the same result again and again).
//! Pure: no browser access, no clock.

use serde_json::Value;

use kljson::json;

use crate::state::memory::{Failure, Reflection};
use crate::state::trajectory::Item;
use crate::state::SessionState;
use crate::tools::{ToolError, ToolErrorKind, REASONING};
use crate::types::json_text::json_objects;
use crate::types::{ToolCall, VecMap};

/// The `response_format` name of reflection calls.
pub const SCHEMA_NAME: &str = "reflection";

/// The error type of a result the Observe phase judged a failure.
pub const JUDGED_FAILED: &str = "judged_failed";

/// The error type of a call stopped as a loop.
pub const REPEATED_CALL: &str = "repeated_call";

/// How many identical results of one call (same tool, same arguments) a run accepts: the
/// next identical call is never run.
pub const MAX_IDENTICAL_RESULTS: usize = 3;

/// Longest text kept per field (and asked for through constrained output).
pub const MAX_FIELD_CHARS: u64 = 2000;

/// The JSON schema sent as `response_format` for reflection calls.
pub fn schema() -> Value {
    let text = json!({ "type": "string", "maxLength": MAX_FIELD_CHARS });
    json!({
        "type": "object",
        "properties": {
            "error_type": text,
            "analysis": text,
            "suggested_fix": text
        },
        "required": ["error_type", "analysis", "suggested_fix"],
        "additionalProperties": false
    })
}

/// The fields of a reflection reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The model's name for the kind of error.
    pub error_type: String,
    /// Why the call failed.
    pub analysis: String,
    /// What to do differently.
    pub suggested_fix: String,
}

/// Finds a reflection in `text`: the whole text as JSON, a fenced block, or the first
/// balanced `{...}` with non-empty string `analysis` and `suggested_fix` (`error_type` may
/// be missing).
pub fn parse(text: &str) -> Option<Parsed> {
    let text = text.trim();
    from_json(text).or_else(|| json_objects(text).find_map(from_json))
}

/// `text` cut to [`MAX_FIELD_CHARS`] characters (a reflection is saved with the session).
fn capped(text: &str) -> String {
    crate::types::text::clip(text, MAX_FIELD_CHARS as usize)
        .0
        .to_string()
}

fn from_json(candidate: &str) -> Option<Parsed> {
    let value: Value = kljson::parse_value(candidate).ok()?;
    let field = |name: &str| {
        value
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(capped)
    };
    Some(Parsed {
        analysis: field("analysis")?,
        suggested_fix: field("suggested_fix")?,
        error_type: field("error_type").unwrap_or_default(),
    })
}

/// The failure a tool error is, or `None` for an interrupted side effect (never repeated,
/// so nothing to reflect on).
pub fn tool_failure(call: &ToolCall, err: &ToolError) -> Option<Failure> {
    if err.kind == ToolErrorKind::Interrupted {
        return None;
    }
    let error_type = err.kind.name().to_string();
    Some(Failure {
        call: call.clone(),
        error_type,
        error: err.message.clone(),
    })
}

/// The failure of a result the Observe phase judged a failure. Its text is ours, never the
/// result (which may be page text).
pub fn judged_failure(call: &ToolCall) -> Failure {
    Failure {
        call: call.clone(),
        error_type: JUDGED_FAILED.into(),
        error: "the result was judged a failure: it did not give what the call was for".into(),
    }
}

/// The failure of a call stopped as a loop.
pub fn repeated_failure(call: &ToolCall) -> Failure {
    Failure {
        call: call.clone(),
        error_type: REPEATED_CALL.into(),
        error: repeated_text(&call.name),
    }
}

/// Why a repeated call was not run (its result, as the model sees it).
pub fn repeated_text(tool: &str) -> String {
    format!(
        "not run: {tool} was already called with these arguments {MAX_IDENTICAL_RESULTS} times and gave the same result each time"
    )
}

/// The notice of a run that ended because the model kept asking for a stopped call.
pub fn stopped_notice(tool: &str) -> String {
    format!(
        "Stopped repeating {tool}: it was called with the same arguments {MAX_IDENTICAL_RESULTS} times and gave the same result each time."
    )
}

/// What to do about an error type when the model gave no usable reflection.
fn generic_fix(error_type: &str) -> &'static str {
    match error_type {
        "invalid_arguments" => "Check the tool's schema and call it again with valid arguments.",
        "not_found" => "Try other arguments that point to something that exists, or another tool.",
        "timeout" | "network" => "Get the information another way, or try the tool later.",
        "rate_limited" => "Do not call this tool again now; use the results you already have.",
        "permission" => "Answer without this tool.",
        JUDGED_FAILED => "Call the tool with other arguments, or use another tool.",
        REPEATED_CALL => "Do not repeat this call: its result will not change. Use the result you have, or try another tool or other arguments.",
        _ => "Try another approach.",
    }
}

/// The built-in reflection on `failure`: its error type, the error as the analysis, and a
/// generic fix for the type.
pub fn fallback(failure: &Failure) -> Reflection {
    Reflection {
        tool: failure.call.name.clone(),
        arguments: failure.call.arguments.clone(),
        error_type: failure.error_type.clone(),
        analysis: failure.error.clone(),
        suggested_fix: generic_fix(&failure.error_type).into(),
        fallback: true,
    }
}

/// The reflection on `failure` from the model's reply, else the fallback. The error type
/// stays the failure's (errors are counted by it); the model's own name for the error
/// leads its analysis.
pub fn from_reply(failure: &Failure, text: &str) -> Reflection {
    let Some(parsed) = parse(text) else {
        return fallback(failure);
    };
    let analysis = if parsed.error_type.is_empty() || parsed.error_type == failure.error_type {
        parsed.analysis
    } else {
        format!("({}) {}", parsed.error_type, parsed.analysis)
    };
    Reflection {
        analysis,
        suggested_fix: parsed.suggested_fix,
        fallback: false,
        ..fallback(failure)
    }
}

/// A call's arguments for comparison: parsed JSON without the reasoning (which may differ
/// between otherwise identical calls), else the text.
fn normalized(arguments: &str) -> Value {
    match kljson::parse_value(arguments) {
        Ok(Value::Object(mut map)) => {
            map.remove(REASONING);
            Value::Object(map)
        }
        Ok(value) => value,
        Err(_) => Value::String(arguments.to_string()),
    }
}

/// Whether two calls are the same call (same tool, same arguments).
pub fn same_call(a: &ToolCall, name: &str, arguments: &str) -> bool {
    a.name == name && normalized(&a.arguments) == normalized(arguments)
}

/// What a call the same as an earlier one of the run gets instead of running again (its
/// earlier result is in the request the model sees).
pub fn same_as_before_text(tool: &str) -> String {
    format!(
        "not run again: {tool} was already called with these arguments in this run, and its result (above) has not changed. Use it, or call a tool with other arguments."
    )
}

/// Whether a call the same as `call` (same tool, same arguments) already succeeded in this
/// run, after what a compaction summarized (so its result is still in the request), and
/// that result was not itself [`same_as_before_text`].
pub fn succeeded_before(state: &SessionState, call: &ToolCall) -> bool {
    let again = same_as_before_text(&call.name);
    let from = crate::agent::context::covered_entries(state).min(state.trajectory.len());
    let mut same_ids: Vec<&str> = Vec::new();
    for entry in &state.trajectory[from..] {
        match &entry.item {
            Item::ToolCall { call: c }
                if c.id != call.id && same_call(c, &call.name, &call.arguments) =>
            {
                same_ids.push(c.id.as_str());
            }
            Item::ToolResult {
                call_id,
                ok: true,
                content,
                ..
            } if same_ids.contains(&call_id.as_str()) && *content != again => return true,
            _ => {}
        }
    }
    false
}

/// The most times one result came back for `call` (same tool, same arguments) in this run.
/// Calls not run as repeated are not counted.
pub fn identical_results(state: &SessionState, call: &ToolCall) -> usize {
    let blocked = repeated_text(&call.name);
    let mut calls: VecMap<&str, &ToolCall> = VecMap::new();
    let mut counts: VecMap<&str, usize> = VecMap::new();
    for entry in &state.trajectory {
        match &entry.item {
            Item::ToolCall { call: c } => {
                calls.insert(c.id.as_str(), c);
            }
            Item::ToolResult {
                call_id, content, ..
            } if !content.contains(&blocked) => {
                let same = calls
                    .get(call_id.as_str())
                    .is_some_and(|c| same_call(c, &call.name, &call.arguments));
                if same {
                    *counts.get_or_default(content.as_str()) += 1;
                }
            }
            _ => {}
        }
    }
    counts.into_values().max().unwrap_or(0)
}

/// Whether the run already reflected on `call` being repeated (so asking for it again is
/// insisting).
pub fn insisted(state: &SessionState, call: &ToolCall) -> bool {
    state.trajectory.iter().any(|e| {
        matches!(&e.item, Item::Reflection { reflection, .. }
            if reflection.error_type == REPEATED_CALL
                && reflection.tool == call.name
                && normalized(&reflection.arguments) == normalized(&call.arguments))
    })
}

/// Reflections recorded in the current run.
pub fn reflections_in_run(state: &SessionState) -> u32 {
    state
        .trajectory
        .iter()
        .filter(|e| matches!(e.item, Item::Reflection { .. }))
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn call(args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "read_page".into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn plain_fenced_and_prose_replies_parse() {
        let want = Some(Parsed {
            error_type: "bad_offset".into(),
            analysis: "The offset was past the end.".into(),
            suggested_fix: "Use a smaller offset.".into(),
        });
        let block = r#"{"error_type": "bad_offset", "analysis": "The offset was past the end.", "suggested_fix": "Use a smaller offset."}"#;
        assert_eq!(parse(block), want);
        assert_eq!(parse(&format!("```json\n{block}\n```")), want);
        assert_eq!(parse(&format!("Here: {{\"x\": 1}} {block} done")), want);
        assert_eq!(parse("I think it failed."), None);
        assert_eq!(parse(r#"{"analysis": "", "suggested_fix": "x"}"#), None);
    }

    #[test]
    fn the_fallback_names_the_error_and_a_fix_for_its_type() {
        let err = ToolError::new(ToolErrorKind::InvalidArguments, "offset must be a number");
        let failure = tool_failure(&call("{}"), &err).expect("a failure");
        assert_eq!(failure.error_type, "invalid_arguments");
        let r = from_reply(&failure, "not json");
        assert!(r.fallback);
        assert_eq!(r.analysis, "offset must be a number");
        assert_eq!(
            r.suggested_fix,
            "Check the tool's schema and call it again with valid arguments."
        );
        assert!(tool_failure(&call("{}"), &ToolError::interrupted()).is_none());
    }

    #[test]
    fn long_fields_are_cut() {
        let long = "x".repeat(5000);
        let block = json!({"error_type": "e", "analysis": long, "suggested_fix": "f"});
        let parsed = parse(&block.to_string()).expect("parses");
        assert_eq!(parsed.analysis.chars().count(), MAX_FIELD_CHARS as usize);
    }

    #[test]
    fn calls_compare_without_their_reasoning() {
        let a = call(r#"{"offset": 5, "reasoning": "first"}"#);
        assert!(same_call(&a, "read_page", r#"{ "offset":5 }"#));
        assert!(!same_call(&a, "read_page", r#"{"offset": 6}"#));
        assert!(!same_call(&a, "other", r#"{"offset": 5}"#));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn embedded_reflection_is_found(prefix in "[a-zA-Z .,]{0,40}", analysis in "[a-zA-Z0-9.]{1,40}", fix in "[a-zA-Z0-9.]{1,40}") {
            let block = json!({"error_type": "x", "analysis": analysis, "suggested_fix": fix}).to_string();
            let parsed = parse(&format!("{prefix}{block}")).expect("block present");
            prop_assert_eq!(parsed.analysis, analysis);
            prop_assert_eq!(parsed.suggested_fix, fix);
        }
    }
}
