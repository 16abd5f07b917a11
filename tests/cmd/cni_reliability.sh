#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reliability of rdmak-cni + rdmak-ipam (issue 7 section 5), through libcni (tests/cni-driver):
#   1. $CNI_CYCLES ADD/DEL cycles (2 000 in make check, the 10 000 of issue 7 in make soak; macvlan,
#      rdmak-ipam file store, policy routing) leave nothing behind:
#      links, addresses, rules, routes of every table and per-interface sysctls in the host and
#      the pod netns, files in the IPAM store, the plugin's state and libcni's cache, all counted.
#      These run against the NON-sanitized build (make check builds it first and passes its
#      directory as PLAIN_BUILD): exec'd under ASan, each cycle pays the sanitizer start-up of
#      two processes twice (~30 ms each here), which would put 10 000 cycles past half an hour.
#      The sanitized build runs the same loop, shorter ($SAN_CYCLES, with CHECK), so that a
#      memory error in any step of a cycle still fails the suite.
#   2. kill -9 at a uniformly random instant of 200 ADDs (the driver SIGKILLs the plugin's
#      process group, IPAM included), each followed by DEL; then killed ADDs whose pods are gone,
#      cleaned by GC alone: both leave a clean host. The reference chain (macvlan + host-local +
#      sbr) takes the same kills; what it leaves is printed for comparison, not asserted.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni.sh"

CYCLES=${CNI_CYCLES:-2000}
SAN_CYCLES=${CNI_SAN_CYCLES:-200}
KILLS=${CNI_KILLS:-200}
PLAIN=${PLAIN_BUILD:-$TOP/build}
why=$(cni_requirements)
[ -n "$why" ] || why=$(cni_rdmak_ready)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni reliability"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
STORE="$TMP/store-rk"
STATE_DIRS=("$STORE" "$TMP/state-cni" "$TMP/cache")

conf_rdmak "$TMP/rk.conf" 0 "$(ipam_json rdmak-ipam 0 4)"
conf_ref "$TMP/ref.conf" 0 "$(ipam_json host-local 0 4)"

# snapshot TAG: host and pod netns, and every state file
snapshot() {
	netstate "$HOST_NS" >"$TMP/$1.host"
	netstate "$POD" >"$TMP/$1.pod"
	files_under "${STATE_DIRS[@]}" "$TMP/store-hl" >"$TMP/$1.files"
}

# leaked BEFORE AFTER: "links=.. addrs=.. rules=.. routes=.. sysctls=.. files=.." host and pod together
leaked() {
	"$PY" - "$TMP/$1" "$TMP/$2" <<-'EOF'
	import sys
	b, a = sys.argv[1], sys.argv[2]
	def new(ext):
	    old = set(open(b + ext).read().split("\n"))
	    return [l for l in open(a + ext).read().split("\n") if l and l not in old]
	lines = new(".host") + new(".pod")
	kinds = {"links": "link ", "addrs": "addr ", "rules": "rule", "routes": "route", "sysctls": "sysctl "}
	out = [f"{k}={sum(1 for l in lines if l.startswith(p))}" for k, p in kinds.items()]
	files = new(".files")
	print(" ".join(out + [f"files={len(files)}"]))
	for l in (lines + files)[:10]:
	    print("#   " + l)
	EOF
}
CLEAN="links=0 addrs=0 rules=0 routes=0 sysctls=0 files=0"
# clean_since TAG DESC: nothing new since the "before" snapshot (the leftovers listed if any)
clean_since() {
	local got
	got=$(leaked before "$1")
	is "$(echo "$got" | sed -n 1p)" "$CLEAN" "$2"
	echo "$got" | sed -n '2,$p'
}

# loop_cycles BUILD N [--with-check]: the driver's loop with BUILD's plugins first on CNI_PATH
loop_cycles() {
	local build=$1 n=$2; shift 2
	run ip netns exec "$HOST_NS" "$DRIVER" loop --count "$n" --conf "$TMP/rk.conf" --ifname net1 \
		--netns "$POD" --id "cyc-$(basename "$build")" --cni-path "$build/cni:$REFDIR" --cache-dir "$TMP/cache" "$@"
}

