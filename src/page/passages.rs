//! The page text split into passages along its structure. The page reader writes a heading
//! as a line starting with one to six `#` and a space (`## Getting started`), paragraphs
//! apart by a blank line, and list items and table rows on lines of their own. A line is a
//! block; a heading always starts a passage; other blocks join the passage before them while
//! it stays within [`TARGET_CHARS`]; a block longer than [`MAX_CHARS`] is split at sentence
//! ends (else at a space, else anywhere). The passages cover the text exactly once, in
//! order: each holds its blocks with the line breaks after them. Pure.

use std::ops::Range;

use crate::types::page::PAGE_BREAK;

/// Characters a passage grows to by joining blocks.
pub const TARGET_CHARS: usize = 700;

/// Characters no passage exceeds.
pub const MAX_CHARS: usize = 1_200;

/// Deepest heading level kept in a heading path.
const MAX_LEVEL: usize = 6;

/// A passage of the page text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Its bytes in the page text (line breaks after it included).
    pub range: Range<usize>,
    /// Its first character in the page text.
    pub start_char: usize,
    /// Its length in characters.
    pub chars: usize,
    /// The headings enclosing it, outermost first (its own heading, when it starts with
    /// one, last).
    pub headings: Vec<String>,
    /// Its page (from 1), in a text with page breaks (a PDF's); `None` in a page's.
    pub page: Option<u32>,
}

impl Passage {
    /// Its text, without the line breaks around it.
    pub fn text<'t>(&self, page: &'t str) -> &'t str {
        page[self.range.clone()].trim()
    }

    /// The heading path as one line: `Setup › Linux` (empty when there is none).
    pub fn heading_path(&self) -> String {
        self.headings.join(" › ")
    }
}

/// A heading line's level and text: `## Setup` is (2, "Setup").
pub fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > MAX_LEVEL {
        return None;
    }
    let text = line[level..].strip_prefix(' ')?.trim();
    (!text.is_empty()).then_some((level, text))
}

/// One block (a line with the line breaks after it), or a piece of a long one.
struct Piece {
    range: Range<usize>,
    chars: usize,
    heading: Option<(usize, String)>,
}

/// The passages of `text`, in order.
pub fn split(text: &str) -> Vec<Passage> {
    let mut passages: Vec<Passage> = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut start_char = 0;
    let mut page: Option<u32> = None;
    for piece in pieces(text) {
        let breaks = text[piece.range.clone()].matches(PAGE_BREAK).count();
        let new_page = breaks > 0;
        if new_page {
            let before = page.unwrap_or(0);
            page = Some(before.saturating_add(u32::try_from(breaks).unwrap_or(u32::MAX)));
        }
        if let Some((level, title)) = &piece.heading {
            while path.last().is_some_and(|(l, _)| l >= level) {
                path.pop();
            }
            path.push((*level, title.clone()));
        }
        // Line breaks left over from cutting a long block join the passage before them
        // whenever they fit.
        let blank = text[piece.range.clone()].bytes().all(|b| b == b'\n');
        let room = if blank { MAX_CHARS } else { TARGET_CHARS };
        // An empty page's break joins the passage before it.
        let empty_page = new_page && text[piece.range.clone()].trim().is_empty();
        let joins = piece.heading.is_none()
            && (!new_page || empty_page)
            && passages.last().is_some_and(|last| {
                last.range.end == piece.range.start && last.chars + piece.chars <= room
            });
        match passages.last_mut() {
            Some(last) if joins => {
                last.range.end = piece.range.end;
                last.chars += piece.chars;
            }
            _ => passages.push(Passage {
                range: piece.range.clone(),
                start_char,
                chars: piece.chars,
                headings: path.iter().map(|(_, t)| t.clone()).collect(),
                page,
            }),
        }
        start_char += piece.chars;
    }
    passages
}

/// The blocks of `text` (long ones split), covering it in order. Leading line breaks join
/// the first block.
fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let line_start = at + text[at..].bytes().take_while(|&b| b == b'\n').count();
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let end = line_end + text[line_end..].bytes().take_while(|&b| b == b'\n').count();
        let heading = heading(text[line_start..line_end].trim()).map(|(l, t)| (l, t.to_string()));
        let block = &text[at..end];
        let chars = block.chars().count();
        if chars <= MAX_CHARS {
            out.push(Piece {
                range: at..end,
                chars,
                heading,
            });
        } else {
            let mut first = true;
            for (range, chars) in cut_long(block) {
                out.push(Piece {
                    range: at + range.start..at + range.end,
                    chars,
                    heading: if first { heading.clone() } else { None },
                });
                first = false;
            }
        }
        at = end;
    }
    out
}

