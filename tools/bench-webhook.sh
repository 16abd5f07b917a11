#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: `rdmak webhook` under 16 HTTPS keep-alive clients, against a minimal Node https peer
# answering the same patch (tools/bench-webhook.mjs).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || [ ! -d tests/js/node_modules ] || ! command -v openssl >/dev/null; then
	echo "bench-webhook: skipped (needs node, openssl and tests/js/node_modules: cd tests/js && npm ci)"
	exit 0
fi
node tools/bench-webhook.mjs --rdmak "$build/rdmak"
