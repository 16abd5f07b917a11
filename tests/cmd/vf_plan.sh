#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak vf plan: SriovNetworkNodePolicy objects (seed 004's and sriov-network-operator's own)
# resolved as the operator resolves them, and the steps each PF of a sample node needs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-vf.sh"
FX=$TOP/tests/fixtures/vf
CX5=$NODES/cx5-roce-sriov
CP=$FX/kubelet_internal_checkpoint

policy() { # NAME PRIORITY NUMVFS NICSELECTOR-JSON [EXTRA SPEC KEYS AS JSON MEMBERS]
	printf '{"apiVersion":"sriovnetwork.openshift.io/v1","kind":"SriovNetworkNodePolicy","metadata":{"name":"%s"},"spec":{"nodeSelector":{},"resourceName":"%s","priority":%s,"numVfs":%s,"nicSelector":%s%s}}\n' \
		"$1" "${1//-/_}" "$2" "$3" "$4" "${5:+,$5}"
}

# seed 004, unchanged: its policies name rootDevices 0000:86:00.0, which this node lacks. Nothing
# selected is not "nothing to do" (exit 0 let the DaemonSet mark the node ready with no VFs)
run "$RDMAK" vf plan --policy "$FX/seed004-gpu-nic-policies.yaml" --root "$CX5" --node-labels kubernetes.io/os=linux
is "$rc" 6 "seed 004 on cx5-roce-sriov: exit 6 (no PF selected)"
is "$out" "policy gpu1-nic-policy selects no PF of this node
policy gpu2-nic-policy selects no PF of this node
no PF of this node is selected by the policies" "its rootDevices select no PF here: each policy named"
run "$RDMAK" vf apply --policy "$FX/seed004-gpu-nic-policies.yaml" --root "$CX5" --node-labels kubernetes.io/os=linux
is "$rc" 6 "apply: exit 6 too, nothing done"
like "$out" "no PF of this node is selected by the policies" "... and says so"

# the same policies aimed at this node's PF 0: both select it with the same VFs
sed 's/0000:86:00.0/0000:1b:00.0/' "$FX/seed004-gpu-nic-policies.yaml" >"$TMP/seed-here.yaml"
run "$RDMAK" vf plan --policy "$TMP/seed-here.yaml" --root "$CX5" --node-labels kubernetes.io/os=linux
is "$rc" 0 "12 VFs wanted, 12 there: exit 0"
like "$out" '^PF 0000:1b:00.0 \(enp27s0f0np0, 15b3:1017\), policy gpu2-nic-policy: 12 VFs wanted, 12 now, the firmware allows 16' \
	"equal priority: the later name (gpu2) wins the PF, as the operator's ByPriority sort"
like "$out" 'overrides policy gpu1-nic-policy' "the policy it overrides is named (the operator drops it silently)"
like "$out" 'nothing to do' "nothing to do"
# an indented `---` line inside a block scalar is text, not a document separator
python3 - "$TMP/seed-here.yaml" "$TMP/scalar.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  namespace: spiderpool\n", "  namespace: spiderpool\n  annotations:\n    note: |\n      first\n      ---\n      second\n", 1)
open(sys.argv[2], "w").write(s)
PY
run "$RDMAK" vf plan --policy "$TMP/scalar.yaml" --root "$CX5" --node-labels kubernetes.io/os=linux
is "$rc" 0 "a '---' line inside a block scalar does not split the document"
run "$RDMAK" vf plan --policy "$TMP/seed-here.yaml" --root "$CX5"
is "$rc:$out" "6:no PF of this node is selected by the policies" "without the node's labels, nodeSelector kubernetes.io/os=linux selects nothing: exit 6"
# a policy that selects nothing beside one that selects a PF: named, and the other goes on (on a
# DaemonSet every node gets every policy: nicSelector is what tells nodes apart)
policy here 10 12 '{"rootDevices":["0000:1b:00.0"]}' >"$TMP/two.yaml"
echo --- >>"$TMP/two.yaml"
policy elsewhere 10 4 '{"rootDevices":["0000:86:00.0"]}' >>"$TMP/two.yaml"
run "$RDMAK" vf plan --policy "$TMP/two.yaml" --root "$CX5"
is "$rc" 0 "one policy selects a PF (nothing to do there), the other none: exit 0"
like "$out" "^policy elsewhere selects no PF of this node" "the one that selects nothing is named"

