//! Token estimates for text when a provider reports no usage: a few character classes
//! weighed with constants fitted to o200k_base on `tests/fixtures/tokens.json` (English prose,
//! source code, Chinese and Japanese; see `pkg-scripts/token-fixture.mjs`). No merge tables:
//! the estimate is a single pass over the characters. Pure; never touches the browser.
//!
//! It counts what o200k_base's pre-tokenizer splits on: letter runs (split where a lower-case
//! letter meets an upper-case one; long words cost more), digits in groups of up to three,
//! punctuation runs, whitespace runs, and per-character weights for CJK ideographs, kana and
//! everything else. The weights lean high: an under-count is what overflows a window.

/// `32000` as `32,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What [`estimate_tokens`] weighs: counts of the character classes of one text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenFeatures {
    /// ASCII letter runs, split at lower-to-upper case changes.
    pub word_pieces: f64,
    /// Letters past the first [`SHORT_WORD`] of each word piece.
    pub long_word_letters: f64,
    /// ASCII digit runs, counted in groups of up to three.
    pub digit_groups: f64,
    /// Runs of ASCII punctuation and symbols.
    pub punct_runs: f64,
    /// ASCII punctuation and symbol characters.
    pub punct_chars: f64,
    /// Whitespace runs that hold a line break.
    pub line_breaks: f64,
    /// Whitespace runs of two or more characters without a line break (indentation).
    pub space_runs: f64,
    /// CJK ideographs.
    pub han: f64,
    /// Hiragana, katakana and Hangul syllables.
    pub kana: f64,
    /// CJK and full-width punctuation.
    pub cjk_punct: f64,
    /// Other letters (accented Latin, Cyrillic, Greek, Hangul, ...).
    pub other_letters: f64,
    /// Other characters (emoji, symbols, ...).
    pub other_chars: f64,
}

impl TokenFeatures {
    /// The counts in field order (the order of the weights).
    pub fn values(&self) -> [f64; 12] {
        [
            self.word_pieces,
            self.long_word_letters,
            self.digit_groups,
            self.punct_runs,
            self.punct_chars,
            self.line_breaks,
            self.space_runs,
            self.han,
            self.kana,
            self.cjk_punct,
            self.other_letters,
            self.other_chars,
        ]
    }
}

/// Letters of a word piece that its first token covers.
pub const SHORT_WORD: usize = 6;

/// Weights of [`TokenFeatures`], in field order (tokens per unit).
/// Fitted by least squares on the relative error over the fixture (`examples/token_features.rs`
/// prints the features and counts), then raised by 4% so that the estimate leans high.
/// Other letters and other characters have no fixture text to fit: their weights are guesses.
const WEIGHTS: [f64; 12] = [
    1.11, // word piece
    0.08, // letter past the sixth of a word piece
    1.32, // group of up to three digits
    0.55, // punctuation run
    0.17, // punctuation character
    0.89, // whitespace run with a line break
    0.52, // other whitespace run of two or more
    0.80, // CJK ideograph
    0.84, // kana or Hangul syllable
    1.00, // CJK or full-width punctuation
    0.50, // other letter
    1.00, // other character
];

/// Estimated tokens of `text` (o200k_base-like, leaning high).
pub fn estimate_tokens(text: &str) -> u64 {
    let f = token_features(text);
    let values = f.values();
    let sum: f64 = values.iter().zip(WEIGHTS).map(|(v, w)| v * w).sum();
    sum.ceil() as u64
}

/// The class of one character, for run detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
    Punct,
    Space,
    Other,
}

fn class_of(c: char) -> Class {
    match c {
        'a'..='z' => Class::Lower,
        'A'..='Z' => Class::Upper,
        '0'..='9' => Class::Digit,
        c if c.is_ascii_punctuation() => Class::Punct,
        c if c.is_whitespace() => Class::Space,
        _ => Class::Other,
    }
}

/// Counts the character classes of `text` (what [`estimate_tokens`] weighs).
pub fn token_features(text: &str) -> TokenFeatures {
    let mut f = TokenFeatures::default();
    let mut run = Class::Other;
    let mut len = 0usize; // of the current run (word piece, digits, spaces)
    let mut line_break = false; // the current whitespace run holds one
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
    for c in text.chars() {
        let class = class_of(c);
        let letter = |k| matches!(k, Class::Lower | Class::Upper);
        // A word piece goes on through letters, except where an upper-case letter follows a
        // lower-case one (camelCase); other runs go on through their own class.
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
            Class::Other => other_char(&mut f, c),
            _ => {}
        }
    }
    close(&mut f, run, len, line_break);
    f
}

/// Counts one non-ASCII character into its class.
fn other_char(f: &mut TokenFeatures, c: char) {
    let u = c as u32;
    match u {
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF => f.han += 1.0,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F | 0xAC00..=0xD7AF => f.kana += 1.0,
        0x3000..=0x303F | 0xFF00..=0xFF65 => f.cjk_punct += 1.0,
        _ if c.is_alphabetic() => f.other_letters += 1.0,
        _ => f.other_chars += 1.0,
    }
}
