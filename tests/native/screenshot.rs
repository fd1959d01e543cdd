//! `extract_screenshot_text`: offered only for a tab with little or no page text;
//! the screenshot reaches the model as an image in one transcription call and only the text
//! read from it is kept (never the image, in any save); a tab not in front gives "the page
//! is not visible"; a model known to take text only, or whose server refuses the image,
//! gives an error result and the notice "this model cannot read images"; and a run cut at
//! any point and resumed on a fresh engine ends as if never cut, taking the screenshot again
//! at most once per cut.

use std::cell::Cell;
use std::rc::Rc;

use futures::executor::block_on;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::step::screenshot::NO_IMAGES_NOTICE;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, LlmError, LlmErrorKind, Role};
use knowledgelens::ports::{CaptureError, NoCapture};
use knowledgelens::state::{self, RunStatus, SessionState};
use knowledgelens::testing::{
    poll_times, test_png, ManualClock, MemoryStore, RecordingSink, Reply, RequestKind,
    ResponderLlm, ScriptedCapture, YieldingStore,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::image::MAX_IMAGE_SIDE;
use knowledgelens::types::PageInfo;

const TOOL: &str = "extract_screenshot_text";
const SEEN: &str = "OPENING HOURS 9-17";
const ANSWER: &str = "The sign says the opening hours are 9 to 17.";

fn page(text: &str) -> PageInfo {
    PageInfo {
        title: "Canvas".into(),
        url: "http://127.0.0.1/canvas".into(),
        text: text.into(),
        ..Default::default()
    }
}

fn control(answer: &str) -> Reply {
    Reply::text(format!(
        r#"{{"should_continue": false, "final_answer": "{answer}"}}"#
    ))
}

/// Whether the request's conversation already has the screenshot tool's result.
fn has_result(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.role == Role::Tool && m.content.contains("screenshot"))
}

/// A model answering by the request: it calls the screenshot tool, transcribes the image
/// (checking it is one PNG within the size limit, and the only one anywhere), then answers.
fn oracle(request: &ChatRequest, n: usize) -> Reply {
    let images: usize = request.messages.iter().map(|m| m.images.len()).sum();
    match RequestKind::of(request) {
        RequestKind::Transcription => {
            let last = request.messages.last().expect("a message");
            assert_eq!(last.role, Role::User);
            assert_eq!(last.images.len(), 1, "call #{n}");
            let image = &last.images[0];
            assert_eq!(image.mime_type, "image/png");
            assert!(image.width.max(image.height) <= MAX_IMAGE_SIDE);
            assert!(request.tools.is_empty());
            Reply::text(SEEN)
        }
        kind => {
            assert_eq!(images, 0, "call #{n} ({kind:?}) carries an image");
            match kind {
                RequestKind::Reason if !has_result(request) => Reply::tool(TOOL, "{}"),
                RequestKind::Reason | RequestKind::Synthesis => Reply::text(ANSWER),
                RequestKind::Observe => control(ANSWER),
                RequestKind::Reflection => Reply::reflection("it failed", "answer without it"),
                other => panic!("unexpected call #{n}: {other:?}"),
            }
        }
    }
}

struct Run {
    state: SessionState,
    requests: Vec<ChatRequest>,
    store: MemoryStore,
}

fn run_with(
    session: &str,
    page: Option<PageInfo>,
    config: RunConfig,
    capture: &dyn knowledgelens::ports::ScreenCapture,
    respond: impl Fn(&ChatRequest, usize) -> Reply,
) -> Run {
    let llm = ResponderLlm::new(respond);
    let tools = ToolBox::builtin();
    let (store, sink) = (MemoryStore::new(), RecordingSink::default());
    store.keep_history.set(true);
    let clock = ManualClock::new(1_000);
    let engine = Engine::new(
        &llm,
        clock.as_ref(),
        &sink,
        &store,
        &tools,
        StopSignal::new(),
    )
    .with_capture(capture);
    let mut state = SessionState::new(session, 1_000);
    state.begin_run("What does the sign say?", page, config, 1_000);
    if let Some(address) = UNREAD_ADDRESS.with(|a| a.take()) {
        state.page_address = address;
    }
    block_on(engine.drive(&mut state));
    drop(engine);
    let requests = llm.requests.borrow().clone();
    Run {
        state,
        requests,
        store,
    }
}

