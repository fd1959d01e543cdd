//! `docs/protocol.md`: every request, reply, event and storage key, for people, from the
//! same [`Catalog`] as the TypeScript declarations ([`super::typedefs`]) and the storage key
//! functions of `state`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::typedefs::{description, ts_type, Catalog};
use super::{constants, Constant};
use crate::settings::SETTINGS_KEY;
use crate::state::{entry_key, page_key, session_key, QUARANTINE_PREFIX};

/// Where the generated document lives, relative to the repository root.
pub const PATH: &str = "docs/protocol.md";

/// A doc comment on one line, its rustdoc links (``[`reply::StopReply`]``) as plain code.
fn prose(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("[`", "`")
        .replace("`]", "`")
}

/// `text` fit for a Markdown table cell (one line, no bare `|`).
fn cell(text: &str) -> String {
    prose(text).replace('|', "\\|")
}

/// A type in a table cell.
fn type_cell(schema: &Value) -> String {
    format!("`{}`", cell(&ts_type(schema, None)))
}

/// The fields table of an object schema (nothing when it has no fields); `skip`: a field
/// to leave out (the tag `type`, shown in the heading).
fn fields_table(schema: &Value, skip: &str) -> String {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return String::new();
    };
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let mut out =
        String::from("| Field | Type | Required | Meaning |\n| --- | --- | --- | --- |\n");
    let mut rows = 0;
    for (name, field) in properties.iter().filter(|(name, _)| name.as_str() != skip) {
        rows += 1;
        let _infallible = writeln!(
            out,
            "| `{name}` | {} | {} | {} |",
            type_cell(field),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                "no"
            },
            cell(description(field).unwrap_or(""))
        );
    }
    if rows == 0 {
        return String::new();
    }
    out + "\n"
}

/// The variants of a tagged union (`oneOf`), each with its tag (the `type` constant).
fn variants(schema: &Value) -> Vec<(String, &Value)> {
    let Some(Value::Array(options)) = schema.get("oneOf") else {
        return Vec::new();
    };
    options
        .iter()
        .filter_map(|option| {
            let tag = option.pointer("/properties/type/const")?.as_str()?;
            Some((tag.to_string(), option))
        })
        .collect()
}

/// A section per variant of the tagged union `schema`, with `extra` after its description.
fn variant_sections(schema: &Value, extra: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    for (tag, variant) in variants(schema) {
        let _infallible = write!(
            out,
            "### `{tag}`\n\n{}\n\n{}{}",
            prose(description(variant).unwrap_or("")),
            fields_table(variant, "type"),
            extra(&tag)
        );
    }
    out
}

/// The storage keys: the area, an example key (made by the crate's own key functions) and
/// what the value is.
fn storage_keys() -> Vec<(&'static str, String, &'static str)> {
    let session = "tab:12";
    vec![
        ("local", SETTINGS_KEY.to_string(), "The settings (`Settings`, with a schema version), JSON text."),
        ("local", crate::actions::store::ACTIONS_KEY.to_string(), "The selection actions (`ActionsRecord`, with a schema version): built-ins and the user's, in menu order, and the Translate language; JSON text."),
        ("session", session_key(session), "A session's head record: its state without the trajectory entries and page text, with a schema version, JSON text."),
        ("session", page_key(session, 3), "The page text of run 3 of the session."),
        ("session", entry_key(session, 3, 0), "Trajectory entry 0 of run 3 of the session (append-only; written before the head that counts it)."),
        ("session", super::super::ConversationId::parse(&format!("conv:{session}:1")).map(|c| c.to_string()).unwrap_or_default(), "The first archived conversation of the session (`new_conversation`), listed by `history`."),
        ("session", format!("{QUARANTINE_PREFIX}{session}:1700000000000"), "A session record that could not be read, set aside (with the time, ms) instead of being lost."),
        ("session", crate::state::read_pages::READ_PAGES_KEY.to_string(), "The index of the pages read in this browser session, kept for questions across pages (id, title, URL, site, when read and last used, tab, bytes; with a version): at most 20 pages and 4 MiB, least recently used removed first."),
        ("session", crate::state::read_pages::read_page_key(3), "Kept page 3's title, URL and text (`PageInfo`), JSON text; never an incognito tab's."),
    ]
}

