#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak convert` on the seeds' own YAML and the anchors' published examples
# (tests/fixtures/convert/SOURCES.md): the output is the golden one, every NAD's config passes
# rdmak-cni's and rdmak-ipam's own parsers as Multus would send it (tests/helpers/cni_conf_check),
# every plugin config passes `rdmak plugin --dry-run` on a sample node, and the seeds'
# inconsistencies are said as FIX notes with exit 1.
. "$(dirname "$0")/../lib.sh"
FX=tests/fixtures/convert
CHECK="$BUILD/tests/helpers/cni_conf_check"
cd "$TOP" || exit 1

run "$RDMAK" convert --help
is "$rc" 0 "--help exits 0"
like "$out" "SriovNetworkNodePolicy" "--help names the kinds it reads"
run "$RDMAK" convert
is "$rc" 2 "no FILE exits 2"
run "$RDMAK" convert --bogus "$FX/seed003-hostdev.yaml"
is "$rc" 2 "an unknown option exits 2"
run "$RDMAK" convert "$TMP/none.yaml"
is "$rc" 3 "an unreadable file exits 3"
run "$RDMAK" convert "$FX/seed004-ibsriov-pkey.yaml"
is "$rc" 3 "seed 004's pkey fragment (it ends in ...) is not YAML: exit 3"
like "$err" "seed004-ibsriov-pkey.yaml: line 11" "the parser's error names the file and line"

# golden outputs
for f in "$FX"/*.yaml; do
	case $f in *.out.yaml | *-pkey.yaml | */supported-nic-ids.yaml) continue ;; esac
	"$RDMAK" convert "$f" >"$TMP/out.yaml"
	if [ -n "${RDMAK_CONVERT_REGEN:-}" ]; then cp "$TMP/out.yaml" "${f%.yaml}.out.yaml"; fi
	same_file "$TMP/out.yaml" "${f%.yaml}.out.yaml" "$(basename "$f"): the golden output"
done

# expected exit codes and the notes that make them
run "$RDMAK" convert "$FX/seed003-ncp-shared.yaml"
is "$rc" 0 "seed 003's shared-plugin NicClusterPolicy converts without a FIX"
like "$out" "spec.ofedDriver: not carried: rdmak never installs drivers: \`rdmak doctor\`" "ofedDriver: a note that rdmak never installs drivers"
run "$RDMAK" convert "$FX/seed003-hostdev.yaml"
is "$rc" 1 "seed 003's HostDeviceNetwork: exit 1 (its range hides a byte)"
like "$out" 'FIX spec: rdmak-cni refuses this config .*ipam.range: "192.168.x.152/27"' "the hidden byte is a FIX naming ipam.range"
run "$RDMAK" convert "$FX/seed004-ibsriov.yaml"
is "$rc" 1 "seed 004's ib-sriov network: exit 1"
like "$out" "FIX spec.ippools.ipv4: names SpiderIPPool gpu1-net91, which no input defines" "the undefined pool gpu1-net91 is said"
run "$RDMAK" convert "$FX/seed004-sriov-policies.yaml"
is "$rc" 1 "seed 004's policies: exit 1"
like "$out" "FIX spec.nicSelector.rootDevices: PF 0000:86:00.0 is also selected by policy gpu2-nic-policy" "two policies on one PF are said"
run "$RDMAK" convert "$FX/seed004-sriov.yaml"
is "$rc" 0 "seed 004's sriov network with its pool: exit 0"
like "$out" "subnet 172.16.11.0/16 has host bits set; its network 172.16.0.0/16 is used" "the pool's subnet with host bits is said"
# seed 004 gives SpiderMultusConfig gpu1-sriov twice (ib-sriov, then sriov), its pool twice the same
run "$RDMAK" convert "$FX/seed004-ibsriov.yaml" "$FX/seed004-sriov.yaml"
is "$rc" 1 "seed 004's two networks named gpu1-sriov: exit 1"
like "$out" "FIX metadata.name: SpiderMultusConfig gpu1-sriov is also defined, differently, in $FX/seed004-sriov.yaml" "the name given twice is said"
unlike "$out" "SpiderIPPool gpu1-net11 is also defined" "the pool given twice the same is no conflict"
# the policies and their networks together: the prefix comes from the networks
run "$RDMAK" convert "$FX/seed004-sriov-policies.yaml" "$FX/seed004-sriov.yaml"
like "$out" "resourcePrefix: spidernet.io" "a network naming spidernet.io/gpu1sriov gives the policy's resource its prefix"

