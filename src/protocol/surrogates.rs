//! Lone UTF-16 surrogates in request JSON. A JS string may hold half of a surrogate pair
//! (a cut emoji, `"\uD800"`); `JSON.stringify` writes it as the escape `\ud800`, which
//! serde_json refuses, so a question with such a character would be "unreadable". They are
//! replaced by U+FFFD, the replacement character, as a UTF-8 decoder does.

use std::borrow::Cow;

/// The 16-bit value of the four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(text, 16).ok()
}

/// `text` (JSON) with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd`; a
/// high surrogate directly followed by a low one is a pair and stays. Borrowed when there
/// is nothing to replace. Anything else (invalid JSON included) is left for the parser.
pub fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    if !text.contains("\\u") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        // Any escape other than \u is two characters (`\\` included, so its second
        // backslash never starts an escape).
        let Some(unit) = (bytes.get(i + 1) == Some(&b'u'))
            .then(|| hex4(bytes, i + 2))
            .flatten()
        else {
            i += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => {
                let low = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                    .then(|| hex4(bytes, i + 8))
                    .flatten();
                if matches!(low, Some(0xDC00..=0xDFFF)) {
                    i += 12;
                    continue;
                }
                true
            }
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            // `i` and `i + 6` are on ASCII characters: char boundaries.
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::replace_lone_surrogates as fix;

    fn decoded(json: &str) -> String {
        serde_json::from_str::<String>(&fix(json)).expect("decodes")
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        assert_eq!(decoded(r#""a\ud800b""#), "a\u{FFFD}b");
        assert_eq!(decoded(r#""a\uDFFFb""#), "a\u{FFFD}b");
        assert_eq!(decoded(r#""\ud800""#), "\u{FFFD}");
        assert_eq!(decoded(r#""\ud800\ud800\udc00""#), "\u{FFFD}\u{10000}");
        assert_eq!(decoded(r#""\udc00\ud800""#), "\u{FFFD}\u{FFFD}");
        assert_eq!(decoded(r#""x\ud83d\ude00y""#), "x\u{1F600}y");
    }

    #[test]
    fn everything_else_is_left_alone() {
        for json in [
            r#""plain""#,
            r#""\\ud800""#,
            r#""\u00e9 \n \" é""#,
            r#""\ud8""#,
        ] {
            let out = fix(json);
            assert!(matches!(out, std::borrow::Cow::Borrowed(_)), "{json}");
        }
        assert_eq!(decoded(r#""\\ud800""#), "\\ud800");
    }
}
