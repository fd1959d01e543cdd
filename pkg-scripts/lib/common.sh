# shellcheck shell=bash
# Shared helpers for the pkg-scripts: repo root, logging, timing. Source it; do not run it.

# Repository root: two levels above this file (pkg-scripts/lib/common.sh).
KL_ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
export KL_ROOT

# cargo-installed tools (wasm-bindgen) live here; a fresh shell may not have it on PATH.
kl_cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if [ -d "$kl_cargo_bin" ]; then
  case ":$PATH:" in
    *":$kl_cargo_bin:"*) ;;
    *) PATH="$kl_cargo_bin:$PATH" ;;
  esac
fi
export PATH
unset kl_cargo_bin

# Log a step to stderr, prefixed with the calling script's name.
kl_log() { printf '[%s] %s\n' "${KL_SCRIPT:-kl}" "$*" >&2; }
kl_die() { kl_log "error: $*"; exit 1; }

# Print a command, then run it (stdout/stderr untouched).
kl_run() {
  printf '[%s] $ %s\n' "${KL_SCRIPT:-kl}" "$*" >&2
  "$@"
}

# Wall clock in seconds with sub-second precision (bash 5 EPOCHREALTIME).
# (A locale may write EPOCHREALTIME with a decimal comma.)
kl_now() {
  local t=${EPOCHREALTIME:-$(date +%s)}
  printf '%s\n' "${t/,/.}"
}
# Seconds elapsed since a kl_now value, one decimal.
kl_elapsed() { awk -v s="$1" -v e="$(kl_now)" 'BEGIN { printf "%.1f", e - s }'; }

# Byte size of a file.
kl_size() { wc -c < "$1" | tr -d '[:space:]'; }
