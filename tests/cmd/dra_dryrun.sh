#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak dra --dry-run` on every sample node: the ResourceSlices within the API's limits (128
# devices a slice, 32 attributes a device, strings of 64 bytes), one pool per PF with its slice
# count and generation, device names unique DNS labels, resource.kubernetes.io/pcieRoot as
# k8s.io/dynamic-resource-allocation's deviceattribute derives it (here derived again, from the
# node's sysfs links by Python, not by rdmak's reader; also where a hypervisor's bus comes first,
# as on Azure's VMBus, and deviceattribute publishes none), the same bytes at every
# run and as recorded in tests/fixtures/dra/dryrun.sums (record a meant change with
#   GOLDEN_UPDATE=1 tests/run.sh build cmd/dra_dryrun).
. "$(dirname "$0")/../lib.sh"
sums="$TOP/tests/fixtures/dra/dryrun.sums"

run "$RDMAK" dra --help
is "$rc" 0 "--help exits 0"
like "$out" "--dry-run" "--help documents --dry-run"
run "$RDMAK" dra --bogus
is "$rc" 2 "an unknown option exits 2"
run "$RDMAK" dra --json --root "$NODES/a100-ib-bond"
is "$rc" 2 "--json without --dry-run exits 2"
run "$RDMAK" dra --dry-run --root "$NODES/a100-ib-bond" --node-name Node_A
is "$rc" 2 "a node name that is no DNS subdomain exits 2"
like "$err" "node name Node_A" "and names it"
run "$RDMAK" dra --dry-run --root "$NODES/a100-ib-bond" --node-name a --driver-name "$(printf 'd%.0s' $(seq 70)).io"
is "$rc" 2 "a driver name longer than 63 characters exits 2"
run "$RDMAK" dra --dry-run --root "$TMP/nowhere"
is "$rc" 1 "a missing sysfs root exits 1"

# --config, the device plugin's file: the driver publishes the devices of the resources it gives
# the driver ("servedBy": "dra") and refuses a device that a resource of each selects
split='{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{"linkTypes":["infiniband"%s]}},{"resourceName":"roce","rdmaHcaMax":4,"servedBy":"dra","selectors":{"linkTypes":["ether"]}}]}'
printf "$split" "" >"$TMP/split.json"
"$RDMAK" dra --dry-run --json --root "$NODES/a100-ib-bond" --node-name a --config "$TMP/split.json" >"$TMP/split.out" 2>"$TMP/err"
is "$? $(cat "$TMP/err")" "0 " "--config: a split config is taken"
is "$(jget "$TMP/split.out" "[dv['attributes']['rdmaDevice']['string'] for s in d['items'] for dv in s['spec']['devices']]")" \
	'["mlx5_bond_0"]' "only the devices of the resource given to the driver"
printf "$split" ',"ether"' >"$TMP/both.json"
run "$RDMAK" dra --dry-run --root "$NODES/a100-ib-bond" --node-name a --config "$TMP/both.json"
is "$rc" 2 "a device of both the plugin's and the driver's resource exits 2"
is "$err" "rdmak dra: --config: rdma/ib (configList[0], the device plugin's) and rdma/roce (configList[1], servedBy \"dra\") both select mlx5_bond_0: a device is handed out by one of them, never both; narrow one resource's selectors" \
	"naming both resources and the device"
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{}}]}' >"$TMP/none.json"
"$RDMAK" dra --dry-run --json --root "$NODES/a100-ib-bond" --node-name a --config "$TMP/none.json" >"$TMP/none.out"
is "$? $(jget "$TMP/none.out" "len(d['items'])")" "0 0" "a config that gives the driver nothing publishes nothing"
run "$RDMAK" dra --dry-run --root "$NODES/a100-ib-bond" --node-name a --config "$TMP/missing.json"
is "$rc" 2 "a missing --config exits 2"
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"servedBy":"DRA","selectors":{}}]}' >"$TMP/bad.json"
run "$RDMAK" dra --dry-run --root "$NODES/a100-ib-bond" --node-name a --config "$TMP/bad.json"
is "$rc $err" "2 rdmak dra: --config $TMP/bad.json: configList[0].servedBy: \"DRA\" is not one of \"plugin\", \"dra\"" \
	"a bad --config: the plugin's parser's words"

