#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni and rdmak-ipam driven through libcni (tests/cni-driver, the library Multus and
# containerd use) beside Debian's reference plugins (containernetworking-plugins 1.1.1: macvlan,
# host-local, sbr, static, host-device), in the same throwaway namespaces (tests/lib-cni.sh):
# results, links, addresses, routes of every table, rules; one and eight interfaces; IPv4, IPv6
# and dual stack; a real ping from each pod address to its rail's gateway; rdmak-ipam under the
# reference macvlan; a failing IPAM; DEL twice; DEL without a netns; hostdev; GC and STATUS.
# What rdmak must do is asserted; where the reference plugins behave differently (sbr, macvlan's
# CHECK, host-device's DEL) their outcome is printed beside it as a "# reference:" line.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni.sh"

why=$(cni_requirements)
if [ -n "$why" ]; then
	skip "$why" "CNI plugins through libcni"
	done_testing
	exit
fi
cni_topology 8
cni_vfs 2
RK_WHY=$(cni_rdmak_ready)
CHAINS=(ref)
[ -n "$RK_WHY" ] || CHAINS+=(rdmak)

# attach_args CHAIN IPAM FAM N [RAIL0]: writes rails RAIL0..RAIL0+N-1's configs, prints
# --conf/--ifname pairs (net1..netN: a pod's networks in the order Multus adds them).
# Chains: ref (macvlan + IPAM + sbr), ref-nosbr, rdmak (rdmak-cni macvlan), ref-hd (host-device),
# rdmak-hd (rdmak-cni hostdev by name); hostdev rails are the vf10.. stand-ins.
attach_args() {
	local chain=$1 ipam=$2 fam=$3 n=$4 k0=${5:-0} k f
	for ((k = k0; k < k0 + n; k++)); do
		f="$TMP/$chain-$ipam-$fam-$k.conf"
		case $chain in
		ref) conf_ref "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" ;;
		ref-nosbr) conf_ref "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" nosbr ;;
		rdmak) conf_rdmak "$f" "$k" "$(ipam_json "$ipam" "$k" "$fam")" ;;
		ref-hd) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"vf$k\",\"type\":\"host-device\",\"device\":\"vf$k\",\"ipam\":$(ipam_json "$ipam" "$k" "$fam")}" >"$f" ;;
		rdmak-hd) echo "{\"cniVersion\":\"1.0.0\",\"name\":\"vf$k\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"device\":\"vf$k\",\"stateDir\":\"$TMP/state-cni\",\"ipam\":$(ipam_json "$ipam" "$k" "$fam")}" >"$f" ;;
		esac
		printf -- '--conf %s --ifname net%d ' "$f" $((k - k0 + 1))
	done
}

# ping_rails POD FAM N [RAIL0]: every pod address reaches its own rail's gateway, from that
# address (so through the policy routing rule when there is one); ping -w waits out DAD.
ping_rails() {
	local pod=${1#/run/netns/} fam=$2 n=$3 k0=${4:-0} k bad=0 host
	for ((k = k0; k < k0 + n; k++)); do
		host=10
		[ "$IPAM_KIND" = static ] && host=50
		if [ "$fam" != 6 ]; then
			ip netns exec "$pod" ping -q -c1 -w5 -I "172.16.$((11 + k)).$host" "172.16.$((11 + k)).254" >/dev/null 2>&1 || bad=$((bad + 1))
		fi
		if [ "$fam" != 4 ]; then
			ip netns exec "$pod" ping -q -6 -c1 -w5 -I "fd00:$((11 + k))::$host" "fd00:$((11 + k))::fe" >/dev/null 2>&1 || bad=$((bad + 1))
		fi
	done
	echo "$bad"
}

# expected_ips FAM N [RAIL0]: "ifname address gateway" every chain must hand out, in result order
expected_ips() {
	local fam=$1 n=$2 k0=${3:-0} k host=10
	[ "$IPAM_KIND" = static ] && host=50
	for ((k = k0; k < k0 + n; k++)); do
		[ "$fam" != 6 ] && echo "net$((k - k0 + 1)) 172.16.$((11 + k)).$host/24 172.16.$((11 + k)).254"
		[ "$fam" != 4 ] && echo "net$((k - k0 + 1)) fd00:$((11 + k))::$host/64 fd00:$((11 + k))::fe"
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

# rdmak_reservations CONF...: addresses rdmak-ipam holds for these networks, as its operator CLI
# reads them (`rdmak ipam list --json`); a conflist is reduced to its plugin with the ipam object
rdmak_reservations() {
	local f n=0 u
	for f in "$@"; do
		"$PY" - "$f" "$TMP/ipam-only.conf" <<-'EOF'
		import json, sys
		d = json.load(open(sys.argv[1]))
		for p in d.get("plugins", [d]):
		    if "ipam" in p:
		        json.dump(dict(p, name=d["name"], cniVersion=d["cniVersion"]), open(sys.argv[2], "w"))
		EOF
		u=$("$RDMAK" ipam list --config "$TMP/ipam-only.conf" --json 2>"$TMP/ipam-list.err" |
			"$PY" -c 'import json,sys; print(sum(r["used"] for r in json.load(sys.stdin)["ranges"]))') ||
			{ echo "? ($(head -c 200 "$TMP/ipam-list.err"))"; return; }
		n=$((n + u))
	done
	echo "$n"
}

# reservations IPAM CONF...: how many addresses the store holds (host-local: one file per address,
# its "lock" and "last_reserved_ip.N" are not reservations)
reservations() {
	local ipam=$1; shift
	case $ipam in
	host-local) files_under "$TMP/store-hl" | grep -cE '/[0-9a-f.:]+$' ;;
	rdmak-ipam) rdmak_reservations "$@" ;;
	static) echo 0 ;;
	esac
}

