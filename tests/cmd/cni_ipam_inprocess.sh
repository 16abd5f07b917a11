#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni runs rdmak-ipam in its own process when the rdmak-ipam on CNI_PATH is the running
# binary (the links make and make install create), and execs it otherwise. Both must behave as
# the spec's delegation: the same address sequence, the IPAM's error passed through with its
# code, stdout holding only rdmak-cni's answer, the IPAM's log lines under its own name and in
# its own logFile, rdmak-cni's logger back afterwards. Which way ran is read from the pids that
# the two log files stamp on each line.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
[ -z "$why" ] && [ ! -x "$BUILD/cni/rdmak-ipam" ] && why="no $BUILD/cni/rdmak-ipam"
if [ -n "$why" ]; then
	skip "$why" "rdmak-ipam in rdmak-cni's process"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
STORE="$TMP/store-rk"
CLOG="$TMP/cni.log"
ILOG="$TMP/ipam.log"
# conf [RANGE-END]: rail 0, rdmak-ipam with its own log file, rdmak-cni at debug in another
conf() {
	echo "{\"cniVersion\":\"1.1.0\",\"name\":\"rail0\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"stateDir\":\"$TMP/state\",\"logFile\":\"$CLOG\",\"logLevel\":\"debug\",\"ipam\":{\"type\":\"rdmak-ipam\",\"ranges\":[[{\"subnet\":\"172.16.11.0/24\",\"rangeStart\":\"172.16.11.10\"${1:+,\"rangeEnd\":\"$1\"},\"gateway\":\"172.16.11.254\"}]],\"dataDir\":\"$STORE\",\"logFile\":\"$ILOG\"}}"
}
# pids FILE PATTERN: the pids stamped on FILE's lines matching PATTERN
pids() { grep -E "$2" "$1" 2>/dev/null | sed -E 's/^[^[]*\[([0-9]+)\].*/\1/' | sort -u | tr '\n' ' '; }
held() { files_under "$STORE" | grep -cE '/[0-9a-f.:]+$'; }
C=$(conf)
: >"$CLOG"
: >"$ILOG"

# 1. build/cni's rdmak-ipam is a link to this binary: in process
cni ADD c1 net1 "$POD" "$C"
is "$rc/$(jout 'd["ips"][0]["address"]')" 0/172.16.11.10/24 "in process: ADD gets the range's first address"
like "$(cat "$CLOG")" "rdmak-ipam ADD in this process" "in process: rdmak-cni says so at debug"
like "$(cat "$ILOG")" "rdmak-ipam ADD c1/net1: info: rail0: 172.16.11.10/24" "in process: the IPAM's line in its own logFile, under its name"
unlike "$(cat "$CLOG")" "rdmak-ipam ADD c1/net1" "in process: and not in rdmak-cni's logFile"
like "$(cat "$CLOG")" "rdmak-cni ADD c1/net1: info: net1: macvlan in the pod" "in process: rdmak-cni's own lines after the IPAM go to its logFile again"
like "$err" "rdmak-ipam ADD c1/net1: info: rail0" "in process: the IPAM's line on stderr too"
cpid=$(pids "$CLOG" "rdmak-cni ADD c1/")
is "$(pids "$ILOG" "rdmak-ipam ADD c1/")" "$cpid" "in process: both logs stamp one pid ($cpid)"
cni CHECK c1 net1 "$POD" "$(prev_conf "$C" "$out")"
is "$rc" 0 "in process: CHECK"
like "$(cat "$CLOG")" "rdmak-ipam CHECK in this process" "in process: CHECK's IPAM call too"

# 2. a copy of the binary first on CNI_PATH: not this binary, so exec'd
mkdir -p "$TMP/other"
cp "$(readlink -f "$BUILD/cni/rdmak-ipam")" "$TMP/other/rdmak-ipam"
: >"$CLOG"
: >"$ILOG"
CNIP="$TMP/other:$BUILD/cni" cni ADD c2 net2 "$POD" "$C"
is "$rc/$(jout 'd["ips"][0]["address"]')" 0/172.16.11.11/24 "exec'd copy: ADD gets the next address from the same store"
unlike "$(cat "$CLOG")" "in this process" "exec'd copy: not run in process"
c2=$(pids "$CLOG" "rdmak-cni ADD c2/")
i2=$(pids "$ILOG" "rdmak-ipam ADD c2/")
[ -n "$i2" ] && [ "$i2" != "$c2" ]
ok $? "exec'd copy: its log line carries its own pid ($i2, rdmak-cni $c2)"

