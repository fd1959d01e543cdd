#!/usr/bin/env bash
# Builds the unpacked extension in dist/ and dist/knowledgelens.zip (layout: extension/ copied
# verbatim, plus dist/wasm/knowledgelens.js and dist/wasm/knowledgelens_bg.wasm).
#
#   pkg-scripts/build.sh [--force] [--bench DIR | --test DIR | --names DIR]
#
# Missing tools are installed first (pkg-scripts/lib/ensure-tools.sh). The Rust steps (cargo,
# wasm-bindgen, wasm-opt) are skipped when src/, Cargo.toml, Cargo.lock and .cargo/config.toml
# are unchanged since the last build (a hash in target/knowledgelens-wasm.stamp); --force runs
# them anyway.
# extension/ is copied again on every run. The same build with the test hooks
# (pkg-scripts/lib/test-hooks.js appended to background.js: entry points tests call in the
# worker, which the shipped build does not have) goes to target/e2e-extension/, never zipped:
# the end-to-end tests, run.sh and the real-model tier load it.
# --bench DIR builds the benchmark variant into DIR instead (no zip; never ship it): the wasm
# with `--features bench`, and a background.js that also puts the wasm module's exports on
# globalThis.__klBench, the started Backend on globalThis.__klBackend, and performance.now()
# at the moment the backend was ready (ms since the worker started) on globalThis.__klReadyMs
# (with the number of runs it resumed on globalThis.__klRunsAtReady), and the test hooks.
# --test DIR builds the test-only variant into DIR (no zip; never ship it): the shipped wasm
# and extension/ with the test hooks, and "<all_urls>" added to the manifest's host_permissions, because an
# end-to-end test cannot click the toolbar icon that grants activeTab (screenshots).
# --names DIR also writes the shipped wasm with its name section kept to DIR/named.wasm (the
# same cargo output and wasm-opt flags, but --debuginfo instead of --strip-debug), for the
# size report (pkg-scripts/bench-size.mjs); dist/ is built as usual.
set -euo pipefail

export KL_SCRIPT=build
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/ensure-tools.sh
source "$KL_ROOT/pkg-scripts/lib/ensure-tools.sh"

