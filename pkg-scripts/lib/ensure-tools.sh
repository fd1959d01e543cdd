# shellcheck shell=bash
# Installs the build and test tools when they are missing, each step only if needed and
# saying what it does. Either source it after common.sh and call the kl_ensure_* functions,
# or run it: `bash pkg-scripts/lib/ensure-tools.sh build|native|wasm|e2e|real-model...`
# installs what those steps need (test.sh runs it that way, so a failed install fails
# cleanly). real-model adds pip and the local model server's npm packages (lib/local-model.sh).
#
# Verified install facts: /work/shared/TOOLCHAIN.md. In short: the wasm32 target via rustup,
# wasm-bindgen-cli via `cargo install` at exactly the version in Cargo.lock (~4 min to compile),
# Chromium and its driver from Debian, wasm-opt from npm `binaryen` (never Debian's binaryen).

KL_WASM_TARGET=wasm32-unknown-unknown
KL_APT_UPDATED=${KL_APT_UPDATED:-0}

kl_need_cmd() {
  command -v "$1" >/dev/null 2>&1 || kl_die "'$1' is not installed and is not installed by this script: $2"
}

# apt-get install, as root or through sudo; `apt-get update` runs once per process.
kl_apt_install() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || kl_die "need root (or sudo) to apt-get install $*"
    sudo=(sudo)
  fi
  kl_need_cmd apt-get "only Debian/Ubuntu installs are automated; install $* by hand"
  if [ "$KL_APT_UPDATED" != 1 ]; then
    kl_run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    KL_APT_UPDATED=1
  fi
  kl_run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q "$@"
}

# cargo, rustc and rustup come with the machine image (rustup.rs); we do not install them.
kl_ensure_rust() {
  kl_need_cmd cargo "install Rust with rustup (https://rustup.rs)"
  kl_need_cmd rustup "install Rust with rustup (https://rustup.rs)"
}

