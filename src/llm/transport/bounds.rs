//! What one model reply may cost us, whatever the server sends: the byte caps of a reply
//! and of one streamed line or event, the errors for a reply over them, cut off before its
//! terminator, past the call's deadline, or not in the provider's format at all (an HTML
//! proxy or sign-in page answering 200). Pure: no browser access.

use std::rc::Rc;

use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;

use crate::llm::diagnosis::doctor;
use crate::llm::provider::ProviderConfig;
use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind};
use crate::ports::{Clock, LlmClient};

/// The most a reply may send (body bytes as received), whatever its token cap.
pub const REPLY_BYTES_CEILING: usize = 8 * 1024 * 1024;

/// The least a reply may send: small token caps still get room for the framing.
pub const REPLY_BYTES_FLOOR: usize = 1024 * 1024;

/// Body bytes allowed per reply token. A streamed token costs one event of JSON framing (an
/// OpenAI chunk repeats the id, model and fingerprint: about 200 bytes), so the cap is on
/// what arrives, not on the text it decodes to (which is always less).
pub const BYTES_PER_TOKEN: usize = 1024;

/// The longest one SSE line or event, or one NDJSON line, may grow before it ends.
pub const LINE_BYTES_CAP: usize = 1024 * 1024;

/// The body bytes allowed for a reply of at most `max_tokens` tokens (no cap: the ceiling).
pub fn reply_cap(max_tokens: Option<u32>) -> usize {
    max_tokens.map_or(REPLY_BYTES_CEILING, |t| {
        (t as usize)
            .saturating_mul(BYTES_PER_TOKEN)
            .clamp(REPLY_BYTES_FLOOR, REPLY_BYTES_CEILING)
    })
}

