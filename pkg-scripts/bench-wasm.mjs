// Runs the wasm engine-overhead benchmark (built with --features bench, wasm-bindgen
// --target nodejs) and prints {"median_ms", "p95_ms", "runs"}.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);
const glue = require(resolve(process.argv[2]));
const runs = Number(process.env.KL_BENCH_RUNS || 300);
const samples = Array.from(glue.bench_step_overhead(runs, 50)).sort((a, b) => a - b);
const at = (q) => samples[Math.round((samples.length - 1) * q)];
console.log(JSON.stringify({ median_ms: at(0.5), p95_ms: at(0.95), runs }));
