//! An incremental parser for `text/event-stream` bodies (Server-Sent Events), fed with
//! arbitrary byte chunks as they arrive from the network. Pure and allocation-light.

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
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseParser {
    /// A parser with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns the events completed by it.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n' || b == b'\r') {
            // A lone CR at the very end may be the first half of CRLF: wait for more.
            if self.buffer[end] == b'\r' && end + 1 == self.buffer.len() {
                break;
            }
            let skip = if self.buffer[end] == b'\r' && self.buffer.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            let line: Vec<u8> = self.buffer.drain(..end + skip).take(end).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        events
    }

    /// Ends the stream: a final event without its blank line is still delivered.
    pub fn finish(&mut self) -> Option<SseEvent> {
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
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
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

        /// Arbitrary bytes never panic the parser.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut p = SseParser::new();
            let _ = p.push(&bytes);
            let _ = p.finish();
        }
    }
}
