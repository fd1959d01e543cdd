//! A page read that takes longer than `PAGE_READ_TIMEOUT_MS` is abandoned: the run starts
//! without the page's text, with a notice saying why (as for an unreadable page). The clock
//! is held, so the deadline is exact: one millisecond before it the request still waits.

use std::cell::Cell;
use std::rc::Rc;

use futures::executor::LocalPool;
use futures::future::{self, LocalBoxFuture};
use futures::task::LocalSpawnExt;
use futures::FutureExt;
use knowledgelens::ports::PageReader;
use knowledgelens::protocol::PAGE_READ_TIMEOUT_MS;
use knowledgelens::service::{Ports, Service};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, SeededRandom,
};
use knowledgelens::types::{PageInfo, PageReadError};
use serde_json::{json, Value};

/// A tab whose page never answers; counts the reads.
struct HungPage(Rc<Cell<u32>>);

impl PageReader for HungPage {
    fn read(&self, _tab_id: i64) -> LocalBoxFuture<'_, Result<PageInfo, PageReadError>> {
        self.0.set(self.0.get() + 1);
        future::pending().boxed_local()
    }
}

#[test]
fn a_slow_page_read_is_abandoned_and_the_run_goes_on_without_it() {
    assert_eq!(PAGE_READ_TIMEOUT_MS, 10_000);
    let clock = ManualClock::held(1_000);
    let llm = Rc::new(ScriptedLlm::new(vec![Reply::text("General answer.")]));
    let reads = Rc::new(Cell::new(0));
    let service = Service::new(Ports {
        capture: std::rc::Rc::new(knowledgelens::ports::NoCapture),
        sessions: Rc::new(MemoryStore::new()),
        settings: Rc::new(MemoryStore::new()),
        clock: clock.clone(),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(HungPage(reads.clone())),
        models: Rc::new(FixedModel(llm.clone())),
        random: Rc::new(SeededRandom::new(5).at_most(1)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    });
    let mut pool = LocalPool::new();
    let reply: Rc<std::cell::RefCell<Option<Value>>> = Rc::default();
    let (out, svc) = (reply.clone(), service.clone());
    pool.spawner()
        .spawn_local(async move {
            let (value, run) = svc
                .handle_json(json!({"id": 1, "type": "ask", "session": "tab:5",
                                    "question": "What is this?", "tab_id": 5}))
                .await;
            *out.borrow_mut() = Some(value);
            if let Some(run) = run {
                run.await;
            }
        })
        .expect("spawn");
    pool.run_until_stalled();
    assert_eq!(reads.get(), 1);
    clock.advance(PAGE_READ_TIMEOUT_MS - 1);
    pool.run_until_stalled();
    assert!(
        reply.borrow().is_none(),
        "still reading one ms before the limit"
    );
    assert_eq!(llm.calls(), 0);
    clock.advance(1);
    pool.run_until_stalled();
    let reply = reply.borrow().clone().expect("the reply came at the limit");
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(
        reply["data"]["notices"][0],
        "The page took more than 10 s to read; answering without its text."
    );
    assert_eq!(reply["data"]["page"], Value::Null);
    assert_eq!(llm.calls(), 1, "the run went on without the page");
    let first_user = llm.requests.borrow()[0].messages[1].content.clone();
    assert!(
        first_user.starts_with("No page text is available"),
        "{first_user}"
    );
}
