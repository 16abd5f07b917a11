#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test of the suite against one build directory and prints, last, one line
# "N passed, N failed". Unit tests (cmocka) and command tests (shell, node) all speak TAP;
# this script only counts top-level "ok"/"not ok" lines. A test that needs something this
# machine lacks prints "ok N - ... # SKIP reason" and is counted as skipped, never as passed.
#   tests/run.sh BUILD_DIR [PATTERN...]
# Runs the suites whose name (unit/test_nl, cmd/list, js/chart) contains one of the PATTERNs;
# every suite without one.
set -u
build=${1:?usage: tests/run.sh BUILD_DIR [PATTERN...]}
shift
patterns=("$@")
# matches NAME: does one of the patterns (or the lack of any) select this suite?
matches() {
	local p
	[ ${#patterns[@]} -eq 0 ] && return 0
	for p in "${patterns[@]}"; do case "$1" in *"$p"*) return 0 ;; esac; done
	return 1
}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# A single test must find what it needs, and only that: bring the build directory up to date as
# it was made (its make.vars: compiler and sanitizers; a plain build otherwise) with what the
# selected suites use (the Makefile's tests-* kinds: a unit test its own binary; a command or js
# suite what its files, and the files they source or import, name: helpers, seams, the CNI
# driver, the relocated binaries, the fuzz harnesses), or all of it (`tests`) for the whole
# suite; and tests/js's Node.js modules from the lock file when a js test is to run and they are
# missing (a second clone on a set-up machine has the Debian packages but not these).
vars=$(cat "$build/make.vars" 2>/dev/null || echo "SAN=0")
# the files FILE sources (. "$TOP/tests/lib-x.sh") or imports (from './x.mjs'), and theirs
with_deps() { # FILE...
	local seen=" " todo=("$@") f d
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}; todo=("${todo[@]:1}")
		case "$seen" in *" $f "*) continue ;; esac
		[ -f "$f" ] || continue
		seen+="$f "; echo "$f"
		for d in $(sed -n 's|^\s*\. "\$TOP/\(tests/[^"]*\)".*|\1|p; s|^\s*\. "\$(dirname "\$0")/\.\./\([^"]*\)".*|tests/\1|p' "$f") \
			$(sed -n "s|.* from '\\./\\([^']*\\)'.*|$(dirname "$f")/\\1|p" "$f"); do
			todo+=("$d")
		done
	done
}
# the Makefile targets a suite NAME (unit/test_x, cmd/x, js/x) needs beyond tests-base
needs() {
	local files
	case "$1" in
	unit/*) echo "$build/tests/${1#unit/}"; return ;;
	cmd/*) files=$(with_deps "tests/$1.sh") ;;
	js/*) files=$(with_deps "tests/js/${1#js/}.test.mjs") ;;
	esac
	# shellcheck disable=SC2086
	grep -qE "helpers/|'helpers'" $files && echo tests-helpers
	grep -qE "seams/|'seams'" $files && echo tests-seams
	grep -qE "cni-driver" $files && echo tests-driver
	grep -qE "reloc/|'reloc'" $files && echo tests-reloc
	grep -qE "fuzz/|fuzz_" $files && echo tests-fuzz
	return 0
}
all_suites() { # the names of every suite, from the sources
	local t
	for t in tests/unit/test_*.c; do echo "unit/$(basename "$t" .c)"; done
	for t in tests/cmd/*.sh; do echo "cmd/$(basename "$t" .sh)"; done
	for t in tests/js/*.test.mjs; do echo "js/$(basename "$t" .test.mjs)"; done
}
if [ ${#patterns[@]} -eq 0 ]; then
	targets=(tests)
else
	targets=(tests-base)
	while read -r n; do
		matches "$n" && mapfile -t -O "${#targets[@]}" targets < <(needs "$n")
	done < <(all_suites)
fi
mlog=$(mktemp)
# shellcheck disable=SC2086
if ! make -s -C "$top" $vars BUILD="$build" $(printf '%s\n' "${targets[@]}" | sort -u) >"$mlog" 2>&1; then
	cat "$mlog" >&2; rm -f "$mlog"
	echo "tests/run.sh: building $build failed (make $vars BUILD=$build ${targets[*]})" >&2; exit 1
fi
rm -f "$mlog"
need_js=0
for t in tests/js/*.test.mjs; do matches "js/$(basename "$t" .test.mjs)" && need_js=1; done
matches "vm/plugin" && need_js=1 # its kubelet is tests/js's
# npm ci writes node_modules/.package-lock.json: older than the lock file, a pull changed the
# modules the tests need
if [ "$need_js" = 1 ] && [ -f tests/js/package-lock.json ] &&
	{ [ ! -d tests/js/node_modules ] || [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; }; then
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
# Suites run side by side, JOBS at a time (default: the number of CPUs): most of a suite's time
# is spent waiting (on processes it starts, on sockets, on the kernel), not computing. A suite
# whose file has a line "# run.sh: alone" runs with no other beside it (it measures, or it
# loads the machine on purpose). The slowest suites of the last run start first (its times are
# in BUILD/test-times.tsv), which shortens the whole run; each suite's time is printed beside it.
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
times_file="$top/$build/test-times.tsv"
declare -A last_time=()
if [ -f "$times_file" ]; then
	while IFS=$'\t' read -r n t; do last_time[$n]=$t; done <"$times_file"
fi

names=() cmds=() alone=()
add_suite() { # name, file the suite is in, command...
	local name=$1 file=$2; shift 2
	matches "$name" || return 0
	names+=("$name"); cmds+=("$(printf '%q ' "$@")")
	if grep -q '^# run.sh: alone' "$file" 2>/dev/null; then alone+=(1); else alone+=(0); fi
}
for t in tests/unit/test_*.c; do
	[ -f "$t" ] || continue
	add_suite "unit/$(basename "$t" .c)" "$t" "$build/tests/$(basename "$t" .c)"
done
for t in tests/cmd/*.sh; do
	[ -f "$t" ] || continue
	add_suite "cmd/$(basename "$t" .sh)" "$t" bash "$t"
done
for t in tests/js/*.test.mjs; do
	[ -f "$t" ] || continue
	add_suite "js/$(basename "$t" .test.mjs)" "$t" node --test --test-reporter=tap "$t"
done

log_of() { echo "$log_dir/$(echo "$1" | tr '/' '_').log"; }
tally() { # index: counts the suite's TAP lines and prints its result
	local i=$1 name=${names[$1]} log rc p s f ns secs
	log=$(log_of "$name")
	rc=$(cat "$log.rc" 2>/dev/null || echo 125)
	secs=$(cat "$log.secs" 2>/dev/null || echo 0)
	rm -f "$log.rc" "$log.secs"
	times+=("$name"$'\t'"$secs")
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
		echo "FAIL $name ($p passed, $f failed, exit $rc, ${secs}s; log $log)"
		grep -E '^not ok|^# ' "$log" | head -20 | sed 's/^/    /'
		grep -E 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$log" | head -5 | sed 's/^/    /'
	else
		echo "ok   $name ($p passed$([ "$s" -eq 0 ] || echo ", $s skipped"), ${secs}s)"
	fi
}
start() { # index: runs the suite in the background, its exit code and seconds beside its log
	local name=${names[$1]} log
	log=$(log_of "$name")
	(
		t0=$(date +%s.%N)
		eval "${cmds[$1]}" >"$log" 2>&1 </dev/null
		echo $? >"$log.rc"
		awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$log.secs"
	) &
	running[$!]=$1
}

# the order: the last run's slowest first; suites never timed before first of all
order=()
while IFS=$'\t' read -r _ i; do order+=("$i"); done < <(
	for i in "${!names[@]}"; do printf '%s\t%s\n' "${last_time[${names[$i]}]:-1e9}" "$i"; done | sort -t$'\t' -k1,1gr -k2,2n)
declare -A running=()
times=()
reap() { # waits for one running suite and tallies it
	local pid
	wait -n -p pid "${!running[@]}" || true
	tally "${running[$pid]}"
	unset "running[$pid]"
}
for i in "${order[@]}"; do
	if [ "${alone[$i]}" = 1 ]; then continue; fi
	while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
	start "$i"
done
while [ "${#running[@]}" -gt 0 ]; do reap; done
for i in "${order[@]}"; do
	if [ "${alone[$i]}" = 1 ]; then start "$i"; reap; fi
done
# The live-kernel tests (tests/vm/*.sh) run inside one boot of Debian's kernel under qemu, all
# of them in turn (a boot costs ~10 s of TCG), after every other suite and alone (TCG takes both
# CPUs); each one's TAP is then counted as its own suite, with its seconds in the guest. They run
# BUILD's binaries: under make check the sanitized ones, which cost the guest no more than the
# plain build's (its time goes to TCG's process starts and 9p, not to ASan).
vm_names=()
for t in tests/vm/*.sh; do
	[ -f "$t" ] || continue
	matches "vm/$(basename "$t" .sh)" && vm_names+=("$(basename "$t" .sh)")
done
if [ ${#vm_names[@]} -gt 0 ]; then
	vm_out="$log_dir/vm"
	echo "vm: booting Debian's kernel under qemu (TCG) for ${#vm_names[@]} test(s); console: $vm_out/console.log"
	nice -n "${RDMAK_VM_NICE:-10}" tests/vm/harness/boot.sh "$build" "$vm_out" "${vm_names[@]}" 2>"$log_dir/vm-boot.log"
	vm_rc=$?
	for n in "${vm_names[@]}"; do
		names+=("vm/$n")
		log=$(log_of "vm/$n")
		tests/vm/harness/result.sh "$vm_out" "$n" "$vm_rc" "$log_dir/vm-boot.log" >"$log" 2>&1
		echo $? >"$log.rc"
		cp "$vm_out/$n.secs" "$log.secs" 2>/dev/null || echo 0 >"$log.secs"
		tally $((${#names[@]} - 1))
	done
fi
if [ "${#names[@]}" -eq 0 ]; then :; elif [ ${#patterns[@]} -eq 0 ]; then printf '%s\n' "${times[@]}" | sort -t$'\t' -k2,2gr >"$times_file"; else
	# one suite's run updates its own line only
	{ [ -f "$times_file" ] && grep -vFf <(printf '%s\t\n' "${names[@]}") "$times_file"; printf '%s\n' "${times[@]}"; } |
		sort -t$'\t' -k2,2gr >"$times_file.new" && mv "$times_file.new" "$times_file"
fi

echo
[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
