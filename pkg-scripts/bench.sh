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
set -euo pipefail

export KL_SCRIPT=bench
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$KL_ROOT"

runs=${KL_BENCH_RUNS:-300}
out=target/bench
mkdir -p "$out"

bash pkg-scripts/build.sh >&2

kl_log "native engine overhead ($runs runs)"
KL_BENCH_RUNS=$runs cargo bench --quiet --features bench --bench overhead > "$out/native.json"

kl_log "wasm engine overhead under Node ($runs runs)"
cargo build --quiet --release --target wasm32-unknown-unknown --lib --features bench
rm -rf "$out/wasm-node"
wasm-bindgen --target nodejs --out-dir "$out/wasm-node" --out-name knowledgelens \
  target/wasm32-unknown-unknown/release/knowledgelens.wasm
# The nodejs glue is CommonJS; the repo's package.json says "type": "module".
printf '{"type": "commonjs"}\n' > "$out/wasm-node/package.json"
KL_BENCH_RUNS=$runs node pkg-scripts/bench-wasm.mjs "$out/wasm-node/knowledgelens.js" > "$out/wasm.json"

glue_gz=$(cat dist/wasm/knowledgelens_bg.wasm dist/wasm/knowledgelens.js | gzip -9 | wc -c | tr -d '[:space:]')

node --input-type=module - "$out" "$glue_gz" <<'JS'
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
const [dir, glueGz] = process.argv.slice(2);
const native = JSON.parse(readFileSync(`${dir}/native.json`, 'utf8'));
const wasm = JSON.parse(readFileSync(`${dir}/wasm.json`, 'utf8'));
const fresh = [
  { name: 'core/step_overhead_native_ms', unit: 'ms', value: native.median_ms },
  { name: 'core/step_overhead_wasm_ms', unit: 'ms', value: wasm.median_ms },
  { name: 'core/step_overhead_wasm_p95_ms', unit: 'ms', value: wasm.p95_ms },
  { name: 'core/wasm_glue_gz_bytes', unit: 'bytes', value: Number(glueGz) },
];
const file = `${dir}/results.json`;
const old = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
const names = new Set(fresh.map((r) => r.name));
const merged = [...old.filter((r) => !names.has(r.name)), ...fresh];
writeFileSync(file, JSON.stringify(merged, null, 2) + '\n');
for (const r of fresh) console.log(`${r.name.padEnd(34)} ${String(+r.value.toFixed(4)).padStart(10)} ${r.unit}`);
console.log(`wrote ${file}`);
JS
