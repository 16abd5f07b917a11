#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak plugin --dry-run` on the sample nodes: the resources, their health and the exact
# AllocateResponse, for seed 003's configs (examples/plugin), in text and JSON; bad configs
# exit 2 naming the field; a port brought up in a copy of a node changes the answer.
. "$(dirname "$0")/../lib.sh"
EX="$TOP/examples/plugin"
A100="$NODES/a100-ib-bond"

run "$RDMAK" plugin --help
is "$rc" 0 "--help exits 0"
like "$out" "--kubelet-dir" "--help documents --kubelet-dir"
run "$RDMAK" plugin --bogus
is "$rc" 2 "an unknown option exits 2"
run "$RDMAK" plugin --json
is "$rc" 2 "--json without --dry-run exits 2"

# seed 003's two-resource config on the A100 node: one HCA Down, the other serves
run "$RDMAK" plugin --dry-run --root "$A100" --config "$EX/shared-seed003.json"
is "$rc" 0 "dry-run on a100-ib-bond exits 0"
like "$out" "rdma/rdma_a100: shared, 63 advertised, 63 healthy" "rdma_a100 advertises rdmaHcaMax ids"
like "$out" "mlx5_0 +mlx5_0 +ibp70s0 +0 +no +mlx5_0 port 1 DOWN" "the Down HCA is shown Unhealthy with its reason"
like "$out" "rdma/rdma_v100: shared, 0 advertised" "rdma_v100 selects nothing on an A100 node"
unlike "$out" "uverbs0" "the Down HCA's nodes are not handed out"

run "$RDMAK" plugin --dry-run --json --root "$A100" --config "$EX/shared-seed003.json"
is "$rc" 0 "--json exits 0"
printf '%s' "$out" >"$TMP/a100.json"
is "$(jget "$TMP/a100.json" "[d['resources'][1]['resource'], d['resources'][1]['advertised']]")" '["rdma/rdma_a100", 63]' "JSON names the resource and its count"
is "$(jget "$TMP/a100.json" "[x['host_path'] for x in d['resources'][1]['allocate']['response']['container_responses'][0]['devices']]")" \
	'["/dev/infiniband/uverbs1", "/dev/infiniband/umad1", "/dev/infiniband/issm1", "/dev/infiniband/rdma_cm"]' \
	"AllocateResponse: the healthy HCA's char devices, rdma_cm once"
is "$(jget "$TMP/a100.json" "sorted(set(x['permissions'] for x in d['resources'][1]['allocate']['response']['container_responses'][0]['devices']))")" '["rw"]' "permissions rw"
is "$(jget "$TMP/a100.json" "d['resources'][0]['allocate']['error']")" "no devices advertised" "an empty pool says why Allocate would fail"

# rdmak's superset: NCCL_IB_HCA lists only healthy HCAs; bond0 selects the LAG device
run "$RDMAK" plugin --dry-run --json --root "$A100" --config "$EX/shared-nccl.json"
printf '%s' "$out" >"$TMP/nccl.json"
is "$(jget "$TMP/nccl.json" "d['resources'][0]['allocate']['response']['container_responses'][0]['envs']")" '{"NCCL_IB_HCA": "=mlx5_1"}' "NCCL_IB_HCA names the healthy HCA only"
is "$(jget "$TMP/nccl.json" "[m['id'] for m in d['resources'][1]['members']]")" '["mlx5_bond_0"]' "ifNames bond0 selects mlx5_bond_0"
is "$(jget "$TMP/nccl.json" "d['resources'][1]['allocate']['response']['container_responses'][0]['envs']['NCCL_SOCKET_IFNAME']")" "bond0" "\${netdevs} expands to the bond"

# the port comes up in a copy of the node: both HCAs, in the answer and in NCCL_IB_HCA
cp -a "$A100" "$TMP/node"
state=$(readlink -f "$TMP/node/sys/class/infiniband/mlx5_0/ports/1/state")
echo "4: ACTIVE" >"$state"
echo 1 >"$(readlink -f "$TMP/node/sys/class/net/ibp70s0")/carrier" 2>/dev/null || echo 1 >"$TMP/node/sys/class/net/ibp70s0/carrier"
run "$RDMAK" plugin --dry-run --json --root "$TMP/node" --config "$EX/shared-nccl.json"
printf '%s' "$out" >"$TMP/up.json"
is "$(jget "$TMP/up.json" "d['resources'][0]['allocate']['response']['container_responses'][0]['envs']['NCCL_IB_HCA']")" "=mlx5_0,mlx5_1" "a recovered port joins NCCL_IB_HCA"
is "$(jget "$TMP/up.json" "len(d['resources'][0]['allocate']['response']['container_responses'][0]['devices'])")" 7 "and its char devices join the answer"

