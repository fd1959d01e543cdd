//! Native engine-overhead benchmark (`cargo bench --features bench --bench overhead`):
//! prints `{"median_ms": .., "p95_ms": .., "runs": ..}` on stdout.

use std::time::Instant;

fn main() {
    let runs: usize = std::env::var("KL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let origin = Instant::now();
    let now = || origin.elapsed().as_secs_f64() * 1000.0;
    let mut samples = knowledgelens::bench::step_overhead(runs, 50, &now);
    let (median, p95) = knowledgelens::bench::median_p95(&mut samples);
    println!(
        "{}",
        serde_json::json!({ "median_ms": median, "p95_ms": p95, "runs": runs })
    );
}
