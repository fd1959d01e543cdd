//! Lexical retrieval over the passages of a page: Okapi BM25 (k1 = 1.2, b = 0.75) on
//! words (runs of letters and digits, case-folded by `types::case`; each CJK ideograph, kana
//! or hangul syllable a word of its own), plus a phrase rule: a passage that contains the whole query
//! (case and spacing aside) ranks above every passage that does not. Ties keep page order.
//! Hand-written rather than the `bm25` crate: this is ~150 lines with no dependency, where
//! the crate brings a tokenizer, stemmers and stop-word lists the wasm would carry. Pure.

use std::cell::RefCell;

use super::passages::{split, Passage};
use super::terms::{fnv, Terms};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A page's passages and their index.
#[derive(Debug)]
pub struct PageIndex {
    passages: Vec<Passage>,
    /// Word -> (passage, occurrences) in passage order.
    postings: Terms,
    /// Words per passage.
    lengths: Vec<u32>,
    average_length: f32,
    /// The last context chosen from it: (question, budget, passages). Every request of a run
    /// gives the model the same passages, so they are chosen once.
    last_context: RefCell<Option<(String, usize, super::Excerpt)>>,
}

/// A retrieved passage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Its position in [`PageIndex::passages`] (its id is `p{index + 1}`).
    pub index: usize,
    /// Its score (higher is better).
    pub score: f32,
}

impl PageIndex {
    /// Splits `text` into passages and indexes them.
    pub fn build(text: &str) -> Self {
        let passages = split(text);
        let mut postings = Terms::default();
        let mut lengths = Vec::with_capacity(passages.len());
        let mut lowered = String::new();
        for (i, passage) in passages.iter().enumerate() {
            let raw = &text[passage.range.clone()];
            // Most text needs no allocation to lower-case: ASCII is lowered in place.
            let lowered: &str = if raw.is_ascii() {
                lowered.clear();
                lowered.push_str(raw);
                lowered.make_ascii_lowercase();
                &lowered
            } else {
                lowered = crate::types::case::fold(raw);
                &lowered
            };
            // Occurrences per word: the passage's words sorted, counted in runs. Sorted by
            // hash first, so that words are compared byte by byte only where they are equal
            // (wasm's memcmp goes a byte at a time).
            let mut found: Vec<(u64, &str)> = words(lowered).map(|w| (fnv(w), w)).collect();
            lengths.push(u32::try_from(found.len()).unwrap_or(u32::MAX));
            found.sort_unstable();
            let id = u32::try_from(i).unwrap_or(u32::MAX);
            let mut at = 0;
            while at < found.len() {
                let (hash, word) = found[at];
                let same = |&&(h, w): &&(u64, &str)| h == hash && w == word;
                let run = found[at..].iter().take_while(same).count();
                let n = u32::try_from(run).unwrap_or(u32::MAX);
                postings.push(hash, word, (id, n));
                at += run;
            }
        }
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let average_length = if lengths.is_empty() {
            1.0
        } else {
            (total as f32 / lengths.len() as f32).max(1.0)
        };
        Self {
            passages,
            postings,
            lengths,
            average_length,
            last_context: RefCell::new(None),
        }
    }

    /// What `choose` gives for `query` and `budget`: remembered from the last call with the
    /// same two, else chosen now (and remembered).
    pub(super) fn remembered_context(
        &self,
        query: &str,
        budget: usize,
        choose: impl FnOnce() -> super::Excerpt,
    ) -> super::Excerpt {
        if let Some((q, b, chosen)) = self.last_context.borrow().as_ref() {
            if q == query && *b == budget {
                return chosen.clone();
            }
        }
        let chosen = choose();
        *self.last_context.borrow_mut() = Some((query.to_string(), budget, chosen.clone()));
        chosen
    }

    /// The passages, in page order.
    pub fn passages(&self) -> &[Passage] {
        &self.passages
    }

