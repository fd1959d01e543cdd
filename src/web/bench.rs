//! The engine-overhead benchmark exported to JS (feature `bench` only), timed with
//! `performance.now()`.

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

/// A state whose stored size is about `bytes`: trajectory entries of ~2 KB each.
fn state_of_size(bytes: usize) -> crate::state::SessionState {
    use crate::agent::trajectory::Item;
    let mut state = crate::state::SessionState::new("tab:999999", 0);
    state.begin_run(
        "benchmark question",
        None,
        crate::agent::config::RunConfig::default(),
        0,
    );
    let chunk = "x".repeat(2000);
    while crate::state::encode_head(&mut state).len() + state.trajectory.len() * 2100 < bytes {
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

async fn time_saves(bytes: usize, runs: usize) -> Result<Vec<f64>, crate::ports::StoreError> {
    use crate::agent::trajectory::Item;
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(bytes);
    crate::state::save(&store, &mut state).await?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        state.record(
            0,
            Item::Thought {
                text: format!("step {i}: {}", "y".repeat(500)),
            },
        );
        let start = now();
        crate::state::save(&store, &mut state).await?;
        samples.push(now() - start);
    }
    crate::state::delete_session(&store, &state.session).await?;
    Ok(samples)
}

async fn time_loads(bytes: usize, runs: usize) -> Result<Vec<f64>, crate::ports::StoreError> {
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(bytes);
    crate::state::save(&store, &mut state).await?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = now();
        let loaded = crate::state::load(&store, &state.session).await;
        samples.push(now() - start);
        if !matches!(loaded, Ok(Some(_))) {
            return Err(crate::ports::StoreError::Failed(
                "the benchmark state did not load back".into(),
            ));
        }
    }
    crate::state::delete_session(&store, &state.session).await?;
    Ok(samples)
}

/// Milliseconds each of `runs` saves took, appending one step to a state of about `bytes`
/// stored in the real `chrome.storage.session` (call it in the extension's worker).
#[wasm_bindgen]
pub async fn bench_persist_save(bytes: usize, runs: usize) -> Result<Vec<f64>, JsValue> {
    time_saves(bytes, runs)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}

/// Milliseconds each of `runs` loads of a state of about `bytes` took.
#[wasm_bindgen]
pub async fn bench_persist_load(bytes: usize, runs: usize) -> Result<Vec<f64>, JsValue> {
    time_loads(bytes, runs)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}

/// Stores a finished session of about `bytes` under `session`, so a cold start restores it.
#[wasm_bindgen]
pub async fn bench_store_session(session: String, bytes: usize) -> Result<(), JsValue> {
    let store = super::storage::ChromeStore::new(super::storage::Area::Session);
    let mut state = state_of_size(bytes);
    state.session = session;
    state.status = crate::state::RunStatus::Completed;
    state.next = None;
    crate::state::save(&store, &mut state)
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))
}
