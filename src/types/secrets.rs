//! Keeping secrets out of the wrong places, as plain text functions the model and search
//! clients share: whether a key would travel in clear text (plain `http://` to a host that
//! is not this computer, as [`crate::url`] reads the address), and the scrub that takes a
//! key (and long pieces of it) out of whatever a server says, also in streamed pieces.

/// What a scrubbed key (or piece of it) is replaced with.
pub const KEY_MARK: &str = "[key]";

/// Keys shorter than this are replaced only where they appear whole (and not at all when
/// shorter than [`MIN_KEY`]): pieces of a short key would match ordinary words.
const MIN_FRAGMENT: usize = 12;

/// Keys shorter than this are not scrubbed: replacing every "abc" would garble answers, and
/// such a key protects nothing.
const MIN_KEY: usize = 4;

/// Whether sending `key` to `url` would put it on the network in clear text: a non-empty
/// key, a plain `http://` URL and a host that is not this computer, all as the browser
/// reads the URL ([`crate::url`]). An address that does not parse counts as in clear: a
/// key is only sent where the parser has said where it goes.
pub fn key_in_clear(url: &str, key: &str) -> bool {
    !key.trim().is_empty() && crate::url::parse(url.trim()).is_none_or(|u| u.exposes_keys())
}

/// The words for a key (`field`: the Options field that holds it) that would be sent in
/// clear text to `url` ([`key_in_clear`]).
pub fn insecure_key_message(url: &str, field: &str) -> String {
    let origin =
        crate::url::parse(url.trim()).map_or_else(|| url.trim().to_string(), |u| u.origin());
    format!(
        "KnowledgeLens will not send the {field} to {origin}: the address uses plain http://, so anyone on the network between here and that server could read the key. Change the address to https://, or remove the {field} if the server needs none."
    )
}

/// `text` with every occurrence of `key`, and of any piece of it at least 12 characters
/// long, replaced by [`KEY_MARK`]. Keys under 4 characters are left alone.
pub fn scrub(text: &str, key: &str) -> String {
    scrub_pieces(text, key, MIN_FRAGMENT)
}

