//! A panic never leaves a run in a loop or its session busy. Natively a panic unwinds, so a
//! worker that crashes is modelled as a run whose future panics (caught here) and a service
//! that is thrown away; a new service over the same store is the restarted worker.
//!
//! - Never twice: a run counts its drives in its saved head record before any work, and a
//!   run found with `MAX_DRIVE_ATTEMPTS` drives and no completed transition since fails with
//!   `CRASHED_TWICE` instead of being driven again; a completed transition resets the count.
//! - The run registry forgets a run on every way it ends: completed, failed, stopped,
//!   failed as crashed, not running once loaded, its future dropped, a panic unwinding
//!   through it.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use knowledgelens::service::{Ports, RunFuture, Service};
use knowledgelens::state::{self, Next, RunStatus, SessionState, CRASHED_TWICE};
use knowledgelens::testing::{
    poll_times, FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm,
    StaticPages, YieldingStore,
};
use knowledgelens::tools::{ToolBox, ToolContext, ToolError, TypedTool};
use serde_json::{json, Value};

const SESSION: &str = "tab:1";

#[derive(kljson::FromJson, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    n: u32,
}

/// A read-only tool whose code panics (a bug that any state reaching it trips over again):
/// counts its panics.
struct Boom(Rc<Cell<u32>>);

impl TypedTool for Boom {
    const NAME: &'static str = "boom";
    const DESCRIPTION: &'static str = "Panics.";
    type Args = Args;
    type Output = String;
    fn call<'a>(
        &'a self,
        args: Args,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        let panics = self.0.clone();
        async move {
            panics.set(panics.get() + 1);
            panic!("boom {}: a bug in a tool", args.n);
        }
        .boxed_local()
    }
}

/// What outlives a worker: the store, the model, the UI and the tool's panics.
struct World {
    store: Rc<MemoryStore>,
    /// Whether every store operation yields (a run can be caught between them).
    yielding: bool,
    llm: Rc<ScriptedLlm>,
    sink: Rc<RecordingSink>,
    panics: Rc<Cell<u32>>,
}

impl World {
    fn new(replies: Vec<Reply>) -> Self {
        Self {
            store: Rc::new(MemoryStore::new()),
            yielding: false,
            llm: Rc::new(ScriptedLlm::new(replies)),
            sink: Rc::new(RecordingSink::default()),
            panics: Rc::new(Cell::new(0)),
        }
    }

    /// A fresh worker: a new service with nothing in memory.
    fn worker(&self) -> Rc<Service> {
        let ports = Ports {
            capture: Rc::new(knowledgelens::ports::NoCapture),
            sessions: if self.yielding {
                Rc::new(YieldingStore(self.store.clone()))
            } else {
                self.store.clone()
            },
            settings: Rc::new(MemoryStore::new()),
            clock: ManualClock::new(1_000),
            events: self.sink.clone(),
            pages: Rc::new(StaticPages(BTreeMap::new())),
            models: Rc::new(FixedModel(self.llm.clone())),
            random: Rc::new(knowledgelens::testing::SeededRandom::new(3)),
            search: Rc::new(knowledgelens::testing::NoSearch),
        };
        Service::with_tools(
            ports,
            ToolBox::builtin().with(Box::new(Boom(self.panics.clone()))),
        )
    }

    fn head(&self) -> SessionState {
        let text = self.store.data.borrow()[&format!("session:{SESSION}")].clone();
        state::decode_head(&text).expect("the head decodes").0
    }

    fn stored(&self) -> SessionState {
        futures::executor::block_on(state::load(self.store.as_ref(), SESSION))
            .expect("the state loads")
            .expect("the session is stored")
    }
}

fn ask(service: &Rc<Service>, question: &str) -> (Value, Option<RunFuture>) {
    futures::executor::block_on(service.handle_json(json!({
        "id": 1, "type": "ask", "session": SESSION, "question": question,
    })))
}

/// Drives `run` to its end; true when it panicked.
fn drive_catching(run: RunFuture) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| futures::executor::block_on(run))).is_err()
}

/// A restarted worker resumes every interrupted run; true when one of them panicked.
fn restart(world: &World) -> (Rc<Service>, bool) {
    let service = world.worker();
    let runs = futures::executor::block_on(service.resume_all());
    let mut panicked = false;
    for run in runs {
        panicked |= drive_catching(run);
    }
    (service, panicked)
}

