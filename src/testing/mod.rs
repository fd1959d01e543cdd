//! In-memory ports for native tests and benchmarks: a scripted model and a scripted search
//! client that fail on an unexpected call, a memory store with fault injection, a manual clock whose sleeps
//! advance time instantly, a seeded random source, a recording event sink and a recording notifier. For chaos tests that stop a run
//! anywhere: a store and a model whose operations yield (so a run has many points at which
//! polling can stop) and [`poll_times`], which polls a future a given number of times.
//! Nothing here touches the browser.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;

use crate::llm::{ChatRequest, ChatResponse, LlmError, LlmErrorKind, Role, ToolCall, Usage};
use crate::ports::LlmClient;
use crate::service::ModelFactory;
use crate::settings::Settings;

mod capture;
mod notifier;
mod phases;
mod random;
pub mod research;
mod search;
mod store;
mod time;
pub mod tokens;

pub use capture::{test_png, ScriptedCapture};
pub use notifier::{NotifierCall, RecordingNotifier};
pub use phases::{PhaseError, Phases};
pub use random::SeededRandom;
pub use search::{search_result, NoSearch, ScriptedSearch, ScriptedSearches};

pub use store::{resume_all, MemoryStore, YieldingStore};
pub use time::{
    poll_times, polls_to_finish, yield_now, ManualClock, RecordingSink, StaticPages, INCOGNITO,
    NO_ACCESS, UNREADABLE,
};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A text reply (streamed in a few deltas).
    Text(String),
    /// A tool call with a thought.
    Tool {
        /// Thought text.
        thought: String,
        /// Tool name.
        name: String,
        /// JSON arguments.
        arguments: String,
    },
    /// A failure.
    Fail(LlmError),
    /// A full response.
    Raw(ChatResponse),
}

