//! State that survives the service worker being stopped: save/load round trips (seed
//! property 12), decoding arbitrary bytes, bounded writes per step, resuming from every
//! point a worker can be stopped at (a chaos test), side effects never run twice, redone
//! phases counted against the retry bound, and storage faults.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::llm::{ChatRequest, ChatResponse, LlmError, Role, ToolCall};
use knowledgelens::ports::{LlmClient, StateStore, StoreError};
use knowledgelens::state::{self, PageInfo, RunStatus, SessionState, StateError};
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, RequestKind};
use knowledgelens::tools::{ToolBox, ToolContext, ToolError, TypedTool};
use proptest::prelude::*;

/// A model whose reply depends only on the request, so a redone phase gets the same reply:
/// it reads the page `steps` times, then answers.
struct Oracle {
    steps: usize,
    tool: &'static str,
    calls: Cell<usize>,
}

impl LlmClient for Oracle {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut dyn FnMut(&str),
    ) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.calls.set(self.calls.get() + 1);
        let results = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count();
        let reply = if request.response_format.is_some()
            || request
                .messages
                .last()
                .is_some_and(|m| m.content.contains("Judge the tool result"))
        {
            let done = results >= self.steps;
            let answer = done.then(|| format!("Answer after {results} reads."));
            ChatResponse {
                content: serde_json::json!({"should_continue": !done, "final_answer": answer})
                    .to_string(),
                ..Default::default()
            }
        } else if RequestKind::of(request) == RequestKind::Reason && results < self.steps {
            ChatResponse {
                content: format!("Reading part {results}."),
                tool_calls: vec![ToolCall {
                    id: format!("call_{results}"),
                    name: self.tool.into(),
                    arguments: format!("{{\"offset\": {}}}", results * 10),
                }],
                ..Default::default()
            }
        } else {
            on_delta("Synthesized.");
            ChatResponse {
                content: "Synthesized.".into(),
                ..Default::default()
            }
        };
        future::ready(Ok(reply)).boxed_local()
    }
}

/// An oracle that reads the page `steps` times.
fn reader(steps: usize) -> Oracle {
    Oracle {
        steps,
        tool: "read_page",
        calls: Cell::new(0),
    }
}

/// A tool with a side effect, counting how often it really ran.
struct SendNote(Rc<Cell<u32>>);

#[derive(kljson::FromJson, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoteArgs {
    #[serde(default, rename = "offset")]
    _offset: u32,
}

impl TypedTool for SendNote {
    const NAME: &'static str = "send_note";
    const DESCRIPTION: &'static str = "Sends a note.";
    type Args = NoteArgs;
    type Output = String;
    fn side_effects(&self) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        _args: NoteArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        self.0.set(self.0.get() + 1);
        future::ready(Ok("sent".to_string())).boxed_local()
    }
}

fn page() -> PageInfo {
    PageInfo {
        title: "Tides".into(),
        url: "http://127.0.0.1/t".into(),
        text: "The moon pulls the oceans. ".repeat(40),
        ..Default::default()
    }
}

fn fresh_state(max_steps: u32) -> SessionState {
    let mut s = SessionState::new("tab:1", 0);
    s.begin_run(
        "Why are there tides?",
        Some(page()),
        RunConfig {
            max_steps,
            ..RunConfig::default()
        },
        0,
    );
    s
}

fn drive(
    llm: &dyn LlmClient,
    store: &MemoryStore,
    tools: &ToolBox,
    state: &mut SessionState,
) -> RecordingSink {
    let (clock, sink) = (ManualClock::new(0), RecordingSink::default());
    futures::executor::block_on(
        Engine::new(llm, &clock, &sink, store, tools, StopSignal::new()).drive(state),
    );
    sink
}

fn load(store: &MemoryStore) -> SessionState {
    futures::executor::block_on(state::load(store, "tab:1"))
        .expect("load")
        .expect("present")
}