# rustfmt and clippy, used by the native test tier.
kl_ensure_rust_components() {
  kl_ensure_rust
  local missing=()
  cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
  cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
  if [ ${#missing[@]} -gt 0 ]; then
    kl_log "installing rust components: ${missing[*]}"
    kl_run rustup component add "${missing[@]}"
  fi
}

kl_ensure_wasm_target() {
  kl_ensure_rust
  if ! rustup target list --installed | grep -qx "$KL_WASM_TARGET"; then
    kl_log "installing the $KL_WASM_TARGET target"
    kl_run rustup target add "$KL_WASM_TARGET"
  fi
}

# The exact version of the `wasm-bindgen` package that Cargo.lock resolves.
kl_locked_wasm_bindgen_version() {
  if [ ! -f "$KL_ROOT/Cargo.lock" ]; then
    kl_log "Cargo.lock is missing; generating it"
    (cd "$KL_ROOT" && kl_run cargo generate-lockfile) >&2
  fi
  local v
  v=$(awk '
    /^\[\[package\]\]/ { name = "" }
    /^name = / { name = $3; gsub(/"/, "", name) }
    /^version = / && name == "wasm-bindgen" { v = $3; gsub(/"/, "", v); print v; exit }
  ' "$KL_ROOT/Cargo.lock")
  [ -n "$v" ] || kl_die "Cargo.lock has no wasm-bindgen package"
  printf '%s\n' "$v"
}

# Second word of `<tool> --version` ("wasm-bindgen 0.2.130" -> "0.2.130"), or empty.
kl_tool_version() {
  command -v "$1" >/dev/null 2>&1 || return 0
  "$1" --version 2>/dev/null | awk 'NR == 1 { print $2 }'
}

# wasm-bindgen and wasm-bindgen-test-runner (one crate) at the Cargo.lock version: the CLI
# and the library must match exactly. Compiling it takes ~4 min on 2 cores.
kl_ensure_wasm_bindgen() {
  kl_ensure_rust
  local want have runner
  want=$(kl_locked_wasm_bindgen_version)
  have=$(kl_tool_version wasm-bindgen)
  runner=$(kl_tool_version wasm-bindgen-test-runner)
  if [ "$have" = "$want" ] && [ "$runner" = "$want" ]; then
    return 0
  fi
  kl_log "wasm-bindgen-cli ${have:-absent} (test runner ${runner:-absent}) != $want in Cargo.lock; installing $want (takes ~4 min)"
  if ! kl_run cargo install wasm-bindgen-cli --version "$want" --locked --force; then
    kl_log "cargo install --locked failed (its lockfile may pin a version the registry lacks); retrying without --locked"
    kl_run cargo install wasm-bindgen-cli --version "$want" --force
  fi
  hash -r
  have=$(kl_tool_version wasm-bindgen)
  [ "$have" = "$want" ] || kl_die "after install, wasm-bindgen on PATH is '${have:-absent}', want $want"
}

# Chromium and chromedriver from Debian: the wasm browser tests and the e2e tier drive them.
kl_ensure_chromium() {
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    return 0
  fi
  kl_log "installing Debian chromium and chromium-driver (~30 s)"
  kl_apt_install chromium chromium-driver
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    kl_die "chromium install did not provide /usr/bin/chromium and /usr/bin/chromedriver"
  fi
}

kl_ensure_node() {
  kl_need_cmd node "install Node.js 20 or newer"
  kl_need_cmd npm "install npm (comes with Node.js)"
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || kl_die "Node.js $(node --version) is too old; need 20 or newer"
}

# JS tooling from package.json (playwright-core, binaryen's wasm-opt, esbuild, typescript): `npm ci` when
# node_modules is missing or older than package-lock.json.
kl_ensure_node_modules() {
  kl_ensure_node
  local stamp="$KL_ROOT/node_modules/.package-lock.json"
  if [ ! -f "$KL_ROOT/package-lock.json" ]; then
    kl_log "package-lock.json is missing; creating it with npm install"
    (cd "$KL_ROOT" && kl_run npm install --no-audit --no-fund) >&2
  elif [ ! -f "$stamp" ] || [ "$KL_ROOT/package-lock.json" -nt "$stamp" ]; then
    kl_log "node_modules is missing or older than package-lock.json; running npm ci"
    (cd "$KL_ROOT" && kl_run npm ci --no-audit --no-fund) >&2
  fi
  [ -x "$KL_ROOT/node_modules/.bin/wasm-opt" ] ||
    kl_die "node_modules/.bin/wasm-opt is missing: package.json must list binaryen"
  [ -x "$KL_ROOT/node_modules/.bin/esbuild" ] ||
    kl_die "node_modules/.bin/esbuild is missing: package.json must list esbuild"
  [ -x "$KL_ROOT/node_modules/.bin/tsc" ] ||
    kl_die "node_modules/.bin/tsc is missing: package.json must list typescript"
}

# zip for dist/knowledgelens.zip; python3's zipfile does as well.
kl_ensure_zip() {
  if command -v zip >/dev/null 2>&1 || command -v python3 >/dev/null 2>&1; then
    return 0
  fi
  kl_log "neither zip nor python3 found; installing zip"
  kl_apt_install zip
}

# Everything build.sh needs (Chromium is for run.sh and the e2e tier that follow a build).
kl_ensure_build_tools() {
  kl_ensure_wasm_target
  kl_ensure_wasm_bindgen
  kl_ensure_node_modules
  kl_ensure_zip
  kl_ensure_chromium
}

# twiggy, for bench.sh's size report (pkg-scripts/bench-size.mjs), at the version it was
# verified with (about 1 min to compile). Not needed by the build or the tests.
KL_TWIGGY_VERSION=0.8.0
kl_ensure_twiggy() {
  kl_ensure_rust
  local bin="${CARGO_HOME:-$HOME/.cargo}/bin/twiggy"
  if [ -x "$bin" ] && [ "$(kl_tool_version "$bin")" = "$KL_TWIGGY_VERSION" ]; then
    return 0
  fi
  kl_log "installing twiggy $KL_TWIGGY_VERSION for the size report (about 1 min)"
  if ! kl_run cargo install twiggy --version "$KL_TWIGGY_VERSION" --locked; then
    kl_log "cargo install --locked failed; retrying without --locked"
    kl_run cargo install twiggy --version "$KL_TWIGGY_VERSION"
  fi
}

# Run as a program: ensure the tools for the named build step or test tiers.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  KL_SCRIPT=${KL_SCRIPT:-ensure-tools}
  # shellcheck source-path=SCRIPTDIR source=common.sh
  source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
  # shellcheck source-path=SCRIPTDIR source=local-model.sh
  source "$(dirname -- "${BASH_SOURCE[0]}")/local-model.sh"
  [ $# -gt 0 ] || kl_die "usage: ensure-tools.sh build|native|wasm|e2e|real-model|bench..."
  for what in "$@"; do
    case "$what" in
      build | e2e) kl_ensure_build_tools ;;
      real-model) kl_ensure_build_tools; kl_ensure_pip; kl_ensure_local_model_server ;;
      native) kl_ensure_rust_components; kl_ensure_wasm_target; kl_ensure_node_modules ;;
      wasm) kl_ensure_wasm_target; kl_ensure_wasm_bindgen; kl_ensure_node; kl_ensure_chromium ;;
      bench) kl_ensure_build_tools; kl_ensure_twiggy ;;
      *) kl_die "unknown tool set: $what" ;;
    esac
  done
fi
