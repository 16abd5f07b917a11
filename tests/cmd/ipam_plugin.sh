#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-ipam exec'd as a runtime or a main plugin execs it: CNI environment, the whole network
# configuration on stdin (the main plugin's own keys included). ADD/DEL/CHECK/GC/STATUS/VERSION,
# the result in every version, idempotent ADD, the full pool, refusals naming the field, and
# under Debian's reference macvlan in a throwaway network namespace.
. "$(dirname "$0")/../lib.sh"
IPAM="$BUILD/cni/rdmak-ipam"
DATA="$TMP/data"

# conf VERSION IPAM-JSON-BODY: a macvlan network config delegating to rdmak-ipam
conf() {
	printf '{"cniVersion":"%s","name":"rdma-net","type":"macvlan","master":"eth9","mode":"bridge","ipam":{"type":"rdmak-ipam","dataDir":"%s",%s}}' "$1" "$DATA" "$2"
}
# cni COMMAND CONTAINERID CONF [IFNAME]: runs the plugin, stdout in $out, exit in $rc; ARGS=...
# set replaces the CNI_ARGS made of the container ID
cni() {
	printf '%s' "$3" >"$TMP/stdin"
	run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_NETNS=/proc/self/ns/net \
		CNI_IFNAME="${4:-net1}" CNI_PATH="$BUILD/cni" \
		CNI_ARGS="${ARGS-${2:+IgnoreUnknown=1;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=vllm-$2;K8S_POD_UID=uid-$2}}" \
		"$IPAM" <"$TMP/stdin"
	printf '%s' "$out" >"$TMP/out.json"
}
q() { jget "$TMP/out.json" "$1"; }

C11=$(conf 1.1.0 '"range":"10.56.0.0/29","gateway":"10.56.0.1","routes":[{"dst":"0.0.0.0/0","table":107}],"dns":{"nameservers":["10.56.0.1"]}')

run "$IPAM" --help
is "$rc" 0 "rdmak-ipam --help exits 0"

# VERSION
cni VERSION c0 '{"cniVersion":"0.4.0"}'
is "$rc" 0 "VERSION exits 0"
is "$(q "[d['cniVersion'], d['supportedVersions']]")" '["0.4.0", ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]]' "VERSION lists every version"

# ADD in 1.1.0: the IPAM result (no interfaces, no interface index), routes with table, dns
cni ADD c1 "$C11"
is "$rc" 0 "ADD exits 0"
is "$(q "d['ips']")" '[{"address": "10.56.0.2/29", "gateway": "10.56.0.1"}]' "ADD: the first address after the gateway"
is "$(q "d['routes']")" '[{"dst": "0.0.0.0/0", "table": 107}]' "1.1.0 routes keep table"
is "$(q "d['dns']")" '{"nameservers": ["10.56.0.1"]}' "dns from the config"
is "$(q "'interfaces' in d")" "False" "an IPAM result has no interfaces"
like "$err" "rdma-net: 10.56.0.2/29 for pod ai/vllm-c1" "the log line names the address and the pod"

# idempotent ADD
cni ADD c1 "$C11"
is "$(q "d['ips'][0]['address']")" "10.56.0.2/29" "ADD again: the same address"

# each version's shape
cni ADD c2 "$(conf 1.0.0 '"range":"10.56.0.0/29","gateway":"10.56.0.1","routes":[{"dst":"0.0.0.0/0","table":107}]')"
is "$(q "[d['cniVersion'], d['ips'], d['routes']]")" '["1.0.0", [{"address": "10.56.0.3/29", "gateway": "10.56.0.1"}], [{"dst": "0.0.0.0/0"}]]' \
	"1.0.0: no ips[].version, no route table"
for v in 0.4.0 0.3.1 0.3.0; do
	cni ADD "c-${v//./}" "$(conf $v '"range":"10.56.0.0/29","gateway":"10.56.0.1"')"
	is "$(q "[d['cniVersion'], d['ips'][0]['version']]")" "[\"$v\", \"4\"]" "$v: ips[].version"
done
cni ADD c2 "$(conf 0.2.0 '"range":"10.56.0.0/29"')"
is "$rc" 1 "cniVersion 0.2.0: refused"
is "$(q "[d['code'], d['msg']]")" '[1, "incompatible CNI version"]' "code 1"