# fewer VFs: 0 first (EBUSY otherwise), then N; the pods that hold VFs are named
policy fewer 10 8 '{"rootDevices":["0000:1b:00.0"]}' >"$TMP/fewer.json"
run "$RDMAK" vf plan --policy "$TMP/fewer.json" --root "$CX5" --checkpoint "$CP"
is "$rc" 3 "live steps only: exit 3"
like "$out" '1\. live +sriov_numvfs 12 -> 0' "step 1: sriov_numvfs 12 -> 0"
like "$out" 'EBUSY' "... because N while VFs are enabled is EBUSY"
like "$out" '2\. live +sriov_numvfs 0 -> 8' "step 2: sriov_numvfs 0 -> 8"
like "$out" 'held: VF 0 \(0000:1b:00.2\) by pod 6a1c2f9e-0d51-4e0b-9a55-1f3e9b2c7d01 container trainer \(spidernet.io/gpu1sriov\)' \
	"the pod holding VF 0 (checkpoint DeviceIDs by NUMA node, kubelet >= 1.20)"
like "$out" 'held: VF 1 \(0000:1b:00.3\)' "and VF 1"
unlike "$out" '0000:1b:02.2' "a VF of the other PF is not this PF's"
run "$RDMAK" vf plan --policy "$TMP/fewer.json" --root "$CX5"
like "$out" 'held: unknown \(no PodResources answer, no kubelet checkpoint\)' "no PodResources socket nor checkpoint under the root: holders unknown, said so"

policy other 10 4 '{"pfNames":["enp27s0f1np1"]}' >"$TMP/other.json"
run "$RDMAK" vf plan --policy "$TMP/other.json" --root "$CX5" --checkpoint "$CP" --json
is "$rc" 3 "--json: same exit code"
echo "$out" >"$TMP/plan.json"
is "$(jget "$TMP/plan.json" 'd["pfs"][0]["holders"][0]["vf"]')" "0000:1b:02.2" "a checkpoint DeviceIDs list (kubelet < 1.20) is read too"
is "$(jget "$TMP/plan.json" '[s["action"] for s in d["pfs"][0]["steps"]]')" '["sriov_numvfs", "sriov_numvfs"]' \
	"JSON steps: sriov_numvfs only (this PF's sriov_drivers_autoprobe is 1: the kernel binds the new VFs)"
is "$(jget "$TMP/plan.json" '[d["live"], d["reboot"]]')" '[2, 0]' "JSON counts"

# more VFs than the firmware allows now, and another link type: reboot, the mlxconfig command
policy many 10 20 '{"rootDevices":["0000:1b:00.0"]}' '"linkType":"ib","isRdma":true' >"$TMP/many.json"
run "$RDMAK" vf plan --policy "$TMP/many.json" --root "$CX5"
is "$rc" 4 "a firmware step: exit 4"
like "$out" '1\. reboot +mlxconfig -d 0000:1b:00.0 set SRIOV_EN=1 NUM_OF_VFS=20 LINK_TYPE_P1=1$' "the exact mlxconfig command (P1: function 0)"
like "$out" 'above sriov_totalvfs 16' "the reason names sriov_totalvfs"
like "$out" 'after-reboot +sriov_numvfs 12 -> 0' "the live steps come after the reboot"
like "$out" 'after-reboot +node and port GUIDs of 20 VFs' "IB VFs get GUIDs"
like "$out" '5\. after-reboot +bind 20 VFs to their driver' "... and then their driver probes them (it reads the GUIDs at probe)"

