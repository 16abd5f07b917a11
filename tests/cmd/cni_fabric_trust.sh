#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fabric client's trust boundary (docs/fabric.md, "What it trusts"), each case as a hostile
# user would try it, against UFM stand-ins (tests/js/ufm.mjs; one per rail, and a capture server):
#   - a network config that names a URL, a credentials directory, a CA or a timeout is refused
#     naming the key and what to write instead, and sends nothing anywhere; the node's own
#     credentials files are refused when they are a FIFO (which hung ADD), a symbolic link, a
#     device, or another user's or group-writable;
#   - a GUID that was in the partition before is never removed by this node (an ADD that fails
#     late, a DEL); a pod-chosen GUID (runtimeConfig.infinibandGUID) that is not the VF's own is
#     refused when it is such a member or another attachment of this node holds it;
#   - a removal journaled while one rail's UFM was down is retried only against that UFM: another
#     rail's UFM answering does not clear it, and `rdmak fabric check` reports it as pending;
#   - `rdmak fabric gc` in a mount namespace without /run/netns refuses to decide, naming it;
#   - an ADD on a healthy fabric finishes while an ADD on a fabric whose UFM hangs is inside its
#     call (the lock is per fabric).
# VFs are veth stand-ins (cni_hostdev.sh); the one with a PF uses the SR-IOV PF stand-in
# (RDMAK_TEST_VF_STANDIN, cni_hostdev_vf.sh), whose veth PF then refuses the pod's GUID, which is
# how an ADD "fails later" here.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"
. "$TOP/tests/lib-ufm.sh"

why=$(direct_requirements)
command -v node >/dev/null && command -v openssl >/dev/null && command -v curl >/dev/null || why=${why:-"needs node, openssl and curl"}
command -v flock >/dev/null && command -v unshare >/dev/null && command -v mknod >/dev/null || why=${why:-"needs flock, unshare and mknod"}
if [ -n "$why" ]; then
	skip "$why" "the fabric client's trust boundary"
	done_testing
	exit
fi
cni_topology 0
cni_vfs 4
POD=$(cni_pod pod)
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
trap 'ufm_stop_all; cni_cleanup' EXIT

# mkvf BDF NETDEV RDMA GUID: a VF's PCI function, netdev and RDMA device, port 1's GID 0 ending in GUID
mkvf() {
	local bdf=$1 nd=$2 rdma=$3 g=$4 d="$S/$DEV/$1"
	mkdir -p "$d/net/$nd" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core" "$S/class/infiniband" \
		"$d/infiniband/$rdma/ports/1/gids"
	echo 0x020000 >"$d/class"
	ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
	ln -s "../../$DEV/$bdf/net/$nd" "$S/class/net/$nd"
	ln -s "../../../$bdf" "$d/net/$nd/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
	[ -n "$rdma" ] || return 0
	ln -s "../../$DEV/$bdf/infiniband/$rdma" "$S/class/infiniband/$rdma"
	echo "fe80:0000:0000:0000:${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}" >"$d/infiniband/$rdma/ports/1/gids/0"
}
G10=0002c90300216e70 G11=0002c90300216e71 G12=0002c90300216e72 G13=0002c90300216e73
mkvf 0000:3b:00.2 vf10 mlx5_2 $G10
mkvf 0000:3b:00.3 vf11 mlx5_3 $G11
mkvf 0000:3b:00.4 vf12 mlx5_4 $G12
# vf13: VF 0 of PF pf0, through the PF stand-in (its GUID can be asked for; the veth PF refuses it)
ip -n "$HOST_NS" link add pf0 type veth peer name pf0p
PFIDX=$(ip -n "$HOST_NS" -o link show pf0 | cut -d: -f1)
mkvf 0000:3b:00.0 pf0 "" ""
mkvf 0000:3b:00.5 vf13 mlx5_5 $G13
ln -s ../0000:3b:00.0 "$S/$DEV/0000:3b:00.5/physfn" && ln -s ../0000:3b:00.5 "$S/$DEV/0000:3b:00.0/virtfn0"
SD="$TMP/standin" && mkdir -p "$SD" && "$PY" "$TOP/tests/lib/vf-netlink.py" answer "$SD/vfinfo" "$PFIDX"

