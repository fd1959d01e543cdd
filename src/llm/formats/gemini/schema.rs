//! The subset of JSON Schema Gemini accepts for function parameters (an OpenAPI subset):
//! [`function_parameters`] reduces a tool's argument schema to it.

use serde_json::{Map, Value};

use kljson::json;

/// The JSON Schema keywords Gemini's `parameters` accept; all others are dropped.
pub const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
    "anyOf",
    "propertyOrdering",
];

/// A tool's JSON schema as Gemini's `parameters` (see the module docs), or `None` when
/// the tool takes no parameters.
pub fn function_parameters(schema: &Value) -> Option<Value> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let clean = sanitize(schema, &defs, 0);
    let has_properties = clean
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    has_properties.then_some(clean)
}

/// How deep `$ref`s are followed (a recursive schema stops there).
const MAX_DEPTH: usize = 16;

fn sanitize(schema: &Value, defs: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return json!({});
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"));
        let target = name.and_then(|n| defs.get(n));
        return match target {
            Some(t) if depth < MAX_DEPTH => {
                let mut resolved = sanitize(t, defs, depth + 1);
                if let (Some(d), Some(map)) = (obj.get("description"), resolved.as_object_mut()) {
                    map.insert("description".into(), d.clone());
                }
                resolved
            }
            _ => json!({ "type": "string" }),
        };
    }
    let mut out = Map::new();
    let mut nullable = false;
    let mut kind: Option<String> = None;
    match obj.get("type") {
        Some(Value::String(t)) => kind = Some(t.clone()),
        Some(Value::Array(types)) => {
            nullable = types.iter().any(|t| t == "null");
            kind = types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .map(str::to_string);
        }
        _ => {}
    }
    if let Some(k) = &kind {
        out.insert("type".into(), json!(k));
    }
    for (key, value) in obj {
        if !SCHEMA_KEYS.contains(&key.as_str()) || key == "type" {
            continue;
        }
        let cleaned = match key.as_str() {
            "properties" => {
                let Some(props) = value.as_object() else {
                    continue;
                };
                // Inserted one by one: collecting into the map would sort the entries
                // first, with a copy of std's stable sort for this one type.
                let mut cleaned = Map::new();
                for (name, s) in props {
                    cleaned.insert(name.clone(), sanitize(s, defs, depth + 1));
                }
                Value::Object(cleaned)
            }
            "items" => sanitize(value, defs, depth + 1),
            "anyOf" => {
                let Some(all) = value.as_array() else {
                    continue;
                };
                let options: Vec<Value> = all
                    .iter()
                    .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                    .map(|o| sanitize(o, defs, depth + 1))
                    .collect();
                nullable |= options.len() < all.len();
                Value::Array(options)
            }
            "enum" => {
                if !value
                    .as_array()
                    .is_some_and(|v| v.iter().all(Value::is_string))
                {
                    continue;
                }
                value.clone()
            }
            "format" => {
                let allowed: &[&str] = match kind.as_deref() {
                    Some("string") => &["enum", "date-time"],
                    Some("integer") => &["int32", "int64"],
                    Some("number") => &["float", "double"],
                    _ => &[],
                };
                if !value.as_str().is_some_and(|f| allowed.contains(&f)) {
                    continue;
                }
                value.clone()
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), cleaned);
    }
    if let Some(c) = obj.get("const").filter(|c| c.is_string()) {
        out.insert("enum".into(), json!([c]));
    }
    if nullable || obj.get("nullable") == Some(&Value::Bool(true)) {
        out.insert("nullable".into(), json!(true));
    }
    // `required` may only name properties that exist.
    if let Some(Value::Array(mut required)) = out.remove("required") {
        let properties = out.get("properties").and_then(Value::as_object);
        required.retain(|r| {
            r.as_str()
                .is_some_and(|r| properties.is_some_and(|p| p.contains_key(r)))
        });
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
    }
    Value::Object(out)
}
