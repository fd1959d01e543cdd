//! Decoding the crate's unit enums (stored and sent as snake_case strings) through one shared
//! visitor instead of serde's derived enum decoder per type, which cost about 1.3 KB of wasm
//! each. [`named_enum!`] writes the `Deserialize` impl and the names; the enums keep serde's
//! derived `Serialize`, and `tests/names.rs` checks that both agree for every variant. The
//! errors are serde's own ("unknown variant `x`, expected one of ...").

use serde::de::{self, Deserializer, Visitor};

/// An enum of unit variants written as their names.
pub trait Named: Copy + 'static {
    /// Every variant, in the order of [`Named::NAMES`].
    const ALL: &'static [Self];
    /// The variants' names, as serde's `rename_all = "snake_case"` writes them.
    const NAMES: &'static [&'static str];
}

/// Decodes a [`Named`] enum from its name.
pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    let index = deserializer.deserialize_str(NameVisitor(T::NAMES))?;
    T::ALL
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
        (self.0.iter().position(|name| *name == value))
            .ok_or_else(|| E::unknown_variant(value, self.0))
    }
}

/// `named_enum!(Type { Variant = "variant", ... })`: [`Named`] and `Deserialize` for a unit
/// enum. Every variant must be listed (a variant left out does not compile).
macro_rules! named_enum {
    ($ty:ident { $($variant:ident = $name:literal),+ $(,)? }) => {
        impl $crate::types::names::Named for $ty {
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            const NAMES: &'static [&'static str] = &[$($name),+];
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::types::names::deserialize(deserializer)
            }
        }

        // Every variant is listed: a new one fails this match until it is.
        const _: fn($ty) = |value| match value {
            $($ty::$variant => ()),+
        };
    };
}
pub(crate) use named_enum;