# three stand-ins: UFM A (rail-a), UFM B (rail-b), and C, a server no fabric names
ufm_certs "$TMP/pki"
for k in a b c; do cp -r "$TMP/pki" "$TMP/pki-$k"; ufm_start "$TMP/pki-$k" "$HOST_NS"; ufm_keep "$k"; done
ufm_use a; A_URL=$UFM_URL
ufm_use b; B_URL=$UFM_URL
ufm_use c; C_URL=$UFM_URL
mkdir -p "$TMP/secret" && printf admin >"$TMP/secret/username" && printf 123456 >"$TMP/secret/password"
# credentials directories no root process should read: each holds a "token" of another kind
for k in fifo link dev nobody gw; do mkdir -p "$TMP/cred-$k"; done
mkfifo "$TMP/cred-fifo/token"
echo "host secret" >"$TMP/host-secret" && ln -s "$TMP/host-secret" "$TMP/cred-link/token"
mknod "$TMP/cred-dev/token" c 1 3
printf tok >"$TMP/cred-nobody/token" && chown 65534 "$TMP/cred-nobody/token"
printf tok >"$TMP/cred-gw/token" && chmod 0664 "$TMP/cred-gw/token"
FABRICS="$TMP/fabrics.json"
fab() { printf '"%s":{"ufm":"%s","credentials":"%s","ca":"%s/pki/ca.pem"%s}' "$1" "$2" "$3" "$TMP" "${4:+,$4}"; }
printf '{"stateDir":"%s","fabrics":{%s,%s,%s,%s,%s,%s,%s,%s}}' "$TMP/state" \
	"$(fab rail-a "$A_URL" "$TMP/secret")" "$(fab rail-b "$B_URL" "$TMP/secret")" \
	"$(fab hang "$B_URL" "$TMP/secret" '"timeoutSeconds":20')" \
	"$(fab fifo "$A_URL" "$TMP/cred-fifo")" "$(fab link "$A_URL" "$TMP/cred-link")" \
	"$(fab dev "$A_URL" "$TMP/cred-dev")" "$(fab nobody "$A_URL" "$TMP/cred-nobody")" \
	"$(fab gw "$A_URL" "$TMP/cred-gw")" >"$FABRICS"

