//! Cutting text at a character count: where the n-th character starts, found a byte at a
//! time (no UTF-8 decoding), so it stays fast however little the build inlines.

/// The byte offset where the `n`-th character of `text` starts (counting from 0), or `None`
/// when `text` has `n` characters or fewer: `text.char_indices().nth(n).map(|(i, _)| i)`.
pub fn char_start(text: &str, n: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if n >= bytes.len() {
        // Fewer bytes than n + 1 means fewer characters.
        return None;
    }
    // All ASCII before n (the usual case, checked a word at a time): byte n starts char n.
    if bytes[..n].is_ascii() {
        return Some(n);
    }
    let mut seen = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Every byte but a continuation byte (0b10xx_xxxx) starts a character.
        if (b as i8) >= -0x40 {
            if seen == n {
                return Some(i);
            }
            seen += 1;
        }
    }
    None
}

/// The first `max` characters of `text`, and whether it was cut.
pub fn clip(text: &str, max: usize) -> (&str, bool) {
    match char_start(text, max) {
        Some(cut) => (&text[..cut], true),
        None => (text, false),
    }
}

/// The first `max` characters of `text`, with "…" after them when it was cut.
pub fn clip_marked(text: &str, max: usize) -> String {
    match clip(text, max) {
        (kept, true) => format!("{kept}…"),
        (kept, false) => kept.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_start_of_the_nth_character() {
        for text in ["", "a", "héllo", "日本語のテキスト", "a😀b\u{301}c", "abc"] {
            for n in 0..=text.chars().count() + 2 {
                let want = text.char_indices().nth(n).map(|(i, _)| i);
                assert_eq!(char_start(text, n), want, "{text:?} at {n}");
            }
        }
    }

    #[test]
    fn clips_at_a_character_boundary() {
        assert_eq!(clip("héllo", 2), ("hé", true));
        assert_eq!(clip("hé", 2), ("hé", false));
        assert_eq!(clip_marked("日本語", 1), "日…");
        assert_eq!(clip_marked("日本語", 3), "日本語");
    }
}
