//! The page a question is about: what the page reader captures and what a run keeps.

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// A tab's title, URL and readable text, captured when a question is asked.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
#[serde(default)]
pub struct PageInfo {
    /// The document title.
    pub title: String,
    /// The page URL.
    pub url: String,
    /// The readable text (empty when the page could not be read).
    pub text: String,
    /// Which reader produced `text`: `"readability"` (Mozilla's Readability on the visible
    /// DOM) or `"visible-text"` (the visible-text walk); empty when unknown (older records).
    pub reader: String,
    /// The page's language tag (`<html lang>`), checked like a selection's; empty when
    /// unknown. Web search uses it to pick a Wikipedia.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang: String,
    /// Pages of the document, for a PDF (`reader` `"pdf"`): its text holds one page after
    /// each form feed ([`PAGE_BREAK`]), the first ones when it was cut, so fewer breaks than
    /// `pages` mean only those were read. 0 for an HTML page (and older records).
    #[serde(skip_serializing_if = "is_zero")]
    pub pages: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What starts each page of a PDF's text: a form feed, on a line of its own before the
/// page's first paragraph (the HTML reader turns every form feed into a space).
pub const PAGE_BREAK: char = '\u{c}';

/// The page reader's name for a PDF's text (`PageInfo::reader`).
pub const PDF_READER: &str = "pdf";

/// Largest PDF read, in bytes (a larger one is not downloaded).
pub const MAX_PDF_BYTES: usize = 30 * 1024 * 1024;

/// Bytes of a PDF handed from the tab to the extracting page in one message (base64, so a
/// message carries at most 8 MiB of text).
pub const PDF_CHUNK_BYTES: usize = 6 * 1024 * 1024;

/// How long reading a PDF may take (ms): downloading it in the tab, then extracting its
/// text page by page; a slower read is abandoned and the run goes on without the text.
pub const PDF_READ_TIMEOUT_MS: u64 = 90_000;

/// How long the download of a PDF in its tab may take (ms), first byte to last.
pub const PDF_FETCH_TIMEOUT_MS: u64 = 30_000;

/// `lang` when it looks like a BCP 47 tag (at most [`MAX_LANG_CHARS`] letters, digits and
/// hyphens), else empty.
pub fn checked_lang(lang: &str) -> String {
    let lang = lang.trim();
    if lang.len() <= MAX_LANG_CHARS && lang.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        lang.to_string()
    } else {
        String::new()
    }
}

/// How long reading a tab's text may take (ms); a slower read is abandoned and the run
/// goes on without the page's text.
pub const PAGE_READ_TIMEOUT_MS: u64 = 10_000;

/// Longest page text kept, in characters: the page reader (`content/extract.js`, through the
/// generated `content/limits.gen.js`) cuts there, and the worker cuts again on receipt.
pub const MAX_PAGE_CHARS: usize = 2_000_000;

/// Longest passage text a `locate_passage` request may carry, in characters (a passage is at
/// most 1,200; only its first 80 non-space characters are looked for).
pub const MAX_LOCATE_CHARS: usize = 4000;

/// Longest selected text an explanation works on, in characters (the rest is cut, and the
/// explanation says so).
pub const MAX_SELECTION_CHARS: usize = 4000;

/// Longest enclosing paragraph (context) of a selection, in characters.
pub const MAX_CONTEXT_CHARS: usize = 4000;

/// Longest page title sent to the model, in characters.
pub const MAX_TITLE_CHARS: usize = 300;

/// Longest page URL sent to the model, in characters.
pub const MAX_URL_CHARS: usize = 2000;

impl PageInfo {
    /// For a PDF, how many of its pages the text holds, and of how many (`None` for a page).
    pub fn pages_read(&self) -> Option<(u32, u32)> {
        if self.reader != PDF_READER {
            return None;
        }
        let read = self.text.matches(PAGE_BREAK).count();
        Some((u32::try_from(read).unwrap_or(u32::MAX), self.pages))
    }

    /// The page with its title and URL cut to [`MAX_TITLE_CHARS`] and [`MAX_URL_CHARS`]
    /// characters: the fields a page controls are capped where they are read (the content
    /// script cuts them too), so no record, event or request holds more.
    pub fn capped(mut self) -> Self {
        for (field, max) in [
            (&mut self.title, MAX_TITLE_CHARS),
            (&mut self.url, MAX_URL_CHARS),
        ] {
            if let Some(cut) = crate::types::text::char_start(field, max) {
                field.truncate(cut);
            }
        }
        self
    }
}

