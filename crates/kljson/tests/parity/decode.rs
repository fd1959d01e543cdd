//! `#[derive(FromJson)]` against serde's own derive: the same declarations (every serde
//! attribute and enum representation the crate uses) are derived both ways, and arbitrary
//! JSON must decode to the same value, or fail, with both (512 cases). Valid documents are
//! also checked to decode, so the property is not won by both failing.

use kljson::{decode, DecodeError, FromJson};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn seven() -> u32 {
    7
}

/// A `deserialize_with` function: the string, upper-cased.
fn loud<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text: String = serde::Deserialize::deserialize(deserializer)?;
    Ok(text.to_uppercase())
}

/// The declarations, twice: in `by_serde` with serde's `Deserialize` and `Serialize`, in
/// `by_json` with `FromJson` and `ToJson`.
macro_rules! twins {
    ($($item:item)*) => {
        mod by_serde {
            #![allow(dead_code)]
            use super::*;
            $( #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)] $item )*
        }
        mod by_json {
            #![allow(dead_code)]
            use super::*;
            $( #[derive(kljson::FromJson, kljson::ToJson, Debug, PartialEq)] $item )*
        }
    };
}

twins! {
    pub struct Inner {
        pub name: String,
        #[serde(default)]
        pub count: u32,
        pub note: Option<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub other: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub flag: bool,
        /// A name the writer must escape (the derive's other path for keys).
        #[serde(default, rename = "we\"ird\\\n")]
        pub weird: u32,
    }

    #[serde(deny_unknown_fields)]
    pub struct Strict {
        #[serde(alias = "note")]
        pub name: String,
        #[serde(default = "seven")]
        pub count: u32,
        #[serde(default, deserialize_with = "loud")]
        pub flag: String,
    }

    pub struct Outer {
        pub name: String,
        #[serde(rename = "type")]
        pub kind: String,
        #[serde(default)]
        pub list: Vec<Inner>,
        pub inner: Option<Inner>,
        #[serde(skip)]
        pub skipped: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub count: Option<u64>,
        #[serde(default)]
        pub flag: bool,
        #[serde(default)]
        pub map: std::collections::BTreeMap<String, i64>,
        #[serde(default)]
        pub number: f64,
    }

    #[serde(rename_all = "snake_case")]
    pub enum External {
        Unit,
        Newtype(Inner),
        Tuple(u32, String),
        Record {
            name: String,
            #[serde(default)]
            count: u8,
        },
    }

    #[serde(tag = "type", rename_all = "snake_case")]
    pub enum Internal {
        Unit,
        Newtype(Inner),
        Record { name: String, list: Vec<u16> },
    }

    #[serde(untagged)]
    pub enum Untagged {
        Number(u32),
        Text(String),
        Record { name: String },
    }

    #[serde(transparent)]
    pub struct Wrapper {
        pub name: String,
    }

    pub struct Flattened {
        #[serde(rename = "type")]
        pub kind: String,
        #[serde(flatten)]
        pub inner: Inner,
    }

    #[derive(Default)]
    #[serde(default)]
    pub struct Defaults {
        pub name: String,
        pub count: u32,
        pub flag: Option<bool>,
    }

    pub struct Generic<S> {
        pub count: u32,
        pub state: S,
    }

    pub struct Holder {
        pub external: Option<External>,
        #[serde(default)]
        pub internal: Vec<Internal>,
        pub untagged: Option<Untagged>,
        pub generic: Option<Generic<Wrapper>>,
    }
}

/// The outcome with serde's derive and with `FromJson`, as text (the twins print alike),
/// and, when both decoded, what serde's `Serialize` and `ToJson` write back.
fn outcomes(value: &Value) -> Vec<(&'static str, String, String)> {
    macro_rules! both {
        ($($ty:ident $(<$arg:ident>)?),*) => {
            vec![$({
                let serde = serde_json::from_value::<by_serde::$ty $(<by_serde::$arg>)?>(value.clone()).ok();
                let ours = <by_json::$ty $(<by_json::$arg>)? as FromJson>::from_json(value.clone()).ok();
                let written = match (&serde, &ours) {
                    (Some(a), Some(b)) => (
                        serde_json::to_string(a).expect("serde writes"),
                        kljson::to_string(b),
                    ),
                    _ => (String::new(), String::new()),
                };
                (
                    stringify!($ty),
                    format!("{serde:?} writing {}", written.0),
                    format!("{ours:?} writing {}", written.1),
                )
            }),*]
        };
    }
    both!(
        Inner,
        Strict,
        Outer,
        External,
        Internal,
        Untagged,
        Wrapper,
        Flattened,
        Defaults,
        Generic<Wrapper>,
        Holder
    )
}

/// The names the declarations use, so that generated objects hit fields and variants.
const KEYS: &[&str] = &[
    "name", "type", "list", "inner", "count", "note", "flag", "map", "number", "state", "unit",
    "newtype", "tuple", "record", "skipped", "external", "internal", "untagged", "generic",
    "other",
];

/// Scalars, including the names (variant names are strings) and numbers at every edge.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(0u64),
            Just(7),
            Just(255),
            Just(256),
            Just(65_536),
            Just(u64::from(u32::MAX) + 1),
            any::<u64>()
        ]
        .prop_map(Value::from),
        prop_oneof![Just(-1i64), any::<i64>()].prop_map(Value::from),
        prop_oneof![Just(1.5f64), Just(2.0), Just(-0.5)].prop_map(Value::from),
        prop::sample::select(KEYS).prop_map(|k| Value::String(k.to_string())),
        "[a-z]{0,3}".prop_map(Value::String),
    ]
}

