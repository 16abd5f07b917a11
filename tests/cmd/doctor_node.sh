#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak doctor on nodes: the healthy samples give no failure; each node-level failure of
# issue 4 is made on a private copy of a sample node by changing exactly what the kernel
# would show, and diagnosed by its finding id, status and the exit code.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/doctor/lib.sh"

# ---- healthy samples ------------------------------------------------------------------------
for n in v100-ib cx5-roce-sriov cx7-rail-1016vf; do
	doctor --root "$NODES/$n"
	is "$(count_status fail)" 0 "$n: no failure"
	ok $([ "$rc" -le 1 ] && echo 0 || echo 1) "$n: exit $rc is 0 or 1"
done
doctor --root "$NODES/v100-ib"
is "$(statuses port.state)" "ok ok" "v100-ib: both IB ports ACTIVE"
is "$(statuses gpudirect.driver)" "ok" "v100-ib: nvidia_peermem loaded"
is "$(statuses netns.mode)" "ok" "v100-ib: netns mode without a plugin config is ok"

# ---- the JSON shape ---------------------------------------------------------------------------
printf '%s' "$out" >"$TMP/v100.json"
is "$(jget "$TMP/v100.json" 'all(list(f.keys()) == ["id","status","object","title","evidence","fix"] for f in d)')" True \
	"--json: every finding has id, status, object, title, evidence, fix in that order"
is "$(jget "$TMP/v100.json" 'all(f["status"] in ("ok","warn","fail","skip") for f in d)')" True "--json: statuses are ok/warn/fail/skip"
is "$(jget "$TMP/v100.json" 'all(isinstance(e["path"], str) and isinstance(e["value"], str) for f in d for e in f["evidence"])')" True \
	"--json: evidence items are {path, value}"
run "$RDMAK" doctor --list-checks
like "$out" '^rdma\.devices +both' "--list-checks prints the table"
ids=$(printf '%s\n' "$out" | cut -d' ' -f1)
is "$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["items"]["properties"]["id"]["enum"]))' \
	"$TOP/docs/doctor.schema.json")" "$(echo $ids)" "docs/doctor.schema.json lists every check id, in table order"
missing=$(for i in $ids; do grep -q "\`$i\`" "$TOP/docs/doctor.md" || echo "$i"; done)
is "$missing" "" "docs/doctor.md documents every check id"
for n in v100-ib a100-ib-bond cx5-roce-sriov no-rdma; do
	doctor --root "$NODES/$n"
	printf '%s' "$out" >"$TMP/$n.json"
	is "$(python3 - "$TOP/docs/doctor.schema.json" "$TMP/$n.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["items"]; d = json.load(open(sys.argv[2]))
ok = isinstance(d, list)
for f in d:
    ok &= list(f) == s["required"] and f["id"] in s["properties"]["id"]["enum"]
    ok &= f["status"] in s["properties"]["status"]["enum"] and isinstance(f["title"], str)
    ok &= f["object"] is None or isinstance(f["object"], str)
    ok &= f["fix"] is None or isinstance(f["fix"], str)
    ok &= all(list(e) == ["path", "value"] and all(isinstance(v, str) for v in e.values()) for e in f["evidence"])
    ok &= (f["fix"] is None) == (f["status"] in ("ok", "skip")) or f["status"] in ("warn", "fail") and f["fix"] is not None
print(ok)
PY
)" True "$n: --json output matches docs/doctor.schema.json"
done

# ---- seed 003's A100 node: mlx5_0 Down/Disabled under an IPoIB active-backup bond -----------
doctor --root "$NODES/a100-ib-bond"
is "$rc" 2 "a100-ib-bond: exit 2"
is "$(statuses port.state mlx5_0/1)" fail "a100: port.state fail for mlx5_0/1"
like "$(titles port.state mlx5_0/1)" 'DOWN/Disabled.*Port number 1 state is Down' "a100: title quotes perftest's message"
like "$(titles port.state mlx5_0/1)" 'ibportstate -C mlx5_0 1 enable' "a100: fix names the command"
is "$(statuses port.sm mlx5_0/1)" skip "a100: no SM verdict while the link is down"
is "$(statuses port.ipoib mlx5_0/1)" warn "a100: IPoIB bond Up hides the Down port (ibdev2netdev Down/Up)"
like "$(titles port.ipoib mlx5_0/1)" 'NCCL_IB_HCA \(=mlx5_1\)' "a100: fix names the ACTIVE HCA"
is "$(statuses bond.lag bond0)" ok "a100: RoCE LAG mlx5_bond_0 on bond0 consistent"
is "$(statuses bond.lag bond1)" warn "a100: IPoIB bond with a dead slave"
is "$(statuses gpudirect.topology GPU2)" warn "a100: GPU2's nearest HCA is the Down one"