# --- 1. cycles --------------------------------------------------------------------------------
snapshot before
loop_cycles "$BUILD" "$SAN_CYCLES" --with-check
is "$rc" 0 "$SAN_CYCLES ADD/CHECK/DEL cycles with the sanitized build"
[ "$rc" -eq 0 ] || printf '#   %s\n' "$out" "$(printf '%s' "$err" | tail -5)"
snapshot san
clean_since san "they leave no link, address, rule, route, sysctl or file"

if [ ! -x "$PLAIN/cni/rdmak-cni" ] || [ "$PLAIN/rdmak" = "$RDMAK" ]; then
	skip "no non-sanitized build in $PLAIN (make check builds it; or set PLAIN_BUILD)" "$CYCLES cycles"
else
	# $PAR pods cycling at once (a node's kubelet sets pods up concurrently; and two cores)
	PAR=${CNI_PAR:-2}
	pods=()
	for ((j = 0; j < PAR; j++)); do pods+=("$(cni_pod "cyc$j")"); done
	netstate "${pods[0]}" >"$TMP/cycpod.before"
	t0=$(date +%s)
	for ((j = 0; j < PAR; j++)); do
		ip netns exec "$HOST_NS" "$DRIVER" loop --count $((CYCLES / PAR)) --conf "$TMP/rk.conf" --ifname net1 \
			--netns "${pods[j]}" --id "cyc$j" --cni-path "$PLAIN/cni:$REFDIR" --cache-dir "$TMP/cache" \
			>"$TMP/cyc$j.out" 2>"$TMP/cyc$j.err" &
	done
	fails=0
	for ((j = 0; j < PAR; j++)); do wait -n || fails=$((fails + 1)); done
	is "$fails" 0 "$CYCLES ADD/DEL cycles, $PAR pods at a time (non-sanitized build)"
	for ((j = 0; j < PAR; j++)); do
		echo "# pod $j: $(cat "$TMP/cyc$j.out")"
		[ "$fails" -eq 0 ] || tail -3 "$TMP/cyc$j.err" | sed 's/^/#   /'
	done
	echo "# $CYCLES cycles took $(($(date +%s) - t0)) s"
	snapshot plain
	leaked before plain | sed -n '2,$p'
	counts="host+files: $(leaked before plain | sed -n 1p)" want="host+files: $CLEAN"
	for ((j = 0; j < PAR; j++)); do
		netstate "${pods[j]}" >"$TMP/cycpod$j.after"
		leaks "$TMP/cycpod.before" "$TMP/cycpod$j.after" | sed -n '2,$p'
		counts+="; pod$j: $(leaks "$TMP/cycpod.before" "$TMP/cycpod$j.after" | sed -n 1p)"
		want+="; pod$j: ${CLEAN% files=0}"
	done
	echo "# after $CYCLES cycles, leaked: $counts"
	is "$counts" "$want" "$CYCLES cycles leak nothing (host, pods, IPAM store, plugin state, libcni cache)"
fi

# --- 2. kill -9 -------------------------------------------------------------------------------
# kills CONF BUILD N TAG: N ADDs killed at a random instant in [0, 1.5 x the median ADD], each
# followed by a plain DEL; sets killed, completed, delfail
kills() {
	local conf=$1 build=$2 n=$3 tag=$4 i max
	killed=0 completed=0 delfail=0
	run ip netns exec "$HOST_NS" "$DRIVER" loop --count 10 --conf "$conf" --ifname net1 --netns "$POD" \
		--id "probe-$tag" --cni-path "$build/cni:$REFDIR" --cache-dir "$TMP/cache"
	max=$("$PY" -c 'import json,sys; print(int(json.loads(sys.argv[1])["add"]["median_ms"] * 1500))' "$out")
	for ((i = 0; i < n; i++)); do
		run ip netns exec "$HOST_NS" "$DRIVER" add --conf "$conf" --ifname net1 --netns "$POD" --id "k-$tag-$i" \
			--cni-path "$build/cni:$REFDIR" --cache-dir "$TMP/cache" --kill-random-us "$max" --seed "$i"
		case $rc in 3) killed=$((killed + 1)) ;; 0) completed=$((completed + 1)) ;; *) echo "#   ADD $i failed: $out" ;; esac
		run ip netns exec "$HOST_NS" "$DRIVER" del --conf "$conf" --ifname net1 --netns "$POD" --id "k-$tag-$i" \
			--cni-path "$build/cni:$REFDIR" --cache-dir "$TMP/cache"
		[ "$rc" -eq 0 ] || { delfail=$((delfail + 1)); [ "$delfail" -gt 3 ] || echo "#   DEL after kill $i: $out"; }
	done
}

