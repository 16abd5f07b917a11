#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CNI plugins' logFile through the one logger (src/log): a FIFO (or anything not a regular
# file) is refused without blocking and the command goes on, logging to stderr only (issue 16
# defect 3: rdmak-cni hung forever in open() on a FIFO without a reader); RDMAK_LOG_FORMAT=json
# gives JSON lines on stderr and in the file, the IPAM's lines under its own name.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni's logFile"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
# a bounded run: a hang is a failure of this test, not of the suite
printf '#!/bin/sh\nexec timeout 20 %s "$@"\n' "$BUILD/cni/rdmak-cni" >"$TMP/rdmak-cni"
chmod +x "$TMP/rdmak-cni"
PLUGIN="$TMP/rdmak-cni"
# conf CNI-LOGFILE IPAM-LOGFILE
conf() {
	echo "{\"cniVersion\":\"1.1.0\",\"name\":\"rail0\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"stateDir\":\"$TMP/state\",\"logFile\":\"$1\",\"ipam\":{\"type\":\"rdmak-ipam\",\"ranges\":[[{\"subnet\":\"172.16.12.0/24\"}]],\"dataDir\":\"$TMP/store\",\"logFile\":\"$2\"}}"
}
mkfifo "$TMP/fifo"

C=$(conf "$TMP/fifo" "$TMP/fifo")
cni ADD c1 net1 "$POD" "$C"
like "$rc/$(jout 'd["ips"][0]["address"]')" "^0/172.16.12.[0-9]+/24$" "logFile a FIFO without a reader: ADD completes"
like "$err" "rdmak-cni ADD c1/net1: warning: logFile $TMP/fifo: not a regular file, logging to stderr only" \
	"... rdmak-cni says why it logs to stderr only"
like "$err" "rdmak-ipam ADD c1/net1: warning: cannot open log file $TMP/fifo: not a regular file" "... and so does rdmak-ipam"
cni DEL c1 net1 "$POD" "$(prev_conf "$C" "$out")"
is "$rc" 0 "... DEL too"

# a reader present: the open would succeed, the type check refuses it; nothing is written to it
exec 7<>"$TMP/fifo"
cni ADD c2 net1 "$POD" "$C"
is "$rc" 0 "logFile a FIFO with a reader: ADD completes"
like "$err" "logFile $TMP/fifo: not a regular file" "... refused all the same"
is "$(timeout 1 cat <&7 | head -c 1 | wc -c)" 0 "... and not one byte went into it"
exec 7<&-
cni DEL c2 net1 "$POD" "$(prev_conf "$C" "$out")"

C=$(conf "$TMP/cni.log" "$TMP/ipam.log")
cni ADD c3 net1 "$POD" "$C" RDMAK_LOG_FORMAT=json
is "$rc" 0 "RDMAK_LOG_FORMAT=json: ADD"
"$PY" - "$TMP/err" "$TMP/cni.log" "$TMP/ipam.log" >"$TMP/json.txt" 2>&1 <<'PY'
import json, sys
for path in sys.argv[1:]:
    lines = open(path).read().splitlines()
    assert lines, path + ": no lines"
    for l in lines:
        o = json.loads(l)
        assert list(o) == ["time", "level", "program", "pid", "msg"], l
        print(path.rsplit("/", 1)[1], o["program"], o["level"], o["msg"])
PY
is "$?" 0 "... every line on stderr and in both logFiles is one JSON object: $(tail -1 "$TMP/json.txt")"
like "$(cat "$TMP/json.txt")" "^ipam.log rdmak-ipam ADD c3/net1 info rail0: 172.16.12.[0-9]+/24" "... the IPAM's line in its file under its name"
like "$(cat "$TMP/json.txt")" "^cni.log rdmak-cni ADD c3/net1 info net1: macvlan in the pod" "... rdmak-cni's in its own"
cni DEL c3 net1 "$POD" "$(prev_conf "$C" "$out")"
is "$rc" 0 "... DEL"
done_testing