fn boom_call() -> Reply {
    Reply::tool("boom", r#"{"n": 1}"#)
}

#[test]
fn a_run_that_crashes_on_every_resume_is_failed_after_two_attempts() {
    let world = World::new(vec![boom_call()]);
    let first = world.worker();
    let (reply, run) = ask(&first, "Why tides?");
    assert_eq!(reply["ok"], true, "{reply}");
    assert!(drive_catching(run.expect("a run")), "the tool panics");
    drop(first);
    // The model's reply was a completed transition (the count went back to 0); the crash
    // in the tool was not one.
    assert_eq!(world.head().status, RunStatus::Running);
    assert!(matches!(world.head().next, Some(Next::Act { .. })));
    assert_eq!(world.head().drive_attempts, 0);
    // Two resumes crash on the same state, each counted before it began.
    for attempt in 1..=2 {
        let (_worker, panicked) = restart(&world);
        assert!(panicked, "resume {attempt} crashes again");
        assert_eq!(world.head().drive_attempts, attempt);
        assert_eq!(world.head().status, RunStatus::Running);
    }
    assert_eq!(world.panics.get(), 3);
    // The third resume does not drive it again: the run fails with what it has.
    let (worker, panicked) = restart(&world);
    assert!(!panicked);
    assert_eq!(world.panics.get(), 3, "the tool never ran again");
    let stored = world.stored();
    assert_eq!(stored.status, RunStatus::Failed);
    assert_eq!(stored.next, None);
    assert_eq!(stored.drive_attempts, 0);
    let error = stored.error.expect("an error");
    assert_eq!(error.kind, "internal");
    assert_eq!(error.message, CRASHED_TWICE);
    assert!(CRASHED_TWICE.starts_with("KnowledgeLens crashed twice on this run"));
    assert_eq!(
        world.sink.names().last(),
        Some(&"failed"),
        "the UI hears that it ended"
    );
    // A fourth worker has nothing to resume, and the session takes a new question.
    assert!(futures::executor::block_on(world.worker().resume_all()).is_empty());
    assert_eq!(worker.active_runs(), 0);
}

#[test]
fn a_completed_transition_resets_the_count() {
    // A run that was driven once and got nowhere (its worker crashed right after counting).
    let world = World::new(vec![Reply::text("Because of the moon.")]);
    let mut saved = SessionState::new(SESSION, 500);
    saved.begin_run("Why tides?", None, Default::default(), 500);
    saved.nonce = "0123456789abcdef".into();
    saved.drive_attempts = 1;
    futures::executor::block_on(state::save(world.store.as_ref(), &mut saved)).unwrap();
    world.store.keep_history.set(true);
    let (_worker, panicked) = restart(&world);
    assert!(!panicked);
    let counts: Vec<u32> = world
        .store
        .history
        .borrow()
        .iter()
        .map(|data| {
            state::decode_head(&data[&format!("session:{SESSION}")])
                .unwrap()
                .0
                .drive_attempts
        })
        .collect();
    // Counted (2) before anything else, then 0 from the first transition saved on.
    assert_eq!(counts.first(), Some(&2), "{counts:?}");
    assert!(counts[1..].iter().all(|n| *n == 0), "{counts:?}");
    let stored = world.stored();
    assert_eq!(stored.status, RunStatus::Completed);
    assert_eq!(stored.answer, "Because of the moon.");
}

#[test]
fn a_run_found_at_the_limit_fails_without_being_driven() {
    // Strict model with no replies: any model call fails the test.
    let world = World::new(vec![]);
    let mut saved = SessionState::new(SESSION, 500);
    saved.begin_run("Why tides?", None, Default::default(), 500);
    saved.answer = "A partial answer.".into();
    saved.drive_attempts = state::MAX_DRIVE_ATTEMPTS;
    futures::executor::block_on(state::save(world.store.as_ref(), &mut saved)).unwrap();
    // A reconnecting popup is a resume trigger too.
    let worker = world.worker();
    let (snap, run) = futures::executor::block_on(
        worker.handle_json(json!({"id": 2, "type": "snapshot", "session": SESSION})),
    );
    assert_eq!(snap["ok"], true);
    futures::executor::block_on(run.expect("the interrupted run is taken over"));
    let stored = world.stored();
    assert_eq!(stored.status, RunStatus::Failed);
    assert_eq!(stored.answer, "A partial answer.");
    assert_eq!(stored.error.unwrap().message, CRASHED_TWICE);
    assert_eq!(world.llm.calls(), 0);
    assert_eq!(worker.active_runs(), 0, "the session is not busy");
}

/// The session of `service` is not busy: a new question is taken (its run is dropped).
fn assert_not_busy(service: &Rc<Service>, context: &str) {
    assert_eq!(service.active_runs(), 0, "{context}: still registered");
    let (reply, _run) = ask(service, "And again?");
    assert_eq!(reply["ok"], true, "{context}: {reply}");
}

#[test]
fn the_registry_forgets_a_run_that_completes_fails_or_stops() {
    // Completed.
    let world = World::new(vec![Reply::text("Done.")]);
    let service = world.worker();
    let (_, run) = ask(&service, "Q?");
    futures::executor::block_on(run.unwrap());
    assert_eq!(world.stored().status, RunStatus::Completed);
    assert_not_busy(&service, "completed");

    // Failed (a fatal model error).
    let world = World::new(vec![Reply::status(401)]);
    let service = world.worker();
    let (_, run) = ask(&service, "Q?");
    futures::executor::block_on(run.unwrap());
    assert_eq!(world.stored().status, RunStatus::Failed);
    assert_not_busy(&service, "failed");

    // Stopped before it began its first step (the answer is still written).
    let world = World::new(vec![Reply::text("What I have.")]);
    let service = world.worker();
    let (_, run) = ask(&service, "Q?");
    let stop = json!({"id": 2, "type": "stop", "session": SESSION});
    let (stopped, _) = futures::executor::block_on(service.handle_json(stop));
    assert_eq!(stopped["ok"], true, "{stopped}");
    futures::executor::block_on(run.unwrap());
    assert_eq!(world.stored().status, RunStatus::Stopped);
    assert_not_busy(&service, "stopped");
}

#[test]
fn the_registry_forgets_a_run_failed_as_crashed_or_no_longer_running() {
    // Failed as crashed twice, taken over by a snapshot.
    let world = World::new(vec![]);
    let mut saved = SessionState::new(SESSION, 500);
    saved.begin_run("Why tides?", None, Default::default(), 500);
    saved.drive_attempts = state::MAX_DRIVE_ATTEMPTS;
    futures::executor::block_on(state::save(world.store.as_ref(), &mut saved)).unwrap();
    let service = world.worker();
    let runs = futures::executor::block_on(service.resume_all());
    assert_eq!(runs.len(), 1);
    assert_eq!(service.active_runs(), 1);
    futures::executor::block_on(futures::future::join_all(runs));
    assert_not_busy(&service, "crashed twice");

    // A session that is no longer running once loaded is not kept registered.
    let world = World::new(vec![]);
    let mut done = SessionState::new(SESSION, 500);
    done.begin_run("Why tides?", None, Default::default(), 500);
    done.status = RunStatus::Completed;
    futures::executor::block_on(state::save(world.store.as_ref(), &mut done)).unwrap();
    let service = world.worker();
    assert!(futures::executor::block_on(service.resume_all()).is_empty());
    assert_not_busy(&service, "not running");
}

#[test]
fn the_registry_forgets_a_run_whose_future_is_dropped_or_panics() {
    // Dropped mid-run (nothing drives it any more).
    let world = World {
        yielding: true,
        ..World::new(vec![])
    };
    let service = world.worker();
    let (_, run) = ask(&service, "Q?");
    let mut run = run.unwrap();
    assert!(poll_times(run.as_mut(), 1).is_none(), "still going");
    assert_eq!(service.active_runs(), 1);
    drop(run);
    assert_not_busy(&service, "dropped");

    // A panic unwinding through the run.
    let world = World::new(vec![boom_call()]);
    let service = world.worker();
    let (_, run) = ask(&service, "Q?");
    assert!(drive_catching(run.unwrap()));
    assert_eq!(world.panics.get(), 1);
    assert_not_busy(&service, "panicked");
}
