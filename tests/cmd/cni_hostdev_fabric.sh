#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni hostdev on a network with a pkey and a "fabric" (docs/fabric.md), against the UFM
# stand-in (tests/js/ufm.mjs, from NVIDIA's PKey GUIDs REST API reference) over HTTPS with its own
# CA, which the node's fabrics file names (the network names a fabric of it): ADD puts the VF's
# GUID (its port GUID from sysfs GID 0) into
# the pkey before it returns, with membership and index0 as configured; DEL takes it out through
# the current endpoint (never the deprecated one); UFM down fails ADD with code 106 saying so and
# leaves nothing (device, record, pkey); DEL with UFM down succeeds and journals the removal,
# which the next DEL, CNI GC or `rdmak fabric gc` makes; a GUID another attachment holds stays;
# a wrong CA, wrong credentials and a UFM that never answers (timeoutSeconds) fail ADD; the
# config's refusals. (No SR-IOV here: the VFs are veth stand-ins, as in cni_hostdev.sh.)
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"
. "$TOP/tests/lib-ufm.sh"

why=$(direct_requirements)
command -v node >/dev/null && command -v openssl >/dev/null && command -v curl >/dev/null || why=${why:-"needs node, openssl and curl"}
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni hostdev with a fabric manager"
	fcni ADD c15 net1 "$POD" "$(conf fab 0000:3b:00.2 | sed "s#\"policyRouting\"#\"stateDir\":\"$TMP/elsewhere\",\"policyRouting\"#")"
is "$(jout 'd["code"]')" 7 "a network with a fabric and a state dir of its own is refused"
like "$(jout 'd["details"]')" "the node's state dir \($TMP/state, the stateDir of $FABRICS\)" "naming the node's"
cni ADD c16 net1 "$POD" "$(conf fab 0000:3b:00.2)" RDMAK_FABRICS="$TMP/nosuch.json"
is "$(jout 'd["code"]')" 106 "a node without a fabrics file fails ADD with code 106"
like "$(jout 'd["details"]')" "this node has no fabrics file \($TMP/nosuch.json\)" "saying so"
is "$(records)" 0 "no record left by the refused ADDs"

# --- an attachment made before fabrics were the node's ------------------------------------------
# its record names no fabric and whether it added the GUID; the runtime deletes it with the config
# of its ADD (Multus keeps it): its URL finds the node's fabric, its credentials are never read
fcni ADD c17 net1 "$POD" "$(conf fab 0000:3b:00.2)"
is "$(members)" "$G10" "ADD"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["fabric"], r["fabricAdded"]; open(sys.argv[1],"w").write(json.dumps(r))' "$TMP/state/fab/c17:net1"
OLD=$(conf fab 0000:3b:00.2 "{\"ufm\":\"$UFM_URL\",\"credentials\":\"$TMP/no-such-dir\",\"ca\":\"$TMP/no-such-ca\",\"timeoutSeconds\":1}")
fcni DEL c17 net1 "$POD" "$OLD"
is "$rc" 0 "DEL with the config of before succeeds"
is "$(members) $(journal)" " " "and removed the GUID through the node's fabric of that URL, with the node's credentials"
done_testing
	exit
fi
cni_topology 0
cni_vfs 3
POD=$(cni_pod pod)
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
trap 'ufm_stop; cni_cleanup' EXIT

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
	ln -s "../../$DEV/$bdf/infiniband/$rdma" "$S/class/infiniband/$rdma"
	echo "fe80:0000:0000:0000:${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}" >"$d/infiniband/$rdma/ports/1/gids/0"
}
mkvf 0000:3b:00.2 vf10 mlx5_2 0002c90300216e70
mkvf 0000:3b:00.3 vf11 mlx5_3 0002c90300216e71
mkvf 0000:3b:00.4 vf12 mlx5_4 0002c90300216e72
G10=0002c90300216e70 G11=0002c90300216e71

