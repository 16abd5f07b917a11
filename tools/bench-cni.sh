#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: rdmak-cni + rdmak-ipam against the reference chain, both driven by the same libcni
# driver (tests/cni-driver loop: N x ADD then DEL, each cycle timed) in the same namespaces in the
# same run, rounds interleaved so that both see the same machine:
#   - one macvlan with IPAM and policy routing: rdmak-cni + rdmak-ipam vs macvlan + host-local + sbr;
#   - eight macvlans in one pod (seed 004's rails), the same two chains;
#   - the IPAM alone, rdmak-ipam's file store vs host-local, each run as the network's only plugin
#     (an IPAM plugin reads the "ipam" object of the config it is given), so no netns work counts;
#   - the goals: one exec of rdmak-cni (CNI_COMMAND=VERSION) <= 2x the CPU of a trivial static C
#     program (written below, built here); ADD+DEL, one rail and eight, <= 1.2x the exec'd C
#     floor: tests/helpers/nl_floor.c built as a static CNI plugin that makes rdmak-cni's netlink
#     requests and nothing else, exec'd by the same driver in the same rounds; and <= 2x the
#     kernel floor (nl_floor in one process: no exec, no IPAM). A static no-op plugin through the
#     same driver splits the cost beyond the kernel floor into exec'ing a plugin and the rest.
# Use the non-sanitized build (make bench builds it). BENCH_CNI_CYCLES (default 200) per chain.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
top=$PWD
case $build in /*) ;; *) build="$top/$build" ;; esac
export TOP=$top BUILD=$build RDMAK="$build/rdmak" NODES="$top/examples/nodes"
# shellcheck source=../tests/lib.sh
. tests/lib.sh >/dev/null
# shellcheck source=../tests/lib-cni.sh
. tests/lib-cni.sh
why=$(cni_requirements)
if [ -n "$why" ]; then
	echo "bench-cni: skipped ($why)"
	exit 0
fi
cycles=${BENCH_CNI_CYCLES:-200}
# Each DEL after a random, untimed pause of 0 to $pause_us us. A DEL of a link waits in the
# kernel's rcu_barrier() for the RCU thread's next wakeups (every 8 ms here); back to back, a
# cycle starts where the last DEL's wait ended, so every plugin's DEL lands at its own fixed
# point of that cadence and carries up to a period that is not its work (docs/cni.md, "DEL and
# the kernel's RCU cadence"). A pod's DEL comes minutes after its ADD, at no fixed point.
pause_us=${BENCH_CNI_PAUSE_US:-16000}
PAUSE="--pause-random-us $pause_us" TAG=
[ "$pause_us" != 0 ] || PAUSE=""
rounds=5
per=$(((cycles + rounds - 1) / rounds))
cni_topology 8
POD=$(cni_pod bench)
RK_WHY=$(cni_rdmak_ready)
IPAM_WHY=$(cni_rdmak_ready rdmak-ipam)

# confs CHAIN N: --conf/--ifname pairs for rails 0..N-1 (chains: ref, rdmak, ipam-hl, ipam-rk)
confs() {
	local chain=$1 n=$2 k f
	for ((k = 0; k < n; k++)); do
		f="$TMP/$chain-$k.conf"
		case $chain in
		ref) conf_ref "$f" "$k" "$(ipam_json host-local "$k" 4)" ;;
		rdmak) conf_rdmak "$f" "$k" "$(ipam_json rdmak-ipam "$k" 4)" ;;
		ipam-hl) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"ipam$k\",\"type\":\"host-local\",\"ipam\":$(ipam_json host-local "$k" 4)}" >"$f" ;;
		ipam-rk) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"ipam$k\",\"type\":\"rdmak-ipam\",\"ipam\":$(ipam_json rdmak-ipam "$k" 4)}" >"$f" ;;
		noop) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"noop$k\",\"type\":\"noop\"}" >"$f" ;;
		cfloor) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"floor$k\",\"type\":\"nlfloor\"}" >"$f" ;;
		esac
		printf -- '--conf %s --ifname net%d ' "$f" $((k + 1))
	done
}

# loop CHAIN N ROUND: one round of the driver's loop; appends "add del cycle" medians (ms)
loop() {
	local chain=$1 n=$2 r=$3 args
	args=$(confs "$chain" "$n")
	# shellcheck disable=SC2086
	ip netns exec "$HOST_NS" "$DRIVER" loop --count "$per" $args $PAUSE --netns "$POD" --id "b-$chain-$n-$r" \
		--cni-path "$CNI_PATH_TEST" --cache-dir "$TMP/cache" 2>"$TMP/loop.err" >"$TMP/loop.out" || {
		echo "bench-cni: $chain x$n failed: $(cat "$TMP/loop.out") $(head -c 400 "$TMP/loop.err")" >&2
		return 1
	}
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["add"]["median_ms"], d["del"]["median_ms"], d["cycle"]["median_ms"])' \
		"$TMP/loop.out" >>"$TMP/series-$chain-$n$TAG"
}

# med CHAIN N COL: median over the rounds of column COL (1 add, 2 del, 3 cycle)
med() {
	"$PY" -c 'import statistics,sys; print("%.2f" % statistics.median(float(l.split()[int(sys.argv[2])-1]) for l in open(sys.argv[1])))' \
		"$TMP/series-$1-$2" "$3"
}

# compare LABEL RDMAK-CHAIN REF-CHAIN N TARGET WHY-NOT (empty: rdmak's plugins are there)
# [FLOOR-CHAIN]: the floor chain, when given, runs in the same rounds
compare() {
	local label=$1 mine=$2 ref=$3 n=$4 target=$5 RK_WHY=$6 fl=${7:-} r
	for ((r = 0; r < rounds; r++)); do
		loop "$ref" "$n" "$r" || return 0
		[ -n "$RK_WHY" ] || loop "$mine" "$n" "$r" || return 0
		# a floor that fails leaves the chains' comparison standing, without a floor line
		if [ -n "$fl" ] && [ -z "$RK_WHY" ] && ! loop "$fl" "$n" "$r"; then
			rm -f "$TMP/series-$fl-$n"
			fl=
		fi
	done
	echo "  $label"
	printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)\n' "$(name "$ref")" "$(med "$ref" "$n" 3)" "$(med "$ref" "$n" 1)" "$(med "$ref" "$n" 2)"
	if [ -n "$RK_WHY" ]; then
		echo "    $(name "$mine"): skipped ($RK_WHY)"
		return 0
	fi
	printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)  -> %s of the reference%s\n' "$(name "$mine")" \
		"$(med "$mine" "$n" 3)" "$(med "$mine" "$n" 1)" "$(med "$mine" "$n" 2)" \
		"$("$PY" -c 'import sys; print("%.3f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$(med "$mine" "$n" 3)" "$(med "$ref" "$n" 3)")" "$target"
}

name() {
	case $1 in
	ref) echo "macvlan + host-local + sbr" ;;
	rdmak) echo "rdmak-cni + rdmak-ipam" ;;
	ipam-hl) echo "host-local" ;;
	ipam-rk) echo "rdmak-ipam (file store)" ;;
	cfloor) echo "exec'd C floor (nl_floor plugin)" ;;
	esac
}

# ratio A B: A / B to three places
ratio() { "$PY" -c 'import sys; print("%.3f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

# One exec's CPU (user + system, of the child) against a trivial static C program's, interleaved.
TRIVIAL="$TMP/trivial"
printf 'int main(void) { return 0; }\n' >"$TMP/trivial.c"
if [ -z "$RK_WHY" ] && ${CC:-cc} -O2 -static -o "$TRIVIAL" "$TMP/trivial.c" 2>/dev/null; then
	"$PY" - "$TRIVIAL" "$BUILD/cni/rdmak-cni" <<-'EOF'
	import os, resource, subprocess, sys
	def cpu(path, n):
	    env = {"CNI_COMMAND": "VERSION", "PATH": "/usr/bin:/bin"}
	    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
	    for _ in range(n):
	        subprocess.run([path], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False)
	    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
	    return (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000 / n
	t, p = [], []
	for _ in range(5):
	    t.append(cpu(sys.argv[1], 200)); p.append(cpu(sys.argv[2], 200))
	t.sort(); p.sort()
	print("exec: CPU per exec (user+system, 5 interleaved rounds of 200, median)")
	print("    %-30s %8.3f ms" % ("trivial static C program", t[2]))
	print("    %-30s %8.3f ms  -> %.2fx (goal <= 2)" % ("rdmak-cni (VERSION)", p[2], p[2] / t[2]))
	EOF
fi

# The floor of a whole plugin exec: nl_floor built as a static CNI plugin (its CNI_COMMAND mode),
# making rdmak-cni's netlink requests for one rail per exec, exec'd by the same driver in the same
# rounds. The kernel's DELLINK waits on RCU grace periods, which last longer while the runtime is
# busy on the other core: the sum of nl_floor in one process and a no-op's execs misses that.
CFLOOR=
mkdir -p "$TMP/floorbin"
if [ -z "$RK_WHY" ] && ${CC:-cc} -O2 -static -D_GNU_SOURCE -o "$TMP/floorbin/nlfloor" tests/helpers/nl_floor.c 2>/dev/null; then
	CNI_PATH_TEST="$TMP/floorbin:$CNI_PATH_TEST"
	CFLOOR=cfloor
fi
# cfloor_line N RAILS-WORD: the exec'd C floor's figures and rdmak's ratio to them (the goal)
cfloor_line() {
	[ -s "$TMP/series-cfloor-$1" ] || return 0
	printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)\n' "$(name cfloor)" "$(med cfloor "$1" 3)" "$(med cfloor "$1" 1)" "$(med cfloor "$1" 2)"
	echo "    rdmak-cni + rdmak-ipam / exec'd C floor: $(ratio "$(med rdmak "$1" 3)" "$(med cfloor "$1" 3)") (goal <= 1.2; ADD $(ratio "$(med rdmak "$1" 1)" "$(med cfloor "$1" 1)"), DEL $(ratio "$(med rdmak "$1" 2)" "$(med cfloor "$1" 2)"))"
}

echo "cni: ADD+DEL through libcni (tests/cni-driver loop), $((per * rounds)) cycles per chain in $rounds interleaved rounds; median;" \
	"each DEL after a random 0-$((pause_us / 1000)) ms pause, not timed"
compare "one macvlan, IPAM and policy routing:" rdmak ref 1 "" "$RK_WHY" "$CFLOOR"
cfloor_line 1
# the same two back to back, as the bench ran before the pause: each DEL at its plugin's own
# point of the kernel's RCU cadence (the difference to the line above is that lock, not work)
if [ -n "$CFLOOR" ] && [ -z "$RK_WHY" ] && [ -n "$PAUSE" ] && [ -s "$TMP/series-cfloor-1" ]; then
	for ((r = 0; r < rounds; r++)); do
		PAUSE= TAG=-b2b loop rdmak 1 "$r" && PAUSE= TAG=-b2b loop cfloor 1 "$r" || break
	done
	if [ -s "$TMP/series-cfloor-1-b2b" ]; then
		echo "    back to back, no pause: rdmak-cni + rdmak-ipam $(med rdmak 1-b2b 3) ms (ADD $(med rdmak 1-b2b 1), DEL $(med rdmak 1-b2b 2))," \
			"exec'd C floor $(med cfloor 1-b2b 3) ms (ADD $(med cfloor 1-b2b 1), DEL $(med cfloor 1-b2b 2)): $(ratio "$(med rdmak 1-b2b 3)" "$(med cfloor 1-b2b 3)")"
	fi
fi
# the kernel floor in the same namespaces, rounds after the chains' (same machine minutes)
FLOOR="$BUILD/tests/helpers/nl_floor"
if [ -z "$RK_WHY" ] && [ -x "$FLOOR" ] && [ -s "$TMP/series-rdmak-1" ]; then
	for ((r = 0; r < rounds; r++)); do
		ip netns exec "$HOST_NS" "$FLOOR" rdma0 "$POD" "$per" "$pause_us" >"$TMP/floor.out" || break
		"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["add"]["median_ms"], d["del"]["median_ms"], d["cycle"]["median_ms"])' \
			"$TMP/floor.out" >>"$TMP/series-floor-1"
	done
	if [ -s "$TMP/series-floor-1" ]; then
		printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)\n' "kernel floor (nl_floor)" "$(med floor 1 3)" "$(med floor 1 1)" "$(med floor 1 2)"
		echo "    rdmak-cni + rdmak-ipam / kernel floor: $(ratio "$(med rdmak 1 3)" "$(med floor 1 3)") (goal <= 2)"
		kr=$(ratio "$(med floor 1 3)" "$(med ref 1 3)")
		echo "    kernel floor / reference: $kr (no plugin exec'd for ADD and DEL can take less$("$PY" -c 'import sys; print("; issue 7'"'"'s 0.15 of the reference is below it here" if float(sys.argv[1]) > 0.15 else "")' "$kr"))"
	fi
fi
# What exec'ing any plugin costs through the same driver: a static no-op plugin (reads its
# config, answers ADD with an empty result, exits), so that rdmak's cost beyond the kernel floor
# splits into the runtime's exec of a plugin and rdmak's own start and work.
mkdir -p "$TMP/noopbin"
cat >"$TMP/noop.c" <<-'EOF'
	#include <stdio.h>
	#include <stdlib.h>
	#include <string.h>
	#include <unistd.h>
	int main(void)
	{
		char b[65536];
		const char *c = getenv("CNI_COMMAND");
		while (read(0, b, sizeof(b)) > 0)
			;
		if (c && !strcmp(c, "ADD"))
			fputs("{\"cniVersion\":\"1.0.0\",\"interfaces\":[],\"ips\":[]}\n", stdout);
		return 0;
	}
	EOF
if [ -z "$RK_WHY" ] && [ -s "$TMP/series-floor-1" ] && ${CC:-cc} -O2 -static -o "$TMP/noopbin/noop" "$TMP/noop.c" 2>/dev/null; then
	CNI_PATH_TEST="$TMP/noopbin:$CNI_PATH_TEST"
	for ((r = 0; r < rounds; r++)); do loop noop 1 "$r" || break; done
	if [ -s "$TMP/series-noop-1" ]; then
		printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)\n' "exec'd no-op static plugin" "$(med noop 1 3)" "$(med noop 1 1)" "$(med noop 1 2)"
		"$PY" - "$(med rdmak 1 3)" "$(med floor 1 3)" "$(med noop 1 3)" "$(med ref 1 3)" <<-'EOF'
		import sys
		mine, floor, noop, ref = map(float, sys.argv[1:])
		print("    beyond the kernel floor: %.2f ms per ADD+DEL = %.2f ms the driver's two execs of a no-op"
		      " + %.2f ms rdmak's own start and work" % (mine - floor, noop, mine - floor - noop))
		print("    sum of the parts (kernel floor + no-op execs, measured apart): %.2f ms = %.3f of the reference;"
		      " rdmak-cni + rdmak-ipam / sum: %.3f" % (floor + noop, (floor + noop) / ref, mine / (floor + noop)))
		EOF
	fi
fi
compare "eight macvlans in one pod (seed 004's rails), per pod:" rdmak ref 8 "" "$RK_WHY" "$CFLOOR"
cfloor_line 8
# the kernel's share of eight rails: nl_floor with the eight masters, one pod's ADD and DEL of all
# of them; with the no-op's execs, eight per command (one plugin per network), the exec'd floor
if [ -z "$RK_WHY" ] && [ -x "$FLOOR" ] && [ -s "$TMP/series-rdmak-8" ]; then
	for ((r = 0; r < rounds; r++)); do
		ip netns exec "$HOST_NS" "$FLOOR" rdma0,rdma1,rdma2,rdma3,rdma4,rdma5,rdma6,rdma7 "$POD" "$per" "$pause_us" >"$TMP/floor.out" || break
		"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["add"]["median_ms"], d["del"]["median_ms"], d["cycle"]["median_ms"])' \
			"$TMP/floor.out" >>"$TMP/series-floor-8"
	done
	if [ -s "$TMP/series-floor-8" ]; then
		printf '    %-30s %8s ms per ADD+DEL (ADD %s, DEL %s)\n' "kernel floor (nl_floor, 8 rails)" "$(med floor 8 3)" "$(med floor 8 1)" "$(med floor 8 2)"
		if [ -s "$TMP/series-noop-1" ]; then
			"$PY" - "$(med rdmak 8 3)" "$(med floor 8 3)" "$(med noop 1 3)" "$(med rdmak 8 2)" "$(med floor 8 2)" "$(med noop 1 2)" <<-'EOF'
			import sys
			mine, floor, noop, mine_del, floor_del, noop_del = map(float, sys.argv[1:])
			print("    DEL: %.2f ms, of which the kernel floor's %.2f ms and eight no-op execs' %.2f ms; rdmak's own %.2f ms"
			      % (mine_del, floor_del, 8 * noop_del, mine_del - floor_del - 8 * noop_del))
			print("    sum of the parts (kernel floor + eight no-op execs per command, measured apart): %.2f ms;"
			      " rdmak-cni + rdmak-ipam / sum: %.3f" % (floor + 8 * noop, mine / (floor + 8 * noop)))
			EOF
		fi
	fi
fi
compare "IPAM alone, one address (no link, no netns work):" ipam-rk ipam-hl 1 "" "$IPAM_WHY"
