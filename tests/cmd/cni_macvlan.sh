#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni link macvlan run directly (env + stdin) in the test's own namespaces: VERSION, ADD
# with IPv4 and IPv6 (Debian's host-local), the pod's link, addresses, table, rules and main as
# `ip` shows them, CHECK passing and then naming each thing taken away, DEL (twice, without a
# netns, after the netns is gone) leaving pod, host and IPAM store as they were, the modes,
# mtu and mac, policyRouting off, the older result versions, STATUS and GC.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni macvlan in network namespaces"
	done_testing
	exit
fi
cni_topology 2
POD=$(cni_pod pod)
P=$(pns "$POD")
HL="$TMP/store-hl"

conf() { # conf [EXTRA-KEYS] [VERSION] [IPAM]: rail 0's macvlan, dual stack from host-local
	local extra=${1:+,$1} v=${2:-1.0.0} ipam=${3:-"{\"type\":\"host-local\",\"ranges\":$(range_json 0 46),\"dataDir\":\"$HL\"}"}
	echo "{\"cniVersion\":\"$v\",\"name\":\"rail0\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"stateDir\":\"$TMP/state\",\"ipam\":$ipam$extra}"
}

# --- VERSION and --help -----------------------------------------------------------------------
cni VERSION x net1 "" '{"cniVersion":"1.1.0"}'
is "$rc" 0 "VERSION exits 0"
is "$(jout 'd["supportedVersions"]')" '["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]' "VERSION lists 0.3.0 to 1.1.0"
run "$PLUGIN" --help
is "$rc" 0 "--help exits 0"
like "$out" "policyRouting" "--help names the keys"
run "$PLUGIN" --bogus
is "$rc" 2 "an unknown option exits 2"

# --- ADD, dual stack -------------------------------------------------------------------------
before=$(snap_all "$POD")
C=$(conf)
cni ADD c1 net1 "$POD" "$C"
is "$rc" 0 "ADD macvlan on rdma0, IPv4 + IPv6"
[ "$rc" -eq 0 ] || echo "#   $out $err"
RES=$out
is "$(jout '[d["interfaces"][0]["name"], d["interfaces"][0]["sandbox"]]')" "[\"net1\", \"$POD\"]" "result: the interface in the sandbox"
is "$(jout '[(i["interface"], i["address"], i["gateway"]) for i in d["ips"]]')" \
	'[[0, "172.16.11.10/24", "172.16.11.254"], [0, "fd00:11::10/64", "fd00:11::fe"]]' "result: both addresses with their gateways, on interface 0"
is "$(jout 'd.get("routes", [])')" "[]" "result 1.0.0: no routes (the table's routes cannot be told before 1.1.0)"
is "$(jout 'd["interfaces"][0]["mac"]')" "$(ip -n "$P" -j link show net1 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')" \
	"result: the MAC the pod's net1 has"
like "$(ip -n "$P" -d link show net1)" "macvlan mode bridge" "net1 is a macvlan in bridge mode"
is "$(ip -n "$P" -o link show net1 | grep -c 'state UP\|,UP')" 1 "net1 is up"
is "$(ip -n "$P" -o addr show dev net1 scope global | awk '{print $4}' | sort | tr '\n' ' ')" "172.16.11.10/24 fd00:11::10/64 " "net1 has both addresses"
is "$(ip -n "$P" -4 rule show | grep -c '^30000:	from 172.16.11.10 lookup 101')" 1 "rule: from 172.16.11.10 lookup 101 at priority 30000"
is "$(ip -n "$P" -6 rule show | grep -c '^30000:	from fd00:11::10 lookup 101')" 1 "rule: from fd00:11::10 lookup 101 at priority 30000"
is "$(ip -n "$P" -4 route show table 101 | sort)" "$(printf '%s\n' '172.16.11.0/24 dev net1 proto kernel scope link src 172.16.11.10 ' 'default via 172.16.11.254 dev net1 proto static ' | sort)" \
	"table 101: the subnet and the default route via the gateway"
