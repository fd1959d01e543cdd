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