/// `block` (over [`MAX_CHARS`]) cut into pieces of at most [`MAX_CHARS`] characters: each
/// as long as it can be while ending after a sentence end, else after a space, else at the
/// limit. Byte ranges within `block`, with their lengths in characters.
fn cut_long(block: &str) -> Vec<(Range<usize>, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < block.len() {
        let rest = &block[at..];
        // The byte offset just past MAX_CHARS characters (or the end).
        let limit = rest
            .char_indices()
            .nth(MAX_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        if limit == rest.len() {
            out.push((at..block.len(), rest.chars().count()));
            break;
        }
        let window = &rest[..limit];
        let cut = last_sentence_end(window)
            .or_else(|| window.rfind(' ').map(|i| i + 1).filter(|&i| i > 0))
            .unwrap_or(limit);
        out.push((at..at + cut, window[..cut].chars().count()));
        at += cut;
    }
    out
}

/// Past the whitespace after the last sentence end in `window` (`. `, `! `, `? `, `。`...),
/// if there is one after its start.
fn last_sentence_end(window: &str) -> Option<usize> {
    let mut best = None;
    let mut chars = window.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?' | '…');
        let wide = matches!(c, '。' | '！' | '？');
        match chars.peek() {
            Some(&(j, next)) if ends && next.is_whitespace() => {
                best = Some(j + next.len_utf8());
            }
            Some(&(j, _)) if wide => best = Some(j),
            _ => {}
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'t>(page: &'t str, passages: &[Passage]) -> Vec<&'t str> {
        passages.iter().map(|p| p.text(page)).collect()
    }

    #[test]
    fn a_heading_starts_a_passage_and_short_blocks_join() {
        let page = "Intro line.\n\n# Setup\nInstall it.\n- one\n- two\n\n## Linux\nUse apt.\n\n# Use\nRun it.";
        let passages = split(page);
        assert_eq!(
            texts(page, &passages),
            [
                "Intro line.",
                "# Setup\nInstall it.\n- one\n- two",
                "## Linux\nUse apt.",
                "# Use\nRun it."
            ]
        );
        let paths: Vec<String> = passages.iter().map(Passage::heading_path).collect();
        assert_eq!(paths, ["", "Setup", "Setup › Linux", "Use"]);
        assert_eq!(passages[1].start_char, "Intro line.\n\n".len());
    }

    #[test]
    fn a_long_paragraph_is_cut_at_sentence_ends() {
        let sentence = "This sentence is about forty characters. ";
        let page = sentence.repeat(80);
        let passages = split(&page);
        assert!(passages.len() >= 3, "{}", passages.len());
        for p in &passages {
            assert!(p.chars <= MAX_CHARS);
            assert!(
                p.text(&page).ends_with("characters."),
                "{:?}",
                p.text(&page)
            );
        }
    }

    #[test]
    fn text_without_spaces_is_cut_at_the_limit() {
        let page = "x".repeat(MAX_CHARS * 2 + 5);
        let chars: Vec<usize> = split(&page).iter().map(|p| p.chars).collect();
        assert_eq!(chars, [MAX_CHARS, MAX_CHARS, 5]);
    }

    #[test]
    fn a_page_break_starts_a_passage_and_each_passage_knows_its_page() {
        let page = "\u{c}Cover.\n\n\u{c}Short one.\n\nShort two.\n\n\u{c}\n\n\u{c}Last page.";
        let passages = split(page);
        assert_eq!(
            texts(page, &passages),
            ["Cover.", "Short one.\n\nShort two.", "Last page."]
        );
        let pages: Vec<Option<u32>> = passages.iter().map(|p| p.page).collect();
        assert_eq!(pages, [Some(1), Some(2), Some(4)]);
        assert!(split("No breaks.").iter().all(|p| p.page.is_none()));
    }

    #[test]
    fn headings_need_a_space_and_at_most_six_marks() {
        assert_eq!(heading("### Deep"), Some((3, "Deep")));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("# "), None);
    }
}
