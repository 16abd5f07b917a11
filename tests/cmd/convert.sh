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

# whereabouts' own etcd: the node's store by name (the values), never an address or a file in the
# network; its client certificate is a FIX
cat >"$TMP/wb-etcd.yaml" <<-'EOF'
	apiVersion: mellanox.com/v1alpha1
	kind: MacvlanNetwork
	metadata: {name: wb-etcd}
	spec:
	  master: ens2f0
	  ipam: '{"type": "whereabouts", "datastore": "etcd", "etcd_host": "10.0.0.1:2379,10.0.0.2:2379", "etcd_key_file": "/etc/wb/key.pem", "range": "10.9.0.0/24", "log_file": "/tmp/whereabouts.log"}'
	EOF
run "$RDMAK" convert "$TMP/wb-etcd.yaml"
is "$rc" 1 "whereabouts' own etcd: exit 1 (its certificate is the node's to give)"
like "$out" '"etcd": "whereabouts"' "the network names the node's store whereabouts"
unlike "$out" '"etcd_host"|"etcd_key_file"|/etc/wb/key.pem' "... no address or file of etcd in the network"
like "$out" 'FIX spec.ipam: whereabouts. etcd \(etcd_host 10.0.0.1:2379,10.0.0.2:2379\) becomes the node.s etcd store "whereabouts"' "... a FIX saying so"
like "$out" '"log_file": "/var/log/rdmak/whereabouts.log"' "its log file moves beneath the node's logDir"

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

