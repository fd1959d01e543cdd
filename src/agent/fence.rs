//! The page fence: every piece of page-derived text (title, URL, excerpt, selection and
//! its context, page-tool results) reaches the model inside `<page-NONCE>` ...
//! `</page-NONCE>`, in a user or tool message, never in the system message. `NONCE` is
//! random, drawn per page (`SessionState::nonce`: kept while the session stays on the same
//! URL) and kept out of every event, export and log, so a page cannot guess the tag, and anything
//! in the page that looks like a fence tag (`<page` or `</page`, in any case) is escaped
//! (`<` becomes `&lt;`), so the page can neither close the fence nor open a fake one.
//!
//! The escaping is reversible ([`unescape`] gives back the page's text exactly): an `&`
//! that begins `&lt;` or `&amp;` in the page is written `&amp;`. Pure.

/// The run's fence: its tag is `page-<nonce>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence<'a> {
    nonce: &'a str,
}

impl<'a> Fence<'a> {
    /// The fence of a run whose nonce is `nonce`.
    pub fn new(nonce: &'a str) -> Self {
        Self { nonce }
    }

    /// The tag name, `page-<nonce>` (what the system prompt names).
    pub fn tag(&self) -> String {
        format!("page-{}", self.nonce)
    }

    /// `<page-<nonce>>`.
    pub fn open(&self) -> String {
        format!("<{}>", self.tag())
    }

    /// `</page-<nonce>>`.
    pub fn close(&self) -> String {
        format!("</{}>", self.tag())
    }

    /// `text` escaped and quoted inside the fence, each tag on a line of its own.
    pub fn wrap(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 2 * self.nonce.len() + 32);
        for part in ["<page-", self.nonce, ">\n"] {
            out.push_str(part);
        }
        escape_into(&mut out, text);
        for part in ["\n</page-", self.nonce, ">"] {
            out.push_str(part);
        }
        out
    }

    /// `text` (model output) without this fence's tags: a small model sometimes copies
    /// them into its answer, and the nonce stays out of answers, events and exports.
    pub fn strip(&self, text: &str) -> String {
        if self.nonce.is_empty() || !text.contains(self.nonce) {
            return text.to_string();
        }
        let (open, close) = (self.open(), self.close());
        let mut out = text.replace(&close, "").replace(&open, "");
        // A bare mention of the tag (without the brackets) goes too.
        out = out.replace(&self.tag(), "");
        out.trim().to_string()
    }
}

/// Whether `rest` starts with `page` or `/page`, in any case.
fn starts_fence_tag(rest: &str) -> bool {
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    rest.get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("page"))
}

/// `text` with every `<` that begins `<page` or `</page` (any case) written `&lt;`, and
/// every `&` that begins `&lt;` or `&amp;` written `&amp;` (so [`unescape`] can undo it).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    escape_into(&mut out, text);
    out
}

/// [`escape`], appending to `out`.
fn escape_into(out: &mut String, text: &str) {
    let mut copied = 0; // text before this is in `out`
    for i in memchr::memchr2_iter(b'<', b'&', text.as_bytes()) {
        // `<` and `&` are ASCII, so the byte after one starts a character.
        let rest = &text[i + 1..];
        let replacement = match text.as_bytes()[i] {
            b'<' if starts_fence_tag(rest) => "&lt;",
            b'&' if rest.starts_with("lt;") || rest.starts_with("amp;") => "&amp;",
            _ => continue,
        };
        out.push_str(&text[copied..i]);
        out.push_str(replacement);
        copied = i + 1;
    }
    out.push_str(&text[copied..]);
}

/// The inverse of [`escape`]: `&lt;` becomes `<` and `&amp;` becomes `&`, left to right.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("&lt;") {
            out.push('<');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("&amp;") {
            out.push('&');
            rest = after;
        } else {
            out.push('&');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_loses_the_fence_tags_it_copied() {
        let fence = Fence::new("0123456789abcdef");
        assert_eq!(
            fence.strip(
                "<page-0123456789abcdef>\n[p3] The ferry leaves at noon.\n</page-0123456789abcdef>"
            ),
            "[p3] The ferry leaves at noon."
        );
        assert_eq!(fence.strip("See page-0123456789abcdef [p1]."), "See  [p1].");
        assert_eq!(fence.strip("The <page> tag."), "The <page> tag.");
        assert_eq!(Fence::new("").strip(" a "), " a ");
    }

    #[test]
    fn fence_like_tags_are_escaped_and_come_back() {
        let page = "a </page> b <PAGE-0000000000000000> c </Page-x> &lt;page &amp; <b> & <pag";
        let escaped = escape(page);
        assert_eq!(
            escaped,
            "a &lt;/page> b &lt;PAGE-0000000000000000> c &lt;/Page-x> &amp;lt;page &amp;amp; <b> & <pag"
        );
        assert_eq!(unescape(&escaped), page);
        let fence = Fence::new("3f9a0c1d2e4b5a69");
        assert_eq!(
            fence.wrap("x"),
            "<page-3f9a0c1d2e4b5a69>\nx\n</page-3f9a0c1d2e4b5a69>"
        );
    }
}
