//! The tokens of a Rust file as the cycle test needs them: identifiers, `::`, braces and
//! `;`, with comments, string and character literals blanked and `#[cfg(test)]` items left
//! out. A lexer of its own (no extra crate); raw strings and nested block comments handled.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Sep,
    Open,
    Close,
    Semi,
    Other(char),
}

/// `text` with comments, strings and character literals blanked (line breaks kept).
fn blank_literals(text: &str) -> Vec<char> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to.min(chars.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (0, i);
            while j < chars.len() {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let body: String = chars[i + 2 + hashes..].iter().collect();
            let end = body.find(&close).map_or(chars.len(), |at| {
                i + 2 + hashes + body[..at].chars().count() + close.len()
            });
            blank(&mut out, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            let end = if next == Some('\\') {
                (i + 2..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .map(|j| j + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                blank(&mut out, i, end);
                i = end;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The tokens of `text` (literals and comments blanked), each with its line number.
pub(crate) fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let chars = blank_literals(text);
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(chars[start..i].iter().collect()), line));
            continue;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Tok::Sep, line));
            i += 2;
            continue;
        } else if !c.is_whitespace() {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ';' => Tok::Semi,
                    _ => Tok::Other(c),
                },
                line,
            ));
        }
        i += 1;
    }
    out
}

/// `tokens` without the items marked `#[cfg(test)]`.
pub(crate) fn without_tests(tokens: Vec<(Tok, usize)>) -> Vec<(Tok, usize)> {
    let is = |at: usize, want: &[Tok]| {
        want.iter()
            .enumerate()
            .all(|(k, w)| tokens.get(at + k).is_some_and(|(t, _)| t == w))
    };
    let ident = |s: &str| Tok::Ident(s.to_string());
    let cfg_test = [
        Tok::Other('#'),
        Tok::Other('['),
        ident("cfg"),
        Tok::Other('('),
        ident("test"),
        Tok::Other(')'),
        Tok::Other(']'),
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is(i, &cfg_test) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // Skip the item: up to its `;` or the `}` that closes its first `{`.
        i += cfg_test.len();
        let mut depth = 0;
        while i < tokens.len() {
            match tokens[i].0 {
                Tok::Open => depth += 1,
                Tok::Close => depth -= 1,
                Tok::Semi if depth == 0 => {}
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 1;
            if depth == 0 {
                break;
            }
        }
    }
    out
}
