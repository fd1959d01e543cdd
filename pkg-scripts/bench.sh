#!/usr/bin/env bash
# Runs the benchmarks and writes target/bench/results.json: a list of
# {"name", "unit", "value"} (smaller is better), merged with what earlier runs wrote.
#
#   pkg-scripts/bench.sh
#
# core/step_overhead_native_ms      engine overhead per step, native (median)
# core/step_overhead_wasm_ms        the same in wasm under Node (median)
# core/step_overhead_wasm_p95_ms    its 95th percentile
# core/wasm_glue_gz_bytes           the shipped wasm plus its JS glue, gzip -9
# Runs: 5 tool steps plus a final answer against a zero-latency scripted model, a ~1 KB
# question, ~2 KB tool results, the state saved after every phase; >= 200 runs after warm-up.
#
# context/token_estimate_error_pct/{prose,code,cjk}
#                                   the token estimator's mean absolute error against
#                                   o200k_base on tests/fixtures/tokens.json, percent (native,
#                                   from the overhead bench; characters/4's is logged beside it)
#
# context/compaction_remaining_pct  tokens after / before a compaction by the deterministic
#                                   fallback, percent, mean over one session per fixture text
#                                   of tests/fixtures/tokens.json (72): 4 earlier answers, 3
#                                   read_page results, the page excerpt (native)
#
# persist/save_step_{10kb,100kb,1mb}_ms  one step appended to a stored state of that size,
#                                        from the save call until chrome.storage.session
#                                        resolved (median)
# persist/load_{100kb,1mb}_ms            loading a state of that size (median)
# persist/sw_cold_start_ms               worker start to backend ready, resuming a ~100 KB
#                                        run (median of KL_BENCH_COLD_STARTS, default 30)
# persist/sw_cold_start_{script,compile,instantiate,backend,resume}_ms
#                                        its parts (medians): the worker's JS modules loading,
#                                        fetching and compiling the wasm, instantiating it,
#                                        Backend.start until it resumes, resuming the run
# rag/index_1mb_ms                       splitting a ~1 MB page into passages and indexing them
# rag/retrieve_1mb_ms                    the best 8 passages for a six-word question (median)
# Measured in wasm in the extension's service worker in headless Chromium, against the real
# chrome.storage.session (a benchmark build in target/bench/extension; dist/ is untouched).
# See pkg-scripts/bench-persist.mjs.
#
# size/<area>_bytes                      the shipped wasm's bytes per feature area, by function
#                                        name (twiggy on the shipped build with its names kept);
#                                        the full report, with the ten largest functions and a
#                                        gzip estimate per area, in target/bench/size.txt.
#                                        See pkg-scripts/bench-size.mjs.
#
# peer/step_overhead_ours_over_langgraph our time per step / LangGraph.js's prebuilt ReAct agent's
#                                        with its in-memory checkpointer (MemorySaver), both
#                                        saving state every step, on the same trajectory and
#                                        scripted model, run in alternating rounds in one Node
#                                        process (median / median)
# peer/step_overhead_ours_over_langgraph_no_checkpointer   the same against LangGraph without one
# peer/bundle_ours_over_langgraph        core/wasm_glue_gz_bytes / LangGraph's browser bundle of
#                                        that agent (esbuild, minified, gzip -9)
# The peer lives in bench/peer/ (its own package.json and lock file; development only, never
# shipped); this script runs `npm ci` there. See bench/peer/run.mjs.
set -euo pipefail

export KL_SCRIPT=bench
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$KL_ROOT"

# shellcheck source-path=SCRIPTDIR source=lib/ensure-tools.sh
source "$KL_ROOT/pkg-scripts/lib/ensure-tools.sh"
kl_ensure_build_tools
kl_ensure_twiggy

runs=${KL_BENCH_RUNS:-300}
out=target/bench
mkdir -p "$out"

bash pkg-scripts/build.sh --names "$out/size" >&2
kl_log "size report: $out/size.txt"
node pkg-scripts/bench-size.mjs "$out/size/named.wasm" dist/wasm/knowledgelens_bg.wasm \
  dist/wasm/knowledgelens.js "$out/size.txt" > "$out/size.json"
# Timings move with whatever else the machine runs: say how busy it was.
kl_log "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

kl_log "native engine overhead ($runs runs)"
KL_BENCH_RUNS=$runs cargo bench --quiet --features bench --bench overhead > "$out/native.json"

kl_log "wasm engine overhead under Node ($runs runs)"
cargo build --quiet --release --target wasm32-unknown-unknown --lib --features bench
rm -rf "$out/wasm-node"
wasm-bindgen --target nodejs --out-dir "$out/wasm-node" --out-name knowledgelens \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/knowledgelens.wasm"
# The nodejs glue is CommonJS; the repo's package.json says "type": "module".
printf '{"type": "commonjs"}\n' > "$out/wasm-node/package.json"
KL_BENCH_RUNS=$runs node pkg-scripts/bench-wasm.mjs "$out/wasm-node/knowledgelens.js" > "$out/wasm.json"

glue_gz=$(cat dist/wasm/knowledgelens_bg.wasm dist/wasm/knowledgelens.js | gzip -9 | wc -c | tr -d '[:space:]')

