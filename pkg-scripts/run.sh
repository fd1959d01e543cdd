#!/usr/bin/env bash
# Asks KnowledgeLens a question about a bundled sample page, in a real Chromium with dist/.
#
#   pkg-scripts/run.sh [question]
#
# Builds first (a no-op when dist/ is up to date; its output goes to stderr so stdout carries
# only the answer), then runs pkg-scripts/run.mjs. The provider comes from KL_BASE_URL,
# KL_MODEL and KL_API_KEY; Chromium is headed when $DISPLAY is set, else headless.
set -euo pipefail

export KL_SCRIPT=run
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$KL_ROOT"

[ -f pkg-scripts/run.mjs ] || kl_die "pkg-scripts/run.mjs is missing"
bash pkg-scripts/build.sh >&2
exec node pkg-scripts/run.mjs "$@"