# CHECK, with and without a prevResult
cni CHECK c1 "$C11"
is "$rc" 0 "CHECK of a reservation exits 0"
is "$out" "" "CHECK prints nothing on success"
cni CHECK c1 "$(conf 1.1.0 '"range":"10.56.0.0/29","gateway":"10.56.0.1"' | sed 's/}}$/},"prevResult":{"ips":[{"address":"10.56.0.6\/29"}]}}/')"
is "$rc" 1 "CHECK with a prevResult that differs fails"
is "$(q "d['code']")" 111 "code 111"
like "$(q "d['details']")" "10.56.0.2/29 is reserved for container c1 interface net1 but prevResult does not hold it" "and says what differs"
cni CHECK c1 "$(conf 0.3.1 '"range":"10.56.0.0/29"')"
is "$(q "d['code']")" 1 "CHECK with 0.3.1: code 1 (CHECK came in 0.4.0)"

# the full pool: .2-.6 (5 addresses); c1 c2 and the three old-version ADDs hold them
cni ADD c9 "$C11"
is "$rc" 1 "ADD on a full pool fails"
is "$(q "[d['code'], d['msg'], d['details']]")" '[110, "no free address", "10.56.0.0/29: all 5 addresses in use"]' \
	"the full-pool error gives the count"
cni STATUS "" "$C11"
is "$(q "[d['code'], d['details']]")" '[50, "rdma-net: every address of 10.56.0.0/29 is in use"]' "STATUS on a full pool: code 50"

# DEL frees; DEL again and DEL of the unknown succeed; the freed address is reused only when nothing else is free
cni DEL c2 "$C11"
is "$rc" 0 "DEL exits 0"
cni DEL c2 "$C11"
is "$rc" 0 "DEL twice exits 0"
cni DEL never-added "$C11"
is "$rc" 0 "DEL of an attachment never added exits 0"
cni ADD c9 "$C11"
is "$(q "d['ips'][0]['address']")" "10.56.0.3/29" "after a DEL, ADD gets the freed address"
cni STATUS "" "$C11"
is "$rc" 1 "STATUS: full again"

# GC: everything but c1 and c9
printf '%s' "$C11" | sed 's/}}$/},"cni.dev\/valid-attachments":[{"containerID":"c1","ifname":"net1"},{"containerID":"c9","ifname":"net1"}]}/' >"$TMP/gc.json"
cni GC "" "$(cat "$TMP/gc.json")"
is "$rc" 0 "GC exits 0"
cni STATUS "" "$C11"
is "$rc" 0 "STATUS after GC: room again"
cni CHECK c2 "$C11"
is "$(q "d['code']")" 111 "a collected attachment is gone"
cni CHECK c9 "$C11"
is "$rc" 0 "a valid attachment survives GC"
cni GC "" "$C11"
like "$(q "d['details']")" "cni.dev/valid-attachments: missing" "GC without the list is refused"
cni GC "" "$(conf 1.0.0 '"range":"10.56.0.0/29"')"
is "$(q "d['code']")" 1 "GC with 1.0.0: code 1"

# two interfaces of one container are two attachments
cni ADD c1 "$C11" net2
is "$(q "d['ips'][0]['address']")" "10.56.0.4/29" "net2 of the same container: another address"

# dual stack, IPv6
cni ADD d1 "$(conf 1.1.0 '"ipRanges":[{"range":"10.70.0.0/24"},{"range":"fd00:70::/64"}]')"
is "$(q "[i['address'] for i in d['ips']]")" '["10.70.0.1/24", "fd00:70::1/64"]' "ipRanges: one address per range (dual stack)"
cni ADD d2 "$(conf 0.3.1 '"ipRanges":[{"range":"10.70.0.0/24"},{"range":"fd00:70::/64"}]')"
is "$(q "[i['version'] for i in d['ips']]")" '["4", "6"]' "0.3.1: version 4 and 6"