# priority: the lower number wins a PF; pfNames ranges that do not overlap merge
policy low 50 8 '{"pfNames":["enp27s0f0np0"]}' '"mtu":1500' >"$TMP/p.json"
policy high 10 6 '{"pfNames":["enp27s0f0np0"]}' >>"$TMP/p.json"
sed -i '1a ---' "$TMP/p.json"
run "$RDMAK" vf plan --policy "$TMP/p.json" --root "$CX5" --json
echo "$out" >"$TMP/p.out"
is "$(jget "$TMP/p.out" '[d["pfs"][0]["policy"], d["pfs"][0]["want_numvfs"]]')" '["high", 6]' "priority 10 beats 50 (overlapping VFs, no merge)"
policy a 10 8 '{"pfNames":["enp27s0f0np0#0-3"]}' >"$TMP/m.yaml"
echo --- >>"$TMP/m.yaml"
policy b 20 8 '{"pfNames":["enp27s0f0np0#4-7"]}' '"mtu":9000' >>"$TMP/m.yaml"
run "$RDMAK" vf plan --policy "$TMP/m.yaml" --root "$CX5" --json
echo "$out" >"$TMP/m.out"
is "$(jget "$TMP/m.out" '[(g["policy"], g["first"], g["last"]) for g in d["pfs"][0]["groups"]]')" '[["a", 0, 3], ["b", 4, 7]]' \
	"pfNames #ranges that do not overlap: both groups kept"
is "$(jget "$TMP/m.out" 'd["pfs"][0]["want_mtu"]')" 9000 "merged: the larger MTU"

# refusals, by name and path
refuse() { # EXTRA-JSON REGEX DESCRIPTION
	policy bad 10 4 '{"vendor":"15b3"}' "$1" >"$TMP/bad.json"
	run "$RDMAK" vf plan --policy "$TMP/bad.json" --root "$CX5"
	is "$rc" 1 "$3: exit 1"
	like "$err" "$2" "$3: named"
}
refuse '"deviceType":"vfio-pci"' 'bad.json: \$.spec.deviceType: vfio-pci is not supported' "deviceType vfio-pci"
refuse '"eSwitchMode":"switchdev"' 'spec.eSwitchMode: switchdev is not supported' "eSwitchMode switchdev"
refuse '"numVF":4' 'spec.numVF: unknown key' "a typo"
refuse '"linkType":"roce"' 'spec.linkType: "roce" is not one of "eth", "ETH", "ib", "IB"' "an unknown linkType"
policy bad 100 4 '{"vendor":"15b3"}' >"$TMP/bad.json"
run "$RDMAK" vf plan --policy "$TMP/bad.json" --root "$CX5"
like "$err" 'spec.priority' "priority 100 is out of the CRD's 0..99"
policy bad 10 4 '{"pfNames":["ens1#5-2"]}' >"$TMP/bad.json"
run "$RDMAK" vf plan --policy "$TMP/bad.json" --root "$CX5"
like "$err" 'spec.nicSelector.pfNames\[0\]: expected' "a pfNames range with first > last"
run "$RDMAK" vf plan --root "$CX5"
is "$rc" 2 "no --policy: usage, exit 2"

# what sriov-network-operator's webhook refuses (pkg/webhook/validate.go), refused by its path,
# with what to write instead: each of these was taken before, and some silently selected nothing
refuse_spec() { # NUMVFS NICSELECTOR EXTRA-JSON REGEX DESCRIPTION
	policy bad 10 "$1" "$2" "$3" >"$TMP/bad.json"
	run "$RDMAK" vf plan --policy "$TMP/bad.json" --root "$CX5"
	is "$rc" 1 "$5: exit 1"
	like "$err" "$4" "$5: named"
}
refuse_spec 4 '{"vendor":"15B3"}' '' 'spec.nicSelector.vendor: "15B3": write "15b3"' "vendor 15B3 (matched no PF)"
refuse_spec 4 '{"vendor":"0x15b3"}' '' 'spec.nicSelector.vendor: "0x15b3": write "15b3"' "vendor 0x15b3 (matched no PF)"
refuse_spec 4 '{"vendor":"15b3","deviceID":"101B"}' '' 'spec.nicSelector.deviceID: "101B": write "101b"' "deviceID 101B"
refuse_spec 4 '{"vendor":"mlx"}' '' 'spec.nicSelector.vendor: "mlx" is not a PCI ID' "a vendor that is no PCI ID"
refuse_spec 4 '{}' '' 'spec.nicSelector: selects no PF: name at least one of vendor, deviceID, pfNames or rootDevices' "an empty nicSelector"
refuse_spec 4 '{"rootDevices":[]}' '' 'spec.nicSelector: selects no PF' "only empty lists (no selector, as for the operator)"
refuse_spec 4 '{"pfNames":["enp27s0f0np0#2-5"]}' '' 'spec.nicSelector.pfNames\[0\]: VF 5 is not below numVfs 4 .*write "enp27s0f0np0#2-3" or a larger numVfs' \
	"a pfNames range end at numVfs"