impl Reply {
    /// A text reply.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text(s.into())
    }
    /// A tool call.
    pub fn tool(name: &str, arguments: &str) -> Self {
        Self::Tool {
            thought: format!("I will use {name}."),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
    /// A reflection call's reply (`{"error_type", "analysis", "suggested_fix"}`).
    pub fn reflection(analysis: &str, suggested_fix: &str) -> Self {
        Self::Text(
            kljson::json!({
                "error_type": "scripted",
                "analysis": analysis,
                "suggested_fix": suggested_fix,
            })
            .to_string(),
        )
    }
    /// A grading call's reply: one `(relevant, confidence, reason)` per result, numbered
    /// from 1.
    pub fn grades(grades: &[(bool, f64, &str)]) -> Self {
        let grades: Vec<serde_json::Value> = grades
            .iter()
            .enumerate()
            .map(|(i, (relevant, confidence, reason))| {
                kljson::json!({
                    "index": i + 1,
                    "relevant": relevant,
                    "confidence": confidence,
                    "reason": reason,
                })
            })
            .collect();
        Self::Text(kljson::json!({ "grades": grades }).to_string())
    }
    /// A rewrite call's reply (`{"query": ...}`).
    pub fn rewrite(query: &str) -> Self {
        Self::Text(kljson::json!({ "query": query }).to_string())
    }
    /// An HTTP-status failure.
    pub fn status(status: u16) -> Self {
        let mut e = LlmError::new(LlmErrorKind::from_status(status), format!("HTTP {status}"));
        e.status = Some(status);
        Self::Fail(e)
    }
}

impl Reply {
    /// A one-line summary for failure messages.
    fn summary(&self) -> String {
        match self {
            Self::Text(text) => format!("text {:?}", short(text)),
            Self::Tool {
                name, arguments, ..
            } => format!("tool call {name}({})", short(arguments)),
            Self::Fail(e) => format!("failure {:?} ({})", e.kind, short(&e.message)),
            Self::Raw(r) => format!(
                "raw response {:?} with {} tool call(s)",
                short(&r.content),
                r.tool_calls.len()
            ),
        }
    }
}

/// `text` on one line, cut to 80 characters.
fn short(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// The last user message of `request`, summarized for failure messages.
fn request_summary(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or_else(
            || "(no user message)".to_string(),
            |m| format!("{:?}", short(&m.content)),
        )
}

/// A model that plays back replies in order and records the requests.
///
/// It fails the test on a call the script has no reply for (it panics) and, when dropped,
/// on replies the run never asked for, so a test states exactly the calls it expects. A
/// [`ScriptedLlm::lenient`] model instead answers an exhausted script with a `BadRequest`
/// error (counted by [`ScriptedLlm::unexpected_calls`]) and allows unconsumed replies: for
/// tests that stop a run at an arbitrary point, or whose random inputs make the number of
/// calls unknowable.
pub struct ScriptedLlm {
    replies: RefCell<VecDeque<Reply>>,
    /// Every request received.
    pub requests: RefCell<Vec<ChatRequest>>,
    unexpected: Cell<u32>,
    /// Usage reported per call (None: none reported).
    pub usage: Cell<Option<Usage>>,
    /// Keep a copy of every request (on by default; benchmarks turn it off).
    pub record_requests: Cell<bool>,
    calls: Cell<usize>,
    lenient: bool,
}

impl ScriptedLlm {
    /// A strict model with `replies`.
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            replies: RefCell::new(replies.into()),
            requests: RefCell::default(),
            unexpected: Cell::new(0),
            usage: Cell::new(None),
            record_requests: Cell::new(true),
            calls: Cell::new(0),
            lenient: false,
        }
    }
    /// This model, answering a call past the end of the script with a `BadRequest` error
    /// instead of panicking, and not checking on drop that every reply was consumed.
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }
    /// Replies not consumed.
    pub fn remaining(&self) -> usize {
        self.replies.borrow().len()
    }
    /// Calls made after the script ran out (only a lenient model survives one).
    pub fn unexpected_calls(&self) -> u32 {
        self.unexpected.get()
    }
    /// Model calls made.
    pub fn calls(&self) -> usize {
        self.calls.get()
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        if self.lenient || std::thread::panicking() {
            return;
        }
        let replies = self.replies.get_mut();
        if let Some(first) = replies.front() {
            panic!(
                "ScriptedLlm: {} scripted repl{} never consumed after {} call(s); the first: {}",
                replies.len(),
                if replies.len() == 1 {
                    "y was"
                } else {
                    "ies were"
                },
                self.calls.get(),
                first.summary()
            );
        }
    }
}

impl LlmClient for ScriptedLlm {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.calls.set(self.calls.get() + 1);
        if self.record_requests.get() {
            self.requests.borrow_mut().push(request.clone());
        }
        let reply = self.replies.borrow_mut().pop_front();
        let usage = self.usage.get();
        let result = match reply {
            None if !self.lenient => panic!(
                "ScriptedLlm: unexpected call #{}, the script has no reply left; request: {}",
                self.calls.get(),
                request_summary(request)
            ),
            None => {
                self.unexpected.set(self.unexpected.get() + 1);
                Err(LlmError::new(
                    LlmErrorKind::BadRequest,
                    "scripted model: unexpected call (script exhausted)",
                ))
            }
            Some(reply) => respond(reply, usage, self.calls.get(), on_delta),
        };
        future::ready(result).boxed_local()
    }
}