/// The generated document's text.
pub fn protocol_md() -> String {
    let catalog = Catalog::new();
    let definitions = &catalog.definitions;
    let none = Value::Null;
    let def = |name: &str| definitions.get(name).unwrap_or(&none);
    let reply = |request: &str| {
        catalog
            .replies
            .iter()
            .find(|(name, _)| *name == request)
            .map(|(_, schema)| format!("Reply `data`: {}.\n\n", type_cell(schema)))
            .unwrap_or_default()
    };
    let mut out = String::from(
        "<!-- Generated from the Rust crate by `knowledgelens::protocol::gen::docs::protocol_md()`:\n\
         do not edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`. -->\n\n\
         # The KnowledgeLens protocol\n\n\
         The messages between the extension's pages and the service worker, the events a run\n\
         emits and the storage keys, generated from the Rust types (`src/protocol/`) with the\n\
         TypeScript declarations the extension's JS is checked against\n\
         (`extension/protocol.gen.d.ts`; `tsc --noEmit`). Types are written as TypeScript;\n\
         each named type has a section under [Types](#types).\n\n\
         ## Envelope\n\n\
         A page opens a `chrome.runtime` Port named `",
    );
    let constant = |name: &str| {
        constants()
            .into_iter()
            .find(|c| c.name == name)
            .map(|Constant { value, .. }| value.as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    let _infallible = write!(
        out,
        "{}` (the in-page panel: `{}`) and posts `{{id, type, ...fields}}`; the worker \
         answers with an `Envelope` echoing the `id`: `{{id, ok: true, data}}` or `{{id, ok: \
         false, error: {{kind, message}}}}`. Events come on the same Port as an \
         `EventEnvelope`: `{{type: \"event\", session, run, event}}`.\n\n",
        constant("PORT_NAME"),
        constant("PANEL_PORT_NAME")
    );
    out += "## Requests\n\n";
    out += &variant_sections(def("Command"), |tag| reply(tag));
    out += "## In-page panel requests\n\nOn its own Port, about the run that opened it in its own tab: \
            `{id, type, session, run}`.\n\n| Request | Reply `data` |\n| --- | --- |\n";
    for (request, schema) in &catalog.panel_replies {
        let _infallible = writeln!(out, "| `{request}` | {} |", type_cell(schema));
    }
    out += "\n## Events\n\nEvery event carries the run's progress besides its own fields:\n\n";
    out += &fields_table(def("AgentEvent"), "type");
    out += &variant_sections(def("AgentEvent"), |_| String::new());
    out += "## Storage keys\n\nEach value is one JSON string. Examples for session `tab:12`.\n\n\
            | Area (`chrome.storage.`) | Key (example) | Value |\n| --- | --- | --- |\n";
    for (area, key, value) in storage_keys() {
        let _infallible = writeln!(out, "| `{area}` | `{key}` | {} |", cell(value));
    }
    out += "\n## Types\n\n";
    for (name, schema) in definitions {
        out += &type_section(name, schema);
    }
    out
}

/// A named type's section: its description, then its fields, variants or values.
fn type_section(name: &str, schema: &Value) -> String {
    let mut out = format!("### {name}\n\n");
    if let Some(text) = description(schema) {
        out += &cell(text);
        out += "\n\n";
    }
    let table = fields_table(schema, "");
    if !variants(schema).is_empty() {
        out += "A tagged union (`type`): its variants are listed above.\n\n";
    }
    if table.is_empty() && variants(schema).is_empty() {
        let _infallible = write!(out, "{}\n\n", type_cell(&strip_docs(schema)));
    } else {
        out += &table;
    }
    out
}

/// `schema` without its own description (shown above it).
fn strip_docs(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}