usage() { sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

force=0
bench_dir=
test_dir=
names_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --bench)
      [ $# -ge 2 ] || kl_die "--bench needs a directory"
      bench_dir=$2
      shift
      ;;
    --test)
      [ $# -ge 2 ] || kl_die "--test needs a directory"
      test_dir=$2
      shift
      ;;
    --names)
      [ $# -ge 2 ] || kl_die "--names needs a directory"
      names_dir=$2
      shift
      ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; kl_die "unknown argument: $1" ;;
  esac
  shift
done

[ -z "$bench_dir" ] || [ -z "$test_dir" ] || kl_die "--bench and --test build different variants: choose one"
[ -z "$names_dir" ] || [ -z "$bench_dir$test_dir" ] || kl_die "--names goes with the shipped build, not --bench or --test"
case "$test_dir" in /*) ;; '') ;; *) test_dir="$PWD/$test_dir" ;; esac

cd "$KL_ROOT"
started=$(kl_now)

# Temporary directories to remove on exit, whatever the outcome.
cleanup=()
trap 'if [ ${#cleanup[@]} -gt 0 ]; then rm -rf "${cleanup[@]}"; fi' EXIT

target_dir=${CARGO_TARGET_DIR:-$KL_ROOT/target}
wasm_in="$target_dir/$KL_WASM_TARGET/release/knowledgelens.wasm"
variant=${bench_dir:+-bench}
features=()
if [ -n "$bench_dir" ]; then features=(--features bench); fi
out_dir="$target_dir/knowledgelens-wasm$variant" # optimized glue + wasm, kept between builds
stamp="$target_dir/knowledgelens-wasm$variant.stamp"
wasm_opt="$KL_ROOT/node_modules/.bin/wasm-opt"
esbuild="$KL_ROOT/node_modules/.bin/esbuild"
# The features rustc enables by default for wasm32-unknown-unknown (Rust 1.95, LLVM 22):
# `rustc --print cfg --target wasm32-unknown-unknown | grep target_feature`. wasm-opt rejects
# a module that uses a feature it was not told about.
# The strip flags drop what wasm-bindgen no longer needs (see CARGO_PROFILE_RELEASE_STRIP below).
# --low-memory-unused: Rust's linker puts the stack at the bottom of memory, so its lowest 1 KB
# is touched only by a stack about to overflow; knowing that, wasm-opt folds constant offsets
# into loads and stores (an access that would have wrapped around now traps). --converge
# repeats the passes until the module stops shrinking (+10 s per build). Together -3.2 KB
# gzipped (docs/decisions/opt-level-z.md). (Not --ignore-implicit-traps: the module it gives fails with
# "memory access out of bounds" in the step benchmark.) --reorder-functions-by-name, after
# pkg-scripts/lib/function-order.mjs has named the functions for it, puts like code next to
# like (every instance of one trait method, the async state machines, the drop glue), where
# gzip's 32 KB window finds the repeats: -6 KB gzipped. --one-caller-inline-max-function-size=0
# keeps wasm-opt from inlining a function into its only caller (LLVM has inlined what pays):
# the module grows by 2.7% but gzips 19 KB smaller, as functions stay whole and alike next to
# each other (docs/decisions/function-order.md).
wasm_opt_flags=(-Oz --low-memory-unused --converge --one-caller-inline-max-function-size=0
  --reorder-functions-by-name
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue
  --strip-debug --strip-producers --strip-target-features)
# Bump when the recipe below changes, so old stamps do not match.
recipe="10 one-caller ${wasm_opt_flags[*]} ${features[*]}"

# A hash of everything the wasm depends on: sources, manifests, tool versions, this recipe.
inputs_hash() {
  {
    printf 'recipe %s\n' "$recipe"
    rustc -V
    wasm-bindgen --version
    "$wasm_opt" --version
    local f
    for f in Cargo.toml Cargo.lock .cargo/config.toml build.rs rust-toolchain.toml rust-toolchain \
      pkg-scripts/lib/function-order.mjs; do
      if [ -f "$f" ]; then sha256sum "$f"; fi
    done
    find src -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
  } | sha256sum | cut -d' ' -f1
}

# Instantiates the glue + wasm in Node with the glue's own imports (initSync), then once more
# with __wbg_reset_state (what the worker does after a panic). A wasm-opt that mangles
# wasm-bindgen's externref table produces a module that fails exactly here.
check_wasm_loads() {
  local glue=$1 wasm=$2 tmp
  tmp=$(mktemp -d)
  cleanup+=("$tmp")
  cp "$glue" "$tmp/glue.mjs"
  if ! node --input-type=module -e '
    const [glue, wasm] = process.argv.slice(1);
    const { readFileSync } = await import("node:fs");
    const { pathToFileURL } = await import("node:url");
    const m = await import(pathToFileURL(glue).href);
    m.initSync({ module: readFileSync(wasm) });
    if (typeof m.__wbg_reset_state !== "function") throw new Error("the glue has no __wbg_reset_state");
    m.__wbg_reset_state();
    const names = Object.keys(m).filter((k) => k !== "default" && k !== "initSync");
    console.log("wasm loads in Node; glue exports: " + names.join(", "));
  ' "$tmp/glue.mjs" "$wasm" >&2; then
    kl_die "$wasm does not instantiate with its glue (see above)"
  fi
}

build_wasm() {
  local hash=$1 tmp raw
  # `strip = true` would drop the `target_features` section that wasm-bindgen reads to learn
  # which wasm features the module uses (it warns and guesses); wasm-opt strips afterwards.
  kl_run env CARGO_PROFILE_RELEASE_STRIP=false \
    cargo build --release --target "$KL_WASM_TARGET" --lib "${features[@]}"
  [ -f "$wasm_in" ] || kl_die "cargo did not produce $wasm_in"
  mkdir -p "$target_dir"
  tmp=$(mktemp -d "$target_dir/knowledgelens-wasm.XXXXXX")
  cleanup+=("$tmp")
  # --experimental-reset-state-function: the glue exports __wbg_reset_state, with which the
  # service worker replaces an instance a panic aborted (extension/background.js).
  # Its TypeScript declarations (knowledgelens.d.ts) stay in $out_dir, for the type check
  # (tsconfig.json; copied to target/tsc/wasm/ below), never in dist/.
  kl_run wasm-bindgen --target web --experimental-reset-state-function \
    --out-dir "$tmp" --out-name knowledgelens "$wasm_in"
  rm -f "$tmp/knowledgelens_bg.wasm.d.ts"
  raw=$(kl_size "$tmp/knowledgelens_bg.wasm")
  kl_run node pkg-scripts/lib/function-order.mjs "$tmp/knowledgelens_bg.wasm" "$tmp/ordered.wasm"
  kl_run "$wasm_opt" "${wasm_opt_flags[@]}" -o "$tmp/opt.wasm" "$tmp/ordered.wasm"
  rm -f "$tmp/ordered.wasm"
  mv "$tmp/opt.wasm" "$tmp/knowledgelens_bg.wasm"
  kl_log "wasm-opt: $raw -> $(kl_size "$tmp/knowledgelens_bg.wasm") bytes"
  # The glue minified (esbuild from package.json; exports and import.meta.url kept):
  # -2.0 KB gzipped, mostly wasm-bindgen's doc comments and long local names.
  kl_run "$esbuild" "$tmp/knowledgelens.js" --minify --format=esm --target=es2022 \
    --log-level=warning --outfile="$tmp/knowledgelens.min.js"
  mv "$tmp/knowledgelens.min.js" "$tmp/knowledgelens.js"
  check_wasm_loads "$tmp/knowledgelens.js" "$tmp/knowledgelens_bg.wasm"
  rm -rf "$out_dir"
  mv "$tmp" "$out_dir"
  printf '%s\n' "$hash" > "$stamp"
}

# The shipped wasm with its names kept, in $names_dir/named.wasm (for the size report).
build_named() {
  # cargo only re-copies its output if it is up to date (the same profile as build_wasm's);
  # a --features bench build may have replaced it since.
  kl_run env CARGO_PROFILE_RELEASE_STRIP=false \
    cargo build --release --target "$KL_WASM_TARGET" --lib
  rm -rf "$names_dir"
  mkdir -p "$names_dir"
  kl_run wasm-bindgen --target web --no-typescript --experimental-reset-state-function \
    --out-dir "$names_dir" --out-name knowledgelens "$wasm_in"
  local flags=() f
  for f in "${wasm_opt_flags[@]}"; do
    if [ "$f" = --strip-debug ]; then flags+=(--debuginfo --strip-dwarf); else flags+=("$f"); fi
  done
  # In the shipped order (function-order.mjs), each name kept after its place.
  kl_run node pkg-scripts/lib/function-order.mjs --keep-names \
    "$names_dir/knowledgelens_bg.wasm" "$names_dir/ordered.wasm"
  kl_run "$wasm_opt" "${flags[@]}" -o "$names_dir/named.wasm" "$names_dir/ordered.wasm"
  rm -f "$names_dir/knowledgelens_bg.wasm" "$names_dir/ordered.wasm"
}

# PDF.js (npm pdfjs-dist, pinned in package.json) into $1/vendor/pdfjs/: the library and its
# worker (minified, unmodified), the character maps and standard fonts (CJK and unembedded
# fonts), its image decoders' wasm, and the licence. Used by offscreen.html only.
copy_pdfjs() {
  local from="$KL_ROOT/node_modules/pdfjs-dist" to="$1/vendor/pdfjs"
  [ -f "$from/build/pdf.min.mjs" ] || kl_die "node_modules/pdfjs-dist is missing: run npm ci"
  mkdir -p "$to"
  cp "$from/build/pdf.min.mjs" "$from/build/pdf.worker.min.mjs" "$from/LICENSE" "$to/"
  cp -R "$from/cmaps" "$from/standard_fonts" "$from/wasm" "$to/"
}

# dist/ = extension/ + wasm/; the zip holds the same files.
assemble_dist() {
  [ -f extension/manifest.json ] || kl_die "extension/manifest.json is missing"
  rm -rf dist
  mkdir -p dist/wasm
  cp -R extension/. dist/
  find dist \( -name '*.d.ts' -o -name '*.d.mts' \) -delete # declarations for tsc only (tsconfig.json)
  cp "$out_dir/knowledgelens.js" "$out_dir/knowledgelens_bg.wasm" dist/wasm/
  copy_pdfjs dist

  local zip_tmp="$target_dir/knowledgelens.zip.partial"
  rm -f "$zip_tmp"
  cleanup+=("$zip_tmp")
  if command -v zip >/dev/null 2>&1; then
    (cd dist && zip -q -r -X "$zip_tmp" .)
  else
    local entries=()
    mapfile -t entries < <(cd dist && ls -A)
    (cd dist && python3 -m zipfile -c "$zip_tmp" "${entries[@]}")
  fi
  mv "$zip_tmp" dist/knowledgelens.zip
}

# A copy of extension/ with the wasm in $1, and the test hooks (pkg-scripts/lib/test-hooks.js:
# the entry points tests call in the worker) at the end of its background.js. Never zipped.
assemble_with_hooks() {
  rm -rf "$1"
  mkdir -p "$1/wasm"
  cp -R extension/. "$1/"
  find "$1" \( -name '*.d.ts' -o -name '*.d.mts' \) -delete
  cp "$out_dir/knowledgelens.js" "$out_dir/knowledgelens_bg.wasm" "$1/wasm/"
  copy_pdfjs "$1"
  cat pkg-scripts/lib/test-hooks.js >> "$1/background.js"
}

# The benchmark variant: extension/ plus the bench wasm, the test hooks and bench hooks, in
# $bench_dir.
assemble_bench() {
  assemble_with_hooks "$bench_dir"
  cat >> "$bench_dir/background.js" <<'JS'

// ---- Benchmark build only (pkg-scripts/build.sh --bench) ----
import * as klBench from './wasm/knowledgelens.js';
globalThis.__klBench = klBench;
ready.then((backend) => {
  // The worker's time origin is when it started: this is start-to-ready in ms.
  globalThis.__klReadyMs = performance.now();
  globalThis.__klRunsAtReady = backend.active_runs();
  globalThis.__klBackend = backend;
});
JS
}

# The test-only variant: extension/ plus the shipped wasm and the test hooks, in $test_dir,
# whose manifest also holds "<all_urls>" (captureVisibleTab without a toolbar click).
assemble_test() {
  assemble_with_hooks "$test_dir"
  node -e '
    const fs = require("node:fs");
    const file = process.argv[1];
    const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
    manifest.host_permissions = [...(manifest.host_permissions ?? []), "<all_urls>"];
    manifest.description = `TEST BUILD, never ship: ${manifest.description}`;
    fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
  ' "$test_dir/manifest.json"
}

kl_ensure_build_tools

# One build at a time per checkout (two would race on target/ and dist/).
mkdir -p "$target_dir"
if command -v flock >/dev/null 2>&1; then
  exec 9> "$target_dir/knowledgelens-build.lock"
  if ! flock -n 9; then
    kl_log "another build.sh is running in this checkout; waiting for it"
    flock 9
  fi
fi

hash=$(inputs_hash)
if [ "$force" = 1 ]; then
  kl_log "--force: rebuilding the wasm"
  build_wasm "$hash"
elif [ ! -f "$out_dir/knowledgelens_bg.wasm" ] || [ ! -f "$out_dir/knowledgelens.js" ] ||
  [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$hash" ]; then
  build_wasm "$hash"
else
  kl_log "wasm is up to date (src/, Cargo.toml, Cargo.lock, .cargo/config.toml unchanged); skipping cargo, wasm-bindgen, wasm-opt"
fi

# The glue's declarations where tsconfig.json's rootDirs finds them for `./wasm/knowledgelens.js`
# (`tsc --noEmit` after a build, in test.sh's e2e tier).
if [ -z "$bench_dir" ]; then
  mkdir -p "$KL_ROOT/target/tsc/wasm"
  cp "$out_dir/knowledgelens.d.ts" "$KL_ROOT/target/tsc/wasm/"
fi

if [ -n "$test_dir" ]; then
  assemble_test
  kl_log "test-only build in $test_dir in $(kl_elapsed "$started") s (host access to <all_urls>: never ship it)"
  exit 0
fi

if [ -n "$bench_dir" ]; then
  assemble_bench
  kl_log "benchmark build in $bench_dir in $(kl_elapsed "$started") s (not for shipping)"
  exit 0
fi

assemble_dist
# The same with the test hooks, for the end-to-end tests, run.sh and the real-model tier
# (tests/e2e/support/browser.mjs loads it unless KL_DIST says otherwise).
assemble_with_hooks "$target_dir/e2e-extension"
if [ -n "$names_dir" ]; then build_named; fi

wasm=dist/wasm/knowledgelens_bg.wasm
glue=dist/wasm/knowledgelens.js
wasm_raw=$(kl_size "$wasm")
wasm_gz=$(gzip -9 -c "$wasm" | wc -c | tr -d '[:space:]')
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
echo "wasm: $wasm  $wasm_raw bytes ($(kib "$wasm_raw")) raw, $wasm_gz bytes ($(kib "$wasm_gz")) gzip -9"
echo "glue: $glue  $(kl_size "$glue") bytes ($(kib "$(kl_size "$glue")"))"
echo "zip:  dist/knowledgelens.zip  $(kl_size dist/knowledgelens.zip) bytes, $(find dist -type f ! -name knowledgelens.zip | wc -l) files"
kl_log "dist/ ready in $(kl_elapsed "$started") s"
