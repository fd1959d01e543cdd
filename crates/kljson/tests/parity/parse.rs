//! `parse_value`, the crate's JSON parser, against serde_json's
//! `from_str::<Value>` on arbitrary text: the same value, or the same error message with
//! the same line and column.

use kljson::parse_value;
use proptest::prelude::*;
use serde_json::Value;

fn serde(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Pieces JSON text is made of, broken ones included, so that most texts come close to
/// JSON and the errors are met at every kind of place.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"a b\"", " ", "\n", "\t", "\r\n",
            "null", "true", "false", "nul", "tru", "fals", "nulx", "0", "-", "-0", "1", "12",
            "007", "1.", ".5", "1.5", "1e", "1e5", "1E-3", "1e+", "2.5e-400", "1e400", "-1e309",
            "18446744073709551615", "18446744073709551616", "-9223372036854775808",
            "-9223372036854775809", "123456789012345678901234567890", "0.000000000000000000001",
            "1.23456789012345678901234567890", "4e2147483648", "0e99999999999", "1e-99999999999",
            "\\", "\\n", "\\u", "\\u00e9", "\\u20AC", "\\ud83d\\ude00", "\\ud83d", "\\ude00",
            "\\ud83dx", "\\ud83d\\n", "\\uzzzz", "\\q", "\u{1}", "é", "日本", "😀", "\"\\\"",
            "x", "\"k\":", ",}", ",]", "{\"k\":", "[1,", "{}", "[]", "\"k\" :", ", \"k\":",
        ]).prop_map(str::to_string),
        1 => "[ -~]{0,4}",
        1 => any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.concat())
}

/// A JSON value serde_json writes, for texts that parse.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// JSON that serde_json wrote, then broken by up to three edits (a piece inserted, or a
/// few characters removed), so that errors are met inside every kind of value.
fn broken_json() -> impl Strategy<Value = String> {
    let edit = (any::<prop::sample::Index>(), 0usize..4, piece());
    (
        json_value(),
        any::<bool>(),
        prop::collection::vec(edit, 0..4),
    )
        .prop_map(|(value, pretty, edits)| {
            let mut text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            for (at, remove, insert) in edits {
                let mut chars: Vec<char> = text.chars().collect();
                let at = at.index(chars.len() + 1);
                let end = (at + remove).min(chars.len());
                chars.splice(at..end, insert.chars());
                text = chars.into_iter().collect();
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_text_parses_as_serde_json_parses_it(text in text()) {
        prop_assert_eq!(parse_value(&text), serde(&text), "text: {:?}", text);
    }

    #[test]
    fn broken_json_fails_as_serde_json_fails(text in broken_json()) {
        prop_assert_eq!(parse_value(&text), serde(&text), "text: {:?}", text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// What serde_json writes (compact and pretty) parses, to serde_json's value (floats as
    /// serde_json reads them without `float_roundtrip`, which is not always the float written).
    #[test]
    fn written_json_parses_back(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let parsed = parse_value(&text);
        prop_assert!(parsed.is_ok(), "{:?}", parsed);
        prop_assert_eq!(parsed, serde(&text));
    }
}

#[test]
fn nesting_stops_where_serde_json_stops() {
    for depth in [126, 127, 128, 129, 5_000] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(parse_value(&text), serde(&text), "depth {depth}");
        let text = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        assert_eq!(parse_value(&text), serde(&text), "depth {depth}");
    }
    assert!(parse_value(&"[".repeat(200))
        .unwrap_err()
        .starts_with("recursion limit exceeded at line 1 column 128"));
}

#[test]
fn errors_name_the_line_and_column() {
    for (text, error) in [
        ("{\n  \"a\": nul,\n}", "expected ident at line 2 column 11"),
        ("[1, 2,]", "trailing comma at line 1 column 7"),
        (
            "\"\\ud83d\"",
            "unexpected end of hex escape at line 1 column 8",
        ),
        ("{\"a\" 1}", "expected `:` at line 1 column 6"),
        ("1 2", "trailing characters at line 1 column 3"),
    ] {
        assert_eq!(parse_value(text), Err(error.to_string()), "{text}");
        assert_eq!(parse_value(text), serde(text), "{text}");
    }
}