# seed 003's hostdev config: one id per PCI function with isRdma, sriov-dp's env names
run "$RDMAK" plugin --dry-run --json --root "$NODES/cx5-roce-sriov" --config "$EX/hostdev-seed003.json"
is "$rc" 0 "hostdev dry-run on cx5-roce-sriov exits 0"
printf '%s' "$out" >"$TMP/hostdev.json"
is "$(jget "$TMP/hostdev.json" "d['resources'][0]['advertised']")" 24 "every VF is a device, PFs with VFs are not"
is "$(jget "$TMP/hostdev.json" "sorted(d['resources'][0]['allocate']['response']['container_responses'][0]['envs'])")" \
	'["PCIDEVICE_NVIDIA_COM_HOSTDEV", "PCIDEVICE_NVIDIA_COM_HOSTDEV_INFO"]' "PCIDEVICE_<PREFIX>_<NAME> and _INFO"
is "$(jget "$TMP/hostdev.json" "list(json.loads(d['resources'][0]['allocate']['response']['container_responses'][0]['envs']['PCIDEVICE_NVIDIA_COM_HOSTDEV_INFO']).values())[0]['rdma']['rdma_dev']")" \
	"mlx5_2" "_INFO carries the VF's RDMA device"

run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$EX/sriov-roce.json"
like "$out" "spidernet.io/gpu1sriov: exclusive, 6 advertised" "pfNames enp27s0f0np0#0-5 selects six VFs"
like "$out" "spidernet.io/gpu2sriov: exclusive, 12 advertised" "rootDevices selects the other PF's VFs"

# sriov-network-device-plugin's published configs (tests/fixtures/anchors/plugin/SOURCES.md): its
# README's rootDevices with VF indexes (was refused: "not a PCI address"), and its docs' config
# with "SelectorObj": null, a key the Go plugin ignores (was refused: "unknown key")
ANCH="$TOP/tests/fixtures/anchors/plugin"
run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$ANCH/sriovdp-readme-root-devices.json"
is "$rc" 0 "rootDevices \"0000:1b:00.1#0-1,3,4\" is read"
like "$out" "intel.com/sriov_vfs: exclusive, 4 advertised" "it selects four VFs"
is "$(printf '%s\n' "$out" | grep -oE '^0000:1b:0[0-9.]+' | tr '\n' ' ')" "0000:1b:02.2 0000:1b:02.3 0000:1b:02.5 0000:1b:02.6 " \
	"VFs 0, 1, 3 and 4 of that PF, not VF 2"
run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$ANCH/sriovdp-config-file-node0.json"
is "$rc" 0 "a key the Go plugin ignores is no refusal"
is "$err" "rdmak plugin: $ANCH/sriovdp-config-file-node0.json: resourceList[0].SelectorObj: sriov-network-device-plugin's own field (its docs print it as null); ignored, as it is there" \
	"it is named on stderr, with the file and its JSON path"
like "$out" "intel.com/sriovnics: exclusive, 0 advertised" "its PFs are not on this node"
printf '{"healthIntervalMS":100,"resourceList":[{"resourceName":"vf","selectors":{"isRdma":true}}]}' >"$TMP/own-typo.json"
run "$RDMAK" plugin --dry-run --root "$NODES/cx5-roce-sriov" --config "$TMP/own-typo.json"
is "$rc/$err" "2/rdmak plugin: $TMP/own-typo.json: healthIntervalMS: unknown key (did you mean \"healthIntervalMs\"?)" \
	"a near miss of one of rdmak's own keys is still refused"

run "$RDMAK" plugin --dry-run --cdi --json --root "$A100" --config "$EX/shared-seed003.json"
printf '%s' "$out" >"$TMP/cdi.json"
is "$(jget "$TMP/cdi.json" "d['resources'][1]['allocate']['response']['container_responses'][0]['cdi_devices']")" '[{"name": "rdma/rdma_a100=mlx5_1"}]' "--cdi answers with cdi_devices"

run "$RDMAK" plugin --dry-run --root "$NODES/no-rdma" --config "$EX/hostdev-seed003.json"
is "$rc" 0 "a node without RDMA is not an error"
like "$out" "0 advertised" "and advertises nothing"

