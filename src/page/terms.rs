//! [`Terms`]: the page index's word table. Each distinct word is kept once, with its
//! postings, and found by its FNV-1a hash in an open-addressed table (linear probing, never
//! more than half full). Written for this one map instead of std's `HashMap`, the crate's
//! last: the wasm then carries no hash table at all (README, Benchmarks). Pure.

use std::hash::Hasher;

/// Word -> postings ((passage, occurrences) in passage order).
#[derive(Debug, Default)]
pub(super) struct Terms {
    /// Slot -> 1 + the word's position in `terms`, or 0 for an empty slot; empty or a
    /// power of two long.
    slots: Vec<u32>,
    terms: Vec<Term>,
}

#[derive(Debug)]
struct Term {
    hash: u64,
    word: Box<str>,
    postings: Vec<(u32, u32)>,
}

impl Terms {
    /// Where `word` (with FNV-1a hash `hash`) is: `Ok(its position in terms)`, or
    /// `Err(the empty slot it would take)`. The table is not empty.
    fn find(&self, hash: u64, word: &str) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        // The low bits of the hash pick the slot (FNV-1a's are well mixed).
        let mut at = hash as usize & mask;
        loop {
            match self.slots[at] {
                0 => return Err(at),
                n => {
                    let term = &self.terms[n as usize - 1];
                    if term.hash == hash && *term.word == *word {
                        return Ok(n as usize - 1);
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The postings of `word`, if the page has it.
    pub(super) fn get(&self, word: &str) -> Option<&[(u32, u32)]> {
        if self.slots.is_empty() {
            return None;
        }
        let i = self.find(fnv(word), word).ok()?;
        Some(&self.terms[i].postings)
    }

    /// Adds `posting` to `word`'s (with FNV-1a hash `hash`).
    pub(super) fn push(&mut self, hash: u64, word: &str, posting: (u32, u32)) {
        if self.terms.len() * 2 >= self.slots.len() {
            self.grow();
        }
        match self.find(hash, word) {
            Ok(i) => self.terms[i].postings.push(posting),
            Err(at) => {
                self.terms.push(Term {
                    hash,
                    word: word.into(),
                    postings: vec![posting],
                });
                self.slots[at] = u32::try_from(self.terms.len()).unwrap_or(u32::MAX);
            }
        }
    }

    /// Doubles the table (64 slots at first) and places every word again.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(64);
        let mask = size - 1;
        let mut slots = vec![0u32; size];
        for (i, term) in self.terms.iter().enumerate() {
            let mut at = term.hash as usize & mask;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = u32::try_from(i + 1).unwrap_or(u32::MAX);
        }
        self.slots = slots;
    }

    /// The number of distinct words.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.terms.len()
    }
}

/// FNV-1a, 64 bits: the index's hash of words (short, and not chosen to collide with each
/// other: a page could only slow its own index down; several times faster than SipHash).
pub struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The FNV-1a hash of `word`.
pub(super) fn fnv(word: &str) -> u64 {
    let mut hasher = FnvHasher::default();
    hasher.write(word.as_bytes());
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::{fnv, Terms};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every word's postings are the ones pushed to it, in order, as with a `HashMap`
        /// (words from a small alphabet, so that many repeat and the table grows).
        #[test]
        fn keeps_what_a_hash_map_keeps(pushes in prop::collection::vec(("[a-d]{1,3}", 0u32..9), 0..400)) {
            let mut ours = Terms::default();
            let mut theirs: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
            for (i, (word, n)) in pushes.iter().enumerate() {
                let posting = (i as u32, *n);
                ours.push(fnv(word), word, posting);
                theirs.entry(word.clone()).or_default().push(posting);
            }
            prop_assert_eq!(ours.len(), theirs.len());
            for (word, postings) in &theirs {
                prop_assert_eq!(ours.get(word), Some(&postings[..]));
            }
            prop_assert_eq!(ours.get("zz"), None);
        }
    }

    #[test]
    fn an_empty_table_has_no_word() {
        assert_eq!(Terms::default().get("word"), None);
    }

    /// Words whose hashes share their low bits probe past each other.
    #[test]
    fn colliding_slots_probe_on() {
        let mut terms = Terms::default();
        terms.push(5, "a", (0, 1));
        terms.push(5 + 64, "b", (1, 1));
        terms.push(5, "c", (2, 1));
        terms.push(5 + 64, "b", (3, 2));
        assert_eq!(terms.find(5, "a"), Ok(0));
        assert_eq!(terms.find(5 + 64, "b"), Ok(1));
        assert_eq!(terms.find(5, "c"), Ok(2));
        assert_eq!(terms.terms[1].postings, [(1, 1), (3, 2)]);
        assert_eq!(terms.find(5, "d"), Err(8));
    }
}