#[test]
fn resuming_from_every_save_point_gives_the_uninterrupted_result() {
    let oracle = reader(3);
    let tools = ToolBox::builtin();
    let store = MemoryStore::new();
    store.keep_history.set(true);
    let mut reference = fresh_state(5);
    drive(&oracle, &store, &tools, &mut reference);
    assert_eq!(reference.status, RunStatus::Completed);
    assert_eq!(reference.answer, "Answer after 3 reads.");
    let history = store.history.borrow().clone();
    assert!(
        history.len() >= 10,
        "a save before every call and after every phase: {}",
        history.len()
    );
    for (i, snapshot) in history.iter().enumerate() {
        // The worker stopped right after save i: a new worker loads the state and goes on.
        let resumed_store = MemoryStore::with_data(snapshot.clone());
        resumed_store.keep_history.set(true);
        let mut resumed = load(&resumed_store);
        drive(&oracle, &resumed_store, &tools, &mut resumed);
        let items = |s: &SessionState| {
            s.trajectory
                .iter()
                .map(|e| (e.step, e.item.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            resumed.status,
            RunStatus::Completed,
            "interrupted after save {i}"
        );
        assert_eq!(
            resumed.answer, reference.answer,
            "interrupted after save {i}"
        );
        assert_eq!(
            items(&resumed),
            items(&reference),
            "no lost or duplicated step after save {i}"
        );
        assert_eq!(
            load(&resumed_store),
            resumed,
            "the final state is saved after save {i}"
        );
        // Interrupted a second time, at every save point of the resumed run.
        for (j, second) in resumed_store.history.borrow().iter().enumerate() {
            let again_store = MemoryStore::with_data(second.clone());
            let mut again = load(&again_store);
            let counted = again.drive_attempts;
            drive(&oracle, &again_store, &tools, &mut again);
            if counted >= state::MAX_DRIVE_ATTEMPTS {
                // Both workers were stopped right after counting their drive, before any
                // transition: the third takes the run for one that crashes the worker.
                assert_eq!((i, j), (0, 0), "only the counting saves leave no progress");
                assert_eq!(again.status, RunStatus::Failed);
                assert_eq!(again.error.as_ref().unwrap().message, state::CRASHED_TWICE);
                continue;
            }
            assert_eq!(
                items(&again),
                items(&reference),
                "interrupted after saves {i} and {j}"
            );
        }
    }
}

#[test]
fn a_side_effect_is_never_executed_twice() {
    let count = Rc::new(Cell::new(0));
    let tools = ToolBox::builtin().with(Box::new(SendNote(count.clone())));
    let oracle = Oracle {
        steps: 1,
        tool: "send_note",
        calls: Cell::new(0),
    };
    let store = MemoryStore::new();
    store.keep_history.set(true);
    let mut reference = fresh_state(3);
    drive(&oracle, &store, &tools, &mut reference);
    assert_eq!(count.get(), 1);
    // Find the save that recorded the intent (the act phase began) but not the result.
    let history = store.history.borrow().clone();
    let intent = history
        .iter()
        .map(|snap| load(&MemoryStore::with_data(snap.clone())))
        .position(|s| matches!(s.next, Some(state::Next::Act { started: true, .. })))
        .expect("the intent was saved before acting");
    let resumed_store = MemoryStore::with_data(history[intent].clone());
    let mut resumed = load(&resumed_store);
    drive(&oracle, &resumed_store, &tools, &mut resumed);
    assert_eq!(count.get(), 1, "not executed a second time on resume");
    let result = resumed.trajectory.iter().find_map(|e| match &e.item {
        Item::ToolResult { ok, content, .. } => Some((*ok, content.clone())),
        _ => None,
    });
    let (ok, content) = result.expect("a result was recorded");
    assert!(!ok && content.contains("not repeated"), "{content}");
    assert_ne!(resumed.status, RunStatus::Running);
}

#[test]
fn a_phase_that_keeps_killing_the_worker_ends_within_the_retry_bound() {
    let oracle = reader(2);
    let tools = ToolBox::builtin();
    // Save the run's start, then keep "crashing" right after the pre-call save.
    let store = MemoryStore::new();
    let mut s = fresh_state(5);
    futures::executor::block_on(state::save(&store, &mut s)).expect("save");
    let mut data = store.data.borrow().clone();
    let mut crashes = 0;
    loop {
        let crashing = MemoryStore::with_data(data.clone());
        crashing.keep_history.set(true);
        let mut resumed = load(&crashing);
        if resumed.status != RunStatus::Running {
            assert_eq!(resumed.status, RunStatus::Failed);
            assert_eq!(
                resumed.model_calls, 4,
                "max_retries 3: 4 attempts of the call, then the run gives up"
            );
            let err = resumed.error.expect("error");
            assert_eq!(err.kind, "interrupted");
            assert!(err.message.contains("interrupted"), "{}", err.message);
            break;
        }
        drive(&oracle, &crashing, &tools, &mut resumed);
        // The second save of the redo is the pre-call save (the first counts the drive): the
        // worker dies there.
        data = crashing
            .history
            .borrow()
            .get(1)
            .cloned()
            .expect("a save happened");
        crashes += 1;
        assert!(crashes <= 10, "the redo loop must end");
    }
    assert_eq!(
        crashes, 5,
        "4 cut-off attempts, then the resume that gives up"
    );
}

#[test]
fn writes_per_step_stay_bounded_as_the_run_grows() {
    let oracle = reader(12);
    let store = MemoryStore::new();
    let mut s = fresh_state(15);
    drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    assert_eq!(s.status, RunStatus::Completed);
    let sizes = store.set_sizes.borrow();
    // Skip the first save (it writes the page once); later saves write the head and new entries.
    let early = sizes[1..6].iter().max().copied().expect("sizes");
    let late = sizes[sizes.len() - 5..]
        .iter()
        .max()
        .copied()
        .expect("sizes");
    assert!(
        late < early * 2,
        "a late step writes {late} bytes, an early one {early}"
    );
    assert!(sizes[0] > 1000, "the page is written with the first save");
}

#[test]
fn quota_exceeded_drops_old_finished_sessions_then_retries() {
    let store = MemoryStore::new();
    // Two finished sessions fill most of the quota.
    for (tab, at) in [(7, 10u64), (8, 20)] {
        let mut old = SessionState::new(&format!("tab:{tab}"), at);
        old.begin_run(
            "old",
            Some(PageInfo {
                title: "x".into(),
                url: "u".into(),
                text: "z".repeat(6000),
                ..Default::default()
            }),
            RunConfig::default(),
            at,
        );
        old.status = RunStatus::Completed;
        old.next = None;
        futures::executor::block_on(state::save(&store, &mut old)).expect("save");
    }
    store.quota_bytes.set(Some(store.used_bytes() + 3000));
    let oracle = reader(2);
    let mut s = fresh_state(5);
    let sink = drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(load(&store), s, "the run was saved after making room");
    assert!(
        store.data.borrow().get("session:tab:7").is_none(),
        "the oldest finished session was dropped first"
    );
    assert!(
        s.notices
            .iter()
            .any(|n| n.contains("storage for KnowledgeLens was full")),
        "{:?}",
        s.notices
    );
    assert!(sink.names().contains(&"notice"));
}

/// A page of `chars` characters of `fill` at `url`.
fn page_of(url: &str, fill: &str, chars: usize) -> PageInfo {
    PageInfo {
        title: "Page".into(),
        url: url.into(),
        text: fill.repeat(chars),
        ..Default::default()
    }
}

/// A store holding History (an archived conversation) and another tab's finished session
/// with a 600 KB page.
fn with_history_and_another_tab() -> MemoryStore {
    let store = MemoryStore::new();
    let mut other = SessionState::new("tab:9", 10);
    let page = page_of("https://example.com/other", "z", 600_000);
    other.begin_run("earlier", Some(page), RunConfig::default(), 10);
    other.answer = "An earlier answer.".into();
    other.status = RunStatus::Completed;
    other.next = None;
    futures::executor::block_on(state::archive_conversation(&store, &other))
        .expect("archive")
        .expect("a conversation");
    futures::executor::block_on(state::save(&store, &mut other)).expect("save");
    store
}

/// Saving `state` fails for want of room, and nothing else in `store` was removed for it.
fn refused_without_removing_anything(store: &MemoryStore, state: &mut SessionState) {
    let before = store.data.borrow().clone();
    let saved = futures::executor::block_on(state::save_making_room(store, state));
    assert!(
        matches!(saved, Err(StoreError::QuotaExceeded(_))),
        "{saved:?}"
    );
    assert!(
        *store.data.borrow() == before,
        "History or another session was removed"
    );
}

#[test]
fn an_oversized_record_never_removes_history_or_other_sessions() {
    let store = with_history_and_another_tab();
    store
        .quota_bytes
        .set(Some(store.used_bytes() + 1024 * 1024));
    // A page whose text alone is more than the largest write that may make room.
    let mut huge = SessionState::new("tab:1", 100);
    let page = page_of("https://example.com/huge", "日本語のページ。", 200_000); // 4.8 MB
    huge.begin_run("What does it say?", Some(page), RunConfig::default(), 100);
    refused_without_removing_anything(&store, &mut huge);
    // A write of ordinary size that fits once the other session is gone still makes room.
    let mut small = fresh_state(2);
    small.page.as_mut().expect("page").text = "z".repeat(1_300_000);
    let made = futures::executor::block_on(state::save_making_room(&store, &mut small));
    assert_eq!(made, Ok(true));
    assert!(!store.data.borrow().contains_key("session:tab:9"));
}

#[test]
fn nothing_is_removed_for_a_write_that_could_not_fit_anyway() {
    let store = with_history_and_another_tab();
    // This tab's last run read a 1 MB page; its records stay until the next run is saved.
    let mut mine = SessionState::new("tab:1", 20);
    let first = page_of("https://example.com/b", "z", 1_000_000);
    mine.begin_run("first", Some(first), RunConfig::default(), 20);
    futures::executor::block_on(state::save(&store, &mut mine)).expect("save");
    store.quota_bytes.set(Some(store.used_bytes() + 200_000));
    // A new run on a 1.2 MB page: with this tab's 1 MB still there, it cannot fit even if
    // everything else went (1.2 + 1.0 MB against a quota of about 1.8 MB).
    let second = page_of("https://example.com/c", "z", 1_200_000);
    mine.begin_run("second", Some(second), RunConfig::default(), 30);
    refused_without_removing_anything(&store, &mut mine);
}

#[test]
fn quota_exceeded_with_nothing_to_drop_summarizes_older_steps() {
    let store = MemoryStore::new();
    store.quota_bytes.set(Some(9_000));
    let oracle = reader(6);
    let mut s = fresh_state(8);
    drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    assert_eq!(s.status, RunStatus::Completed);
    let summarized = s.trajectory.iter().any(|e| matches!(&e.item, Item::ToolResult { content, .. } if content.contains("summarized to save space")));
    assert!(summarized);
    assert_eq!(load(&store), s);
}

#[test]
fn storage_unavailable_continues_in_memory_and_warns_once() {
    let store = MemoryStore::new();
    for _ in 0..50 {
        store
            .fail_sets
            .borrow_mut()
            .push_back(StoreError::Unavailable("access denied".into()));
    }
    let oracle = reader(2);
    let mut s = fresh_state(5);
    let sink = drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(sink.names().iter().filter(|n| **n == "notice").count(), 1);
}

#[test]
fn a_new_run_removes_the_previous_runs_records() {
    let oracle = reader(2);
    let store = MemoryStore::new();
    let mut s = fresh_state(5);
    drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    let first_run_keys = store
        .data
        .borrow()
        .keys()
        .filter(|k| k.starts_with("traj:tab:1:1:"))
        .count();
    assert!(first_run_keys > 0);
    s.begin_run("And the sun?", Some(page()), RunConfig::default(), 5);
    drive(&oracle, &store, &ToolBox::builtin(), &mut s);
    let data = store.data.borrow();
    assert_eq!(
        data.keys()
            .filter(|k| k.starts_with("traj:tab:1:1:") || k.starts_with("page:tab:1:1"))
            .count(),
        0
    );
    assert!(data.keys().any(|k| k.starts_with("traj:tab:1:2:")));
    drop(data);
    let loaded = load(&store);
    assert_eq!(loaded, s);
    assert_eq!(loaded.turns[0].question, "Why are there tides?");
}

/// Writes `state` the way schema version 1 stored it: one record, everything inline,
/// internally tagged items and `next`.
fn as_v1(state: &SessionState) -> String {
    let mut v = serde_json::to_value(state).expect("serialize");
    v["version"] = 1.into();
    if let Some(next) = v.get("next").cloned() {
        v["next"] = match next {
            serde_json::Value::String(phase) => serde_json::json!({ "phase": phase }),
            serde_json::Value::Object(m) => {
                let (phase, fields) = m.into_iter().next().expect("tagged");
                let mut fields = fields.as_object().cloned().expect("fields");
                fields.insert("phase".into(), phase.into());
                serde_json::Value::Object(fields)
            }
            other => other,
        };
    }
    for entry in v["trajectory"].as_array_mut().expect("array") {
        let item = entry
            .as_object_mut()
            .expect("entry")
            .remove("item")
            .expect("item");
        let (kind, fields) = item
            .as_object()
            .cloned()
            .expect("tagged")
            .into_iter()
            .next()
            .expect("one");
        let e = entry.as_object_mut().expect("entry");
        e.insert("type".into(), kind.into());
        e.extend(fields.as_object().cloned().expect("fields"));
    }
    v.to_string()
}

fn arb_text() -> impl Strategy<Value = String> {
    "\\PC{0,40}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 12: any valid state saves and loads back equal, across runs and saves.
    #[test]
    fn any_state_round_trips(
        question in arb_text(), text in arb_text(), answer in arb_text(), notices in proptest::collection::vec(arb_text(), 0..3),
        steps in 0usize..4, runs in 1usize..3, has_page in any::<bool>(),
    ) {
        let store = MemoryStore::new();
        let mut s = SessionState::new("popup", 3);
        for run in 0..runs {
            let page = has_page.then(|| PageInfo { title: question.clone(), url: "u".into(), text: text.clone(), ..Default::default() });
            s.begin_run(&format!("{question}{run}"), page, RunConfig::default(), 3);
            s.notices = notices.clone();
            let oracle = Oracle { steps, tool: "read_page", calls: Cell::new(0) };
            drive(&oracle, &store, &ToolBox::builtin(), &mut s);
            s.answer = answer.clone();
            futures::executor::block_on(state::save(&store, &mut s)).expect("save");
            let loaded = futures::executor::block_on(state::load(&store, "popup")).expect("load").expect("present");
            prop_assert_eq!(&loaded, &s);
        }
    }

    /// Migration: a state stored by schema version 1 loads as the same current state, and is
    /// rewritten in the current layout.
    #[test]
    fn v1_records_migrate_to_the_same_current_state(steps in 0usize..4, stop_early in any::<bool>(), question in arb_text()) {
        let store = MemoryStore::new();
        let mut s = SessionState::new("tab:1", 0);
        s.begin_run(&question, Some(page()), RunConfig { max_steps: if stop_early { 1 } else { 5 }, ..RunConfig::default() }, 0);
        let oracle = Oracle { steps, tool: "read_page", calls: Cell::new(0) };
        drive(&oracle, &store, &ToolBox::builtin(), &mut s);
        let legacy = MemoryStore::new();
        futures::executor::block_on(legacy.set(vec![("session:tab:1".into(), as_v1(&s))])).expect("set");
        let migrated = futures::executor::block_on(state::load(&legacy, "tab:1")).expect("load").expect("present");
        let mut expected = s.clone();
        expected.saved = migrated.saved;
        prop_assert_eq!(&migrated, &expected);
        let reloaded = futures::executor::block_on(state::load(&legacy, "tab:1")).expect("load").expect("present");
        prop_assert_eq!(&reloaded, &migrated, "stored again in the current layout");
        prop_assert!(legacy.data.borrow().keys().any(|k| k.starts_with("traj:") || s.trajectory.is_empty()));
    }

    /// Any bytes stored as a session head either load or are reported corrupted (or newer);
    /// never a panic.
    #[test]
    fn arbitrary_head_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        match state::decode_head(&text) {
            Ok(_) | Err(StateError::Corrupted(_)) | Err(StateError::NewerVersion(_)) => {}
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    /// A damaged trajectory entry or a mangled head field makes the load report corruption.
    #[test]
    fn damaged_records_are_reported_corrupted(garbage in "\\PC{0,30}", which in 0usize..3) {
        let store = MemoryStore::new();
        let mut s = fresh_state(5);
        let oracle = reader(1);
        drive(&oracle, &store, &ToolBox::builtin(), &mut s);
        let key = match which {
            0 => "traj:tab:1:1:0".to_string(),
            1 => "session:tab:1".to_string(),
            _ => "traj:tab:1:1:1".to_string(),
        };
        let keep = serde_json::from_str::<serde_json::Value>(&garbage).is_ok();
        store.data.borrow_mut().insert(key, format!("{{{garbage}"));
        let result = futures::executor::block_on(state::load(&store, "tab:1"));
        prop_assert!(keep || matches!(result, Err(StateError::Corrupted(_))), "{:?}", result.map(|_| ()));
    }
}

#[test]
fn newer_versions_are_refused_not_guessed() {
    let store = MemoryStore::new();
    futures::executor::block_on(store.set(vec![(
        "session:popup".into(),
        format!(
            r#"{{"version": {}, "entries": 0, "state": {{}}}}"#,
            state::SCHEMA_VERSION + 1
        ),
    )]))
    .expect("set");
    let result = futures::executor::block_on(state::load(&store, "popup"));
    assert!(
        matches!(result, Err(StateError::NewerVersion(v)) if v == state::SCHEMA_VERSION + 1),
        "{result:?}"
    );
    let data: BTreeMap<String, String> = store.data.borrow().clone();
    assert_eq!(data.len(), 1, "nothing is overwritten by a refused load");
}

/// The store a session fixture (tests/fixtures/sessions/v*.json) holds, key by key.
pub(crate) fn fixture_data(json: &str) -> BTreeMap<String, String> {
    let fixture: serde_json::Value = serde_json::from_str(json).expect("fixture");
    fixture["store"]
        .as_object()
        .expect("store")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("text").to_string()))
        .collect()
}

/// A session saved by an earlier schema (version 3, written by that build's `save`:
/// tests/fixtures/sessions/v3.json) loads with every field in its capability's sub-record,
/// and is saved again as the current version, reading back the same.
#[test]
fn a_session_saved_by_version_3_loads_and_saves_as_the_current_version() {
    let data = fixture_data(include_str!("../fixtures/sessions/v3.json"));
    assert!(data["session:tab:7"].starts_with(r#"{"version":3,"#));
    let store = MemoryStore::with_data(data);
    let mut loaded = futures::executor::block_on(state::load(&store, "tab:7"))
        .expect("loads")
        .expect("a session");
    assert_eq!(loaded.version, state::SCHEMA_VERSION);
    assert_eq!(loaded.status, RunStatus::Running);
    assert_eq!(loaded.next, Some(state::Next::AwaitInput));
    let pending = loaded.input.pending.as_ref().expect("the question waiting");
    assert_eq!(
        (pending.request_id.as_str(), pending.question.as_str()),
        ("req-1", "Metric or imperial?")
    );
    assert_eq!(pending.acknowledged_at, Some(1_200));
    assert_eq!(loaded.input.kept_answers, ["Answer briefly."]);
    let compaction = loaded.compact.compaction.as_ref().expect("compaction");
    assert!(compaction
        .summary
        .starts_with("The user asked what pulls the sea"));
    assert_eq!(
        (
            loaded.compact.last_prompt_tokens,
            loaded.compact.prompt_scale_pct,
            loaded.compact.overflow_limit
        ),
        (1_234, 112, 6_000)
    );
    let phase = loaded.phases.run.as_ref().expect("the bounded phase");
    assert_eq!((phase.label.as_str(), phase.iterations), ("subtopic:1", 1));
    assert_eq!(
        loaded.phases.contexts.get("subtopic:1").map(Vec::len),
        Some(1)
    );
    assert_eq!(loaded.phases.resets.get("subtopic:1"), Some(&1));
    assert_eq!(loaded.trajectory.len(), 2);
    assert_eq!(
        loaded.page.as_ref().map(|p| p.text.as_str()),
        Some("The moon pulls the sea. Twice a day the water rises.")
    );
    assert_eq!(loaded.turns.len(), 1);

    futures::executor::block_on(state::save(&store, &mut loaded)).expect("saves");
    let head = store.data.borrow()["session:tab:7"].clone();
    assert!(
        head.starts_with(&format!(r#"{{"version":{},"#, state::SCHEMA_VERSION)),
        "{head}"
    );
    let written: serde_json::Value = serde_json::from_str(&head).expect("json");
    for old in [
        "pending_input",
        "kept_answers",
        "compaction",
        "last_prompt_tokens",
        "phase",
        "contexts",
        "context_resets",
    ] {
        assert!(written["state"].get(old).is_none(), "{old} in {head}");
    }
    let again = futures::executor::block_on(state::load(&store, "tab:7"))
        .expect("loads")
        .expect("a session");
    assert_eq!(again, loaded);
}

/// A conversation archived by version 3 (History) opens with its state migrated like a
/// session's: the fields the previous version kept flat are in their sub-records.
#[test]
fn a_conversation_archived_by_version_3_opens_migrated() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/sessions/v3.json")).expect("fixture");
    let store = &fixture["store"];
    let head: serde_json::Value =
        serde_json::from_str(store["session:tab:7"].as_str().expect("head")).expect("json");
    // As version 3 archived a conversation: the whole state inline, beside its summary.
    let mut state = head["state"].clone();
    state["page"]["text"] = store["page:tab:7:1"].clone();
    state["trajectory"] = serde_json::Value::Array(
        (0..2)
            .map(|i| {
                serde_json::from_str(store[format!("traj:tab:7:1:{i}")].as_str().expect("entry"))
                    .expect("json")
            })
            .collect(),
    );
    let record = serde_json::json!({
        "version": 3, "id": "conv:tab:7:1", "session": "tab:7", "title": "Tides",
        "turns": 2, "updated_at": 1_200, "state": state,
    });
    let store = MemoryStore::with_data(BTreeMap::from([(
        "conv:tab:7:1".to_string(),
        record.to_string(),
    )]));
    let opened = futures::executor::block_on(state::load_archived(&store, "conv:tab:7:1"))
        .expect("opens")
        .expect("the conversation");
    assert_eq!(opened.version, state::SCHEMA_VERSION);
    assert_eq!(opened.compact.last_prompt_tokens, 1_234);
    assert_eq!(opened.input.kept_answers, ["Answer briefly."]);
    assert!(opened.compact.compaction.is_some());
    assert_eq!(opened.trajectory.len(), 2);
}

/// A head record of version 2 (a tool with side effects begun, marked by `attempts`) loads
/// with the side effect marked `started`, through the head's own upgrade.
#[test]
fn a_version_2_head_marks_a_begun_side_effect_started() {
    let mut data = fixture_data(include_str!("../fixtures/sessions/v3.json"));
    let mut head: serde_json::Value = serde_json::from_str(&data["session:tab:7"]).expect("json");
    // As version 2 saved a tool with side effects that began: `attempts` > 0 during `act`.
    head["version"] = 2.into();
    head["state"]["version"] = 2.into();
    head["state"]["attempts"] = 1.into();
    head["state"]["next"] = serde_json::json!({"act": {"call": {
        "id": "call_9", "name": "send_note", "arguments": "{}"
    }}});
    for v3_only in [
        "pending_input",
        "rev",
        "seq",
        "phase",
        "contexts",
        "context_resets",
    ] {
        head["state"]
            .as_object_mut()
            .expect("state")
            .remove(v3_only);
    }
    data.insert("session:tab:7".into(), head.to_string());
    let store = MemoryStore::with_data(data);
    let loaded = futures::executor::block_on(state::load(&store, "tab:7"))
        .expect("loads")
        .expect("a session");
    assert_eq!(loaded.version, state::SCHEMA_VERSION);
    assert_eq!(loaded.attempts, 0);
    assert!(
        matches!(&loaded.next, Some(state::Next::Act { call, started: true }) if call.id == "call_9"),
        "{:?}",
        loaded.next
    );
    assert_eq!(loaded.input.kept_answers, ["Answer briefly."]);
    // A head whose state says another version than the head is refused, not guessed at.
    head["state"]["version"] = 3.into();
    let mut data: BTreeMap<String, String> = BTreeMap::new();
    data.insert("session:tab:7".into(), head.to_string());
    let store = MemoryStore::with_data(data);
    assert!(matches!(
        futures::executor::block_on(state::load(&store, "tab:7")),
        Err(StateError::Corrupted(_))
    ));
}

/// Storage full: the pages kept for questions across pages go before History, least
/// recently used first, and never one the saving conversation uses.
#[test]
fn a_full_store_drops_pages_read_earlier_before_history_and_never_an_added_one() {
    use knowledgelens::state::read_pages;
    let store = with_history_and_another_tab();
    let keep = |url: &str, at: u64| {
        futures::executor::block_on(read_pages::keep(
            &store,
            &page_of(url, "r", 200_000),
            Some(1),
            at,
            &[],
            false,
        ))
        .expect("kept")
        .expect("an id")
    };
    let oldest = keep("https://example.com/read-1", 1);
    let used = keep("https://example.com/read-2", 2);
    let newest = keep("https://example.com/read-3", 3);
    let mut state = SessionState::new("tab:5", 50);
    state.begin_run(
        "q",
        Some(page_of("https://example.com/mine", "m", 1_000)),
        RunConfig::default(),
        50,
    );
    let entry = futures::executor::block_on(read_pages::list(&store))
        .expect("list")
        .into_iter()
        .find(|p| p.id == used)
        .expect("listed");
    // The conversation adds the oldest-but-one page (read-2 is less recently used than
    // read-3, more than read-1).
    state.add_page(&entry, 1).expect("added");
    let history_before: Vec<String> = store
        .data
        .borrow()
        .keys()
        .filter(|k| k.starts_with("conv:"))
        .cloned()
        .collect();
    assert!(!history_before.is_empty());
    // Room for the save only once two read pages (about 400 KB) are gone.
    store
        .quota_bytes
        .set(Some(store.used_bytes() + 1_000 - 300_000));
    let made_room =
        futures::executor::block_on(state::save_making_room(&store, &mut state)).expect("saved");
    assert!(made_room);
    let kept: Vec<u64> = futures::executor::block_on(read_pages::list(&store))
        .expect("list")
        .iter()
        .map(|p| p.id)
        .collect();
    assert!(kept.contains(&used), "the added page went: {kept:?}");
    assert!(!kept.contains(&oldest), "{kept:?}");
    assert!(!kept.contains(&newest), "{kept:?}");
    assert!(store
        .data
        .borrow()
        .get(&read_pages::read_page_key(oldest))
        .is_none());
    let history_after: Vec<String> = store
        .data
        .borrow()
        .keys()
        .filter(|k| k.starts_with("conv:"))
        .cloned()
        .collect();
    assert_eq!(
        history_after, history_before,
        "History went before the read pages"
    );
}