# jget_out KEY: a top-level key of the JSON in $out
jget_out() {
	printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$1" 2>/dev/null
}

CLEAN="links=0 addrs=0 rules=0 routes=0 sysctls=0"
# scenario CHAIN IPAM FAM N POD [RAIL0]: ADD, result, reservations, ping, CHECK (in $check_rc),
# state (kept in $TMP/state-CHAIN-IPAM-FAM-N), DEL, nothing left in pod, host or store
scenario() {
	local chain=$1 ipam=$2 fam=$3 n=$4 pod=$5 k0=${6:-0} tag="$1+$2 IPv$3 x$4" id="c-$1-$2-$3-$4" args
	IPAM_KIND=$ipam
	args=$(attach_args "$chain" "$ipam" "$fam" "$n" "$k0")
	local confs
	confs=$(printf '%s\n' $args | sed -n '/^--conf$/{n;p}')
	netstate "$pod" >"$TMP/before"
	netstate "$HOST_NS" >"$TMP/host-before"
	# shellcheck disable=SC2086
	drv add $args --netns "$pod" --id "$id"
	is "$rc" 0 "$tag: ADD through libcni"
	[ "$rc" -eq 0 ] || printf '#   %s\n' "$out" "$err" | head -20
	printf '%s' "$out" >"$TMP/result-$chain-$ipam-$fam-$n.json"
	is "$(result_ips "$TMP/result-$chain-$ipam-$fam-$n.json" 2>/dev/null)" "$(expected_ips "$fam" "$n" "$k0")" "$tag: result's addresses and gateways"
	# shellcheck disable=SC2086
	is "$(reservations "$ipam" $confs)" "$( [ "$ipam" = static ] && echo 0 || expected_ips "$fam" "$n" | wc -l)" "$tag: one reservation per address in the IPAM store"
	is "$(ping_rails "$pod" "$fam" "$n" "$k0")" 0 "$tag: each pod address reaches its rail's gateway"
	netstate "$pod" --no-mac --no-linklocal --tables >"$TMP/state-$chain-$ipam-$fam-$n"
	# shellcheck disable=SC2086
	drv check $args --netns "$pod" --id "$id"
	check_rc=$rc check_out=$out
	# shellcheck disable=SC2086
	drv del $args --netns "$pod" --id "$id"
	is "$rc" 0 "$tag: DEL"
	netstate "$pod" >"$TMP/after"
	is "$(leaks "$TMP/before" "$TMP/after" | sed -n 1p)" "$CLEAN" "$tag: DEL leaves the pod as it was"
	netstate "$HOST_NS" >"$TMP/host-now"
	is "$(leaks "$TMP/host-before" "$TMP/host-now" | sed -n 1p)" "$CLEAN" "$tag: and the host"
	# shellcheck disable=SC2086
	is "$(reservations "$ipam" $confs)" 0 "$tag: the IPAM store holds no reservation"
	is "$(files_under "$TMP/state-cni" "$TMP/cache" | wc -l)" 0 "$tag: no state file left (plugin, libcni cache)"
	rm -rf "$TMP/store-hl" "$TMP/store-rk" # the next scenario starts from .10 again
}

