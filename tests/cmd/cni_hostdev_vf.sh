#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sriov-cni's VF settings (vlan, vlanQoS, vlanProto, mac, min_tx_rate/max_tx_rate, spoofchk,
# trust, link_state) through rdmak-cni hostdev: the exact netlink requests a config makes on
# the VF's PF and their undo order, on ADD, DEL, a failed ADD (a setting the PF refuses, a late
# IPAM failure, a GUID the PF refuses) and GC. No kernel here has an SR-IOV PF, so the requests
# go to the test stand-in (RDMAK_TEST_VF_STANDIN, read by the test build only: docs/cni.md
# "Testing without SR-IOV"), which records each one and answers the VF table's GETLINK with bytes built here as
# the kernel's rtnl_fill_vfinfo() builds them; this script decodes every recorded request
# from <linux/if_link.h>'s layouts itself. The VF stand-in's netdev (a veth end) moves for
# real. Without the stand-in, a veth PF is refused naming the PF and the setting.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni's VF settings through the PF"
	done_testing
	exit
fi
cni_topology 0
cni_vfs 3
POD=$(cni_pod pod)
P=$(pns "$POD")
ip -n "$HOST_NS" link add pf0 type veth peer name pf0p
PFIDX=$(ip -n "$HOST_NS" -o link show pf0 | cut -d: -f1)
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
SD="$TMP/standin"
mkdir -p "$SD"

mkfn() { # mkfn BDF NETDEV: one PCI function with its netdev, as sysfs shows it
	local bdf=$1 nd=$2 d="$S/$DEV/$1"
	mkdir -p "$d/net/$nd" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core"
	echo 0x020000 >"$d/class"
	ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
	ln -s "../../$DEV/$bdf/net/$nd" "$S/class/net/$nd"
	ln -s "../../../$bdf" "$d/net/$nd/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
}
mkfn 0000:3b:00.0 pf0
mkfn 0000:3b:00.2 vf10
mkfn 0000:3b:00.3 vf12
ln -s ../0000:3b:00.0 "$S/$DEV/0000:3b:00.2/physfn" && ln -s ../0000:3b:00.2 "$S/$DEV/0000:3b:00.0/virtfn0"
ln -s ../0000:3b:00.0 "$S/$DEV/0000:3b:00.3/physfn" && ln -s ../0000:3b:00.3 "$S/$DEV/0000:3b:00.0/virtfn1"

VFNL="$TOP/tests/lib/vf-netlink.py"
"$PY" "$VFNL" answer "$SD/vfinfo" "$PFIDX"
# requests [FROM]: the recorded requests (from line FROM on), decoded, pf=<pf0's index> left out
requests() { "$PY" "$VFNL" decode "$SD/requests" "$PFIDX" | tail -n +"${1:-1}"; }
nreq() { [ -f "$SD/requests" ] && wc -l <"$SD/requests" || echo 0; }
static() { echo "{\"type\":\"static\",\"addresses\":[{\"address\":\"$1\",\"gateway\":\"$2\"}]}"; }
conf() { # conf NAME EXTRA-KEYS [IPAM]
	local ipam=${3:-$(static 172.16.22.50/24 172.16.22.254)}
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$1\",\"type\":\"rdmak-cni\",\"sysfs\":\"$S\",\"stateDir\":\"$TMP/state\",$2,\"ipam\":$ipam}"
}
host_link() { ip -n "$HOST_NS" -o link show "$1" 2>/dev/null | sed -E 's/^[0-9]+: //; s/ link-netns.*//; s/qlen.*//'; }
records() { files_under "$TMP/state" | wc -l; }
SI="RDMAK_TEST_VF_STANDIN=$SD"

