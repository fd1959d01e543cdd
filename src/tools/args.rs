//! A tool's arguments: the optional reasoning every tool takes, the schema derived for the
//! rest, and decoding the model's JSON into the tool's argument type.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::{ToolError, ToolErrorKind};
use kljson::FromJson;

/// The argument every tool takes besides its own: why the model calls it, now. The step's
/// thought falls back to it when the reply has no text (native tool calling often has none).
pub const REASONING: &str = "reasoning";

/// Characters the schema allows for [`REASONING`] (a hint to the model; not enforced).
pub const REASONING_MAX_CHARS: u64 = 500;

/// `schema` (an object schema) with the optional [`REASONING`] property added.
pub fn with_reasoning(mut schema: Value) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        let properties = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert(
                REASONING.to_string(),
                kljson::json!({
                    "type": "string",
                    "description": "Why you call this tool, now (one short sentence).",
                    "maxLength": REASONING_MAX_CHARS,
                }),
            );
        }
    }
    schema
}

/// The keywords the schema sent to a model keeps: what the arguments are and mean. Titles,
/// formats, defaults and length or range limits go (each property's description states its
/// default and range in words), and so does `additionalProperties` (unknown fields are still
/// refused when the call is decoded): on a small local model every tool definition is read
/// before each request, and these cost about 40% of its tokens.
const MODEL_SCHEMA_KEYS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "$defs",
    "$ref",
];

/// `schema` as sent to a model (see [`MODEL_SCHEMA_KEYS`]): the root's own description
/// ("Arguments of …") goes, and an optional property typed `[T, "null"]` is typed `T`.
pub fn model_schema(schema: &Value) -> Value {
    let mut out = model_subschema(schema);
    if let Some(obj) = out.as_object_mut() {
        obj.remove("description");
    }
    out
}

fn model_subschema(schema: &Value) -> Value {
    let Value::Object(obj) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        if !MODEL_SCHEMA_KEYS.contains(&key.as_str()) {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("properties" | "$defs", Value::Object(props)) => Value::Object(
                props
                    .iter()
                    .map(|(name, sub)| (name.clone(), model_subschema(sub)))
                    .collect(),
            ),
            ("items", sub) => model_subschema(sub),
            ("type", Value::Array(types)) => {
                let mut kinds = types.iter().filter(|t| t.as_str() != Some("null"));
                match (kinds.next(), kinds.next()) {
                    (Some(only), None) => only.clone(),
                    _ => value.clone(),
                }
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// Takes the optional [`REASONING`] out of a call's arguments: the reasoning (trimmed;
/// `None` when absent or blank) and the arguments without it. Arguments that are not a JSON
/// object, or have no reasoning, come back unchanged (their own decoding judges them); a
/// reasoning that is not a string is an invalid-arguments error.
pub fn split_reasoning(arguments: &str) -> Result<(Option<String>, Cow<'_, str>), ToolError> {
    let Ok(Value::Object(mut obj)) = kljson::parse_value(arguments) else {
        return Ok((None, Cow::Borrowed(arguments)));
    };
    let Some(reasoning) = take_reasoning(&mut obj)? else {
        return Ok((None, Cow::Borrowed(arguments)));
    };
    Ok((
        reasoning,
        Cow::Owned(kljson::to_string(&Value::Object(obj))),
    ))
}

/// The [`REASONING`] field taken out of `obj`: `None` when it is absent, `Some(None)` when
/// blank.
fn take_reasoning(obj: &mut Map<String, Value>) -> Result<Option<Option<String>>, ToolError> {
    let Some(reasoning) = obj.remove(REASONING) else {
        return Ok(None);
    };
    let reasoning = String::from_json(reasoning).map_err(|err| {
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("field \"{REASONING}\": {}", err.message()),
        )
    })?;
    Ok(Some(
        Some(reasoning.trim().to_string()).filter(|r| !r.is_empty()),
    ))
}

/// The JSON schema of `T`, with an object root.
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.entry("type").or_insert_with(|| Value::from("object"));
    }
    schema
}

/// Checks the arguments against the limits `schema` sets on its properties (`minimum` and
/// `maximum` of a number, `minLength` and `maxLength` of a string, in characters): a value
/// outside them is an invalid-arguments error that names the field, the range and the value,
/// for the model to correct (never clamped into range behind its back). The reasoning's
/// length is a hint, not a limit; arguments that do not parse, fields the schema does not
/// know and wrong types are left to decoding, which reports them.
pub fn check_limits(schema: &Value, arguments: &str) -> Result<(), ToolError> {
    let Ok(Value::Object(args)) = args_value(arguments) else {
        return Ok(());
    };
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Ok(());
    };
    for (name, value) in &args {
        let Some(property) = properties.get(name) else {
            continue;
        };
        // The limits our schemas set are whole numbers (no float formatting in the wasm).
        let limit = |key: &str| property.get(key).and_then(Value::as_u64);
        let outside = |n: f64, (min, max): (Option<u64>, Option<u64>)| {
            min.is_some_and(|m| n < m as f64) || max.is_some_and(|m| n > m as f64)
        };
        let what = match value {
            Value::Number(n) => {
                let bounds = (limit("minimum"), limit("maximum"));
                n.as_f64()
                    .filter(|n| outside(*n, bounds))
                    .map(|_| format!("must be {} (got {value})", range(bounds, "")))
            }
            Value::String(text) => {
                let chars = text.chars().count();
                let bounds = (limit("minLength"), limit("maxLength"));
                outside(chars as f64, bounds).then(|| {
                    format!(
                        "must be {} long (got {chars})",
                        range(bounds, " characters")
                    )
                })
            }
            _ => None,
        };
        if let Some(what) = what {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("field \"{name}\": {what}"),
            ));
        }
    }
    Ok(())
}

/// "1 to 8000", "at least 1", "at most 300" (with `unit` after the number).
fn range((min, max): (Option<u64>, Option<u64>), unit: &str) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("{min} to {max}{unit}"),
        (Some(min), None) => format!("at least {min}{unit}"),
        (None, Some(max)) => format!("at most {max}{unit}"),
        (None, None) => String::new(),
    }
}

/// Decodes arguments into `T` (after taking out the optional [`REASONING`]); the error
/// names the field, what was expected and what was given. Only the last call is generic:
/// the parsing and the error's wording are shared by every tool.
pub fn decode_args<T: FromJson>(arguments: &str) -> Result<T, ToolError> {
    T::from_json(args_value(arguments)?).map_err(args_error)
}

/// The arguments to decode, parsed: without the reasoning, and `{}` when blank.
fn args_value(arguments: &str) -> Result<Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut value = kljson::parse_value(arguments).map_err(|err| {
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("the arguments are not valid: {err}"),
        )
    })?;
    if let Value::Object(obj) = &mut value {
        take_reasoning(obj)?;
    }
    Ok(value)
}

/// The invalid-arguments error for a decoding error (at a field, or of the whole).
fn args_error(err: kljson::Error) -> ToolError {
    let message = match err.path() {
        "" => format!("the arguments are not valid: {}", err.message()),
        path => format!("field \"{path}\": {}", err.message()),
    };
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}