# ---- no RDMA hardware -------------------------------------------------------------------------
doctor --root "$NODES/no-rdma"
is "$rc" 2 "no-rdma: exit 2"
is "$(statuses rdma.devices)" fail "no-rdma: rdma.devices fail"

# ---- port Polling: no cable ---------------------------------------------------------------------
n=$TMP/polling; node_copy v100-ib "$n"
p=$n/sys/class/infiniband/mlx5_0/ports/1
printf '1: DOWN\n' >"$p/state"; printf '2: Polling\n' >"$p/phys_state"
printf '0\n' >"$n/sys/class/net/ibp94s0f0/carrier"; printf 'lowerlayerdown\n' >"$n/sys/class/net/ibp94s0f0/operstate"
doctor --root "$n"
is "$rc" 2 "polling: exit 2"
is "$(statuses port.state mlx5_0/1)" fail "polling: port.state fail"
like "$(titles port.state mlx5_0/1)" 'no physical link: cable' "polling: cause is the cable"
is "$(statuses port.state mlx5_1/1)" ok "polling: the other port stays ok"

# ---- port Init: link up, no subnet manager (sm_lid 0, lid 0xffff) ----------------------------------
n=$TMP/nosm; node_copy v100-ib "$n"
p=$n/sys/class/infiniband/mlx5_1/ports/1
printf '2: INIT\n' >"$p/state"; printf '0x0\n' >"$p/sm_lid"; printf '0xffff\n' >"$p/lid"
doctor --root "$n"
is "$rc" 2 "no SM: exit 2"
is "$(statuses port.state mlx5_1/1)" fail "no SM: port.state fail (INIT)"
like "$(titles port.state mlx5_1/1)" 'opensm' "no SM: fix says run a subnet manager"
is "$(statuses port.sm mlx5_1/1)" fail "no SM: port.sm fail (sm_lid 0)"

# ---- IPoIB carrier confused with the IB port state ---------------------------------------------------
n=$TMP/ipoib; node_copy v100-ib "$n"
printf '0\n' >"$n/sys/class/net/ibp94s0f1/carrier"; printf 'down\n' >"$n/sys/class/net/ibp94s0f1/operstate"
doctor --root "$n"
is "$rc" 1 "ipoib down, port ACTIVE: exit 1"
is "$(statuses port.state mlx5_1/1)" ok "ipoib down: the IB port is still ok"
is "$(statuses port.ipoib mlx5_1/1)" warn "ipoib down: port.ipoib warn"
like "$(titles port.ipoib mlx5_1/1)" 'not the port' "ipoib down: says ibdev2netdev's Down is the netdev"