# --- every field of sriov-cni's configuration reference, on VF 0 ---------------------------
before=$(snap_all "$POD")
vf10=$(host_link vf10)
C=$(conf all '"deviceID":"0000:3b:00.2","mac":"CA:FE:C0:FF:EE:00","vlan":1000,"vlanQoS":4,"vlanProto":"802.1ad","min_tx_rate":100,"max_tx_rate":200,"spoofchk":"off","trust":"on","link_state":"enable"')
cni ADD a1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "ADD with every VF setting"
[ "$rc" -eq 0 ] || echo "#   $out"
R=$out
is "$(requests)" "GETLINK ext_mask=0x9
SETLINK vf=0 vlan-list vlan=1000 qos=4 proto=0x88a8
SETLINK vf=0 mac=ca:fe:c0:ff:ee:00
SETLINK vf=0 rate min=100 max=200
SETLINK vf=0 spoofchk=0
SETLINK vf=0 trust=1
SETLINK vf=0 link_state=1" "the VF table read (RTEXT_FILTER_VF|SKIP_STATS), then sriov-cni's order: vlan (802.1ad: the list), admin MAC, both rates, spoofchk, trust, link state"
like "$(ip -o -n "$P" link show net1)" "link/ether ca:fe:c0:ff:ee:00" "the VF's netdev has the MAC too (sriov-cni sets both)"
like "$(cat "$TMP"/state/all/*)" '"vfOrig":\{[^}]*"set":63' "the record keeps what DEL puts back"
n=$(nreq)
cni DEL a1 net1 "$POD" "$(prev_conf "$C" "$R")" "$SI"
is "$rc" 0 "DEL"
is "$(requests $((n + 1)))" "SETLINK vf=0 link_state=0
SETLINK vf=0 trust=0
SETLINK vf=0 spoofchk=1
SETLINK vf=0 rate min=0 max=0
SETLINK vf=0 mac=00:00:00:00:00:00
SETLINK vf=0 vlan=0 qos=0" "DEL puts back VF 0's own settings, last set first (its 802.1Q VLAN 0 as plain IFLA_VF_VLAN)"
is "$(host_link vf10)" "$vf10" "vf10 back on the host as it was"
is "$(snap_all "$POD")" "$before" "host, pod and records as before ADD"
n=$(nreq)
cni DEL a1 net1 "$POD" "$C" "$SI"
is "$rc/$(nreq)" "0/$n" "a second DEL succeeds and sends nothing to the PF"

# --- VF 1: its own settings are what comes back ---------------------------------------------
rm -f "$SD/requests"
C=$(conf v1 '"deviceID":"0000:3b:00.3","vlan":7,"min_tx_rate":50' none | sed 's/,"ipam":none//')
cni ADD b1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "ADD on VF 1 (vlan, min_tx_rate alone)"
cni DEL b1 net1 "$POD" "$C" "$SI"
is "$(requests)" "GETLINK ext_mask=0x9
SETLINK vf=1 vlan=7 qos=0
SETLINK vf=1 rate min=50 max=0
SETLINK vf=1 rate min=10 max=20
SETLINK vf=1 vlan=5 qos=2" "VF 1: 802.1Q as plain IFLA_VF_VLAN, the other rate 0 (as sriov-cni), and back to VLAN 5 priority 2, rates 10/20"

# --- the PF refuses a setting: the ones before it are put back -------------------------------
rm -f "$SD/requests"
echo 5 >"$SD/fail"
before=$(snap_all "$POD")
cni ADD f1 net1 "$POD" "$(conf flags '"deviceID":"0000:3b:00.2","vlan":1000,"max_tx_rate":100,"spoofchk":"off","trust":"on","link_state":"enable"')" "$SI"
is "$(jout 'd["code"]')" 100 "sriov-cni's README VF flags, trust refused by the PF: code 100"
like "$(jout 'd["details"]')" "PF pf0 refused trust of VF 0: operation not supported" "naming the PF and the setting"
is "$(requests)" "GETLINK ext_mask=0x9
SETLINK vf=0 vlan=1000 qos=0
SETLINK vf=0 rate min=0 max=100
SETLINK vf=0 spoofchk=0
SETLINK vf=0 trust=1
SETLINK vf=0 spoofchk=1
SETLINK vf=0 rate min=0 max=0
SETLINK vf=0 vlan=0 qos=0" "the refused trust, then spoofchk, rates, vlan put back in reverse"
is "$(snap_all "$POD")" "$before" "nothing left: host, pod, records"
rm -f "$SD/fail"

# --- kill -9 inside a setting: it was recorded first, so DEL puts back what may have changed --
rm -f "$SD/requests"
echo 3 >"$SD/hang" # GETLINK, vlan, then the rate request never returns
before=$(snap_all "$POD")
C=$(conf kill '"deviceID":"0000:3b:00.2","vlan":1000,"max_tx_rate":100,"spoofchk":"off"')
printf '%s' "$C" >"$TMP/kill.json"
ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND=ADD CNI_CONTAINERID=k1 CNI_IFNAME=net1 \
	CNI_NETNS="$POD" CNI_PATH="$CNIP" "$SI" "$SEAMS_PLUGIN" <"$TMP/kill.json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do [ "$(nreq)" -ge 3 ] && break; sleep 0.1; done
