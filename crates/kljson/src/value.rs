//! Writing a [`Value`] as text, compact or pretty, and the string and integer writers
//! every JSON writer here uses ([`write_str`], [`write_int`]); byte for byte as serde_json does
//! (`tests/native/json.rs` checks both on arbitrary values). Our own walker rather than serde_json's
//! `Display` and `to_string_pretty`: those serialize through serde, a serializer compiled per
//! output format that the module needed for nothing else.

use serde_json::{Number, Value};

/// Appends `value`'s compact JSON to `out` (as `value.to_string()` writes it).
pub fn write_value(out: &mut String, value: &Value) {
    write(out, value, None);
}

/// `value` as pretty JSON: two spaces per level, `"key": value` (as
/// `serde_json::to_string_pretty` writes it).
pub fn pretty(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Some(0));
    out
}

/// Writes `value`; `depth` is the nesting level when pretty, `None` when compact.
fn write(out: &mut String, value: &Value, depth: Option<usize>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                member(out, i, depth);
                write(out, item, depth.map(|d| d + 1));
            }
            close(out, items.is_empty(), depth, ']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                member(out, i, depth);
                write_str(out, key);
                out.push_str(if depth.is_some() { ": " } else { ":" });
                write(out, item, depth.map(|d| d + 1));
            }
            close(out, map.is_empty(), depth, '}');
        }
    }
}

/// Before member `i` of a container at `depth`: its comma, and when pretty its line.
fn member(out: &mut String, i: usize, depth: Option<usize>) {
    if i > 0 {
        out.push(',');
    }
    if let Some(depth) = depth {
        newline(out, depth + 1);
    }
}

/// Closes a container at `depth` with `bracket` (pretty: on a line of its own, unless empty).
fn close(out: &mut String, empty: bool, depth: Option<usize>, bracket: char) {
    if let (Some(depth), false) = (depth, empty) {
        newline(out, depth);
    }
    out.push(bracket);
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// A number as serde_json writes it: integers in full, floats in their shortest form that
/// reads back the same (serde_json's own float writer, through `Number`'s `Display`).
fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        write_int(out, false, u);
    } else if let Some(i) = n.as_i64() {
        write_int(out, i < 0, i.unsigned_abs());
    } else {
        use std::fmt::Write;
        let _ = write!(out, "{n}");
    }
}

/// Writes `text` as a JSON string, escaped as serde_json escapes it: `"` and `\`, and the
/// control characters below U+0020 (`\b \t \n \f \r`, the others as `\u00XX`).
#[inline(never)]
pub fn write_str(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Writes an integer (not generic: one copy of the digit loop).
#[inline(never)]
pub(super) fn write_int(out: &mut String, negative: bool, mut magnitude: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        out.push('-');
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}
