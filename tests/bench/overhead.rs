//! Native benchmarks (`cargo bench --features bench --bench overhead`): prints
//! `{"median_ms": .., "p95_ms": .., "runs": .., "token_estimate_error_pct": {script: ..},
//! "chars4_error_pct": {script: ..}, "compaction_remaining_pct": ..}` on stdout: the engine
//! overhead per step, the token estimator's mean absolute error against
//! `tests/fixtures/tokens.json` beside that of characters/4, and the share of the context a
//! compaction by the deterministic fallback leaves (mean over sessions built from every
//! fixture text).

use std::time::Instant;

use knowledgelens::testing::tokens::{chars_over_4, fixture_texts, score};
use knowledgelens::types::tokens::estimate_tokens;
use serde_json::{Map, Value};

fn main() {
    let runs: usize = std::env::var("KL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let origin = Instant::now();
    let now = || origin.elapsed().as_secs_f64() * 1000.0;
    let mut samples = knowledgelens::bench::step_overhead(runs, 50, &now);
    let (median, p95) = knowledgelens::bench::median_p95(&mut samples);

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens.json");
    let texts = fixture_texts(&std::fs::read_to_string(path).expect("token fixture"))
        .expect("token fixture json");
    let per_script = |estimate: fn(&str) -> u64| -> Map<String, Value> {
        score(&texts, estimate)
            .into_iter()
            .map(|s| (s.script, Value::from(s.mean_abs_error_pct)))
            .collect()
    };
    // The fallback compaction over sessions built from every fixture text (>= 50).
    let remaining: Vec<f64> = texts
        .iter()
        .enumerate()
        .map(|(i, page)| {
            let others: Vec<&str> = (1..=4)
                .map(|k| texts[(i + k * 7) % texts.len()].text.as_str())
                .collect();
            knowledgelens::bench::fallback_compaction_remaining_pct(&page.text, &others)
                .expect("every fixture session compacts")
        })
        .collect();
    assert!(remaining.len() >= 50, "{} sessions", remaining.len());
    let mean_remaining = remaining.iter().sum::<f64>() / remaining.len() as f64;
    let worst_remaining = remaining.iter().copied().fold(0.0, f64::max);
    println!(
        "{}",
        serde_json::json!({
            "median_ms": median,
            "p95_ms": p95,
            "runs": runs,
            "token_estimate_error_pct": per_script(estimate_tokens),
            "chars4_error_pct": per_script(chars_over_4),
            "compaction_remaining_pct": mean_remaining,
            "compaction_remaining_worst_pct": worst_remaining,
            "compaction_sessions": remaining.len(),
        })
    );
}