like "$(ip -n "$P" -6 route show table 101)" "default via fd00:11::fe dev net1" "table 101: the IPv6 default route"
is "$(ip -n "$P" -4 route show table main)" "172.16.11.0/24 dev net1 proto kernel scope link src 172.16.11.10 " \
	"main keeps the connected route only: no default through net1"
is "$(ip netns exec "$P" ip route get 8.8.8.8 from 172.16.11.10 2>&1 | grep -c 'via 172.16.11.254 dev net1 table 101')" 1 \
	"traffic from the address goes out net1 through table 101"
is "$(ip netns exec "$P" ping -q -c1 -w5 -I 172.16.11.10 172.16.11.254 >/dev/null 2>&1; echo $?)" 0 "the pod reaches the rail's gateway"
is "$(files_under "$HL" | grep -cE '/[0-9a-f.:]+$')" 2 "host-local holds the two addresses"
is "$(files_under "$TMP/state" | wc -l)" 0 "macvlan leaves no record of its own"

# --- CHECK -------------------------------------------------------------------------------------
PC=$(prev_conf "$C" "$RES")
cni CHECK c1 net1 "$POD" "$PC"
is "$rc" 0 "CHECK passes right after ADD"
[ "$rc" -eq 0 ] || echo "#   $out"
ip -n "$P" rule del from 172.16.11.10 lookup 101 priority 30000
cni CHECK c1 net1 "$POD" "$PC"
is "$(jout 'd["code"]')" 110 "CHECK without the rule: code 110"
like "$(jout 'd["details"]')" "from 172.16.11.10 lookup 101" "naming the rule"
ip -n "$P" rule add from 172.16.11.10 lookup 101 priority 30000
ip -n "$P" route del default via 172.16.11.254 table 101
cni CHECK c1 net1 "$POD" "$PC"
like "$(jout 'd["details"]')" "table 101: the default route via 172.16.11.254 is missing" "CHECK names a missing default route"
ip -n "$P" route add default via 172.16.11.254 dev net1 table 101
ip -n "$P" addr del fd00:11::10/64 dev net1
cni CHECK c1 net1 "$POD" "$PC"
like "$(jout 'd["details"]')" "address fd00:11::10/64 is missing" "CHECK names a missing address"
ip -n "$P" addr add fd00:11::10/64 dev net1 nodad
ip -n "$P" route add default via fd00:11::fe dev net1 table 101 2>/dev/null
ip -n "$P" link set net1 down
cni CHECK c1 net1 "$POD" "$PC"
like "$(jout 'd["details"]')" "net1 is down" "CHECK names a link set down"
ip -n "$P" link set net1 up
# a link set down loses its IPv6 addresses and its routes (keep_addr_on_down is 0): put back
ip -n "$P" addr add fd00:11::10/64 dev net1 nodad
ip -n "$P" route replace default via fd00:11::fe dev net1 table 101
ip -n "$P" route replace default via 172.16.11.254 dev net1 table 101
cni CHECK c1 net1 "$POD" "$(prev_conf "$C" "$(printf '%s' "$RES" | sed 's/"mac": *"[^"]*"/"mac":"02:00:00:00:00:01"/')")"
like "$(jout 'd["details"]')" "MAC .*prevResult says 02:00:00:00:00:01" "CHECK names a MAC that differs"
cni CHECK c1 net1 "$POD" "$(prev_conf "$(conf '"mode":"private"')" "$RES")"
like "$(jout 'd["details"]')" "macvlan mode bridge, the configuration says private" "CHECK names a mode that differs"
cni CHECK c1 net1 "$POD" "$C"
is "$(jout 'd["code"]')" 7 "CHECK without prevResult: code 7"
cni CHECK c1 net1 "/run/netns/$CNI_TAG-nonexistent" "$PC"
is "$(jout 'd["code"]')" 3 "CHECK of a pod whose netns is gone: code 3"
cni CHECK c1 net1 "$POD" "$PC"
is "$rc" 0 "CHECK passes again once everything is back"
[ "$rc" -eq 0 ] || echo "#   $out"

