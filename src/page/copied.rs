//! How much of a short text (a search query, a link's address) is copied from longer ones
//! (the page, the conversation): the check that keeps page and conversation text from
//! leaving in a search query or a link. Texts are compared folded ([`fold`]): lower case,
//! every run of characters that are not letters or digits as one space, so punctuation,
//! `+`, `_`, `-` or `%20` cannot hide a copy. Pure.

/// `text` case-folded ([`crate::types::case::fold`]), each run of characters that are not
/// letters or digits one space, trimmed.
pub fn fold(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    crate::types::case::fold(&words.join(" "))
}

/// The runs of `needle` (folded) found in one of `texts` (folded), each at least `min_run`
/// characters and as long as it goes, as character ranges of `needle`, in order and not
/// overlapping.
///
/// A run of at least `2b - 1` characters holds one of the `b`-character blocks that start at
/// multiples of `b` (`b` = `min_run / 2`): only blocks found are grown (each by binary
/// search: a piece of a copied run is copied too), so a needle that copies nothing costs
/// `len / b` scans of the texts.
pub fn copied_runs(needle: &str, texts: &[String], min_run: usize) -> Vec<(usize, usize)> {
    let chars: Vec<char> = needle.chars().collect();
    let found = |from: usize, to: usize| {
        let piece: String = chars[from..to].iter().collect();
        texts.iter().any(|t| t.contains(&piece))
    };
    let block = (min_run / 2).max(1);
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    while from + block <= chars.len() {
        let covered = runs.last().is_some_and(|&(_, end)| from + block <= end);
        if covered || !found(from, from + block) {
            from += block;
            continue;
        }
        // The furthest end from this block's start, then the earliest start for that end.
        let (mut lo, mut hi) = (from + block, chars.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if found(from, mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let end = lo;
        let floor = runs.last().map_or(0, |&(_, end)| end);
        let (mut lo, mut hi) = (floor, from);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if found(mid, end) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if end - lo >= min_run {
            runs.push((lo, end));
        }
        from += block;
    }
    runs
}

/// The characters of `needle` in copied runs of at least `min_run` ([`copied_runs`]).
pub fn copied_chars(needle: &str, texts: &[String], min_run: usize) -> usize {
    copied_runs(needle, texts, min_run)
        .iter()
        .map(|(from, to)| to - from)
        .sum()
}

/// The longest copied run of `needle` in `texts` (0 when none reaches `min_run`).
pub fn longest_copied(needle: &str, texts: &[String], min_run: usize) -> usize {
    copied_runs(needle, texts, min_run)
        .iter()
        .map(|(from, to)| to - from)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn folding_ignores_case_and_punctuation() {
        assert_eq!(
            fold("The  User's ACCOUNT-number_is+1234%20!"),
            "the user s account number is 1234 20"
        );
        assert_eq!(fold(" ...Ünïcode, too "), "ünïcode too");
    }

    #[test]
    fn runs_are_found_whole_and_chunks_add_up() {
        let page = vec![fold("The user's account number is 1234 5678 9012 and the sort code is 40-11-22, said the bank.")];
        let needle = fold("?q=the user's account number is 1234 5678 9012");
        assert_eq!(longest_copied(&needle, &page, 20), needle.len() - 2); // all but "q "
                                                                          // Chunks under 40 characters each, in separate parameters: 3 of them add up.
        let chunks = fold("?a=the user s account&b=number is 1234 5678&c=9012 and the sort code");
        assert!(
            copied_chars(&chunks, &page, 20) > 40,
            "{:?}",
            copied_runs(&chunks, &page, 20)
        );
        assert!(longest_copied(&chunks, &page, 20) < 40);
        assert_eq!(
            copied_chars(&fold("harbour ferry timetable lighthouse"), &page, 20),
            0
        );
    }

    /// The copied characters, the slow way: every position in a run of at least `min`
    /// characters found in `page`.
    fn brute(needle: &str, page: &str, min: usize) -> usize {
        let chars: Vec<char> = needle.chars().collect();
        let mut covered = vec![false; chars.len()];
        for i in 0..chars.len() {
            for j in i + min..=chars.len() {
                if page.contains(&chars[i..j].iter().collect::<String>()) {
                    covered[i..j].iter_mut().for_each(|c| *c = true);
                }
            }
        }
        covered.iter().filter(|c| **c).count()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn one_run_is_measured_as_brute_force_does(
            start in 0usize..60,
            len in 0usize..70,
            before in "[q-z]{0,30}",
            after in "[q-z]{0,30}",
        ) {
            let page = "the harbour opened in 1861 and its first keeper agnes mole kept a log of every ship that passed";
            let end = (start + len).min(page.len());
            let needle = format!("{before}{}{after}", &page[start..end]);
            prop_assert_eq!(copied_chars(&needle, &[page.to_string()], 20), brute(&needle, page, 20));
        }
    }
}
