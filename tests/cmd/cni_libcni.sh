#!/usr/bin/env bash
# rdmak-cni and rdmak-ipam driven through libcni (tests/cni-driver, the library Multus and
# containerd use) beside Debian's reference plugins (containernetworking-plugins 1.1.1: macvlan,
# host-local, sbr, static, host-device), in the same throwaway namespaces (tests/lib-cni.sh):
# results, links, addresses, routes of every table, rules; one and eight interfaces; IPv4, IPv6
# and dual stack; a real ping from each pod address to its rail's gateway; rdmak-ipam under the
# reference macvlan; a failing IPAM; DEL twice; DEL without a netns; hostdev; GC and STATUS.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni.sh"

why=$(cni_requirements)
if [ -n "$why" ]; then
	skip "$why" "CNI plugins through libcni"
	done_testing
	exit
fi
cni_topology 8
RK_WHY=$(cni_rdmak_ready)

# attach_args CHAIN IPAM FAM N: writes rail 0..N-1's configs, prints --conf/--ifname pairs
# (net1..netN: a pod's networks in the order Multus adds them)
attach_args() {
	local chain=$1 ipam=$2 fam=$3 n=$4 k f
	for ((k = 0; k < n; k++)); do
		f="$TMP/$chain-$ipam-$fam-$k.conf"
		case $chain in
		ref) conf_ref "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" ;;
		ref-nosbr) conf_ref "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" nosbr ;;
		rdmak) conf_rdmak "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" ;;
		esac
		printf -- '--conf %s --ifname net%d ' "$f" $((k + 1))
	done
}

# ping_rails POD FAM N: every pod address reaches its own rail's gateway, from that address
# (so through the policy routing rule when there is one). ping -w waits for DAD, no fixed sleep.
ping_rails() {
	local pod=${1#/run/netns/} fam=$2 n=$3 k bad=0
	for ((k = 0; k < n; k++)); do
		if [ "$fam" != 6 ]; then
			ip netns exec "$pod" ping -q -c1 -w5 -I "172.16.$((11 + k)).10" "172.16.$((11 + k)).254" >/dev/null 2>&1 || bad=$((bad + 1))
		fi
		if [ "$fam" != 4 ]; then
			ip netns exec "$pod" ping -q -6 -c1 -w5 -I "fd00:$((11 + k))::10" "fd00:$((11 + k))::fe" >/dev/null 2>&1 || bad=$((bad + 1))
		fi
	done
	echo "$bad"
}

# expected_ips FAM N: the addresses every chain must hand out, in result order
expected_ips() {
	local fam=$1 n=$2 k
	for ((k = 0; k < n; k++)); do
		[ "$fam" != 6 ] && echo "net$((k + 1)) 172.16.$((11 + k)).10/24 172.16.$((11 + k)).254"
		[ "$fam" != 4 ] && echo "net$((k + 1)) fd00:$((11 + k))::10/64 fd00:$((11 + k))::fe"
	done
}

# result_ips FILE: "ifname address gateway" for each ip of a result (or of an array of results)
result_ips() {
	"$PY" - "$1" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	for r in d if isinstance(d, list) else [d]:
	    for ip in r.get("ips", []):
	        print(r["interfaces"][ip["interface"]]["name"], ip["address"], ip.get("gateway", "-"))
	EOF
}

# scenario CHAIN IPAM FAM N POD: ADD, result, ping, CHECK, state (kept in $TMP/state-...), DEL, leaks
scenario() {
	local chain=$1 ipam=$2 fam=$3 n=$4 pod=$5 tag="$1+$2 IPv$3 x$4" id="c-$1-$2-$3-$4"
	local args
	args=$(attach_args "$chain" "$ipam" "$fam" "$n")
	netstate "$pod" >"$TMP/before"
	# shellcheck disable=SC2086
	drv add $args --netns "$pod" --id "$id"
	is "$rc" 0 "$tag: ADD through libcni"
	[ "$rc" -eq 0 ] || printf '#   %s\n' "$out" "$err" | head -20
	printf '%s' "$out" >"$TMP/result-$chain-$ipam-$fam-$n.json"
	is "$(reservations "$ipam")" "$(expected_ips "$fam" "$n" | wc -l)" "$tag: one reservation per address in the IPAM store"
	is "$(result_ips "$TMP/result-$chain-$ipam-$fam-$n.json" 2>/dev/null)" "$(expected_ips "$fam" "$n")" "$tag: result's addresses and gateways"
	is "$(ping_rails "$pod" "$fam" "$n")" 0 "$tag: each pod address reaches its rail's gateway"
	netstate "$pod" --no-mac --no-linklocal --tables >"$TMP/state-$chain-$ipam-$fam-$n"
	# shellcheck disable=SC2086
	drv check $args --netns "$pod" --id "$id"
	check_rc=$rc check_out=$out
	# shellcheck disable=SC2086
	drv del $args --netns "$pod" --id "$id"
	is "$rc" 0 "$tag: DEL"
	netstate "$pod" >"$TMP/after"
	is "$(leaks "$TMP/before" "$TMP/after" | head -1)" "links=0 addrs=0 rules=0 routes=0 sysctls=0" "$tag: DEL leaves the pod as it was"
	netstate "$HOST_NS" >"$TMP/host-now"
	is "$(leaks "$TMP/host-before" "$TMP/host-now" | head -1)" "links=0 addrs=0 rules=0 routes=0 sysctls=0" "$tag: and the host"
	is "$(reservations "$ipam")" 0 "$tag: the IPAM store holds no reservation"
	rm -rf "$TMP/store-hl" "$TMP/store-rk" # the next scenario starts from .10 again
}

# reservations IPAM: how many addresses the store holds (host-local: one file per address,
# its "lock" and "last_reserved_ip.N" are not reservations)
reservations() {
	case $1 in
	host-local) files_under "$TMP/store-hl" | grep -cE '/[0-9a-f.:]+$' ;;
	*) echo "? (no reader for $1)" ;;
	esac
}

