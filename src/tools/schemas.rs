//! The built-in tools' argument schemas, shipped as JSON text (`schemas.gen.json`) rather
//! than derived at run time: `schemars` and the schema code derived for every argument type
//! then stay out of the wasm. The text is what `schemars` derives from the argument types
//! ([`derived_schemas`](super::derived_schemas), beside the tools, which this module does
//! not know); `tests/native/tool_schemas.rs` fails when it is stale (`KL_BLESS=1` rewrites
//! it), so the schema and the argument validation (decoding into the same types) still
//! cannot disagree. Other tools (tests, benchmarks) derive theirs when asked.

use std::sync::OnceLock;

use serde_json::{Map, Value};

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "src/tools/schemas.gen.json";

const GENERATED: &str = include_str!("schemas.gen.json");

/// The generated schema of built-in tool `name` (`Value::Null` for a name it does not
/// have, which `tests/native/tool_schemas.rs` rules out for every built-in tool).
pub fn builtin(name: &str) -> Value {
    static PARSED: OnceLock<Map<String, Value>> = OnceLock::new();
    PARSED
        .get_or_init(|| match kljson::parse(GENERATED) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        })
        .get(name)
        .cloned()
        .unwrap_or(Value::Null)
}

/// The generated file's text for `schemas` (one JSON object, by tool name).
pub fn render(schemas: &[(&str, Value)]) -> String {
    let mut map = Map::new();
    for (name, schema) in schemas {
        map.insert((*name).to_string(), schema.clone());
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}
