//! The token estimator against o200k_base (`tests/fixtures/tokens.json`): per script, mean
//! absolute error under 10% and no text under-counted by more than 10%; and its behaviour on
//! arbitrary text (no panic, near-additive under concatenation).

use knowledgelens::testing::tokens::{chars_over_4, fixture_texts, score, FixtureText};
use knowledgelens::types::tokens::{
    estimate_json_tokens_memo, estimate_tokens, estimate_tokens_memo, token_features,
    TokenFeatures, SHORT_WORD,
};
use proptest::prelude::*;

fn fixture() -> Vec<FixtureText> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens.json");
    fixture_texts(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

#[test]
fn fixture_has_three_scripts_of_twenty_long_texts() {
    let texts = fixture();
    for script in ["prose", "code", "cjk"] {
        let of: Vec<_> = texts.iter().filter(|t| t.script == script).collect();
        assert!(of.len() >= 20, "{script}: {} texts", of.len());
        assert!(
            of.iter().all(|t| t.tokens >= 1000),
            "{script}: a text under 1,000 tokens"
        );
    }
}

#[test]
fn estimate_is_within_ten_percent_of_o200k_and_never_far_under() {
    let scores = score(&fixture(), estimate_tokens);
    let old = score(&fixture(), chars_over_4);
    for (s, o) in scores.iter().zip(&old) {
        println!(
            "{}: mean abs error {:.1}% (chars/4: {:.1}%), max under-count {:.1}% ({:?})",
            s.script, s.mean_abs_error_pct, o.mean_abs_error_pct, s.max_under_pct, s.worst_under
        );
    }
    assert_eq!(scores.len(), 3);
    for s in &scores {
        assert!(s.mean_abs_error_pct < 10.0, "{s:?}");
        assert!(s.max_under_pct <= 10.0, "{s:?}");
    }
}

#[test]
fn small_cases() {
    assert_eq!(estimate_tokens(""), 0);
    assert!(estimate_tokens("hello") >= 1);
    assert!(estimate_tokens("你好，世界") >= 4);
    assert!(estimate_tokens("fn main() { println!(\"hi\"); }") >= 8);
}

/// Text from a mix of the classes the estimator tells apart.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-zA-Z]{1,12}",
            "[0-9]{1,7}",
            "[ \n\t]{1,4}",
            "[!-/:-@\\[-`{-~]{1,4}",
            "[\u{4e00}-\u{9fff}\u{3040}-\u{30ff}\u{3000}-\u{303f}]{1,6}",
            any::<String>(),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn concatenation_is_near_additive(a in text(), b in text()) {
        let (ea, eb, eab) = (estimate_tokens(&a), estimate_tokens(&b), estimate_tokens(&(a.clone() + &b)));
        // Joining can merge one run across the seam (fewer tokens) or start one (a few more).
        prop_assert!(eab <= ea + eb + 1, "{a:?} + {b:?}: {eab} > {ea} + {eb} + 1");
        prop_assert!(eab + 3 >= ea + eb, "{a:?} + {b:?}: {eab} + 3 < {ea} + {eb}");
        prop_assert!(eab >= ea.max(eb).saturating_sub(1));
    }

    #[test]
    fn any_text_gets_at_most_its_bytes_and_at_least_a_token(s in any::<String>()) {
        let e = estimate_tokens(&s);
        prop_assert!(e <= s.len() as u64 + 1);
        prop_assert!(s.trim().is_empty() || e >= 1);
    }

    #[test]
    fn the_byte_scan_counts_what_a_char_by_char_scan_counts(s in prop_oneof![text(), any::<String>(), "[\\x00-\\x7f]{0,40}"]) {
        prop_assert_eq!(token_features(&s), reference_features(&s), "{:?}", s);
    }
}

/// The estimator's first version, one character at a time with `char` predicates: what the
/// byte scan of [`token_features`] must count exactly.
fn reference_features(text: &str) -> TokenFeatures {
    #[derive(Clone, Copy, PartialEq)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Punct,
        Space,
        Other,
    }
    let class_of = |c: char| match c {
        'a'..='z' => Class::Lower,
        'A'..='Z' => Class::Upper,
        '0'..='9' => Class::Digit,
        c if c.is_ascii_punctuation() => Class::Punct,
        c if c.is_whitespace() => Class::Space,
        _ => Class::Other,
    };
    let mut f = TokenFeatures::default();
    let close = |f: &mut TokenFeatures, run: Class, len: usize, line_break: bool| match run {
        Class::Lower | Class::Upper => {
            f.word_pieces += 1.0;
            f.long_word_letters += len.saturating_sub(SHORT_WORD) as f64;
        }
        Class::Digit => f.digit_groups += len.div_ceil(3) as f64,
        Class::Punct => f.punct_runs += 1.0,
        Class::Space if line_break => f.line_breaks += 1.0,
        Class::Space if len >= 2 => f.space_runs += 1.0,
        _ => {}
    };
    let (mut run, mut len, mut line_break) = (Class::Other, 0usize, false);
    for c in text.chars() {
        let class = class_of(c);
        let letter = |k| matches!(k, Class::Lower | Class::Upper);
        let same = if letter(class) && letter(run) {
            !(run == Class::Lower && class == Class::Upper)
        } else {
            class == run && class != Class::Other
        };
        if !same {
            close(&mut f, run, len, line_break);
            len = 0;
            line_break = false;
        }
        len += 1;
        run = class;
        match class {
            Class::Punct => f.punct_chars += 1.0,
            Class::Space => line_break |= c == '\n' || c == '\r',
            Class::Other => {
                let u = c as u32;
                match u {
                    0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF => {
                        f.han += 1.0
                    }
                    0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F | 0xAC00..=0xD7AF => {
                        f.kana += 1.0
                    }
                    0x3000..=0x303F | 0xFF00..=0xFF65 => f.cjk_punct += 1.0,
                    _ if c.is_alphabetic() => f.other_letters += 1.0,
                    _ => f.other_chars += 1.0,
                }
            }
            _ => {}
        }
    }
    close(&mut f, run, len, line_break);
    f
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The memo gives what estimating gives, whether a text is new, seen, or was evicted by
    /// others in its slot (40 texts drawn from 300 over 128 slots).
    #[test]
    fn the_memo_gives_what_estimating_gives(picks in prop::collection::vec(0usize..300, 1..40), words in "[a-z]{3,9}( [a-z]{3,9}){40,60}") {
        for i in picks {
            let text = format!("{i} {words} {}", "x".repeat(i % 7));
            prop_assert_eq!(estimate_tokens_memo(&text), estimate_tokens(&text), "text {}", i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A schema's remembered estimate is that of its JSON text, and a schema that differs in
    /// any key or value gets its own.
    #[test]
    fn a_schemas_memo_gives_what_estimating_its_json_gives(keys in prop::collection::vec("[a-z_]{1,12}", 1..8), words in prop::collection::vec("[a-zA-Z ,.]{0,60}", 1..8)) {
        let schema = |extra: &str| {
            let properties: serde_json::Map<String, serde_json::Value> = keys
                .iter()
                .zip(words.iter().cycle())
                .map(|(k, w)| (k.clone(), serde_json::json!({"type": "string", "description": format!("{w}{extra}")})))
                .collect();
            serde_json::json!({"type": "object", "properties": properties})
        };
        for extra in ["", " more", "", "x"] {
            let value = schema(extra);
            prop_assert_eq!(estimate_json_tokens_memo(&value), estimate_tokens(&value.to_string()));
        }
    }
}