# ---- modules missing: ib_uverbs not loaded (no module dir, no uverbs class, no uverbs nodes) -------
n=$TMP/nouverbs; node_copy v100-ib "$n"
rm -rf "$n/sys/module/ib_uverbs" "$n/sys/class/infiniband_verbs"
for d in "$n"/sys/class/infiniband/*/device/infiniband_verbs; do rm -rf "$(readlink -f "$d")"; done
rm -f "$n"/dev/infiniband/uverbs*
doctor --root "$n"
is "$rc" 2 "no ib_uverbs: exit 2"
is "$(statuses kernel.modules ib_uverbs)" fail "no ib_uverbs: kernel.modules fail"
is "$(statuses chardev.nodes mlx5_0)" fail "no ib_uverbs: mlx5_0 has no uverbs device"
n=$TMP/nourdma; node_copy v100-ib "$n"
rm -rf "$n/sys/module/rdma_ucm"
doctor --root "$n"
is "$(statuses kernel.modules rdma_ucm)" warn "no rdma_ucm: kernel.modules warn"
is "$rc" 1 "no rdma_ucm: exit 1"

# ---- char devices: missing, wrong permissions, stale -------------------------------------------------
n=$TMP/chr; node_copy v100-ib "$n"
rm -f "$n/dev/infiniband/uverbs0"
doctor --root "$n"
is "$(statuses chardev.nodes mlx5_0)" fail "uverbs0 missing: chardev.nodes fail"
is "$rc" 2 "uverbs0 missing: exit 2"
n=$TMP/chmod; node_copy v100-ib "$n"
chmod 0600 "$n/dev/infiniband/uverbs1"
doctor --root "$n"
is "$(statuses chardev.nodes mlx5_1)" warn "uverbs1 0600: chardev.nodes warn"
n=$TMP/stale; node_copy v100-ib "$n"
rm -f "$n/dev/infiniband/uverbs1"; mknod -m 0666 "$n/dev/infiniband/uverbs1" c 231 200
doctor --root "$n"
is "$(statuses chardev.nodes mlx5_1)" fail "uverbs1 231:200 vs sysfs 231:193: stale node fails"

# seed 003 on the host: `IB device mlx5_bond_0 not found` when the LAG device's uverbs node is missing
n=$TMP/lagnode; node_copy a100-ib-bond "$n"
rm -f "$n/dev/infiniband/$(uverbs_of "$n" mlx5_bond_0)"
doctor --root "$n"
is "$(statuses chardev.nodes mlx5_bond_0)" fail "LAG device's uverbs node missing on the node: chardev.nodes fail"

# ---- bonds and RoCE LAG ---------------------------------------------------------------------------------
n=$TMP/lagmode; node_copy a100-ib-bond "$n"
printf 'balance-rr 0\n' >"$n/sys/class/net/bond0/bonding/mode"
doctor --root "$n"
is "$(statuses bond.lag bond0)" fail "LAG over balance-rr: bond.lag fail"
n=$TMP/ipoibmode; node_copy a100-ib-bond "$n"
printf '802.3ad 4\n' >"$n/sys/class/net/bond1/bonding/mode"
doctor --root "$n"
is "$(statuses bond.lag bond1)" fail "IPoIB bond in 802.3ad: bond.lag fail"
n=$TMP/slavedown; node_copy a100-ib-bond "$n"
s=$(cut -d' ' -f2 "$n/sys/class/net/bond0/bonding/slaves")
printf '0\n' >"$n/sys/class/net/$s/carrier"
doctor --root "$n"
is "$(statuses bond.lag bond0)" warn "LAG slave without carrier: bond.lag warn"

# ---- MTU consistency: the E6 capture's slave at 1518 under a 1500 bond; IPoIB datagram at 1500 -------
n=$TMP/mtu; node_copy a100-ib-bond "$n"
s=$(cut -d' ' -f1 "$n/sys/class/net/bond0/bonding/slaves")
printf '1518\n' >"$n/sys/class/net/$s/mtu"
printf '1500\n' >"$n/sys/class/net/ibp198s0/mtu"
doctor --root "$n"
is "$(statuses netdev.mtu "$s")" warn "slave MTU 1518 under bond0 1500: netdev.mtu warn"
is "$(statuses netdev.mtu ibp198s0)" warn "IPoIB datagram MTU 1500: netdev.mtu warn"

# ---- SR-IOV: numvfs says 16, only 12 VFs exist --------------------------------------------------------------
n=$TMP/sriov; node_copy cx5-roce-sriov "$n"
printf '16\n' >"$n/sys/bus/pci/devices/0000:1b:00.0/sriov_numvfs"
doctor --root "$n"
is "$(statuses sriov.vfs 0000:1b:00.0)" fail "numvfs 16 with 12 virtfn links: sriov.vfs fail"
is "$(statuses sriov.vfs 0000:1b:00.1)" ok "the other PF is ok"

# ---- RoCE GIDs: empty table on the node (Port GUID 0x0 in ibstat, real-outputs B3) --------------------------
n=$TMP/nogid; node_copy cx5-roce-sriov "$n"
p=$n/sys/class/infiniband/mlx5_0/ports/1
for g in "$p"/gids/*; do printf '0000:0000:0000:0000:0000:0000:0000:0000\n' >"$g"; done
for g in "$p"/gid_attrs/types/* "$p"/gid_attrs/ndevs/*; do : >"$g"; done
doctor --root "$n"
is "$(statuses roce.gids mlx5_0/1)" fail "empty RoCE GID table: roce.gids fail"

# ---- GPUDirect: no nvidia_peermem; dma-buf decided from kernel and driver versions ---------------------------
n=$TMP/gdr; node_copy v100-ib "$n"
rm -rf "$n/sys/module/nvidia_peermem"
doctor --root "$n"
is "$(statuses gpudirect.driver)" warn "no peermem, versions unknown: gpudirect.driver warn"
mkdir -p "$n/proc/sys/kernel" "$n/proc/driver/nvidia"
printf '5.15.0-91-generic\n' >"$n/proc/sys/kernel/osrelease"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n' \
	>"$n/proc/driver/nvidia/version"
doctor --root "$n"
is "$(statuses gpudirect.driver)" fail "no peermem, proprietary module: gpudirect.driver fail (Couldn't allocate MR)"
like "$(titles gpudirect.driver)" "Couldn't allocate MR with error=14" "gpudirect: title quotes perftest's error"
is "$rc" 2 "no peermem, proprietary module: exit 2"
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.183.01  Release Build  (dvs-builder@U16-I3-B03-4-3)  Sun May 12 19:29:49 UTC 2024\n' \
	>"$n/proc/driver/nvidia/version"
doctor --root "$n"
is "$(statuses gpudirect.driver)" ok "no peermem, open module 535 on 5.15: dma-buf ok"

# ---- RDMA netns mode vs the plugin config -------------------------------------------------------------------------
printf '{"periodicUpdateInterval": 300, "configList": [{"resourceName": "hca_shared_devices_a", "rdmaHcaMax": 1000, "selectors": {"vendors": ["15b3"]}}]}\n' >"$TMP/shared.json"
printf '{"rdmaNetnsMode": "exclusive", "resourceList": [{"resourceName": "mlnx_sriov_rdma", "selectors": {"vendors": ["15b3"], "isRdma": true}}]}\n' >"$TMP/excl.json"
doctor --root "$NODES/cx5-roce-sriov" --plugin-config "$TMP/shared.json"
is "$(statuses netns.mode)" fail "exclusive node, shared-dev-plugin config: netns.mode fail"
is "$rc" 2 "exclusive node, shared config: exit 2"
doctor --root "$NODES/v100-ib" --plugin-config "$TMP/excl.json"
is "$(statuses netns.mode)" fail "shared node, rdmaNetnsMode exclusive: netns.mode fail"
doctor --root "$NODES/v100-ib" --plugin-config "$TMP/shared.json"
is "$(statuses netns.mode)" ok "shared node, shared config: ok"
printf 'not json' >"$TMP/bad.json"
doctor --root "$NODES/v100-ib" --plugin-config "$TMP/bad.json"
is "$rc" 3 "unreadable plugin config: exit 3"
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{"linkTypes":["infiniband","ether"]}},{"resourceName":"roce","rdmaHcaMax":4,"servedBy":"dra","selectors":{"linkTypes":["ether"]}}]}' >"$TMP/both.json"
doctor --root "$NODES/a100-ib-bond" --plugin-config "$TMP/both.json"
is "$rc" 3 "a device given to both the plugin and the DRA driver: refused as the plugin refuses it"
like "$err" "rdma/ib \(configList\[0\], the device plugin's\) and rdma/roce \(configList\[1\], servedBy \"dra\"\) both select mlx5_bond_0" "naming both and the device"
# a config that gives the DRA driver a resource is judged on the node the checks then read: one
# read of the node's sysfs per run (hw_load was called again for the split's check)
printf '{"configList":[{"resourceName":"ib","rdmaHcaMax":4,"selectors":{"linkTypes":["infiniband"]}},{"resourceName":"roce","rdmaHcaMax":4,"servedBy":"dra","selectors":{"linkTypes":["ether"]}}]}' >"$TMP/split.json"
if command -v strace >/dev/null; then
	loads() { # loads ARGS...: how often the doctor opens the sysfs root's class/infiniband
		ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=openat,openat2 -o "$TMP/doctor.trace" \
			"$RDMAK" doctor --root "$NODES/a100-ib-bond" --json "$@" >"$TMP/loads.json" 2>/dev/null
		grep -c '"class/infiniband",' "$TMP/doctor.trace"
	}
	without=$(loads)
	is "$(loads --plugin-config "$TMP/split.json")" "$without" \
		"a config split with the DRA driver: the node read as often as without --plugin-config ($without)"
	is "$(jget "$TMP/loads.json" "[f['status'] for f in d if f['id'] == 'netns.mode']")" '["ok"]' \
		"... and the config still judged (netns.mode)"
else
	skip "no strace" "a config split with the DRA driver: the node read as often as without --plugin-config"
	skip "no strace" "... and the config still judged (netns.mode)"
fi

# ---- text output, --check, usage errors ----------------------------------------------------------------------------
run "$RDMAK" doctor --root "$NODES/a100-ib-bond" --check port.state
is "$rc" 2 "text mode keeps the exit code"
like "$out" '^fail +port\.state +mlx5_0/1' "text: a table row per finding"
like "$out" 'evidence: .*/ports/1/state: 1: DOWN' "text: evidence of failures"
like "$out" 'fix: ' "text: fix of failures"
unlike "$out" 'rdma\.devices' "--check runs only the checks asked for"
run "$RDMAK" doctor --root "$TMP/does-not-exist"
is "$rc" 3 "missing root: exit 3"
like "$err" 'cannot open sysfs root' "missing root: says why on stderr"
run "$RDMAK" doctor --no-such-option
is "$rc" 3 "bad option: exit 3"