# The checks on one node's --json List; prints one line per failure, nothing when all hold.
cat >"$TMP/check.py" <<'EOF'
import json, os, re, sys
doc = json.load(open(sys.argv[1]))
root = sys.argv[2]
node = sys.argv[3]
bad = []
label = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
cident = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
names, pools = set(), {}
for s in doc["items"]:
    spec = s["spec"]
    if s["apiVersion"] != "resource.k8s.io/v1" or s["kind"] != "ResourceSlice":
        bad.append("not a v1 ResourceSlice")
    if spec["nodeName"] != node or spec["driver"] != "rdma.rdmak.io":
        bad.append("nodeName/driver")
    p = spec["pool"]
    pools.setdefault(p["name"], []).append((p["generation"], p["resourceSliceCount"]))
    if not 1 <= len(spec["devices"]) <= 128:
        bad.append("%s: %d devices" % (s["metadata"]["name"], len(spec["devices"])))
    if len(s["metadata"]["name"]) > 253:
        bad.append("slice name too long")
    for d in spec["devices"]:
        n = d["name"]
        if not label.match(n) or len(n) > 63 or n in names:
            bad.append("device name %r invalid or taken twice" % n)
        names.add(n)
        a = d["attributes"]
        if len(a) + len(d.get("capacity", {})) > 32:
            bad.append("%s: %d attributes" % (n, len(a)))
        for k, v in a.items():
            ident = k.split("/")[-1]
            if not cident.match(ident) or len(ident) > 32:
                bad.append("%s: attribute name %r" % (n, k))
            if len(v) != 1 or list(v)[0] not in ("string", "int", "bool", "version"):
                bad.append("%s: attribute %s is not one typed value" % (n, k))
            if "string" in v and len(v["string"].encode()) > 64:
                bad.append("%s: %s longer than 64 bytes" % (n, k))
        bdf = a.get("resource.kubernetes.io/pciBusID", {}).get("string")
        if bdf is None:
            continue
        # deviceattribute: readlink(sys/bus/pci/devices/BDF), the first component under
        # sys/devices/ when it starts with "pci" and the path ends in BDF
        # (filepath.Join: the link's text joined and cleaned, never resolved further)
        bus = os.path.join(root, "sys/bus/pci/devices")
        target = os.path.normpath(os.path.join(bus, os.readlink(os.path.join(bus, bdf))))
        rel = os.path.relpath(target, os.path.join(root, "sys/devices"))
        want = rel.split("/")[0] if rel.startswith("pci") and os.path.basename(target) == bdf else None
        got = a.get("resource.kubernetes.io/pcieRoot", {}).get("string")
        if got != want:
            bad.append("%s: pcieRoot %s, deviceattribute says %s" % (n, got, want))
for name, v in pools.items():
    if len(v) != v[0][1] or len(set(v)) != 1 or v[0][0] != 1:
        bad.append("pool %s: %d slices, counts/generations %s" % (name, len(v), sorted(set(v))))
    if not name.startswith(node + "/"):
        bad.append("pool %s is not this node's" % name)
print("\n".join(bad))
print("devices=%d slices=%d pools=%d" % (len(names), len(doc["items"]), len(pools)), file=sys.stderr)
EOF

