// Persistence benchmarks in headless Chromium, against the real chrome.storage.session, in
// the extension's service worker (the benchmark build from `pkg-scripts/build.sh --bench DIR`).
// Prints {"save_10kb_ms", "save_100kb_ms", "save_1mb_ms", "load_100kb_ms", "load_1mb_ms",
// "sw_cold_start_ms", ...} (medians) on stdout; details on stderr.
//
//   node pkg-scripts/bench-persist.mjs DIR
//
// save_*: one step (a ~0.5 KB trajectory entry) appended to a stored state of that size,
//   timed in wasm from the save call until chrome.storage.session resolved (the head record
//   plus the new entry are written; the rest of the state is not).
// load_*: the whole state (head record, then every trajectory entry) read and decoded.
// sw_cold_start_ms: a ~100 KB session is stored as a run waiting for the user's answer; the
//   worker is force-stopped (DevTools protocol) and woken by an extension page connecting.
//   The new worker's performance.now() when Backend.start resolved is the time from the
//   worker starting (its time origin) to ready: module and wasm load, start-up, and resuming
//   the run, which loads all 100 KB. Each sample checks that the run was resumed. For
//   context, wake_to_reply_ms is the same start seen from the page: from connect() until the
//   reply to its snapshot request (Chrome starting the worker, start-up, one request).
// sw_cold_start_{script,compile,instantiate,backend,resume}_ms: the same start in parts, from
//   the worker's performance.mark()s (extension/background.js, src/web/api.rs): loading the
//   worker's JS modules until background.js runs; fetching and compiling the wasm module;
//   instantiating it; Backend.start until it resumes runs (panic hook, ports, service); and
//   resuming the run (restricting the storage areas at the same time) until ready. Medians
//   of each part, so they need not add up to the median of the whole.
// rag_index_1mb_ms / rag_retrieve_1mb_ms: splitting a ~1 MB page into passages and building
//   their BM25 index (at most 50 runs), and retrieving the best 8 passages for a six-word
//   question from it, in wasm in the worker.
// KL_BENCH_RUNS (default 300) timed saves and loads per size after 20 warm-up ones;
// KL_BENCH_COLD_STARTS (default 30) cold starts.

import { resolve } from 'node:path';
import {
  launchExtension,
  stopServiceWorker,
  waitUntil,
  workerBootId,
} from '../tests/e2e/support/browser.mjs';

const dir = resolve(process.argv[2] ?? 'target/bench/extension');
const runs = Number(process.env.KL_BENCH_RUNS || 300);
const coldStarts = Number(process.env.KL_BENCH_COLD_STARTS || 30);
const WARMUP = 20;
const KB = 1000;
const COLD_SESSION = 'tab:999998';

const log = (line) => process.stderr.write(`[bench-persist] ${line}\n`);
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const at = (xs, q) => sorted(xs)[Math.round((xs.length - 1) * q)];
const round = (x) => Math.round(x * 1000) / 1000;
// The cold start's parts: [name, the mark that ends it] (each starts where the last ended).
const PARTS = [
  ['script', 'kl:script'],
  ['compile', 'kl:wasm-compiled'],
  ['instantiate', 'kl:wasm-instantiated'],
  ['backend', 'kl:backend-built'],
];

