//! [`VecMap`]: an ordered map kept as one sorted `Vec` of pairs, for the small maps of the
//! run state and the stream decoders (a few keys each). It iterates, compares and is
//! written to JSON in key order, as `BTreeMap` is, so the saved state reads the same; each
//! key and value type costs a binary search and a `Vec` insert instead of a B-tree's node
//! code: replacing the eight `BTreeMap`s took 9.3 KB gzipped off the wasm (README,
//! Benchmarks).

use std::borrow::Borrow;

use kljson::{Error, FromJson, JsonKey, ToJson, ToJsonKey, Value};

/// An ordered map of few keys: a `Vec` of `(key, value)` sorted by key, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecMap<K, V> {
    pairs: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> VecMap<K, V> {
    /// An empty map.
    #[must_use]
    pub const fn new() -> Self {
        Self { pairs: Vec::new() }
    }

    /// Whether the map has no keys.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.pairs.clear();
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.pairs.iter().map(|(k, v)| (k, v))
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.pairs.iter().map(|(_, v)| v)
    }

    /// The values in key order, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.pairs.iter_mut().map(|(_, v)| v)
    }

    /// The values in key order, taken.
    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.pairs.into_iter().map(|(_, v)| v)
    }
}

impl<K: Ord, V> VecMap<K, V> {
    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.pairs.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value of `key`, if it has one.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.pairs[i].1)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// The value of `key` to change, if it has one.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &mut self.pairs[i].1)
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.pairs[i].1, value)),
            Err(i) => {
                self.pairs.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| self.pairs.remove(i).1)
    }

    /// The value of `key`, inserted from `make` first if it has none.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.pairs.insert(i, (key, make()));
                i
            }
        };
        &mut self.pairs[i].1
    }

    /// The value of `key`, inserted as `V::default()` first if it has none.
    pub fn get_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        self.get_or_insert_with(key, V::default)
    }
}

impl<K: Borrow<Q> + Ord, Q: Ord + ?Sized, V> std::ops::Index<&Q> for VecMap<K, V> {
    type Output = V;

    /// The value of `key`.
    ///
    /// # Panics
    /// If `key` has none, as `BTreeMap`'s index does.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no value for the key")
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    /// Later pairs win over earlier ones with the same key, as in `BTreeMap`.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = Self::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.iter().map(|(k, v)| (k, v))
    }
}

impl<K: serde::Serialize, V: serde::Serialize> serde::Serialize for VecMap<K, V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

#[cfg(not(target_arch = "wasm32"))] // the schemas are for protocol::gen, natively
/// A JSON object whose keys are `K`'s names and whose values are `V`s.
impl<K: schemars::JsonSchema, V: schemars::JsonSchema> schemars::JsonSchema for VecMap<K, V> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("VecMap_{}_{}", K::schema_name(), V::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "propertyNames": generator.subschema_for::<K>(),
            "additionalProperties": generator.subschema_for::<V>(),
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

impl<'de, K, V> serde::Deserialize<'de> for VecMap<K, V>
where
    K: serde::Deserialize<'de> + Ord,
    V: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<K, V>::deserialize(deserializer)?;
        Ok(map.into_iter().collect())
    }
}

impl<K: JsonKey + Ord, T: FromJson> FromJson for VecMap<K, T> {
    fn from_json(value: Value) -> Result<Self, Error> {
        let mut decoded = Self::new();
        kljson::decode_entries(value, |k, v| {
            decoded.insert(k, v);
        })?;
        Ok(decoded)
    }

    fn placeholder() -> Self {
        Self::new()
    }
}

impl<K: ToJsonKey, T: ToJson> ToJson for VecMap<K, T> {
    fn write_json(&self, out: &mut String) {
        kljson::write_entries(out, self);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::VecMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u16),
        Remove(u8),
        Bump(u8),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..24, any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => (0u8..24).prop_map(Op::Remove),
            3 => (0u8..24).prop_map(Op::Bump),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Every operation gives what `BTreeMap`'s gives, and the map iterates in the
        /// same order.
        #[test]
        fn behaves_as_a_btree_map(ops in prop::collection::vec(op(), 0..80)) {
            let mut ours: VecMap<u8, u16> = VecMap::new();
            let mut theirs: BTreeMap<u8, u16> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(ours.insert(k, v), theirs.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(ours.remove(&k), theirs.remove(&k)),
                    Op::Bump(k) => {
                        *ours.get_or_default(k) = ours.get(&k).copied().unwrap_or(0).wrapping_add(1);
                        let b = theirs.entry(k).or_default();
                        *b = b.wrapping_add(1);
                    }
                    Op::Clear => {
                        ours.clear();
                        theirs.clear();
                    }
                }
                prop_assert_eq!(ours.len(), theirs.len());
                prop_assert_eq!(ours.is_empty(), theirs.is_empty());
                let a: Vec<(u8, u16)> = ours.iter().map(|(k, v)| (*k, *v)).collect();
                let b: Vec<(u8, u16)> = theirs.iter().map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(a, b);
            }
            for k in 0..24u8 {
                prop_assert_eq!(ours.get(&k), theirs.get(&k));
            }
        }

        /// Collecting keeps the last value of a repeated key, as `BTreeMap` does.
        #[test]
        fn collects_as_a_btree_map(pairs in prop::collection::vec((0u8..16, any::<u16>()), 0..40)) {
            let ours: VecMap<u8, u16> = pairs.iter().copied().collect();
            let theirs: BTreeMap<u8, u16> = pairs.iter().copied().collect();
            let a: Vec<u16> = ours.into_values().collect();
            let b: Vec<u16> = theirs.into_values().collect();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn looks_up_string_keys_by_str() {
        let mut map: VecMap<String, u32> = VecMap::new();
        map.insert("b".to_string(), 2);
        map.insert("a".to_string(), 1);
        *map.get_mut("b").unwrap() += 10;
        assert_eq!(map.get("a"), Some(&1));
        assert_eq!(map.get("b"), Some(&12));
        assert_eq!(map.get("c"), None);
        assert_eq!(map.values().copied().collect::<Vec<_>>(), vec![1, 12]);
    }
}