/// A scripted reply as the model's answer to call `n` (text streamed in a few deltas).
fn respond(
    reply: Reply,
    usage: Option<Usage>,
    n: usize,
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResponse, LlmError> {
    match reply {
        Reply::Text(text) => {
            for piece in text.split_inclusive(' ') {
                on_delta(piece);
            }
            Ok(ChatResponse {
                content: text,
                usage,
                finish_reason: Some("stop".into()),
                ..Default::default()
            })
        }
        Reply::Tool {
            thought,
            name,
            arguments,
        } => Ok(ChatResponse {
            content: thought,
            tool_calls: vec![ToolCall {
                id: format!("call_{n}"),
                name,
                arguments,
            }],
            usage,
            finish_reason: Some("tool_calls".into()),
        }),
        Reply::Fail(e) => Err(e),
        Reply::Raw(r) => Ok(r),
    }
}

/// Which call of the loop a request is, told apart the way a scripted server does: by its
/// output schema's name, else by whether it offers tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestKind {
    /// Offers tools.
    Reason,
    /// Asks for the control block.
    Observe,
    /// Asks for a compaction summary.
    Compaction,
    /// Asks for a reflection on a failed action.
    Reflection,
    /// Grades web search results.
    Grading,
    /// Rewrites a search query.
    Rewrite,
    /// Reads the text of a screenshot.
    Transcription,
    /// Summarises a section of the page, or the whole page in one call.
    Summary,
    /// Combines the page's section summaries.
    Combine,
    /// Neither tools nor a schema.
    Synthesis,
    /// Another schema (named).
    Other(String),
}

/// Whether the last message of `request` holds the synthesis template's request for the
/// final answer (each of its sections opens with one of these) or a research phase's
/// request that offers no tools (its fallback and its report).
fn is_synthesis(request: &ChatRequest) -> bool {
    const OPENINGS: [&str; 5] = [
        "Write the final answer to the question now",
        "You have used all your steps.",
        "The user asked you to stop.",
        "You were stopped from repeating a tool call",
        "Research mode.",
    ];
    request
        .messages
        .last()
        .is_some_and(|m| m.role == Role::User && OPENINGS.iter().any(|o| m.content.contains(o)))
}

impl RequestKind {
    /// The kind of `request`.
    pub fn of(request: &ChatRequest) -> Self {
        let system = request
            .messages
            .first()
            .filter(|m| m.role == Role::System)
            .map_or("", |m| m.content.as_str());
        if system.starts_with("You grade web search results") {
            return Self::Grading;
        }
        if system.starts_with("You rewrite web search queries") {
            return Self::Rewrite;
        }
        if system.starts_with("You read text from screenshots") {
            return Self::Transcription;
        }
        if system.starts_with("You summarize") {
            return Self::Summary;
        }
        if system.starts_with("You combine summaries") {
            return Self::Combine;
        }
        match request.response_format.as_ref().map(|f| f.name.as_str()) {
            Some("control") => Self::Observe,
            Some("compaction") => Self::Compaction,
            Some("reflection") => Self::Reflection,
            Some(other) => Self::Other(other.to_string()),
            // A Reason request may offer no tools (a page shown whole): the synthesis
            // request is told apart by its last message, the synthesis template's.
            None if request.tools.is_empty() && is_synthesis(request) => Self::Synthesis,
            None => Self::Reason,
        }
    }
}

/// A model that answers each call with `respond(request, n)` (n: 1-based call number) and
/// records the requests. The function decides what is unexpected (by panicking).
pub struct ResponderLlm<F> {
    respond: F,
    /// Every request received.
    pub requests: RefCell<Vec<ChatRequest>>,
    /// Keep a copy of every request (on by default).
    pub record_requests: Cell<bool>,
    calls: Cell<usize>,
}

impl<F: Fn(&ChatRequest, usize) -> Reply> ResponderLlm<F> {
    /// A model answering with `respond`.
    pub fn new(respond: F) -> Self {
        Self {
            respond,
            requests: RefCell::default(),
            record_requests: Cell::new(true),
            calls: Cell::new(0),
        }
    }
    /// Model calls made.
    pub fn calls(&self) -> usize {
        self.calls.get()
    }
}

impl<F: Fn(&ChatRequest, usize) -> Reply> LlmClient for ResponderLlm<F> {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if self.record_requests.get() {
            self.requests.borrow_mut().push(request.clone());
        }
        let reply = (self.respond)(request, n);
        future::ready(respond(reply, None, n, on_delta)).boxed_local()
    }
}

/// A factory always handing out the same client.
pub struct FixedModel(pub Rc<dyn LlmClient>);

impl ModelFactory for FixedModel {
    fn client(&self, _settings: &Settings) -> Rc<dyn LlmClient> {
        self.0.clone()
    }
}

