//! kljson, a small JSON codec for WebAssembly: typed values from a parsed JSON [`Value`] ([`FromJson`]) and
//! typed values written as JSON text ([`ToJson`]), without serde's per-type code.
//!
//! serde's derived `Deserialize` writes, for every type, a visitor per format (fields by
//! name, by index and as bytes, a sequence form, each `Option` and `Vec` of each type), and
//! the wasm holds a copy of it for every deserializer the type meets. For the persisted
//! state, the requests and the settings of the program this was written for (KnowledgeLens)
//! that was about 80 KB of the gzipped wasm; `README.md` has the measurements. A type
//! that derives [`FromJson`] (the `kljson-derive` crate) instead takes its fields out of a
//! parsed [`Value`] one call each: the text is parsed once by the one parser the wasm has,
//! and each type's decoder is a short list of calls to [`Fields::required`] and
//! [`Fields::optional`], which decode each field in place through its type's [`Slot`]. [`ToJson`] is the
//! same on the way out: one small writer per type ([`Obj`], [`Arr`], [`write_str`]) instead
//! of serde's `Serialize` through serde_json's encoder.
//!
//! The derives read the type's `#[serde(...)]` attributes as serde does (they parse them
//! with `serde_derive_internals`, serde's own parser), so names, `rename_all`, `default`,
//! `skip`, `skip_serializing_if`, `flatten`, `deny_unknown_fields`, aliases and the enum
//! representations (external, internal and adjacent tags, untagged) mean what they mean to
//! serde. `FromJson` also writes a `serde::Deserialize` that goes through [`Value`], so
//! these types still decode anywhere serde is used. `tests/parity/` decodes and writes
//! arbitrary JSON with both serde's derives and these for the same declarations, and
//! holds [`parse_value`] to serde_json's parser, and requires the same outcome.
//!
//! [`names::named_enum!`](crate::named_enum) does the same for enums of unit variants
//! written as their names, and [`json!`] builds a [`Value`] as `serde_json::json!` does.
//!
//! The errors name where the problem is (`trajectory.thought.text: invalid type: ...`);
//! they cannot give a line and column, which a parse error of the text still does.

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

#[doc(hidden)]
pub mod build;
mod error;
mod fields;
mod from;
pub mod names;
mod parse;
mod to;
mod value;

pub use build::ToValue;
pub use error::Error;
pub use fields::{content, external, item, missing, no_variant_matched, tuple, unit, Fields, Slot};
pub use from::{decode_entries, named, FromJson, JsonKey};
pub use kljson_derive::{FromJson, ToJson};
pub use parse::parse_value;
pub use to::{to_string, write_entries, Arr, Obj, ToJson, ToJsonKey};
pub use value::{pretty, write_str, write_value};

use std::fmt;

pub use serde_json::{Map, Value};

/// `text` decoded as a `T`: parsed by [`parse`] (whose errors give the line and column),
/// then decoded by [`FromJson`].
pub fn decode<T: FromJson>(text: &str) -> Result<T, DecodeError> {
    let value = parse(text)?;
    T::from_json(value).map_err(DecodeError::Invalid)
}

/// `text` parsed as JSON by the crate's parser ([`parse_value`]: what serde_json accepts,
/// with its errors).
pub fn parse(text: &str) -> Result<Value, DecodeError> {
    parse_value(text).map_err(DecodeError::Syntax)
}

/// Why [`decode`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The text is not JSON (serde_json's words, with the line and column).
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

/// `serde::Deserialize` for a type with a hand-written [`FromJson`] (what the derive writes
/// beside its own).
#[macro_export]
macro_rules! deserialize_via_json {
    ($ty:ty) => {
        impl<'de> $crate::__private::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                $crate::deserialize(deserializer)
            }
        }
    };
}

/// What the macros and the derives' code name, so that a crate using them needs no
/// dependency on serde or serde_json of its own.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}
