//! Whether an answer about a page names facts the page does not hold.
//!
//! Small models asked what a page does not say answer with a guess in the page's style: a
//! name or a number from what they know. The run's known text (the page, the earlier turns
//! and the tool results, the user's replies among them) either holds each
//! number and each name of the answer or it does not; an answer that names one it does not
//! is replaced by [`prompts::ABSTAIN`](super::prompts::ABSTAIN), and the model's answer goes
//! to the Steps view with the terms that were not found.
//!
//! Only names and numbers are checked: they are what a guess gets wrong, and the words
//! around them are free to paraphrase. A name is a capitalized word that does not begin a
//! sentence; a number is a word with a digit (its thousands separators left out). Citation
//! labels (`[p3]`, `[2]`) are not terms.

use std::collections::BTreeSet;

/// The numbers and names of `answer` that appear in none of `known`, in the order the answer
/// gives them (each once). Case is ignored when looking them up.
pub fn unsupported_terms(answer: &str, known: &[&str]) -> Vec<String> {
    let mut vocabulary = BTreeSet::new();
    for text in known {
        for word in words(text) {
            vocabulary.insert(normalize(word.text));
        }
    }
    let mut missing: Vec<String> = Vec::new();
    for word in words(answer) {
        if word.in_label || !is_term(&word) {
            continue;
        }
        let key = normalize(word.text);
        if !vocabulary.contains(&key) && !missing.iter().any(|m| normalize(m) == key) {
            missing.push(word.text.to_string());
        }
    }
    missing
}

/// A word of a text: a run of letters and digits, with `.` or `,` kept between two digits.
struct Word<'a> {
    text: &'a str,
    /// It begins a sentence (the text's start, or after `.`, `!`, `?`, `:` or a line break).
    starts_sentence: bool,
    /// It is inside square brackets (a citation label).
    in_label: bool,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut sentence_start = true;
    let mut in_brackets = false;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_alphanumeric() {
            let mut j = i + 1;
            while j < chars.len() {
                let d = chars[j].1;
                let joins_digits = (d == '.' || d == ',')
                    && chars[j - 1].1.is_ascii_digit()
                    && chars.get(j + 1).is_some_and(|n| n.1.is_ascii_digit());
                if d.is_alphanumeric() || joins_digits {
                    j += 1;
                } else {
                    break;
                }
            }
            let end = chars.get(j).map_or(text.len(), |(e, _)| *e);
            out.push(Word {
                text: &text[at..end],
                starts_sentence: sentence_start,
                in_label: in_brackets,
            });
            sentence_start = false;
            i = j;
            continue;
        }
        match c {
            '.' | '!' | '?' | ':' | '\n' => sentence_start = true,
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether `word` is a number (two characters or more, with a digit) or a name (a word of
/// three letters or more whose first letter has a lower case, that does not begin a
/// sentence). The case tables are `types::case`'s, not std's.
fn is_term(word: &Word<'_>) -> bool {
    let chars = word.text.chars().count();
    if word.text.chars().any(|c| c.is_ascii_digit()) {
        return chars >= 2;
    }
    let first = word
        .text
        .chars()
        .next()
        .map(String::from)
        .unwrap_or_default();
    chars >= 3 && !word.starts_sentence && crate::types::case::fold(&first) != first
}

/// The form a word is looked up by: case-folded, thousands separators left out.
fn normalize(word: &str) -> String {
    let chars: Vec<char> = word.chars().collect();
    let kept: String = chars
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            !(**c == ','
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                && i.checked_sub(1).is_some_and(|p| chars[p].is_ascii_digit()))
        })
        .map(|(_, c)| *c)
        .collect();
    crate::types::case::fold(&kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "Mozilla was founded in 1998 by members of Netscape. In 2014 Brendan Eich resigned as CEO after 11 days. Revenue was US$329,556,000 in 2014.";

    #[test]
    fn a_guessed_name_or_number_is_found_missing() {
        assert_eq!(
            unsupported_terms("Chris Beard became CEO after Eich [p2].", &[PAGE]),
            ["Beard"]
        );
        assert_eq!(
            unsupported_terms("Its revenue in 2015 was $421 million.", &[PAGE]),
            ["2015", "421"]
        );
    }

    #[test]
    fn what_the_page_or_the_runs_other_texts_hold_is_supported() {
        for answer in [
            "Brendan Eich resigned in 2014, after 11 days [p2].",
            "It was founded in 1998 by members of Netscape.",
            "Revenue was $329556000 in 2014.",
            "It had revenue of US$329,556,000.",
            "Mozilla was founded in 1998.",
            "The page does not say.",
            "In short, members of Netscape founded it [p1] [12].",
        ] {
            assert_eq!(
                unsupported_terms(answer, &[PAGE]),
                Vec::<String>::new(),
                "{answer}"
            );
        }
        // The run's other texts count (the question is not among them: see `step::end`).
        assert_eq!(
            unsupported_terms("Revenue in 2015 was 421.", &[PAGE, "2015: 421"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_sentence_start_and_short_words_are_not_names() {
        // "Unfortunately" begins a sentence; "It" and "3" are too short to be terms.
        assert_eq!(
            unsupported_terms("Unfortunately it is 3 of them. Yes: It is.", &[PAGE]),
            Vec::<String>::new()
        );
        // Each missing term once, in the answer's order.
        assert_eq!(
            unsupported_terms("He met Ada and Ada met Babbage in 1833.", &[PAGE]),
            ["Ada", "Babbage", "1833"]
        );
    }

    #[test]
    fn words_keep_decimal_and_thousands_separators_between_digits() {
        let texts: Vec<&str> = words("It cost 1,200.50 dollars, or 3.5, in 2014.")
            .iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(
            texts,
            ["It", "cost", "1,200.50", "dollars", "or", "3.5", "in", "2014"]
        );
        assert_eq!(normalize("1,200.50"), "1200.50");
        assert_eq!(normalize("ÉCOLE"), "école");
    }
}