# bad configs: exit 2, the JSON path of the field
printf '{"configList":[{"resourceName":"a","rdmaHcaMax":1,"selectors":{}},{"resourceName":"b","rdmaHcaMax":1,"selectors":{"ifNames":"ib0"}}]}' >"$TMP/bad.json"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/bad.json"
is "$rc" 2 "a bad config exits 2"
is "$err" "rdmak plugin: $TMP/bad.json: configList[1].selectors.ifNames: expected an array of strings, got a string" "naming the JSON path"
# read as the webhook reads its config (daemon_config_load): a file over 4 MiB says so
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$TMP/big.json"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/big.json"
is "$rc $err" "2 rdmak plugin: $TMP/big.json: larger than 4 MiB" "a config over 4 MiB: refused, saying so"
printf '{"configList":[{"resourceName":"a","rdmaHcaMax":1,"devices":[]}],"resourceList":[{"resourceName":"a","resourcePrefix":"rdma","selectors":{}}]}' >"$TMP/dup.json"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/dup.json"
is "$rc" 2 "a duplicate resource exits 2"
like "$err" "resourceList\[0\].resourceName: duplicate resource \"rdma/a\"" "naming both"
# "servedBy": "dra": the DRA driver's resource is not served, and a device of both is refused
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{"linkTypes":["infiniband"]}},{"resourceName":"roce","rdmaHcaMax":4,"servedBy":"dra","selectors":{"linkTypes":["ether"]}}]}' >"$TMP/split.json"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/split.json"
is "$rc" 0 "a config split between the plugin and the DRA driver"
like "$out" "^rdma/ib: shared" "serves the plugin's resource"
unlike "$out" "rdma/roce" "and not the driver's"
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{"linkTypes":["infiniband","ether"]}}],"resourceList":[{"resourceName":"roce","servedBy":"dra","selectors":{"pciAddresses":["0000:e1:00.0"]}}]}' >"$TMP/both.json"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/both.json"
is "$rc" 2 "a device of both the plugin's and the DRA driver's resource exits 2"
like "$err" "rdma/ib \(configList\[0\], the device plugin's\) and intel.com/roce \(resourceList\[0\], servedBy \"dra\"\) both select mlx5_bond_0" "naming both and the device"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$TMP/missing.json"
is "$rc" 2 "a missing config exits 2"
run "$RDMAK" plugin --dry-run --root "$TMP/nowhere" --config "$EX/shared-seed003.json"
is "$rc" 1 "a missing sysfs root exits 1"
# the socket each resource gets, and a kubelet folder too deep for it, named with that socket
run "$RDMAK" plugin --dry-run --root "$A100" --config "$EX/shared-seed003.json"
like "$out" "^rdma/rdma_a100: .*\(configList\[1\], socket rdmak-rdma_rdma_a100\.sock\)$" "the report names each resource's socket"
deep="$TMP/$(printf 'k%.0s' $(seq 1 100))"
run "$RDMAK" plugin --dry-run --root "$A100" --config "$EX/shared-seed003.json" --kubelet-dir "$deep"
is "$rc $err" "2 rdmak plugin: configList[0]: socket path $deep/device-plugins/rdmak-rdma_rdma_v100.sock is longer than a unix socket allows" \
	"a socket path over a unix socket's limit exits 2, naming it"

# a report that cannot be written says so (it exited 1 silently)
for j in "" --json; do
	"$RDMAK" plugin --dry-run $j --root "$A100" --config "$EX/shared-seed003.json" >/dev/full 2>"$TMP/full.err"
	is "$?" 1 "--dry-run${j:+ $j} > /dev/full exits 1"
	is "$(cat "$TMP/full.err")" "rdmak plugin: writing the report to stdout: No space left on device" "and says why"
done

