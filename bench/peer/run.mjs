// The peer benchmark (pkg-scripts/bench.sh): our engine in wasm under Node and LangGraph.js's
// prebuilt ReAct agent (agent.mjs), without and with its in-memory checkpointer, on the same
// trajectory, run in alternating rounds in one process so machine drift hits all three.
// Prints {"ours_step_ms", "langgraph_step_ms", "langgraph_checkpointer_step_ms", (p95s),
// "runs", "rounds"} on stdout: medians of the time per step (a run's time / its 6 steps).
//
//   node bench/peer/run.mjs GLUE
//
// GLUE: our wasm-bindgen --target nodejs glue of a `--features bench` build (bench.sh writes
// target/bench/wasm-node/knowledgelens.js). KL_BENCH_RUNS (default 300) measured runs of
// each, in KL_BENCH_ROUNDS (default 10) rounds, after warm-up runs.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { STEPS_PER_RUN, makeAgent, oneRun } from './agent.mjs';

const require = createRequire(import.meta.url);
const glue = require(resolve(process.argv[2]));
const runs = Number(process.env.KL_BENCH_RUNS || 300);
const rounds = Number(process.env.KL_BENCH_ROUNDS || 10);
const perRound = Math.max(1, Math.round(runs / rounds));

const plain = makeAgent();
const saved = makeAgent({ checkpointer: true });
const contenders = {
  ours: async (n) => Array.from(glue.bench_step_overhead(n, 0)),
  langgraph: async (n) => {
    const xs = [];
    for (let i = 0; i < n; i += 1) xs.push((await oneRun(plain)) / STEPS_PER_RUN);
    return xs;
  },
  langgraph_checkpointer: async (n) => {
    const xs = [];
    for (let i = 0; i < n; i += 1) xs.push((await oneRun(saved, { checkpointer: true })) / STEPS_PER_RUN);
    return xs;
  },
};

const names = Object.keys(contenders);
for (const name of names) await contenders[name](name === 'ours' ? 50 : 20); // warm-up
const samples = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < rounds; r += 1) {
  // Rotate who goes first, so no one always runs right after the same other.
  for (let k = 0; k < names.length; k += 1) {
    const name = names[(r + k) % names.length];
    samples[name].push(...await contenders[name](perRound));
  }
}

const at = (xs, q) => [...xs].sort((a, b) => a - b)[Math.round((xs.length - 1) * q)];
const round = (x) => Math.round(x * 10000) / 10000;
const out = { runs: perRound * rounds, rounds };
for (const name of names) {
  out[`${name}_step_ms`] = round(at(samples[name], 0.5));
  out[`${name}_step_p95_ms`] = round(at(samples[name], 0.95));
}
console.log(JSON.stringify(out));