    /// The `k` passages that best match `query` in `text` (the text the index was built
    /// from), best first; only passages sharing a word with the query.
    pub fn search(&self, text: &str, query: &str, k: usize) -> Vec<Hit> {
        let query = crate::types::case::fold(query);
        let mut terms: Vec<&str> = words(&query).collect();
        crate::types::order::sort(&mut terms);
        terms.dedup();
        let n = self.passages.len() as f32;
        let mut scores = vec![0f32; self.passages.len()];
        let mut matched = vec![0u16; self.passages.len()];
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(p, tf) in list {
                let p = p as usize;
                let tf = tf as f32;
                let norm = 1.0 - B + B * self.lengths[p] as f32 / self.average_length;
                scores[p] += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
                matched[p] = matched[p].saturating_add(1);
            }
        }
        let phrase = squeeze(&query);
        let all = u16::try_from(terms.len()).unwrap_or(u16::MAX);
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(_, &s)| s > 0.0)
            .map(|(index, &score)| {
                let whole = !terms.is_empty()
                    && matched[index] == all
                    && squeeze(&crate::types::case::fold(
                        &text[self.passages[index].range.clone()],
                    ))
                    .contains(&phrase);
                Hit {
                    index,
                    score: if whole { score + 1_000.0 } else { score },
                }
            })
            .collect();
        crate::types::order::sort_by(&mut hits, |a, b| {
            b.score.total_cmp(&a.score).then(a.index.cmp(&b.index))
        });
        hits.truncate(k);
        hits
    }
}

impl PageIndex {
    /// Whether passage `index` holds a distinctive word of `query` (see [`distinctive`]) that
    /// is rare on the page (in at most a quarter of its passages). A match on such a word
    /// says something about the passage; a match on "the", "in" or "which" does not.
    pub fn matches_rare_word(&self, query: &str, index: usize) -> bool {
        let query = crate::types::case::fold(query);
        let rare = (self.passages.len() / 4).max(1);
        words(&query).filter(|term| distinctive(term)).any(|term| {
            self.postings.get(term).is_some_and(|list| {
                list.len() <= rare && list.iter().any(|&(p, _)| p as usize == index)
            })
        })
    }
}

/// Common English words of three or more letters (questions are full of them).
const COMMON: [&str; 66] = [
    "about", "after", "all", "also", "and", "any", "are", "been", "before", "being", "but", "can",
    "could", "did", "does", "done", "each", "for", "from", "had", "has", "have", "her", "his",
    "how", "into", "its", "many", "may", "more", "most", "much", "not", "one", "only", "other",
    "our", "out", "over", "page", "said", "says", "she", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "was", "way", "were", "what",
    "when", "where", "which", "who", "why", "with", "would",
];

/// Whether a (case-folded) query word can tell passages apart: a number, a character of a
/// script written without spaces (each is a word of its own: Chinese, Japanese, Korean), or
/// three or more letters and not in [`COMMON`] (so "CEO" and "tax" count, "the" does not).
fn distinctive(term: &str) -> bool {
    let mut chars = term.chars();
    let one = chars.next().filter(|_| chars.next().is_none());
    term.bytes().all(|b| b.is_ascii_digit())
        || one.is_some_and(unspaced)
        || (term.chars().count() >= 3 && !COMMON.contains(&term))
}

/// Whether `c` is written without spaces between words (CJK ideographs, kana, hangul).
fn unspaced(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// The words of `text` (already lower-cased): runs of letters and digits, except that a
/// character written without spaces is a word of its own.
fn words(text: &str) -> Words<'_> {
    Words { text, at: 0 }
}

/// The iterator of [`words`]: a byte scan with ASCII tested by byte (no UTF-8 decoding and
/// no calls per character, however little the build inlines: it runs over every byte of the
/// page when it is indexed).
struct Words<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        // The next letter or digit starts the word.
        let (start, first) = loop {
            let b = *bytes.get(self.at)?;
            let c = if b < 128 {
                char::from(b)
            } else {
                char_at(self.text, self.at)
            };
            self.at += c.len_utf8();
            let alphanumeric = if b < 128 {
                b.is_ascii_alphanumeric()
            } else {
                c.is_alphanumeric()
            };
            if alphanumeric {
                break (self.at - c.len_utf8(), c);
            }
        };
        if !unspaced(first) {
            while let Some(&b) = bytes.get(self.at) {
                if b < 128 {
                    if !b.is_ascii_alphanumeric() {
                        break;
                    }
                    self.at += 1;
                } else {
                    let c = char_at(self.text, self.at);
                    if !c.is_alphanumeric() || unspaced(c) {
                        break;
                    }
                    self.at += c.len_utf8();
                }
            }
        }
        Some(&self.text[start..self.at])
    }
}