ufm_certs "$TMP/pki"
mkdir -p "$TMP/secret" "$TMP/badsecret" "$TMP/toksecret"
printf 'admin\n' >"$TMP/secret/username"; printf '123456\n' >"$TMP/secret/password"
printf 'admin' >"$TMP/badsecret/username"; printf 'wrong' >"$TMP/badsecret/password"
printf 'tok-123\n' >"$TMP/toksecret/token"
ufm_start "$TMP/pki" "$HOST_NS"
# the node's fabrics: one per way of reaching the stand-in (credentials, CA, timeout)
FABRICS="$TMP/fabrics.json"
fab() { printf '"%s":{"ufm":"%s","credentials":"%s","ca":"%s"%s}' "$1" "$UFM_URL" "$2" "${3:-$TMP/pki/ca.pem}" "${4:+,$4}"; }
printf '{"stateDir":"%s","fabrics":{%s,%s,%s,%s,%s}}' "$TMP/state" "$(fab rail0 "$TMP/secret")" "$(fab tok "$TMP/toksecret")" \
	"$(fab badca "$TMP/secret" "$TMP/pki/other-ca.pem")" "$(fab badcred "$TMP/badsecret")" \
	"$(fab slow "$TMP/secret" "" '"timeoutSeconds":0.5')" >"$FABRICS"
# fcni CMD ID IFNAME NETNS CONF [...]: cni with the node's fabrics file in the runtime's environment
fcni() { local a=("${@:1:5}"); shift 5; cni "${a[@]}" RDMAK_FABRICS="$FABRICS" "$@"; }

