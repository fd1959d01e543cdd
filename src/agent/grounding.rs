//! Whether an answer about a page rests on guesses the page does not hold.
//!
//! Small models asked what a page does not say answer with a guess: a name or a number from
//! what they know ("Google Stackdriver", "Python", a year). The run's known text (the page
//! with its title and URL, the earlier turns, the user's replies and the successful tool
//! results) either holds each number and each name of the answer or it does not. An answer
//! whose every such term (those of the question aside) is missing from it rests on nothing
//! the run read: it is replaced by [`prompts::ABSTAIN`](super::prompts::ABSTAIN), and the
//! model's answer goes to the Steps view with the terms that were not found. One missing
//! term among supported ones is not enough (a rounded number, a date written another way,
//! a German noun): only an answer with nothing to stand on is replaced.
//!
//! A name is a word in Latin letters that begins with a capital and does not begin a
//! sentence; a number is a run of two digits or more (thousands separators left out).
//! Words break where the script changes, so "Mozillaは1998年" is "Mozilla", "は", "1998",
//! "年". Citation labels (`[p3]`, `[2]`) are not terms.

use std::collections::BTreeSet;

/// The numbers and names of `answer` missing from every text of `known`, when the answer
/// has at least one such term besides those of `question` and every one of them is
/// missing; `None` when anything the answer names is in `known` (or it names nothing).
/// Case is ignored when looking terms up.
pub fn unsupported(answer: &str, question: &str, known: &[&str]) -> Option<Vec<String>> {
    let asked: BTreeSet<String> = terms(question).map(|w| normalize(w.text)).collect();
    let named: Vec<Word<'_>> = terms(answer)
        .filter(|w| !asked.contains(&normalize(w.text)))
        .collect();
    // Most answers name nothing new: the known text (a page can be 1 MB) is not read then.
    if named.is_empty() {
        return None;
    }
    // One word of the known text with a named term's form supports the answer: the words
    // are read until then, not collected (the page is most of them).
    let keys: BTreeSet<String> = named.iter().map(|w| normalize(w.text)).collect();
    let supported = known
        .iter()
        .any(|text| words(text).any(|w| keys.contains(&normalize(w.text))));
    if supported {
        return None;
    }
    let mut missing: Vec<String> = Vec::new();
    for word in named {
        let key = normalize(word.text);
        if !missing.iter().any(|m| normalize(m) == key) {
            missing.push(word.text.to_string());
        }
    }
    (!missing.is_empty()).then_some(missing)
}

/// The numbers and names of `text`, outside citation labels.
fn terms(text: &str) -> impl Iterator<Item = Word<'_>> {
    words(text).filter(|w| !w.in_label && is_term(w))
}

/// A word of a text: a run of characters of one class (digits, with `.` or `,` kept
/// between two digits; Latin letters; other letters), so a word breaks where the script
/// changes.
struct Word<'a> {
    text: &'a str,
    /// It begins a sentence (the text's start, or after `.`, `!`, `?`, `:`, a line break or
    /// a list or heading mark at a line's start).
    starts_sentence: bool,
    /// It is inside square brackets (a citation label).
    in_label: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Digit,
    Latin,
    Other,
}

fn class(c: char) -> Option<Class> {
    if c.is_ascii_digit() {
        Some(Class::Digit)
    } else if c.is_alphabetic() && (c.is_ascii() || ('\u{c0}'..'\u{250}').contains(&c)) {
        Some(Class::Latin)
    } else if c.is_alphanumeric() {
        Some(Class::Other)
    } else {
        None
    }
}

/// The words of `text`, read as they are asked for (the page's text is most of what a
/// check reads, and one supported term ends it).
fn words(text: &str) -> Words<'_> {
    Words {
        text,
        at: 0,
        sentence_start: true,
        in_brackets: false,
    }
}

/// The iterator of [`words`].
struct Words<'a> {
    text: &'a str,
    /// The byte the next word is looked for from.
    at: usize,
    sentence_start: bool,
    in_brackets: bool,
}

impl<'a> Iterator for Words<'a> {
    type Item = Word<'a>;

