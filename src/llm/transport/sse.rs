//! Incremental splitters for streamed bodies, fed with arbitrary byte chunks as they arrive
//! from the network: [`SseParser`] for `text/event-stream` (Server-Sent Events) and
//! [`LineSplitter`] for newline-delimited JSON. Pure and allocation-light.

/// One complete event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Splits a byte stream into events. Comments (`: keep-alive`) and unknown fields are
/// ignored; CR, LF and CRLF line ends are accepted; a chunk may end anywhere, even inside a
/// UTF-8 character.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    /// Bytes at the start of `buffer` already known to hold no line end.
    scanned: usize,
    event: Option<String>,
    data: Vec<String>,
    /// Bytes held in `data`.
    data_bytes: usize,
    has_data: bool,
}

impl SseParser {
    /// A parser with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held for the line and the event not yet complete (callers cap it).
    pub fn pending(&self) -> usize {
        self.buffer.len() + self.data_bytes
    }

    /// Feeds a chunk; returns the events completed by it. Each byte is scanned once and
    /// the consumed lines are dropped once per chunk, so a stream costs time linear in its
    /// length however it is split.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut pos = self.scanned;
        loop {
            let Some(i) = self.buffer[pos..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                pos = self.buffer.len();
                break;
            };
            let end = pos + i;
            // A lone CR at the very end may be the first half of CRLF: wait for more.
            if self.buffer[end] == b'\r' && end + 1 == self.buffer.len() {
                pos = end;
                break;
            }
            let skip = if self.buffer[end] == b'\r' && self.buffer.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + skip;
            pos = start;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        self.scanned = pos - start;
        events
    }

    /// Ends the stream: a final event without its blank line is still delivered.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.scanned = 0;
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let line = String::from_utf8_lossy(&rest).into_owned();
            let line = line.trim_end_matches('\r');
            if let Some(event) = self.line(line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data_bytes += value.len() + 1;
                self.data.push(value.to_string());
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        self.data_bytes = 0;
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

/// Splits a byte stream into lines (newline-delimited JSON), tolerating chunks that end
/// anywhere, CRLF line ends and blank lines.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buffer: Vec<u8>,
    /// Bytes at the start of `buffer` already known to hold no newline.
    scanned: usize,
}

impl LineSplitter {
    /// A splitter with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held for the line not yet complete (callers cap it).
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// Feeds a chunk; returns the non-empty lines it completed. Each byte is scanned once
    /// and the consumed lines are dropped once per chunk (linear however it is split).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(chunk);
        let mut lines = Vec::new();
        let mut start = 0;
        let mut pos = self.scanned;
        while let Some(i) = self.buffer[pos..].iter().position(|&b| b == b'\n') {
            let end = pos + i;
            let text = String::from_utf8_lossy(&self.buffer[start..end]);
            let text = text.trim();
            if !text.is_empty() {
                lines.push(text.to_string());
            }
            start = end + 1;
            pos = start;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        lines
    }

    /// Ends the stream: a last line without its newline is still delivered.
    pub fn finish(&mut self) -> Option<String> {
        self.scanned = 0;
        let rest = std::mem::take(&mut self.buffer);
        let text = String::from_utf8_lossy(&rest);
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_events_comments_and_crlf() {
        let mut p = SseParser::new();
        let mut out = p
            .push(b": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\n");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data, "{\"a\":1}");
        let second = out.remove(1);
        assert_eq!(
            second,
            SseEvent {
                event: Some("x".into()),
                data: "one\ntwo".into()
            }
        );
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn final_event_without_blank_line_is_delivered() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: [DONE]").is_empty());
        assert_eq!(p.finish().map(|e| e.data), Some("[DONE]".to_string()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Splitting a stream at arbitrary points yields the same events as one chunk.
        #[test]
        fn chunking_does_not_change_events(
            datas in proptest::collection::vec("[a-zA-Z0-9 {}\":,é]{0,20}", 0..6),
            cuts in proptest::collection::vec(0usize..400, 0..10),
            crlf in any::<bool>(),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let text: String = datas.iter().map(|d| format!("data: {d}{nl}{nl}")).collect();
            let bytes = text.as_bytes();
            let mut whole = SseParser::new();
            let mut expected = whole.push(bytes);
            expected.extend(whole.finish());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut parts = SseParser::new();
            let mut got = Vec::new();
            let mut start = 0;
            for c in cuts { got.extend(parts.push(&bytes[start..c])); start = c; }
            got.extend(parts.push(&bytes[start..]));
            got.extend(parts.finish());
            prop_assert_eq!(got.iter().map(|e| e.data.clone()).collect::<Vec<_>>(), datas.clone());
            prop_assert_eq!(got, expected);
        }

        /// Any bytes, split anywhere (even inside a CRLF or a UTF-8 character), give the same
        /// events and lines as the whole body at once.
        #[test]
        fn any_bytes_split_anywhere_give_the_same_events_and_lines(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), any::<u8>()],
                0..400,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let mut whole = SseParser::new();
            let mut expected = whole.push(&bytes);
            expected.extend(whole.finish());
            let mut whole_lines = LineSplitter::new();
            let mut expected_lines = whole_lines.push(&bytes);
            expected_lines.extend(whole_lines.finish());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let (mut parts, mut lines) = (SseParser::new(), LineSplitter::new());
            let (mut got, mut got_lines) = (Vec::new(), Vec::new());
            let mut start = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                got.extend(parts.push(&bytes[start..c]));
                got_lines.extend(lines.push(&bytes[start..c]));
                start = c;
            }
            got.extend(parts.finish());
            got_lines.extend(lines.finish());
            prop_assert_eq!(got, expected);
            prop_assert_eq!(got_lines, expected_lines);
        }

        /// Arbitrary bytes never panic the parser.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut p = SseParser::new();
            let _ = p.push(&bytes);
            let _ = p.finish();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Lines come out the same however the stream is cut.
        #[test]
        fn lines_survive_any_chunking(
            lines in proptest::collection::vec("[a-z{}\":,é0-9 ]{1,30}", 0..8),
            cuts in proptest::collection::vec(0usize..300, 0..10),
            crlf in any::<bool>(),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let text: String = lines.iter().map(|l| format!("{l}{nl}")).collect();
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut splitter = LineSplitter::new();
            let mut got = Vec::new();
            let mut start = 0;
            for c in cuts { got.extend(splitter.push(&bytes[start..c])); start = c; }
            got.extend(splitter.push(&bytes[start..]));
            got.extend(splitter.finish());
            let expected: Vec<String> = lines.iter().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
