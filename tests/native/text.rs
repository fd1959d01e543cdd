//! `types::text`: the byte scan for the n-th character agrees with `char_indices` on any
//! text (property, 512 cases).

use knowledgelens::types::text::{char_start, clip};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn char_start_agrees_with_char_indices(text in "(\\PC|[a-z ]){0,40}", n in 0usize..50) {
        prop_assert_eq!(char_start(&text, n), text.char_indices().nth(n).map(|(i, _)| i));
        let (kept, cut) = clip(&text, n);
        prop_assert_eq!(kept.chars().count(), n.min(text.chars().count()));
        prop_assert_eq!(cut, text.chars().count() > n);
        prop_assert!(text.starts_with(kept));
    }
}
