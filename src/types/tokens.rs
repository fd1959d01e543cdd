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

/// Texts shorter than this are estimated directly: hashing them would save nothing.
const MEMO_MIN_BYTES: usize = 256;
/// Slots of the estimate memo (direct-mapped: a text evicts the one in its slot).
const MEMO_SLOTS: usize = 128;

/// One memo slot: the text's hash and length, and its estimate.
#[derive(Clone, Copy)]
struct MemoSlot {
    hash: u64,
    len: usize,
    tokens: u64,
}

std::thread_local! {
    static MEMO: std::cell::RefCell<[Option<MemoSlot>; MEMO_SLOTS]> =
        const { std::cell::RefCell::new([None; MEMO_SLOTS]) };
}

/// [`estimate_tokens`], remembered for recently estimated texts. The requests of one run
/// repeat most of their text (the system message, the page block, the question, earlier tool
/// results), and hashing a text is several times cheaper than estimating it. A text is known
/// by its length and a 64-bit hash: a collision (which page text would have to be crafted
/// for) costs one wrong estimate, never more.
pub fn estimate_tokens_memo(text: &str) -> u64 {
    if text.len() < MEMO_MIN_BYTES {
        return estimate_tokens(text);
    }
    remembered(hash64(0, text.as_bytes()), text.len(), || {
        estimate_tokens(text)
    })
}

/// [`estimate_tokens`] of `value` written as JSON, remembered like [`estimate_tokens_memo`]
/// but known by a hash of its structure, so that a tool's schema is not written out again
/// for every request.
pub fn estimate_json_tokens_memo(value: &serde_json::Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = Hasher64(0);
    value.hash(&mut hasher);
    // No text is usize::MAX bytes long: the two kinds of key never meet.
    remembered(hasher.finish(), usize::MAX, || {
        estimate_tokens(&kljson::to_string(value))
    })
}

/// The remembered estimate for the text known by `hash` and `len`, else `estimate()`
/// (then remembered in its slot).
fn remembered(hash: u64, len: usize, estimate: impl FnOnce() -> u64) -> u64 {
    let slot = (hash % MEMO_SLOTS as u64) as usize;
    let known = MEMO.with_borrow(|memo| {
        memo[slot]
            .filter(|m| m.hash == hash && m.len == len)
            .map(|m| m.tokens)
    });
    known.unwrap_or_else(|| {
        let tokens = estimate();
        MEMO.with_borrow_mut(|memo| memo[slot] = Some(MemoSlot { hash, len, tokens }));
        tokens
    })
}

/// [`hash64`] as a [`std::hash::Hasher`], for structured values.
struct Hasher64(u64);

impl std::hash::Hasher for Hasher64 {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash64(self.0, bytes);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A 64-bit hash of `bytes` continuing from `seed`, eight bytes at a time (multiply-rotate,
/// then murmur3's finaliser).
fn hash64(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (seed ^ bytes.len() as u64).wrapping_mul(K);
    // Whole words by `try_into` (one load in wasm, where `copy_from_slice` is a call).
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let tail = (chunks.remainder().iter().enumerate())
        .fold(0u64, |t, (i, &b)| t | u64::from(b) << (8 * i));
    h = (h ^ tail).wrapping_mul(K);
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
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

/// The class of each ASCII byte, so that the common case needs no UTF-8 decoding and no
/// branches on the character. Every other character is whitespace or [`Class::Other`].
const ASCII_CLASS: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = match c {
            b'a'..=b'z' => Class::Lower,
            b'A'..=b'Z' => Class::Upper,
            b'0'..=b'9' => Class::Digit,
            // char::is_whitespace for ASCII: tab, line feed, vertical tab, form feed,
            // carriage return and space.
            b'\t'..=b'\r' | b' ' => Class::Space,
            _ if c.is_ascii_punctuation() => Class::Punct,
            _ => Class::Other,
        };
        b += 1;
    }
    table
};

/// Integer counts while scanning (what [`TokenFeatures`] holds as `f64`).
#[derive(Default)]
struct Counts {
    word_pieces: u64,
    long_word_letters: u64,
    digit_groups: u64,
    punct_runs: u64,
    punct_chars: u64,
    line_breaks: u64,
    space_runs: u64,
    other: TokenFeatures,
}

impl Counts {
    /// Counts the run that just ended.
    fn close(&mut self, run: Class, len: usize, line_break: bool) {
        match run {
            Class::Lower | Class::Upper => {
                self.word_pieces += 1;
                self.long_word_letters += len.saturating_sub(SHORT_WORD) as u64;
            }
            Class::Digit => self.digit_groups += len.div_ceil(3) as u64,
            Class::Punct => self.punct_runs += 1,
            Class::Space if line_break => self.line_breaks += 1,
            Class::Space if len >= 2 => self.space_runs += 1,
            _ => {}
        }
    }

    fn features(self) -> TokenFeatures {
        TokenFeatures {
            word_pieces: self.word_pieces as f64,
            long_word_letters: self.long_word_letters as f64,
            digit_groups: self.digit_groups as f64,
            punct_runs: self.punct_runs as f64,
            punct_chars: self.punct_chars as f64,
            line_breaks: self.line_breaks as f64,
            space_runs: self.space_runs as f64,
            ..self.other
        }
    }
}

/// Counts the character classes of `text` (what [`estimate_tokens`] weighs). One pass over
/// the bytes: ASCII by table, other characters decoded.
pub fn token_features(text: &str) -> TokenFeatures {
    let bytes = text.as_bytes();
    let mut counts = Counts::default();
    let mut run = Class::Other;
    let mut len = 0usize; // of the current run (word piece, digits, spaces)
    let mut line_break = false; // the current whitespace run holds one
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (class, width) = if b < 128 {
            (ASCII_CLASS[usize::from(b)], 1)
        } else {
            let c = text[i..].chars().next().unwrap_or_default();
            let class = if c.is_whitespace() {
                Class::Space
            } else {
                other_char(&mut counts.other, c);
                Class::Other
            };
            (class, c.len_utf8())
        };
        i += width;
        // A word piece goes on through letters, except where an upper-case letter follows a
        // lower-case one (camelCase); other runs go on through their own class.
        let same = match (run, class) {
            (Class::Lower, Class::Lower) | (Class::Upper, Class::Lower | Class::Upper) => true,
            (Class::Lower, Class::Upper) | (Class::Other, _) => false,
            _ => class == run,
        };
        if !same {
            counts.close(run, len, line_break);
            len = 0;
            line_break = false;
        }
        len += 1;
        run = class;
        match class {
            Class::Punct => counts.punct_chars += 1,
            Class::Space => line_break |= b == b'\n' || b == b'\r',
            Class::Other if b < 128 => counts.other.other_chars += 1.0,
            _ => {}
        }
        if class == Class::Other || b >= 128 {
            continue;
        }
        // The rest of the run's ASCII bytes of the same class change nothing but its length
        // (and the punctuation and line-break counts): a tight loop instead of the above.
        let start = i;
        while let Some(&next) = bytes.get(i) {
            if next >= 128 || ASCII_CLASS[usize::from(next)] != class {
                break;
            }
            line_break |= next == b'\n' || next == b'\r';
            i += 1;
        }
        len += i - start;
        if class == Class::Punct {
            counts.punct_chars += (i - start) as u64;
        }
    }
    counts.close(run, len, line_break);
    counts.features()
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