# same_pod_state FAM N: rdmak's pod against the reference chain's, table numbers, rule
# priorities and routes' protocol aside (each chain numbers its own: sbr the first free table
# from 100, rdmak 100 + the interface's number), with the one difference by design: sbr moves
# each interface's connected route out of main into its table, rdmak keeps it in main too
# (seed 004's `ip r show table main`; docs/cni.md), so main still routes the subnet on-link.
same_pod_state() {
	local fam=$1 n=$2 f
	for f in ref rdmak; do
		# a route's protocol in the interface's table: sbr copies the kernel's, rdmak adds its own
		sed -E '/^route[46] table=T\(/s/ proto [a-z0-9]+$//' "$TMP/state-$f-$([ $f = ref ] && echo host-local || echo rdmak-ipam)-$fam-$n" |
			grep -vE '^route[46] table=main .* dev net[0-9]+ .*proto kernel$|^tablenum ' >"$TMP/cmp-$f"
	done
	same_file "$TMP/cmp-rdmak" "$TMP/cmp-ref" "IPv$fam x$n: rdmak's pod = the reference's (links, addresses, rules, tables), but for main"
	is "$(grep -cE '^route[46] table=main .* dev net[0-9]+ .*proto kernel$' "$TMP/state-rdmak-rdmak-ipam-$fam-$n")" \
		"$(expected_ips "$fam" "$n" | wc -l)" "IPv$fam x$n: rdmak keeps each interface's connected route in main"
}

# --- the driver itself ---------------------------------------------------------------------
run "$DRIVER" version --type macvlan --cni-path "$REFDIR"
like "$out" '"1.0.0"' "driver: VERSION of the reference macvlan through libcni"
for p in rdmak-cni rdmak-ipam; do
	# libcni's GetVersionInfo sets CNI_NETNS, CNI_IFNAME and CNI_PATH to "dummy"
	run "$DRIVER" version --type "$p" --cni-path "$BUILD/cni"
	like "$out" '"1.1.0"' "driver: VERSION of $p through libcni (CNI_NETNS=dummy)"
done
run "$DRIVER" add --conf /nonexistent --ifname net1 --netns x --id c --cache-dir "$TMP/cache"
is "$rc" 2 "driver: a missing config is a usage error (exit 2)"
run "$DRIVER" add --conf "$TOP/tests/lib-cni.sh" --ifname net1 --netns x --id c
is "$rc" 2 "driver: no --cache-dir is refused (libcni's default is the host's /var/lib/cni)"

# --- one and eight macvlans, IPv4, IPv6, dual stack: both chains in the same pod netns -------
POD=$(cni_pod pod1)
for chain in "${CHAINS[@]}"; do
	ipam=host-local
	[ "$chain" = rdmak ] && ipam=rdmak-ipam
	for fam in 4 6 46; do
		scenario "$chain" "$ipam" "$fam" 1 "$POD"
		if [ "$chain" = ref ]; then
			# sbr moved the connected route out of main; macvlan's CHECK then misses the gateway
			echo "# reference: CHECK right after ADD (IPv$fam): $([ "$check_rc" -eq 0 ] && echo passes || echo "fails: $check_out")"
		else
			is "$check_rc" 0 "rdmak IPv$fam: CHECK passes right after ADD"
		fi
	done
	scenario "$chain" "$ipam" 4 8 "$POD"
	is "$(grep -c '^rule4 P from 172.16.1[1-8].10 lookup T(net[1-8])$' "$TMP/state-$chain-$ipam-4-8")" 8 \
		"$chain x8: one from-address rule per rail, each to the table of its own interface"
done
if [ -n "$RK_WHY" ]; then
	skip "$RK_WHY" "rdmak-cni + rdmak-ipam beside the reference chain"
else
	for fam in 4 6 46; do same_pod_state "$fam" 1; done
	same_pod_state 4 8
