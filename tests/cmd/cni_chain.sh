#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni's rdma link: rdma-cni's role after another plugin in a conflist (docs/cni.md,
# "Migrating from rdma-cni"). A veth moved into the pod stands in for the interface the
# previous plugin made, a sysfs tree gives its PCI function an RDMA device, and the plugin runs
# directly (ADD with a prevResult, DEL, CHECK, GC, STATUS) and through libcni with real
# conflists whose first plugin is Debian's host-device or macvlan, or rdmak-cni itself (the
# rdma-cni fixture's sriov + rdma with only the types changed). This kernel has no RDMA
# subsystem: the move itself is refused by the kernel there (code 102 naming the device found),
# and what only a kernel with RDMA in exclusive mode can answer is skipped by name. The RDMA
# netlink requests themselves are checked byte by byte in tests/unit/test_nl.c.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni's rdma link"
	done_testing
	exit
fi
cni_topology 1
cni_vfs 2
POD=$(cni_pod pod)
P=$(pns "$POD")
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
RDMA_KERNEL=
ip netns exec "$HOST_NS" rdma system >/dev/null 2>&1 && RDMA_KERNEL=1

# mkfn BDF NETDEV [RDMA...]: one PCI function with its netdev and RDMA devices, as sysfs shows it
mkfn() {
	local bdf=$1 nd=$2 d="$S/$DEV/$1" rdma
	shift 2
	mkdir -p "$d/net/$nd" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core" "$S/class/infiniband"
	echo 0x020000 >"$d/class"
	ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
	ln -s "../../$DEV/$bdf/net/$nd" "$S/class/net/$nd"
	ln -s "../../../$bdf" "$d/net/$nd/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
	for rdma in "$@"; do
		mkdir -p "$d/infiniband/$rdma"
		ln -s "../../$DEV/$bdf/infiniband/$rdma" "$S/class/infiniband/$rdma"
	done
}
mkfn 0000:3b:00.2 vf10 mlx5_2
mkfn 0000:3b:00.3 vf11 mlx5_3
mkfn 0000:3b:00.4 eth4
mkfn 0000:3b:00.5 eth5 mlx5_5 mlx5_15

# conf KEYS [VERSION]: the rdma link's config as rdma-cni's place in a chain holds it, plus KEYS
conf() {
	echo "{\"cniVersion\":\"${2:-1.0.0}\",\"name\":\"chain\",\"type\":\"rdmak-cni\",\"sysfs\":\"$S\",\"stateDir\":\"$TMP/state\"${1:+,$1}}"
}
# prev IFNAME: the prevResult the previous plugin gave for IFNAME in the pod
prev() {
	echo "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"$1\",\"mac\":\"$(ip -n "$P" -j link show "$1" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])' 2>/dev/null)\",\"sandbox\":\"$POD\"}],\"ips\":[{\"address\":\"172.16.21.50/24\",\"interface\":0}]}"
}
# refused CODE REGEX DESC CMD IFNAME CONF: refused with CODE saying REGEX, nothing changed
refused() {
	local code=$1 re=$2 desc=$3 before
	before=$(snap_all "$POD")
	cni "$4" c1 "$5" "$POD" "$6"
	is "$rc/$(jout 'd["code"]')" "1/$code" "$desc: code $code"
	like "$(jout 'd["msg"] + ": " + d["details"]')" "$re" "$desc: says why"
	is "$(snap_all "$POD")" "$before" "$desc: nothing changed, no record"
}

# the previous plugin's part, by hand: vf10 (PCI 0000:3b:00.2 in the sysfs tree) into the pod as net1
ip -n "$HOST_NS" link set vf10 netns "$P"
ip -n "$P" link set vf10 name net1
ip -n "$P" link set net1 up
PREV=$(prev net1)