# --- ADD of a name the pod has -----------------------------------------------------------------
cni ADD c2 net1 "$POD" "$C"
is "$(jout 'd["code"]')" 103 "ADD of an interface name the pod has: code 103"
is "$(files_under "$HL" | grep -cE '/[0-9a-f.:]+$')" 2 "and no address taken for it"

# --- DEL ---------------------------------------------------------------------------------------
cni DEL c1 net1 "$POD" "$PC"
is "$rc" 0 "DEL"
is "$(snap_all "$POD")" "$before" "DEL leaves host, pod and state as before ADD"
is "$(files_under "$HL" | grep -cE '/[0-9a-f.:]+$')" 0 "DEL released both addresses"
cni DEL c1 net1 "$POD" "$PC"
is "$rc" 0 "a second DEL succeeds"
cni DEL c1 net1 "" "$C"
is "$rc" 0 "DEL without CNI_NETNS nor prevResult succeeds"

cni ADD c3 net1 "$POD" "$C"
is "$rc" 0 "ADD again"
cni DEL c3 net1 "" "$C"
is "$rc" 0 "DEL without CNI_NETNS (the pod still there)"
is "$(files_under "$HL" | grep -cE '/[0-9a-f.:]+$')" 0 "still releases the addresses"
ip -n "$P" link del net1 2>/dev/null
ip netns exec "$P" ip rule flush 2>/dev/null; ip netns exec "$P" ip rule add from all lookup main pref 32766; ip netns exec "$P" ip rule add from all lookup default pref 32767
gpod=$(cni_pod gone)
cni ADD c4 net1 "$gpod" "$C"
is "$rc" 0 "ADD in a pod that then goes away"
ip netns del "$(pns "$gpod")"
cni DEL c4 net1 "$gpod" "$C"
is "$rc" 0 "DEL after the pod's netns is gone succeeds"
is "$(files_under "$HL" | grep -cE '/[0-9a-f.:]+$')" 0 "and releases the addresses"
is "$(netstate "$HOST_NS" | grep -c '^link net1')" 0 "nothing of it on the host"

# --- modes, mtu, mac, policyRouting off, older versions --------------------------------------
for m in private vepa passthru; do
	cni ADD "m-$m" net2 "$POD" "$(conf "\"mode\":\"$m\"")"
	is "$rc" 0 "ADD mode $m"
	like "$(ip -n "$P" -d link show net2 2>&1)" "macvlan mode $m" "net2 is in mode $m"
	cni DEL "m-$m" net2 "$POD" "$(conf "\"mode\":\"$m\"")"
done
C2=$(conf '"mtu":1400,"mac":"02:aa:bb:cc:dd:ee"')
cni ADD mm net2 "$POD" "$C2"
is "$rc" 0 "ADD with mtu and mac"
like "$(ip -o -n "$P" link show net2)" "mtu 1400 .*link/ether 02:aa:bb:cc:dd:ee" "net2 has the MTU and MAC asked for"
is "$(jout 'd["interfaces"][0]["mac"]')" "02:aa:bb:cc:dd:ee" "the result says that MAC"
R2=$out
cni CHECK mm net2 "$POD" "$(prev_conf "$C2" "$R2")"
is "$rc" 0 "CHECK with mtu and mac"
ip -n "$P" link set net2 mtu 1500
cni CHECK mm net2 "$POD" "$(prev_conf "$C2" "$R2")"
like "$(jout 'd["details"]')" "MTU 1500, the configuration says 1400" "CHECK names an MTU that differs"
cni DEL mm net2 "$POD" "$C2"
is "$rc" 0 "DEL"

