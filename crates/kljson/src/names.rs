//! Enums of unit variants stored and sent as their names (snake_case strings):
//! [`named_enum!`](crate::named_enum) lists an enum's variants and names once and writes
//! `ALL`, `name`, `from_name`, `Deserialize`, [`FromJson`](crate::FromJson) and
//! [`ToJson`](crate::ToJson) from that list. Decoding goes through one shared visitor instead of serde's derived enum
//! decoder per type, which cost about 1.3 KB of wasm each; the errors are serde's own
//! ("unknown variant `x`, expected one of ..."). The enums keep serde's derived `Serialize`;
//! `tests/parity/names.rs` holds the macro to serde's derives.

use serde::de::{self, Deserializer, Visitor};

/// An enum of unit variants written as their names.
pub trait Named: Copy + 'static {
    /// Every variant, in the order of [`Named::NAMES`].
    const VARIANTS: &'static [Self];
    /// The variants' names, as serde's `rename_all = "snake_case"` writes them.
    const NAMES: &'static [&'static str];
}

/// The variant of `T` named `name`, if there is one.
pub fn from_name<T: Named>(name: &str) -> Option<T> {
    T::VARIANTS.get(index_of(T::NAMES, name)?).copied()
}

/// Where `name` is in `names` (the variant's index). Not generic: the one name lookup of
/// every unit enum, for `from_name`, serde's visitor and `types::json`'s decoder.
#[inline(never)]
pub fn index_of(names: &[&str], name: &str) -> Option<usize> {
    names.iter().position(|n| *n == name)
}

/// Decodes a [`Named`] enum from its name.
pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    let index = deserializer.deserialize_str(NameVisitor(T::NAMES))?;
    T::VARIANTS
        .get(index)
        .copied()
        .ok_or_else(|| de::Error::custom("a variant without a name"))
}

/// Finds a name among the variants' names (the index is the variant's).
struct NameVisitor(&'static [&'static str]);

impl Visitor<'_> for NameVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<usize, E> {
        index_of(self.0, value).ok_or_else(|| E::unknown_variant(value, self.0))
    }
}

/// `named_enum!(Type { Variant = "variant", ... })`, with every variant in declaration order:
/// the one list of a unit enum's variants and names. It writes `Type::ALL` (every variant, in
/// declaration order), `Type::name` (the variant's name; its `match` does not compile while a
/// variant is left out), `Type::from_name`, [`Named`] and `Deserialize`.
#[macro_export]
macro_rules! named_enum {
    ($ty:ident { $($variant:ident = $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: [Self; [$($name),+].len()] = [$(Self::$variant),+];

            /// The variant's name, as it is stored and sent (serde's snake_case).
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name),+
                }
            }

            /// The variant named `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                $crate::names::from_name(name)
            }
        }

        impl $crate::names::Named for $ty {
            const VARIANTS: &'static [Self] = &Self::ALL;
            const NAMES: &'static [&'static str] = &[$($name),+];
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::names::deserialize(deserializer)
            }
        }

        impl $crate::FromJson for $ty {
            fn from_json(value: $crate::Value) -> Result<Self, $crate::Error> {
                $crate::named(value)
            }

            fn placeholder() -> Self {
                Self::ALL[0]
            }
        }

        impl $crate::ToJson for $ty {
            fn write_json(&self, out: &mut String) {
                $crate::write_str(out, self.name());
            }
        }

        impl $crate::ToJsonKey for $ty {
            fn json_key(&self) -> &str {
                self.name()
            }
        }

        impl $crate::JsonKey for $ty {
            fn from_key(key: String) -> Result<Self, $crate::Error> {
                $crate::named($crate::Value::String(key))
            }
        }
    };
}
