#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: `rdmak plugin` on cx7-rail-1016vf against the stand-in kubelet (tools/bench-plugin.mjs).
# The anchors publish no figures to run against here; their stated ones are in docs/plugin.md.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || [ ! -d tests/js/node_modules ]; then
	echo "bench-plugin: skipped (needs node and tests/js/node_modules: cd tests/js && npm ci)"
	exit 0
fi
node tools/bench-plugin.mjs --rdmak "$build/rdmak" --node examples/nodes/cx7-rail-1016vf
