//! The crate's JSON codec: typed values from a parsed JSON [`Value`] ([`FromJson`]) and
//! typed values written as JSON text ([`ToJson`]), without serde's per-type code.
//!
//! serde's derived `Deserialize` writes, for every type, a visitor per format (fields by
//! name, by index and as bytes, a sequence form, each `Option` and `Vec` of each type), and
//! the wasm holds a copy of it for every deserializer the type meets. For the persisted
//! state, the requests and the settings that was about 80 KB of the gzipped wasm. A type
//! that derives [`FromJson`] (`knowledgelens_derive`) instead takes its fields out of a
//! parsed [`Value`] one call each: the text is parsed once by the one parser the wasm has,
//! and each type's decoder is a short list of [`Fields::take`] calls. [`ToJson`] is the
//! same on the way out: one small writer per type ([`Obj`], [`Arr`], [`write_str`]) instead
//! of serde's `Serialize` through serde_json's encoder.
//!
//! The derives read the type's `#[serde(...)]` attributes as serde does (they parse them
//! with `serde_derive_internals`, serde's own parser), so names, `rename_all`, `default`,
//! `skip`, `skip_serializing_if`, `flatten`, `deny_unknown_fields`, aliases and the enum
//! representations (external, internal and adjacent tags, untagged) mean what they mean to
//! serde. `FromJson` also writes a `serde::Deserialize` that goes through [`Value`], so
//! these types still decode anywhere serde is used. `tests/json.rs` decodes and writes
//! arbitrary JSON with both serde's derives and these for the same declarations, and
//! writes the crate's own values both ways, and requires the same outcome.
//!
//! The errors name where the problem is (`trajectory.thought.text: invalid type: ...`);
//! they cannot give a line and column, which a parse error of the text still does.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

pub use knowledgelens_derive::FromJson;
use serde_json::{Map, Value};

/// A value that decodes from a parsed JSON [`Value`].
pub trait FromJson: Sized {
    /// Decodes `value`.
    fn from_json(value: Value) -> Result<Self, Error>;

    /// What an absent field of this type decodes as: `None` when the field is required
    /// (`Option<T>` is the type whose absence is a value, as in serde).
    fn absent() -> Option<Self> {
        None
    }

    /// A value that stands in for a field that failed to decode, so that a decoder can go
    /// on without an early return per field (the first error is kept and returned once,
    /// and the value holding the stand-in is dropped). Never handed out.
    fn placeholder() -> Self;
}

/// Why a value did not decode, and where. Boxed, so that every decoder's `Result` stays
/// small (a pointer), which keeps the code that moves results around small too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorAt>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorAt {
    /// Where, outermost first (`state.trajectory[2].text`); empty at the top.
    path: String,
    /// What.
    message: String,
}

impl Error {
    /// An error at the current value.
    pub fn new(message: impl Into<String>) -> Self {
        Self::at_top(message.into())
    }

    #[cold]
    #[inline(never)]
    fn at_top(message: String) -> Self {
        Self(Box::new(ErrorAt {
            path: String::new(),
            message,
        }))
    }

    /// `found` is not `expected` (serde's wording: "invalid type: string \"x\", expected u32").
    #[cold]
    #[inline(never)]
    pub fn invalid_type(found: &Value, expected: &str) -> Self {
        Self::new(format!(
            "invalid type: {}, expected {expected}",
            Unexpected(found)
        ))
    }

    /// `name` is not among `names`.
    #[cold]
    #[inline(never)]
    pub fn unknown_variant(name: &str, names: &[&str]) -> Self {
        Self::new(format!(
            "unknown variant `{name}`, expected {}",
            OneOf(names)
        ))
    }

    /// The error inside field `name` of the current object.
    #[cold]
    #[inline(never)]
    pub fn in_field(mut self, name: &str) -> Self {
        self.0.path = match self.0.path.as_str() {
            "" => name.to_owned(),
            inner if inner.starts_with('[') => format!("{name}{inner}"),
            inner => format!("{name}.{inner}"),
        };
        self
    }

