//! Finding JSON objects in model text: models wrap JSON in code fences and prose, so the
//! parsers for control blocks and text tool calls scan for balanced `{...}` candidates.

/// The longest prefix of a text scanned for objects, in bytes: model text beyond it (a reply
/// is capped by its tokens long before) is not searched.
pub const MAX_SCAN_BYTES: usize = 256 * 1024;

/// The most characters one search visits in all (each candidate `{` rescans until its
/// brace closes, so hostile text such as `{{{{...` would otherwise cost the square of its
/// length). Real replies need a few times [`MAX_SCAN_BYTES`] at most.
pub const MAX_SCAN_STEPS: usize = 16 * MAX_SCAN_BYTES;

/// The balanced `{...}` substrings of `text`, outermost first, left to right (a candidate
/// may still fail to parse as JSON). Only the first [`MAX_SCAN_BYTES`] are searched, and the
/// search stops after [`MAX_SCAN_STEPS`] characters.
pub fn json_objects(text: &str) -> impl Iterator<Item = &str> {
    Objects::new(text)
}

/// The search behind [`json_objects`], counting its work.
struct Objects<'a> {
    text: &'a str,
    start: usize,
    steps: usize,
}

impl<'a> Objects<'a> {
    fn new(text: &'a str) -> Self {
        let mut end = text.len().min(MAX_SCAN_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Self {
            text: &text[..end],
            start: 0,
            steps: 0,
        }
    }

    /// Byte offset of the brace closing the one at `s[0]`, skipping strings; counts the
    /// characters visited and gives up when the budget is spent.
    fn matching_brace(&mut self, s: &str) -> Option<usize> {
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        for (i, ch) in s.char_indices() {
            self.steps += 1;
            if self.steps > MAX_SCAN_STEPS {
                return None;
            }
            if in_string {
                match (escaped, ch) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match ch {
                '"' => in_string = true,
                '{' => depth += 1,
                '}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

impl<'a> Iterator for Objects<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let text = self.text;
        while self.steps <= MAX_SCAN_STEPS {
            let open = text[self.start..].find('{')? + self.start;
            self.start = open + 1;
            if let Some(close) = self.matching_brace(&text[open..]) {
                return Some(&text[open..open + close + 1]);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_and_skips_braces_in_strings() {
        let found: Vec<&str> = json_objects(r#"a {"x": "}"} b {"y": {"z": 1}} {broken"#).collect();
        assert_eq!(
            found,
            [r#"{"x": "}"}"#, r#"{"y": {"z": 1}}"#, r#"{"z": 1}"#]
        );
    }

    #[test]
    fn hostile_braces_cost_a_bounded_number_of_steps() {
        // A megabyte of `{` would take 5 * 10^11 steps unbounded (each brace rescans the rest).
        let text = "{".repeat(1 << 20);
        let mut objects = Objects::new(&text);
        assert_eq!(objects.text.len(), MAX_SCAN_BYTES);
        assert_eq!(objects.next(), None);
        assert!(
            objects.steps <= MAX_SCAN_STEPS + 1,
            "{} steps",
            objects.steps
        );
    }

    #[test]
    fn text_past_the_scanned_prefix_is_not_searched() {
        let near = format!("{}{{\"a\": 1}}", "x".repeat(MAX_SCAN_BYTES - 20));
        assert_eq!(json_objects(&near).next(), Some("{\"a\": 1}"));
        let far = format!("{}{{\"a\": 1}}", "é".repeat(MAX_SCAN_BYTES / 2));
        assert_eq!(json_objects(&far).next(), None);
    }

    #[test]
    fn nested_objects_in_a_long_reply_fit_the_budget() {
        // A reply the size of the scanned prefix, holding objects nested 8 deep, is found.
        let inner = format!("{{\"t\": \"{}\"}}", "w".repeat(MAX_SCAN_BYTES / 2));
        let nested = (0..8).fold(inner, |acc, _| format!("{{\"n\": {acc}}}"));
        assert_eq!(json_objects(&nested).count(), 9);
    }
}
