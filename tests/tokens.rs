//! The token estimator against o200k_base (`tests/fixtures/tokens.json`): per script, mean
//! absolute error under 10% and no text under-counted by more than 10%; and its behaviour on
//! arbitrary text (no panic, near-additive under concatenation).

use knowledgelens::testing::tokens::{chars_over_4, fixture_texts, score, FixtureText};
use knowledgelens::types::tokens::estimate_tokens;
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
}