kl_log "the peer: LangGraph.js's ReAct agent and ours, alternating ($runs runs each)"
(cd bench/peer && kl_run npm ci --no-audit --no-fund) >&2
mkdir -p "$out/peer"
bench/peer/node_modules/.bin/esbuild bench/peer/agent.mjs --bundle --minify --format=esm \
  --platform=browser --log-level=error --outfile="$out/peer/langgraph.js"
peer_gz=$(gzip -9 -c "$out/peer/langgraph.js" | wc -c | tr -d '[:space:]')
kl_log "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
KL_BENCH_RUNS=$runs node bench/peer/run.mjs "$out/wasm-node/knowledgelens.js" > "$out/peer.json"

kl_log "persistence in headless Chromium, real chrome.storage.session ($runs runs per size)"
kl_log "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
bash pkg-scripts/build.sh --bench "$out/extension" >&2
KL_BENCH_RUNS=$runs node pkg-scripts/bench-persist.mjs "$out/extension" > "$out/persist.json"

node --input-type=module - "$out" "$glue_gz" "$peer_gz" <<'JS'
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
const [dir, glueGz, peerGz] = process.argv.slice(2);
const native = JSON.parse(readFileSync(`${dir}/native.json`, 'utf8'));
const wasm = JSON.parse(readFileSync(`${dir}/wasm.json`, 'utf8'));
const persist = JSON.parse(readFileSync(`${dir}/persist.json`, 'utf8'));
const size = JSON.parse(readFileSync(`${dir}/size.json`, 'utf8'));
const peer = JSON.parse(readFileSync(`${dir}/peer.json`, 'utf8'));
const fresh = [
  { name: 'core/step_overhead_native_ms', unit: 'ms', value: native.median_ms },
  { name: 'core/step_overhead_wasm_ms', unit: 'ms', value: wasm.median_ms },
  { name: 'core/step_overhead_wasm_p95_ms', unit: 'ms', value: wasm.p95_ms },
  { name: 'core/wasm_glue_gz_bytes', unit: 'bytes', value: Number(glueGz) },
  ...Object.entries(native.token_estimate_error_pct).map(([script, value]) => (
    { name: `context/token_estimate_error_pct/${script}`, unit: '%', value })),
  { name: 'context/compaction_remaining_pct', unit: '%', value: native.compaction_remaining_pct },
  { name: 'persist/save_step_10kb_ms', unit: 'ms', value: persist.save_10kb_ms },
  { name: 'persist/save_step_100kb_ms', unit: 'ms', value: persist.save_100kb_ms },
  { name: 'persist/save_step_1mb_ms', unit: 'ms', value: persist.save_1mb_ms },
  { name: 'persist/load_100kb_ms', unit: 'ms', value: persist.load_100kb_ms },
  { name: 'persist/load_1mb_ms', unit: 'ms', value: persist.load_1mb_ms },
  { name: 'persist/sw_cold_start_ms', unit: 'ms', value: persist.sw_cold_start_ms },
  ...['script', 'compile', 'instantiate', 'backend', 'resume'].map((part) => (
    { name: `persist/sw_cold_start_${part}_ms`, unit: 'ms', value: persist[`sw_cold_start_${part}_ms`] })),
  { name: 'rag/index_1mb_ms', unit: 'ms', value: persist.rag_index_1mb_ms },
  { name: 'rag/retrieve_1mb_ms', unit: 'ms', value: persist.rag_retrieve_1mb_ms },
  ...Object.entries(size.areas).map(([area, value]) => ({ name: `size/${area}_bytes`, unit: 'bytes', value })),
  { name: 'peer/step_overhead_ours_over_langgraph', unit: 'ratio', value: peer.ours_step_ms / peer.langgraph_checkpointer_step_ms },
  { name: 'peer/step_overhead_ours_over_langgraph_no_checkpointer', unit: 'ratio', value: peer.ours_step_ms / peer.langgraph_step_ms },
  { name: 'peer/bundle_ours_over_langgraph', unit: 'ratio', value: Number(glueGz) / Number(peerGz) },
];
for (const r of fresh) {
  if (typeof r.value !== 'number' || !Number.isFinite(r.value)) throw new Error(`no value for ${r.name}`);
}
const file = `${dir}/results.json`;
const old = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
const names = new Set(fresh.map((r) => r.name));
const merged = [...old.filter((r) => !names.has(r.name)), ...fresh];
writeFileSync(file, JSON.stringify(merged, null, 2) + '\n');
for (const [script, value] of Object.entries(native.chars4_error_pct)) {
  console.log(`(characters/4 on the same fixture, ${script}: ${value.toFixed(2)} %)`);
}
console.log(`(peer, per step: ours ${peer.ours_step_ms} ms, LangGraph ${peer.langgraph_step_ms} ms, with MemorySaver ${peer.langgraph_checkpointer_step_ms} ms; LangGraph's bundle ${peerGz} bytes gzip -9)`);
for (const r of fresh) console.log(`${r.name.padEnd(40)} ${String(+r.value.toFixed(4)).padStart(10)} ${r.unit}`);
console.log(`wrote ${file}`);
JS
