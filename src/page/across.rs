//! Questions across pages: the passages of several pages (the conversation's own page and
//! the pages the user added to it) as one knowledge base. Each page keeps its own index;
//! a search runs on each and the hits are merged by score. Passages are numbered across the
//! pages: page `s` starts at its `base`, so its passage `i` is `p{base + i + 1}`; bases are
//! given out once per conversation and never reused ([`next_base`]). Pure.

use super::{Excerpt, PageIndex, LABEL_CHARS};
use crate::types::PageInfo;

/// A page added to a conversation, with its text, as a run holds it (loaded from the read
/// pages when the run starts or resumes; never saved with the session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedText {
    /// Its read-page id.
    pub key: u64,
    /// The number before its first passage's.
    pub base: usize,
    /// Its numbered passages (those past it are not given).
    pub limit: usize,
    /// The tab it was read in, when known.
    pub tab: Option<i64>,
    /// Its title, URL and text.
    pub page: PageInfo,
}

impl AddedText {
    /// It as a [`Source`] of a search.
    pub fn source(&self) -> Source<'_> {
        Source {
            key: self.key,
            base: self.base,
            text: &self.page.text,
            limit: self.limit,
        }
    }
}

/// The sources of a question across pages: the own page's `text` (key 0, numbered from 0,
/// its first `own_limit` passages), then each added page.
pub fn sources<'a>(own: &'a str, own_limit: usize, added: &'a [AddedText]) -> Vec<Source<'a>> {
    let mut all = vec![Source {
        key: 0,
        base: 0,
        text: own,
        limit: own_limit,
    }];
    for a in added {
        all.push(a.source());
    }
    all
}

/// One page of a question across pages.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// What names the page whatever the order the pages are given in (its read-page id; 0
    /// for the conversation's own page): ties between equal scores are broken by it.
    pub key: u64,
    /// The number before its first passage's (`p{base + 1}` is its first).
    pub base: usize,
    /// Its text.
    pub text: &'a str,
    /// Its passages past this many are not given (the own page's passages beyond the first
    /// added page's base, when it grew since); `usize::MAX` for all.
    pub limit: usize,
}

/// A passage found in one of the pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The page's position in the slice searched.
    pub source: usize,
    /// The passage's position in its page.
    pub index: usize,
    /// Its score (higher is better; scores of different pages are compared as they are).
    pub score: f32,
}

impl Found {
    /// The number the model cites it by (`N` of `pN`).
    pub fn number(&self, sources: &[Source<'_>]) -> usize {
        sources[self.source].base + self.index + 1
    }
}

/// The `k` passages of all `sources` that best match `query`, best first: each page's own
/// best `k` (by its own index, [`super::index_of`]), merged by score; equal scores in the
/// order of the pages' keys, then of the passages, so the order the pages are given in
/// changes nothing.
pub fn search(sources: &[Source<'_>], query: &str, k: usize) -> Vec<Found> {
    let mut found = Vec::new();
    for (s, source) in sources.iter().enumerate() {
        if source.text.is_empty() {
            continue;
        }
        let index = super::index_of(source.text);
        for hit in index.search(source.text, query, k) {
            if hit.index < source.limit {
                found.push(Found {
                    source: s,
                    index: hit.index,
                    score: hit.score,
                });
            }
        }
    }
    crate::types::order::sort_by(&mut found, |a, b| {
        b.score
            .total_cmp(&a.score)
            .then(sources[a.source].key.cmp(&sources[b.source].key))
            .then(a.index.cmp(&b.index))
    });
    found.truncate(k);
    found
}

/// `budget` split between pages that need `sizes` characters to be shown whole: an equal
/// share each, and a page that needs less than its share leaves the rest to the others
/// (shared again equally). The shares add up to at most `budget`.
pub fn split_budget(sizes: &[usize], budget: usize) -> Vec<usize> {
    let mut shares = vec![0; sizes.len()];
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    crate::types::order::sort_by(&mut order, |a, b| sizes[*a].cmp(&sizes[*b]));
    let mut left = budget;
    for (taken, &i) in order.iter().enumerate() {
        let fair = left / (order.len() - taken);
        shares[i] = sizes[i].min(fair);
        left -= shares[i];
    }
    shares
}

/// Characters a page needs to be shown whole in a page block (its passages and labels).
pub fn whole_size(index: &PageIndex) -> usize {
    index.passages().iter().map(|p| p.chars + LABEL_CHARS).sum()
}

/// The first excerpt of each of `sources` for `query` within `budget` characters in all:
/// the budget split equally between the pages ([`split_budget`]), each page's share chosen
/// as a single page's excerpt is ([`super::excerpt`]).
pub fn excerpts(sources: &[Source<'_>], query: &str, budget: usize) -> Vec<Excerpt> {
    let mut indexes = Vec::new();
    let mut sizes = Vec::new();
    for source in sources {
        let index = super::index_of(source.text);
        sizes.push(whole_size(&index));
        indexes.push(index);
    }
    let shares = split_budget(&sizes, budget);
    let mut excerpts = Vec::new();
    for (s, source) in sources.iter().enumerate() {
        let mut excerpt = super::excerpt(&indexes[s], source.text, query, shares[s]);
        excerpt.lead.retain(|&i| i < source.limit);
        excerpt.extra.retain(|&i| i < source.limit);
        excerpts.push(excerpt);
    }
    excerpts
}

/// Passage numbers are given out to added pages in blocks of this many, so the pages of a
/// conversation are told apart at a glance (`p1`…, then `p101`…).
pub const BLOCK: usize = 100;

/// The base of a page added to a conversation whose numbers so far end at `used` (the last
/// number given to any page it had, the own page's passages included): the next whole
/// block. Never a number given before, whatever was removed since.
pub fn next_base(used: usize) -> usize {
    used.div_ceil(BLOCK).max(1) * BLOCK
}

/// The page a passage number names, and the passage's position in it: the source whose
/// block holds it (`None` when none does).
pub fn locate(sources: &[Source<'_>], number: usize) -> Option<(usize, usize)> {
    let index = number.checked_sub(1)?;
    sources.iter().enumerate().find_map(|(s, source)| {
        let i = index.checked_sub(source.base)?;
        let count = super::index_of(source.text)
            .passages()
            .len()
            .min(source.limit);
        (i < count).then_some((s, i))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_pages_unused_share_goes_to_the_others() {
        assert_eq!(
            split_budget(&[100, 5_000, 5_000], 6_000),
            [100, 2_950, 2_950]
        );
        assert_eq!(split_budget(&[1_000, 1_000], 6_000), [1_000, 1_000]);
        assert_eq!(
            split_budget(&[9_000, 9_000, 9_000], 6_000),
            [2_000, 2_000, 2_000]
        );
        assert_eq!(split_budget(&[], 6_000), Vec::<usize>::new());
    }

    #[test]
    fn blocks_start_past_every_number_given() {
        assert_eq!(next_base(0), 100);
        assert_eq!(next_base(37), 100);
        assert_eq!(next_base(100), 100);
        assert_eq!(next_base(101), 200);
    }
}
