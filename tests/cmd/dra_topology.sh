#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NCCL's topology file as `rdmak dra` writes it for a claim (--dry-run --nccl-topology), on every
# sample node with GPUs and RDMA devices: a claim of each GPU with the RDMA PF nearest to it.
# Each file is read by a reader written here from NCCL's own rules (NVIDIA/nccl src/graph/xml.cc:
# xmlGetNode/xmlGetToken/xmlGetValue and the handlers' nesting, MAX_ATTR_COUNT 16, MAX_STR_LEN
# 255, version 1), each GPU and its NIC sit under the same element where sysfs puts them under
# one switch (PIX), and the files are as recorded in tests/fixtures/dra/topology/ (a meant
# change: GOLDEN_UPDATE=1 tests/run.sh build cmd/dra_topology). Last, the captures of the GPU
# machine (tests/captures/nccl): NCCL kept the file's hierarchy and dropped the NIC it lacks.
. "$(dirname "$0")/../lib.sh"
golden="$TOP/tests/fixtures/dra/topology"

cat >"$TMP/nccl_read.py" <<'EOF'
# NCCL's XML reader (src/graph/xml.cc), rule for rule: prints the tree as "depth name attrs"
# lines, or "ERROR: why" and exits 1.
import sys
MAX_STR_LEN, MAX_ATTR_COUNT = 255, 16
data = open(sys.argv[1], "rb").read().decode()
pos = 0
def getc():
    global pos
    if pos >= len(data):
        raise SystemExit("ERROR: unexpected EOF")
    c = data[pos]; pos += 1; return c
def get_value():
    c = getc()
    if c not in "\"'":
        raise SystemExit("ERROR: expected (double) quote")
    v = ""
    while True:
        d = getc()
        if d == c: break
        v += d
        if len(v) >= MAX_STR_LEN: raise SystemExit("ERROR: value too long")
    return v, getc()
def get_token(want_value):
    name = ""
    while True:
        c = getc()
        if c == "=":
            if not want_value: raise SystemExit("ERROR: unexpected value for " + name)
            v, last = get_value(); return name, v, last
        if c in " >/\n\r": return name, None, c
        name += c
        if len(name) >= MAX_STR_LEN: raise SystemExit("ERROR: name too long")
def get_node():
    global pos
    c = " "
    while c in " \n\r":
        if pos >= len(data): return None
        c = getc()
    if c != "<": raise SystemExit("ERROR: expecting '<', got %r" % c)
    name, _, c = get_token(False)
    if name == "" and c == "/":
        name, _, c = get_token(False)
        if c != ">": raise SystemExit("ERROR: trailing %r in closing tag" % c)
        return ("close", name, [])
    attrs = []
    while c == " ":
        k, v, c = get_token(True)
        attrs.append((k, v))
    if len(attrs) > MAX_ATTR_COUNT: raise SystemExit("ERROR: more than 16 attributes on " + name)
    kind = "open"
    if c == "/":
        kind = "single"; _, _, c = get_token(False)
    if c != ">": raise SystemExit("ERROR: expected '>', got %r" % c)
    return (kind, name, attrs)
HANDLERS = {None: ["system"], "system": ["cpu"], "cpu": ["pci", "nic"],
            "pci": ["pci", "gpu", "nic", "pcilink"], "nic": ["net"], "gpu": ["nvlink", "c2c"],
            "net": [], "nvlink": [], "c2c": [], "pcilink": []}
out = []
def load(head, depth):
    while True:
        n = get_node()
        if n is None:
            if head: raise SystemExit("ERROR: unterminated " + head)
            return
        kind, name, attrs = n
        if head and kind == "close":
            if name != head: raise SystemExit("ERROR: mismatch %s / %s" % (head, name))
            return
        if kind == "close": raise SystemExit("ERROR: stray closing tag " + name)
        if name not in HANDLERS.get(head, []):
            raise SystemExit("ERROR: %s is ignored under %s" % (name, head))
        if name == "system" and dict(attrs).get("version") != "1":
            raise SystemExit("ERROR: version")
        out.append("%d %s %s" % (depth, name, " ".join("%s=%s" % a for a in attrs)))
        if kind == "open": load(name, depth + 1)
load(None, 0)
print("\n".join(out))
EOF

# pairs GPU -> its nearest RDMA PF, from the dry-run's attributes
cat >"$TMP/pairs.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
best = {}
for s in d["items"]:
    for dv in s["spec"]["devices"]:
        a = dv["attributes"]
        if a["function"]["string"] != "pf" or "nearestGPU" not in a: continue
        g, rel = a["nearestGPU"]["string"], a["gpuRelation"]["string"]
        order = ["PIX", "PXB", "PHB", "NODE", "SYS"].index(rel)
        if g not in best or order < best[g][0]: best[g] = (order, dv["name"], rel)
for g in sorted(best): print(g, best[g][1], best[g][2])
EOF