# one parser for the plugin config: `doctor --plugin-config` refuses what the plugin refuses, with
# the same words, and both take rdmak's own rdmaNetnsMode (issue 11: the plugin refused it as an
# unknown key, and the doctor accepted typos the plugin refuses)
V100="$NODES/v100-ib"
printf '{"rdmaNetnsMode":"exclusive","resourceList":[{"resourceName":"vf","selectors":{"vendors":["15b3"],"isRdma":true}}]}' >"$TMP/netns.json"
printf '{"rdmaNetnsMode":"exclusiv","resourceList":[{"resourceName":"vf","selectors":{"vendors":["15b3"]}}]}' >"$TMP/netns-bad.json"
printf '{"configList":[{"resourceName":"a","rdmaHcaMax":1,"selectors":{"ifname":["ib0"]}}]}' >"$TMP/typo.json"
printf '{"rdmaNetnsMode":"shared"}' >"$TMP/mode-only.json"
run "$RDMAK" plugin --dry-run --root "$V100" --config "$TMP/netns.json"
is "$rc" 0 "the plugin takes rdmaNetnsMode"
like "$err" "rdmaNetnsMode is exclusive but the node's RDMA netns mode is shared" "and says when the node's mode differs"
run "$RDMAK" doctor --root "$V100" --plugin-config "$TMP/netns.json" --check netns.mode --json
printf '%s' "$out" >"$TMP/netns-doctor.json"
is "$(jget "$TMP/netns-doctor.json" "d[0]['status']")" fail "the doctor compares it with the node's"
for c in netns-bad typo mode-only; do
	run "$RDMAK" plugin --dry-run --root "$V100" --config "$TMP/$c.json"
	prc=$rc perr=${err#rdmak plugin: $TMP/$c.json: }
	run "$RDMAK" doctor --root "$V100" --plugin-config "$TMP/$c.json"
	is "$prc/$rc" 2/3 "$c: refused by the plugin (exit 2) and by the doctor (exit 3)"
	is "${err#rdmak doctor: --plugin-config $TMP/$c.json: }" "$perr" "$c: in the same words"
done

# one reader for the plugin config (pool_config_load): every role takes and refuses the same file
# in the same words. The doctor took at most 1 MiB and the exporter 16 MiB where the plugin and
# the driver took 4; the exporter refused a pipe even with --once; the plugin and the driver
# waited for ever on a FIFO without a writer
cfg='{"configList":[{"resourceName":"a","rdmaHcaMax":1,"selectors":{"vendors":["15b3"]}}]}'
pad() { head -c "$1" /dev/zero | tr '\0' ' '; }
{ pad $((2 << 20)); printf '%s' "$cfg"; } >"$TMP/2m.json"
{ pad $((5 << 20)); printf '%s' "$cfg"; } >"$TMP/5m.json"
read_once() { # read_once ROLE FILE: ROLE reads FILE once and exits
	case $1 in
	plugin) run "$RDMAK" plugin --dry-run --root "$A100" --config "$2" ;;
	dra) run "$RDMAK" dra --dry-run --root "$A100" --node-name a --config "$2" ;;
	doctor) run "$RDMAK" doctor --root "$A100" --check netns.mode --plugin-config "$2" ;;
	exporter) run "$RDMAK" exporter --once --root "$A100" --pod-resources "$TMP/none.sock" --plugin-config "$2" ;;
	esac
}
said() { # said ROLE FILE: how ROLE names its config file FILE in a refusal
	case $1 in
	plugin) echo "rdmak plugin: $2" ;;
	dra) echo "rdmak dra: --config $2" ;;
	*) echo "rdmak $1: --plugin-config $2" ;;
	esac
}
for role in plugin dra doctor exporter; do
	read_once $role "$TMP/2m.json"
	is "$rc" 0 "$role: a config of 2 MiB is taken ($err)"
	read_once $role "$TMP/5m.json"
	is "$rc $err" "$([ $role = doctor ] && echo 3 || echo 2) $(said $role "$TMP/5m.json"): larger than 4 MiB" \
		"$role: one of 5 MiB is refused, saying so"
	read_once $role <(printf '%s' "$cfg")
	is "$rc" 0 "$role: read once, a pipe is taken ($err)"
done
mkfifo "$TMP/fifo"
notreg="not a regular file (a FIFO, device or socket): a role that keeps running reads a file (a ConfigMap's); a pipe is read only by a command that reads it once (--dry-run, --once, rdmak doctor)"
for role in plugin dra exporter; do
	# no writer: an open that waits would wait for ever (the limit only ends the test)
	case $role in
	plugin) run timeout -k 5 30 "$RDMAK" plugin --root "$A100" --kubelet-dir "$TMP/kubelet" --config "$TMP/fifo" ;;
	dra) run timeout -k 5 30 "$RDMAK" dra --root "$A100" --node-name a --state-dir "$TMP/dra" --config "$TMP/fifo" ;;
	exporter) run timeout -k 5 30 "$RDMAK" exporter --listen 127.0.0.1:0 --root "$A100" --plugin-config "$TMP/fifo" ;;
	esac
	is "$rc $err" "2 $(said $role "$TMP/fifo"): $notreg" "$role, running: a FIFO is refused by name, saying what it takes"
done

done_testing
