#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a network config (a namespace user's NetworkAttachmentDefinition) can make rdmak-cni do
# as root, tried as a hostile user would (docs/cni.md, "What it trusts"): choose the sysfs root
# it finds devices through (a tree of its own naming the node's interface as its VF), the
# folder it keeps and reads attachment records in, the file it appends log lines to. Each is
# refused by name, with what to write instead, and nothing moves or is written; the node's own
# settings ($RDMAK_CNI_CONFIG) say which root and folders a network may name.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "what a network config may name of the node's"
	done_testing
	exit
fi
cni_topology 1
cni_vfs 1
POD=$(cni_pod pod)
P=$(pns "$POD")
N="$TMP/node" ELSE="$TMP/elsewhere"
mkdir -p "$N/state" "$N/log" "$ELSE"
# the node's settings: its folders under $N, its sysfs the real one; nothing of $ELSE
printf '{"stateDir":"%s","logDir":"%s","dataDirs":["%s"]}' "$N/state" "$N/log" "$N/data" >"$TMP/cni-node.json"
# the node's own interface, which a network must never get
ip -n "$HOST_NS" link add decoy type veth peer name decoy-peer
ip -n "$HOST_NS" link set decoy up

host_has() { ip -n "$HOST_NS" link show "$1" >/dev/null 2>&1; }
pod_links() { ip -n "$P" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort | tr '\n' ' '; }
hostdev() { echo "{\"cniVersion\":\"1.0.0\",\"name\":\"trust\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"policyRouting\":false,$1}"; }
macvlan() { echo "{\"cniVersion\":\"1.0.0\",\"name\":\"trust\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"policyRouting\":false,$1}"; }

# ---- sysfs: the node's root, never a network's --------------------------------------------------
# a user's tree (a pod's volume on the host would do) in which PCI function 0000:3b:00.2's
# netdev is the node's own interface
S="$ELSE/sys" DEV=devices/pci0000:3a/0000:3a:00.0 bdf=0000:3b:00.2
mkdir -p "$S/$DEV/$bdf/net/decoy" "$S/bus/pci/devices" "$S/class/net"
echo 0x020000 >"$S/$DEV/$bdf/class"
ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
ln -s "../../$DEV/$bdf/net/decoy" "$S/class/net/decoy"
ln -s "../../../$bdf" "$S/$DEV/$bdf/net/decoy/device"
cni ADD s1 net1 "$POD" "$(hostdev "\"deviceID\":\"$bdf\",\"sysfs\":\"$S\"")"
is "$rc/$(jout 'd["code"]')" "1/7" "a sysfs root of the network's: refused (code 7)"
like "$(jout 'd["details"]')" "^sysfs: $S is not the node's sysfs root \(/sys, $TMP/cni-node.json \"sysfs\"\).*remove the key" \
	"... naming it, the node's root and what to write instead"
host_has decoy; ok $? "... and the node's interface the tree named stays on the host"
is "$(pod_links)" "lo " "... nothing moved into the pod"
cni DEL s1 net1 "$POD" "$(hostdev "\"deviceID\":\"$bdf\",\"sysfs\":\"$S\"")"
is "$rc" 0 "DEL with it (the config of an earlier ADD): exits 0"
like "$err" "warning: sysfs: $S is not the node's sysfs root: /sys is used" "... warning that the node's root is used"
host_has decoy; ok $? "... the node's interface untouched"

# ---- stateDir: beneath the node's, never through a link ----------------------------------------
cni ADD t1 net1 "$POD" "$(hostdev "\"device\":\"vf10\",\"stateDir\":\"$ELSE/state\"")"
is "$rc/$(jout 'd["code"]')" "1/7" "a stateDir outside the node's: refused (code 7)"
like "$(jout 'd["details"]')" "^stateDir: $ELSE/state is not the node's stateDir nor a folder beneath it \($N/state, .*remove the key, or name a folder beneath $N/state" \
	"... naming it and what to write instead"