refuse_spec 0 '{"vendor":"15b3"}' '' 'spec.numVfs: 0 is refused by sriov-network-operator.s webhook; to leave a PF as it is, write no policy for it' "numVfs 0"
refuse_spec 129 '{"vendor":"15b3"}' '' 'spec.numVfs: 129 is above 128, the most sriov-network-operator.s webhook allows on a Mellanox/NVIDIA PF' \
	"numVfs 129 with vendor 15b3"
refuse_spec 200 '{"rootDevices":["0000:1b:00.0"]}' '' 'policy bad: spec.numVfs: 200 is above 128.*\(0000:1b:00.0\)' \
	"numVfs 200 on a Mellanox PF selected by its address"
refuse_spec 4 '{"vendor":"15b3"}' '"linkType":"ib"' 'spec.isRdma: linkType ib needs isRdma: true .*add isRdma: true' "linkType ib without isRdma"
refuse_spec 4 '{"vendor":"15b3"}' '"linkType":"IB","isRdma":false' 'spec.isRdma: linkType ib needs isRdma: true' "linkType IB with isRdma false"
refuse_spec 4 '{"vendor":"15b3"}' '"externallyManaged":true' 'spec.externallyManaged: externallyManaged: true is not supported.*remove the key' "externallyManaged true"
policy bad 10 4 '{"vendor":"15b3"}' '"resourceName":"mlx-vf"' | sed 's/"resourceName":"bad",//' >"$TMP/bad.json"
run "$RDMAK" vf plan --policy "$TMP/bad.json" --root "$CX5"
is "$rc" 1 "resourceName mlx-vf: exit 1"
like "$err" 'spec.resourceName: "mlx-vf" has a character other than a letter, a digit or _ .*\^\[a-zA-Z0-9_\]\+\$' "resourceName mlx-vf: named, with the webhook's rule"
# what the webhook takes is taken
policy ok 10 4 '{"vendor":"15b3","deviceID":"1017","pfNames":["enp27s0f0np0#0-3"]}' '"externallyManaged":false,"linkType":"eth","isRdma":false,"mtu":9000' >"$TMP/ok.json"
run "$RDMAK" vf plan --policy "$TMP/ok.json" --root "$CX5" --json
is "$rc" 3 "externallyManaged false (the default), a range below numVfs, lower-case IDs: taken"
# the policy's mtu goes on its VFs' netdevs too, as the operator sets it (configSriovVFDevices)
echo "$out" >"$TMP/ok.out"
is "$(jget "$TMP/ok.out" '[[s["action"], s.get("to"), s.get("vf_indices")] for s in d["pfs"][0]["steps"]][-1]')" \
	'["vf-mtu", 9000, [0, 1, 2, 3]]' "mtu 9000: the last step sets it on the group's 4 new VFs' netdevs"

# the operator's published examples, unchanged: all of them write `pfName`, a key the CRD does not
# have (the API server drops it, and the policy then takes every PF of that vendor and device)
for f in "$FX"/operator-*.yaml; do
	run "$RDMAK" vf plan --policy "$f" --root "$CX5" --node-labels feature.node.kubernetes.io/network-sriov.capable=true,rdma-capable=true
	is "$rc" 1 "$(basename "$f"): refused"
	like "$err" 'nicSelector.pfName: the CRD has no pfName|deviceType: vfio-pci is not supported' "$(basename "$f"): says why"