    /// The error inside item `index` of the current array.
    #[cold]
    #[inline(never)]
    pub fn in_item(mut self, index: usize) -> Self {
        self.0.path = match self.0.path.as_str() {
            "" => format!("[{index}]"),
            inner if inner.starts_with('[') => format!("[{index}]{inner}"),
            inner => format!("[{index}].{inner}"),
        };
        self
    }

    /// Where (`list[1].name`; empty for the value itself).
    pub fn path(&self) -> &str {
        &self.0.path
    }

    /// What went wrong, without where.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.path.is_empty() {
            f.write_str(&self.0.message)
        } else {
            write!(f, "{}: {}", self.0.path, self.0.message)
        }
    }
}

impl std::error::Error for Error {}

/// A value as serde names an unexpected one.
struct Unexpected<'a>(&'a Value);

impl fmt::Display for Unexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "boolean `{b}`"),
            Value::Number(n) if n.is_f64() => write!(f, "floating point `{n}`"),
            Value::Number(n) => write!(f, "integer `{n}`"),
            Value::String(s) => write!(f, "string {s:?}"),
            Value::Array(_) => f.write_str("sequence"),
            Value::Object(_) => f.write_str("map"),
        }
    }
}

/// serde's "one of `a`, `b`" list.
struct OneOf<'a>(&'a [&'a str]);

impl fmt::Display for OneOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("there are no variants"),
            [one] => write!(f, "`{one}`"),
            [a, b] => write!(f, "`{a}` or `{b}`"),
            names => {
                f.write_str("one of ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                Ok(())
            }
        }
    }
}

/// `text` decoded as a `T`: parsed by serde_json (whose errors give the line and column),
/// then decoded by [`FromJson`].
pub fn decode<T: FromJson>(text: &str) -> Result<T, DecodeError> {
    let value = parse(text)?;
    T::from_json(value).map_err(DecodeError::Invalid)
}

/// `text` parsed as JSON (not generic: the parser is compiled once).
pub fn parse(text: &str) -> Result<Value, DecodeError> {
    serde_json::from_str(text).map_err(|e| DecodeError::Syntax(e.to_string()))
}

/// Why [`decode`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The text is not JSON (serde_json's message, with the line and column).
    Syntax(String),
    /// The JSON is not a valid value of the type.
    Invalid(Error),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Syntax(message) => f.write_str(message),
            DecodeError::Invalid(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for DecodeError {}

/// serde's `Deserialize` for a [`FromJson`] type (the derive's bridge): the input becomes a
/// [`Value`] first, so this is compiled once per deserializer, not once per type and field.
pub fn deserialize<'de, T: FromJson, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
    T::from_json(value).map_err(serde::de::Error::custom)
}

/// The fields of an object being decoded: each [`Fields::take`] removes one.
pub struct Fields {
    map: Map<String, Value>,
    /// The first error of [`Fields::field`] and its kin.
    error: Option<Error>,
}

impl Fields {
    /// The fields of `value`, which must be an object (`expected` names the type in the
    /// error: "struct Settings").
    #[inline(never)]
    pub fn of(value: Value, expected: &str) -> Result<Self, Error> {
        match value {
            Value::Object(map) => Ok(Self { map, error: None }),
            other => Err(Error::invalid_type(&other, expected)),
        }
    }

    /// Field `name`, decoded; an absent one is [`FromJson::absent`] or an error.
    pub fn take<T: FromJson>(&mut self, name: &str) -> Result<T, Error> {
        match self.take_opt(name)? {
            Some(value) => Ok(value),
            None => T::absent().ok_or_else(|| missing(name)),
        }
    }

    /// Field `name`, decoded, if it is present.
    pub fn take_opt<T: FromJson>(&mut self, name: &str) -> Result<Option<T>, Error> {
        match self.remove(name) {
            Some(value) => T::from_json(value).map(Some).map_err(|e| e.in_field(name)),
            None => Ok(None),
        }
    }

    /// Field `name`, decoded; `default()` when it is absent (`#[serde(default)]`).
    pub fn take_or<T: FromJson>(&mut self, name: &str, default: fn() -> T) -> Result<T, Error> {
        Ok(self.take_opt(name)?.unwrap_or_else(default))
    }