# ---- ADD: the device found, then the kernel asked ------------------------------------------------
c=$(prev_conf "$(conf '"deviceID":"0000:3b:00.2"')" "$PREV")
if [ -z "$RDMA_KERNEL" ]; then
	refused 102 "this kernel has no RDMA subsystem.*\(moving mlx5_2, the RDMA device of net1, PCI 0000:3b:00.2, into the pod\)" \
		"deviceID as Multus writes it, after the plugin that made net1" ADD net1 "$c"
else
	skip "needs an RDMA device mlx5_2 of PCI 0000:3b:00.2 in exclusive mode (this kernel has RDMA: the sysfs tree's device is not real)" \
		"the move of net1's RDMA device"
fi
# rdma-cni's own config: {"type": "rdma"}, "args": {"cni": {"debug": true}} and nothing else
c=$(prev_conf "$(conf '"args":{"cni":{"debug":true}}')" "$PREV")
refused 101 "no PCI function.*net1 in the pod \(a virtual netdev, or a kernel before 5.16 without IFLA_PARENT_DEV_NAME\) and the configuration has no deviceID" \
	"rdma-cni's config after a veth (the kernel names no PCI function for it)" ADD net1 "$c"
like "$err" "DEBUG|debug" "rdma-cni's args.cni.debug: debug lines on stderr"
refused 102 "no RDMA device: net1 \(PCI 0000:3b:00.4\) has no RDMA device under .*/bus/pci/devices/0000:3b:00.4/infiniband" \
	"a function without an RDMA device" ADD net1 "$(prev_conf "$(conf '"deviceID":"0000:3b:00.4"')" "$PREV")"
refused 102 "PCI 0000:3b:00.5 has 2 RDMA devices \(mlx5_15, mlx5_5\).*discovered more than one RDMA device" \
	"a function with two RDMA devices" ADD net1 "$(prev_conf "$(conf '"link":"rdma","deviceID":"0000:3b:00.5"')" "$PREV")"
refused 7 "prevResult: missing: the rdma link runs after the plugin that makes the interface.*RDMA-CNI is expected to be called as part of a plugin chain" \
	"rdma-cni's config alone (no prevResult)" ADD net1 "$(conf)"
refused 101 "prevResult lists no interface net2 in a sandbox" "an ifname the previous plugin did not make" ADD net2 \
	"$(prev_conf "$(conf)" "$PREV")"
refused 101 "prevResult lists net3 in the sandbox, the pod's namespace has no such link" "an interface gone from the pod" ADD net3 \
	"$(prev_conf "$(conf '"deviceID":"0000:3b:00.2"')" "$(prev net3)")"
ip -n "$HOST_NS" link add net4 link rdma0 type macvlan mode bridge
ip -n "$HOST_NS" link set net4 netns "$P"
refused 102 "net4 is a macvlan link: it shares its parent's RDMA device" "a macvlan child (its RDMA device is its master's)" ADD net4 \
	"$(prev_conf "$(conf '"deviceID":"0000:3b:00.2"')" "$(prev net4)")"
ip -n "$P" link del net4
cni ADD c1 net1 "$POD" "$(prev_conf "$(conf '"deviceID":"0000:3b:00.3"')" "$PREV")"
like "$rc/$(jout 'd["code"]')" "^1/(101|102)$" "a deviceID that is not the interface's own: refused (101 where the kernel names net1's function, else 102 for vf11's device)"
# deviceID alone without a prevResult is sriov-cni's shape: hostdev, not the rdma link
cni ADD c9 net9 "$POD" "$(conf '"deviceID":"0000:3b:00.3"')"
is "$rc" 0 "deviceID alone with no prevResult: hostdev moves vf11 (sriov-cni's config as Multus passes it)"
cni DEL c9 net9 "$POD" "$(conf '"deviceID":"0000:3b:00.3"')"
is "$rc" 0 "... and DEL gives it back"
ok "$(ip -n "$HOST_NS" link show vf11 >/dev/null 2>&1; echo $?)" "vf11 on the host again"

