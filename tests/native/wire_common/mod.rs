//! Shared by the vendor wire tests: a scripted HTTP peer, a body cut into chunks, the
//! representative request every vendor builds, and fixture loading.
#![allow(dead_code)] // Not every helper is used by the tests of this binary.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::llm::transport::{HttpLlm, WireFormat};
use knowledgelens::llm::{
    ChatMessage, ChatRequest, ChatResponse, JsonSchemaFormat, LlmError, Role, ToolCall, ToolSpec,
};
use knowledgelens::ports::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse, LlmClient};
use knowledgelens::testing::ManualClock;
use serde_json::{json, Value};

/// One scripted response.
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
}

struct ChunkBody(VecDeque<Vec<u8>>);

impl HttpBody for ChunkBody {
    fn next_chunk(&mut self) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, HttpError>> {
        future::ready(Ok(self.0.pop_front())).boxed_local()
    }
}

/// Answers requests from a script, in order, and records them; fails the test on a request
/// it has no reply for and, when dropped, on replies never asked for.
#[derive(Default)]
pub struct ScriptedHttp {
    pub replies: RefCell<VecDeque<Canned>>,
    pub seen: RefCell<Vec<HttpRequest>>,
}

impl ScriptedHttp {
    /// Queues a reply with `content_type` and `body` in one chunk.
    pub fn push(&self, status: u16, content_type: &str, body: &str) {
        self.push_chunks(status, content_type, vec![body.as_bytes().to_vec()]);
    }

    /// Queues a reply whose body arrives in `chunks`.
    pub fn push_chunks(&self, status: u16, content_type: &str, chunks: Vec<Vec<u8>>) {
        self.replies.borrow_mut().push_back(Canned {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks,
        });
    }

    /// The body of request `i` as JSON.
    pub fn body(&self, i: usize) -> Value {
        let seen = self.seen.borrow();
        serde_json::from_str(seen[i].body.as_deref().expect("body")).expect("json body")
    }
}

/// Every scripted reply must have been asked for (unless the test already failed).
impl Drop for ScriptedHttp {
    fn drop(&mut self) {
        let left = self.replies.get_mut().len();
        if left > 0 && !std::thread::panicking() {
            panic!(
                "ScriptedHttp: {left} scripted repl{} never asked for after {} request(s)",
                if left == 1 { "y was" } else { "ies were" },
                self.seen.get_mut().len()
            );
        }
    }
}

impl HttpClient for ScriptedHttp {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        self.seen.borrow_mut().push(request);
        let reply = self
            .replies
            .borrow_mut()
            .pop_front()
            .expect("unexpected HTTP request");
        future::ready(Ok(HttpResponse {
            status: reply.status,
            headers: reply.headers,
            body: Box::new(ChunkBody(reply.chunks.into())),
        }))
        .boxed_local()
    }
}

/// A client speaking `wire` to `http`.
pub fn client(http: &Rc<ScriptedHttp>, wire: Box<dyn WireFormat>) -> HttpLlm {
    HttpLlm::new(http.clone(), Rc::new(ManualClock::new(0)), wire)
}

/// Runs one call; returns the reply and the streamed deltas.
pub fn complete(
    llm: &HttpLlm,
    request: &ChatRequest,
) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let mut deltas = Vec::new();
    let reply = futures::executor::block_on(
        llm.complete(request, &mut |d: &str| deltas.push(d.to_string())),
    );
    (reply, deltas)
}

/// Lists the models.
pub fn list_models(llm: &HttpLlm) -> Result<Vec<String>, LlmError> {
    futures::executor::block_on(llm.list_models())
}

/// `bytes` cut at `cuts` (clamped, sorted): the chunks a network might deliver.
pub fn cut(bytes: &[u8], cuts: Vec<usize>) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for c in cuts {
        chunks.push(bytes[start..c].to_vec());
        start = c;
    }
    chunks.push(bytes[start..].to_vec());
    chunks
}

/// A fixture file's text (`tests/fixtures/<vendor>/<name>`).
pub fn fixture(vendor: &str, name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/{vendor}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A fixture file as JSON.
pub fn fixture_json(vendor: &str, name: &str) -> Value {
    serde_json::from_str(&fixture(vendor, name)).expect("fixture is JSON")
}

/// The `read_page` parameters exactly as the crate's schema generator writes them.
pub fn read_page_schema() -> Value {
    json!({
        "additionalProperties": false,
        "description": "Arguments of `read_page`.",
        "properties": {
            "max_chars": {
                "default": null,
                "description": "How many characters to return (default 4000, at most 8000).",
                "format": "uint32",
                "maximum": 8000,
                "minimum": 1,
                "type": ["integer", "null"]
            },
            "offset": {
                "default": 0,
                "description": "Character offset to start at (default 0).",
                "format": "uint32",
                "minimum": 0,
                "type": "integer"
            }
        },
        "title": "ReadPageArgs",
        "type": "object"
    })
}

/// The Observe control schema.
pub fn control_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "should_continue": { "type": "boolean" },
            "final_answer": { "type": ["string", "null"], "maxLength": 8000 }
        },
        "required": ["should_continue", "final_answer"],
        "additionalProperties": false
    })
}

/// The text of the last user message in [`representative`].
pub const OBSERVE: &str = "Judge the tool result above. Reply with only a JSON object.";

/// The prompt-cache key of [`representative`] (the shape `agent::cache::key` makes).
pub const CACHE_KEY: &str = "kl-0123456789abcdef";

/// A request with everything the engine sends: system, user, an assistant tool call with
/// its thought, the tool result, the Observe instruction, tools, constrained output and a
/// token cap, and the run's prompt-cache key.
pub fn representative(stream: bool) -> ChatRequest {
    let mut call = ChatMessage::new(Role::Assistant, "Let me read further.");
    call.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "read_page".into(),
        arguments: r#"{"offset":4000}"#.into(),
    }];
    let mut result = ChatMessage::new(Role::Tool, "Tides are caused by the Moon.");
    result.tool_call_id = Some("call_1".into());
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "You are KnowledgeLens."),
            ChatMessage::new(Role::User, "What does the page say about tides?"),
            call,
            result,
            ChatMessage::new(Role::User, OBSERVE),
        ],
        tools: vec![ToolSpec {
            name: "read_page".into(),
            description: "Reads more of the page.".into(),
            parameters: read_page_schema().into(),
        }],
        response_format: Some(JsonSchemaFormat {
            name: "control".into(),
            schema: control_schema(),
        }),
        max_tokens: Some(512),
        stream,
        cache_key: Some(CACHE_KEY.into()),
    }
}

/// A plain question, no tools, no format.
pub fn question(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "You are KnowledgeLens."),
            ChatMessage::new(Role::User, "Why is the sky blue?"),
        ],
        max_tokens: Some(256),
        stream,
        ..Default::default()
    }
}

/// The value of header `name` in `request`.
pub fn header<'a>(request: &'a HttpRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