    /// Field `name`, removed (not generic, so not inlined into every decoder).
    #[inline(never)]
    fn remove(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    /// Field `name` decoded by a serde `deserialize_with` function.
    pub fn take_with<T>(
        &mut self,
        name: &str,
        decode: fn(Value) -> Result<T, serde_json::Error>,
    ) -> Result<Option<T>, Error> {
        match self.map.remove(name) {
            Some(value) => decode(value)
                .map(Some)
                .map_err(|e| Error::new(e.to_string()).in_field(name)),
            None => Ok(None),
        }
    }

    /// Field `name`, decoded ([`Fields::take`]); after an error, which is kept for
    /// [`Fields::finish`], a placeholder.
    pub fn field<T: FromJson>(&mut self, name: &str) -> T {
        let result = self.take(name);
        self.keep(result)
    }

    /// Field `name`, decoded, or `default()` when absent ([`Fields::take_or`]); after an
    /// error, kept for [`Fields::finish`], a placeholder.
    pub fn field_or<T: FromJson>(&mut self, name: &str, default: fn() -> T) -> T {
        let result = self.take_or(name, default);
        self.keep(result)
    }

    /// Field `name`, decoded, if present; `None` when absent or after an error (kept for
    /// [`Fields::finish`]).
    pub fn field_opt<T: FromJson>(&mut self, name: &str) -> Option<T> {
        match self.take_opt(name) {
            Ok(value) => value,
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }

    /// The value of `result`, or a placeholder with its error kept for [`Fields::finish`]
    /// (the first error only).
    pub fn keep<T: FromJson>(&mut self, result: Result<T, Error>) -> T {
        match result {
            Ok(value) => value,
            Err(e) => {
                self.error.get_or_insert(e);
                T::placeholder()
            }
        }
    }

    /// A `#[serde(flatten)]` field: decoded from the fields not taken (which are then gone).
    pub fn flattened<T: FromJson>(&mut self) -> T {
        let rest = Value::Object(std::mem::take(&mut self.map));
        let result = T::from_json(rest);
        self.keep(result)
    }

    /// The first error the fields met, if any.
    pub fn finish(self) -> Result<(), Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The fields not taken, for a `#[serde(flatten)]` field.
    pub fn rest(self) -> Value {
        Value::Object(self.map)
    }

    /// An error for the first field not taken (`#[serde(deny_unknown_fields)]`; `names` are
    /// the fields the type has).
    pub fn deny_unknown(&mut self, names: &[&str]) {
        if let Some(unknown) = self.map.keys().next() {
            let unknown = Error::new(format!(
                "unknown field `{unknown}`, expected {}",
                OneOf(names)
            ));
            self.error.get_or_insert(unknown);
        }
    }
}

/// serde's "missing field `name`".
#[cold]
#[inline(never)]
pub fn missing(name: &str) -> Error {
    Error::new(format!("missing field `{name}`"))
}

/// An externally tagged enum's value: its variant's name and what the variant holds
/// (`"name"` holds nothing; `{"name": content}`).
pub fn external(value: Value, expected: &str) -> Result<(String, Option<Value>), Error> {
    match value {
        Value::String(name) => Ok((name, None)),
        Value::Object(map) if map.len() == 1 => {
            let (name, content) = map.into_iter().next().unwrap_or_default();
            Ok((name, Some(content)))
        }
        Value::Object(_) => Err(Error::new(format!(
            "invalid value: map, expected map with a single key ({expected})"
        ))),
        other => Err(Error::invalid_type(&other, expected)),
    }
}

/// What a variant with fields holds; an error for a variant written as a bare name.
pub fn content(content: Option<Value>, expected: &str) -> Result<Value, Error> {
    content.ok_or_else(|| Error::new(format!("invalid type: unit variant, expected {expected}")))
}

/// A unit variant's content: nothing, or `null`.
pub fn unit(content: Option<Value>) -> Result<(), Error> {
    match content {
        None | Some(Value::Null) => Ok(()),
        Some(other) => Err(Error::invalid_type(&other, "unit variant")),
    }
}

/// The items of a tuple (struct or variant) of `len` fields.
pub fn tuple(value: Value, len: usize, expected: &str) -> Result<std::vec::IntoIter<Value>, Error> {
    match value {
        Value::Array(items) if items.len() == len => Ok(items.into_iter()),
        Value::Array(items) => Err(Error::new(format!(
            "invalid length {}, expected {expected}",
            items.len()
        ))),
        other => Err(Error::invalid_type(&other, expected)),
    }
}

/// Item `index` of a tuple's items, decoded.
pub fn item<T: FromJson>(items: &mut std::vec::IntoIter<Value>, index: usize) -> Result<T, Error> {
    T::from_json(items.next().unwrap_or_default()).map_err(|e| e.in_item(index))
}

/// The error of an untagged enum no variant of which matched.
pub fn no_variant_matched(name: &str) -> Error {
    Error::new(format!(
        "data did not match any variant of untagged enum {name}"
    ))
}

// The values of the JSON data model.

impl FromJson for Value {
    fn from_json(value: Value) -> Result<Self, Error> {
        Ok(value)
    }

    fn placeholder() -> Self {
        Value::Null
    }
}

impl FromJson for String {
    fn from_json(value: Value) -> Result<Self, Error> {
        match value {
            Value::String(s) => Ok(s),
            other => Err(Error::invalid_type(&other, "a string")),
        }
    }

    fn placeholder() -> Self {
        String::new()
    }
}

impl FromJson for bool {
    fn from_json(value: Value) -> Result<Self, Error> {
        match value {
            Value::Bool(b) => Ok(b),
            other => Err(Error::invalid_type(&other, "a boolean")),
        }
    }

    fn placeholder() -> Self {
        false
    }
}

impl FromJson for f64 {
    fn from_json(value: Value) -> Result<Self, Error> {
        match &value {
            Value::Number(n) => n.as_f64().ok_or_else(|| Error::invalid_type(&value, "f64")),
            _ => Err(Error::invalid_type(&value, "f64")),
        }
    }

    fn placeholder() -> Self {
        0.0
    }
}

impl FromJson for f32 {
    fn from_json(value: Value) -> Result<Self, Error> {
        // As serde: the nearest f32.
        f64::from_json(value).map(|v| v as f32)
    }

    fn placeholder() -> Self {
        0.0
    }
}

/// An integer within `T`'s range (serde's errors for a float, a negative or a too large one).
fn integer<T: TryFrom<i128>>(value: Value, expected: &str) -> Result<T, Error> {
    let Value::Number(n) = &value else {
        return Err(Error::invalid_type(&value, expected));
    };
    let wide = match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => i128::from(u),
        (None, Some(i)) => i128::from(i),
        (None, None) => return Err(Error::invalid_type(&value, expected)),
    };
    T::try_from(wide)
        .map_err(|_| Error::new(format!("invalid value: integer `{n}`, expected {expected}")))
}

macro_rules! integers {
    ($($ty:ident),+) => {
        $(impl FromJson for $ty {
            fn from_json(value: Value) -> Result<Self, Error> {
                integer(value, stringify!($ty))
            }

            fn placeholder() -> Self {
                0
            }
        })+
    };
}

integers!(u8, u16, u32, u64, usize, i32, i64);

impl<T: FromJson> FromJson for Option<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        match value {
            Value::Null => Ok(None),
            other => T::from_json(other).map(Some),
        }
    }

    fn absent() -> Option<Self> {
        Some(None)
    }

    fn placeholder() -> Self {
        None
    }
}