# 3. a foreign rdmak-ipam first on CNI_PATH is exec'd, never bypassed: its error comes through
cat >"$TMP/other/rdmak-ipam" <<-'EOF'
	#!/bin/sh
	cat >/dev/null
	echo '{"cniVersion":"1.1.0","code":11,"msg":"the other rdmak-ipam","details":"refuses"}'
	exit 1
EOF
chmod +x "$TMP/other/rdmak-ipam"
before=$(snap_all "$POD")
CNIP="$TMP/other:$BUILD/cni" cni ADD c3 net3 "$POD" "$C"
is "$rc/$(jout 'd["code"]')/$(jout 'd["msg"]')" "1/11/the other rdmak-ipam" "a different rdmak-ipam on CNI_PATH: its own error, code 11"
is "$(snap_all "$POD")" "$before" "a different rdmak-ipam on CNI_PATH: nothing left"

# 4. the IPAM's failure in process: its code and words, one error object on stdout, nothing left
F=$(conf 172.16.11.11)
before=$(snap_all "$POD")
cni ADD c4 net4 "$POD" "$F"
is "$rc/$(jout 'd["code"]')/$(jout 'd["msg"]')" "1/110/no free address" "in process, full pool: exit 1, the IPAM's code 110"
like "$(jout 'd["msg"] + " | " + d["details"]')" "all 2 addresses in use" "in process, full pool: the IPAM's words"
is "$(printf '%s' "$out" | "$PY" -c 'import json,sys; json.load(sys.stdin); print("one")' 2>&1)" one "in process, full pool: stdout is one JSON document"
is "$(snap_all "$POD")" "$before" "in process, full pool: pod and host as before"
is "$(held)" 2 "in process, full pool: the IPAM holds the two addresses it held"

# 5. DEL in process releases; a second DEL is fine
for a in c1/net1 c2/net2; do
	id=${a%/*}
	cni DEL "$id" "${a#*/}" "$POD" "$C"
	is "$rc" 0 "in process: DEL $id"
done
is "$(held)" 0 "in process: the store holds nothing after the DELs"
cni DEL c1 net1 "$POD" "$C"
is "$rc" 0 "in process: DEL again succeeds"

# 6. CNI_ARGS reach the IPAM in process as they would exec'd: IP= honoured, an unknown key refused
cni ADD c5 net5 "$POD" "$C" CNI_ARGS="IP=172.16.11.77;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=p5"
is "$rc/$(jout 'd["ips"][0]["address"]')" 0/172.16.11.77/24 "in process: IP= in CNI_ARGS gives that address"
like "$(ip -n "$(pns "$POD")" -4 addr show dev net5)" "inet 172.16.11.77/24" "... on the pod's interface"
before=$(snap_all "$POD")
cni ADD c6 net6 "$POD" "$C" CNI_ARGS="IP=172.16.11.77"
is "$rc/$(jout 'd["code"]')/$(jout 'd["details"]')" "1/112/IP=172.16.11.77 in CNI_ARGS: claimed by c5:net5" \
	"in process: IP= of an address another pod holds: the IPAM's code 112"
is "$(snap_all "$POD")" "$before" "... and nothing left"
cni ADD c6 net6 "$POD" "$C" CNI_ARGS="K8S_POD_NAME=p6;K8S_POD_UUID=x"
is "$rc/$(jout 'd["code"]')/$(jout 'd["msg"]')" "1/4/invalid environment variables: CNI_ARGS" \
	"an unknown CNI_ARGS key (K8S_POD_UUID) without IgnoreUnknown: code 4"
like "$(jout 'd["details"]')" "unknown key K8S_POD_UUID" "... named"
cni ADD c6 net6 "$POD" "${C%,\"ipam\"*}}" CNI_ARGS="IP=172.16.11.78"
is "$rc/$(jout 'd["code"]')/$(jout 'd["details"]')" "1/4/IP=172.16.11.78: network rail0 has no ipam to give an address" \
	"IP= for a network without ipam: refused, not ignored"
is "$(snap_all "$POD")" "$before" "... and nothing left"
cni DEL c5 net5 "$POD" "$C"
is "$rc/$(held)" 0/0 "DEL c5 releases the requested address"

done_testing