fi

# --- rdmak-ipam under the reference macvlan (issue 8), host-local in the same place -----------
scenario ref-nosbr host-local 46 1 "$POD"
echo "# reference: macvlan + host-local CHECK right after ADD: $([ "$check_rc" -eq 0 ] && echo passes || echo "fails: $check_out")"
IPAM_WHY=$(cni_rdmak_ready rdmak-ipam)
if [ -n "$IPAM_WHY" ]; then
	skip "$IPAM_WHY" "rdmak-ipam under the reference macvlan"
else
	scenario ref-nosbr rdmak-ipam 46 1 "$POD"
	is "$check_rc" 0 "macvlan + rdmak-ipam: CHECK passes right after ADD"
	same_file "$TMP/state-ref-nosbr-rdmak-ipam-46-1" "$TMP/state-ref-nosbr-host-local-46-1" \
		"macvlan + rdmak-ipam leaves the pod exactly as macvlan + host-local does"
fi

# --- rdmak-cni with the reference IPAMs -----------------------------------------------------
if [ -z "$RK_WHY" ]; then
	scenario rdmak host-local 46 1 "$POD"
	scenario rdmak static 4 1 "$POD"
fi

# verdict CHAIN GOT WANT DESC: rdmak's outcome is asserted, the reference's printed beside it
verdict() {
	if [ "$1" = rdmak ]; then
		is "$2" "$3" "rdmak: $4"
	else
		echo "# reference: $4: $([ "$2" = "$3" ] && echo yes || echo "no (got: $2)")"
	fi
}

# --- a failing IPAM: the pool is full, or the IPAM plugin is missing ---------------------------
# The pod's side is compared without IPv6 link-local addresses and routes: the kernel adds
# net1's own (its local route once DAD ends, ~1 s after ADD) while the failed ADD runs.
for chain in "${CHAINS[@]}"; do
	ipam=host-local mainplugin=macvlan
	[ "$chain" = rdmak ] && ipam=rdmak-ipam mainplugin=rdmak-cni
	one="$TMP/$chain-full.conf"
	full_ipam=$(ipam_json "$ipam" 0 4 | sed 's/"rangeStart":"172.16.11.10"/&,"rangeEnd":"172.16.11.10"/')
	if [ "$chain" = rdmak ]; then conf_rdmak "$one" 0 "$full_ipam"; else conf_ref "$one" 0 "$full_ipam" nosbr; fi
	drv add --conf "$one" --ifname net1 --netns "$POD" --id full-1
	is "$rc" 0 "$chain: the one address of a one-address pool is handed out"
	netstate "$POD" --no-linklocal >"$TMP/before"
	netstate "$HOST_NS" >"$TMP/host-before"
	drv add --conf "$one" --ifname net2 --netns "$POD" --id full-2
	is "$rc" 1 "$chain: ADD on the full pool fails"
	echo "# $chain: full pool: $out"
	verdict "$chain" "$(leaks "$TMP/before" <(netstate "$POD" --no-linklocal) | sed -n 1p)" "$CLEAN" "a failed ADD (IPAM full) leaves nothing in the pod"
	verdict "$chain" "$(leaks "$TMP/host-before" <(netstate "$HOST_NS") | sed -n 1p)" "$CLEAN" "nor in the host"
	drv del --conf "$one" --ifname net2 --netns "$POD" --id full-2
	verdict "$chain" "$rc" 0 "DEL after the failed ADD succeeds (a runtime always sends it)"
	drv del --conf "$one" --ifname net1 --netns "$POD" --id full-1
	is "$rc" 0 "$chain: DEL of the first attachment"
	is "$(reservations "$ipam" "$one")" 0 "$chain: the pool is empty again"
	netstate "$POD" --no-linklocal >"$TMP/after"
	# a leftover of the failed ADD above would still be here
	verdict "$chain" "$(leaks "$TMP/before" "$TMP/after" | grep -c '^#   leaked: link')" 0 "no link left from the failed ADD after both DELs"
	ip -n "${POD#/run/netns/}" link show net2 >/dev/null 2>&1 && ip -n "${POD#/run/netns/}" link del net2

	sed 's/"type":"'"$ipam"'"/"type":"no-such-ipam"/' "$one" >"$TMP/$chain-noipam.conf"
	netstate "$POD" --no-linklocal >"$TMP/before"
	netstate "$HOST_NS" >"$TMP/host-before"
	drv add --conf "$TMP/$chain-noipam.conf" --ifname net1 --netns "$POD" --id noipam
	is "$rc" 1 "$chain: ADD with a missing IPAM plugin fails"
	echo "# $chain: missing IPAM: $out"
	verdict "$chain" "$(leaks "$TMP/before" <(netstate "$POD" --no-linklocal) | sed -n 1p)" "$CLEAN" "a failed ADD (no IPAM plugin) leaves nothing in the pod"
	verdict "$chain" "$(leaks "$TMP/host-before" <(netstate "$HOST_NS") | sed -n 1p)" "$CLEAN" "nor in the host"
	ip -n "${POD#/run/netns/}" link show net1 >/dev/null 2>&1 && ip -n "${POD#/run/netns/}" link del net1
	rm -rf "$TMP/store-hl" "$TMP/store-rk"