# refusals: the field is named, nothing is written
before=$(find "$DATA" | sort)
refused() { # refused IPAM-BODY CODE DETAILS-REGEX DESC
	cni ADD r1 "$(conf 1.1.0 "$1")"
	is "$rc:$(q "d['code']")" "1:$2" "$4: code $2"
	like "$(q "d['details']")" "$3" "$4: names the field"
}
refused '"range":"10.56.0.0/29","datastore":"kubernetes"' 2 'ipam.datastore: unsupported key \(value: "kubernetes"\); rdmak-ipam keeps no state in Kubernetes' "datastore kubernetes"
refused '"range":"10.56.0.0/29","colour":"blue"' 2 'ipam.colour: unsupported key \(value: "blue"\)' "an unknown key"
refused '"range":"10.56.0.0/29","range_end":"10.57.0.9"' 7 'ipam.range_end: 10.57.0.9 is not in 10.56.0.0/29' "range_end outside the subnet"
refused '"ipRanges":[{"range":"10.56.0.0/33"}]' 7 'ipam.ipRanges\[0\].range: "10.56.0.0/33" is not a subnet' "a bad ipRanges element"
refused '"range":"10.56.0.0/29","store":"etcd"' 7 'ipam.dataDir: only with "store": "file"' "dataDir with store etcd"
refused '"range":"10.9.0.0/0"' 7 'ipam.range: "10.9.0.0/0" is the whole address family' "a /0 range (it handed out 0.0.0.1/0)"
is "$(find "$DATA" | sort)" "$before" "refused ADDs wrote nothing"
# an exclusion outside the range: accepted, and the CNI log says it excludes nothing
cni ADD x1 "$(conf 1.1.0 '"range":"10.58.0.0/29","exclude":["10.59.0.0/24"]')"
is "$rc" 0 "an exclude outside the range: ADD succeeds"
like "$err" 'ipam.exclude\[0\]: 10.59.0.0/24 is outside the range 10.58.0.1-10.58.0.6: it excludes nothing' "and the log warns of it"
cni DEL x1 "$(conf 1.1.0 '"range":"10.58.0.0/29","exclude":["10.59.0.0/24"]')"
cni ADD r1 '{"cniVersion":"1.1.0","name":"rdma-net","type":"macvlan"}'
is "$(q "[d['code'], d['details']]")" '[7, "ipam: missing (rdmak-ipam reads its ranges from the \"ipam\" object)"]' "no ipam block"
cni ADD "bad/id" "$C11"
is "$(q "[d['code'], d['msg']]")" '[4, "invalid environment variables: CNI_CONTAINERID, CNI_ARGS"]' "a container ID that could escape a path (and the pod name made of it): code 4"
cni ADD c1 "$C11" "net%d"
is "$(q "d['code']")" 4 "an ifname the kernel would rename: code 4"
cni ADD c1 "{"
is "$(q "d['code']")" 6 "stdin that is not JSON: code 6"

# the same subnet in two networks never hands out one address twice (.2 .3 .4 are rdma-net's)
cni ADD o1 "$(conf 1.1.0 '"range":"10.56.0.0/29","gateway":"10.56.0.1"' | sed 's/"name":"rdma-net"/"name":"other-net"/')"
is "$(q "d['ips'][0]['address']")" "10.56.0.5/29" "another network over the same subnet gets a free address"

# CNI_ARGS: unknown keys refused without IgnoreUnknown (libcni's LoadArgs), IP= honoured as
# host-local does: exactly that address, from the range set that hands it out, or a refusal
CR=$(conf 1.1.0 '"ipRanges":[{"range":"10.58.0.0/28","gateway":"10.58.0.1"},{"range":"fd00:58::/124"}]')
ARGS="K8S_POD_NAMESPACE=ai;K8S_POD_NAME=p;FOO=bar" cni ADD a1 "$CR"
is "$rc:$(q "[d['code'], d['details']]")" '1:[4, "CNI_ARGS: unknown key FOO (known: IP, K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID; IgnoreUnknown=1 lets others pass)"]' \
	"an unknown CNI_ARGS key without IgnoreUnknown: code 4, named"
