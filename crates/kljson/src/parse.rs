//! The crate's JSON parser: text to a [`Value`], accepting exactly what `serde_json`'s
//! `from_str::<Value>` accepts and giving the same value, or the same error message with
//! the same line and column (`tests/parity/parse.rs` holds it to serde_json on arbitrary
//! text). Written for this one job instead of going through serde's `Deserializer` and
//! `Visitor` machinery, which the wasm otherwise carried for this call alone (README,
//! Benchmarks). Numbers are read as serde_json reads them without its `float_roundtrip`
//! feature: an integer that fits is a `u64` or `i64`, anything else an `f64` from the
//! decimal significand and exponent. Nesting is limited to 127 levels, as serde_json's
//! is, so hostile text cannot exhaust the stack.

use serde_json::{Map, Number, Value};

/// Why the text is not JSON: serde_json's words, then ` at line L column C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    EofList,
    EofObject,
    EofString,
    EofValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedIdent,
    ExpectedValue,
    InvalidEscape,
    InvalidNumber,
    NumberOutOfRange,
    ControlCharacter,
    KeyMustBeAString,
    LoneLeadingSurrogate,
    TrailingComma,
    TrailingCharacters,
    UnexpectedEndOfHexEscape,
    RecursionLimit,
}

impl Code {
    fn words(self) -> &'static str {
        match self {
            Code::EofList => "EOF while parsing a list",
            Code::EofObject => "EOF while parsing an object",
            Code::EofString => "EOF while parsing a string",
            Code::EofValue => "EOF while parsing a value",
            Code::ExpectedColon => "expected `:`",
            Code::ExpectedListCommaOrEnd => "expected `,` or `]`",
            Code::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            Code::ExpectedIdent => "expected ident",
            Code::ExpectedValue => "expected value",
            Code::InvalidEscape => "invalid escape",
            Code::InvalidNumber => "invalid number",
            Code::NumberOutOfRange => "number out of range",
            Code::ControlCharacter => {
                "control character (\\u0000-\\u001F) found while parsing a string"
            }
            Code::KeyMustBeAString => "key must be a string",
            Code::LoneLeadingSurrogate => "lone leading surrogate in hex escape",
            Code::TrailingComma => "trailing comma",
            Code::TrailingCharacters => "trailing characters",
            Code::UnexpectedEndOfHexEscape => "unexpected end of hex escape",
            Code::RecursionLimit => "recursion limit exceeded",
        }
    }
}

/// `text` parsed as one JSON value (whitespace around it allowed); the error is serde_json's
/// message with its line and column.
pub fn parse_value(text: &str) -> Result<Value, String> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 128,
    };
    let value = parser.value()?;
    match parser.whitespace() {
        Some(_) => Err(parser.peek_error(Code::TrailingCharacters)),
        None => Ok(value),
    }
}

type Parsed<T> = Result<T, String>;

