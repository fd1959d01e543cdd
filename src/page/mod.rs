//! The page as a knowledge base: its text split into passages ([`passages`]) and indexed
//! for lexical retrieval ([`index`]). Passage `pN` is the N-th passage of the page text, so
//! an id names the same passage every time the text is split. The index is rebuilt from the
//! page text when needed (one page is kept in memory per worker), never stored.

pub mod index;
pub mod passages;
pub mod sections;
mod terms;

use std::cell::RefCell;
use std::rc::Rc;

pub use index::{FnvHasher, Hit, PageIndex};
pub use passages::{Passage, MAX_CHARS as PASSAGE_MAX_CHARS};

/// Passages the prompt may hold in place of the whole page: the best for the question
/// within `budget_chars` characters, then the page's opening passages while room is left;
/// in page order. A page that fits whole is given whole.
pub fn context_passages(index: &PageIndex, text: &str, query: &str, budget: usize) -> Vec<usize> {
    index.remembered_context(query, budget, || choose_context(index, text, query, budget))
}

/// [`context_passages`], chosen afresh.
fn choose_context(index: &PageIndex, text: &str, query: &str, budget: usize) -> Vec<usize> {
    let passages = index.passages();
    let total: usize = passages.iter().map(|p| p.chars).sum();
    if total <= budget {
        return (0..passages.len()).collect();
    }
    let mut chosen = Vec::new();
    let mut used = 0;
    let ranked = index.search(text, query, passages.len()).into_iter();
    for i in ranked.map(|h| h.index).chain(0..passages.len()) {
        let size = passages[i].chars + LABEL_CHARS;
        if !chosen.contains(&i) && used + size <= budget {
            used += size;
            chosen.push(i);
        }
        if budget - used < LABEL_CHARS + 40 {
            break;
        }
    }
    crate::types::order::sort(&mut chosen);
    chosen
}

/// Characters a passage's label line takes, about (for budgets).
const LABEL_CHARS: usize = 24;

/// The id the model cites passage `index` by: `p{index + 1}`.
pub fn passage_id(index: usize) -> String {
    format!("p{}", index + 1)
}

/// The passage index an id names (`p3` is 2), if it is one.
pub fn passage_index(id: &str) -> Option<usize> {
    let n: usize = id.strip_prefix('p')?.parse().ok()?;
    n.checked_sub(1)
}

/// The passages `indices` of `text`, each under its label line (`[p12] Setup › Linux`),
/// apart by blank lines.
pub fn render(index: &PageIndex, text: &str, indices: &[usize]) -> String {
    let mut out = String::new();
    for &i in indices {
        let Some(passage) = index.passages().get(i) else {
            continue;
        };
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push('[');
        out.push_str(&passage_id(i));
        out.push(']');
        let path = passage.heading_path();
        if !path.is_empty() {
            out.push(' ');
            out.push_str(&path.replace(['\n', '\r'], " "));
        }
        out.push('\n');
        out.push_str(passage.text(text));
    }
    out
}

/// A passage's text for a person: heading lines without their `#` marks.
pub fn plain_text(passage: &Passage, text: &str) -> String {
    passage
        .text(text)
        .lines()
        .map(|line| passages::heading(line.trim()).map_or(line, |(_, t)| t))
        .collect::<Vec<_>>()
        .join("\n")
}

thread_local! {
    static LAST: RefCell<Option<(Rc<str>, Rc<PageIndex>)>> = const { RefCell::new(None) };
}

/// The index of `text`: the one built last when it was built from the same text, else a new
/// one (which replaces it). The text is compared whole with the copy kept beside the index
/// (a memory comparison: faster than hashing it, and never fooled by a collision).
pub fn index_of(text: &str) -> Rc<PageIndex> {
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((kept, index)) = last.as_ref() {
            if same_text(kept, text) {
                return Rc::clone(index);
            }
        }
        let index = Rc::new(PageIndex::build(text));
        *last = Some((Rc::from(text), Rc::clone(&index)));
        index
    })
}

/// `a == b`, eight bytes at a time: the wasm build's `memcmp` goes byte by byte, and the kept
/// page is compared with the run's on every request. A plain loop: the size-first build does
/// not inline iterator adapters, which made this loop 30% of a step.
fn same_text(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    while let (Some((p, rest_a)), Some((q, rest_b))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if u64::from_le_bytes(*p) != u64::from_le_bytes(*q) {
            return false;
        }
        (a, b) = (rest_a, rest_b);
    }
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Harbour\nThe harbour opened in 1861.\n\n## Lighthouse\nThe lighthouse is 30 m tall.\n\n## Ferry\nThe ferry leaves at noon.";

    #[test]
    fn a_page_that_fits_is_given_whole() {
        let index = PageIndex::build(PAGE);
        assert_eq!(context_passages(&index, PAGE, "ferry", 10_000), [0, 1, 2]);
    }

    #[test]
    fn a_tight_budget_keeps_the_best_passage() {
        let index = PageIndex::build(PAGE);
        let size = index.passages()[2].chars + LABEL_CHARS;
        assert_eq!(
            context_passages(&index, PAGE, "when does the ferry leave", size),
            [2]
        );
        assert_eq!(context_passages(&index, PAGE, "zzz", size + 20), [0]);
    }

    #[test]
    fn texts_are_the_same_only_when_every_byte_is() {
        let base = "abcdefghijklmnopqrstuvw";
        for len in 0..=base.len() {
            let text = &base[..len];
            let copy = String::from(text); // another allocation, the same bytes
            assert!(same_text(text, &copy));
            assert!(!same_text(text, &base[..len.saturating_sub(1)]) || len == 0);
            for at in 0..len {
                let mut other = text.to_string().into_bytes();
                other[at] = b'Z';
                let other = String::from_utf8(other).unwrap();
                assert!(!same_text(text, &other), "{len} bytes, differing at {at}");
            }
        }
    }

    #[test]
    fn the_remembered_choice_follows_the_question_and_the_budget() {
        let index = PageIndex::build(PAGE);
        let size = index.passages()[1].chars.max(index.passages()[2].chars) + LABEL_CHARS;
        let ask = |query, budget| context_passages(&index, PAGE, query, budget);
        assert_eq!(ask("when does the ferry leave", size), [2]);
        assert_eq!(ask("when does the ferry leave", size), [2]);
        assert_eq!(ask("how tall is the lighthouse", size), [1]);
        assert_eq!(ask("how tall is the lighthouse", 10_000), [0, 1, 2]);
        assert_eq!(ask("when does the ferry leave", size), [2]);
    }

    #[test]
    fn rendered_passages_carry_their_ids_and_heading_paths() {
        let index = PageIndex::build(PAGE);
        assert_eq!(
            render(&index, PAGE, &[1, 2]),
            "[p2] Harbour › Lighthouse\n## Lighthouse\nThe lighthouse is 30 m tall.\n\n[p3] Harbour › Ferry\n## Ferry\nThe ferry leaves at noon."
        );
        assert_eq!(
            plain_text(&index.passages()[1], PAGE),
            "Lighthouse\nThe lighthouse is 30 m tall."
        );
        assert_eq!(passage_index("p3"), Some(2));
        assert_eq!(passage_index("p0"), None);
        assert_eq!(passage_index("3"), None);
    }

    #[test]
    fn the_index_is_kept_for_the_same_text() {
        let a = index_of(PAGE);
        let b = index_of(PAGE);
        assert!(Rc::ptr_eq(&a, &b));
        let c = index_of("other text");
        assert!(!Rc::ptr_eq(&a, &c));
    }
}
