#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni link hostdev run directly: a VF stand-in (a veth end in the host netns) moved into
# the pod by name and by PCI function (deviceID, runtimeConfig.deviceID) found through a test
# sysfs tree laid out as the kernel does (examples/nodes/cx5-roce-sriov: devices/pci.../<bdf>
# with net/, infiniband/, driver, physfn/virtfnN; bus/pci/devices and class/net links), back on
# DEL under its name with its MAC, MTU and up state; the VF the kernel gives back when a pod's
# netns dies (renamed dev<N>), given back by DEL without a netns and by GC; and the refusals:
# an IB GUID on a PF that cannot set one, rdmaIsolation without RDMA, the host's default route,
# a function without a netdev. Each failed ADD leaves host, pod and records as they were.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni hostdev in network namespaces"
	done_testing
	exit
fi
cni_topology 0
cni_vfs 3
POD=$(cni_pod pod)
P=$(pns "$POD")
ip -n "$HOST_NS" link add pf0 type veth peer name pf0p
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0

# mkfn BDF NETDEV [RDMA]: one PCI function with its netdev (and RDMA device), as sysfs shows it
mkfn() {
	local bdf=$1 nd=$2 rdma=${3:-} d="$S/$DEV/$1"
	mkdir -p "$d/net/$nd" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core" "$S/class/infiniband"
	echo 0x020000 >"$d/class"
	ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
	ln -s "../../$DEV/$bdf/net/$nd" "$S/class/net/$nd"
	ln -s "../../../$bdf" "$d/net/$nd/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
	if [ -n "$rdma" ]; then
		mkdir -p "$d/infiniband/$rdma"
		ln -s "../../$DEV/$bdf/infiniband/$rdma" "$S/class/infiniband/$rdma"
	fi
}
# vfof PF VF INDEX: the SR-IOV links between them
vfof() {
	ln -s "../$1" "$S/$DEV/$2/physfn"
	ln -s "../$2" "$S/$DEV/$1/virtfn$3"
}
# rename_fn BDF OLD NEW: what sysfs shows when the netdev of BDF is renamed on the host
rename_fn() {
	mv "$S/$DEV/$1/net/$2" "$S/$DEV/$1/net/$3"
	rm "$S/class/net/$2"
	ln -s "../../$DEV/$1/net/$3" "$S/class/net/$3"
}
mkfn 0000:3b:00.0 pf0 mlx5_0
mkfn 0000:3b:00.2 vf10 mlx5_2
mkfn 0000:3b:00.3 vf12 mlx5_3
vfof 0000:3b:00.0 0000:3b:00.2 0
vfof 0000:3b:00.0 0000:3b:00.3 1
# a mac on a VF is set through its PF too (sriov-cni's admin MAC): the PF stand-in answers for
# pf0, which as a veth has no SR-IOV (tests/cmd/cni_hostdev_vf.sh checks those requests)
SD="$TMP/standin"
mkdir -p "$SD"
"$PY" "$TOP/tests/lib/vf-netlink.py" answer "$SD/vfinfo" "$(ip -n "$HOST_NS" -o link show pf0 | cut -d: -f1)"
SI="RDMAK_TEST_VF_STANDIN=$SD"
mkdir -p "$S/$DEV/0000:3b:00.4" && ln -s "../../../$DEV/0000:3b:00.4" "$S/bus/pci/devices/0000:3b:00.4" # bound to vfio: no netdev

static() { echo "{\"type\":\"static\",\"addresses\":[{\"address\":\"$1\",\"gateway\":\"$2\"}]}"; }
conf() { # conf NAME EXTRA-KEYS [VERSION] [IPAM]
	local ipam=${4:-$(static 172.16.22.50/24 172.16.22.254)}
	echo "{\"cniVersion\":\"${3:-1.0.0}\",\"name\":\"$1\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"sysfs\":\"$S\",\"stateDir\":\"$TMP/state\",$2,\"ipam\":$ipam}" |
		sed 's/,"ipam":none//'
}
host_link() { ip -n "$HOST_NS" -o link show "$1" 2>/dev/null | sed -E 's/^[0-9]+: //; s/ link-netns.*//; s/qlen.*//'; }
records() { files_under "$TMP/state" | wc -l; }