struct Parser<'a> {
    text: &'a str,
    /// `text`'s bytes.
    bytes: &'a [u8],
    /// The next byte to read.
    at: usize,
    /// Levels of nesting left (serde_json's `remaining_depth`).
    depth: u8,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn peek_or_null(&self) -> u8 {
        self.peek().unwrap_or(0)
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// The error at byte `i`: line and column as serde_json counts them.
    #[cold]
    #[inline(never)]
    fn error_at(&self, code: Code, i: usize) -> String {
        let before = &self.bytes[..i];
        let start_of_line = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
        let line = 1 + memchr::memchr_iter(b'\n', &before[..start_of_line]).count();
        format!(
            "{} at line {line} column {}",
            code.words(),
            i - start_of_line
        )
    }

    /// An error at the byte just read.
    fn error(&self, code: Code) -> String {
        self.error_at(code, self.at)
    }

    /// An error at the byte about to be read.
    fn peek_error(&self, code: Code) -> String {
        self.error_at(code, self.bytes.len().min(self.at + 1))
    }

    /// Skips whitespace; the next byte, not read.
    fn whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
        self.peek()
    }

    fn value(&mut self) -> Parsed<Value> {
        let Some(peek) = self.whitespace() else {
            return Err(self.peek_error(Code::EofValue));
        };
        match peek {
            b'n' => self.ident(b"null", Value::Null),
            b't' => self.ident(b"true", Value::Bool(true)),
            b'f' => self.ident(b"false", Value::Bool(false)),
            b'-' => {
                self.at += 1;
                self.integer(false)
            }
            b'0'..=b'9' => self.integer(true),
            b'"' => {
                self.at += 1;
                self.string().map(Value::String)
            }
            b'[' | b'{' => {
                self.depth -= 1;
                if self.depth == 0 {
                    return Err(self.peek_error(Code::RecursionLimit));
                }
                self.at += 1;
                let value = if peek == b'[' {
                    self.array()
                } else {
                    self.object()
                };
                self.depth += 1;
                value
            }
            _ => Err(self.peek_error(Code::ExpectedValue)),
        }
    }

    /// `word` (its first byte peeked) as `value`.
    fn ident(&mut self, word: &[u8], value: Value) -> Parsed<Value> {
        self.at += 1;
        for &expected in &word[1..] {
            match self.next() {
                None => return Err(self.error(Code::EofValue)),
                Some(b) if b != expected => return Err(self.error(Code::ExpectedIdent)),
                Some(_) => {}
            }
        }
        Ok(value)
    }

    /// The items after `[`, and the `]`.
    fn array(&mut self) -> Parsed<Value> {
        let mut items = Vec::new();
        loop {
            let Some(peek) = self.whitespace() else {
                return Err(self.peek_error(Code::EofList));
            };
            if peek == b']' {
                self.at += 1;
                return Ok(Value::Array(items));
            }
            if !items.is_empty() {
                if peek != b',' {
                    return Err(self.peek_error(Code::ExpectedListCommaOrEnd));
                }
                self.after_comma(b']')?;
            }
            items.push(self.value()?);
        }
    }

    /// Past a `,` between items or members: the next byte, which must not be `close`.
    fn after_comma(&mut self, close: u8) -> Parsed<u8> {
        self.at += 1;
        match self.whitespace() {
            Some(b) if b == close => Err(self.peek_error(Code::TrailingComma)),
            Some(b) => Ok(b),
            None => Err(self.peek_error(Code::EofValue)),
        }
    }

    /// The members after `{`, and the `}`.
    fn object(&mut self) -> Parsed<Value> {
        let mut map = Map::new();
        loop {
            let Some(peek) = self.whitespace() else {
                return Err(self.peek_error(Code::EofObject));
            };
            if peek == b'}' {
                self.at += 1;
                return Ok(Value::Object(map));
            }
            let key_next = if map.is_empty() {
                peek
            } else if peek == b',' {
                self.after_comma(b'}')?
            } else {
                return Err(self.peek_error(Code::ExpectedObjectCommaOrEnd));
            };
            if key_next != b'"' {
                return Err(self.peek_error(Code::KeyMustBeAString));
            }
            self.at += 1;
            let key = self.string()?;
            match self.whitespace() {
                Some(b':') => self.at += 1,
                Some(_) => return Err(self.peek_error(Code::ExpectedColon)),
                None => return Err(self.peek_error(Code::EofObject)),
            }
            let value = self.value()?;
            map.insert(key, value);
        }
    }

    /// A string's content after its `"`, and the closing `"`.
    fn string(&mut self) -> Parsed<String> {
        let mut out = String::new();
        let mut start = self.at;
        loop {
            while let Some(&b) = self.bytes.get(self.at) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            let Some(b) = self.peek() else {
                return Err(self.error(Code::EofString));
            };
            // Both ends are at ASCII bytes (a quote, a backslash, a control character, or
            // just after an escape): character boundaries of the text.
            out.push_str(&self.text[start..self.at]);
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => self.escape(&mut out)?,
                _ => return Err(self.error(Code::ControlCharacter)),
            }
            start = self.at;
        }
        Ok(out)
    }

    /// An escape after its `\`, appended to `out`.
    fn escape(&mut self, out: &mut String) -> Parsed<()> {
        let Some(b) = self.next() else {
            return Err(self.error(Code::EofString));
        };
        let byte = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(out),
            _ => return Err(self.error(Code::InvalidEscape)),
        };
        out.push(char::from(byte));
        Ok(())
    }

    /// A `\u` escape after its `u` (a surrogate pair is two of them), appended to `out`.
    fn unicode_escape(&mut self, out: &mut String) -> Parsed<()> {
        let n = self.hex4()?;
        let c = match n {
            0xDC00..=0xDFFF => return Err(self.error(Code::LoneLeadingSurrogate)),
            0xD800..=0xDBFF => {
                for expected in [b'\\', b'u'] {
                    match self.peek() {
                        None => return Err(self.error(Code::EofString)),
                        Some(b) => {
                            self.at += 1;
                            if b != expected {
                                return Err(self.error(Code::UnexpectedEndOfHexEscape));
                            }
                        }
                    }
                }
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error(Code::LoneLeadingSurrogate));
                }
                0x1_0000 + ((u32::from(n) - 0xD800) << 10 | (u32::from(low) - 0xDC00))
            }
            _ => u32::from(n),
        };
        // Never a surrogate here (both kinds were handled above), so always a character.
        out.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
        Ok(())
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Parsed<u16> {
        let Some(digits) = self.bytes.get(self.at..self.at + 4) else {
            self.at = self.bytes.len();
            return Err(self.error(Code::EofString));
        };
        self.at += 4;
        let mut n = 0u16;
        for &d in digits {
            let Some(v) = char::from(d).to_digit(16) else {
                return Err(self.error(Code::InvalidEscape));
            };
            n = n << 4 | v as u16;
        }
        Ok(n)
    }

    /// A number after its sign.
    fn integer(&mut self, positive: bool) -> Parsed<Value> {
        let Some(first) = self.next() else {
            return Err(self.error(Code::EofValue));
        };
        let mut significand = match first {
            b'0' if self.peek_or_null().is_ascii_digit() => {
                return Err(self.peek_error(Code::InvalidNumber))
            }
            b'0'..=b'9' => u64::from(first - b'0'),
            _ => return Err(self.error(Code::InvalidNumber)),
        };
        if first != b'0' {
            while let c @ b'0'..=b'9' = self.peek_or_null() {
                let digit = u64::from(c - b'0');
                if overflows(significand, digit) {
                    // Too long for a u64: an f64 of the first digits, scaled.
                    let mut exponent = 0;
                    while self.peek_or_null().is_ascii_digit() {
                        self.at += 1;
                        exponent += 1;
                    }
                    return self.float_rest(positive, significand, exponent).map(float);
                }
                self.at += 1;
                significand = significand * 10 + digit;
            }
        }
        match self.peek_or_null() {
            b'.' | b'e' | b'E' => self.float_rest(positive, significand, 0).map(float),
            _ if positive => Ok(Value::Number(significand.into())),
            _ => {
                let negative = (significand as i64).wrapping_neg();
                if negative >= 0 {
                    // -0, or below i64::MIN.
                    Ok(float(-(significand as f64)))
                } else {
                    Ok(Value::Number(negative.into()))
                }
            }
        }
    }

    /// The fraction and exponent of a number, if any (`.` or `e` peeked, or neither).
    fn float_rest(&mut self, positive: bool, mut significand: u64, exponent: i32) -> Parsed<f64> {
        let mut exponent = exponent;
        if self.peek_or_null() == b'.' {
            self.at += 1;
            let mut fraction = 0;
            while let c @ b'0'..=b'9' = self.peek_or_null() {
                let digit = u64::from(c - b'0');
                if overflows(significand, digit) {
                    // Further digits are dropped.
                    while self.peek_or_null().is_ascii_digit() {
                        self.at += 1;
                    }
                    fraction = fraction.min(-1);
                    break;
                }
                self.at += 1;
                significand = significand * 10 + digit;
                fraction -= 1;
                exponent -= 1;
            }
            if fraction == 0 {
                return Err(match self.peek() {
                    Some(_) => self.peek_error(Code::InvalidNumber),
                    None => self.peek_error(Code::EofValue),
                });
            }
        }
        if let b'e' | b'E' = self.peek_or_null() {
            self.at += 1;
            let positive_exp = match self.peek_or_null() {
                b'+' => {
                    self.at += 1;
                    true
                }
                b'-' => {
                    self.at += 1;
                    false
                }
                _ => true,
            };
            let mut exp = match self.next() {
                None => return Err(self.error(Code::EofValue)),
                Some(c @ b'0'..=b'9') => i32::from(c - b'0'),
                Some(_) => return Err(self.error(Code::InvalidNumber)),
            };
            while let c @ b'0'..=b'9' = self.peek_or_null() {
                self.at += 1;
                let digit = i32::from(c - b'0');
                if exp >= i32::MAX / 10 && (exp > i32::MAX / 10 || digit > i32::MAX % 10) {
                    // An exponent past i32: infinite (an error) or zero.
                    if significand != 0 && positive_exp {
                        return Err(self.error(Code::NumberOutOfRange));
                    }
                    while self.peek_or_null().is_ascii_digit() {
                        self.at += 1;
                    }
                    return Ok(if positive { 0.0 } else { -0.0 });
                }
                exp = exp * 10 + digit;
            }
            exponent = if positive_exp {
                exponent.saturating_add(exp)
            } else {
                exponent.saturating_sub(exp)
            };
        }
        self.scaled(positive, significand, exponent)
    }

    /// `significand × 10^exponent`, as serde_json computes it.
    fn scaled(&self, positive: bool, significand: u64, mut exponent: i32) -> Parsed<f64> {
        let mut f = significand as f64;
        loop {
            match POW10.get(exponent.unsigned_abs() as usize) {
                Some(&pow) => {
                    if exponent >= 0 {
                        f *= pow;
                        if f.is_infinite() {
                            return Err(self.error(Code::NumberOutOfRange));
                        }
                    } else {
                        f /= pow;
                    }
                    break;
                }
                None => {
                    if f == 0.0 {
                        break;
                    }
                    if exponent >= 0 {
                        return Err(self.error(Code::NumberOutOfRange));
                    }
                    f /= 1e308;
                    exponent += 308;
                }
            }
        }
        Ok(if positive { f } else { -f })
    }
}

