//! Benchmarks exported to JS (feature `bench` only), timed with `performance.now()`: the
//! engine's per-step overhead, and saving and loading session state in the real
//! `chrome.storage.session` (run them in the extension's worker; `pkg-scripts/bench.sh`
//! does).

use wasm_bindgen::prelude::*;

fn now() -> f64 {
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .and_then(|p| js_sys::Reflect::get(&p, &"now".into()).ok().map(|f| (p, f)))
        .and_then(|(p, f)| js_sys::Function::from(f).call0(&p).ok())
        .and_then(|v| v.as_f64())
        .unwrap_or_else(js_sys::Date::now)
}

/// Per-step overhead in ms of `runs` measured runs after `warmup` runs.
#[wasm_bindgen]
pub fn bench_step_overhead(runs: usize, warmup: usize) -> Vec<f64> {
    crate::bench::step_overhead(runs, warmup, &now)
}

/// Milliseconds each of `runs` builds of the passage index of a page of about `bytes`
/// characters took (after one unmeasured build).
#[wasm_bindgen]
pub fn bench_rag_index(bytes: usize, runs: usize) -> Vec<f64> {
    let text = crate::bench::rag_page(bytes);
    crate::bench::rag_index(&text, 1, &now);
    crate::bench::rag_index(&text, runs, &now)
}

/// Milliseconds each of `runs` retrievals of the best 8 passages took on the index of a
/// page of about `bytes` characters.
#[wasm_bindgen]
pub fn bench_rag_retrieve(bytes: usize, runs: usize) -> Vec<f64> {
    let text = crate::bench::rag_page(bytes);
    crate::bench::rag_retrieve(&text, runs, &now)
}

/// A state whose stored size is about `bytes`: trajectory entries of ~2 KB each.
fn state_of_size(session: &str, bytes: usize) -> crate::state::SessionState {
    use crate::state::trajectory::Item;
    let mut state = crate::state::SessionState::new(session, 0);
    state.begin_run(
        "benchmark question",
        None,
        crate::state::config::RunConfig::default(),
        0,
    );
    let chunk = "x".repeat(2000);
    let head = crate::state::encode_head(&mut state).len();
    while head + state.trajectory.len() * 2100 < bytes {
        state.record(
            0,
            Item::ToolResult {
                call_id: "c".into(),
                name: "read_page".into(),
                ok: true,
                content: chunk.clone(),
            },
        );
    }
    state
}

/// The session the save and load benchmarks write (removed when they end).
const BENCH_SESSION: &str = "tab:999999";

async fn time_saves(
    bytes: usize,
    runs: usize,
    warmup: usize,
) -> Result<Vec<f64>, crate::ports::StoreError> {
    use crate::state::trajectory::Item;
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(BENCH_SESSION, bytes);
    crate::state::save(&store, &mut state).await?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..warmup + runs {
        state.record(0, Item::thought(format!("step {i}: {}", "y".repeat(500))));
        let start = now();
        crate::state::save(&store, &mut state).await?;
        if i >= warmup {
            samples.push(now() - start);
        }
    }
    crate::state::delete_session(&store, &state.session).await?;
    Ok(samples)
}

async fn time_loads(
    bytes: usize,
    runs: usize,
    warmup: usize,
) -> Result<Vec<f64>, crate::ports::StoreError> {
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(BENCH_SESSION, bytes);
    crate::state::save(&store, &mut state).await?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..warmup + runs {
        let start = now();
        let loaded = crate::state::load(&store, &state.session).await;
        let elapsed = now() - start;
        match loaded {
            Ok(Some(back)) if back.trajectory.len() == state.trajectory.len() => {}
            _ => {
                return Err(crate::ports::StoreError::Failed(
                    "the benchmark state did not load back".into(),
                ))
            }
        }
        if i >= warmup {
            samples.push(elapsed);
        }
    }
    crate::state::delete_session(&store, &state.session).await?;
    Ok(samples)
}

/// Milliseconds each of `runs` saves took (after `warmup` unmeasured ones), each appending
/// one step (a ~0.5 KB entry) to a state of about `bytes` stored in the real
/// `chrome.storage.session`: from the save call until storage resolved. Call it in the
/// extension's worker.
#[wasm_bindgen]
pub async fn bench_persist_save(
    bytes: usize,
    runs: usize,
    warmup: usize,
) -> Result<Vec<f64>, JsValue> {
    time_saves(bytes, runs, warmup)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}

/// Milliseconds each of `runs` loads (after `warmup` unmeasured ones) of a state of about
/// `bytes` took, from the real `chrome.storage.session`.
#[wasm_bindgen]
pub async fn bench_persist_load(
    bytes: usize,
    runs: usize,
    warmup: usize,
) -> Result<Vec<f64>, JsValue> {
    time_loads(bytes, runs, warmup)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}

/// Stores a session of about `bytes` under `session` whose run is going on and waits,
/// without a deadline, for the user's answer to a question: a worker that starts resumes it
/// (loading all of it) and then waits, calling nothing. For the cold-start benchmark.
#[wasm_bindgen]
pub async fn bench_store_waiting_session(session: String, bytes: usize) -> Result<(), JsValue> {
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(&session, bytes);
    let call = crate::llm::ToolCall {
        id: "call_bench".into(),
        name: crate::tools::REQUEST_INPUT.into(),
        arguments: r#"{"question": "Which part?"}"#.into(),
    };
    state.input.pending = Some(crate::state::PendingInput {
        request_id: "bench".into(),
        call,
        question: "Which part?".into(),
        // Asked now: a question asked at time 0 is long past its acknowledgement wait, and
        // the resumed run would time out instead of waiting.
        asked_at: js_sys::Date::now() as u64,
        ack_deadline: None,
        acknowledged_at: None,
        answer_deadline: None,
    });
    state.next = Some(crate::state::Next::AwaitInput);
    crate::state::save(&store, &mut state)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}