n_nodes=0
for node in "$NODES"/*/; do
	node=${node%/}
	name=$(basename "$node")
	"$RDMAK" dra --dry-run --json --root "$node" --node-name n >"$TMP/$name.json" 2>/dev/null || continue
	"$PY" "$TMP/pairs.py" "$TMP/$name.json" >"$TMP/$name.pairs"
	[ -s "$TMP/$name.pairs" ] || continue
	n_nodes=$((n_nodes + 1))
	list=$(awk '{print $1","$2}' "$TMP/$name.pairs" | paste -sd,)
	run "$RDMAK" dra --dry-run --root "$node" --node-name n --nccl-topology "$list"
	is "$rc" 0 "$name: --nccl-topology of $(wc -l <"$TMP/$name.pairs") GPU and NIC pairs exits 0"
	printf '%s' "$out" >"$TMP/$name.xml"
	echo >>"$TMP/$name.xml"
	"$PY" "$TMP/nccl_read.py" "$TMP/$name.xml" >"$TMP/$name.tree" 2>&1
	ok $? "$name: NCCL's reader rules take it ($(grep -c ' net ' "$TMP/$name.tree") nets, $(grep -c ' pci ' "$TMP/$name.tree") pci elements)"
	# each PIX pair under one element: the GPU's pci and the NIC's pci have the same parent
	bad=$("$PY" - "$TMP/$name.tree" "$TMP/$name.pairs" "$TMP/$name.json" <<-'EOF'
	import json, re, sys
	lines = [(l.split(" ", 2) + [""])[:3] for l in open(sys.argv[1]).read().splitlines()]
	parent, stack = {}, []
	for depth, name, attrs in lines:
	    depth = int(depth)
	    stack = stack[:depth]
	    kv = dict(re.findall(r"(\w+)=(.*?)(?= \w+=|$)", attrs))
	    key = kv.get("busid") or name + str(len(parent))
	    parent[key] = stack[-1] if stack else None
	    stack.append(key)
	bdf = {}
	for s in json.load(open(sys.argv[3]))["items"]:
	    for dv in s["spec"]["devices"]:
	        bdf[dv["name"]] = dv["attributes"]["resource.kubernetes.io/pciBusID"]["string"]
	for line in open(sys.argv[2]):
	    g, dev, rel = line.split()
	    if rel == "PIX" and parent.get(g) != parent.get(bdf[dev]):
	        print("%s and %s (%s) not under one switch: %s / %s" % (g, dev, rel, parent.get(g), parent.get(bdf[dev])))
	EOF
	)
	is "$bad" "" "$name: each GPU under the same switch element as its PIX NIC"
	if [ -n "${GOLDEN_UPDATE:-}" ]; then
		mkdir -p "$golden"
		cp "$TMP/$name.xml" "$golden/$name.xml"
	else
		same_file "$TMP/$name.xml" "$golden/$name.xml" "$name: the file as recorded"
	fi
done
[ "$n_nodes" -ge 6 ]; ok $? "sample nodes with GPU and NIC pairs: $n_nodes"

# cx7-rail-1016vf, rail 0: the PF, two VFs and GPU0: every one under the rail's switch upstream
# port (0000:16:00.0), the VFs' link the PF's, the system image GUID as NCCL prints it
run "$RDMAK" dra --dry-run --root "$NODES/cx7-rail-1016vf" --node-name n \
	--nccl-topology pci-0000-18-00-0,pci-0000-18-00-1,pci-0000-18-00-2,0000:19:00.0
printf '%s\n' "$out" >"$TMP/rail.xml"
"$PY" "$TMP/nccl_read.py" "$TMP/rail.xml" >"$TMP/rail.tree"
is "$(awk '$2 == "pci" {print $1, $3}' "$TMP/rail.tree" | cut -d' ' -f1,2)" "$(printf '2 busid=0000:16:00.0\n3 busid=0000:18:00.0\n3 busid=0000:18:00.1\n3 busid=0000:18:00.2\n3 busid=0000:19:00.0')" \
	"rail 0: the PF, its VFs and the GPU under the switch's upstream port, by bus ID"
like "$(grep 'busid=0000:18:00.2' "$TMP/rail.tree")" "link_speed=32.0 GT/s PCIe link_width=16" "a VF carries its PF's link"
like "$(grep 'name=mlx5_0' "$TMP/rail.tree")" "speed=400000 port=1 guid=0x106a450003c288a0 gdr=1" \
	"NDR as Mb/s, sys_image_guid 106a:4500:03c2:88a0 byte-reversed as NCCL prints it, gdr with nvidia_peermem"
cat "$NODES/cx7-rail-1016vf/sys/class/infiniband/mlx5_0/sys_image_guid" >"$TMP/guid"
is "$(cat "$TMP/guid")" "a088:c203:0045:6a10" "(the sysfs value that is)"
run "$RDMAK" dra --dry-run --root "$NODES/cx7-rail-1016vf" --node-name n --nccl-topology pci-0000-99-00-0
is "$rc" 2 "a device the node does not have exits 2"
like "$err" "pci-0000-99-00-0 is neither" "and names it"

# the GPU machine's captures
C="$TOP/tests/captures/nccl"
for f in topo topo-dump topo-switch topo-switch-dump none-dump; do
	"$PY" "$TMP/nccl_read.py" "$C/$f.xml" >"$TMP/$f.tree" 2>&1
	ok $? "capture $f.xml: NCCL's reader rules take it"
done
is "$(awk '$2 == "pci" || $2 == "gpu" || $2 == "net" {print $1, $2, $3}' "$TMP/topo-switch-dump.tree" | cut -d' ' -f1-3)" \
	"$(printf '2 pci busid=0000:fe:00.0\n3 pci busid=0000:00:06.0\n4 gpu dev=0\n3 pci busid=0000:00:07.0\n4 gpu dev=1\n3 net name=eth0')" \
	"NCCL kept the file's switch with both GPUs under it, added its <gpu>s, and dropped mlx5_0 (the machine has no such NIC)"
like "$(grep 'busid=0000:fe:00.0' "$TMP/topo-switch-dump.tree")" "link_width=8" "and the switch's x8 link"
like "$(grep 'busid=0000:00:06.0' "$TMP/topo-dump.tree")" "link_width=16" "rdmak's link width kept ..."
like "$(grep 'busid=0000:00:06.0' "$TMP/none-dump.tree")" "link_width=0" "... where NCCL's own reading of the VM's sysfs says 0"
like "$(cat "$C/run.log")" "rank 0 sum 3.0" "the all-reduce's sum is right"
done_testing
