//! `types::order`: the shared merge sort orders any list as std's stable sort does (property,
//! 512 cases), equal keys included.

use knowledgelens::types::order::{sort, sort_by};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sorts_as_the_std_stable_sort_does(list in proptest::collection::vec((0u8..8, any::<u16>()), 0..200)) {
        // By the key alone: equal keys must keep their order (the second field tells).
        let mut ours = list.clone();
        sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
        let mut std_sorted = list.clone();
        std_sorted.sort_by_key(|a| a.0);
        prop_assert_eq!(&ours, &std_sorted);
        // Whole items, descending.
        let mut ours = list.clone();
        sort_by(&mut ours, |a, b| b.cmp(a));
        let mut std_sorted = list.clone();
        std_sorted.sort_by(|a, b| b.cmp(a));
        prop_assert_eq!(&ours, &std_sorted);
        let mut ours = list.clone();
        sort(&mut ours);
        let mut std_sorted = list;
        std_sorted.sort();
        prop_assert_eq!(ours, std_sorted);
    }
}
