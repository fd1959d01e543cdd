//! The `Retry-After` header's delay (and Gemini's `retryDelay`, the same number with an `s`).

/// The longest wait taken from a server: 10 minutes.
const CAP_MS: u64 = 600_000;

/// `Retry-After` in seconds, as milliseconds (at most ten minutes): decimal digits with an
/// optional fraction (`2`, `0.5`, `1.25`; digits past the millisecond are dropped). The
/// HTTP-date form and anything else are treated as absent. Read without floats: core's float
/// parser and its 10 KB table of powers of five were in the module for this one header.
pub fn parse_retry_after(value: &str) -> Option<u64> {
    let value = value.trim();
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    // Seconds past the cap count as the cap, however many digits there are.
    let secs = whole.bytes().fold(0u64, |secs, b| {
        (secs * 10 + u64::from(b - b'0')).min(CAP_MS / 1000 + 1)
    });
    let millis = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u64, |ms, b| ms * 10 + u64::from(b - b'0'));
    Some((secs * 1000 + millis).min(CAP_MS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seconds_and_fractions() {
        assert_eq!(parse_retry_after("2"), Some(2000));
        assert_eq!(parse_retry_after(" 0.5 "), Some(500));
        assert_eq!(parse_retry_after("1.001"), Some(1001));
        assert_eq!(parse_retry_after("1.0019"), Some(1001));
        assert_eq!(parse_retry_after(".25"), Some(250));
        assert_eq!(parse_retry_after("3."), Some(3000));
        assert_eq!(parse_retry_after("0"), Some(0));
        assert_eq!(parse_retry_after("601"), Some(CAP_MS));
        assert_eq!(
            parse_retry_after("99999999999999999999999999"),
            Some(CAP_MS)
        );
    }

    #[test]
    fn anything_else_is_absent() {
        for value in [
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "-1",
            "+1",
            "",
            " ",
            ".",
            "1.2.3",
            "1e3",
            "NaN",
            "inf",
            "½",
            "1 2",
        ] {
            assert_eq!(parse_retry_after(value), None, "{value:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any seconds with any fraction: the exact milliseconds, truncated, capped.
        #[test]
        fn exact_milliseconds(secs in 0u64..2_000, fraction in "[0-9]{0,9}") {
            let text = if fraction.is_empty() { secs.to_string() } else { format!("{secs}.{fraction}") };
            let millis: u64 = format!("{fraction:0<3}")[..3].parse().unwrap();
            prop_assert_eq!(parse_retry_after(&text), Some((secs * 1000 + millis).min(CAP_MS)));
        }
    }
}