kills "$TMP/rk.conf" "$PLAIN" "$KILLS" rk
echo "# rdmak: $KILLS ADDs, $killed killed at a random instant, $completed completed first"
[ "$killed" -ge $((KILLS / 4)) ]
ok $? "a good share of the ADDs ($killed of $KILLS) is killed part way, so the kills land inside the plugins"
is "$delfail" 0 "DEL after every killed ADD succeeds"
snapshot kill
# rdmak-ipam's file store replaces a record by a link under a ".tmp." name renamed over it; a
# writer killed in between leaves that name, which its GC tidies once it is 600 s old (younger,
# it may belong to a live writer: docs/ipam.md). So: nothing else may be left, and those go
# with the first GC after 600 s, which the test stands in for by ageing them.
tmpnames=$(grep -c '/\.tmp\.' "$TMP/kill.files")
echo "# after $KILLS killed ADDs and their DELs: $tmpnames temporary names of killed writers in the store"
{ grep -v '/\.tmp\.' "$TMP/kill.files" || true; } >"$TMP/kill.files.x"
mv "$TMP/kill.files.x" "$TMP/kill.files"
clean_since kill "$KILLS killed ADDs, each then DEL: clean host and pod, no reservation or record left"
find "$STORE" -name '.tmp.*' -exec touch -h -d '-11 minutes' {} +
run ip netns exec "$HOST_NS" "$DRIVER" gc --conf "$TMP/rk.conf" --cni-path "$PLAIN/cni:$REFDIR"
is "$rc" 0 "GC (no attachment left) exits 0"
snapshot killgc
clean_since killgc "and the first GC after 600 s removes the killed writers' temporary names: nothing at all left"

# killed ADDs whose pod netns is gone by the time anyone cleans up: GC with no valid attachment
gcpod=$(cni_pod gcpod)
for ((i = 0; i < 50; i++)); do
	run ip netns exec "$HOST_NS" "$DRIVER" add --conf "$TMP/rk.conf" --ifname net1 --netns "$gcpod" --id "g-$i" \
		--cni-path "$PLAIN/cni:$REFDIR" --cache-dir "$TMP/cache" --kill-random-us 20000 --seed "$((1000 + i))"
	ip netns del "${gcpod#/run/netns/}" && gcpod=$(cni_pod "gcpod$i")
done
rm -rf "$TMP/cache" # the runtime forgot them too: only GC is left
run ip netns exec "$HOST_NS" "$DRIVER" gc --conf "$TMP/rk.conf" --cni-path "$PLAIN/cni:$REFDIR"
is "$rc" 0 "GC with no valid attachment exits 0"
find "$STORE" -name '.tmp.*' -exec touch -h -d '-11 minutes' {} +
run ip netns exec "$HOST_NS" "$DRIVER" gc --conf "$TMP/rk.conf" --cni-path "$PLAIN/cni:$REFDIR"
snapshot gc
clean_since gc "GC alone (run again 600 s later for temporary names) cleans up after 50 killed ADDs whose pods are gone"

# the reference chain under the same kills, for comparison (not asserted)
kills "$TMP/ref.conf" "$PLAIN" 50 ref
snapshot refkill
echo "# reference chain: 50 ADDs, $killed killed, $completed completed, $delfail DELs failed; left: $(leaked kill refkill | sed -n 1p)"

done_testing
