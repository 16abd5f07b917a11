#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test of the suite against one build directory and prints, last, one line
# "N passed, N failed". Unit tests (cmocka) and command tests (shell, node) all speak TAP;
# this script only counts top-level "ok"/"not ok" lines. A test that needs something this
# machine lacks prints "ok N - ... # SKIP reason" and is counted as skipped, never as passed.
#   tests/run.sh BUILD_DIR [pattern]
set -u
build=${1:?usage: tests/run.sh BUILD_DIR [pattern]}
pattern=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# A single test must find what it needs: bring the build directory up to date as it was made
# (its make.vars: compiler and sanitizers; a plain build otherwise), with the sample nodes, and
# tests/js's Node.js modules from the lock file when a js test is to run and they are missing
# (a second clone on a set-up machine has the Debian packages but not these).
vars=$(cat "$build/make.vars" 2>/dev/null || echo "SAN=0")
# shellcheck disable=SC2086
mlog=$(mktemp)
if ! make -s -C "$top" $vars BUILD="$build" tests >"$mlog" 2>&1; then
	cat "$mlog" >&2; rm -f "$mlog"
	echo "tests/run.sh: building $build failed (make $vars BUILD=$build tests)" >&2; exit 1
fi
rm -f "$mlog"
case "js/" in *"$pattern"*) need_js=1 ;; *) need_js=0 ;; esac
for t in tests/js/*.test.mjs; do case "js/$(basename "$t" .test.mjs)" in *"$pattern"*) need_js=1 ;; esac; done
if [ "$need_js" = 1 ] && [ -f tests/js/package-lock.json ] && [ ! -d tests/js/node_modules ]; then
	echo "tests/run.sh: installing tests/js's modules from its lock file (npm ci)" >&2
	(cd tests/js && npm ci --no-audit --no-fund --silent) || { echo "tests/run.sh: npm ci in tests/js failed" >&2; exit 1; }
fi
export RDMAK="$top/$build/rdmak" BUILD="$top/$build" NODES="$top/examples/nodes" TOP="$top"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CMOCKA_MESSAGE_OUTPUT=TAP
pass=0 fail=0 skip=0
failed_names=()
log_dir="$top/$build/test-logs"
mkdir -p "$log_dir"

run_one() { # name, command...
	local name=$1; shift
	case "$name" in *"$pattern"*) ;; *) return ;; esac
	local log="$log_dir/$(echo "$name" | tr '/' '_').log" rc p f
	"$@" >"$log" 2>&1
	rc=$?
	p=$(grep -cE '^ok [0-9]+' "$log")
	s=$(grep -ciE '^ok [0-9]+[^#]*#[[:space:]]*skip' "$log")
	p=$((p - s))
	f=$(grep -cE '^not ok [0-9]+' "$log")
	# cmocka prints a skip() as "not ok N # SKIP": a skip, not a failure
	ns=$(grep -ciE '^not ok [0-9]+[^#]*#[[:space:]]*skip' "$log")
	s=$((s + ns)); f=$((f - ns))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # a crash or sanitizer abort counts
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" -gt 0 ]; then
		failed_names+=("$name")
		echo "FAIL $name ($p passed, $f failed, exit $rc; log $log)"
		grep -E '^not ok|^# ' "$log" | head -20 | sed 's/^/    /'
		grep -E 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$log" | head -5 | sed 's/^/    /'
	else
		echo "ok   $name ($p passed$([ "$s" -eq 0 ] || echo ", $s skipped"))"
	fi
}

for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in tests/cmd/*.sh; do
	[ -f "$t" ] || continue
	run_one "cmd/$(basename "$t" .sh)" bash "$t"
done
for t in tests/js/*.test.mjs; do
	[ -f "$t" ] || continue
	run_one "js/$(basename "$t" .test.mjs)" node --test --test-reporter=tap "$t"
done

echo
[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