/// Most headings in a selection's heading path.
pub const MAX_HEADINGS: usize = 6;

/// Longest heading of a heading path, in characters.
pub const MAX_HEADING_CHARS: usize = 300;

/// Longest language tag kept (BCP 47 tags are far shorter).
pub const MAX_LANG_CHARS: usize = 35;

/// `text` cut to `max` characters, and whether it was cut.
pub fn cap_chars(text: &str, max: usize) -> (String, bool) {
    let (kept, cut) = super::text::clip(text, max);
    (kept.to_string(), cut)
}

/// `url` without its query string and fragment, cut to [`MAX_URL_CHARS`] (empty when it
/// is not a URL).
pub fn clean_url(url: &str) -> String {
    let place = crate::url::parse(url.trim())
        .map(|url| url.place())
        .unwrap_or_default();
    cap_chars(&place, MAX_URL_CHARS).0
}

/// `title` on one line, cut to [`MAX_TITLE_CHARS`].
pub fn clean_title(title: &str) -> String {
    let line = title.trim().replace(['\n', '\r'], " ");
    cap_chars(&line, MAX_TITLE_CHARS).0
}

/// Selected text on a page and where it sits, as the capture script reports it and as an
/// explanation run keeps it (checked and capped by [`Selection::checked`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Selection {
    /// The selected text (at most [`MAX_SELECTION_CHARS`]).
    pub text: String,
    /// Characters of the whole selection before any cut.
    pub full_length: usize,
    /// Whether `text` is only the start of the selection.
    pub truncated: bool,
    /// The enclosing paragraph or block (at most [`MAX_CONTEXT_CHARS`]).
    pub context: String,
    /// The heading path above the selection, outermost first.
    pub headings: Vec<String>,
    /// The page title.
    pub title: String,
    /// The page URL, without query string or fragment.
    pub url: String,
    /// The page language (`""` when unknown).
    pub lang: String,
}

/// Why a selection cannot be explained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// Nothing but white space was selected.
    #[error("Select some text to explain.")]
    Empty,
}

impl Selection {
    /// The selection checked and capped again (the capture script caps too, but its
    /// word is not trusted): text, context, title, URL (query and fragment stripped),
    /// headings and language tag. Empty text is an error.
    pub fn checked(self) -> Result<Self, SelectionError> {
        let trimmed = self.text.trim();
        if trimmed.is_empty() {
            return Err(SelectionError::Empty);
        }
        let (text, cut) = cap_chars(trimmed, MAX_SELECTION_CHARS);
        // Compared with what was sent, untrimmed: the capture script counts the same way.
        let chars = self.text.chars().count();
        let headings = self
            .headings
            .iter()
            .map(|h| cap_chars(&h.trim().replace(['\n', '\r'], " "), MAX_HEADING_CHARS).0)
            .filter(|h| !h.is_empty())
            .take(MAX_HEADINGS)
            .collect();
        let lang = checked_lang(&self.lang);
        Ok(Self {
            text,
            full_length: self.full_length.max(chars),
            truncated: cut || self.full_length > chars,
            context: cap_chars(self.context.trim(), MAX_CONTEXT_CHARS).0,
            headings,
            title: clean_title(&self.title),
            url: clean_url(&self.url),
            lang,
        })
    }

    /// The heading path as `H1 > H2 > H3` (empty without headings).
    pub fn heading_path(&self) -> String {
        self.headings.join(" > ")
    }
}

#[cfg(test)]
mod capped_tests {
    use super::*;

    #[test]
    fn a_page_controlled_title_and_url_are_cut_at_their_caps() {
        let page = PageInfo {
            title: "é".repeat(MAX_TITLE_CHARS * 3),
            url: format!("https://example.org/{}", "a".repeat(MAX_URL_CHARS * 2)),
            text: "Text.".into(),
            reader: "readability".into(),
            lang: "en".into(),
            pages: 0,
        }
        .capped();
        assert_eq!(page.title.chars().count(), MAX_TITLE_CHARS);
        assert_eq!(page.url.chars().count(), MAX_URL_CHARS);
        assert_eq!(page.text, "Text.");
        let short = PageInfo {
            title: "Tides".into(),
            url: "https://example.org/tides".into(),
            ..page
        }
        .capped();
        assert_eq!(
            (short.title.as_str(), short.url.as_str()),
            ("Tides", "https://example.org/tides")
        );
    }
}
