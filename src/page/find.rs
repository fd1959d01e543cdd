//! Where a selection made in Chrome's PDF viewer lies in the PDF's extracted text. The
//! viewer hands over the selection with its white space collapsed and its line-end hyphens
//! kept, while the extracted text has paragraphs, rejoined hyphenations and page breaks; both
//! sides are already NFKC-normalised by the extension (which also unfolds ligatures), so
//! they are compared here without white space and hyphens. Pure.

use crate::types::page::PAGE_BREAK;

/// Characters of the selection (white space and hyphens aside) looked for: enough to tell
/// one place from another, few enough to survive a difference further on.
const NEEDLE_CHARS: usize = 160;

/// Whether `c` is left out of the comparison: white space (the page break included) and
/// the hyphens a line end may carry or lose.
fn ignored(c: char) -> bool {
    c.is_whitespace() || matches!(c, '-' | '\u{ad}' | '\u{2010}' | '\u{2011}')
}

/// The paragraph of `text` holding the start of `selection`, and its page (from 1) when
/// `text` has page breaks; `None` when the selection is not found.
pub fn paragraph_around<'t>(text: &'t str, selection: &str) -> Option<(&'t str, Option<u32>)> {
    let needle: String = selection
        .chars()
        .filter(|c| !ignored(*c))
        .take(NEEDLE_CHARS)
        .collect();
    if needle.is_empty() {
        return None;
    }
    // The kept characters of `text`, and where each one starts in `text` (searched with
    // `str::find`, linear in the text's length).
    let mut kept = String::with_capacity(text.len());
    let mut offsets: Vec<u32> = Vec::new();
    for (at, c) in text.char_indices().filter(|(_, c)| !ignored(*c)) {
        kept.push(c);
        offsets.push(u32::try_from(at).ok()?);
    }
    let found = kept.find(&needle)?;
    let start = *offsets.get(kept[..found].chars().count())? as usize;
    let para_start = text[..start].rfind("\n\n").map_or(0, |i| i + 2);
    let para_end = text[start..].find("\n\n").map_or(text.len(), |i| start + i);
    let breaks = text[..start].matches(PAGE_BREAK).count();
    let page = (breaks > 0).then(|| u32::try_from(breaks).unwrap_or(u32::MAX));
    let paragraph = text[para_start..para_end].trim_matches(|c: char| c.is_whitespace());
    Some((paragraph, page))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &str = "\u{c}Cover page.\n\n\u{c}First paragraph of page two.\n\nThe tides of the Severn estuary rise fifteen metres, a height mea-\nsured since 1850.\n\n\u{c}Page three.";

    #[test]
    fn a_collapsed_selection_finds_its_paragraph_and_page() {
        let (paragraph, page) =
            paragraph_around(PDF, "estuary rise fifteen metres, a height mea- sured").unwrap();
        assert!(
            paragraph.starts_with("The tides of the Severn"),
            "{paragraph}"
        );
        assert!(paragraph.ends_with("since 1850."), "{paragraph}");
        assert_eq!(page, Some(2));
        // Rejoined in the text, split in the selection, or the other way round.
        let rejoined = PDF.replace("mea-\nsured", "measured");
        assert_eq!(
            paragraph_around(&rejoined, "height mea- sured").map(|(_, p)| p),
            Some(Some(2))
        );
        assert_eq!(
            paragraph_around(PDF, "Page three.").map(|(_, p)| p),
            Some(Some(3))
        );
    }

    #[test]
    fn a_selection_not_in_the_text_or_empty_is_not_found() {
        assert_eq!(paragraph_around(PDF, "not there"), None);
        assert_eq!(paragraph_around(PDF, " - "), None);
        assert_eq!(
            paragraph_around("No breaks here.", "breaks").map(|(_, p)| p),
            Some(None)
        );
    }

    /// The first place the selection's kept characters appear, by brute force.
    fn naive(text: &str, selection: &str) -> Option<usize> {
        let needle: Vec<char> = selection
            .chars()
            .filter(|c| !ignored(*c))
            .take(NEEDLE_CHARS)
            .collect();
        if needle.is_empty() {
            return None;
        }
        let kept: Vec<(usize, char)> = text.char_indices().filter(|(_, c)| !ignored(*c)).collect();
        let at = kept
            .windows(needle.len())
            .position(|w| w.iter().map(|(_, c)| *c).eq(needle.iter().copied()))?;
        Some(kept[at].0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// On any text of short words, breaks, hyphens and non-ASCII letters, a selection
        /// cut from it (white space collapsed) is found in the paragraph the brute-force
        /// search finds it in.
        #[test]
        fn finds_what_the_brute_force_search_finds(
            words in proptest::collection::vec("[a-cé\\-]{1,4}|\n\n|\u{c}", 1..60),
            from in 0usize..60,
            len in 1usize..20,
        ) {
            let text = words.join(" ");
            let chosen: Vec<&str> = words.iter().skip(from % words.len()).take(len).map(String::as_str).collect();
            let selection = chosen.join(" ");
            let found = paragraph_around(&text, &selection);
            match naive(&text, &selection) {
                None => proptest::prop_assert!(found.is_none()),
                Some(start) => {
                    let (paragraph, _) = found.expect("found where the brute force finds it");
                    let para_start = text[..start].rfind("\n\n").map_or(0, |i| i + 2);
                    let para_end = text[start..].find("\n\n").map_or(text.len(), |i| start + i);
                    proptest::prop_assert_eq!(paragraph, text[para_start..para_end].trim());
                }
            }
        }
    }
}