fn mb(bytes: usize) -> String {
    let tenths = bytes * 10 / (1024 * 1024);
    if tenths % 10 == 0 {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// The server sent more than `cap` bytes for one reply (not retried: it would again).
pub fn too_large(config: &ProviderConfig, cap: usize) -> LlmError {
    LlmError::new(
        LlmErrorKind::BadRequest,
        format!(
            "{} sent more than {} MB for one reply, far more than its token cap allows, so the reply was abandoned. Check that the Base URL in Options points to a model server.",
            doctor::capitalized(&doctor::where_(config)),
            mb(cap)
        ),
    )
}

/// One streamed line or event grew past [`LINE_BYTES_CAP`] without ending.
pub fn line_too_long(config: &ProviderConfig) -> LlmError {
    LlmError::new(
        LlmErrorKind::BadRequest,
        format!(
            "{} sent a streamed line longer than {} MB, so the reply was abandoned. Check that the Base URL in Options points to a model server.",
            doctor::capitalized(&doctor::where_(config)),
            mb(LINE_BYTES_CAP)
        ),
    )
}

/// The stream ended before its terminator (`[DONE]`, `message_stop`, `done: true`, a
/// finish reason): what arrived is not a whole answer, so the call fails like a broken
/// connection (and is retried like one).
pub fn cut_off(config: &ProviderConfig, terminator: &str) -> LlmError {
    let mut e = LlmError::new(
        LlmErrorKind::Network,
        format!(
            "The reply from {} was cut off before it ended (no {terminator} arrived): the connection or the server broke off mid-answer.",
            doctor::where_(config)
        ),
    );
    e.detail = Some(format!("{} {terminator}", doctor::CUT_OFF));
    e
}

/// The call ran past its total deadline of `ms` (however often chunks or keep-alive
/// comments arrived). Not retried: another attempt would run as long.
pub fn deadline(config: &ProviderConfig, ms: u64) -> LlmError {
    LlmError::new(
        LlmErrorKind::Deadline,
        format!(
            "{} did not finish its reply within the model call deadline ({} s), so the call was abandoned. A slow local model may need a longer \"Model call deadline\" in Options.",
            doctor::capitalized(&doctor::where_(config)),
            ms / 1000
        ),
    )
}

/// A stream that ended properly but held nothing readable: `count` of its payloads were not
/// the provider's format (not retried: the server would send the same).
pub fn unreadable(config: &ProviderConfig, count: usize) -> LlmError {
    LlmError::new(
        LlmErrorKind::BadRequest,
        format!(
            "{} sent a reply with no answer or tool call that could be read ({count} of its parts were not in the {} format). Check the Base URL in Options and that the server speaks this provider's API.",
            doctor::capitalized(&doctor::where_(config)),
            config.provider.label()
        ),
    )
}

/// What a 200 body is when it is plainly not a model reply: an HTML page (a proxy, captive
/// portal or sign-in page), or a JSON content type with a body that is not JSON.
pub fn not_a_reply(content_type: Option<&str>, body: &str) -> Option<&'static str> {
    let content_type = content_type.unwrap_or_default().to_ascii_lowercase();
    let start = body.trim_start();
    let head = start
        .get(..start.len().min(16))
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.contains("text/html")
        || content_type.contains("xhtml")
        || head.starts_with("<!doctype")
        || head.starts_with("<html")
    {
        return Some("an HTML page");
    }
    // A JSON type with a body that neither is JSON nor starts with a JSON line (NDJSON
    // sent as JSON is a reply).
    let json = |s: &str| kljson::parse_value(s).is_ok();
    let first_line = start.lines().next().unwrap_or_default();
    if content_type.contains("json")
        && (start.starts_with('{') || start.starts_with('['))
        && !json(start)
        && !json(first_line)
    {
        return Some("a body that is not valid JSON");
    }
    None
}

/// A 200 reply that is `what` instead of the provider's format (not retried: the same
/// URL gives the same page).
pub fn wrong_format(config: &ProviderConfig, what: &str) -> LlmError {
    let mut e = LlmError::new(
        LlmErrorKind::Config,
        format!(
            "The server at {} answered with {what}, not {} {} reply: check the Base URL in Options (a proxy or sign-in page may be in the way).",
            config.base(),
            if config.provider.label().starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" },
            config.provider.label()
        ),
    );
    e.status = Some(200);
    e
}

/// A model client whose every call ends by its deadline: the call is dropped (for Chrome's
/// built-in model that aborts the prompt and destroys its session) and fails with
/// [`deadline`]. [`crate::llm::transport::HttpLlm`] keeps its own deadline, which also bounds the
/// first byte and the gaps between chunks.
pub struct WithDeadline {
    inner: Rc<dyn LlmClient>,
    clock: Rc<dyn Clock>,
    config: ProviderConfig,
    total_ms: u64,
}

impl WithDeadline {
    /// `inner` (speaking for `config`), with calls limited to `total_ms`.
    pub fn new(
        inner: Rc<dyn LlmClient>,
        clock: Rc<dyn Clock>,
        config: ProviderConfig,
        total_ms: u64,
    ) -> Self {
        Self {
            inner,
            clock,
            config,
            total_ms,
        }
    }
}

impl LlmClient for WithDeadline {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        async move {
            let call = self.inner.complete(request, on_delta);
            match future::select(call, self.clock.sleep(self.total_ms)).await {
                Either::Left((result, _)) => result,
                Either::Right(_) => Err(deadline(&self.config, self.total_ms)),
            }
        }
        .boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_cap_follows_the_token_cap_within_floor_and_ceiling() {
        assert_eq!(reply_cap(None), REPLY_BYTES_CEILING);
        assert_eq!(reply_cap(Some(10)), REPLY_BYTES_FLOOR);
        assert_eq!(reply_cap(Some(2048)), 2048 * BYTES_PER_TOKEN);
        assert_eq!(reply_cap(Some(u32::MAX)), REPLY_BYTES_CEILING);
    }

    #[test]
    fn html_and_broken_json_are_named() {
        assert_eq!(
            not_a_reply(Some("text/html; charset=utf-8"), "hi"),
            Some("an HTML page")
        );
        assert_eq!(
            not_a_reply(None, "  <!DOCTYPE html><p>Sign in"),
            Some("an HTML page")
        );
        assert_eq!(
            not_a_reply(Some("application/json"), "{\"choices\": ["),
            Some("a body that is not valid JSON")
        );
        assert_eq!(not_a_reply(Some("application/json"), "{}"), None);
        assert_eq!(
            not_a_reply(Some("application/json"), "{\"a\": 1}\n{\"b\": 2}\n"),
            None
        );
        assert_eq!(not_a_reply(Some("text/plain"), "plain answer"), None);
        assert_eq!(not_a_reply(Some("application/json"), "data: {}"), None);
    }

    #[test]
    fn sizes_read_in_megabytes() {
        assert_eq!(mb(8 * 1024 * 1024), "8");
        assert_eq!(mb(1536 * 1024), "1.5");
    }
}
