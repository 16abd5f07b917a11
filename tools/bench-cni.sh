#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: rdmak-cni + rdmak-ipam against the reference chain, both driven by the same libcni
# driver (tests/cni-driver loop: N x ADD then DEL, each cycle timed) in the same namespaces in the
# same run, rounds interleaved so that both see the same machine:
#   - one macvlan with IPAM and policy routing: rdmak-cni + rdmak-ipam vs macvlan + host-local + sbr
#     (issue 7: target <= 1/5 of the reference's time);
#   - eight macvlans in one pod (seed 004's rails), the same two chains;
#   - the IPAM alone, rdmak-ipam's file store vs host-local, each run as the network's only plugin
#     (an IPAM plugin reads the "ipam" object of the config it is given), so no netns work counts.
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
		esac
		printf -- '--conf %s --ifname net%d ' "$f" $((k + 1))
	done
}

# loop CHAIN N ROUND: one round of the driver's loop; appends "add del cycle" medians (ms)
loop() {
	local chain=$1 n=$2 r=$3 args
	args=$(confs "$chain" "$n")
	# shellcheck disable=SC2086
	ip netns exec "$HOST_NS" "$DRIVER" loop --count "$per" $args --netns "$POD" --id "b-$chain-$n-$r" \
		--cni-path "$CNI_PATH_TEST" --cache-dir "$TMP/cache" 2>"$TMP/loop.err" >"$TMP/loop.out" || {
		echo "bench-cni: $chain x$n failed: $(cat "$TMP/loop.out") $(head -c 400 "$TMP/loop.err")" >&2
		return 1
	}
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["add"]["median_ms"], d["del"]["median_ms"], d["cycle"]["median_ms"])' \
		"$TMP/loop.out" >>"$TMP/series-$chain-$n"
}

# med CHAIN N COL: median over the rounds of column COL (1 add, 2 del, 3 cycle)
med() {
	"$PY" -c 'import statistics,sys; print("%.2f" % statistics.median(float(l.split()[int(sys.argv[2])-1]) for l in open(sys.argv[1])))' \
		"$TMP/series-$1-$2" "$3"
}

# compare LABEL RDMAK-CHAIN REF-CHAIN N TARGET WHY-NOT (empty: rdmak's plugins are there)
compare() {
	local label=$1 mine=$2 ref=$3 n=$4 target=$5 RK_WHY=$6 r
	for ((r = 0; r < rounds; r++)); do
		loop "$ref" "$n" "$r" || return 0
		[ -n "$RK_WHY" ] || loop "$mine" "$n" "$r" || return 0
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
	esac
}

echo "cni: ADD+DEL through libcni (tests/cni-driver loop), $((per * rounds)) cycles per chain in $rounds interleaved rounds; median"
compare "one macvlan, IPAM and policy routing:" rdmak ref 1 " (target <= 0.2)" "$RK_WHY"
compare "eight macvlans in one pod (seed 004's rails), per pod:" rdmak ref 8 "" "$RK_WHY"
compare "IPAM alone, one address (no link, no netns work):" ipam-rk ipam-hl 1 "" "$IPAM_WHY"