const kl = await launchExtension({ dist: dir });
try {
  const worker = () => kl.context.serviceWorkers().find((w) => w.url().endsWith('/background.js'));
  const state = () => worker().evaluate((marks) => ({
    boot: globalThis.__klBootId,
    ready: globalThis.__klReadyMs,
    runs: globalThis.__klRunsAtReady,
    bench: typeof globalThis.__klBench?.bench_persist_save === 'function',
    marks: marks.map((name) => performance.getEntriesByName(name, 'mark')[0]?.startTime),
  }), PARTS.map(([, mark]) => mark));
  const first = await waitUntil(async () => {
    const s = await state();
    return s.ready !== undefined ? s : null;
  }, { timeout: 30_000, message: 'the benchmark build to start (is DIR a --bench build?)' });
  if (!first.bench) throw new Error(`${dir} is not a benchmark build: no globalThis.__klBench`);

  const results = {};
  const time = async (name, fn, bytes) => {
    const samples = await worker().evaluate(
      async ([f, b, r, w]) => Array.from(await globalThis.__klBench[f](b, r, w)),
      [fn, bytes, runs, WARMUP],
    );
    results[`${name}_ms`] = round(at(samples, 0.5));
    results[`${name}_p95_ms`] = round(at(samples, 0.95));
    log(`${name}: median ${results[`${name}_ms`]} ms, p95 ${results[`${name}_p95_ms`]} ms (${samples.length} runs)`);
  };
  await time('save_10kb', 'bench_persist_save', 10 * KB);
  await time('save_100kb', 'bench_persist_save', 100 * KB);
  await time('save_1mb', 'bench_persist_save', 1000 * KB);
  await time('load_100kb', 'bench_persist_load', 100 * KB);
  await time('load_1mb', 'bench_persist_load', 1000 * KB);

  // The page knowledge base on a 1 MB page: building its passage index, and one retrieval.
  const ragRuns = Math.max(10, Math.min(runs, 50));
  for (const [name, fn, n] of [['rag_index_1mb', 'bench_rag_index', ragRuns], ['rag_retrieve_1mb', 'bench_rag_retrieve', runs]]) {
    const samples = await worker().evaluate(([f, b, r]) => Array.from(globalThis.__klBench[f](b, r)), [fn, 1000 * KB, n]);
    results[`${name}_ms`] = round(at(samples, 0.5));
    results[`${name}_p95_ms`] = round(at(samples, 0.95));
    log(`${name}: median ${results[`${name}_ms`]} ms, p95 ${results[`${name}_p95_ms`]} ms (${samples.length} runs)`);
  }

  // Cold starts with a restored ~100 KB state.
  const probe = await kl.context.newPage();
  await probe.goto(`chrome-extension://${kl.extId}/options.html`);
  const samples = [];
  const replies = [];
  const parts = Object.fromEntries([...PARTS.map(([name]) => [name, []]), ['resume', []]]);
  for (let i = 0; i < coldStarts; i += 1) {
    // Stored afresh each time: every resume counts a drive of the waiting run, and a run
    // found after MAX_DRIVE_ATTEMPTS drives without a transition is failed (src/state/mod.rs).
    await worker().evaluate(([s, b]) => globalThis.__klBench.bench_store_waiting_session(s, b), [COLD_SESSION, 100 * KB]);
    const before = await workerBootId(kl.context);
    await stopServiceWorker(kl.context);
    // Something must wake it: an extension page connecting and asking for the session, as a
    // popup does. The page times that from its side too (until the reply), for context.
    const replyMs = await probe.evaluate((session) => new Promise((done, fail) => {
      const start = performance.now();
      const port = chrome.runtime.connect({ name: 'knowledgelens' });
      const timer = setTimeout(() => fail(new Error('no snapshot reply in 30 s')), 30_000);
      port.onMessage.addListener((m) => {
        if (m?.id !== 1) return;
        clearTimeout(timer);
        port.disconnect();
        if (m.ok && m.data.status === 'running') done(performance.now() - start);
        else fail(new Error(`unexpected snapshot: ${JSON.stringify(m)}`));
      });
      port.postMessage({ id: 1, type: 'snapshot', session });
    }), COLD_SESSION);
    const boot = await waitUntil(async () => {
      const s = await state();
      return s.boot !== before && s.ready !== undefined ? s : null;
    }, { timeout: 30_000, message: 'the worker to start again' });
    if (boot.runs !== 1) throw new Error(`the worker resumed ${boot.runs} runs, not the stored one`);
    samples.push(boot.ready);
    replies.push(replyMs);
    const ends = [...boot.marks, boot.ready];
    if (ends.some((t, k) => typeof t !== 'number' || t < (ends[k - 1] ?? 0))) {
      throw new Error(`the worker's start-up marks are missing or out of order: ${JSON.stringify(ends)}`);
    }
    ends.forEach((t, k) => parts[PARTS[k]?.[0] ?? 'resume'].push(t - (ends[k - 1] ?? 0)));
  }
  log(`cold starts, worker start to ready (ms): ${samples.map((x) => x.toFixed(1)).join(' ')}`);
  log(`the same, seen from the page: connect to first reply (ms): ${replies.map((x) => x.toFixed(1)).join(' ')}`);
  results.sw_cold_start_ms = round(at(samples, 0.5));
  results.sw_cold_start_p95_ms = round(at(samples, 0.95));
  for (const [name, xs] of Object.entries(parts)) {
    results[`sw_cold_start_${name}_ms`] = round(at(xs, 0.5));
    log(`cold start, ${name} (ms): ${xs.map((x) => x.toFixed(1)).join(' ')}`);
  }
  results.wake_to_reply_ms = round(at(replies, 0.5));
  results.cold_starts = samples.length;
  results.runs = runs;
  // Leave nothing behind.
  await probe.evaluate(async (s) => {
    const all = await chrome.storage.session.get(null);
    await chrome.storage.session.remove(Object.keys(all).filter((k) => k.includes(`${s}`)));
  }, COLD_SESSION);
  console.log(JSON.stringify(results));
} finally {
  await kl.close();
}
