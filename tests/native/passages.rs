//! The page knowledge base: the passages cover the page text exactly once, in
//! order; none exceeds its size bound; their heading paths are those of the enclosing
//! headings; a passage's own distinctive sentence retrieves it first.

use knowledgelens::page::passages::{heading, split, MAX_CHARS};
use knowledgelens::page::PageIndex;
use proptest::prelude::*;

/// A word from a small vocabulary (so passages share many words).
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "the",
            "harbour",
            "light",
            "ship",
            "river",
            "tide",
            "north",
            "stone",
            "bridge",
            "map",
            "Über",
            "café",
            "東京",
            "данные",
            "2024",
        ])
        .prop_map(str::to_string),
        "[a-z]{1,9}",
    ]
}

/// A sentence: a few words and a full stop.
fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..14).prop_map(|w| format!("{}.", w.join(" ")))
}

/// A line of a page as the reader writes it: a heading, a paragraph (sometimes far longer
/// than a passage), a list item, or a table row; or something odd.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..=7, prop::collection::vec(word(), 1..6)).prop_map(|(level, w)| format!(
            "{} {}",
            "#".repeat(level),
            w.join(" ")
        )),
        prop::collection::vec(sentence(), 1..80).prop_map(|s| s.join(" ")),
        prop::collection::vec(word(), 1..8).prop_map(|w| format!("- {}", w.join(" "))),
        prop::collection::vec(word(), 1..8).prop_map(|w| w.join(" ")),
        "[a-z#\\. ]{0,40}",
        "x{1300,2600}",
    ]
}

/// A page: lines apart by one or two line breaks.
fn page() -> impl Strategy<Value = String> {
    prop::collection::vec((line(), prop::bool::ANY), 0..40).prop_map(|lines| {
        let mut text = String::new();
        for (line, blank) in lines {
            text.push_str(&line);
            text.push_str(if blank { "\n\n" } else { "\n" });
        }
        text
    })
}

/// The headings enclosing the passage `range`: every heading line that starts at or before
/// the line holding its first character other than a line break (its own included; for a
/// passage of line breaks alone, the line before it), each closing those of its level and
/// deeper.
fn enclosing(text: &str, range: std::ops::Range<usize>) -> Vec<String> {
    let body = &text[range.clone()];
    let lead = body.len() - body.trim_start_matches('\n').len();
    let content = if lead < body.len() {
        range.start + lead
    } else {
        range.start.saturating_sub(1)
    };
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        if line_start > content {
            break;
        }
        if let Some((level, title)) = heading(line.trim()) {
            path.retain(|(l, _)| *l < level);
            path.push((level, title.to_string()));
        }
        line_start += line.len() + 1;
    }
    path.into_iter().map(|(_, t)| t).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn passages_cover_the_text_once_in_order_within_the_bound(text in page()) {
        let passages = split(&text);
        let mut at = 0;
        let mut chars = 0;
        for p in &passages {
            prop_assert_eq!(p.range.start, at, "a gap or an overlap before {:?}", p);
            prop_assert!(p.range.end > p.range.start, "an empty passage");
            prop_assert_eq!(p.start_char, chars);
            prop_assert_eq!(p.chars, text[p.range.clone()].chars().count());
            prop_assert!(p.chars <= MAX_CHARS, "{} characters", p.chars);
            at = p.range.end;
            chars += p.chars;
        }
        prop_assert_eq!(at, text.len());
    }

    #[test]
    fn arbitrary_text_is_covered_too(text in "(\\PC|\n){0,3000}") {
        let passages = split(&text);
        let joined: String = passages.iter().map(|p| &text[p.range.clone()]).collect();
        prop_assert_eq!(joined, text);
        prop_assert!(passages.iter().all(|p| p.chars <= MAX_CHARS));
    }

    #[test]
    fn heading_paths_are_those_of_the_enclosing_headings(text in page()) {
        for p in split(&text) {
            prop_assert_eq!(&p.headings, &enclosing(&text, p.range.clone()), "{:?}", p);
        }
    }

    #[test]
    fn a_passage_s_distinctive_sentence_retrieves_it_first(
        lines in prop::collection::vec(
            prop_oneof![
                (1usize..=3, prop::collection::vec(word(), 1..4))
                    .prop_map(|(level, w)| format!("{} {}", "#".repeat(level), w.join(" "))),
                prop::collection::vec(sentence(), 1..30).prop_map(|s| s.join(" ")),
            ],
            1..30,
        ),
        target in any::<prop::sample::Index>(),
        words in prop::collection::vec(word(), 2..10),
        serial in 10_000u32..99_999,
    ) {
        // The distinctive sentence goes into a paragraph; a serial number nowhere else on
        // the page makes it distinctive.
        let paragraphs: Vec<usize> =
            (0..lines.len()).filter(|&i| !lines[i].starts_with('#')).collect();
        prop_assume!(!paragraphs.is_empty());
        let chosen = paragraphs[target.index(paragraphs.len())];
        let distinctive = format!("{} {serial} {}.", words[0], words[1..].join(" "));
        let mut lines = lines;
        lines[chosen] = format!("{} {distinctive}", lines[chosen]);
        let text = lines.join("\n\n");
        let index = PageIndex::build(&text);
        let holder = index
            .passages()
            .iter()
            .position(|p| text[p.range.clone()].contains(&distinctive))
            .expect("one passage holds the whole sentence");
        let hits = index.search(&text, &distinctive, 3);
        prop_assert!(!hits.is_empty());
        prop_assert_eq!(hits[0].index, holder);
    }
}

#[test]
fn a_one_megabyte_page_splits_into_bounded_passages() {
    let paragraph = "The harbour master logs every ship that passes the light. ".repeat(12);
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 1_000_000 {
        n += 1;
        text.push_str(&format!("## Section {n}\n{paragraph}\n\n"));
    }
    text.push_str("## Last\nThe lighthouse keeper's cat is called Marmalade.");
    let index = PageIndex::build(&text);
    assert!(index.passages().len() > 1_000, "{}", index.passages().len());
    let hits = index.search(&text, "what is the name of the keeper's cat", 3);
    let last = index.passages().len() - 1;
    assert_eq!(hits[0].index, last);
    assert_eq!(index.passages()[last].headings, ["Last"]);
}
