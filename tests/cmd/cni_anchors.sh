#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The anchors' published CNI configs (tests/fixtures/anchors/cni, SOURCES.md) through rdmak-cni
# with only `type` changed: each either works (ADD, CHECK, DEL, and the host and pod as they
# were) or is refused with the code and reason docs/cni.md gives for it. Only what SOURCES.md
# lists is substituted: device names and PCI addresses become this topology's (a veth rail for
# a master, a veth VF stand-in found through a test sysfs tree for deviceID/pciBusID), an ipam
# becomes a static address on that rail, a missing name is added as Multus adds it, and
# stateDir/sysfs point into the test's directory. CHECK runs with cniVersion 0.4.0 when the
# config says less (CHECK does not exist before 0.4.0; libcni never calls it there).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "the anchors' CNI configs through rdmak-cni"
	done_testing
	exit
fi
cni_topology 1
cni_vfs 2
POD=$(cni_pod pod)
FX="$TOP/tests/fixtures/anchors/cni"
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
# the function every deviceID/pciBusID of the fixtures becomes: vf10's, as sysfs shows it
d="$S/$DEV/0000:3b:00.2"
mkdir -p "$d/net/vf10" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core"
echo 0x020000 >"$d/class"
ln -s "../../../$DEV/0000:3b:00.2" "$S/bus/pci/devices/0000:3b:00.2"
ln -s "../../$DEV/0000:3b:00.2/net/vf10" "$S/class/net/vf10"
ln -s "../../../0000:3b:00.2" "$d/net/vf10/device"
ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
# ... and it is VF 0 of a PF whose netdev is pf0 (a veth: the kernel gives it no SR-IOV, so the
# VF settings go either to the kernel, which refuses them, or to the PF stand-in, test-only)
ip -n "$HOST_NS" link add pf0 type veth peer name pf0p
p="$S/$DEV/0000:3b:00.0"
mkdir -p "$p/net/pf0"
echo 0x020000 >"$p/class"
ln -s "../../../$DEV/0000:3b:00.0" "$S/bus/pci/devices/0000:3b:00.0"
ln -s "../../$DEV/0000:3b:00.0/net/pf0" "$S/class/net/pf0"
ln -s ../../../0000:3b:00.0 "$p/net/pf0/device"
ln -s ../0000:3b:00.0 "$d/physfn"
ln -s ../0000:3b:00.2 "$p/virtfn0"
mkdir -p "$TMP/standin"
"$PY" "$TOP/tests/lib/vf-netlink.py" answer "$TMP/standin/vfinfo" "$(ip -n "$HOST_NS" -o link show pf0 | cut -d: -f1)"
SI="RDMAK_TEST_VF_STANDIN=$TMP/standin"

# adapt FILE: the fixture with type rdmak-cni and SOURCES.md's substitutions, on one line
adapt() {
	"$PY" - "$1" "$S" "$TMP/state" <<'EOF'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["type"] = "rdmak-cni"
c.setdefault("name", "anchor")
c["stateDir"] = sys.argv[3]
# ADAPT_LOGDIR: a logFile moved beneath the node's logDir (docs/cni.md, "What it trusts")
if "logFile" in c and os.environ.get("ADAPT_LOGDIR"):
    c["logFile"] = os.path.join(os.environ["ADAPT_LOGDIR"], os.path.basename(c["logFile"]))
static = lambda a, g: {"type": "static", "addresses": [{"address": a, "gateway": g}]}
if "master" in c:
    c["master"] = "rdma0"
    ipam = static("172.16.11.50/24", "172.16.11.254")
elif "device" in c:
    c["device"] = "vf11"
    ipam = static("172.16.22.50/24", "172.16.22.254")
else:
    for k in ("deviceID", "pciBusID"):
        if k in c:
            c[k] = "0000:3b:00.2"
    c["sysfs"] = sys.argv[2]
    ipam = static("172.16.21.50/24", "172.16.21.254")
if "ipam" in c:
    c["ipam"] = ipam
print(json.dumps(c))
EOF
}
# with_version CONF VERSION: CONF with cniVersion set
with_version() {
	"$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); c["cniVersion"]=sys.argv[2]; print(json.dumps(c))' "$1" "$2"
}