/// The character starting at byte `at` of `text` (a character boundary).
fn char_at(text: &str, at: usize) -> char {
    text[at..].chars().next().unwrap_or('\0')
}

/// `text` with its words joined by single spaces (for the phrase rule).
fn squeeze(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_and_unspaced_characters_are_distinctive() {
        for term in ["ceo", "tax", "1861", "港"] {
            assert!(distinctive(term), "{term}");
        }
        for term in ["the", "who", "which", "a", "of", "é"] {
            assert!(!distinctive(term), "{term}");
        }
        let mut page = String::new();
        for i in 0..8 {
            page.push_str(&format!(
                "## Part {i}\nThe town had a harbour with boats.\n\n"
            ));
        }
        page.push_str(
            "## Board\nThe CEO resigned after the tax rose.\n\n## 港口\n港口在城市的东边。\n",
        );
        let index = PageIndex::build(&page);
        let board = index.passages().len() - 2;
        let port = index.passages().len() - 1;
        assert!(index.matches_rare_word("Who was the CEO?", board));
        assert!(index.matches_rare_word("What tax rose?", board));
        assert!(index.matches_rare_word("港口在哪里?", port));
        assert!(!index.matches_rare_word("Who had the boats?", 0));
    }

    /// [`words`] as first written: a character at a time, with `str::find`.
    fn words_by_char(text: &str) -> Vec<&str> {
        let mut rest = text;
        let mut out = Vec::new();
        while let Some(start) = rest.find(char::is_alphanumeric) {
            let tail = &rest[start..];
            let first = tail.chars().next().unwrap_or_default();
            let len = if unspaced(first) {
                first.len_utf8()
            } else {
                (tail.find(|c: char| !c.is_alphanumeric() || unspaced(c))).unwrap_or(tail.len())
            };
            out.push(&tail[..len]);
            rest = &tail[len..];
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn the_byte_scan_finds_the_words_a_char_scan_finds(
            text in "([a-z0-9 .,\\n-]|\\PC|[日本語のテキスト한국어]){0,60}"
        ) {
            proptest::prop_assert_eq!(words(&text).collect::<Vec<_>>(), words_by_char(&text));
        }
    }

    #[test]
    fn words_are_letter_and_digit_runs_and_single_ideographs() {
        let w: Vec<&str> = words("it's 2,000 km—東京タワー").collect();
        assert_eq!(
            w,
            ["it", "s", "2", "000", "km", "東", "京", "タ", "ワ", "ー"]
        );
    }

    #[test]
    fn the_rarer_word_wins_and_ties_keep_page_order() {
        let text = "apple banana\n\napple cherry\n\napple banana durian\n\nbanana";
        let index = PageIndex::build(text);
        assert_eq!(index.passages().len(), 1, "short blocks join");
        let text = "# A\napple banana\n# B\napple cherry\n# C\napple banana";
        let index = PageIndex::build(text);
        let hits = index.search(text, "cherry apple", 3);
        assert_eq!(hits[0].index, 1);
        let hits = index.search(text, "banana", 3);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [0, 2]);
        assert!(index.search(text, "zebra", 3).is_empty());
    }

    #[test]
    fn a_passage_with_the_whole_phrase_comes_first() {
        let text = "# A\nthe cat sat on the mat the cat the cat\n# B\nthe mat sat on the cat";
        let index = PageIndex::build(text);
        let hits = index.search(text, "The mat  sat", 2);
        assert_eq!(hits[0].index, 1);
    }
}