[ ! -e "$ELSE/state" ]; ok $? "... no record written there"
host_has vf10; ok $? "... the device stays on the host"
# DEL reads what a record says and gives back what it names: a record in a user's folder would
# name another pod's device, so DEL refuses the folder too
mkdir -p "$ELSE/state/trust"
cni DEL t1 net1 "$POD" "$(hostdev "\"device\":\"vf10\",\"stateDir\":\"$ELSE/state\"")"
is "$rc/$(jout 'd["code"]')" "1/7" "DEL with a stateDir outside the node's: refused too"
ln -s "$ELSE" "$N/state/link"
cni ADD t2 net1 "$POD" "$(hostdev "\"device\":\"vf10\",\"stateDir\":\"$N/state/link/x\"")"
like "$rc/$(jout 'd["code"]'): $(jout 'd["details"]')" "^1/7: stateDir: $N/state/link is a symbolic link: refused" \
	"a stateDir through a symbolic link beneath the node's: refused by name"
[ ! -e "$ELSE/x" ]; ok $? "... nothing written where it points"
host_has vf10; ok $? "... the device stays on the host"
cni ADD t3 net1 "$POD" "$(hostdev "\"device\":\"vf10\",\"stateDir\":\"$N/state/tenant-a\"")"
is "$rc" 0 "a stateDir beneath the node's: ADD exits 0"
[ -f "$N/state/tenant-a/trust/t3:net1" ]; ok $? "... its record there"
cni DEL t3 net1 "$POD" "$(hostdev "\"device\":\"vf10\",\"stateDir\":\"$N/state/tenant-a\"")"
is "$rc" 0 "... and DEL gives the device back"
cni ADD t4 net1 "$POD" "$(hostdev "\"device\":\"vf10\"")"
is "$rc" 0 "no stateDir: ADD exits 0"
[ -f "$N/state/trust/t4:net1" ]; ok $? "... its record in the node's stateDir"
cni DEL t4 net1 "$POD" "$(hostdev "\"device\":\"vf10\"")"
is "$rc" 0 "... and DEL gives the device back"

# ---- logFile: beneath the node's logDir ---------------------------------------------------------
printf 'untouched\n' >"$ELSE/victim"
cni ADD g1 net1 "$POD" "$(macvlan "\"logFile\":\"$ELSE/victim\"")"
is "$rc/$(jout 'd["code"]')" "1/7" "a logFile outside the node's logDir: refused (code 7)"
like "$(jout 'd["details"]')" "^logFile: $ELSE/victim is not beneath the node's logDir \($N/log, .*write \"$N/log/victim\", or leave the key out" \
	"... naming it and what to write instead"
is "$(cat "$ELSE/victim")" "untouched" "... not a line appended to the file it named"
is "$(pod_links)" "lo " "... nothing made in the pod"
cni DEL g1 net1 "$POD" "$(macvlan "\"logFile\":\"$ELSE/victim\"")"
is "$rc" 0 "DEL with it: exits 0"
like "$err" "warning: logFile: $ELSE/victim is not beneath the node's logDir .*stderr only" "... warning that it is not written"
is "$(cat "$ELSE/victim")" "untouched" "... and not written"
ln -s "$ELSE" "$N/log/link"
cni ADD g2 net1 "$POD" "$(macvlan "\"logFile\":\"$N/log/link/victim\"")"
like "$rc/$(jout 'd["code"]'): $(jout 'd["details"]')" "^1/7: logFile: $N/log/link is a symbolic link: refused" \
	"a logFile through a link beneath the logDir: refused by name"
is "$(cat "$ELSE/victim")" "untouched" "... not written"
cni ADD g3 net1 "$POD" "$(macvlan "\"logFile\":\"$N/log/cni.log\"")"
is "$rc" 0 "a logFile beneath the node's logDir: ADD exits 0"
like "$(cat "$N/log/cni.log" 2>/dev/null)" "rdmak-cni ADD g3/net1" "... its lines there"
cni DEL g3 net1 "$POD" "$(macvlan "\"logFile\":\"$N/log/cni.log\"")"
is "$rc" 0 "... DEL exits 0"

done_testing
