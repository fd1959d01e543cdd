//! Taking an object's fields out one by one, and the other pieces the derived decoders are
//! made of (enum forms, tuples, the errors serde words).

use serde_json::{Map, Value};

use super::{Error, FromJson};

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

    /// Field `name` decoded into `slot`, which holds the field's placeholder; an absent
    /// field is [`FromJson::absent`] or an error. An error is kept for [`Fields::finish`]
    /// (the slot may then hold a partly decoded value, which the caller drops). Not
    /// generic: every derived field of every type goes through this one function and its
    /// type's [`Slot`] (README, Benchmarks).
    #[inline(never)]
    pub fn required(&mut self, name: &str, slot: &mut dyn Slot) {
        let result = match self.remove(name) {
            Some(value) => slot.decode(value).map_err(|e| e.in_field(name)),
            None if slot.set_absent() => Ok(()),
            None => Err(missing(name)),
        };
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    /// Field `name` decoded into `slot`, which holds the field's default: an absent field
    /// leaves it (`#[serde(default)]`). An error is kept for [`Fields::finish`].
    #[inline(never)]
    pub fn optional(&mut self, name: &str, slot: &mut dyn Slot) {
        if let Some(value) = self.remove(name) {
            if let Err(e) = slot.decode(value) {
                self.error.get_or_insert(e.in_field(name));
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
            let unknown = Error::unknown_field(unknown, names);
            self.error.get_or_insert(unknown);
        }
    }
}

/// A field decoded in place ([`Fields::required`], [`Fields::optional`]): what a type's
/// decoder is to the one non-generic field function.
pub trait Slot {
    /// Replaces the value with `value` decoded ([`FromJson::decode_into`]); after an error
    /// the value may be partly decoded.
    fn decode(&mut self, value: Value) -> Result<(), Error>;

    /// Replaces the value with what an absent field decodes as; `false` when absence is an
    /// error ([`FromJson::absent`]).
    fn set_absent(&mut self) -> bool;
}

impl<T: FromJson> Slot for T {
    fn decode(&mut self, value: Value) -> Result<(), Error> {
        self.decode_into(value)
    }

    fn set_absent(&mut self) -> bool {
        match T::absent() {
            Some(value) => {
                *self = value;
                true
            }
            None => false,
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
