#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: every benchmark, each printed as a ratio against a peer run in the same invocation.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
py=/usr/bin/python3; [ -x "$py" ] || py=python3
"$py" tools/bench.py "$build"
for b in tools/bench-*.sh; do [ -x "$b" ] && "$b" "$build"; done
exit 0