# --- by name -----------------------------------------------------------------------------------
before=$(snap_all "$POD")
vf11=$(host_link vf11)
C=$(conf byname '"device":"vf11"')
cni ADD n1 net1 "$POD" "$C"
is "$rc" 0 "ADD hostdev by name (vf11)"
[ "$rc" -eq 0 ] || echo "#   $out"
R=$out
is "$(ip -n "$P" -o link show net1 2>/dev/null | wc -l)" 1 "vf11 is net1 in the pod"
is "$(host_link vf11)" "" "and gone from the host"
is "$(jout 'd["interfaces"][0].get("pciID")')" None "no pciID: vf11 has no PCI function in the sysfs tree"
is "$(ip netns exec "$P" ping -q -c1 -w5 -I 172.16.22.50 172.16.22.254 >/dev/null 2>&1; echo $?)" 0 "the pod reaches vf11's gateway through it"
is "$(records)" 1 "one attachment record"
is "$("$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["pod"]; print(p["mac"], *p["ips"])' "$TMP"/state/byname/*)" \
	"$(jout 'd["interfaces"][0]["mac"]') 172.16.22.50/24" "the record keeps what the pod got: its MAC and address (rdmak dra's networkData)"
cni CHECK n1 net1 "$POD" "$(prev_conf "$C" "$R")"
is "$rc" 0 "CHECK"
cni DEL n1 net1 "$POD" "$(prev_conf "$C" "$R")"
is "$rc" 0 "DEL"
is "$(host_link vf11)" "$vf11" "vf11 is back on the host: name, MTU, MAC, up as before"
is "$(snap_all "$POD")" "$before" "host, pod and records as before ADD"
cni DEL n1 net1 "$POD" "$C"
is "$rc" 0 "a second DEL succeeds"

# --- by PCI function ---------------------------------------------------------------------------
vf10=$(host_link vf10)
C=$(conf pci '"deviceID":"0000:3b:00.2","mtu":9000,"mac":"02:00:00:00:3b:02"' 1.1.0 none)
cni ADD p1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "ADD hostdev by deviceID 0000:3b:00.2 (cniVersion 1.1.0)"
[ "$rc" -eq 0 ] || echo "#   $out"
R=$out
is "$(jout '[d["interfaces"][0]["name"], d["interfaces"][0]["pciID"], d["interfaces"][0]["mac"], d["interfaces"][0]["mtu"]]')" \
	'["net1", "0000:3b:00.2", "02:00:00:00:3b:02", 9000]' "result: net1, its pciID, the MAC and MTU asked for"
like "$(ip -o -n "$P" link show net1)" "mtu 9000 .*link/ether 02:00:00:00:3b:02" "the pod's net1 has them"
is "$(host_link vf10)" "" "vf10 (the function's netdev) left the host"
cni CHECK p1 net1 "$POD" "$(prev_conf "$C" "$R")"
is "$rc" 0 "CHECK"
cni DEL p1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "DEL without prevResult"
is "$(host_link vf10)" "$vf10" "vf10 back with its own MAC and MTU"
is "$(records)" 0 "record removed"
C=$(conf pci '"capabilities":{"deviceID":true},"runtimeConfig":{"deviceID":"3b:00.2"}')
cni ADD p2 net1 "$POD" "$C"
is "$rc" 0 "ADD by runtimeConfig.deviceID (as Multus passes the device plugin's allocation), short form"
is "$(ip -n "$P" -o link show net1 2>/dev/null | wc -l)" 1 "the function's netdev is net1"
cni DEL p2 net1 "$POD" "$C"
is "$(host_link vf10)" "$vf10" "and back"

