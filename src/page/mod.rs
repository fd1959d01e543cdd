//! The page as a knowledge base: its text split into passages ([`passages`]) and indexed
//! for lexical retrieval ([`index`]). Passage `pN` is the N-th passage of the page text, so
//! an id names the same passage every time the text is split. The index is rebuilt from the
//! page text when needed (the last few pages' are kept in memory per worker, one per page
//! of a question across pages, [`across`]), never stored.

pub mod across;
pub mod copied;
pub mod find;
pub mod index;
pub mod passages;
pub mod sections;
mod terms;

use std::cell::RefCell;
use std::rc::Rc;

pub use index::{Hit, PageIndex};
pub use passages::{Passage, MAX_CHARS as PASSAGE_MAX_CHARS};
pub use terms::FnvHasher;

/// What the first request of a run shows of a page that does not fit whole: `lead`, its
/// opening passages in page order (the same for every question, so the prompt's prefix
/// stays the same from one question to the next and a server's prompt cache reuses it), and
/// `extra`, passages past the lead that match the question better than any passage of the
/// lead (best first; none when the lead holds the best match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Excerpt {
    /// Opening passages, in page order (all of them when the page fits).
    pub lead: Vec<usize>,
    /// Passages past the lead chosen for the question, best first.
    pub extra: Vec<usize>,
}

impl Excerpt {
    /// Every passage shown, in page order.
    pub fn all(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.lead.iter().chain(&self.extra).copied().collect();
        crate::types::order::sort(&mut all);
        all
    }
}

/// The share of the excerpt's characters a page that does not fit whole gets, in percent:
/// the rest pays for what a request about such a page adds (the tools that find more of it,
/// the sentence on when to call them, the note that the page was cut), so that request
/// costs about what the page's first `budget` characters alone would.
const CUT_SHARE_PCT: usize = 65;

/// The fewest characters a cut page is given (or the whole budget, when smaller).
const MIN_CUT_CHARS: usize = 1_000;

/// The share of a cut page's characters the lead may take (the rest is for passages the
/// question finds further on), in percent.
const LEAD_SHARE_PCT: usize = 75;

/// The [`Excerpt`] of the page for `query`: a page of at most `budget` characters whole, as
/// its lead; a longer one within [`CUT_SHARE_PCT`] of `budget`.
pub fn excerpt(index: &PageIndex, text: &str, query: &str, budget: usize) -> Excerpt {
    index.remembered_context(query, budget, || choose_excerpt(index, text, query, budget))
}

/// Passages the prompt holds in place of the whole page: the [`excerpt`]'s, in page order.
pub fn context_passages(index: &PageIndex, text: &str, query: &str, budget: usize) -> Vec<usize> {
    excerpt(index, text, query, budget).all()
}

/// [`excerpt`], chosen afresh.
fn choose_excerpt(index: &PageIndex, text: &str, query: &str, budget: usize) -> Excerpt {
    let passages = index.passages();
    let size = |i: usize| passages[i].chars + LABEL_CHARS;
    let total: usize = passages.iter().map(|p| p.chars).sum();
    if total <= budget {
        return Excerpt {
            lead: (0..passages.len()).collect(),
            extra: Vec::new(),
        };
    }
    // Not below 1,000 characters (the smallest excerpt a window gets): a small budget cut
    // further would show no passage at all.
    let budget = (budget * CUT_SHARE_PCT / 100).max(budget.min(MIN_CUT_CHARS));
    let mut used = 0;
    let mut lead = Vec::new();
    for i in 0..passages.len() {
        if used + size(i) > budget * LEAD_SHARE_PCT / 100 {
            break;
        }
        used += size(i);
        lead.push(i);
    }
    let mut extra = Vec::new();
    for hit in index.search(text, query, passages.len()) {
        if lead.contains(&hit.index) {
            break;
        }
        // A heading alone says nothing the question needs (its words made it match), and
        // a passage that shares only common words with the question is no better a guess
        // than the page's start.
        if headings_only(&passages[hit.index], text) || !index.matches_rare_word(query, hit.index) {
            continue;
        }
        if used + size(hit.index) <= budget {
            used += size(hit.index);
            extra.push(hit.index);
        }
        if budget - used < LABEL_CHARS + 40 {
            break;
        }
    }
    // A first passage longer than the lead's share, with no passage chosen for the question,
    // still leads when it fits the whole budget: the model is not left with nothing.
    if lead.is_empty() && extra.is_empty() && !passages.is_empty() && size(0) <= budget {
        lead.push(0);
    }
    Excerpt { lead, extra }
}

/// Whether a passage is only heading lines (a section whose text is in later passages).
fn headings_only(passage: &Passage, text: &str) -> bool {
    passage
        .text(text)
        .lines()
        .all(|line| line.trim().is_empty() || passages::heading(line.trim()).is_some())
}

