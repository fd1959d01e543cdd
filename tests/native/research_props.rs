//! Research mode's pure parts over arbitrary model output: the subtopics a decompose reply
//! gives (never more than asked, never a duplicate, never empty or overlong, whatever the
//! reply), and the review's fixes (applied at most once each, never a panic, never a
//! heading removed; no fix leaves the report as it was).

use knowledgelens::agent::step::research::prompt::MAX_SUBTOPIC_CHARS;
use knowledgelens::agent::step::research::run::{apply_fixes, fixes, subtopics, Fix};
use proptest::prelude::*;

fn words() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z ]{0,40}",
        "[\\PC]{0,200}",
        Just("the Moon".to_string()),
        Just("THE  moon".to_string()),
        Just("## Synthesis".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decomposed_subtopics_are_bounded_distinct_and_clean(
        items in proptest::collection::vec(words(), 0..12),
        max in 2usize..=6,
        as_json in any::<bool>(),
    ) {
        let reply = if as_json {
            serde_json::json!({ "subtopics": items }).to_string()
        } else {
            items.iter().enumerate().map(|(i, t)| format!("{}. {t}", i + 1)).collect::<Vec<_>>().join("\n")
        };
        let got = subtopics(&reply, max);
        prop_assert!(got.len() <= max);
        for (i, t) in got.iter().enumerate() {
            prop_assert!(!t.trim().is_empty());
            prop_assert!(t.chars().count() <= MAX_SUBTOPIC_CHARS);
            prop_assert!(!t.contains('\n'));
            for u in &got[..i] {
                prop_assert_ne!(u.to_lowercase(), t.to_lowercase());
            }
        }
    }

    #[test]
    fn review_fixes_apply_once_and_keep_headings(
        report in "(## [A-Z][a-z]{1,8}\n[a-z .]{0,60}\n){1,4}",
        picks in proptest::collection::vec((0usize..200, 1usize..30, "[a-z ]{0,10}"), 0..6),
    ) {
        let fixes: Vec<Fix> = picks
            .iter()
            .filter_map(|(at, len, replace)| {
                let chars: Vec<char> = report.chars().collect();
                let start = at % chars.len();
                let end = (start + len).min(chars.len());
                let find: String = chars[start..end].iter().collect();
                (!find.trim().is_empty()).then(|| Fix { find: find.trim().to_string(), replace: replace.clone() })
            })
            .collect();
        let (fixed, applied) = apply_fixes(&report, &fixes);
        prop_assert!(applied as usize <= fixes.len());
        let headings = |t: &str| t.lines().filter(|l| l.starts_with('#')).map(str::to_string).collect::<Vec<_>>();
        prop_assert_eq!(headings(&fixed), headings(&report));
        if applied == 0 {
            prop_assert_eq!(&fixed, &report);
        }
        // The JSON form of the same fixes parses back to them.
        let json = serde_json::json!({
            "fixes": fixes.iter().map(|f| serde_json::json!({"find": f.find, "replace": f.replace})).collect::<Vec<_>>()
        });
        prop_assert_eq!(knowledgelens::agent::step::research::run::fixes(&json.to_string()).len(), fixes.len());
    }
}

#[test]
fn a_reply_that_is_not_json_gives_its_lines_as_subtopics() {
    let reply = "Here are the subtopics:\n1. Tides\n2) The moon\n- the MOON\n* Sun\n\n";
    assert_eq!(subtopics(reply, 4), ["Tides", "The moon", "Sun"]);
    assert!(fixes("{\"fixes\": \"none\"}").is_empty());
}
