//! The message types as TypeScript declarations (`extension/protocol.gen.d.ts`, which is
//! also the declaration of `protocol.gen.js`): every request, reply, event and envelope,
//! rendered from the JSON schemas `schemars` derives from the Rust types ([`Catalog`]), so a
//! renamed or retyped field makes `tsc --noEmit` fail in the JS that uses it. [`super::docs`]
//! renders the same catalog for people.

use std::fmt::Write as _;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

use super::super::panel::PanelView;
use super::super::reply::{
    AckReply, ActionsCheckReply, ActionsReply, AnswerReply, ClearedReply, ConnectionReply,
    Envelope, ExportReply, HistoryReply, ImportActionsReply, LocalModelsReply, LocateReply,
    ModelsReply, ReadPagesReply, SearchCheckReply, SearchOfferReply, SettingsReply, StopReply,
};
use super::super::{Command, SessionView};
use super::{constants, Constant};
use crate::types::events::EventEnvelope;

/// Where the generated declarations live, relative to the repository root.
pub const PATH: &str = "extension/protocol.gen.d.ts";

/// Every message type: the schemas of the named types and which reply each request gets.
pub struct Catalog {
    /// Every named type's schema, by name (`Command` is the requests, `Envelope` a reply,
    /// `EventEnvelope` an event as the worker broadcasts it).
    pub definitions: Map<String, Value>,
    /// Each request's reply (a schema), in the order of [`Command::NAMES`].
    pub replies: Vec<(&'static str, Value)>,
    /// Each request of the in-page panel and its reply.
    pub panel_replies: Vec<(&'static str, Value)>,
}

/// The schema of `T` (a `$ref` to its definition), which `generator` then holds.
fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    generator.subschema_for::<T>().to_value()
}

impl Catalog {
    /// The catalog of the crate's message types (the schemas say what a reader of the JSON
    /// must accept: a field with a default may be absent).
    pub fn new() -> Self {
        let mut generator = SchemaSettings::draft2020_12().into_generator();
        let g = &mut generator;
        for root in [
            schema::<Command>,
            schema::<Envelope>,
            schema::<EventEnvelope>,
        ] {
            root(g);
        }
        let view = schema::<SessionView>(g);
        let settings = schema::<SettingsReply>(g);
        let replies = vec![
            ("snapshot", view.clone()),
            ("ask", view.clone()),
            ("stop", schema::<StopReply>(g)),
            ("export", schema::<ExportReply>(g)),
            ("ack_input", schema::<AckReply>(g)),
            ("answer_input", schema::<AnswerReply>(g)),
            ("get_settings", settings.clone()),
            ("save_settings", settings),
            ("test_connection", schema::<ConnectionReply>(g)),
            ("list_models", schema::<ModelsReply>(g)),
            ("new_conversation", view.clone()),
            ("history", schema::<HistoryReply>(g)),
            ("open_conversation", view.clone()),
            ("clear_history", schema::<ClearedReply>(g)),
            ("explain", view.clone()),
            ("test_search", schema::<SearchCheckReply>(g)),
            ("search_offer", schema::<SearchOfferReply>(g)),
            ("locate_passage", schema::<LocateReply>(g)),
            ("find_local_models", schema::<LocalModelsReply>(g)),
            ("read_pages", schema::<ReadPagesReply>(g)),
            ("add_pages", view.clone()),
            ("remove_page", view.clone()),
            ("run_action", view),
            ("get_actions", schema::<ActionsReply>(g)),
            ("check_actions", schema::<ActionsCheckReply>(g)),
            ("save_actions", schema::<ActionsReply>(g)),
            ("import_actions", schema::<ImportActionsReply>(g)),
        ];
        let panel_replies = vec![
            ("snapshot", schema::<PanelView>(g)),
            ("stop", schema::<StopReply>(g)),
            ("run_action", schema::<PanelView>(g)),
        ];
        Self {
            definitions: generator.take_definitions(true),
            replies,
            panel_replies,
        }
    }
}

impl Default for Catalog {
    fn default() -> Self {
        Self::new()
    }
}

/// `text` as the lines of a `/** */` comment indented by `pad` (empty for no text).
pub fn doc_comment(text: Option<&str>, pad: &str) -> String {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return String::new();
    };
    let text = text.replace("*/", "*\\/");
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(only), None) => format!("{pad}/** {only} */\n"),
        _ => {
            let mut out = format!("{pad}/**\n");
            for line in text.lines() {
                let _infallible = writeln!(
                    out,
                    "{pad} *{}{line}",
                    if line.is_empty() { "" } else { " " }
                );
            }
            out + &format!("{pad} */\n")
        }
    }
}