# ---- --nfd ------------------------------------------------------------------------------------------------------------------
doctor --root "$NODES/v100-ib" --nfd "$TMP/rdmak.nfd"
like "$(cat "$TMP/rdmak.nfd")" '^rdmak\.io/rdma\.capable=true$' "nfd: v100 is RDMA capable"
like "$(cat "$TMP/rdmak.nfd")" '^rdmak\.io/rdma\.ib=true$' "nfd: link layer IB"
like "$(cat "$TMP/rdmak.nfd")" '^rdmak\.io/rdma\.roce=false$' "nfd: no RoCE"
like "$(cat "$TMP/rdmak.nfd")" '^rdmak\.io/gpudirect\.ready=true$' "nfd: GPUDirect ready"
unlike "$(cat "$TMP/rdmak.nfd")" '=.*[^A-Za-z0-9._-]$' "nfd: values are valid label values"
doctor --root "$NODES/a100-ib-bond" --nfd "$TMP/a100.nfd"
like "$(cat "$TMP/a100.nfd")" '^rdmak\.io/rdma\.roce-lag=true$' "nfd: a100 has RoCE LAG"
like "$(cat "$TMP/a100.nfd")" '^rdmak\.io/doctor\.status=fail$' "nfd: a100 doctor status fail"
doctor --root "$NODES/no-rdma" --nfd "$TMP/none.nfd"
like "$(cat "$TMP/none.nfd")" '^rdmak\.io/rdma\.capable=false$' "nfd: no-rdma is not capable"
ls "$TMP"/*.tmp.* >/dev/null 2>&1
is "$?" 2 "nfd: no temporary file left behind"

contract_holds
# ---- gpudirect.acs: ACS redirect on the switch ports between GPU0 and mlx5_0 (PIX) ----------
node_copy cx5-roce-sriov "$TMP/acs"
"$RDMAK" list --root "$TMP/acs" --json >"$TMP/acs.json"
bridges=$(jget "$TMP/acs.json" "' '.join((lambda P, a, b: [x for x in P[a]['path'] + P[b]['path'] if not (x in P[a]['path'] and x in P[b]['path'])])({p['bdf']: p for p in d['pci']}, d['gpus'][0]['pci'], [r['pci'] for r in d['rdma_devices'] if r['name'] == d['gpus'][0]['nearest_rdma_device']][0]))")
ok $([ -n "$bridges" ] && echo 0 || echo 1) "acs: GPU0 and its HCA sit behind switch ports ($bridges)"
# config space as the kernel shows it to root: 4096 bytes, the ACS extended capability at 0x100
write_cfg() { # BDF CONTROL SIZE
	"$PY" - "$TMP/acs/sys/bus/pci/devices/$1/config" "$2" "$3" <<'PY'
import struct, sys
cfg = bytearray(4096)
struct.pack_into("<HH", cfg, 0, 0x10b5, 0x9781)           # vendor, device
struct.pack_into("<IHH", cfg, 0x100, 0x000d | 1 << 16, 0x005f, int(sys.argv[2], 16))
open(sys.argv[1], "wb").write(cfg[: int(sys.argv[3])])
PY
}
for b in $bridges; do write_cfg "$b" 0x0000 4096; done
doctor --root "$TMP/acs" --check gpudirect.acs
is "$(statuses gpudirect.acs GPU0)" ok "acs: no redirect on the bridges: ok"
first=$(echo $bridges | cut -d' ' -f1)
write_cfg "$first" 0x001d 4096
doctor --root "$TMP/acs" --check gpudirect.acs
is "$(statuses gpudirect.acs GPU0)" warn "acs: P2P Request/Completion Redirect on $first: warn"
like "$(titles gpudirect.acs GPU0)" "ACS on bridge $first redirects" "acs: the title names the bridge"
is "$rc" 1 "acs: exit 1 (worst is a warning)"
printf '%s' "$out" >"$TMP/acs-out.json"
is "$(jget "$TMP/acs-out.json" "[f['evidence'][0]['value'] for f in d if f['id']=='gpudirect.acs' and f['status']=='warn'][0]")" \
	"ACS Control 0x001d (P2P Request Redirect on, Completion Redirect on)" "acs: evidence is the control register read"
for b in $bridges; do write_cfg "$b" 0x001d 64; done
doctor --root "$TMP/acs" --check gpudirect.acs
is "$(statuses gpudirect.acs GPU0)" skip "acs: only 64 bytes visible (not root): skip, not a guess"

done_testing