# ---- DEL, CHECK, GC, STATUS -----------------------------------------------------------------------
before=$(snap_all "$POD")
cni DEL c1 net1 "$POD" "$(prev_conf "$(conf)" "$PREV")"
is "$rc" 0 "DEL without a record (ADD moved nothing): success, as rdma-cni"
cni DEL c1 net1 "" "$(conf)"
is "$rc" 0 "DEL without a namespace: success"
cni CHECK c1 net1 "$POD" "$(prev_conf "$(conf '"link":"rdma"')" "$PREV")"
is "$(jout 'd["code"]')/$(jout 'd["details"]')" "110/no record of attachment c1:net1: the rdma link moved no RDMA device" \
	"CHECK without a record: code 110 (rdma-cni's CHECK checks nothing)"
is "$(snap_all "$POD")" "$before" "DEL and CHECK changed nothing"

# the record ADD writes before the move (the move is what this kernel cannot do)
record() {
	mkdir -p "$TMP/state/chain"
	printf '{"guidOrig":"0000000000000000","guidSet":false,"hostIfindex":7,"hostMac":"","hostMtu":0,"hostName":"net1","hostUp":false,"netns":"%s","pci":"0000:3b:00.2","pf":"","rdmaDevice":"mlx5_2","rdmaMoved":true,"vfIndex":-1}' \
		"$2" >"$TMP/state/chain/$1:net1:rdma"
}
record c2 "$POD"
if [ -z "$RDMA_KERNEL" ]; then
	# deviceID alone: the record says ADD took the rdma link's role (libcni sends DEL to both
	# plugins of the chain with the same prevResult, or none before 0.4.0)
	cni DEL c2 net1 "$POD" "$(conf '"deviceID":"0000:3b:00.2"' 0.3.1)"
	is "$rc/$(jout 'd["code"]')" "1/102" "DEL with a record: the move back is tried (refused here: no RDMA subsystem), DEL fails for the runtime to retry"
	like "$(jout 'd["msg"] + ": " + d["details"]')" "RDMA netlink" "... naming RDMA netlink"
	ok "$([ -f "$TMP/state/chain/c2:net1:rdma" ]; echo $?)" "... and the record is kept"
	cni CHECK c2 net1 "$POD" "$(prev_conf "$(conf)" "$PREV")"
	is "$rc/$(jout 'd["code"]')" "1/102" "CHECK with a record asks RDMA netlink where the device is (refused here)"
else
	skip "needs mlx5_2 to exist (the sysfs tree's device is not real)" "DEL moving the recorded device back"
fi
cni DEL c2 net1 "/run/netns/$CNI_TAG-gone" "$(conf)"
is "$rc" 0 "DEL after the pod's namespace is gone: the kernel gave its RDMA devices back"
ok "$([ ! -e "$TMP/state/chain/c2:net1:rdma" ]; echo $?)" "... and the record is removed"
record c3 "/run/netns/$CNI_TAG-gone"
record c4 "/run/netns/$CNI_TAG-gone"
cni GC "" "" "" "$(conf '"link":"rdma","cni.dev/valid-attachments":[{"containerID":"c4","ifname":"net1"}]' 1.1.0)"
is "$rc" 0 "GC"
is "$(ls "$TMP/state/chain")" "c4:net1:rdma" "GC removed the record of the attachment that is gone, kept the valid one"
rm -f "$TMP/state/chain/c4:net1:rdma"
cni STATUS "" "" "" "$(conf '"link":"rdma"' 1.1.0)"
if [ -z "$RDMA_KERNEL" ]; then
	is "$(jout 'd["code"]')" 50 "STATUS where RDMA devices cannot move: code 50"
else
	skip "the answer depends on this kernel's netns mode" "STATUS"
fi
ip -n "$P" link set net1 down
ip -n "$P" link set net1 netns "$HOST_NS"
ip -n "$HOST_NS" link set net1 name vf10

# ---- through libcni, with real first plugins -----------------------------------------------------
why=$(cni_requirements)
if [ -n "$why" ]; then
	skip "$why" "conflists through libcni"
	done_testing
	exit
