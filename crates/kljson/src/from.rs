//! [`FromJson`] and its implementations for the JSON data model's values and the standard
//! containers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Error, Fields};

/// A value that decodes from a parsed JSON [`Value`].
pub trait FromJson: Sized {
    /// Decodes `value`.
    fn from_json(value: Value) -> Result<Self, Error>;

    /// What an absent field of this type decodes as: `None` when the field is required
    /// (`Option<T>` is the type whose absence is a value, as in serde).
    fn absent() -> Option<Self> {
        None
    }

    /// Decodes `value` into `self`, which holds a value of the type (a placeholder, a
    /// default): the same outcome as `from_json`, written in place. The derive writes it for
    /// structs with named fields (each field decoded straight into its place); on an error
    /// `self` holds a partly decoded value, which the caller drops.
    fn decode_into(&mut self, value: Value) -> Result<(), Error> {
        *self = Self::from_json(value)?;
        Ok(())
    }

    /// A value that stands in for a field that failed to decode, so that a decoder can go
    /// on without an early return per field (the first error is kept and returned once,
    /// and the value holding the stand-in is dropped). Never handed out.
    fn placeholder() -> Self;
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

/// `FromJson` for a type that is one variant of [`Value`] (serde's "expected ..." wording).
macro_rules! one_variant {
    ($($ty:ty => $variant:ident, $expected:literal;)+) => {
        $(impl FromJson for $ty {
            fn from_json(value: Value) -> Result<Self, Error> {
                match value {
                    Value::$variant(inner) => Ok(inner),
                    other => Err(Error::invalid_type(&other, $expected)),
                }
            }

            fn placeholder() -> Self {
                Self::default()
            }
        })+
    };
}

one_variant! {
    String => String, "a string";
    bool => Bool, "a boolean";
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

/// The entries of an object, or the error that `value` is not a map.
fn entries(value: Value) -> Result<Map<String, Value>, Error> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::invalid_type(&other, "a map")),
    }
}

/// A unit enum written as its name ([`named_enum!`](crate::named_enum)).
pub fn named<T: crate::names::Named>(value: Value) -> Result<T, Error> {
    let index = name_index(value, T::NAMES)?;
    // `named_enum!` lists each variant with its name: the two lists have the same length.
    T::VARIANTS
        .get(index)
        .copied()
        .ok_or_else(|| Error::new("a variant without a name"))
}

/// Where the name `value` holds is in `names` (not generic: one copy for every unit enum).
#[inline(never)]
fn name_index(value: Value, names: &'static [&'static str]) -> Result<usize, Error> {
    match value {
        Value::String(name) => {
            crate::names::index_of(names, &name).ok_or_else(|| Error::unknown_variant(&name, names))
        }
        other => Err(Error::invalid_type(&other, "variant identifier")),
    }
}

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

/// Decodes the entries of an object into a map through `insert` (a map type's
/// [`FromJson`]); an error names the entry's key.
pub fn decode_entries<K: JsonKey, T: FromJson>(
    value: Value,
    mut insert: impl FnMut(K, T),
) -> Result<(), Error> {
    for (k, v) in entries(value)? {
        let v = T::from_json(v).map_err(|e| e.in_field(&k))?;
        let key = K::from_key(k.clone()).map_err(|e| e.in_field(&k))?;
        insert(key, v);
    }
    Ok(())
}

impl<K: JsonKey + Ord, T: FromJson> FromJson for BTreeMap<K, T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        let mut decoded = Self::new();
        decode_entries(value, |k, v| {
            decoded.insert(k, v);
        })?;
        Ok(decoded)
    }

    fn placeholder() -> Self {
        Self::new()
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