/// JSON whose arrays appear only under the keys of sequence-typed fields and variants
/// ("list", "tuple", "internal"), with no arrays inside them: serde's derive also accepts a
/// struct written as an array, a form the crate never writes and `FromJson` refuses.
fn shaped(depth: u32) -> BoxedStrategy<Value> {
    if depth == 0 {
        return scalar().boxed();
    }
    let inner = shaped(depth - 1);
    let no_array = inner
        .clone()
        .prop_filter("no nested arrays", |v| !v.is_array());
    let field = prop_oneof![
        (
            prop::sample::select(&["list", "tuple", "internal"][..]),
            prop::collection::vec(no_array, 0..4)
        )
            .prop_map(|(k, items)| (k.to_string(), Value::Array(items))),
        (
            prop::sample::select(KEYS),
            inner
                .clone()
                .prop_filter("arrays only under list keys", |v| !v.is_array())
        )
            .prop_map(|(k, v)| (k.to_string(), v)),
    ];
    prop_oneof![
        scalar(),
        prop::collection::vec(field, 0..6)
            .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn from_json_decodes_as_serde_does(value in shaped(4)) {
        for (ty, serde, ours) in outcomes(&value) {
            prop_assert_eq!(&serde, &ours, "{} from {}", ty, value);
        }
    }

    #[test]
    fn from_json_decodes_valid_documents_with_fields_removed(pick in any::<prop::sample::Index>(), drop_key in prop::sample::select(KEYS)) {
        let docs = valid_documents();
        let mut doc = docs[pick.index(docs.len())].clone();
        remove_everywhere(&mut doc, drop_key);
        for (ty, serde, ours) in outcomes(&doc) {
            prop_assert_eq!(&serde, &ours, "{} from {}", ty, doc);
        }
    }
}

fn remove_everywhere(value: &mut Value, key: &str) {
    match value {
        Value::Object(map) => {
            map.remove(key);
            map.values_mut().for_each(|v| remove_everywhere(v, key));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| remove_everywhere(v, key)),
        _ => {}
    }
}

/// One valid document per declaration (and a few forms of each enum).
fn valid_documents() -> Vec<Value> {
    vec![
        json!({"name": "a", "count": 3, "note": "n"}),
        json!({"name": "a"}),
        json!({"name": "a", "type": "t", "list": [{"name": "b"}], "inner": {"name": "c", "note": null},
               "skipped": 9, "count": 5, "flag": true, "map": {"x": -1}, "number": 2.5}),
        json!("unit"),
        json!({"newtype": {"name": "a"}}),
        json!({"tuple": [1, "b"]}),
        json!({"record": {"name": "a", "count": 2}}),
        json!({"type": "unit", "other": 1}),
        json!({"type": "newtype", "name": "a", "count": 1}),
        json!({"type": "record", "name": "a", "list": [1, 2]}),
        json!(5),
        json!("text"),
        json!({"name": "a", "type": "t", "count": 1}),
        json!({"note": "a", "flag": "quiet"}),
        json!({}),
        json!({"count": 1, "state": "s"}),
        json!({"external": {"record": {"name": "a"}}, "internal": [{"type": "unit"}],
               "untagged": {"name": "a"}, "generic": {"count": 1, "state": "w"}}),
    ]
}

#[test]
fn every_valid_document_decodes_with_both() {
    let mut decoded = 0;
    for doc in valid_documents() {
        for (ty, serde, ours) in outcomes(&doc) {
            assert_eq!(serde, ours, "{ty} from {doc}");
            decoded += usize::from(!ours.starts_with("None"));
        }
    }
    // Each document is valid for at least one declaration (most for several).
    assert!(decoded >= valid_documents().len(), "only {decoded} decoded");
}

#[test]
fn errors_say_where_and_what() {
    let err = decode::<by_json::Outer>(
        r#"{"name": "a", "type": "t", "list": [{"name": "b"}, {"name": 5}]}"#,
    )
    .expect_err("a number for a name");
    assert_eq!(
        err.to_string(),
        "list[1].name: invalid type: integer `5`, expected a string"
    );
    let err = decode::<by_json::Strict>(r#"{"name": "a", "extra": 1}"#).expect_err("unknown field");
    assert_eq!(
        err.to_string(),
        "unknown field `extra`, expected one of `name`, `note`, `count`, `flag`"
    );
    let err = decode::<by_json::External>(r#""nothing""#).expect_err("unknown variant");
    assert_eq!(
        err.to_string(),
        "unknown variant `nothing`, expected one of `unit`, `newtype`, `tuple`, `record`"
    );
    let err = decode::<by_json::Inner>(r#"{"count": 1}"#).expect_err("missing name");
    assert_eq!(err.to_string(), "missing field `name`");
    let err =
        decode::<by_json::Inner>(r#"{"name": "a", "count": 4294967296}"#).expect_err("too large");
    assert_eq!(
        err.to_string(),
        "count: invalid value: integer `4294967296`, expected u32"
    );
    // A syntax error keeps serde_json's line and column.
    match decode::<by_json::Inner>("{\"name\": ") {
        Err(DecodeError::Syntax(message)) => {
            assert!(message.contains("line 1 column"), "{message}")
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn the_serde_bridge_decodes_through_from_json() {
    // The derive's `serde::Deserialize` (used where serde decodes a FromJson type).
    let by_bridge: by_json::Holder =
        serde_json::from_str(r#"{"external": "unit", "generic": {"count": 2, "state": "w"}}"#)
            .expect("decodes");
    assert_eq!(by_bridge.external, Some(by_json::External::Unit));
    let err = serde_json::from_str::<by_json::Inner>(r#"{"name": 1}"#).expect_err("bad name");
    assert!(
        err.to_string()
            .starts_with("name: invalid type: integer `1`, expected a string"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Strings are escaped as serde_json escapes them (control characters, quotes,
    /// backslashes, any Unicode).
    #[test]
    fn strings_are_written_as_serde_json_writes_them(text in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f])*") {
        prop_assert_eq!(kljson::to_string(&text), serde_json::to_string(&text).expect("writes"));
    }

    /// Numbers too: integers at every width and sign, and floats (serde_json's shortest form;
    /// `null` for what is not finite).
    #[test]
    fn numbers_are_written_as_serde_json_writes_them(
        u in any::<u64>(), i in any::<i64>(), small in any::<i32>(), f in any::<f64>(),
    ) {
        use kljson::to_string;
        prop_assert_eq!(to_string(&u), serde_json::to_string(&u).expect("u64"));
        prop_assert_eq!(to_string(&(u as usize)), serde_json::to_string(&(u as usize)).expect("usize"));
        prop_assert_eq!(to_string(&(u as u32)), serde_json::to_string(&(u as u32)).expect("u32"));
        prop_assert_eq!(to_string(&i), serde_json::to_string(&i).expect("i64"));
        prop_assert_eq!(to_string(&small), serde_json::to_string(&small).expect("i32"));
        prop_assert_eq!(to_string(&f), serde_json::to_string(&f).expect("f64"));
    }
}

/// Any JSON value: nested arrays and objects (empty ones too), every kind of scalar.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        scalar(),
        any::<f64>().prop_map(Value::from),
        "(\\PC|[\\x00-\\x1f\"\\\\])*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("(\\PC|[\"\\\\\\n])*", inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A `Value` is written compactly as its `Display` writes it, and pretty as
    /// `serde_json::to_string_pretty` does (the export's format).
    #[test]
    fn values_are_written_as_serde_json_writes_them(value in any_value()) {
        use kljson::{pretty, to_string};
        prop_assert_eq!(to_string(&value), value.to_string());
        prop_assert_eq!(pretty(&value), serde_json::to_string_pretty(&value).expect("pretty"));
    }
}

#[test]
fn number_edges_are_written_as_serde_json_writes_them() {
    use kljson::to_string;
    for u in [0u64, 9, 10, 99, 100, u64::from(u32::MAX), u64::MAX] {
        assert_eq!(to_string(&u), serde_json::to_string(&u).expect("u64"));
    }
    for i in [0i64, -1, -9, -10, i64::MIN, i64::MAX] {
        assert_eq!(to_string(&i), serde_json::to_string(&i).expect("i64"));
    }
    for f in [
        0.0f64,
        -0.0,
        0.1,
        1.0,
        1e300,
        -2.5e-300,
        f64::NAN,
        f64::INFINITY,
        f64::MIN_POSITIVE,
    ] {
        assert_eq!(
            to_string(&f),
            serde_json::to_string(&f).expect("f64"),
            "{f}"
        );
    }
}