fi
static() { echo "{\"type\":\"static\",\"addresses\":[{\"address\":\"$1/24\",\"gateway\":\"$2\"}]}"; }
# chain DESC CODE REGEX FILE [AFTER-DEL]: ADD of the conflist FILE refused by its rdma link with
# CODE (the first plugin's interface then in the pod, as libcni leaves it), DEL puts all back
# (AFTER-DEL: a command for what the first plugin's own DEL does not restore)
chain() {
	local desc=$1 code=$2 re=$3 f=$4 before
	before=$(snap_all "$POD")
	drv add --conf "$f" --ifname net1 --netns "$POD" --id l1
	is "$rc/$(jout 'd["code"]')" "1/$code" "$desc: ADD refused by the rdma link with code $code"
	like "$(jout 'd["msg"] + ": " + d.get("details", "")')" "$re" "$desc: says why"
	ok "$(ip -n "$P" link show net1 >/dev/null 2>&1; echo $?)" "$desc: the first plugin's net1 in the pod"
	drv del --conf "$f" --ifname net1 --netns "$POD" --id l1
	is "$rc" 0 "$desc: DEL of the list"
	[ -z "${5:-}" ] || eval "$5"
	is "$(snap_all "$POD")" "$before" "$desc: host, pod and records as before"
}
f="$TMP/hd.conflist"
cat >"$f" <<EOF
{"cniVersion":"1.0.0","name":"hd","plugins":[
 {"type":"host-device","device":"vf11","ipam":$(static 172.16.22.50 172.16.22.254)},
 {"type":"rdmak-cni","deviceID":"0000:3b:00.3","sysfs":"$S","stateDir":"$TMP/state"}]}
EOF
if [ -z "$RDMA_KERNEL" ]; then
	chain "host-device then rdmak-cni (deviceID as Multus writes it)" 102 \
		"this kernel has no RDMA subsystem.*moving mlx5_3, the RDMA device of net1, PCI 0000:3b:00.3" "$f" \
		'ip -n "$HOST_NS" link set vf11 up' # host-device 1.1.1 gives the device back down
else
	skip "needs mlx5_3 to exist (the sysfs tree's device is not real)" "host-device then rdmak-cni"
fi
f="$TMP/mv.conflist"
cat >"$f" <<EOF
{"cniVersion":"1.0.0","name":"mv","plugins":[
 {"type":"macvlan","master":"rdma0","ipam":$(static 172.16.11.50 172.16.11.254)},
 {"type":"rdmak-cni","sysfs":"$S","stateDir":"$TMP/state"}]}
EOF
chain "macvlan then rdmak-cni" 102 "net1 is a macvlan link: it shares its parent's RDMA device" "$f"
# the rdma-cni fixture, sriov then rdma, with both types rdmak-cni and what SOURCES.md substitutes
"$PY" - "$TOP/tests/fixtures/anchors/cni/rdma-cni-chained.conflist" "$S" "$TMP/state" >"$TMP/fx.conflist" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
for p in c["plugins"]:
    p["type"] = "rdmak-cni"
    # Multus writes the device plugin's allocation into every plugin of the list
    p.update(deviceID="0000:3b:00.2", sysfs=sys.argv[2], stateDir=sys.argv[3])
c["plugins"][0]["ipam"] = {"type": "static", "addresses": [{"address": "172.16.21.50/24", "gateway": "172.16.21.254"}]}
print(json.dumps(c))
EOF
if [ -z "$RDMA_KERNEL" ]; then
	chain "rdma-cni's published conflist with both types rdmak-cni" 102 \
		"this kernel has no RDMA subsystem.*moving mlx5_2, the RDMA device of net1, PCI 0000:3b:00.2" "$TMP/fx.conflist"
else
	skip "needs mlx5_2 to exist (the sysfs tree's device is not real)" "rdma-cni's published conflist"
fi
done_testing