# conf NAME DEVICE-ID [FABRIC] [PKEY]: the network names a fabric of the node (default rail0)
conf() {
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$1\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\",\"sysfs\":\"$S\",\"policyRouting\":false,\"deviceID\":\"$2\",\"pkey\":\"${4:-0x8101}\",\"fabric\":${3:-\"rail0\"}}"
}
calls() { ufm_ctl dump | "$PY" -c "import json,sys; c=json.load(sys.stdin)['calls']; print(c['$1'])"; }
members() { ufm_guids 0x101 | tr '\n' ' ' | sed 's/ $//'; }
records() { find "$TMP/state" -name '*:*' -type f 2>/dev/null | wc -l; }
journal() { (cd "$TMP/state/.fabric" 2>/dev/null && ls -d */journal/* 2>/dev/null) | sed 's#/journal/#/#' | tr '\n' ' ' | sed 's/ $//'; }

# --- ADD and DEL --------------------------------------------------------------------------------
C=$(conf fab 0000:3b:00.2)
fcni ADD c1 net1 "$POD" "$C"
is "$rc" 0 "ADD hostdev with a fabric"
[ "$rc" -eq 0 ] || echo "#   $out $err"
is "$(members)" "$G10" "the VF's port GUID (sysfs GID 0) is in pkey 0x101 when ADD returns"
is "$(ufm_ctl dump | "$PY" -c 'import json,sys; g=json.load(sys.stdin)["pkeys"]["0x101"]["guids"][0]; print(g["membership"], g["index0"])')" \
	"full False" "full membership and index0 false by default"
like "$(cat "$TMP"/state/fab/c1:net1)" "\"fabricGuid\":\"$G10\"" "the record names the GUID"
fcni DEL c1 net1 "$POD" "$C"
is "$rc" 0 "DEL"
is "$(members)" "" "the GUID left the pkey when DEL returned"
is "$(calls remove) $(calls remove_deprecated)" "1 0" "through DELETE .../guids/<guid>, never the deprecated action"
is "$(records)" 0 "no record left"
if command -v strace >/dev/null; then
	# the GUID goes into the record's first write, before UFM hears of it: each write is two
	# fsyncs, and one more for the GUID cost an ADD 3-10 ms on a busy disk
	saves() { # saves ID CONF: the record writes (renames onto ID:net1) of an ADD, then DEL
		fcni ADD "$1" net1 "$POD" "$2" strace -f -qq -e trace=rename,renameat,renameat2 -o "$TMP/add.trace"
		[ "$rc" -eq 0 ] || echo "ADD failed: $out"
		grep -c "\"$1:net1\"" "$TMP/add.trace"
		fcni DEL "$1" net1 "$POD" "$2"
	}
	plain=$(saves c1n "$(echo "$C" | sed 's/,"pkey":"0x8101","fabric":"rail0"}$/}/')")
	is "$(saves c1s "$C")" "$plain" "ADD with a fabric writes the record as often as one without ($plain)"
	is "$(members) $(records)" " 0" "and DEL takes the GUID out"
else
	skip "no strace" "ADD with a fabric writes the record as often as one without"
fi
echo "# journal: $(journal)"

# --- token, limited, index0, a configured guid ----------------------------------------------
C=$(conf fabt 0000:3b:00.3 '{"name":"tok","membership":"limited","index0":true}')
fcni ADD c2 net2 "$POD" "$C"
is "$rc" 0 "ADD with a token, limited membership and index0"
is "$(ufm_ctl dump | "$PY" -c 'import json,sys; g=json.load(sys.stdin)["pkeys"]["0x101"]["guids"][0]; print(g["guid"], g["membership"], g["index0"])')" \
	"$G11 limited True" "limited and index0 reach UFM"
fcni DEL c2 net2 "$POD" "$C"
is "$(members)" "" "and DEL with the token removes it"

# --- UFM down at ADD --------------------------------------------------------------------------
C=$(conf fab 0000:3b:00.2)
before=$(ip -n "$HOST_NS" -o link show vf10 | sed -E 's/^[0-9]+: //; s/ link-netns.*//')
ufm_ctl 'down?mode=reset' POST >/dev/null
fcni ADD c3 net1 "$POD" "$C"
is "$rc" 1 "ADD with UFM down fails"
is "$(jout 'd["code"]')" 106 "code 106"
like "$(jout 'd["msg"]')" "fabric manager did not add" "saying the fabric manager did not add the VF"
like "$(jout 'd["details"]')" "GUID $G10 is in pkey 0x0101: UFM https://127.0.0.1:[0-9]+: .*(reset|closed|TLS|sending|receiving)" "naming the GUID, the pkey and what happened (ADD asks first whether the GUID is a member)"
is "$(ip -n "$HOST_NS" -o link show vf10 | sed -E 's/^[0-9]+: //; s/ link-netns.*//')" "$before" "vf10 is still on the host as it was"
is "$(records) $(journal)" "0 " "no record left, nothing journaled (no add was sent)"
# the add itself unanswered (UFM may have taken it): the rollback journals the removal at once,
# without waiting for a second call to fail
ufm_ctl 'down?mode=reset&method=POST' POST >/dev/null
removes=$(calls remove)
fcni ADD c3 net1 "$POD" "$C"
is "$(jout 'd["code"]')" 106 "ADD whose add goes unanswered fails with code 106"
like "$(jout 'd["details"]')" "adding GUID $G10 to pkey 0x0101: UFM https://127.0.0.1:[0-9]+: .*(reset|closed|TLS|sending|receiving)" "naming the GUID, the pkey and what happened"
is "$(records)" 0 "no record left"
is "$(journal)" "rail0/0101-$G10" "the removal is journaled under its fabric (UFM may have taken the add)"
is "$(calls remove)" "$removes" "and not tried: the call before went unanswered"
ufm_ctl up POST >/dev/null
fcni ADD c4 net1 "$POD" "$C"
[ "$rc" -eq 0 ] || echo "#   $out $err"
is "$rc" 0 "ADD once UFM is back"
is "$(journal)" "" "and the journal is empty: the entry's GUID is held by this live attachment now"
is "$(members)" "$G10" "the GUID is in the pkey"

# --- UFM down at DEL: journaled, retried ----------------------------------------------------------
ufm_ctl 'down?mode=503' POST >/dev/null
fcni DEL c4 net1 "$POD" "$C"
is "$rc" 0 "DEL with UFM down succeeds"
is "$(journal)" "rail0/0101-$G10" "the removal is journaled under its fabric"
is "$(records)" 0 "the record is gone (the device is back on the host)"
is "$(members)" "$G10" "the GUID is still in the pkey while UFM is down"
ufm_ctl up POST >/dev/null
fcni GC "" "" "" "$(echo "$C" | sed "s/1.0.0/1.1.0/")"
[ "$rc" -eq 0 ] || echo "#   $out $err"
is "$rc" 0 "CNI GC"
is "$(members)" "" "GC made the journaled removal"
is "$(journal)" "" "the journal is empty"

# --- rdmak fabric gc, list, check -------------------------------------------------------------

fcni ADD c5 net1 "$POD" "$C"
ufm_ctl 'down?mode=reset' POST >/dev/null
fcni DEL c5 net1 "$POD" "$C"
ufm_ctl up POST >/dev/null
run ip netns exec "$HOST_NS" "$RDMAK" fabric list --fabrics "$FABRICS"
is "$out" "$(printf 'rail0\t0x0101\t%s\tto remove\tjournal for %s' "$G10" "$UFM_URL")" "fabric list shows the journaled removal, its fabric and the URL it is for"
run ip netns exec "$HOST_NS" "$RDMAK" fabric check --fabrics "$FABRICS" --fabric rail0
is "$rc" 3 "fabric check finds the pending removal (exit 3)"
like "$out" "pending \(still a member\)" "and says so"
run ip netns exec "$HOST_NS" "$RDMAK" fabric gc --fabrics "$FABRICS" --fabric rail0
is "$rc" 0 "fabric gc"
is "$(members) / $(journal)" " / " "removed it and emptied the journal"
run ip netns exec "$HOST_NS" "$RDMAK" fabric check --fabrics "$FABRICS" --fabric rail0
is "$rc" 0 "check: consistent"
# no wait for an ACK: with Nagle on, GnuTLS's last handshake flight (its Finished after a
# ChangeCipherSpec of its own) stayed back until the server ACKed the one before, and Linux delays
# that ACK 40 ms: 40 ms more on every call (docs/fabric.md). What prevents it is the socket option,
# checked as the kernel receives it rather than by a time.
if command -v strace >/dev/null; then
	# LeakSanitizer refuses to run under ptrace: the sanitized build is traced without it
	run ip netns exec "$HOST_NS" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=setsockopt -o "$TMP/strace.out" \
		"$RDMAK" fabric check --fabrics "$FABRICS" --fabric rail0
	is "$rc" 0 "check under strace: consistent"
	like "$(cat "$TMP/strace.out")" 'setsockopt\([0-9]+, SOL_TCP, TCP_NODELAY, \[1\], 4\)' \
		"the UFM client's socket has TCP_NODELAY: no 40 ms wait for a delayed ACK per call"
else
	skip "no strace" "check under strace: consistent"
	skip "no strace" "the UFM client's socket has TCP_NODELAY: no 40 ms wait for a delayed ACK per call"
fi

# --- a GUID another attachment holds stays ------------------------------------------------------
C2=$(conf fab2 0000:3b:00.3)
fcni ADD c6 net1 "$POD" "$C"
mkdir -p "$TMP/state/other"
sed 's/"netns":"[^"]*"/"netns":"\/run\/netns\/gone"/' "$TMP/state/fab/c6:net1" >"$TMP/state/other/old:net9"
fcni DEL c6 net1 "$POD" "$C"
is "$(members)" "$G10" "DEL leaves a GUID that another attachment's record holds"
rm -rf "$TMP/state/other"

# --- refusals -------------------------------------------------------------------------------------
rm -f "$TMP/state/fabric-journal/"* 2>/dev/null
ufm_ctl reset POST >/dev/null
fcni ADD c7 net1 "$POD" "$(conf fab 0000:3b:00.2 '"badca"')"
is "$(jout 'd["code"]')" 106 "a CA that did not sign UFM's certificate fails ADD"
like "$(jout 'd["details"]')" "certificate did not verify" "saying the certificate did not verify"
fcni ADD c8 net1 "$POD" "$(conf fab 0000:3b:00.2 '"badcred"')"
like "$(jout 'd["details"]')" "HTTP 401" "wrong credentials: UFM's 401 in the error"
ufm_ctl 'down?mode=hang' POST >/dev/null
t0=$(date +%s%N)
CNI_TIMEOUT=20 fcni ADD c9 net1 "$POD" "$(conf fab 0000:3b:00.2 '"slow"')"
t1=$(date +%s%N)
like "$(jout 'd["details"]')" "timed out" "a UFM that never answers: timed out"
ok $(( (t1 - t0) / 1000000 < 10000 ? 0 : 1 )) "within the timeout, not forever ($(( (t1 - t0) / 1000000 )) ms for timeoutSeconds 0.5 and the rollback's removal)"
ufm_ctl up POST >/dev/null
is "$(records)" 0 "no record left by the failed ADDs"
C=$(echo "$(conf fab 0000:3b:00.2)" | sed 's/"pkey":"0x8101",//')
fcni ADD c12 net1 "$POD" "$C"
like "$(jout 'd["details"]')" "fabric: needs pkey" "fabric without pkey is refused"
fcni ADD c13 net1 "$POD" "$(conf fab 0000:3b:00.2 '{"name":"rail0","membershp":"full"}')"
like "$(jout 'd["details"]') $(jout 'd["msg"]')" "membershp" "a misspelt key in fabric is refused"
fcni ADD c14 net1 "$POD" "$(conf fab 0000:3b:00.2 '"rail9"')"
is "$(jout 'd["code"]')" 7 "a fabric the node does not know is refused"
like "$(jout 'd["details"]')" "\"rail9\" is not a fabric of this node \($FABRICS names: rail0, tok, badca, badcred, slow\)" "naming the node's fabrics"
fcni ADD c15 net1 "$POD" "$(conf fab 0000:3b:00.2 | sed "s#\"policyRouting\"#\"stateDir\":\"$TMP/elsewhere\",\"policyRouting\"#")"
is "$(jout 'd["code"]')" 7 "a network with a fabric and a state dir of its own is refused"
like "$(jout 'd["details"]')" "the node's state dir \($TMP/state, the stateDir of $FABRICS\)" "naming the node's"
cni ADD c16 net1 "$POD" "$(conf fab 0000:3b:00.2)" RDMAK_FABRICS="$TMP/nosuch.json"
is "$(jout 'd["code"]')" 106 "a node without a fabrics file fails ADD with code 106"
like "$(jout 'd["details"]')" "this node has no fabrics file \($TMP/nosuch.json\)" "saying so"
is "$(records)" 0 "no record left by the refused ADDs"

# --- an attachment made before fabrics were the node's ------------------------------------------
# its record names no fabric and whether it added the GUID; the runtime deletes it with the config
# of its ADD (Multus keeps it): its URL finds the node's fabric, its credentials are never read
fcni ADD c17 net1 "$POD" "$(conf fab 0000:3b:00.2)"
is "$(members)" "$G10" "ADD"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["fabric"], r["fabricAdded"]; open(sys.argv[1],"w").write(json.dumps(r))' "$TMP/state/fab/c17:net1"
OLD=$(conf fab 0000:3b:00.2 "{\"ufm\":\"$UFM_URL\",\"credentials\":\"$TMP/no-such-dir\",\"ca\":\"$TMP/no-such-ca\",\"timeoutSeconds\":1}")
fcni DEL c17 net1 "$POD" "$OLD"
is "$rc" 0 "DEL with the config of before succeeds"
is "$(members) $(journal)" " " "and removed the GUID through the node's fabric of that URL, with the node's credentials"
done_testing