/// A model that is in flight for `yields` polls before `inner` answers, counting the calls
/// that reached it and the ones that returned (a call dropped in flight never returns).
pub struct YieldingLlm<L> {
    /// The model that answers.
    pub inner: L,
    /// Pending polls before it answers.
    pub yields: usize,
    started: Cell<usize>,
    finished: Cell<usize>,
}

impl<L> YieldingLlm<L> {
    /// `inner`, answering after `yields` pending polls.
    pub fn new(inner: L, yields: usize) -> Self {
        Self {
            inner,
            yields,
            started: Cell::new(0),
            finished: Cell::new(0),
        }
    }
    /// Calls that reached the model.
    pub fn started(&self) -> usize {
        self.started.get()
    }
    /// Calls that returned a result.
    pub fn finished(&self) -> usize {
        self.finished.get()
    }
}

impl<L: LlmClient> LlmClient for YieldingLlm<L> {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.started.set(self.started.get() + 1);
        async move {
            for _ in 0..self.yields {
                yield_now().await;
            }
            let result = self.inner.complete(request, on_delta).await;
            self.finished.set(self.finished.get() + 1);
            result
        }
        .boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;
    use futures::executor::block_on;

    fn ask(llm: &ScriptedLlm, question: &str) -> Result<ChatResponse, LlmError> {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Role::System, "sys"),
                ChatMessage::new(Role::User, question),
            ],
            ..ChatRequest::default()
        };
        block_on(llm.complete(&request, &mut |_| {}))
    }

    #[test]
    fn a_script_used_exactly_passes() {
        let llm = ScriptedLlm::new(vec![Reply::text("one"), Reply::status(503)]);
        assert_eq!(ask(&llm, "a").expect("reply").content, "one");
        assert_eq!(ask(&llm, "b").expect_err("failure").status, Some(503));
        assert_eq!((llm.calls(), llm.remaining()), (2, 0));
    }

    #[test]
    #[should_panic(
        expected = "ScriptedLlm: unexpected call #2, the script has no reply left; request: \"Why is the sky blue?\""
    )]
    fn a_call_past_the_script_fails_the_test() {
        let llm = ScriptedLlm::new(vec![Reply::text("one")]);
        ask(&llm, "first").expect("reply");
        let _ = ask(&llm, "Why is the sky blue?");
    }

    #[test]
    #[should_panic(
        expected = "ScriptedLlm: 2 scripted replies were never consumed after 1 call(s); the first: tool call read_page({\"offset\": 5})"
    )]
    fn replies_left_at_drop_fail_the_test() {
        let llm = ScriptedLlm::new(vec![
            Reply::text("one"),
            Reply::tool("read_page", r#"{"offset": 5}"#),
            Reply::text("three"),
        ]);
        ask(&llm, "q").expect("reply");
    }

    #[test]
    #[should_panic(expected = "the test's own failure")]
    fn a_failing_test_reports_its_own_failure_not_the_leftover_replies() {
        let _llm = ScriptedLlm::new(vec![Reply::text("never asked")]);
        panic!("the test's own failure");
    }

    #[test]
    fn a_lenient_script_answers_past_its_end_and_may_be_left_over() {
        let llm = ScriptedLlm::new(vec![Reply::text("one")]).lenient();
        ask(&llm, "q").expect("reply");
        let err = ask(&llm, "q").expect_err("exhausted");
        assert_eq!(err.kind, LlmErrorKind::BadRequest);
        assert_eq!((llm.calls(), llm.unexpected_calls()), (2, 1));
        drop(ScriptedLlm::new(vec![Reply::text("unused")]).lenient());
    }

    #[test]
    fn summaries_are_one_short_line() {
        let long = "word\n".repeat(40);
        let summary = short(&long);
        assert!(!summary.contains('\n'));
        assert_eq!(summary.chars().count(), 83, "{summary}");
        assert!(summary.ends_with("..."));
        assert_eq!(short("é".repeat(80).as_str()), "é".repeat(80));
    }
}