# NADs: every config through rdmak-cni's own parsers, as Multus sends it (deviceID from the
# device plugin, a GUID when the network has the infinibandGUID capability)
nads() { # nads FILE...: each NAD's config into $TMP/nad-N.json; prints the count
	"$RDMAK" convert --json "$@" >"$TMP/model.json"
	"$PY" - "$TMP/model.json" "$TMP" <<-'PYEOF'
	import json, sys
	m = json.load(open(sys.argv[1]))
	n = 0
	for d in m["documents"]:
	    for o in d["objects"]:
	        if o["kind"] != "NetworkAttachmentDefinition":
	            continue
	        c = json.loads(o["spec"]["config"])
	        if c.get("link") == "hostdev":
	            c["deviceID"] = "0000:1b:00.2"
	        if c.get("capabilities", {}).get("infinibandGUID"):
	            c["runtimeConfig"] = {"infinibandGUID": "02:00:00:00:00:00:00:01"}
	        n += 1
	        json.dump(c, open("%s/nad-%d.json" % (sys.argv[2], n), "w"))
	print(n)
	PYEOF
}
is "$(nads "$FX/seed004-sriov.yaml" "$FX/seed004-sriov-inject.yaml" "$FX/seed004-ibsriov.yaml" "$FX/seed004-ibsriov-inject.yaml")" 4 "seed 004: four NADs"
run "$CHECK" "$TMP"/nad-*.json
is "$rc" 0 "seed 004's NADs pass rdmak-cni's and rdmak-ipam's parsers"
rm -f "$TMP"/nad-*.json
sed 's/192\.168\.x\./192.168.2./g' "$FX/seed003-hostdev.yaml" >"$TMP/seed003-hostdev-2.yaml"
run "$RDMAK" convert "$TMP/seed003-hostdev-2.yaml"
is "$rc" 0 "seed 003's HostDeviceNetwork with its byte filled in converts without a FIX"
is "$(nads "$TMP/seed003-hostdev-2.yaml")" 1 "seed 003: one NAD"
run "$CHECK" "$TMP"/nad-1.json
is "$rc" 0 "seed 003's NAD passes rdmak-cni's and rdmak-ipam's parsers"
rm -f "$TMP"/nad-*.json
is "$(nads "$FX/seed003-hostdev.yaml")" 1 "seed 003 as written: one NAD"
run "$CHECK" "$TMP"/nad-1.json
is "$rc" 1 "... which the parsers refuse, as the FIX note says"
like "$out" 'code 7: .*ipam.range' "... on ipam.range"
rm -f "$TMP"/nad-*.json
is "$(nads "$FX/anchor-examples.yaml")" 3 "the operator's examples: three NADs"
run "$CHECK" "$TMP"/nad-2.json "$TMP"/nad-3.json
is "$rc" 0 "its MacvlanNetwork and HostDeviceNetwork pass the parsers"
run "$CHECK" "$TMP"/nad-1.json
like "$out" "ipam.gateway: 192.168.6.1 is in none of the ranges' subnets" "its IPoIBNetwork's gateway outside its range is refused, as convert's FIX says"

# plugin configs: the values' plugin.config through `rdmak plugin --dry-run`
pcfg() { "$RDMAK" convert --json "$@" | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["values"]["plugin"]["config"]))' >"$TMP/plugin.json"; }
pcfg "$FX/seed003-ncp-shared.yaml"
run "$RDMAK" plugin --dry-run --root "$NODES/a100-ib-bond" --config "$TMP/plugin.json"
is "$rc" 0 "seed 003's shared config: plugin --dry-run exits 0"
like "$out" "rdma/rdma_a100" "... and declares rdma/rdma_a100"
pcfg "$FX/seed003-ncp-sriov.yaml"
run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$TMP/plugin.json"
is "$rc" 0 "seed 003's sriovDevicePlugin config: plugin --dry-run exits 0"
like "$out" "nvidia.com/hostdev" "... and declares nvidia.com/hostdev"
sed 's/\${LINK_TYPE}/eth/' "$FX/seed004-sriov-policies.yaml" >"$TMP/policies.yaml"
pcfg "$TMP/policies.yaml" "$FX/seed004-sriov.yaml"
run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$TMP/plugin.json"
is "$rc" 0 "seed 004's policies (LINK_TYPE=eth, as its shell sets it): plugin --dry-run exits 0"
like "$out" "spidernet.io/gpu1sriov" "... and declares spidernet.io/gpu1sriov"

# several documents, a List, and an empty document
printf -- '---\n---\napiVersion: v1\nkind: List\nitems:\n- kind: SpiderIPPool\n  metadata: {name: p}\n  spec: {subnet: 10.0.0.0/24, ips: [10.0.0.5-10.0.0.9]}\n- kind: SpiderMultusConfig\n  metadata: {name: m, namespace: n}\n  spec: {cniType: macvlan, macvlan: {master: [ens1f0], ippools: {ipv4: [p]}}}\n' >"$TMP/list.yaml"
run "$RDMAK" convert "$TMP/list.yaml"
is "$rc" 0 "a List with an empty document before it converts"
like "$out" '"rangeStart": "10.0.0.5"' "the List's pool is found by its network"
like "$out" '"master": "ens1f0"' "the macvlan master is carried"

# sriov-network-operator's supported-nic-ids, row by row: a policy naming the PF's device ID
# gives a plugin entry selecting the VFs' (supported-nic-ids.yaml, SOURCES.md)
while read -r name pf vf; do
	printf 'kind: SriovNetworkNodePolicy\nmetadata: {name: p}\nspec:\n  resourceName: r\n  numVfs: 4\n  nicSelector: {vendor: "15b3", deviceID: "%s"}\n  deviceType: netdevice\n  isRdma: true\n' "$pf" >"$TMP/row.yaml"
	got=$("$RDMAK" convert --json "$TMP/row.yaml" | "$PY" -c 'import json,sys; print(",".join(json.load(sys.stdin)["values"]["plugin"]["config"]["resourceList"][0]["selectors"]["devices"]))')
	is "$got" "$vf" "supported-nic-ids $name: PF $pf, the VFs' device ID $vf"
done < <("$PY" -c 'import sys
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("Nvidia_"):
        k, v = l.split(": ", 1)
        print(k, *v.strip("\"").split()[1:])' "$FX/supported-nic-ids.yaml")

done_testing