works=0 total=0
# works FIXTURE [WARNED-REGEX] [ENV]: ADD, CHECK, DEL with only type changed; nothing left behind
works() {
	local f=$1 warned=${2:-} env=${3:-} c before
	total=$((total + 1))
	c=$(adapt "$FX/$f")
	before=$(snap_all "$POD")
	cni ADD a1 net1 "$POD" "$c" ${env:+"$env"}
	is "$rc" 0 "$f: ADD with only type changed"
	[ "$rc" -eq 0 ] || { echo "#   $out $err"; return; }
	[ -z "$warned" ] || like "$err" "$warned" "$f: the keys accepted and not applied are named on stderr"
	local res=$out
	cni CHECK a1 net1 "$POD" "$(prev_conf "$(with_version "$c" 0.4.0)" "$res")" ${env:+"$env"}
	is "$rc" 0 "$f: CHECK"
	cni DEL a1 net1 "$POD" "$(prev_conf "$c" "$res")" ${env:+"$env"}
	is "$rc" 0 "$f: DEL"
	is "$(snap_all "$POD")" "$before" "$f: host, pod and records as before ADD"
	[ "$rc" -eq 0 ] && works=$((works + 1))
}
# refused FIXTURE CODE REGEX: refused, naming why, nothing changed
refused() {
	local f=$1 code=$2 re=$3 before
	total=$((total + 1))
	before=$(snap_all "$POD")
	cni ADD a1 net1 "$POD" "$(adapt "$FX/$f")"
	is "$rc/$(jout 'd["code"]')" "1/$code" "$f: refused with code $code"
	like "$(jout 'd["msg"] + " | " + d.get("details", "")')" "$re" "$f: the refusal says $re"
	is "$(snap_all "$POD")" "$before" "$f: nothing changed"
}

works macvlan-openshift.json
works macvlan-openshift-linkincontainer.json "linkInContainer: accepted: false"
works ib-sriov-readme-infiniband.json
works host-device-readme-device.json
works host-device-readme-pcibusid.json
works host-device-openshift.json
# libcni reads a config without cniVersion as 0.1.0: refused by name, saying what to add
refused macvlan-plugins-readme.json 1 'cniVersion: missing, which libcni reads as 0.1.0.*add "cniVersion": "1.0.0"'
refused ipoib-readme.json 1 'cniVersion: missing.*add "cniVersion"'
# sriov-cni's and ib-sriov-cni's VF settings, set through the PF: this kernel's veth PF has no
# SR-IOV and is named with the settings; the PF stand-in (test-only) takes them, and DEL puts
# them back (tests/cmd/cni_hostdev_vf.sh checks each request)
for f in sriov-readme-ipam.json sriov-readme-dpdk.json sriov-readme-vf-flags.json; do
	total=$((total - 1)) # counted once, by works below
	refused "$f" 101 'PF pf0 lists no VF 0 in the kernel .* so vlan.* cannot be set through it'
	works "$f" "" "$SI"
done
# sriov-cni's documented "logFile": "/tmp/sriov.log": root appends only beneath the node's logDir
# (docs/cni.md, "What it trusts": a deliberate difference), refused saying where to write it; with
# it written there, the config works as the others
refused sriov-docs-all-fields.json 7 "logFile: /tmp/sriov.log is not beneath the node's logDir \\($TMP, .*write \"$TMP/sriov.log\""
total=$((total - 1))
ADAPT_LOGDIR=$TMP refused sriov-docs-all-fields.json 101 'PF pf0 lists no VF 0 in the kernel .* so vlan.* cannot be set through it'
ADAPT_LOGDIR=$TMP works sriov-docs-all-fields.json "" "$SI"
works=$((works - 1)) # with a key changed besides type
# ib-sriov-cni's README: link_state is taken now; its rdmaIsolation needs the VF's RDMA device,
# which this test tree does not give it
refused ib-sriov-readme.json 102 'rdmaIsolation: no RDMA device'
# rdma-cni's config is the rdma link, which runs after another plugin: alone (no prevResult) it
# is refused as rdma-cni refuses it. After a plugin, and the sriov + rdma conflist through libcni,
# are tests/cmd/cni_chain.sh's: the move needs a kernel with RDMA in exclusive mode
refused rdma-cni-readme.json 7 'prevResult \| missing: the rdma link runs after the plugin that makes the interface.*RDMA-CNI is expected to be called as part of a plugin chain'
total=$((total + 1))
echo "# $works of $total anchor configs work with only type changed here (the VF settings through the PF stand-in; the rdma-cni conflist runs in cni_chain.sh, refused there by this kernel: no RDMA subsystem)"
is "$works" 9 "9 of the configs work with only type changed (sriov-cni's logFile in /tmp is the node's to allow)"
done_testing
