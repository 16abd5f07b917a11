#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The exporter's rdmak_doctor_check series (those at 1) say what `rdmak doctor` says on the same
# node: the worst status per check and object (a check that does not apply to the node is not
# served). Its model is read with fewer tables than the doctor's own, so a check that needs a
# table the exporter did not read would differ here (roce.gids on every RoCE port whose IPv4 GID
# is not GID 0, which is every real one).
. "$(dirname "$0")/../lib.sh"

for n in cx5-roce-sriov b2-cx6dx-roce f3-roce-lag e1-cx7-lag a100-ib-bond v100-ib; do
	[ -d "$NODES/$n" ] || { skip "no sample node $n" "$n: the exporter serves the doctor's findings"; continue; }
	"$RDMAK" doctor --json --root "$NODES/$n" >"$TMP/d.json" 2>/dev/null
	"$RDMAK" exporter --once --no-pod-resources --root "$NODES/$n" 2>/dev/null | grep '^rdmak_doctor_check{' >"$TMP/s"
	diff=$("$PY" - "$TMP/d.json" "$TMP/s" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
got = set(re.findall(r'check="([^"]*)",object="([^"]*)",status="([^"]*)"\} 1$', open(sys.argv[2]).read(), re.M))
rank = {"skip": 0, "ok": 1, "warn": 2, "fail": 3}
worst = {}
for f in d:
    k = (f["id"], f["object"] or "")
    if (f["object"] or f["status"] != "skip") and rank[f["status"]] >= rank.get(worst.get(k), 0):
        worst[k] = f["status"]
want = {(a, b, s) for (a, b), s in worst.items()}
for x in sorted(got - want): print("served, not the doctor's: %s %s %s" % x)
for x in sorted(want - got): print("the doctor's, not served: %s %s %s" % x)
PY
)
	is "$diff" "" "$n: the exporter serves the doctor's findings, the worst per check and object"
done
done_testing