: >"$TMP/sums"
n_nodes=0
for node in "$NODES"/*/; do
	node=${node%/}
	name=$(basename "$node")
	[ -d "$node/sys" ] || continue
	n_nodes=$((n_nodes + 1))
	"$RDMAK" dra --dry-run --json --root "$node" --node-name "$name" >"$TMP/$name.json" 2>"$TMP/err"
	rc=$?
	is "$rc" 0 "$name: --dry-run --json exits 0"
	bad=$("$PY" "$TMP/check.py" "$TMP/$name.json" "$node" "$name" 2>"$TMP/counts")
	is "$bad" "" "$name: $(cat "$TMP/counts"): within the API's limits, pcieRoot as deviceattribute derives it"
	"$RDMAK" dra --dry-run --root "$node" --node-name "$name" >"$TMP/a.yaml" 2>/dev/null
	"$RDMAK" dra --dry-run --root "$node" --node-name "$name" >"$TMP/b.yaml" 2>"$TMP/err"
	cmp -s "$TMP/a.yaml" "$TMP/b.yaml"
	ok $? "$name: the YAML is the same at every run"
	same=$("$PY" -c 'import json,sys,yaml; a=[d for d in yaml.safe_load_all(open(sys.argv[1]))]; b=json.load(open(sys.argv[2]))["items"]; print(a==b)' "$TMP/a.yaml" "$TMP/$name.json")
	is "$same" "True" "$name: the YAML stream holds what --json does"
	printf '%s %s %s\n' "$(sha256sum <"$TMP/a.yaml" | cut -c1-64)" \
		"$(sha256sum <"$TMP/err" | cut -c1-64)" "$name" >>"$TMP/sums"
done
[ "$n_nodes" -ge 12 ]; ok $? "every sample node ($n_nodes)"

# Azure's PCI functions hang under the VMBus (devices/LNXSYSTM:00/.../VMBUS:00/pci<dom>:00/...):
# deviceattribute finds no devices/pci prefix and publishes no pcieRoot; neither may rdmak
cp -a "$NODES/b2-cx6dx-roce" "$TMP/vmbus"
mkdir -p "$TMP/vmbus/sys/devices/LNXSYSTM:00/VMBUS:00"
ln -s ../../pci0000:b0 "$TMP/vmbus/sys/devices/LNXSYSTM:00/VMBUS:00/pci0000:b0"
for f in 0000:b1:00.0 0000:b1:00.1; do
	ln -sfn "../../../devices/LNXSYSTM:00/VMBUS:00/pci0000:b0/0000:b0:02.0/$f" "$TMP/vmbus/sys/bus/pci/devices/$f"
done
run "$RDMAK" dra --dry-run --json --root "$TMP/vmbus" --node-name vmbus
printf '%s' "$out" >"$TMP/vmbus.json"
is "$rc" 0 "a node whose PCI hangs under the VMBus: --dry-run exits 0"
is "$("$PY" "$TMP/check.py" "$TMP/vmbus.json" "$TMP/vmbus" vmbus 2>/dev/null)" "" "no pcieRoot where deviceattribute finds none"
is "$(jget "$TMP/vmbus.json" "[dv['attributes']['resource.kubernetes.io/pciBusID']['string'] for s in d['items'] for dv in s['spec']['devices'] if 'resource.kubernetes.io/pcieRoot' not in dv['attributes']]")" \
	'["0000:b1:00.0", "0000:b1:00.1"]' "both functions published without it, with their bus ID"

j="$TMP/cx7-rail-1016vf.json"
is "$(jget "$j" "len(d['items'])")" 8 "cx7-rail-1016vf: 8 slices, one per rail"
is "$(jget "$j" "sorted(set(len(s['spec']['devices']) for s in d['items']))")" "[128]" "each with its PF and 127 VFs"
is "$(jget "$j" "sum(len(s['spec']['devices']) for s in d['items'])")" 1024 "1016 VFs and 8 PFs published"
is "$(jget "$j" "sorted(set(dv['attributes']['rail']['int'] for s in d['items'] for dv in s['spec']['devices']))")" \
	"[0, 1, 2, 3, 4, 5, 6, 7]" "each rail numbered"
is "$(jget "$j" "[(dv['attributes']['function']['string'], dv['attributes']['pf']['string'], dv['attributes']['vfIndex']['int']) for dv in d['items'][0]['spec']['devices'][1:2]]")" \
	'[["vf", "0000:18:00.0", 0]]' "a VF names its PF and index"
is "$(jget "$j" "sorted(set((dv['attributes']['gpuRelation']['string']) for s in d['items'] for dv in s['spec']['devices']))")" \
	'["PIX"]' "every VF shares its rail's switch with a GPU (PIX)"

j="$TMP/a100-ib-bond.json"
is "$(jget "$j" "[(dv['name'], dv['attributes']['rdmaDevice']['string'], dv['attributes']['portState']['string']) for s in d['items'] for dv in s['spec']['devices']]")" \
	'[["pci-0000-46-00-0", "mlx5_0", "DOWN"], ["pci-0000-c6-00-0", "mlx5_1", "ACTIVE"], ["pci-0000-e1-00-0", "mlx5_bond_0", "ACTIVE"]]' \
	"a100-ib-bond: devices named by PCI address, their port state"
is "$(jget "$j" "d['items'][0]['spec']['devices'][0]['attributes']['pkeys']")" '{"string": "0xffff"}' "an IB port's pkeys"
is "$(jget "$j" "'pkeys' in d['items'][2]['spec']['devices'][0]['attributes']")" "False" "none on RoCE"

if [ -n "${GOLDEN_UPDATE:-}" ]; then
	mkdir -p "$(dirname "$sums")"
	cp "$TMP/sums" "$sums"
	skip "GOLDEN_UPDATE set: recorded $(wc -l <"$sums") sums in $sums" "dry-run output as recorded"
	done_testing
	exit
fi
while read -r o e name; do
	want=$(awk -v n="$name" '$3 == n' "$sums")
	[ "$want" = "$o $e $name" ]; ok $? "$name: YAML and stderr as recorded${want:+}"
	[ "$want" = "$o $e $name" ] || printf '#   recorded: %s\n#   now:      %s\n' "${want:-none}" "$o $e $name"
done <"$TMP/sums"
done_testing