    fn next(&mut self) -> Option<Word<'a>> {
        loop {
            let c = self.text[self.at..].chars().next()?;
            let Some(kind) = class(c) else {
                match c {
                    '.' | '!' | '?' | ':' => self.sentence_start = true,
                    '\n' => (self.sentence_start, self.in_brackets) = (true, false),
                    '[' => self.in_brackets = true,
                    ']' => self.in_brackets = false,
                    _ => {}
                }
                self.at += c.len_utf8();
                continue;
            };
            let start = self.at;
            let mut end = start + c.len_utf8();
            let mut rest = self.text[end..].chars();
            while let Some(d) = rest.next() {
                let joins_digits = kind == Class::Digit
                    && (d == '.' || d == ',')
                    && rest.clone().next().is_some_and(|n| n.is_ascii_digit());
                if class(d) != Some(kind) && !joins_digits {
                    break;
                }
                end += d.len_utf8();
            }
            let word = Word {
                text: &self.text[start..end],
                starts_sentence: self.sentence_start,
                in_label: self.in_brackets,
            };
            self.sentence_start = false;
            self.at = end;
            return Some(word);
        }
    }
}

/// Whether `word` is a number (two digits or more) or a name (a Latin word of three
/// letters or more whose first letter has a lower case, that does not begin a sentence).
/// The case tables are `types::case`'s, not std's.
fn is_term(word: &Word<'_>) -> bool {
    let Some(first) = word.text.chars().next() else {
        return false;
    };
    if first.is_ascii_digit() {
        return word.text.chars().filter(char::is_ascii_digit).count() >= 2;
    }
    let lower = crate::types::case::fold(first.encode_utf8(&mut [0; 4]));
    class(first) == Some(Class::Latin)
        && word.text.chars().count() >= 3
        && !word.starts_sentence
        && lower != first.to_string()
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

    fn check(answer: &str, question: &str) -> Option<Vec<String>> {
        unsupported(answer, question, &[PAGE])
    }

    #[test]
    fn an_answer_that_names_only_what_the_page_does_not_is_found() {
        assert_eq!(
            check("It was Chris Beard [p2].", "Who became CEO after Eich?"),
            Some(vec!["Chris".into(), "Beard".into()])
        );
        assert_eq!(
            check(
                "The system is Google Stackdriver.",
                "What is Google's system called?"
            ),
            Some(vec!["Stackdriver".into()])
        );
        assert_eq!(
            check(
                "Its revenue in 2015 was $421 million.",
                "What was the revenue in 2015?"
            ),
            Some(vec!["421".into()])
        );
    }

    #[test]
    fn an_answer_with_anything_the_page_holds_is_kept() {
        for answer in [
            "Brendan Eich resigned in 2014, after 11 days [p2].",
            "It was founded in 1998 by members of Netscape.",
            "Revenue was $329556000 in 2014.",
            "Revenue was about $330 million in 2014.",
            "Mozilla was founded in 1998.",
            "The page does not say.",
            "In short, members of Netscape founded it [p1] [12].",
            "Eich, the CEO, left; Chris Beard followed, according to Netscape lore.",
            "Mozilla wurde 1998 von Mitgliedern von Netscape gegründet.",
            "Mozillaは1998年に設立されました。",
            "**Key Facts**: founded in 1998.",
        ] {
            assert_eq!(check(answer, "When?"), None, "{answer}");
        }
        // Names only the question's terms: nothing to hold it to.
        assert_eq!(check("Yes, Foo Bar.", "Is it Foo Bar?"), None);
        // The run's other texts count.
        assert_eq!(
            unsupported("Revenue in 2015 was 421.", "When?", &[PAGE, "2015: 421"]),
            None
        );
    }

    #[test]
    fn a_sentence_start_short_words_and_labels_are_not_terms() {
        // "Unfortunately" begins a sentence; "It" and "3" are too short; "p17" is a label.
        assert_eq!(
            check("Unfortunately it is 3 of them [p17]. Yes: It is.", "?"),
            None
        );
        // A list or heading mark at a line's start begins a sentence too.
        assert_eq!(check("- Unknown\n# Notes", "?"), None);
        // Each missing term once, in the answer's order.
        assert_eq!(
            check("He met Ada and Ada met Babbage in 1833.", "Who?"),
            Some(vec!["Ada".into(), "Babbage".into(), "1833".into()])
        );
    }

    #[test]
    fn words_break_where_the_script_changes_and_keep_digit_separators() {
        let texts: Vec<&str> = words("It cost 1,200.50 dollars, or 3.5, in 2014; Mozillaは1998年")
            .map(|w| w.text)
            .collect();
        assert_eq!(
            texts,
            [
                "It", "cost", "1,200.50", "dollars", "or", "3.5", "in", "2014", "Mozilla", "は",
                "1998", "年"
            ]
        );
        assert_eq!(normalize("1,200.50"), "1200.50");
        assert_eq!(normalize("ÉCOLE"), "école");
    }
}