ARGS="IgnoreUnknown=true;FOO=bar" cni ADD a1 "$CR"
is "$rc" 0 "IgnoreUnknown=true lets it pass"
ARGS="IP=10.58.0.9" cni ADD ip1 "$CR"
is "$rc:$(q "[i['address'] for i in d['ips']]")" '0:["10.58.0.9/28", "fd00:58::2/124"]' "IP=10.58.0.9: that address (the IPv6 set allocates as usual)"
ARGS="IP=10.58.0.9" cni ADD ip1 "$CR"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.58.0.9/28" "the same ADD again: the same address"
ARGS="IP=fd00:58::9" cni ADD ip2 "$CR"
is "$rc:$(q "[i['address'] for i in d['ips']]")" '0:["10.58.0.3/28", "fd00:58::9/124"]' "IP= an IPv6 address: that one for the IPv6 set"
ARGS="IP=10.58.0.9" cni ADD ip3 "$CR"
is "$rc:$(q "[d['code'], d['details']]")" '1:[112, "IP=10.58.0.9 in CNI_ARGS: claimed by ip1:net1"]' "an address another attachment holds: code 112, naming it"
ARGS="IP=10.58.0.1" cni ADD ip3 "$CR"
like "$rc:$(q "[d['code'], d['details']]")" '^1:\[112, "IP=10.58.0.1 in CNI_ARGS: 10.58.0.0/28 does not hand it out' "the gateway: code 112"
ARGS="IP=10.99.0.1" cni ADD ip3 "$CR"
is "$rc:$(q "[d['code'], d['details']]")" '1:[112, "IP=10.99.0.1 in CNI_ARGS lies in no range of network rdma-net"]' "an address in no range: code 112"
ARGS="IP=10.58.0.10" cni ADD ip1 "$CR"
is "$rc:$(q "[d['code'], d['details']]")" '1:[112, "IP=10.58.0.10 in CNI_ARGS: attachment ip1:net1 already holds 10.58.0.9"]' \
	"an attachment asking for another address than the one it holds: refused"
ARGS="IP=10.58.0.10/28" cni ADD ip3 "$CR"
is "$rc:$(q "d['code']")" "1:4" "IP= with a prefix length: code 4"
is "$(ls "$DATA/pools/10.58.0.0_28" | sort | tr '\n' ' ')" "10.58.0.2 10.58.0.3 10.58.0.9 " "the refused ADDs claimed nothing"
ARGS="" cni DEL ip1 "$CR"
ARGS="IP=10.58.0.9" cni ADD ip3 "$CR"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.58.0.9/28" "once DEL released it, another attachment gets it"

# under the reference macvlan plugin (what Multus runs), in throwaway namespaces
if [ -x /usr/lib/cni/macvlan ] && ip netns add "rdmak-t-$$-host" 2>/dev/null; then
	host="rdmak-t-$$-host" pod="rdmak-t-$$-pod"
	trap 'ip netns del "$host" 2>/dev/null; ip netns del "$pod" 2>/dev/null; rm -rf "$TMP"' EXIT
	ip netns add "$pod"
	ip -n "$host" link add eth9 type veth peer name eth9p
	ip -n "$host" link set eth9 up
	mkdir -p "$TMP/cnipath" && ln -s /usr/lib/cni/macvlan "$TMP/cnipath/macvlan" && ln -s "$(readlink -f "$BUILD/rdmak")" "$TMP/cnipath/rdmak-ipam"
	macvlan() { # macvlan COMMAND [PREVRESULT-FILE]: the reference plugin, delegating to rdmak-ipam
		conf 1.0.0 '"range":"10.80.0.0/24","gateway":"10.80.0.1"' >"$TMP/mv.json"
		[ -z "${2:-}" ] || "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["prevResult"]=json.load(open(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))' "$TMP/mv.json" "$2"
		run ip netns exec "$host" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND="$1" CNI_CONTAINERID=mv1 CNI_NETNS="/run/netns/$pod" \
			CNI_IFNAME=net1 CNI_PATH="$TMP/cnipath" CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=mv" \
			/usr/lib/cni/macvlan <"$TMP/mv.json"
		printf '%s' "$out" >"$TMP/out.json"
	}
	macvlan ADD
	is "$rc" 0 "macvlan + rdmak-ipam: ADD exits 0"
	[ "$rc" -eq 0 ] || printf '%s\n' "$out" "$err" | sed 's/^/# /'
	is "$(q "[d['ips'][0]['address'], d['ips'][0]['interface']]")" '["10.80.0.2/24", 0]' "macvlan's result carries rdmak-ipam's address"
	like "$(ip -n "$pod" -4 addr show dev net1)" "inet 10.80.0.2/24" "the address is on the pod's interface"
	cp "$TMP/out.json" "$TMP/add.json"
	macvlan CHECK "$TMP/add.json"
	is "$rc" 0 "macvlan + rdmak-ipam: CHECK (macvlan passes it to the IPAM)"
	macvlan DEL "$TMP/add.json"
	is "$rc" 0 "macvlan + rdmak-ipam: DEL exits 0"
	is "$(ls "$DATA/pools/10.80.0.0_24" 2>/dev/null | wc -l)" 0 "DEL through macvlan released the address"
else
	skip "no /usr/lib/cni/macvlan or no netns here" "macvlan + rdmak-ipam"
fi
done_testing