impl<T: FromJson> FromJson for Box<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        T::from_json(value).map(Box::new)
    }

    fn placeholder() -> Self {
        Box::new(T::placeholder())
    }
}

impl<T: FromJson> FromJson for Arc<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        T::from_json(value).map(Arc::new)
    }

    fn placeholder() -> Self {
        Arc::new(T::placeholder())
    }
}

/// The items of an array (`expected` names the collection in the error).
fn items(value: Value) -> Result<Vec<Value>, Error> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(Error::invalid_type(&other, "a sequence")),
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        // A plain loop: `collect` into a `Result` compiles its adapter machinery per type.
        let items = items(value)?;
        let mut decoded = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            decoded.push(T::from_json(item).map_err(|e| e.in_item(i))?);
        }
        Ok(decoded)
    }

    fn placeholder() -> Self {
        Vec::new()
    }
}

impl<T: FromJson> FromJson for VecDeque<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        Vec::from_json(value).map(VecDeque::from)
    }

    fn placeholder() -> Self {
        VecDeque::new()
    }
}

/// The entries of an object.
fn entries(value: Value) -> Result<Map<String, Value>, Error> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::invalid_type(&other, "a map")),
    }
}

impl<T: FromJson, S: std::hash::BuildHasher + Default> FromJson for HashMap<String, T, S> {
    fn from_json(value: Value) -> Result<Self, Error> {
        entries(value)?
            .into_iter()
            .map(|(k, v)| match T::from_json(v) {
                Ok(v) => Ok((k, v)),
                Err(e) => Err(e.in_field(&k)),
            })
            .collect()
    }

