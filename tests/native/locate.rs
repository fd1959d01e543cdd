//! `locate_passage` through the service: a tab's session asks its tab's page (the
//! `PageReader` port; `StaticPages` finds a passage by its first 80 non-space characters, as
//! `content/locate.js` does), the popup's session has no page, and a closed tab or an empty
//! text is an error the popup can show.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::block_on;
use knowledgelens::protocol::{Command, Request, MAX_LOCATE_CHARS, PAGE_READ_TIMEOUT_MS};
use knowledgelens::service::{Ports, Service};
use knowledgelens::testing::{
    poll_times, FixedModel, ManualClock, MemoryStore, NoSearch, RecordingSink, ScriptedLlm,
    SeededRandom, StaticPages,
};
use knowledgelens::types::PageInfo;
use serde_json::{json, Value};

const TEXT: &str = "# Bellhaven Light\n\nAgnes Tull kept Bellhaven Light for thirty-one years, \
trimming the wicks at dusk and winding the clockwork that turned the lens.";

fn service() -> Rc<Service> {
    let mut pages = BTreeMap::new();
    pages.insert(
        7,
        PageInfo {
            title: "Bellhaven Light".into(),
            url: "http://127.0.0.1/light".into(),
            text: TEXT.into(),
            ..Default::default()
        },
    );
    Service::new(Ports {
        sessions: Rc::new(MemoryStore::new()),
        settings: Rc::new(MemoryStore::new()),
        clock: ManualClock::held(1_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(pages)),
        models: Rc::new(FixedModel(Rc::new(ScriptedLlm::new(vec![])))),
        random: Rc::new(SeededRandom::new(3).at_most(0)),
        search: Rc::new(NoSearch),
        capture: Rc::new(knowledgelens::ports::NoCapture),
    })
}

fn locate(service: &Rc<Service>, session: &str, text: &str) -> Value {
    let request = json!({"id": 4, "type": "locate_passage", "session": session, "text": text});
    let (reply, run) = block_on(service.handle_json(request));
    assert!(run.is_none(), "locating a passage starts no run");
    reply
}

#[test]
fn a_passage_on_the_page_is_found_whatever_its_whitespace() {
    let service = service();
    let reply = locate(
        &service,
        "tab:7",
        "Agnes Tull kept\n  Bellhaven Light for thirty-one years, trimming the wicks at dusk and winding",
    );
    assert_eq!(reply, json!({"id": 4, "ok": true, "data": {"found": true}}));
}

#[test]
fn a_passage_no_longer_on_the_page_is_not_found() {
    let service = service();
    let reply = locate(&service, "tab:7", "The light was automated in 1962.");
    assert_eq!(reply["data"], json!({"found": false}));
}

#[test]
fn the_popup_session_has_no_page_and_a_closed_tab_no_passage() {
    let service = service();
    let reply = locate(&service, "popup", "Agnes Tull");
    assert_eq!(reply["ok"], false);
    assert_eq!(reply["error"]["kind"], "bad_request");
    let reply = locate(&service, "tab:8", "Agnes Tull");
    assert_eq!(reply["error"]["kind"], "not_found");
    assert_eq!(
        reply["error"]["message"],
        "The page's tab was closed, so the passage cannot be shown."
    );
}

#[test]
fn the_text_is_required_trimmed_and_capped() {
    let service = service();
    let reply = locate(&service, "tab:7", "  \n ");
    assert_eq!(reply["error"]["kind"], "bad_request");
    let missing = json!({"id": 1, "type": "locate_passage", "session": "tab:7"}).to_string();
    assert!(Request::parse(&missing).is_err());
    let long = format!("  {}  ", "x".repeat(MAX_LOCATE_CHARS + 50));
    let request = json!({"id": 1, "type": "locate_passage", "session": "tab:7", "text": long});
    match Request::parse(&request.to_string()).expect("parse").command {
        Command::LocatePassage { text, .. } => assert_eq!(text.chars().count(), MAX_LOCATE_CHARS),
        other => panic!("parsed as {}", other.name()),
    }
}

/// A tab whose frame never answers the locator (a hung page).
struct HungPage;

impl knowledgelens::ports::PageReader for HungPage {
    fn read(
        &self,
        _tab_id: i64,
    ) -> futures::future::LocalBoxFuture<'_, Result<PageInfo, knowledgelens::types::PageReadError>>
    {
        Box::pin(futures::future::pending())
    }

    fn locate<'a>(
        &'a self,
        _tab_id: i64,
        _passage: &'a str,
    ) -> futures::future::LocalBoxFuture<'a, Result<bool, knowledgelens::types::PageReadError>>
    {
        Box::pin(futures::future::pending())
    }
}

#[test]
fn a_page_that_never_answers_is_given_up_on_after_the_page_read_limit() {
    let clock = ManualClock::held(1_000);
    let service = Service::new(Ports {
        sessions: Rc::new(MemoryStore::new()),
        settings: Rc::new(MemoryStore::new()),
        clock: clock.clone(),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(HungPage),
        models: Rc::new(FixedModel(Rc::new(ScriptedLlm::new(vec![])))),
        random: Rc::new(SeededRandom::new(3).at_most(0)),
        search: Rc::new(NoSearch),
        capture: Rc::new(knowledgelens::ports::NoCapture),
    });
    let request = json!({"id": 4, "type": "locate_passage", "session": "tab:7", "text": "Agnes"});
    let mut reply = Box::pin(service.handle_json(request));
    assert!(
        poll_times(reply.as_mut(), 4).is_none(),
        "waits for the page"
    );
    clock.advance(PAGE_READ_TIMEOUT_MS - 1);
    assert!(
        poll_times(reply.as_mut(), 4).is_none(),
        "still within the limit"
    );
    clock.advance(1);
    let (reply, _) = poll_times(reply.as_mut(), 4).expect("given up at the limit");
    assert_eq!(reply["error"]["kind"], "not_found");
    assert_eq!(
        reply["error"]["message"],
        "The page did not answer within 10 s, so the passage cannot be shown. Try again once the page has finished loading."
    );
}