done

# --- DEL twice, DEL without a netns, DEL after the netns is gone ---------------------------
for chain in "${CHAINS[@]}"; do
	ipam=host-local
	[ "$chain" = rdmak ] && ipam=rdmak-ipam
	args=$(attach_args "$chain" "$ipam" 4 1)
	dpod=$(cni_pod "del-$chain")
	# shellcheck disable=SC2086
	drv add $args --netns "$dpod" --id del-a
	is "$rc" 0 "$chain: ADD (for the DEL cases)"
	# shellcheck disable=SC2086
	drv del $args --netns "$dpod" --id del-a
	is "$rc" 0 "$chain: DEL"
	# shellcheck disable=SC2086
	drv del $args --netns "$dpod" --id del-a
	verdict "$chain" "$rc" 0 "a second DEL succeeds"
	# shellcheck disable=SC2086
	drv del $args --netns "" --id del-a
	verdict "$chain" "$rc" 0 "DEL with an empty CNI_NETNS succeeds"
	# shellcheck disable=SC2086
	drv add $args --netns "$dpod" --id del-b
	is "$rc" 0 "$chain: ADD again"
	ip netns del "${dpod#/run/netns/}"
	# shellcheck disable=SC2086
	drv del $args --netns "$dpod" --id del-b
	verdict "$chain" "$rc" 0 "DEL after the pod's netns is gone succeeds"
	# shellcheck disable=SC2086
	verdict "$chain" "$(reservations "$ipam" $(printf '%s\n' $args | sed -n '/^--conf$/{n;p}'))" 0 "and releases the address"
	rm -rf "$TMP/store-hl" "$TMP/store-rk"
done

