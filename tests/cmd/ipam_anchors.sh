#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The anchors' own test tables (whereabouts' pkg/config, pkg/allocate and pkg/iphelpers,
# host-local's range, range_set and allocator tests), ported as fixtures
# (tests/fixtures/anchors/ipam/SOURCES.md), run through the real rdmak-ipam: each case is a
# fresh store, "prior" addresses claimed first with IP=, then ADDs whose addresses, gateway and
# routes (or refusal: code and words) are compared with what the case expects. A case with
# "steps" (host-local's release-then-reuse order) runs its ADDs ("ADD c1", "ADD c1 IP=10.0.0.4")
# and DELs in that order instead, every ADD's address compared; only its last step may be
# refused. A case with "differs" is a deliberate difference that docs/ipam.md "Migrating from
# whereabouts / host-local" justifies under that name; the test checks that the docs say so,
# and the closing comment counts the cases that behave as the anchor.
. "$(dirname "$0")/../lib.sh"
IPAM="$BUILD/cni/rdmak-ipam"
FIX="$TOP/tests/fixtures/anchors/ipam"

"$PY" - "$IPAM" "$FIX" "$TMP" "$TOP/docs/ipam.md" >"$TMP/results" <<'PYEOF'
import json, os, subprocess, sys

ipam, fix, tmp, docs = sys.argv[1:5]
docs_text = open(docs).read()
same = total = 0

def add(conf, cid, ip=None, command="ADD"):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RDMAK_CNI_CONFIG": os.environ["RDMAK_CNI_CONFIG"],
           "CNI_COMMAND": command, "CNI_CONTAINERID": cid,
           "CNI_NETNS": "/proc/self/ns/net", "CNI_IFNAME": "net1", "CNI_PATH": "/nonexistent",
           "CNI_ARGS": "IgnoreUnknown=1" + (";IP=" + ip if ip else "")}
    p = subprocess.run([ipam], input=json.dumps(conf).encode(), env=env, capture_output=True, timeout=60)
    try:
        out = json.loads(p.stdout or b"{}")
    except ValueError:
        out = {"code": -1, "details": p.stdout.decode(errors="replace")}
    return p.returncode, out

def steps(conf, todo, want):
    """A sequence such as host-local's release-then-reuse: "ADD c0", "ADD c1 IP=10.0.0.4", "DEL c0".
    Every ADD is compared in order with want["ips"]; only the last step may be refused."""
    why, ips = [], []
    for k, step in enumerate(todo):
        words = step.split()
        ip = words[2][3:] if len(words) > 2 else None
        rc, out = add(conf, words[1], ip, words[0])
        if words[0] == "DEL":
            if rc != 0:
                why.append("%s: %s %s" % (step, out.get("code"), out.get("details")))
            continue
        if rc != 0:
            if "code" in want and k == len(todo) - 1:
                if out.get("code") != want["code"] or want.get("details", "") not in (out.get("details") or ""):
                    why.append("%s refused %s %s, want %s %s" % (step, out.get("code"), out.get("details"),
                                                                 want["code"], want.get("details", "")))
            else:
                why.append("%s refused: %s %s" % (step, out.get("code"), out.get("details")))
            return why
        if "code" in want and k == len(todo) - 1:
            why.append("%s accepted (%s), want code %s" % (step, out.get("ips"), want["code"]))
        ips.append(out["ips"][0]["address"])
    if ips != want.get("ips", ips) and not why:
        why.append("addresses %s, want %s" % (ips, want["ips"]))
    return why

def check(case, src, n):
    ipam_block = {"type": "rdmak-ipam"}
    ipam_block.update(case["ipam"])
    if not any(k in ipam_block for k in ("datastore", "etcd_host", "store")):
        ipam_block["dataDir"] = os.path.join(tmp, "%s-%d" % (src, n))
    conf = {"cniVersion": "1.0.0", "name": "anchors", "type": "macvlan", "ipam": ipam_block}
    why = []
    for k, ip in enumerate(case.get("prior", [])):
        rc, out = add(conf, "prior%d" % k, ip)
        if rc != 0:
            why.append("prior %s: %s" % (ip, out.get("details")))
    for ip, code in case.get("requested", {}).items():
        rc, out = add(conf, "req-" + ip.replace(":", "-"), ip)
        got = 0 if rc == 0 else out.get("code")
        if got != code:
            why.append("IP=%s: code %s, want %s (%s)" % (ip, got, code, out.get("details")))
    want = case["expect"]
    ips = []
    if "steps" in case:
        why += steps(conf, case["steps"], want)
    adds = case.get("adds", 1) if ("ips" in want or "code" in want) and "steps" not in case else 0
    for k in range(adds):
        rc, out = add(conf, "c0" if case.get("same_container") else "c%d" % k)
        if rc != 0:
            if "code" in want and k == adds - 1:
                if out.get("code") != want["code"] or want.get("details", "") not in (out.get("details") or ""):
                    why.append("refused %s %s, want %s %s" % (out.get("code"), out.get("details"),
                                                               want["code"], want.get("details", "")))
                break
            why.append("ADD %d refused: %s %s" % (k, out.get("code"), out.get("details")))
            break
        if "code" in want:
            why.append("ADD %d accepted (%s), want code %s" % (k, out.get("ips"), want["code"]))
            break
        ips.append(out["ips"][0]["address"])
        if k == 0 and "gateway" in want and out["ips"][0].get("gateway") != want["gateway"]:
            why.append("gateway %s, want %s" % (out["ips"][0].get("gateway"), want["gateway"]))
        if k == 0 and "routes" in want and [r["dst"] for r in out.get("routes", [])] != want["routes"]:
            why.append("routes %s, want %s" % (out.get("routes"), want["routes"]))
    if "ips" in want and "steps" not in case and ips != want["ips"] and not why:
        why.append("addresses %s, want %s" % (ips, want["ips"]))
    if "differs" in case and ("**%s" % case["differs"]) not in docs_text:
        why.append("docs/ipam.md does not justify \"%s\"" % case["differs"])
    return why

for name in sorted(os.listdir(fix)):
    if not name.endswith(".json"):
        continue
    src = name[:-5]
    for n, case in enumerate(json.load(open(os.path.join(fix, name)))):
        why = check(case, src, n)
        total += 1
        if not why and "differs" not in case:
            same += 1
        label = "%s: %s%s" % (src, case["name"], " (differs: %s)" % case["differs"] if "differs" in case else "")
        print("%d\t%s" % (1 if why else 0, label))
        for w in why:
            print("#\t  " + w)
print("#\t%d of %d cases behave as the anchor; the other %d are justified in docs/ipam.md" % (same, total, total - same))
PYEOF
is "$?" 0 "the fixture runner ran"
while IFS=$'\t' read -r rc text; do
	if [ "$rc" = "#" ]; then echo "# $text"; else ok "$rc" "$text"; fi
done <"$TMP/results"
done_testing