/// Characters a passage's label line takes, about (for budgets).
pub(crate) const LABEL_CHARS: usize = 24;

/// The id the model cites passage `index` by: `p{index + 1}`.
pub fn passage_id(index: usize) -> String {
    format!("p{}", index + 1)
}

/// The passage index an id names (`p3` is 2), if it is one.
pub fn passage_index(id: &str) -> Option<usize> {
    let n: usize = id.strip_prefix('p')?.parse().ok()?;
    n.checked_sub(1)
}

/// The passages `indices` of `text`, each under its label line (`[p12] Setup › Linux`; a
/// PDF's passage names its page: `[p12] page 4`), apart by blank lines.
pub fn render(index: &PageIndex, text: &str, indices: &[usize]) -> String {
    let mut out = String::new();
    render_from(&mut out, index, text, indices, 0, "");
    out
}

/// [`render`] for a page of a question across pages ([`across`]): its passages numbered
/// from `base`, and each label naming the page, when `source` (its title) is not empty
/// (`[p103] Leaves › Setup`; a PDF's `[p103] Report, page 4 › Setup`). Appended to `out`.
pub fn render_from(
    out: &mut String,
    index: &PageIndex,
    text: &str,
    indices: &[usize],
    base: usize,
    source: &str,
) {
    for &i in indices {
        let Some(passage) = index.passages().get(i) else {
            continue;
        };
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push('[');
        out.push_str(&passage_id(base + i));
        out.push(']');
        if !source.is_empty() {
            out.push(' ');
            out.push_str(&source.replace(['\n', '\r'], " "));
        }
        if let Some(page) = passage.page {
            let comma = if source.is_empty() { "" } else { "," };
            out.push_str(&format!("{comma} page {page}"));
        }
        let path = passage.heading_path();
        if !path.is_empty() {
            out.push_str(if source.is_empty() { " " } else { " › " });
            out.push_str(&path.replace(['\n', '\r'], " "));
        }
        out.push('\n');
        out.push_str(passage.text(text));
    }
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

/// Indexes kept in memory: one per page a question across pages may use (its own page
/// and [`MAX_ADDED_PAGES`] added ones).
const KEPT_INDEXES: usize = MAX_ADDED_PAGES + 1;

/// Most pages a conversation may add beside its own.
pub const MAX_ADDED_PAGES: usize = 4;

thread_local! {
    static KEPT: RefCell<Vec<(Rc<str>, Rc<PageIndex>)>> = const { RefCell::new(Vec::new()) };
}

/// The index of `text`: one kept from an earlier build of the same text, else a new one
/// (which replaces the least recently used one kept, when [`KEPT_INDEXES`] are). The text
/// is compared whole with the copy kept beside the index (a memory comparison: faster than
/// hashing it, and never fooled by a collision).
pub fn index_of(text: &str) -> Rc<PageIndex> {
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if let Some(at) = kept.iter().position(|(t, _)| same_text(t, text)) {
            let entry = kept.remove(at);
            let index = Rc::clone(&entry.1);
            kept.insert(0, entry);
            return index;
        }
        let index = Rc::new(PageIndex::build(text));
        kept.insert(0, (Rc::from(text), Rc::clone(&index)));
        kept.truncate(KEPT_INDEXES);
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

    /// The budget that leaves a page that does not fit whole `cut` characters.
    fn full(cut: usize) -> usize {
        if cut <= MIN_CUT_CHARS {
            cut
        } else {
            (cut * 100).div_ceil(CUT_SHARE_PCT)
        }
    }

    #[test]
    fn a_small_budget_is_not_cut_below_its_floor() {
        let page: String = (0..150)
            .map(|i| format!("## Part {i}\nThe harbour opened in 1861 and its quay was rebuilt in part {i}.\n\n"))
            .collect();
        let index = PageIndex::build(&page);
        let shown = |budget| -> usize {
            excerpt(&index, &page, "zzz", budget)
                .all()
                .iter()
                .map(|i| index.passages()[*i].chars + LABEL_CHARS)
                .sum()
        };
        // 1,000 characters keep all of them; 6,000 get 65%.
        assert!(shown(1_000) > 650, "{}", shown(1_000));
        assert!(shown(6_000) <= 3_900, "{}", shown(6_000));
    }

    const PAGE: &str = "# Harbour\nThe harbour opened in 1861.\n\n## Lighthouse\nThe lighthouse is 30 m tall.\n\n## Ferry\nThe ferry leaves at noon.";

    #[test]
    fn a_page_that_fits_is_given_whole() {
        let index = PageIndex::build(PAGE);
        assert_eq!(context_passages(&index, PAGE, "ferry", 10_000), [0, 1, 2]);
    }

    #[test]
    fn a_tight_budget_keeps_the_start_and_the_best_passage_past_it() {
        const PAGE: &str = "# Harbour\nThe harbour opened in 1861, when the first stone quay was finished by the town's masons.\n\n## Lighthouse\nThe lighthouse is 30 m tall and its lamp can be seen from twenty miles out at sea.\n\n## Ferry\nThe ferry leaves at noon for the island and comes back before the evening tide turns.\n\n## Markets\nOn Saturdays the square fills with stalls of cheese, bread, apples, honey, wool and pots, and the bakers sell their loaves until the last one is gone, which in summer is often before ten.";
        let index = PageIndex::build(PAGE);
        assert_eq!(index.passages().len(), 4);
        let size = |i: usize| index.passages()[i].chars + LABEL_CHARS;
        // The page does not fit: the excerpt is CUT_SHARE_PCT of the budget, and its lead
        // (LEAD_SHARE_PCT of that) holds the first passage, not the second.
        let cut = size(0) + size(2);
        let budget = full(cut);
        let total: usize = index.passages().iter().map(|p| p.chars).sum();
        assert!(total > budget);
        assert!(size(0) <= cut * LEAD_SHARE_PCT / 100);
        assert!(size(0) + size(1) > cut * LEAD_SHARE_PCT / 100);
        let ferry = excerpt(&index, PAGE, "when does the ferry leave", budget);
        assert_eq!(
            ferry,
            Excerpt {
                lead: vec![0],
                extra: vec![2]
            }
        );
        assert_eq!(ferry.all(), [0, 2]);
        // The lead holds the best match: nothing more.
        let harbour = excerpt(&index, PAGE, "when was the harbour opened", budget);
        assert_eq!(harbour.extra, Vec::<usize>::new());
        assert_eq!(context_passages(&index, PAGE, "zzz", budget), [0]);
    }

    #[test]
    fn a_first_passage_longer_than_the_leads_share_leads_when_nothing_else_is_chosen() {
        const PAGE: &str = "# Harbour\nThe harbour opened in 1861, when the first stone quay was finished by the town's masons.\n\n## Ferry\nThe ferry leaves at noon, and on Sundays at ten as well, for the island, its school, its church and its one shop, and it comes back before the evening tide turns.";
        let index = PageIndex::build(PAGE);
        let size = |i: usize| index.passages()[i].chars + LABEL_CHARS;
        let budget = full(size(0) + 4);
        let total: usize = index.passages().iter().map(|p| p.chars).sum();
        assert!(total > budget);
        assert!(size(0) > (size(0) + 4) * LEAD_SHARE_PCT / 100);
        assert_eq!(excerpt(&index, PAGE, "zzz", budget).lead, [0]);
        // One that does not fit the budget at all is not shown cut: nothing leads.
        assert!(excerpt(&index, PAGE, "zzz", full(size(0) - 1))
            .lead
            .is_empty());
    }

    #[test]
    fn a_heading_alone_is_not_chosen_for_the_question() {
        let long = "The basin froze and the harbour master had it measured. ".repeat(30);
        let page = format!("# Harbour\nThe harbour opened in 1861, when the first stone quay was finished.\n\n## Lighthouse\nThe lighthouse is 30 m tall and can be seen from far out at sea.\n\n## The winter of the ice\n\n{long}\n\n## Ferry\nThe ferry leaves at noon for the island and comes back before the evening.");
        let index = PageIndex::build(&page);
        let heading = index
            .passages()
            .iter()
            .position(|p| p.text(&page) == "## The winter of the ice")
            .expect("the heading is a passage of its own");
        let budget = 300;
        let chosen = excerpt(&index, &page, "the winter of the ice", budget);
        assert!(!chosen.extra.contains(&heading), "{chosen:?}");
    }

    #[test]
    fn a_passage_that_shares_only_common_words_with_the_question_is_not_chosen() {
        let mut page = String::new();
        for i in 0..12 {
            page.push_str(&format!("## Part {i}\nThe town of the coast had a harbour to the north, with the boats of the fishermen.\n\n"));
        }
        page.push_str(
            "## Museum\nThe museum is in the old warehouse of the town, by the harbour.\n",
        );
        let index = PageIndex::build(&page);
        let museum = index.passages().len() - 1;
        // "How thick was the ice in the winter?": only "the" and "in" are on the page, and
        // "in" only in the museum's passage: rare, but no word to tell passages apart by.
        let budget = 400;
        let ice = excerpt(
            &index,
            &page,
            "How thick was the ice in the winter?",
            budget,
        );
        assert!(ice.extra.is_empty(), "{ice:?}");
        // A rare word of the question makes it a match.
        let found = excerpt(&index, &page, "Where is the museum?", budget);
        assert_eq!(found.extra, [museum]);
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
        let ask = |query, cut| context_passages(&index, PAGE, query, full(cut));
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