C3=$(conf '"policyRouting":false' 1.0.0 "{\"type\":\"static\",\"addresses\":[{\"address\":\"172.16.11.50/24\",\"gateway\":\"172.16.11.254\"}],\"routes\":[{\"dst\":\"10.20.0.0/16\"}]}")
cni ADD np net3 "$POD" "$C3"
is "$rc" 0 "ADD with policyRouting false"
is "$(jout 'd["routes"]')" '[{"dst": "10.20.0.0/16"}]' "the result carries IPAM's route"
is "$(ip -n "$P" -4 route show table main | grep -c '10.20.0.0/16 via 172.16.11.254 dev net3')" 1 "IPAM's route in main, via the gateway"
is "$(ip -n "$P" -4 rule show | grep -c 30000)" 0 "no rule"
cni CHECK np net3 "$POD" "$(prev_conf "$C3" "$out")"
is "$rc" 0 "CHECK without policy routing"
cni DEL np net3 "$POD" "$C3"
is "$(ip -n "$P" -o link show net3 2>/dev/null | wc -l)" 0 "DEL removes net3"

cni ADD v031 net1 "$POD" "$(conf '' 0.3.1)"
is "$rc" 0 "ADD with cniVersion 0.3.1"
is "$(jout '[d["cniVersion"], [i["version"] for i in d["ips"]]]')" '["0.3.1", ["4", "6"]]' "a 0.3.1 result (ips carry their version)"
cni DEL v031 net1 "$POD" "$(conf '' 0.3.1)"
is "$rc" 0 "DEL 0.3.1"
cni CHECK v031 net1 "$POD" "$(conf '' 0.3.1)"
is "$(jout 'd["code"]')" 1 "CHECK in 0.3.1 (which has no CHECK): code 1"

# --- 1.1.0: STATUS, GC, the result's routes with their table ---------------------------------
S=$(conf '' 1.1.0 '{"type":"rdmak-ipam","ranges":'"$(range_json 0 4)"',"dataDir":"'"$TMP/store-rk"'"}')
if [ -n "$(cni_rdmak_ready rdmak-ipam)" ]; then
	skip "rdmak-ipam is not built yet" "1.1.0 result with table routes, STATUS and GC with rdmak-ipam"
else
	cni ADD n11 net1 "$POD" "$S"
	is "$rc" 0 "ADD 1.1.0 with rdmak-ipam"
	[ "$rc" -eq 0 ] || echo "#   $out"
	is "$(jout '[(r["dst"], r.get("gw"), r.get("table")) for r in d["routes"]]')" \
		'[["172.16.11.0/24", null, 101], ["0.0.0.0/0", "172.16.11.254", 101]]' "result 1.1.0: the table's routes, each with its table"
	is "$(jout 'd["interfaces"][0]["mtu"]')" 1500 "result 1.1.0: the interface's MTU"
	cni CHECK n11 net1 "$POD" "$(prev_conf "$S" "$out")"
	is "$rc" 0 "CHECK 1.1.0 (the table's routes from prevResult)"
	cni STATUS "" "" "" "$S"
	is "$rc" 0 "STATUS with rdmak-ipam"
	cni GC "" "" "" "$("$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); c["cni.dev/valid-attachments"]=[]; print(json.dumps(c))' "$S")"
	is "$rc" 0 "GC with no valid attachment"
	cni DEL n11 net1 "$POD" "$S"
	is "$rc" 0 "DEL 1.1.0"
fi
N=$(conf '' 1.1.0 null | sed 's/,"ipam":null//')
cni STATUS "" "" "" "$N"
is "$rc" 0 "STATUS: master there, no IPAM"
cni STATUS "" "" "" "$(printf '%s' "$N" | sed 's/"rdma0"/"rdma9"/')"
is "$(jout '[d["code"], d["msg"]]')" '[50, "master not found"]' "STATUS with the master missing: code 50"
cni GC "" "" "" "$N"
is "$rc" 0 "GC without IPAM: nothing to do"
cni ADD n11 net1 "$POD" "$N"
is "$(jout '[d["interfaces"][0]["name"], d["ips"] if "ips" in d else []]')" '["net1", []]' "ADD without ipam: the interface, no address"
cni DEL n11 net1 "$POD" "$N"
is "$(snap_all "$POD")" "$before" "after everything, host, pod and state are as at the start"

done_testing
