//! Case folding for matching words: the page index, query rewrites and subtopics compare
//! text this way. It is `str::to_lowercase` with the final sigma folded like every sigma
//! (`ς` and `Σ` both become `σ`, as Unicode's case folding does, so `ΟΔΟΣ` matches `οδος`),
//! from a table of 184 ranges (2 KB) instead of std's table of 1,400 pairs (11 KB, 10 KB
//! gzipped in the module). The tests derive the table from std and compare every character.

/// Characters outside ASCII that lowercase to another one character: `(first, count, step,
/// delta)` covers `first + i * step` for `i` in `0..=count`, each lowercased by adding
/// `delta`. Step 2 runs are the alternating upper/lower pairs of Latin, Greek and Cyrillic
/// extensions. U+0130 (`İ`, two characters lowercased) and `ς` are handled in [`fold`].
#[rustfmt::skip]
const RANGES: [(u32, u8, u8, i32); 184] = [
    (0xc0, 22, 1, 32), (0xd8, 6, 1, 32), (0x100, 23, 2, 1), (0x132, 2, 2, 1), (0x139, 7, 2, 1),
    (0x14a, 22, 2, 1), (0x178, 0, 1, -121), (0x179, 2, 2, 1), (0x181, 0, 1, 210), (0x182, 1, 2, 1),
    (0x186, 0, 1, 206), (0x187, 0, 1, 1), (0x189, 1, 1, 205), (0x18b, 0, 1, 1), (0x18e, 0, 1, 79),
    (0x18f, 0, 1, 202), (0x190, 0, 1, 203), (0x191, 0, 1, 1), (0x193, 0, 1, 205),
    (0x194, 0, 1, 207), (0x196, 0, 1, 211), (0x197, 0, 1, 209), (0x198, 0, 1, 1),
    (0x19c, 0, 1, 211), (0x19d, 0, 1, 213), (0x19f, 0, 1, 214), (0x1a0, 2, 2, 1),
    (0x1a6, 0, 1, 218), (0x1a7, 0, 1, 1), (0x1a9, 0, 1, 218), (0x1ac, 0, 1, 1), (0x1ae, 0, 1, 218),
    (0x1af, 0, 1, 1), (0x1b1, 1, 1, 217), (0x1b3, 1, 2, 1), (0x1b7, 0, 1, 219), (0x1b8, 0, 1, 1),
    (0x1bc, 0, 1, 1), (0x1c4, 0, 1, 2), (0x1c5, 0, 1, 1), (0x1c7, 0, 1, 2), (0x1c8, 0, 1, 1),
    (0x1ca, 0, 1, 2), (0x1cb, 8, 2, 1), (0x1de, 8, 2, 1), (0x1f1, 0, 1, 2), (0x1f2, 1, 2, 1),
    (0x1f6, 0, 1, -97), (0x1f7, 0, 1, -56), (0x1f8, 19, 2, 1), (0x220, 0, 1, -130),
    (0x222, 8, 2, 1), (0x23a, 0, 1, 10795), (0x23b, 0, 1, 1), (0x23d, 0, 1, -163),
    (0x23e, 0, 1, 10792), (0x241, 0, 1, 1), (0x243, 0, 1, -195), (0x244, 0, 1, 69),
    (0x245, 0, 1, 71), (0x246, 4, 2, 1), (0x370, 1, 2, 1), (0x376, 0, 1, 1), (0x37f, 0, 1, 116),
    (0x386, 0, 1, 38), (0x388, 2, 1, 37), (0x38c, 0, 1, 64), (0x38e, 1, 1, 63), (0x391, 16, 1, 32),
    (0x3a3, 8, 1, 32), (0x3cf, 0, 1, 8), (0x3d8, 11, 2, 1), (0x3f4, 0, 1, -60), (0x3f7, 0, 1, 1),
    (0x3f9, 0, 1, -7), (0x3fa, 0, 1, 1), (0x3fd, 2, 1, -130), (0x400, 15, 1, 80),
    (0x410, 31, 1, 32), (0x460, 16, 2, 1), (0x48a, 26, 2, 1), (0x4c0, 0, 1, 15), (0x4c1, 6, 2, 1),
    (0x4d0, 47, 2, 1), (0x531, 37, 1, 48), (0x10a0, 37, 1, 7264), (0x10c7, 0, 1, 7264),
    (0x10cd, 0, 1, 7264), (0x13a0, 79, 1, 38864), (0x13f0, 5, 1, 8), (0x1c89, 0, 1, 1),
    (0x1c90, 42, 1, -3008), (0x1cbd, 2, 1, -3008), (0x1e00, 74, 2, 1), (0x1e9e, 0, 1, -7615),
    (0x1ea0, 47, 2, 1), (0x1f08, 7, 1, -8), (0x1f18, 5, 1, -8), (0x1f28, 7, 1, -8),
    (0x1f38, 7, 1, -8), (0x1f48, 5, 1, -8), (0x1f59, 3, 2, -8), (0x1f68, 7, 1, -8),
    (0x1f88, 7, 1, -8), (0x1f98, 7, 1, -8), (0x1fa8, 7, 1, -8), (0x1fb8, 1, 1, -8),
    (0x1fba, 1, 1, -74), (0x1fbc, 0, 1, -9), (0x1fc8, 3, 1, -86), (0x1fcc, 0, 1, -9),
    (0x1fd8, 1, 1, -8), (0x1fda, 1, 1, -100), (0x1fe8, 1, 1, -8), (0x1fea, 1, 1, -112),
    (0x1fec, 0, 1, -7), (0x1ff8, 1, 1, -128), (0x1ffa, 1, 1, -126), (0x1ffc, 0, 1, -9),
    (0x2126, 0, 1, -7517), (0x212a, 0, 1, -8383), (0x212b, 0, 1, -8262), (0x2132, 0, 1, 28),
    (0x2160, 15, 1, 16), (0x2183, 0, 1, 1), (0x24b6, 25, 1, 26), (0x2c00, 47, 1, 48),
    (0x2c60, 0, 1, 1), (0x2c62, 0, 1, -10743), (0x2c63, 0, 1, -3814), (0x2c64, 0, 1, -10727),
    (0x2c67, 2, 2, 1), (0x2c6d, 0, 1, -10780), (0x2c6e, 0, 1, -10749), (0x2c6f, 0, 1, -10783),
    (0x2c70, 0, 1, -10782), (0x2c72, 0, 1, 1), (0x2c75, 0, 1, 1), (0x2c7e, 1, 1, -10815),
    (0x2c80, 49, 2, 1), (0x2ceb, 1, 2, 1), (0x2cf2, 0, 1, 1), (0xa640, 22, 2, 1),
    (0xa680, 13, 2, 1), (0xa722, 6, 2, 1), (0xa732, 30, 2, 1), (0xa779, 1, 2, 1),
    (0xa77d, 0, 1, -35332), (0xa77e, 4, 2, 1), (0xa78b, 0, 1, 1), (0xa78d, 0, 1, -42280),
    (0xa790, 1, 2, 1), (0xa796, 9, 2, 1), (0xa7aa, 0, 1, -42308), (0xa7ab, 0, 1, -42319),
    (0xa7ac, 0, 1, -42315), (0xa7ad, 0, 1, -42305), (0xa7ae, 0, 1, -42308), (0xa7b0, 0, 1, -42258),
    (0xa7b1, 0, 1, -42282), (0xa7b2, 0, 1, -42261), (0xa7b3, 0, 1, 928), (0xa7b4, 7, 2, 1),
    (0xa7c4, 0, 1, -48), (0xa7c5, 0, 1, -42307), (0xa7c6, 0, 1, -35384), (0xa7c7, 1, 2, 1),
    (0xa7cb, 0, 1, -42343), (0xa7cc, 7, 2, 1), (0xa7dc, 0, 1, -42561), (0xa7f5, 0, 1, 1),
    (0xff21, 25, 1, 32), (0x10400, 39, 1, 40), (0x104b0, 35, 1, 40), (0x10570, 10, 1, 39),
    (0x1057c, 14, 1, 39), (0x1058c, 6, 1, 39), (0x10594, 1, 1, 39), (0x10c80, 50, 1, 64),
    (0x10d50, 21, 1, 32), (0x118a0, 31, 1, 32), (0x16e40, 31, 1, 32), (0x16ea0, 24, 1, 27),
    (0x1e900, 33, 1, 34),
];