netstate "$HOST_NS" >"$TMP/host-before"

# --- the driver itself ---------------------------------------------------------------------
run "$DRIVER" version --type macvlan --cni-path "$REFDIR"
like "$out" '"1.0.0"' "driver: VERSION of the reference macvlan through libcni"
run "$DRIVER" add --conf /nonexistent --ifname net1 --netns x --id c --cache-dir "$TMP/cache"
is "$rc" 2 "driver: a missing config is a usage error (exit 2)"
run "$DRIVER" add --conf "$TOP/tests/lib-cni.sh" --ifname net1 --netns x --id c
is "$rc" 2 "driver: no --cache-dir is refused (libcni's default is the host's /var/lib/cni)"

# --- the reference chain: macvlan + host-local + sbr ---------------------------------------
POD=$(cni_pod pod1)
for fam in 4 6 46; do
	scenario ref host-local "$fam" 1 "$POD"
	# sbr moves the connected route out of main (macvlan's CHECK then misses it; rdmak's does not)
	[ "$check_rc" -eq 0 ] || echo "# reference CHECK (IPv$fam): $check_out"
done
scenario ref host-local 4 8 "$POD"
is "$(grep -c '^rule4 P from 172.16.1[1-8].10 lookup T(net[1-8])$' "$TMP/state-ref-host-local-4-8")" 8 \
	"reference x8: one from-address rule per rail, each to the table of its own interface"

# --- rdmak-cni + rdmak-ipam, in the same pod namespace ----------------------------------------
if [ -n "$RK_WHY" ]; then
	skip "$RK_WHY" "rdmak-cni through libcni"
else
	for fam in 4 6 46; do
		scenario rdmak rdmak-ipam "$fam" 1 "$POD"
		is "$check_rc" 0 "rdmak IPv$fam: CHECK passes on a fresh attachment"
	done
	scenario rdmak rdmak-ipam 4 8 "$POD"
	is "$(grep -c '^rule4 P from 172.16.1[1-8].10 lookup T(net[1-8])$' "$TMP/state-rdmak-rdmak-ipam-4-8")" 8 \
		"rdmak x8: one from-address rule per rail, each to the table of its own interface"
fi

done_testing