/// [`scrub`] down to pieces of `min_piece` characters.
fn scrub_pieces(text: &str, key: &str, min_piece: usize) -> String {
    let key = key.trim();
    if key.chars().count() < MIN_KEY || text.is_empty() {
        return text.to_string();
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut mark = |needle: &str| {
        let mut from = 0;
        while let Some(at) = text[from..].find(needle) {
            let start = from + at;
            spans.push((start, start + needle.len()));
            from = start + needle.len().max(1);
        }
    };
    mark(key);
    let bounds: Vec<usize> = key
        .char_indices()
        .map(|(i, _)| i)
        .chain([key.len()])
        .collect();
    if bounds.len() > min_piece + 1 {
        for w in bounds.windows(min_piece + 1) {
            mark(&key[w[0]..w[min_piece]]);
        }
    }
    if spans.is_empty() {
        return text.to_string();
    }
    super::order::sort(&mut spans);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if end <= at {
            continue;
        }
        if start >= at {
            out.push_str(&text[at..start]);
            out.push_str(KEY_MARK);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Scrubs streamed text whose pieces may cut the key anywhere. Once the text seen so far ends
/// in 4 or more characters of the key (a run that may go on as the key), that run is held
/// back until a delta shows what it is, then passed on scrubbed. Ordinary text is passed on
/// as it comes. At most 3 characters of the key can show before a run is held, so what is
/// held is scrubbed down to pieces of 9 characters: no piece of 12 shows.
pub struct DeltaScrub<'k> {
    key: &'k str,
    /// The end of the text seen so far (at most the key's length), held or passed on.
    recent: String,
    /// Text not passed on yet.
    held: String,
}

/// The shortest run of key characters at the end of the stream that is held back.
const MIN_HOLD: usize = 4;

impl<'k> DeltaScrub<'k> {
    /// A scrubber for `key`.
    pub fn new(key: &'k str) -> Self {
        Self {
            key: key.trim(),
            recent: String::new(),
            held: String::new(),
        }
    }

    fn scrubbed(&self, text: &str) -> String {
        scrub_pieces(text, self.key, MIN_FRAGMENT + 1 - MIN_HOLD)
    }

    /// Takes one delta; returns the text that is safe to show now, if any.
    pub fn push(&mut self, delta: &str) -> Option<String> {
        if self.key.chars().count() < MIN_KEY {
            return (!delta.is_empty()).then(|| delta.to_string());
        }
        self.held.push_str(delta);
        self.recent.push_str(delta);
        let excess = self
            .recent
            .chars()
            .count()
            .saturating_sub(self.key.chars().count());
        if let Some(cut) = super::text::char_start(&self.recent, excess) {
            self.recent.drain(..cut);
        }
        // The longest end of the text that is part of the key.
        let run = self
            .recent
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| self.key.contains(&self.recent[i..]))
            .map_or("", |i| &self.recent[i..]);
        let hold = if run.chars().count() >= MIN_HOLD {
            run.len().min(self.held.len())
        } else {
            0
        };
        let keep = self.held.len() - hold;
        let ready = self.scrubbed(&self.held[..keep]);
        self.held.drain(..keep);
        (!ready.is_empty()).then_some(ready)
    }

    /// The text still held back, scrubbed, at the end of the stream.
    pub fn finish(self) -> Option<String> {
        (!self.held.is_empty()).then(|| self.scrubbed(&self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_key_in_clear_is_only_plain_http_to_another_host() {
        let key = "sk-secret";
        assert!(key_in_clear("http://192.168.1.5:11434/v1", key));
        assert!(key_in_clear("http://example.com/v1", key));
        assert!(key_in_clear("http://user@example.com:8080", key));
        assert!(!key_in_clear("https://example.com/v1", key));
        assert!(!key_in_clear("http://localhost:11434/v1", key));
        assert!(!key_in_clear("http://127.0.0.1:8080", key));
        assert!(!key_in_clear("http://[::1]:8080/v1", key));
        assert!(!key_in_clear("http://example.com/v1", "  "));
        // As the browser reads it: the backslash ends the host, which is evil.example.
        assert!(key_in_clear("http://evil.example\\@127.0.0.1/v1", key));
        assert!(
            insecure_key_message("http://evil.example\\@127.0.0.1/v1", "API key")
                .contains("to http://evil.example:")
        );
    }

    #[test]
    fn scrub_replaces_the_key_and_long_pieces_of_it() {
        let key = "sk-proj-Abc123Def456Ghi789";
        assert_eq!(
            scrub(&format!("Incorrect API key provided: {key}."), key),
            "Incorrect API key provided: [key]."
        );
        assert_eq!(
            scrub(&format!("Bearer {key}{key}"), key),
            "Bearer [key][key]"
        );
        // A server that cut the key short still does not show most of it.
        assert_eq!(
            scrub("key sk-proj-Abc123Def4... is invalid", key),
            "key [key]... is invalid"
        );
        assert_eq!(scrub("sk-proj- is a prefix", key), "sk-proj- is a prefix");
        assert_eq!(scrub("the abc tool", "abc"), "the abc tool");
        assert_eq!(scrub("a b c", ""), "a b c");
    }

    fn streamed(pieces: &[&str], key: &str) -> String {
        let mut stream = DeltaScrub::new(key);
        let mut out: String = pieces.iter().filter_map(|p| stream.push(p)).collect();
        out.extend(stream.finish());
        out
    }

    #[test]
    fn streamed_text_hides_a_key_cut_across_deltas() {
        let key = "sk-proj-Abc123Def456Ghi789";
        assert_eq!(
            streamed(
                &["Your key is sk-pr", "oj-Abc123", "Def456Ghi789, ok."],
                key
            ),
            "Your key is [key], ok."
        );
        // Ordinary text is passed on as it comes, even where it ends in a few letters of
        // the key.
        let mut stream = DeltaScrub::new(key);
        assert_eq!(stream.push("Hello there, "), Some("Hello there, ".into()));
        assert_eq!(stream.push("as sk-"), Some("as sk-".into()));
        assert_eq!(stream.push("proj-Abc1"), None);
        assert_eq!(stream.push("23Def456Ghi789!"), Some("[key]!".into()));
        assert_eq!(streamed(&["plain ", "words"], ""), "plain words");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// However a text with the key is cut into deltas, no piece of 12 characters of it
        /// shows, and the text around it comes through.
        #[test]
        fn no_delta_cut_shows_the_key(
            key in "[A-Za-z0-9_-]{12,40}",
            before in "[ a-z.é]{0,30}",
            after in "[ a-z.é]{0,30}",
            cuts in proptest::collection::vec(0usize..120, 0..8),
        ) {
            let text = format!("{before}{key}{after}");
            let mut bounds: Vec<usize> = cuts
                .into_iter()
                .map(|c| c.min(text.len()))
                .filter(|&c| text.is_char_boundary(c))
                .collect();
            bounds.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for b in bounds {
                pieces.push(&text[start..b]);
                start = b;
            }
            pieces.push(&text[start..]);
            let mut stream = DeltaScrub::new(&key);
            let mut shown = String::new();
            for piece in pieces {
                if let Some(out) = stream.push(piece) {
                    prop_assert!(!out.contains(key.as_str()));
                    shown.push_str(&out);
                }
            }
            shown.extend(stream.finish());
            // No piece the scrub replaces shows, and the text around the key is intact.
            let chars: Vec<char> = key.chars().collect();
            for w in chars.windows(MIN_FRAGMENT) {
                let piece: String = w.iter().collect();
                prop_assert!(!shown.contains(&piece), "{} in {}", piece, shown);
            }
            prop_assert!(shown.starts_with(&before), "{}", shown);
            prop_assert!(shown.ends_with(&format!("{KEY_MARK}{after}")), "{}", shown);
        }
        /// However the key is embedded, no piece of 12 or more of its characters survives,
        /// and text without any piece of it is unchanged.
        #[test]
        fn no_piece_of_the_key_survives(
            key in "[A-Za-z0-9_é-]{4,60}",
            before in "[ a-z.:\"{}é]{0,40}",
            after in "[ a-z.:\"{}é]{0,40}",
            cut in 0usize..60,
        ) {
            let text = format!("{before}{key}{after}");
            let out = scrub(&text, &key);
            prop_assert!(!out.contains(key.as_str()));
            let chars: Vec<char> = key.chars().collect();
            if chars.len() >= MIN_FRAGMENT {
                for w in chars.windows(MIN_FRAGMENT) {
                    let piece: String = w.iter().collect();
                    prop_assert!(!out.contains(&piece), "{} in {}", piece, out);
                }
            }
            let head: String = chars.iter().take(cut.min(MIN_FRAGMENT - 1)).collect();
            let plain = format!("{before}{head}{after}");
            let has_piece = plain.contains(key.as_str())
                || chars.windows(MIN_FRAGMENT).any(|w| plain.contains(&w.iter().collect::<String>()));
            if !has_piece {
                prop_assert_eq!(scrub(&plain, &key), plain);
            }
        }
    }
}
