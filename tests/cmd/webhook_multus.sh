#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Multus's own rules for the networks annotation (tests/fixtures/anchors/multus/SOURCES.md), run
# through `rdmak webhook --explain` on a pod that asks for a group: what Multus would refuse is
# refused at admission naming the entry; what it reads is what the JSON form written back says,
# the user's entries first, exactly as Multus reads them, then the group's. A case with
# "differs" is justified in docs/webhook.md under that name (checked here).
. "$(dirname "$0")/../lib.sh"
FX="$TOP/tests/fixtures/webhook"
ANCH="$TOP/tests/fixtures/anchors/multus"

"$PY" - "$RDMAK" "$FX/config.yaml" "$ANCH/annotations.json" "$TMP" "$TOP/docs/webhook.md" >"$TMP/results" <<'PYEOF'
import json, subprocess, sys

rdmak, cfg, cases, tmp, docs = sys.argv[1:6]
docs_text = open(docs).read()
same = total = 0
for n, c in enumerate(json.load(open(cases))):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default",
                        "annotations": {"k8s.v1.cni.cncf.io/networks": c["annotation"],
                                        "rdmak.io/rdma-networks": "gpu-sriov"}},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    path = "%s/pod%d.json" % (tmp, n)
    json.dump(pod, open(path, "w"))
    p = subprocess.run([rdmak, "webhook", "--explain", "--config", cfg, path], capture_output=True, timeout=60)
    err = p.stderr.decode(errors="replace")
    why = []
    if "refused" in c:
        if p.returncode != 1 or c["refused"] not in err:
            why.append("exit %d, stderr %r; want 1 and %r" % (p.returncode, err.strip()[:300], c["refused"]))
    elif p.returncode != 0:
        why.append("exit %d: %s" % (p.returncode, err.strip()[:300]))
    else:
        out = json.loads(p.stdout)
        got = json.loads(out["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
        want = c["networks"]
        if got[:len(want)] != want:
            why.append("wrote %s; want %s first" % (json.dumps(got[:len(want)]), json.dumps(want)))
        elif not all(g.get("namespace") == "spiderpool" for g in got[len(want):]):
            why.append("after the user's entries: %s" % json.dumps(got[len(want):]))
    if "differs" in c and ("**%s" % c["differs"]) not in docs_text:
        why.append("docs/webhook.md does not justify \"%s\"" % c["differs"])
    total += 1
    if not why and "differs" not in c:
        same += 1
    print("%d\t%s%s" % (1 if why else 0, c["name"], " (differs: %s)" % c["differs"] if "differs" in c else ""))
    for w in why:
        print("#\t  " + w)
print("#\t%d of %d cases behave as Multus; the other %d are justified in docs/webhook.md" % (same, total, total - same))
PYEOF
is "$?" 0 "the fixture runner ran"
while IFS=$'\t' read -r rc text; do
	if [ "$rc" = "#" ]; then echo "# $text"; else ok "$rc" "$text"; fi
done <"$TMP/results"
done_testing