# conf NAME DEVICE-ID FABRIC PKEY [EXTRA-KEYS]: a network naming FABRIC (JSON) of the node
conf() {
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$1\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"sysfs\":\"$S\",\"policyRouting\":false,\"deviceID\":\"$2\",\"pkey\":\"$4\",\"fabric\":$3${5:+,$5}}"
}
# fcni CMD ID IFNAME NETNS CONF [...]: cni with the node's fabrics file and the PF stand-in
fcni() { local a=("${@:1:5}"); shift 5; cni "${a[@]}" RDMAK_FABRICS="$FABRICS" RDMAK_TEST_VF_STANDIN="$SD" "$@"; }
members() { ufm_use "$1"; ufm_guids "$2" | tr '\n' ' ' | sed 's/ $//'; }
dump() { ufm_use "$1"; ufm_ctl dump | "$PY" -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
# by_hand UFM PKEY GUID: an administrator puts GUID into PKEY at that UFM
by_hand() {
	ufm_use "$1"
	ip netns exec "$HOST_NS" curl -s --cacert "$UFM_DIR/ca.pem" -u admin:123456 -H 'Content-Type: application/json' \
		-d "{\"pkey\":\"$2\",\"guids\":[\"$3\"]}" "$UFM_URL/ufmRest/resources/pkeys" >/dev/null
}
journal() { (cd "$TMP/state/.fabric" 2>/dev/null && ls -d */journal/* 2>/dev/null) | sed 's#/journal/#/#' | tr '\n' ' ' | sed 's/ $//'; }
rdmak_fabric() { run ip netns exec "$HOST_NS" "$RDMAK" fabric "$@" --fabrics "$FABRICS"; }

# --- 1. credentials and addresses are the node's ------------------------------------------------
mkdir -p "$TMP/podtoken" && printf 'pod-service-account-token' >"$TMP/podtoken/token"
fcni ADD t1 net1 "$POD" "$(conf n1 0000:3b:00.2 "{\"ufm\":\"$C_URL\",\"credentials\":\"$TMP/podtoken\",\"ca\":\"$TMP/pki/ca.pem\"}" 0x8101)"
is "$rc $(jout 'd["code"]')" "1 2" "a network config naming the fabric manager's URL is refused (code 2)"
like "$(jout 'd["details"]')" "fabric.ufm: .*belongs to the node.*write \"fabric\": \"NAME\"" "naming the key and what to write instead"
is "$(dump c 'len(d["auth_seen"]), sum(d["calls"].values())')" "0 0" "nothing reached the server the config named (no credentials, no request)"
fcni ADD t1 net1 "$POD" "$(conf n1 0000:3b:00.2 "{\"name\":\"rail-a\",\"credentials\":\"$TMP/podtoken\"}" 0x8101)"
like "$(jout 'd["details"]')" "fabric.credentials: .*belongs to the node" "a credentials directory beside a fabric's name is refused too"
for k in fifo link dev nobody gw; do
	CNI_TIMEOUT=20 fcni ADD "t-$k" net1 "$POD" "$(conf n1 0000:3b:00.2 "\"$k\"" 0x8101)"
	case $k in
	fifo) what="is a FIFO: refused" ;; link) what="is a symbolic link: refused" ;;
	dev) what="is a character device: refused" ;; nobody) what="is owned by uid 65534 .*: refused" ;;
	gw) what="is owned by uid 0 with mode 0664: refused" ;;
	esac
	is "$rc $(jout 'd["code"]')" "1 106" "the node's credentials file token as $k: ADD fails (code 106), it does not hang"
	like "$(jout 'd["details"]')" "credentials $TMP/cred-$k: token $what" "naming the file and what it is"
done
is "$(dump a 'sum(d["calls"].values()), len(d["auth_seen"])')" "0 0" "no request was sent with them"
is "$(find "$TMP/state" -name '*:*' -type f 2>/dev/null | wc -l)" 0 "no record left"

# --- 2. whose GUID it is ------------------------------------------------------------------------
by_hand a 0x101 $G10
fcni ADD g1 net1 "$POD" "$(conf n2 0000:3b:00.2 '"rail-a"' 0x8101 '"ipam":{"type":"rdmak-nosuch-ipam"}')"
is "$rc" 1 "ADD on vf10 whose GUID an administrator put into pkey 0x101 fails late (IPAM missing)"
is "$(members a 0x101)" "$G10" "the GUID is still in the partition: it was not this node's to remove"
fcni ADD g2 net1 "$POD" "$(conf n2 0000:3b:00.2 '"rail-a"' 0x8101)"
is "$rc" 0 "ADD on vf10 with the GUID a member already"
like "$(cat "$TMP"/state/n2/g2:net1)" '"fabricAdded":false' "the record says this node did not add it"
fcni DEL g2 net1 "$POD" "$(conf n2 0000:3b:00.2 '"rail-a"' 0x8101)"
is "$rc $(members a 0x101)" "0 $G10" "DEL leaves it in the partition"
X=0002c90300aabbcc
by_hand a 0x101 $X
RC='"runtimeConfig":{"infinibandGUID":"00:02:c9:03:00:aa:bb:cc"}'
fcni ADD g3 net1 "$POD" "$(conf n2 0000:3b:00.5 '"rail-a"' 0x8101 "$RC")"
is "$rc $(jout 'd["code"]')" "1 7" "a pod asking for $X, another port's GUID in pkey 0x101, is refused"
like "$(jout 'd["msg"]') $(jout 'd["details"]')" "runtimeConfig.infinibandGUID.*$X is a member of pkey 0x0101 that this node did not add" "naming the key and why"
is "$(members a 0x101)" "$G10 $X" "and $X is still in the partition"
fcni ADD g4 net1 "$POD" "$(conf n2 0000:3b:00.3 '"rail-a"' 0x8101)"
is "$rc" 0 "ADD on vf11 (its own GUID $G11)"
fcni ADD g5 net2 "$POD" "$(conf n2 0000:3b:00.5 '"rail-a"' 0x8101 '"runtimeConfig":{"infinibandGUID":"00:02:c9:03:00:21:6e:71"}')"
is "$rc $(jout 'd["code"]')" "1 7" "a pod asking for vf11's GUID on vf13 is refused"
like "$(jout 'd["details"]')" "$G11 is held by attachment n2/g4:net1 of this node" "naming the attachment that holds it"
is "$(members a 0x101)" "$G10 $G11 $X" "vf11's pod keeps its partition"
fcni DEL g4 net1 "$POD" "$(conf n2 0000:3b:00.3 '"rail-a"' 0x8101)"
is "$(members a 0x101)" "$G10 $X" "and its DEL takes out the GUID it added, only that"

# --- 3. a removal belongs to its fabric -----------------------------------------------------------
fcni ADD j1 net1 "$POD" "$(conf n3 0000:3b:00.2 '"rail-a"' 0x8102)"
is "$rc $(members a 0x102)" "0 $G10" "ADD on rail-a"
ufm_use a; ufm_ctl 'down?mode=reset' POST >/dev/null
fcni DEL j1 net1 "$POD" "$(conf n3 0000:3b:00.2 '"rail-a"' 0x8102)"
is "$rc $(journal)" "0 rail-a/0102-$G10" "DEL with rail-a's UFM down journals the removal under rail-a"
fcni ADD j2 net1 "$POD" "$(conf n3 0000:3b:00.4 '"rail-b"' 0x8102)"
fcni DEL j2 net1 "$POD" "$(conf n3 0000:3b:00.4 '"rail-b"' 0x8102)"
is "$rc $(members b 0x102)" "0 " "ADD and DEL on rail-b, whose UFM answers"
is "$(journal)" "rail-a/0102-$G10" "rail-a's removal is still journaled: rail-b's UFM answering says nothing of rail-a's"
rdmak_fabric gc --fabric rail-b
is "$rc $(journal)" "0 rail-a/0102-$G10" "rdmak fabric gc --fabric rail-b leaves it too"
rdmak_fabric check --fabric rail-a
is "$rc" 1 "check of rail-a with its UFM down: exit 1"
ufm_use a; ufm_ctl up POST >/dev/null
rdmak_fabric check --fabric rail-a
is "$rc" 3 "check of rail-a once its UFM is back: a difference (exit 3)"
like "$out" "rail-a	0x0102	$G10	pending \(still a member\)	journal for $A_URL" "the pending removal, still a member at rail-a's UFM"
is "$(members a 0x102)" "$G10" "(rail-a's UFM has the GUID still)"
rdmak_fabric gc --fabric rail-a
is "$rc $(members a 0x102) / $(journal)" "0  / " "gc of rail-a removes it there and empties the journal"

# --- 4. gc that cannot see the pods' namespaces ---------------------------------------------------
fcni ADD l1 net1 "$POD" "$(conf n4 0000:3b:00.2 '"rail-a"' 0x8103)"
is "$rc $(members a 0x103)" "0 $G10" "ADD: a live pod on pkey 0x103"
run ip netns exec "$HOST_NS" unshare -m sh -c 'mount -t tmpfs none /run && exec "$@"' sh "$RDMAK" fabric gc --fabric rail-a --fabrics "$FABRICS"
is "$rc" 1 "gc in a mount namespace without /run/netns: exit 1"
like "$err" "cannot tell whether its pod is alive \(folder /run/netns: missing here" "naming the folder it lacks"
is "$(members a 0x103)" "$G10" "the live pod's GUID is still in the partition"
like "$(cat "$TMP"/state/n4/l1:net1)" "\"fabricGuid\":\"$G10\"" "and its record still names it"
rdmak_fabric gc --fabric rail-a
is "$rc $(members a 0x103)" "0 $G10" "gc that sees the namespace leaves the live pod alone"
fcni DEL l1 net1 "$POD" "$(conf n4 0000:3b:00.2 '"rail-a"' 0x8103)"

# --- 5. one fabric's outage does not hold another's ADD -----------------------------------------------
ufm_use b; ufm_ctl 'down?mode=hang' POST >/dev/null
ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_FABRICS="$FABRICS" CNI_COMMAND=ADD CNI_CONTAINERID=h1 CNI_IFNAME=net1 \
	CNI_NETNS="$POD" CNI_PATH="$CNIP" "$PLUGIN" <<<"$(conf n5 0000:3b:00.4 '"hang"' 0x8104)" >"$TMP/hang.out" 2>&1 &
hung=$!
# until the hanging ADD holds its fabric's lock, inside its call to UFM B (bounded: 20 s)
for _ in $(seq 200); do
	[ -f "$TMP/state/.fabric/hang/lock" ] && ! flock -n "$TMP/state/.fabric/hang/lock" true && break
	sleep 0.1
done
ok "$(kill -0 "$hung" 2>/dev/null && ! flock -n "$TMP/state/.fabric/hang/lock" true && echo 0 || echo 1)" "an ADD on fabric hang (UFM B never answers) holds its lock"
CNI_TIMEOUT=15 fcni ADD h2 net1 "$POD" "$(conf n5 0000:3b:00.3 '"rail-a"' 0x8104)"
alive=$(kill -0 "$hung" 2>/dev/null && echo yes || echo no)
is "$rc" 0 "ADD on rail-a meanwhile"
is "$alive" yes "done while the ADD on the hanging fabric is still inside its call"
kill -9 "$hung" 2>/dev/null; wait "$hung" 2>/dev/null
ufm_use b; ufm_ctl up POST >/dev/null
fcni DEL h1 net1 "$POD" "$(conf n5 0000:3b:00.4 '"hang"' 0x8104)"
fcni DEL h2 net1 "$POD" "$(conf n5 0000:3b:00.3 '"rail-a"' 0x8104)"
is "$rc $(members a 0x104)" "0 " "DEL"
done_testing