# --- the VF the kernel gives back when the pod's netns dies ------------------------------------
# A physical netdev (a VF) outlives its namespace: the kernel moves it to the initial one,
# named dev<ifindex> when its pod name is taken. A veth is destroyed instead, so the test
# does the kernel's part: move net1 back under that name (and sysfs with it), drop the pod.
kernel_returns() { # kernel_returns POD BDF NETDEV
	local idx
	idx=$(ip -n "$(pns "$1")" -o link show net1 | cut -d: -f1)
	ip -n "$(pns "$1")" link set net1 netns "$HOST_NS" name "dev$idx"
	[ -n "$2" ] && rename_fn "$2" "$3" "dev$idx"
	ip netns del "$(pns "$1")"
	echo "dev$idx"
}
gpod=$(cni_pod dies)
C=$(conf pci '"deviceID":"0000:3b:00.2"')
cni ADD k1 net1 "$gpod" "$C"
is "$rc" 0 "ADD in a pod that dies"
back=$(kernel_returns "$gpod" 0000:3b:00.2 vf10)
is "$(ip -n "$HOST_NS" -o link show "$back" | wc -l)" 1 "the kernel gave the VF back as $back"
cni DEL k1 net1 "$gpod" "$C"
is "$rc" 0 "DEL after the pod's netns is gone"
rename_fn 0000:3b:00.2 "$back" vf10
is "$(host_link vf10)" "$vf10" "vf10 is itself again (name, MAC, MTU, up)"
is "$(host_link "$back")" "" "no $back left"
is "$(records)" 0 "record removed"