thread_local! {
    /// The address the next [`run_with`] records for a page that could not be read.
    static UNREAD_ADDRESS: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn offered(request: &ChatRequest) -> bool {
    request.tools.iter().any(|t| t.name == TOOL)
}

fn results(state: &SessionState) -> Vec<(bool, String)> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolResult {
                name, ok, content, ..
            } if name == TOOL => Some((*ok, content.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_screenshot_is_transcribed_once_and_only_its_text_is_kept() {
    let shot = test_png(1568, 980);
    let capture = ScriptedCapture::new(vec![Ok(shot.clone())]);
    let run = run_with(
        "tab:7",
        Some(page("")),
        RunConfig::default(),
        &capture,
        oracle,
    );
    assert_eq!(run.state.status, RunStatus::Completed);
    assert_eq!(run.state.answer, ANSWER);
    assert_eq!(*capture.tabs.borrow(), [7]);
    assert!(offered(&run.requests[0]));
    let transcriptions: Vec<&ChatRequest> = run
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Transcription)
        .collect();
    assert_eq!(transcriptions.len(), 1);
    assert_eq!(
        transcriptions[0].messages[1].images,
        std::slice::from_ref(&shot)
    );
    // The result is the text, inside the page fence of the next request.
    let results = results(&run.state);
    assert_eq!(results.len(), 1);
    assert!(results[0].0 && results[0].1.contains(SEEN), "{results:?}");
    let next = run
        .requests
        .iter()
        .find(|r| RequestKind::of(r) == RequestKind::Observe)
        .expect("an Observe call");
    let tool = next
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("the result");
    let fence = format!("<page-{}>", run.state.nonce);
    assert!(tool.content.contains(&fence) && tool.content.contains(SEEN));
    // No save ever held the image.
    let history = run.store.history.borrow();
    assert!(!history.is_empty());
    for saved in history.iter() {
        assert!(saved.values().all(|v| !v.contains(&shot.data)));
    }
}

#[test]
fn it_is_offered_only_for_a_tab_with_little_or_no_text() {
    let cases = [
        ("tab:1", None, true),
        ("tab:1", Some(page("")), true),
        ("tab:1", Some(page(&"word ".repeat(99))), true),
        ("tab:1", Some(page(&"words".repeat(100))), false),
        ("popup", None, false),
    ];
    for (session, page, expected) in cases {
        let capture = NoCapture;
        let run = run_with(session, page, RunConfig::default(), &capture, |_, _| {
            Reply::text(ANSWER)
        });
        assert_eq!(offered(&run.requests[0]), expected, "{session}");
    }
}

#[test]
fn a_tab_not_in_front_is_not_visible() {
    let capture = ScriptedCapture::new(vec![Err(CaptureError::NotVisible)]);
    let run = run_with("tab:3", None, RunConfig::default(), &capture, oracle);
    assert_eq!(run.state.status, RunStatus::Completed);
    let results = results(&run.state);
    assert_eq!(results.len(), 1);
    assert!(!results[0].0);
    assert!(
        results[0].1.starts_with("Error: the page is not visible"),
        "{results:?}"
    );
    assert!(run
        .requests
        .iter()
        .all(|r| RequestKind::of(r) != RequestKind::Transcription));
}

/// A question about tab 3 showing the canvas page, answered by [`oracle`].
fn on_canvas(capture: &ScriptedCapture) -> Run {
    run_with(
        "tab:3",
        Some(page("")),
        RunConfig::default(),
        capture,
        oracle,
    )
}

#[test]
fn a_tab_that_went_to_another_page_is_not_captured() {
    // The tab now shows another path on the same host: the capture is refused before any
    // screenshot (the double refuses as the browser's does, using no scripted answer).
    let capture = ScriptedCapture::new(Vec::new()).showing("http://127.0.0.1/bank?x=1");
    let run = on_canvas(&capture);
    assert_eq!(run.state.status, RunStatus::Completed);
    assert_eq!(
        *capture.pages.borrow(),
        [Some("http://127.0.0.1/canvas".to_string())]
    );
    let results = results(&run.state);
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .1
            .starts_with("Error: the tab now shows another page"),
        "{results:?}"
    );
    assert!(run
        .requests
        .iter()
        .all(|r| RequestKind::of(r) != RequestKind::Transcription));
    // The same page with another query or fragment is the run's page: captured.
    let capture = ScriptedCapture::new(vec![Ok(test_png(640, 480))])
        .showing("http://127.0.0.1/canvas?tab=2#top");
    let run = on_canvas(&capture);
    assert_eq!(run.state.answer, ANSWER);
    assert!(run
        .requests
        .iter()
        .any(|r| RequestKind::of(r) == RequestKind::Transcription));
}

#[test]
fn a_page_that_could_not_be_read_is_captured_only_while_the_tab_shows_its_address() {
    // The page could not be read; the service recorded the tab's address instead.
    for (shows, captured) in [
        (
            "chrome-extension://viewer/index.html?file=https://example.com/other.pdf",
            false,
        ),
        ("https://example.com/report.pdf#page=2", true),
    ] {
        let answers = if captured {
            vec![Ok(test_png(640, 480))]
        } else {
            Vec::new()
        };
        let capture = ScriptedCapture::new(answers).showing(shows);
        UNREAD_ADDRESS.with(|a| a.replace(Some("https://example.com/report.pdf".into())));
        let run = run_with("tab:3", None, RunConfig::default(), &capture, oracle);
        assert_eq!(
            *capture.pages.borrow(),
            [Some("https://example.com/report.pdf".to_string())]
        );
        let transcribed = run
            .requests
            .iter()
            .any(|r| RequestKind::of(r) == RequestKind::Transcription);
        assert_eq!(transcribed, captured, "{shows}");
    }
}

#[test]
fn a_model_known_to_take_text_only_gets_no_screenshot_and_the_user_is_told() {
    // Nothing may be captured: the scripted capture fails the test on any call.
    let capture = ScriptedCapture::new(Vec::new());
    let config = RunConfig {
        images: false,
        ..RunConfig::default()
    };
    let run = run_with("tab:3", None, config, &capture, oracle);
    assert_eq!(run.state.status, RunStatus::Completed);
    let results = results(&run.state);
    assert_eq!(results.len(), 1);
    assert!(!results[0].0 && results[0].1.contains("this model cannot read images"));
    assert_eq!(run.state.notices, [NO_IMAGES_NOTICE]);
    assert!(NO_IMAGES_NOTICE.contains("this model cannot read images"));
    // Not offered again in the run, and never reflected on.
    assert!(run.requests[1..].iter().all(|r| !offered(r)));
    assert!(run
        .requests
        .iter()
        .all(|r| RequestKind::of(r) != RequestKind::Reflection));
}

#[test]
fn a_server_refusing_the_image_gives_the_same_clear_error() {
    let capture = ScriptedCapture::new(vec![Ok(test_png(800, 600))]);
    let refused = |request: &ChatRequest, n: usize| {
        if RequestKind::of(request) == RequestKind::Transcription {
            // llama.cpp's server without a vision projector.
            let mut err = LlmError::new(
                LlmErrorKind::BadRequest,
                "The request was rejected (HTTP 400).",
            );
            err.status = Some(400);
            err.detail = Some("image input is not supported - hint: if this is unexpected, you may need to provide the mmproj".into());
            return Reply::Fail(err);
        }
        oracle(request, n)
    };
    let run = run_with("tab:3", None, RunConfig::default(), &capture, refused);
    assert_eq!(run.state.status, RunStatus::Completed);
    assert_eq!(run.state.answer, ANSWER);
    let results = results(&run.state);
    assert!(!results[0].0 && results[0].1.contains("this model cannot read images"));
    assert_eq!(run.state.notices, [NO_IMAGES_NOTICE]);
    // Refused once: a 400 is not retried.
    let transcriptions = run
        .requests
        .iter()
        .filter(|r| RequestKind::of(r) == RequestKind::Transcription)
        .count();
    assert_eq!(transcriptions, 1);
}

#[test]
fn a_run_cut_anywhere_ends_as_if_never_cut_and_redoes_at_most_the_screenshot() {
    let capture = ScriptedCapture::always(test_png(640, 480));
    let reference = run_with("tab:5", None, RunConfig::default(), &capture, oracle);
    assert_eq!(reference.state.status, RunStatus::Completed);
    let reference_items: Vec<String> = reference
        .state
        .trajectory
        .iter()
        .map(|e| without_call_ids(&format!("{:?}", e.item)))
        .collect();

    let mut cuts = 0;
    for cut in 1..400 {
        let store = Rc::new(MemoryStore::new());
        store.keep_history.set(true);
        let yielding = YieldingStore(Rc::clone(&store));
        let sink = RecordingSink::default();
        let tools = ToolBox::builtin();
        let clock = ManualClock::new(1_000);
        let captures = Cell::new(0usize);
        let counting = Counting {
            inner: ScriptedCapture::always(test_png(640, 480)),
            count: &captures,
        };
        let llm = ResponderLlm::new(oracle);
        let finished = {
            let engine = Engine::new(
                &llm,
                clock.as_ref(),
                &sink,
                &yielding,
                &tools,
                StopSignal::new(),
            )
            .with_capture(&counting);
            let mut state = SessionState::new("tab:5", 1_000);
            state.begin_run("What does the sign say?", None, RunConfig::default(), 1_000);
            let mut drive = Box::pin(async move {
                engine.drive(&mut state).await;
                state
            });
            poll_times(drive.as_mut(), cut)
        };
        if finished.is_some() {
            assert!(cuts > 10, "cut at {cuts} points only");
            return;
        }
        // A new worker: only what was saved survives.
        let Some(mut state) = block_on(state::load(store.as_ref(), "tab:5")).expect("loads") else {
            continue;
        };
        let engine = Engine::new(
            &llm,
            clock.as_ref(),
            &sink,
            store.as_ref(),
            &tools,
            StopSignal::new(),
        )
        .with_capture(&counting);
        block_on(engine.drive(&mut state));
        assert_eq!(state.status, RunStatus::Completed, "cut after {cut} polls");
        assert_eq!(state.answer, ANSWER, "cut after {cut} polls");
        let items: Vec<String> = state
            .trajectory
            .iter()
            .map(|e| without_call_ids(&format!("{:?}", e.item)))
            .collect();
        assert_eq!(items, reference_items, "cut after {cut} polls");
        assert!(
            captures.get() <= 2,
            "cut after {cut} polls: {} captures",
            captures.get()
        );
        for saved in store.history.borrow().iter() {
            assert!(saved.values().all(|v| !v.contains("iVBOR")));
        }
        cuts += 1;
    }
    panic!("the run never finished uncut");
}

/// `text` with every scripted call id (`call_<n>`, numbered by the model's call count, so
/// a call redone after a cut gets a new one, as from a real model) made the same.
fn without_call_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("call_") {
        out.push_str(&rest[..at + 5]);
        rest = rest[at + 5..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

/// A capture counting its calls.
struct Counting<'a> {
    inner: ScriptedCapture,
    count: &'a Cell<usize>,
}

impl knowledgelens::ports::ScreenCapture for Counting<'_> {
    fn capture_visible<'a>(
        &'a self,
        tab_id: i64,
        page_url: Option<&'a str>,
    ) -> futures::future::LocalBoxFuture<'a, Result<knowledgelens::types::Image, CaptureError>>
    {
        self.count.set(self.count.get() + 1);
        self.inner.capture_visible(tab_id, page_url)
    }
}