    fn placeholder() -> Self {
        HashMap::default()
    }
}

/// A unit enum written as its name (`types::names::named_enum!`).
pub fn named<T: super::names::Named>(value: Value) -> Result<T, Error> {
    match value {
        Value::String(name) => {
            super::names::from_name(&name).ok_or_else(|| Error::unknown_variant(&name, T::NAMES))
        }
        other => Err(Error::invalid_type(&other, "variant identifier")),
    }
}

/// `serde::Deserialize` for a type with a hand-written [`FromJson`] (what the derive writes
/// beside its own).
macro_rules! deserialize_via_json {
    ($ty:ty) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::types::json::deserialize(deserializer)
            }
        }
    };
}
pub(crate) use deserialize_via_json;

/// A key of a JSON object as a map key (`String`, or a unit enum by its name).
pub trait JsonKey: Sized {
    /// The key `key`.
    fn from_key(key: String) -> Result<Self, Error>;
}

impl JsonKey for String {
    fn from_key(key: String) -> Result<Self, Error> {
        Ok(key)
    }
}

impl<K: JsonKey + Ord, T: FromJson> FromJson for BTreeMap<K, T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        let mut decoded = BTreeMap::new();
        for (k, v) in entries(value)? {
            let v = T::from_json(v).map_err(|e| e.in_field(&k))?;
            let key = K::from_key(k.clone()).map_err(|e| e.in_field(&k))?;
            decoded.insert(key, v);
        }
        Ok(decoded)
    }

    fn placeholder() -> Self {
        BTreeMap::new()
    }
}

impl<T: FromJson> FromJson for std::ops::Range<T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        let mut fields = Fields::of(value, "struct Range")?;
        let start = fields.take("start")?;
        let end = fields.take("end")?;
        Ok(start..end)
    }

    fn placeholder() -> Self {
        T::placeholder()..T::placeholder()
    }
}

// Writing JSON: the other half of the codec, for the same reason (one small writer per
// type, no serializer generated per type and format).

pub use knowledgelens_derive::ToJson;

/// A value that writes itself as JSON text, exactly as its derived `serde::Serialize` does
/// through `serde_json::to_string` (`tests/json.rs` checks that on the crate's types).
pub trait ToJson {
    /// Appends the value's JSON to `out`.
    fn write_json(&self, out: &mut String);

    /// Appends the value's fields to an object being written (`#[serde(flatten)]` and
    /// internally tagged newtype variants). Only structs with named fields have fields.
    fn write_fields(&self, obj: &mut Obj<'_>) {
        let _ = obj;
    }
}

/// The JSON text of `value`.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> String {
    let mut out = String::new();
    value.write_json(&mut out);
    out
}

/// An object or array being written: the opening bracket is out, and a comma goes before
/// every member but the first.
struct Open<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Open<'a> {
    fn new(out: &'a mut String, bracket: char) -> Self {
        out.push(bracket);
        Self { out, first: true }
    }

    /// Where the next member goes (after its comma).
    fn next(&mut self) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out
    }
}

/// An object being written: `{`, then `"name":value` pairs, then `}` at [`Obj::end`].
pub struct Obj<'a>(Open<'a>);

impl<'a> Obj<'a> {
    /// Opens an object.
    pub fn new(out: &'a mut String) -> Self {
        Self(Open::new(out, '{'))
    }

    /// Writes `"name":` (after a comma if needed): the value must follow.
    #[inline(never)]
    pub fn key(&mut self, name: &str) {
        let out = self.0.next();
        write_str(out, name);
        out.push(':');
    }

