//! IP address text as `std::net` reads it, for the one question the crate asks of it:
//! whether a URL's host is this computer. Written out instead of calling
//! `str::parse::<Ipv4Addr>` and `Ipv6Addr`, whose parser was 0.6 KB of the gzipped wasm for
//! this check alone (README, Benchmarks); the tests hold it to std on arbitrary text. Pure.

/// A reader over an address's text, as std's: every part is read or nothing is.
struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// Runs `read`, and puts the reader back where it was when it fails.
    fn atomically<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let at = self.at;
        let result = read(self);
        if result.is_none() {
            self.at = at;
        }
        result
    }

    fn char(&mut self, c: u8) -> Option<()> {
        self.atomically(|r| (r.text.get(r.at) == Some(&c)).then(|| r.at += 1))
    }

    /// A number of at most `max_digits` digits in `radix` that fits in a u16 (and under
    /// 256 in decimal); in decimal, no leading zero.
    fn number(&mut self, radix: u32, max_digits: usize) -> Option<u16> {
        self.atomically(|r| {
            let start = r.at;
            let mut value: u32 = 0;
            while let Some(digit) = r
                .text
                .get(r.at)
                .and_then(|&b| char::from(b).to_digit(radix))
            {
                r.at += 1;
                if r.at - start > max_digits {
                    return None;
                }
                value = value * radix + digit;
            }
            let digits = r.at - start;
            let leading_zero = radix == 10 && digits > 1 && r.text[start] == b'0';
            let limit = if radix == 10 { 255 } else { 0xFFFF };
            (digits > 0 && !leading_zero && value <= limit).then_some(value as u16)
        })
    }

    /// `index` > 0: the separator `sep`, then `read`.
    fn separated<T>(
        &mut self,
        sep: u8,
        index: usize,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<T> {
        self.atomically(|r| {
            if index > 0 {
                r.char(sep)?;
            }
            read(r)
        })
    }

    fn ipv4(&mut self) -> Option<[u8; 4]> {
        self.atomically(|r| {
            let mut octets = [0u8; 4];
            for (i, octet) in octets.iter_mut().enumerate() {
                *octet = r.separated(b'.', i, |r| r.number(10, 3))? as u8;
            }
            Some(octets)
        })
    }

    /// Colon-separated groups into `groups`, the last two possibly an IPv4 address:
    /// how many were read, and whether they ended with IPv4.
    fn groups(&mut self, groups: &mut [u16]) -> (usize, bool) {
        let limit = groups.len();
        for i in 0..limit {
            if i + 1 < limit {
                if let Some([a, b, c, d]) = self.separated(b':', i, Self::ipv4) {
                    groups[i] = u16::from_be_bytes([a, b]);
                    groups[i + 1] = u16::from_be_bytes([c, d]);
                    return (i + 2, true);
                }
            }
            match self.separated(b':', i, |r| r.number(16, 4)) {
                Some(group) => groups[i] = group,
                None => return (i, false),
            }
        }
        (limit, false)
    }

    fn ipv6(&mut self) -> Option<[u16; 8]> {
        self.atomically(|r| {
            let mut head = [0u16; 8];
            let (head_size, head_ipv4) = r.groups(&mut head);
            if head_size == 8 {
                return Some(head);
            }
            if head_ipv4 {
                return None;
            }
            r.char(b':')?;
            r.char(b':')?;
            // `::` stands for at least one group of zeros.
            let mut tail = [0u16; 7];
            let limit = 8 - (head_size + 1);
            let (tail_size, _) = r.groups(&mut tail[..limit]);
            head[8 - tail_size..].copy_from_slice(&tail[..tail_size]);
            Some(head)
        })
    }
}

/// `text` read whole by `read`.
fn whole<T>(text: &str, read: impl FnOnce(&mut Reader<'_>) -> Option<T>) -> Option<T> {
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
    };
    read(&mut reader).filter(|_| reader.at == text.len())
}

/// `text` as an IPv4 address, as `Ipv4Addr`'s `FromStr` reads it.
pub fn ipv4(text: &str) -> Option<[u8; 4]> {
    whole(text, |r| r.ipv4())
}

/// `text` as an IPv6 address (its eight groups), as `Ipv6Addr`'s `FromStr` reads it.
pub fn ipv6(text: &str) -> Option<[u16; 8]> {
    whole(text, |r| r.ipv6())
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use proptest::prelude::*;

    use super::{ipv4, ipv6};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn reads_ipv4_as_std_does(text in "[0-9.]{0,16}|(25[0-9]|2[0-4][0-9]|1?[0-9]{1,2}|0[0-9]+)(\\.[0-9]{1,4}){0,4}") {
            prop_assert_eq!(ipv4(&text), text.parse::<Ipv4Addr>().ok().map(|a| a.octets()));
        }

        #[test]
        fn reads_ipv6_as_std_does(text in "[0-9a-fA-F:.]{0,24}|(:|::|[0-9a-f]{1,5}|\\.[0-9]{1,3}|1\\.2\\.3\\.4){0,10}") {
            prop_assert_eq!(ipv6(&text), text.parse::<Ipv6Addr>().ok().map(|a| a.segments()));
        }
    }

    #[test]
    fn reads_the_usual_forms() {
        assert_eq!(ipv4("127.0.0.1"), Some([127, 0, 0, 1]));
        assert_eq!(ipv4("127.0.0.01"), None);
        assert_eq!(ipv4("256.0.0.1"), None);
        assert_eq!(ipv6("::1"), Some([0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(ipv6("0:0::0:1"), Some([0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(ipv6("::127.0.0.1"), Some([0, 0, 0, 0, 0, 0, 0x7f00, 1]));
        assert_eq!(ipv6("1:2:3:4:5:6:7:8:9"), None);
        assert_eq!(ipv6(":::1"), None);
    }
}