/// Whether `significand * 10 + digit` overflows a u64.
fn overflows(significand: u64, digit: u64) -> bool {
    significand >= u64::MAX / 10 && (significand > u64::MAX / 10 || digit > u64::MAX % 10)
}

/// A finite float as a JSON number (the parser never makes another).
fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// Powers of ten as f64 literals (each correctly rounded by the compiler), as serde_json's.
static POW10: [f64; 309] = [
    1e000, 1e001, 1e002, 1e003, 1e004, 1e005, 1e006, 1e007, 1e008, 1e009, 1e010, 1e011, 1e012,
    1e013, 1e014, 1e015, 1e016, 1e017, 1e018, 1e019, 1e020, 1e021, 1e022, 1e023, 1e024, 1e025,
    1e026, 1e027, 1e028, 1e029, 1e030, 1e031, 1e032, 1e033, 1e034, 1e035, 1e036, 1e037, 1e038,
    1e039, 1e040, 1e041, 1e042, 1e043, 1e044, 1e045, 1e046, 1e047, 1e048, 1e049, 1e050, 1e051,
    1e052, 1e053, 1e054, 1e055, 1e056, 1e057, 1e058, 1e059, 1e060, 1e061, 1e062, 1e063, 1e064,
    1e065, 1e066, 1e067, 1e068, 1e069, 1e070, 1e071, 1e072, 1e073, 1e074, 1e075, 1e076, 1e077,
    1e078, 1e079, 1e080, 1e081, 1e082, 1e083, 1e084, 1e085, 1e086, 1e087, 1e088, 1e089, 1e090,
    1e091, 1e092, 1e093, 1e094, 1e095, 1e096, 1e097, 1e098, 1e099, 1e100, 1e101, 1e102, 1e103,
    1e104, 1e105, 1e106, 1e107, 1e108, 1e109, 1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116,
    1e117, 1e118, 1e119, 1e120, 1e121, 1e122, 1e123, 1e124, 1e125, 1e126, 1e127, 1e128, 1e129,
    1e130, 1e131, 1e132, 1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139, 1e140, 1e141, 1e142,
    1e143, 1e144, 1e145, 1e146, 1e147, 1e148, 1e149, 1e150, 1e151, 1e152, 1e153, 1e154, 1e155,
    1e156, 1e157, 1e158, 1e159, 1e160, 1e161, 1e162, 1e163, 1e164, 1e165, 1e166, 1e167, 1e168,
    1e169, 1e170, 1e171, 1e172, 1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179, 1e180, 1e181,
    1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188, 1e189, 1e190, 1e191, 1e192, 1e193, 1e194,
    1e195, 1e196, 1e197, 1e198, 1e199, 1e200, 1e201, 1e202, 1e203, 1e204, 1e205, 1e206, 1e207,
    1e208, 1e209, 1e210, 1e211, 1e212, 1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219, 1e220,
    1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227, 1e228, 1e229, 1e230, 1e231, 1e232, 1e233,
    1e234, 1e235, 1e236, 1e237, 1e238, 1e239, 1e240, 1e241, 1e242, 1e243, 1e244, 1e245, 1e246,
    1e247, 1e248, 1e249, 1e250, 1e251, 1e252, 1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259,
    1e260, 1e261, 1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268, 1e269, 1e270, 1e271, 1e272,
    1e273, 1e274, 1e275, 1e276, 1e277, 1e278, 1e279, 1e280, 1e281, 1e282, 1e283, 1e284, 1e285,
    1e286, 1e287, 1e288, 1e289, 1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298,
    1e299, 1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308,
];