done
sed 's/pfName: \["enp3s0f0"\]/pfNames: ["enp27s0f0np0"]/' "$FX/operator-rdma-policy.yaml" >"$TMP/rdma.yaml"
run "$RDMAK" vf plan --policy "$TMP/rdma.yaml" --root "$CX5" --node-labels rdma-capable=true
like "$out" '^PF 0000:1b:00.0 .*policy rdma-policy: 4 VFs wanted, 12 now' "the operator's RDMA example with pfNames: 4 VFs on enp27s0f0np0"
# ... and the other netdevice examples with pfNames pass every webhook rule: they select no PF of
# this node (another vendor, another PF name), which is exit 6, not a refusal
for f in operator-basic-intel.yaml operator-basic-mellanox.yaml; do
	sed 's/pfName: \[/pfNames: [/' "$FX/$f" >"$TMP/$f"
	run "$RDMAK" vf plan --policy "$TMP/$f" --root "$CX5" --node-labels feature.node.kubernetes.io/network-sriov.capable=true
	is "$rc:$err" "6:" "$f with pfNames: taken (exit 6: no PF of this node has that name)"
done

# against the SR-IOV stand-in: the plan follows what the kernel did
why=$(fuse_why)
if [ -n "$why" ]; then skip "$why" "plan against the SR-IOV stand-in"; done_testing; exit; fi
R=$TMP/node
standin cx5-roce-sriov "$R"
echo 0 >"$R/sys/bus/pci/devices/0000:1b:00.0/sriov_numvfs"
run "$RDMAK" vf plan --policy "$TMP/fewer.json" --root "$R"
like "$out" '8 VFs wanted, 0 now' "after sriov_numvfs 0 the node has no VF on PF 0"
like "$out" '1\. live +sriov_numvfs 0 -> 8' "one step left: 0 -> 8"
unlike "$out" '12 -> 0' "no step to 0"
# VFs that sriov_drivers_autoprobe 0 left without a driver: one step, bind them
echo 0 >"$R/sys/bus/pci/devices/0000:1b:00.0/sriov_drivers_autoprobe"
echo 8 >"$R/sys/bus/pci/devices/0000:1b:00.0/sriov_numvfs"
run "$RDMAK" vf plan --policy "$TMP/fewer.json" --root "$R"
is "$rc" 3 "8 VFs without a driver: a live step"
like "$out" '1\. live +bind 8 VFs to their driver \(0-7\)' "the step binds them"
like "$out" '8 VFs without a driver \(sriov_drivers_autoprobe is 0\): bound to it' "... and says why, with the PF's real autoprobe"
# fewer VFs with autoprobe 0: the kernel binds none of the new ones, and the reason says so
policy six 10 6 '{"rootDevices":["0000:1b:00.0"]}' >"$TMP/six.json"
run "$RDMAK" vf plan --policy "$TMP/six.json" --root "$R" --json
echo "$out" >"$TMP/six.out"
is "$(jget "$TMP/six.out" '[[s["action"], s.get("vf_indices")] for s in d["pfs"][0]["steps"]][2]')" '["vf-bind", [0, 1, 2, 3, 4, 5]]' \
	"sriov_numvfs 8 -> 0 -> 6 with autoprobe 0: then each new VF bound"
like "$(jget "$TMP/six.out" 'd["pfs"][0]["steps"][2]["reason"]')" '^sriov_drivers_autoprobe is 0 on this PF: the kernel binds no new VF' \
	"the reason states the PF's autoprobe, 0"
echo 1 >"$R/sys/bus/pci/devices/0000:1b:00.0/sriov_drivers_autoprobe"
run "$RDMAK" vf plan --policy "$TMP/six.json" --root "$R" --json
echo "$out" >"$TMP/six.out"
is "$(jget "$TMP/six.out" '[s["action"] for s in d["pfs"][0]["steps"]]')" '["sriov_numvfs", "sriov_numvfs"]' \
	"the same with autoprobe 1: no vf-bind step (the kernel binds them, apply waits for them)"
done_testing