# --- GC -------------------------------------------------------------------------------------
pod1=$(cni_pod gc1)
pod2=$(cni_pod gc2)
C1=$(conf vfs '"device":"vf11"' 1.1.0 none)
C2=$(conf vfs '"device":"vf12"' 1.1.0 none)
cni ADD g1 net1 "$pod1" "$C1"
is "$rc" 0 "GC setup: g1 (vf11) in a live pod"
vf12=$(host_link vf12)
cni ADD g2 net1 "$pod2" "$C2"
is "$rc" 0 "GC setup: g2 (vf12) in a pod that dies without a DEL"
back=$(kernel_returns "$pod2" 0000:3b:00.3 vf12)
is "$(records)" 2 "two records"
gc_conf() { "$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); c["cni.dev/valid-attachments"]=[{"containerID":"g1","ifname":"net1"}]; print(json.dumps(c))' "$1"; }
cni GC "" "" "" "$(gc_conf "$C1")"
is "$rc" 0 "GC with g1 valid"
[ "$rc" -eq 0 ] || echo "#   $out"
rename_fn 0000:3b:00.3 "$back" vf12
is "$(host_link vf12)" "$vf12" "GC gave g2's VF back as vf12"
is "$(records)" 1 "and removed g2's record only"
is "$(ip -n "$(pns "$pod1")" -o link show net1 | wc -l)" 1 "g1's VF stays in its pod"
cni DEL g1 net1 "$pod1" "$C1"
is "$(records)" 0 "DEL g1"

# --- temp files of ADDs killed while writing their record ---------------------------------------
# ".<id>:<ifname>.XXXXXXXX.tmp", as fileio_write_atomic_at names them: DEL of that attachment and
# GC remove those whose writer is gone, never one a live writer holds (it holds a flock, as
# here a running process does)
T="$TMP/state/vfs"
: >"$T/.k1:net1.0123abcd.tmp" && : >"$T/.k2:net1.89abcdef.tmp" && : >"$T/.k3:net1.00c0ffee.tmp"
(exec 9<>"$T/.k3:net1.00c0ffee.tmp" && flock 9 && exec sleep 300) &
holder=$!
for ((i = 0; i < 50; i++)); do flock -n "$T/.k3:net1.00c0ffee.tmp" true || break; sleep 0.1; done
temps() { (cd "$T" && ls -A | grep '\.tmp$' | tr '\n' ' '); }
cni DEL k1 net1 "" "$C1"
is "$rc" 0 "DEL of an attachment whose ADD was killed while writing its first record"
is "$(temps)" ".k2:net1.89abcdef.tmp .k3:net1.00c0ffee.tmp " "DEL removed its temp file, and only its"
cni GC "" "" "" "$(gc_conf "$C1")"
is "$rc" 0 "GC with a killed writer's temp file and a live writer's"
is "$(temps)" ".k3:net1.00c0ffee.tmp " "GC removed the killed writer's temp file, kept the live one"
kill "$holder" && wait "$holder" 2>/dev/null
cni GC "" "" "" "$(gc_conf "$C1")"
is "$(temps)" "" "its writer gone, the next GC removes it too"
is "$(records)" 0 "nothing left in the state directory"

# --- STATUS ---------------------------------------------------------------------------------------
cni STATUS "" "" "" "$(conf st '"device":"vf11"' 1.1.0 none)"
is "$rc" 0 "STATUS of a hostdev network"
cni STATUS "" "" "" "$(conf st '"deviceID":"0000:3b:00.2","rdmaIsolation":true' 1.1.0 none)"
is "$(jout 'd["code"]')" 50 "STATUS with rdmaIsolation where the kernel cannot isolate: code 50"
like "$(jout 'd["msg"]')" "rdmaIsolation" "naming rdmaIsolation"

# --- refusals, each leaving host, pod and records as they were -----------------------------
before=$(snap_all "$POD")
refused() { # refused CODE REGEX DESC CONF
	cni ADD r net1 "$POD" "$4"
	is "$(jout 'd["code"]')" "$1" "$3: code $1"
	like "$(jout 'd["msg"] + ": " + d["details"]')" "$2" "$3: says why"
	snap_all "$POD" >"$TMP/after"
	printf '%s\n' "$before" >"$TMP/before"
	same_file "$TMP/after" "$TMP/before" "$3: nothing changed"
	cni DEL r net1 "$POD" "$4"
	is "$rc" 0 "$3: the DEL a runtime sends after it succeeds"
}
refused 100 "PF pf0 refused the GUID of VF 0: operation not supported" "guid on a PF without SR-IOV GUID support" \
	"$(conf guid '"deviceID":"0000:3b:00.2","guid":"00:02:c9:03:00:21:6e:70","pkey":"0x8001"')"
if [ -e /proc/sys/net/rdma ] || ip netns exec "$HOST_NS" rdma system >/dev/null 2>&1; then
	refused 102 "rdmaIsolation" "rdmaIsolation where the RDMA device cannot move" "$(conf iso '"deviceID":"0000:3b:00.2","rdmaIsolation":true')"
else
	refused 102 "this kernel has no RDMA subsystem: RDMA netlink is not available" "rdmaIsolation without an RDMA subsystem" \
		"$(conf iso '"deviceID":"0000:3b:00.2","rdmaIsolation":true')"
fi
refused 102 "no RDMA device" "rdmaIsolation for a netdev without an RDMA device" \
	"$(conf iso2 '"device":"vf11","rdmaIsolation":true')" 2>/dev/null
refused 101 "0000:3b:00.4 has no netdev" "a function bound to vfio-pci (no netdev)" "$(conf nonet '"deviceID":"0000:3b:00.4"')"
refused 101 "deviceID 0000:3b:09.0: no such function" "a function the node does not have" "$(conf nofn '"deviceID":"0000:3b:09.0"')"
refused 101 "vf99 is not in the host's network namespace" "a netdev the host does not have" "$(conf nodev '"device":"vf99"')"
ip -n "$HOST_NS" addr add 192.0.2.1/24 dev vf11
ip -n "$HOST_NS" route add default via 192.0.2.254 dev vf11
before=$(snap_all "$POD")
refused 101 "vf11 carries the host's default route" "the netdev of the host's default route" "$(conf gw '"device":"vf11"')"
ip -n "$HOST_NS" route del default
ip -n "$HOST_NS" addr del 192.0.2.1/24 dev vf11

# --- a late failure (IPAM) after the move: the VF comes back -----------------------------------
before=$(snap_all "$POD")
cni ADD late net1 "$POD" "$(conf late '"deviceID":"0000:3b:00.2","mac":"02:00:00:00:00:09"' 1.0.0 '{"type":"no-such-ipam"}')" "$SI"
is "$(jout 'd["code"]')" 7 "ADD whose IPAM plugin is missing fails after the move: code 7"
is "$(snap_all "$POD")" "$before" "the VF is back on the host with its name and MAC, the pod and records clean"

done_testing