    /// Writes a field.
    pub fn field<T: ToJson + ?Sized>(&mut self, name: &str, value: &T) {
        self.key(name);
        value.write_json(self.0.out);
    }

    /// Where a value after [`Obj::key`] is written.
    pub fn out(&mut self) -> &mut String {
        self.0.out
    }

    /// Closes the object.
    pub fn end(self) {
        self.0.out.push('}');
    }
}

/// An array being written.
pub struct Arr<'a>(Open<'a>);

impl<'a> Arr<'a> {
    /// Opens an array.
    pub fn new(out: &'a mut String) -> Self {
        Self(Open::new(out, '['))
    }

    /// Writes an item.
    pub fn item<T: ToJson + ?Sized>(&mut self, value: &T) {
        value.write_json(self.0.next());
    }

    /// Closes the array.
    pub fn end(self) {
        self.0.out.push(']');
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

impl ToJson for str {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for String {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for bool {
    fn write_json(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

/// Writes an integer (not generic: one copy of the digit loop).
#[inline(never)]
fn write_int(out: &mut String, negative: bool, mut magnitude: u64) {
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

macro_rules! unsigned_to_json {
    ($($ty:ty),+) => {
        $(impl ToJson for $ty {
            fn write_json(&self, out: &mut String) {
                write_int(out, false, *self as u64);
            }
        })+
    };
}

unsigned_to_json!(u8, u16, u32, u64, usize);

macro_rules! signed_to_json {
    ($($ty:ty),+) => {
        $(impl ToJson for $ty {
            fn write_json(&self, out: &mut String) {
                write_int(out, *self < 0, i64::from(*self).unsigned_abs());
            }
        })+
    };
}

signed_to_json!(i32, i64);

impl ToJson for f64 {
    fn write_json(&self, out: &mut String) {
        // serde_json's own float writer (and `null` for a number that is not finite).
        write_value(out, &Value::from(*self));
    }
}

impl ToJson for f32 {
    fn write_json(&self, out: &mut String) {
        write_value(out, &Value::from(*self));
    }
}

/// Writes a [`Value`] (serde_json's compact writer; not generic).
#[inline(never)]
fn write_value(out: &mut String, value: &Value) {
    use std::fmt::Write;
    let _ = write!(out, "{value}");
}

impl ToJson for Value {
    fn write_json(&self, out: &mut String) {
        write_value(out, self);
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson + ?Sized> ToJson for Box<T> {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson + ?Sized> ToJson for Arc<T> {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, out: &mut String) {
        match self {
            Some(value) => value.write_json(out),
            None => out.push_str("null"),
        }
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        if let Some(value) = self {
            value.write_fields(obj);
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, out: &mut String) {
        let mut arr = Arr::new(out);
        for item in self {
            arr.item(item);
        }
        arr.end();
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, out: &mut String) {
        self.as_slice().write_json(out);
    }
}

impl<T: ToJson> ToJson for VecDeque<T> {
    fn write_json(&self, out: &mut String) {
        let mut arr = Arr::new(out);
        for item in self {
            arr.item(item);
        }
        arr.end();
    }
}

/// A map key as the text JSON writes it.
pub trait ToJsonKey {
    /// The key.
    fn json_key(&self) -> &str;
}

impl ToJsonKey for String {
    fn json_key(&self) -> &str {
        self
    }
}

impl<K: ToJsonKey, T: ToJson> ToJson for BTreeMap<K, T> {
    fn write_json(&self, out: &mut String) {
        let mut obj = Obj::new(out);
        for (k, v) in self {
            obj.field(k.json_key(), v);
        }
        obj.end();
    }
}

impl<K: ToJsonKey, T: ToJson, S> ToJson for HashMap<K, T, S> {
    fn write_json(&self, out: &mut String) {
        let mut obj = Obj::new(out);
        for (k, v) in self {
            obj.field(k.json_key(), v);
        }
        obj.end();
    }
}

impl<T: ToJson> ToJson for std::ops::Range<T> {
    fn write_json(&self, out: &mut String) {
        let mut obj = Obj::new(out);
        obj.field("start", &self.start);
        obj.field("end", &self.end);
        obj.end();
    }
}