kill -9 "$pid"
wait "$pid" 2>/dev/null
rm -f "$SD/hang"
is "$(requests)" "GETLINK ext_mask=0x9
SETLINK vf=0 vlan=1000 qos=0
SETLINK vf=0 rate min=0 max=100" "ADD killed inside its second setting"
like "$(cat "$TMP"/state/kill/*)" '"vfOrig":\{[^}]*"set":5' "the record holds vlan and the rate in flight (set 1|4)"
n=$(nreq)
cni DEL k1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "DEL after the kill"
is "$(requests $((n + 1)))" "SETLINK vf=0 rate min=0 max=0
SETLINK vf=0 vlan=0 qos=0" "DEL puts back the rate and the VLAN, last first; spoofchk was never sent"
is "$(snap_all "$POD")" "$before" "nothing left: host, pod, records"

# --- a late failure after the VF moved (IPAM) ---------------------------------------------------
rm -f "$SD/requests"
cni ADD l1 net1 "$POD" "$(conf late '"deviceID":"0000:3b:00.2","vlan":9' '{"type":"no-such-ipam"}')" "$SI"
is "$(jout 'd["code"]')" 7 "ADD whose IPAM plugin is missing fails after the move"
is "$(requests 2)" "SETLINK vf=0 vlan=9 qos=0
SETLINK vf=0 vlan=0 qos=0" "the VLAN is put back"
is "$(snap_all "$POD")" "$before" "and the VF is back, nothing left"

# --- link state before an InfiniBand GUID (ib-sriov-cni's order), the GUID refused -------------
rm -f "$SD/requests"
cni ADD g1 net1 "$POD" "$(conf ib '"deviceID":"0000:3b:00.2","link_state":"enable","guid":"00:02:c9:03:00:21:6e:70"')" "$SI"
is "$(jout 'd["code"]')" 100 "ib-sriov-cni's link_state with a GUID the (veth) PF refuses"
like "$(jout 'd["details"]')" "PF pf0 refused the GUID of VF 0" "the GUID is what is named"
is "$(requests 2)" "SETLINK vf=0 link_state=1
SETLINK vf=0 link_state=0" "link_state was set first and is put back"
is "$(snap_all "$POD")" "$before" "nothing left"

# --- GC of an attachment the runtime no longer lists ---------------------------------------------
rm -f "$SD/requests"
C=$(conf gc '"deviceID":"0000:3b:00.2","spoofchk":"off"' none | sed 's/,"ipam":none//')
cni ADD s1 net1 "$POD" "$C" "$SI"
is "$rc" 0 "ADD (spoofchk off)"
cni GC "" "" "" "$("$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); c["cniVersion"]="1.1.0"; c["cni.dev/valid-attachments"]=[]; print(json.dumps(c))' "$C")" "$SI"
is "$rc" 0 "GC with no valid attachment"
[ "$rc" -eq 0 ] || echo "#   $out"
is "$(requests 2)" "SETLINK vf=0 spoofchk=0
SETLINK vf=0 spoofchk=1" "GC put spoofchk back"
is "$(snap_all "$POD")" "$before" "and gave the VF back"

# --- refusals without the stand-in or without a VF ---------------------------------------------------
refused() { # refused CODE REGEX DESC CONF [ENV]
	cni ADD r net1 "$POD" "$4" ${5:+"$5"}
	is "$(jout 'd["code"]')" "$1" "$3: code $1"
	like "$(jout 'd["msg"] + ": " + d["details"]')" "$2" "$3: says why"
	is "$(snap_all "$POD")" "$before" "$3: nothing changed"
}
refused 101 "PF pf0 lists no VF 0 in the kernel .*vlan, trust cannot be set through it" "the kernel's veth PF (no SR-IOV)" \
	"$(conf k '"deviceID":"0000:3b:00.2","vlan":10,"trust":"on"')"
refused 101 "vlan: not an SR-IOV VF: vf11 is not a VF with a PF netdev" "vlan on a netdev that is not a VF" \
	"$(conf n '"device":"vf11","vlan":10')" "$SI"
refused 101 "max_tx_rate: not an SR-IOV VF" "a rate on the PF itself" "$(conf p '"deviceID":"0000:3b:00.0","max_tx_rate":10')" "$SI"

done_testing