/// The description of a schema.
pub fn description(schema: &Value) -> Option<&str> {
    schema.get("description").and_then(Value::as_str)
}

/// A TypeScript property name: bare when it is an identifier, else quoted.
fn property_name(name: &str) -> String {
    let ident = name.chars().enumerate().all(|(i, c)| {
        c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
    });
    if ident && !name.is_empty() {
        name.to_string()
    } else {
        Value::from(name).to_string()
    }
}

/// The TypeScript type of `schema`. `indent`: `Some(n)` writes object types over several
/// lines (properties indented by n + 2 spaces, with their docs); `None` on one line.
pub fn ts_type(schema: &Value, indent: Option<usize>) -> String {
    let Value::Object(o) = schema else {
        return if schema == &Value::Bool(false) {
            "never"
        } else {
            "unknown"
        }
        .into();
    };
    if let Some(reference) = o.get("$ref").and_then(Value::as_str) {
        return reference
            .rsplit('/')
            .next()
            .unwrap_or(reference)
            .to_string();
    }
    if let Some(value) = o.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = o.get("enum") {
        return union(values.iter().map(Value::to_string).collect());
    }
    let mut parts = Vec::new();
    let mut unions = Vec::new();
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(options)) = o.get(key) {
            unions.push(union(options.iter().map(|s| ts_type(s, indent)).collect()));
        }
    }
    // An object type only says something beside a union when it has fields.
    let bare_object = !o.contains_key("properties") && !o.contains_key("additionalProperties");
    match o.get("type") {
        Some(Value::String(kind)) if kind == "object" && bare_object && !unions.is_empty() => {}
        Some(Value::String(kind)) => parts.push(base_type(kind, o, indent)),
        Some(Value::Array(kinds)) => parts.push(union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| base_type(kind, o, indent))
                .collect(),
        )),
        _ => {}
    }
    if let Some(Value::Array(all)) = o.get("allOf") {
        parts.extend(all.iter().map(|s| ts_type(s, indent)));
    }
    if parts.is_empty() && unions.len() == 1 {
        return unions.remove(0);
    }
    parts.extend(unions.into_iter().map(|u| format!("({u})")));
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join(" & ")
    }
}

/// The union of `types` (each once, in order).
fn union(mut types: Vec<String>) -> String {
    let mut seen = Vec::new();
    types.retain(|t| {
        let new = !seen.contains(t);
        seen.push(t.clone());
        new
    });
    types.join(" | ")
}

/// The TypeScript type of a schema's `type` `kind`.
fn base_type(kind: &str, o: &Map<String, Value>, indent: Option<usize>) -> String {
    match kind {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => {
            let item = o
                .get("items")
                .map_or("unknown".into(), |s| ts_type(s, indent));
            if item.contains(' ') && !item.starts_with('{') {
                format!("({item})[]")
            } else {
                format!("{item}[]")
            }
        }
        "object" => object_type(o, indent),
        _ => "unknown".into(),
    }
}