# --- what keeps a migration safe (issue 28 §5) ---------------------------------------------------
# nadcfg FILE...: the config of the first NAD (JSON) into $TMP/nad.json
nadcfg() { "$RDMAK" convert --json "$@" | "$PY" -c 'import json,sys
m = json.load(sys.stdin)
print([o["spec"]["config"] for d in m["documents"] for o in d["objects"] if o["kind"] == "NetworkAttachmentDefinition"][0])' >"$TMP/nad.json"; }
# Spiderpool's own SpiderIPPool example (excludeIPs as ranges and addresses), with two addresses
# its running pods hold (status.allocatedIPs, Spiderpool's JSON map)
cat >"$TMP/held.yaml" <<-'EOF2'
	apiVersion: spiderpool.spidernet.io/v2beta1
	kind: SpiderIPPool
	metadata: {name: master-172}
	spec:
	  ipVersion: 4
	  subnet: 172.31.192.0/20
	  ips: [172.31.199.180-172.31.199.189, 172.31.199.205-172.31.199.209]
	  excludeIPs: [172.31.199.186-172.31.199.188, 172.31.199.207]
	  gateway: 172.31.207.253
	status:
	  allocatedIPs: '{"172.31.199.180":{"interface":"net1","pod":"ai/train-0","podUid":"u0"},"172.31.199.208":{"interface":"net1","pod":"ai/train-1","podUid":"u1"}}'
	  allocatedIPCount: 2
	---
	apiVersion: spiderpool.spidernet.io/v2beta1
	kind: SpiderMultusConfig
	metadata: {name: held, namespace: ai}
	spec:
	  cniType: sriov
	  sriov:
	    resourceName: spidernet.io/gpu1sriov
	    vlanID: 100
	    minTxRateMbps: 100
	    maxTxRateMbps: 2000
	    ippools: {ipv4: [master-172]}
	EOF2
run "$RDMAK" convert "$TMP/held.yaml"
is "$rc" 0 "a pool with excludeIPs and addresses in use converts without a FIX"
like "$out" "SpiderIPPool master-172: 172.31.199.180 is held by pod ai/train-0 \(interface net1\) under Spiderpool: excluded" "each address a running pod holds is named, with its pod"
like "$out" "172.31.199.208 is held by pod ai/train-1" "... every one of them"
unlike "$out" "excludeIPs not carried|vlanID: not carried|TxRateMbps: not carried" "excludeIPs, vlanID and the rates are not dropped"
nadcfg "$TMP/held.yaml"
is "$(jget "$TMP/nad.json" "[d['vlan'], d['min_tx_rate'], d['max_tx_rate']]")" "[100, 100, 2000]" \
	"sriov's vlanID, minTxRateMbps, maxTxRateMbps become rdmak-cni's vlan, min_tx_rate, max_tx_rate"
is "$(jget "$TMP/nad.json" "[r.get('exclude') for r in d['ipam']['ranges'][0]]")" \
	'[["172.31.199.180", "172.31.199.186/31", "172.31.199.188"], ["172.31.199.207", "172.31.199.208"]]' \
	"excludeIPs and the held addresses become each range's exclude"
# the NAD as rdmak-ipam runs it (on a file store here): every address it hands out, until the
# pool is full, is one Spiderpool would not give (not excluded, not held)
"$PY" - "$TMP/nad.json" "$TMP/held-ipam" >"$TMP/held-conf.json" <<-'EOF2'
	import json, sys
	c = json.load(open(sys.argv[1]))
	for k in ("etcd",): c["ipam"].pop(k)
	c["ipam"]["store"] = "file"; c["ipam"]["dataDir"] = sys.argv[2]
	print(json.dumps(c))
	EOF2
got=
for i in $(seq 1 12); do
	a=$(env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND=ADD CNI_CONTAINERID="held$i" CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 \
		"$BUILD/cni/rdmak-ipam" <"$TMP/held-conf.json" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["ips"][0]["address"].split("/")[0] if "ips" in d else "code %d" % d["code"])')
	got+="$a "
done
is "$got" "172.31.199.181 172.31.199.182 172.31.199.183 172.31.199.184 172.31.199.185 172.31.199.189 172.31.199.205 172.31.199.206 172.31.199.209 code 110 code 110 code 110 " \
	"rdmak-ipam on the converted NAD hands out only what Spiderpool would: never an excluded or held address"
printf 'kind: SpiderIPPool\nmetadata: {name: p}\nspec: {subnet: 10.0.0.0/24, ips: [10.0.0.5-10.0.0.9]}\nstatus: {allocatedIPs: "not json"}\n---\nkind: SpiderMultusConfig\nmetadata: {name: m, namespace: n}\nspec: {cniType: macvlan, macvlan: {master: [ens1f0], ippools: {ipv4: [p]}}}\n' >"$TMP/badheld.yaml"
run "$RDMAK" convert "$TMP/badheld.yaml"
is "$rc" 1 "allocatedIPs that cannot be read: exit 1"
like "$out" "FIX spec.ippools.ipv4: SpiderIPPool p: status.allocatedIPs is not Spiderpool's map" "... a FIX saying the addresses in use were not carried"

# Spiderpool's RoCE shared-mode macvlan (its webhook guide): enableRdma is the shared RDMA device
cat >"$TMP/roce.yaml" <<-'EOF2'
	apiVersion: spiderpool.spidernet.io/v2beta1
	kind: SpiderMultusConfig
	metadata:
	  name: gpu1-macvlan
	  namespace: spiderpool
	  annotations: {cni.spidernet.io/rdma-resource-inject: rdma-network}
	spec:
	  cniType: macvlan
	  macvlan:
	    master: ["enp11s0f0np0"]
	    enableRdma: true
	    rdmaResourceName: spidernet.io/gpu1rdma
	    ippools: {ipv4: [gpu1-net11]}
	---
	apiVersion: spiderpool.spidernet.io/v2beta1
	kind: SpiderIPPool
	metadata: {name: gpu1-net11}
	spec: {gateway: 172.16.11.254, subnet: 172.16.0.0/16, ips: [172.16.11.1-172.16.11.200]}
	EOF2
run "$RDMAK" convert "$TMP/roce.yaml"
is "$rc" 0 "Spiderpool's RoCE shared-mode macvlan converts without a FIX"
like "$out" "k8s.v1.cni.cncf.io/resourceName: spidernet.io/gpu1rdma" "... its rdmaResourceName is the network's resource"
unlike "$out" "rdmaIsolation" "... and enableRdma is not rdmaIsolation (a macvlan shares its master's RDMA device)"
nadcfg "$TMP/roce.yaml"
run "$CHECK" "$TMP/nad.json"
is "$rc" 0 "... rdmak-cni's parsers take it"
# its guide's other spelling: spec.rdmaResourceName; a macvlan vlanID is the VLAN interface ifacer made
printf 'kind: SpiderMultusConfig\nmetadata: {name: m, namespace: n}\nspec:\n  cniType: macvlan\n  rdmaResourceName: spidernet.io/shared_cx5_gpu1\n  macvlan: {master: [ens1f0], vlanID: 12}\n' >"$TMP/roce2.yaml"
run "$RDMAK" convert "$TMP/roce2.yaml"
like "$out" "k8s.v1.cni.cncf.io/resourceName: spidernet.io/shared_cx5_gpu1" "spec.rdmaResourceName is the network's resource too"
like "$out" '"master": "ens1f0.12"' "a macvlan's vlanID: master is the VLAN interface"
like "$out" "FIX spec.macvlan.vlanID: 12: master is the VLAN interface ens1f0.12, which Spiderpool's ifacer made and rdmak-cni does not" "... with a FIX to make it on each node"

printf 'kind: SpiderMultusConfig\nmetadata: {name: m, namespace: n}\nspec:\n  cniType: macvlan\n  macvlan: {master: [ens1f0]}\n  ippools: {ipv4: [p]}\n' >"$TMP/outside.yaml"
run "$RDMAK" convert "$TMP/outside.yaml"
like "$out" "FIX spec.ippools: Spiderpool reads ippools in spec.macvlan, not here" "ippools outside the CNI's block (as a Spiderpool guide writes it) is a FIX, not dropped unsaid"

# who may take a pool's addresses: nodeName, podAffinity
printf 'kind: SpiderIPPool\nmetadata: {name: p}\nspec: {subnet: 10.0.0.0/24, ips: [10.0.0.5-10.0.0.9], nodeName: [worker1], podAffinity: {matchLabels: {app: a}}}\n---\nkind: SpiderMultusConfig\nmetadata: {name: m, namespace: n}\nspec: {cniType: macvlan, macvlan: {master: [ens1f0], ippools: {ipv4: [p]}}}\n' >"$TMP/affinity.yaml"
run "$RDMAK" convert "$TMP/affinity.yaml"
is "$rc" 1 "a pool for some nodes or pods only: exit 1"
like "$out" "FIX spec.ippools.ipv4: SpiderIPPool p: spec.nodeName: the pool serves only some nodes" "nodeName is a FIX"
like "$out" "FIX spec.ippools.ipv4: SpiderIPPool p: spec.podAffinity: the pool serves only the pods it selects" "podAffinity is a FIX"

# host-local's legacy top-level subnet; NicClusterPolicy's nvIpam; pfNames with a VF range
printf 'kind: MacvlanNetwork\nmetadata: {name: legacy}\nspec:\n  networkNamespace: default\n  master: ens2f0\n  mode: bridge\n  ipam: |\n    {"type": "host-local", "subnet": "10.10.0.0/16", "rangeStart": "10.10.1.20", "rangeEnd": "10.10.3.50", "gateway": "10.10.0.254"}\n' >"$TMP/legacy.yaml"
run "$RDMAK" convert "$TMP/legacy.yaml"
is "$rc" 0 "host-local's legacy top-level subnet converts without a FIX"
nadcfg "$TMP/legacy.yaml"
is "$(jget "$TMP/nad.json" "d['ipam']['ranges']")" '[[{"subnet": "10.10.0.0/16", "rangeStart": "10.10.1.20", "rangeEnd": "10.10.3.50", "gateway": "10.10.0.254"}]]' \
	"... into ranges: [[{subnet, rangeStart, rangeEnd, gateway}]]"
run "$CHECK" "$TMP/nad.json"
is "$rc" 0 "... which rdmak-ipam's parser takes"
printf 'kind: NicClusterPolicy\nmetadata: {name: p}\nspec:\n  nvIpam: {image: nvidia-k8s-ipam, repository: ghcr.io/mellanox, version: v0.1.2}\n---\nkind: SriovNetworkNodePolicy\nmetadata: {name: p}\nspec: {resourceName: r, numVfs: 8, nicSelector: {pfNames: ["ens1f0#0-3"]}, deviceType: netdevice, isRdma: true}\n' >"$TMP/ncp.yaml"
run "$RDMAK" convert "$TMP/ncp.yaml"
like "$out" "spec.nvIpam: not carried: rdmak-ipam replaces nv-ipam: \"perNodeBlockSize\"" "nvIpam is named for what replaces it, not as an unknown key"
unlike "$out" "rdmak has no counterpart" "... no key of the policy is said to have no counterpart"
unlike "$out" "is not read by the plugin" "pfNames' #first-last VF range: no note saying the plugin ignores it (it honours it)"
pcfg "$TMP/ncp.yaml"
is "$(jget "$TMP/plugin.json" "d['resourceList'][0]['selectors']['pfNames']")" '["ens1f0#0-3"]' "... the range is kept for the plugin"

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