/// `text` case-folded: `text.to_lowercase()`, with every `ς` as `σ`. Runs of ASCII (most of
/// a European page) are copied and lowered in place, a run at a time.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        // A byte loop, not `position`: the size-first build would call a closure per byte.
        let bytes = rest.as_bytes();
        let mut ascii = 0;
        while ascii < bytes.len() && bytes[ascii] < 0x80 {
            ascii += 1;
        }
        let start = out.len();
        out.push_str(&rest[..ascii]);
        out[start..].make_ascii_lowercase();
        rest = &rest[ascii..];
        let mut chars = rest.chars();
        let Some(c) = chars.next() else {
            return out;
        };
        match c {
            // Latin-1, most of the accents of a European page, without the table.
            '\u{c0}'..='\u{de}' if c != '\u{d7}' => {
                out.push(char::from_u32(u32::from(c) + 32).unwrap_or(c));
            }
            '\u{80}'..='\u{ff}' => out.push(c),
            '\u{130}' => out.push_str("i\u{307}"),
            'ς' | 'Σ' => out.push('σ'),
            c => out.push(lower(c)),
        }
        rest = chars.as_str();
    }
}

/// `c` lowercased by [`RANGES`] (itself when it has no one-character lowercase there).
fn lower(c: char) -> char {
    let code = u32::from(c);
    // The last range starting at or before `code`, by bisection written out (the size-first
    // build would call `partition_point`'s closure at every step).
    let (mut low, mut high) = (0, RANGES.len());
    while low < high {
        let mid = low + (high - low) / 2;
        if RANGES[mid].0 <= code {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    let Some(&(first, count, step, delta)) = low.checked_sub(1).map(|i| &RANGES[i]) else {
        return c;
    };
    let offset = code - first;
    if offset % u32::from(step) != 0 || offset / u32::from(step) > u32::from(count) {
        return c;
    }
    code.checked_add_signed(delta)
        .and_then(char::from_u32)
        .unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: std's lowercasing, with the final sigma folded.
    fn std_fold(text: &str) -> String {
        text.to_lowercase().replace('ς', "σ")
    }

    /// [`RANGES`] as derived from std's `char::to_lowercase` (the Unicode version of the
    /// toolchain): consecutive characters with the same delta, a step of 1 or 2 apart.
    fn derived() -> Vec<(u32, u8, u8, i32)> {
        let mut ranges: Vec<(u32, u32, u32, i32)> = Vec::new(); // first, last, step, delta
        for c in (0x80..=0x10ffff).filter_map(char::from_u32) {
            let lower = c.to_lowercase().next().unwrap_or(c);
            if lower == c || c == '\u{130}' || c == 'ς' {
                continue;
            }
            let (code, delta) = (u32::from(c), u32::from(lower) as i32 - u32::from(c) as i32);
            if let Some((first, last, step, d)) = ranges.last_mut() {
                let gap = code - *last;
                let fits = if first == last {
                    gap <= 2
                } else {
                    gap == *step
                };
                if *d == delta && fits && (code - *first) / gap <= u32::from(u8::MAX) {
                    (*last, *step) = (code, gap);
                    continue;
                }
            }
            ranges.push((code, code, 1, delta));
        }
        ranges
            .into_iter()
            .map(|(first, last, step, delta)| {
                let count = u8::try_from((last - first) / step).unwrap();
                (first, count, u8::try_from(step).unwrap(), delta)
            })
            .collect()
    }

    #[test]
    fn the_table_is_what_std_derives() {
        let derived = derived();
        let lines: Vec<String> = derived.iter().map(|r| format!("{r:#x?}")).collect();
        assert!(
            derived == RANGES,
            "the toolchain's Unicode tables changed: RANGES should be ({} ranges)\n{}",
            derived.len(),
            lines.join("\n")
        );
    }

    #[test]
    fn every_character_folds_as_std_lowercases_it() {
        let mut buf = [0; 4];
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            let text: &str = c.encode_utf8(&mut buf);
            assert_eq!(fold(text), std_fold(text), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn sigma_folds_the_same_at_the_end_of_a_word() {
        assert_eq!(fold("ΟΔΟΣ"), fold("οδος"));
        assert_eq!(fold("ΟΔΟΣ"), "οδοσ");
        assert_eq!(fold("İstanbul"), "i\u{307}stanbul");
        assert_eq!(fold("Straße ÄÖÜ"), "straße äöü");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_text_folds_as_std_lowercases_it(text in "\\PC{0,40}") {
            prop_assert_eq!(fold(&text), std_fold(&text));
        }

        /// Sigmas among letters, marks and apostrophes (std's final-sigma context).
        #[test]
        fn sigmas_in_context_fold_as_std(text in "[ΣσςΑαAa İ\u{301}'.]{0,16}") {
            prop_assert_eq!(fold(&text), std_fold(&text));
        }
    }
}