/// The TypeScript type of an object schema.
fn object_type(o: &Map<String, Value>, indent: Option<usize>) -> String {
    let Some(Value::Object(properties)) = o.get("properties") else {
        return match o.get("additionalProperties") {
            Some(values @ Value::Object(_)) => {
                let value = ts_type(values, indent);
                match o.get("propertyNames") {
                    Some(keys @ Value::Object(_)) => {
                        format!("Partial<Record<{}, {value}>>", ts_type(keys, indent))
                    }
                    _ => format!("Record<string, {value}>"),
                }
            }
            _ => "Record<string, unknown>".into(),
        };
    };
    let required: Vec<&str> = match o.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let field = |name: &String, schema: &Value, indent: Option<usize>| {
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        format!(
            "{}{optional}: {};",
            property_name(name),
            ts_type(schema, indent)
        )
    };
    match indent {
        None => {
            let fields: Vec<String> = properties
                .iter()
                .map(|(name, s)| field(name, s, None))
                .collect();
            format!("{{ {} }}", fields.join(" "))
        }
        Some(n) => {
            let pad = " ".repeat(n + 2);
            let mut out = String::from("{\n");
            for (name, s) in properties {
                out += &doc_comment(description(s), &pad);
                let _infallible = writeln!(out, "{pad}{}", field(name, s, Some(n + 2)));
            }
            out + &" ".repeat(n) + "}"
        }
    }
}

/// The TypeScript type of a constant of `protocol.gen.js`: strings as their literal types
/// (so `REQUESTS.ASK` is `"ask"`), numbers and booleans as such, arrays of their items' base
/// types, objects read-only.
fn constant_type(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => value.to_string(),
        Value::Array(items) => {
            let items = union(items.iter().map(|v| base_of(v).to_string()).collect());
            match items.as_str() {
                "" => "readonly never[]".into(),
                one if !one.contains(' ') => format!("readonly {one}[]"),
                many => format!("readonly ({many})[]"),
            }
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("readonly {}: {};", property_name(k), constant_type(v)))
                .collect();
            format!("{{ {} }}", fields.join(" "))
        }
    }
}

/// The base type of a JSON value.
fn base_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "unknown[]",
        Value::Object(_) => "Record<string, unknown>",
    }
}

/// The declaration of one constant (`DEFAULT_SETTINGS` is a `Settings`).
fn declare(constant: &Constant) -> String {
    let ty = match constant.name {
        "DEFAULT_SETTINGS" => "Readonly<Settings>".to_string(),
        _ => constant_type(&constant.value),
    };
    format!(
        "{}export declare const {}: {ty};\n",
        doc_comment(Some(constant.doc), ""),
        constant.name
    )
}

/// `interface name { request: Reply; ... }`.
fn reply_map(name: &str, doc: &str, replies: &[(&str, Value)]) -> String {
    let mut out = format!("{}export interface {name} {{\n", doc_comment(Some(doc), ""));
    for (request, reply) in replies {
        let _infallible = writeln!(out, "  {request}: {};", ts_type(reply, None));
    }
    out + "}\n"
}

/// The generated declarations' text.
pub fn protocol_dts() -> String {
    let catalog = Catalog::new();
    let mut out = String::from(
        "// Generated from the Rust crate by `knowledgelens::protocol::gen::typedefs::protocol_dts()`:\n\
         // do not edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.\n\
         // The declaration of protocol.gen.js (its constants) and the types of every message\n\
         // between the extension's pages and the worker (docs/protocol.md describes the same).\n\n",
    );
    for constant in constants() {
        out += &declare(&constant);
    }
    out += "\n/** A request to the worker, without the `id` the Port client adds. */\n\
            export type Request = Command;\n\
            /** The `type` of a request. */\n\
            export type RequestType = Command[\"type\"];\n\
            /** The fields of a request of type `T` besides `type` (and `id`). */\n\
            export type RequestFields<T extends RequestType> = T extends RequestType\n  \
            ? Omit<Extract<Command, { type: T }>, \"type\">\n  : never;\n\
            /** The `data` of the reply to a request of type `T`. */\n\
            export type ReplyOf<T extends RequestType> = Replies[T];\n\
            /** One event of a run (`event` of an `EventEnvelope`). */\n\
            export type RunEvent = AgentEvent;\n\n";
    out += &reply_map(
        "Replies",
        "The `data` of the reply to each request.",
        &catalog.replies,
    );
    out += &reply_map(
        "PanelReplies",
        "The `data` of the reply to each request of the in-page panel.",
        &catalog.panel_replies,
    );
    for (name, schema) in &catalog.definitions {
        let _infallible = write!(
            out,
            "\n{}export type {name} = {};\n",
            doc_comment(description(schema), ""),
            ts_type(schema, Some(0))
        );
    }
    out
}
