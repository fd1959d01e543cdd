//! The page's passages grouped into sections for summarising (`summarize_page_content`):
//! consecutive passages, each section at most a given size (tokens as the estimator counts
//! them, so the bound holds for any script), closed early at a top-level heading once it is
//! at least half full, so sections follow the page's own structure where they can. A
//! passage larger than the bound is a section of its own. The sections cover the passages
//! exactly once, in order. Pure.

use std::ops::Range;

use super::passages::{heading, Passage};
use crate::types::tokens::estimate_tokens;

/// Tokens a passage's label line adds in a section request (`[p12] Setup › Linux`), about.
pub const LABEL_TOKENS: usize = 12;

/// Groups items of sizes `sizes` into consecutive ranges of total size at most `max` (an
/// item over `max` alone), closing a range before an item whose `breaks` flag is set once
/// the range holds at least half of `max`.
pub fn group(sizes: &[usize], breaks: &[bool], max: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0usize;
    for (i, &item) in sizes.iter().enumerate() {
        let full = size.saturating_add(item) > max;
        let at_break = breaks.get(i).copied().unwrap_or(false) && size.saturating_mul(2) >= max;
        if i > start && (full || at_break) {
            out.push(start..i);
            start = i;
            size = 0;
        }
        size = size.saturating_add(item);
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

/// The estimated tokens of each passage of `text` (label included).
pub fn passage_tokens(passages: &[Passage], text: &str) -> Vec<usize> {
    passages
        .iter()
        .map(|p| {
            usize::try_from(estimate_tokens(p.text(text))).unwrap_or(usize::MAX) + LABEL_TOKENS
        })
        .collect()
}

/// Whether each passage starts with a heading of the page's top level (the shallowest
/// level any heading of the page has).
pub fn top_level_starts(passages: &[Passage], text: &str) -> Vec<bool> {
    let level = |p: &Passage| {
        let first = p.text(text).lines().next().unwrap_or("");
        heading(first.trim()).map(|(level, _)| level)
    };
    let top = passages.iter().filter_map(level).min();
    passages
        .iter()
        .map(|p| top.is_some() && level(p) == top)
        .collect()
}

/// The sections of `text`'s passages, each at most `max_tokens` (by the estimator; a
/// passage over it alone): ranges of passage indices.
pub fn sections(passages: &[Passage], text: &str, max_tokens: usize) -> Vec<Range<usize>> {
    group(
        &passage_tokens(passages, text),
        &top_level_starts(passages, text),
        max_tokens,
    )
}

/// The text of the passages `range` of `text`, from the first one's start to the last
/// one's end, trimmed.
pub fn section_text<'t>(passages: &[Passage], text: &'t str, range: &Range<usize>) -> &'t str {
    let (Some(first), Some(last)) = (
        passages.get(range.start),
        range.end.checked_sub(1).and_then(|i| passages.get(i)),
    ) else {
        return "";
    };
    text.get(first.range.start..last.range.end)
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::passages::split;
    use proptest::prelude::*;

    #[test]
    fn sections_break_at_top_level_headings_once_half_full() {
        let sizes = [30, 30, 30, 30, 30];
        let breaks = [false, false, true, false, true];
        // 60 of 100 by the first break: closed there; then 30 + 30 by the next.
        assert_eq!(group(&sizes, &breaks, 100), [0..2, 2..4, 4..5]);
        // A break before half full is passed over.
        assert_eq!(group(&sizes, &breaks, 200), [0..4, 4..5]);
        // An item over the bound is a section of its own.
        assert_eq!(group(&[10, 500, 10], &[false; 3], 100), [0..1, 1..2, 2..3]);
        assert!(group(&[], &[], 100).is_empty());
    }

    #[test]
    fn a_page_is_split_at_its_shallowest_headings() {
        let body = "A sentence about the harbour and its ships. ".repeat(12);
        let page =
            format!("## One\n{body}\n\n### Deep\n{body}\n\n## Two\n{body}\n\n## Three\n{body}");
        let passages = split(&page);
        let tops = top_level_starts(&passages, &page);
        let headed: Vec<bool> = passages
            .iter()
            .map(|p| p.text(&page).starts_with("## "))
            .collect();
        assert_eq!(tops, headed);
        let one = passage_tokens(&passages, &page)[0];
        // Three passages would fit, but the section closes at "## Two" (past half full).
        let ranges = sections(&passages, &page, one * 3 + 10);
        let firsts: Vec<&str> = ranges
            .iter()
            .map(|r| {
                section_text(&passages, &page, r)
                    .lines()
                    .next()
                    .unwrap_or("")
            })
            .collect();
        assert_eq!(firsts, ["## One", "## Two"]);
        assert_eq!(ranges, [0..2, 2..4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Sections cover every item once, in order, and each is within the bound unless it
        /// is a single item over it.
        #[test]
        fn sections_cover_the_items_in_order_within_the_bound(
            items in proptest::collection::vec((0usize..400, any::<bool>()), 0..60),
            max in 1usize..1_000,
        ) {
            let (sizes, breaks): (Vec<usize>, Vec<bool>) = items.into_iter().unzip();
            let ranges = group(&sizes, &breaks, max);
            let mut next = 0;
            for r in &ranges {
                prop_assert_eq!(r.start, next);
                prop_assert!(r.end > r.start);
                let total: usize = sizes[r.clone()].iter().sum();
                prop_assert!(total <= max || r.len() == 1, "{:?} holds {} > {}", r, total, max);
                next = r.end;
            }
            prop_assert_eq!(next, sizes.len());
        }

        /// On real page text: the sections' texts, in order, hold every passage once.
        #[test]
        fn page_sections_cover_the_passages(
            blocks in proptest::collection::vec(("(#{1,3} )?[a-z ]{1,80}", 1usize..4), 1..40),
            max in 20usize..400,
        ) {
            let page: String = blocks
                .iter()
                .map(|(line, n)| format!("{}\n{}", line, "\n".repeat(*n - 1)))
                .collect();
            let passages = split(&page);
            let ranges = sections(&passages, &page, max);
            let covered: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
            prop_assert_eq!(covered, (0..passages.len()).collect::<Vec<_>>());
            let sizes = passage_tokens(&passages, &page);
            for r in &ranges {
                let total: usize = sizes[r.clone()].iter().sum();
                prop_assert!(total <= max || r.len() == 1);
            }
        }
    }
}