# --- hostdev: a VF stand-in moved into the pod by name, and back ------------------------------
for chain in "${CHAINS[@]}"; do
	IPAM_KIND=host-local
	args=$(attach_args "$chain-hd" host-local 4 1 10)
	hpod=$(cni_pod "hd-$chain")
	netstate "$HOST_NS" --no-linklocal >"$TMP/host-before"
	# shellcheck disable=SC2086
	drv add $args --netns "$hpod" --id hd-1
	is "$rc" 0 "$chain hostdev: ADD"
	is "$(ip -n "${hpod#/run/netns/}" -o link show net1 2>/dev/null | grep -c 'net1')" 1 "$chain hostdev: vf10 is net1 in the pod"
	is "$(ip -n "$HOST_NS" -o link show vf10 2>/dev/null | wc -l)" 0 "$chain hostdev: and gone from the host"
	is "$(ping_rails "$hpod" 4 1 10)" 0 "$chain hostdev: the pod reaches vf10's gateway through it"
	# shellcheck disable=SC2086
	drv check $args --netns "$hpod" --id hd-1
	verdict "$chain" "$rc" 0 "hostdev CHECK passes right after ADD"
	# shellcheck disable=SC2086
	drv del $args --netns "$hpod" --id hd-1
	is "$rc" 0 "$chain hostdev: DEL"
	is "$(ip -n "$HOST_NS" -o link show vf10 2>/dev/null | wc -l)" 1 "$chain hostdev: vf10 is back in the host under its name"
	verdict "$chain" "$(leaks "$TMP/host-before" <(netstate "$HOST_NS" --no-linklocal) | sed -n 1p)" "$CLEAN" "hostdev DEL leaves the host as it was (the VF up as before)"
	# shellcheck disable=SC2086
	drv del $args --netns "$hpod" --id hd-1
	verdict "$chain" "$rc" 0 "hostdev: a second DEL succeeds"
	ip -n "$HOST_NS" link set vf10 up
	rm -rf "$TMP/store-hl"
done

if [ -n "$RK_WHY" ]; then
	skip "$RK_WHY" "rdmak-cni: deviceID through libcni, GC, STATUS, multi-rail in one subnet"
	done_testing
	exit
fi

# --- hostdev by PCI function: runtimeConfig.deviceID through libcni, as Multus passes the device
# plugin's allocation, found through a test sysfs tree (bus/pci/devices/<bdf>/net/<netdev>) -----
BDF=0000:3b:00.2
mkdir -p "$TMP/sys/bus/pci/devices/$BDF/net/vf11"
# the tree is the node's sysfs root here (its CNI settings): the network names the same one
node_conf "\"sysfs\":\"$TMP/sys\""
f="$TMP/hd-pci.conf"
echo "{\"cniVersion\":\"1.0.0\",\"name\":\"vf11\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"sysfs\":\"$TMP/sys\",
 \"stateDir\":\"$TMP/state-cni\",\"capabilities\":{\"deviceID\":true},\"ipam\":$(ipam_json rdmak-ipam 11 4)}" >"$f"
ppod=$(cni_pod pci)
netstate "$HOST_NS" --no-linklocal >"$TMP/host-before"
drv add --conf "$f" --ifname net1 --netns "$ppod" --id pci-1 --cap "deviceID=\"$BDF\""
is "$rc" 0 "hostdev by deviceID (runtimeConfig through libcni): ADD"
[ "$rc" -eq 0 ] || echo "#   $out"
is "$(ip -n "${ppod#/run/netns/}" -o link show net1 2>/dev/null | wc -l)" 1 "the function's netdev (vf11) is net1 in the pod"
IPAM_KIND=rdmak-ipam
is "$(ping_rails "$ppod" 4 1 11)" 0 "and reaches its gateway"
drv check --conf "$f" --ifname net1 --netns "$ppod" --id pci-1 --cap "deviceID=\"$BDF\""
is "$rc" 0 "hostdev by deviceID: CHECK"
drv del --conf "$f" --ifname net1 --netns "$ppod" --id pci-1 --cap "deviceID=\"$BDF\""
is "$rc" 0 "hostdev by deviceID: DEL"
is "$(leaks "$TMP/host-before" <(netstate "$HOST_NS" --no-linklocal) | sed -n 1p)" "$CLEAN" "vf11 is back in the host as it was"
drv add --conf "$f" --ifname net1 --netns "$ppod" --id pci-2
is "$rc" 1 "hostdev without deviceID (no device plugin allocation) fails ADD"
like "$out" "deviceID" "naming deviceID"
rm -rf "$TMP/store-rk"
node_conf

# --- GC: attachments whose pods are gone, named by cni.dev/valid-attachments ------------------
f="$TMP/gc.conf"
conf_rdmak "$f" 0 "$(ipam_json rdmak-ipam 0 4)"
gpods=()
for i in 1 2 3; do
	gpods+=("$(cni_pod "gc$i")")
	drv add --conf "$f" --ifname net1 --netns "${gpods[-1]}" --id "gc-$i"
	is "$rc" 0 "GC setup: attachment gc-$i"
done
ip netns del "${gpods[1]#/run/netns/}"
ip netns del "${gpods[2]#/run/netns/}"
drv gc --conf "$f" --valid gc-1/net1
is "$rc" 0 "GC (CNI 1.1, by exec) with gc-1 still valid"
[ "$rc" -eq 0 ] || echo "#   $out $err"
is "$(rdmak_reservations "$f")" 1 "GC released the two attachments whose pods are gone, kept gc-1's"
drv check --conf "$f" --ifname net1 --netns "${gpods[0]}" --id gc-1
is "$rc" 0 "gc-1 still passes CHECK"
drv del --conf "$f" --ifname net1 --netns "${gpods[0]}" --id gc-1
is "$(rdmak_reservations "$f")" 0 "and its DEL releases the last one"
drv gc --conf "$TMP/ref-host-local-4-0.conf" --valid x/net1
echo "# reference: GC: $([ "$rc" -eq 0 ] && echo "exit 0 ($(printf '%s' "$err" | grep -c skipped) plugins without GC skipped)" || echo "fails: $out")"

# --- STATUS ------------------------------------------------------------------------------------
drv status --conf "$f"
is "$rc" 0 "STATUS of rdmak-cni + rdmak-ipam"
sed "s#\"dataDir\":\"$TMP/store-rk\"#\"dataDir\":\"$TMP/lib-cni.sh-not-a-dir/x\"#" "$f" >"$TMP/status-bad.conf"
cp "$TOP/tests/lib-cni.sh" "$TMP/lib-cni.sh-not-a-dir"
drv status --conf "$TMP/status-bad.conf"
is "$(jget_out code)" 50 "STATUS with an unusable IPAM store: code 50 (cannot service ADD)"

# --- several rails in one subnet: each answers for its own address (issue 7 section 3) --------
for n in 2 8; do
	spod=$(cni_pod "same$n")
	args=
	for ((k = 0; k < n; k++)); do
		f="$TMP/same-$n-$k.conf"
		conf_rdmak "$f" "$k" "{\"type\":\"rdmak-ipam\",\"ranges\":[[{\"subnet\":\"172.16.11.0/24\",\"rangeStart\":\"172.16.11.$((100 + k))\",\"rangeEnd\":\"172.16.11.$((100 + k))\",\"gateway\":\"172.16.11.254\"}]],\"dataDir\":\"$TMP/store-rk\"}"
		args+="--conf $f --ifname net$((k + 1)) "
	done
	# shellcheck disable=SC2086
	drv add $args --netns "$spod" --id "same-$n"
	is "$rc" 0 "$n rails in one subnet: ADD"
	netstate "$spod" --no-mac --no-linklocal --tables >"$TMP/same-$n"
	is "$(grep -cE '^sysctl net[0-9]+ (arp_ignore=1|arp_announce=2|rp_filter=2)$' "$TMP/same-$n")" $((3 * n)) \
		"$n rails in one subnet: arp_ignore=1, arp_announce=2, rp_filter=2 on each"
	is "$(grep -cE '^rule4 P from 172.16.11.1[0-9][0-9] lookup T\(net[0-9]+\)$' "$TMP/same-$n")" "$n" "$n rails in one subnet: one rule per address"
	# shellcheck disable=SC2086
	drv del $args --netns "$spod" --id "same-$n"
	is "$rc" 0 "$n rails in one subnet: DEL"
done
rm -rf "$TMP/store-rk"

# --- the driver's loop with a pause before each DEL (make bench: tools/bench-cni.sh) ----------
run "$DRIVER" loop --count 1 --pause-random-us soon --conf "$TMP/same-2-0.conf" --ifname net1 --netns x --id p
is "$rc" 2 "driver: --pause-random-us that is not a number is a usage error (exit 2)"
like "$err" 'pause-random-us: "soon" is not a number' "driver: which option, and why"
ppod=$(cni_pod pause)
conf_rdmak "$TMP/pause.conf" 0 "$(ipam_json rdmak-ipam 0 4)"
run ip netns exec "$HOST_NS" "$DRIVER" loop --count 3 --pause-random-us 2000000 --seed 3 --conf "$TMP/pause.conf" \
	--ifname net1 --netns "$ppod" --id pause --cni-path "$BUILD/cni:$REFDIR" --cache-dir "$TMP/cache"
is "$rc" 0 "driver: 3 cycles with a random pause of up to 2 s before each DEL"
# three pauses of up to 2 s each (seed 3: about 3 s in all) against three DELs of about 20 ms:
# a pause counted in the DEL's time or the cycle's would dwarf them
is "$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); p=d["paused_ms"]
print("ok" if p > 500 and 3 * d["del"]["mean_ms"] < p / 2 and 3 * d["cycle"]["mean_ms"] < p / 2 else "paused %s, del %s, cycle %s" % (p, d["del"], d["cycle"]))' "$out")" ok \
	"driver: the pauses are reported (paused_ms) and timed in neither DEL nor the cycle"

done_testing
