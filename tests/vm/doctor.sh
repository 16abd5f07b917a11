#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak doctor on a live soft-RoCE node: healthy gives no failure; then each fault made the way
# an operator meets it (the netdev down, a module unloaded, a low memlock, uverbs at 0600) is
# named with its fix, and what the doctor says is what the kernel's tools show.
. "$TOP/tests/vm/harness/lib.sh"
vm_node

# ---- healthy ---------------------------------------------------------------------------------
doctor
is "$(count_status fail)" 0 "healthy: no failure"
is "$(count_status warn)" 0 "healthy: no warning (rdma_ucm and ib_umad loaded)"
is "$rc" 0 "healthy: exit 0"
is "$(statuses port.state rxea/1)" ok "healthy: rxea/1 ok"
like "$(titles roce.gids rxea/1)" "$(vm_gid 10.77.0.1) on va" "healthy: roce.gids names va's IPv4 GID, as sysfs has it"
is "$(statuses netns.mode)" ok "healthy: netns mode ok"
cp "$TMP/doctor.json" "$TMP/healthy.json"

# the exporter serves the same findings (it runs the doctor's node checks itself)
"$RDMAK" exporter --once --no-pod-resources 2>/dev/null | grep '^rdmak_doctor_check{' >"$TMP/served"
checks "$TMP/healthy.json" "$TMP/served" <<'PY'
import re
d = load(sys.argv[1]); served = open(sys.argv[2]).read()
got = sorted(re.findall(r'check="([^"]*)",object="([^"]*)",status="([^"]*)"\} 1$', served, re.M))
worst = {}
rank = {"skip": 0, "ok": 1, "warn": 2, "fail": 3}
for f in d:
    k = (f["id"], f["object"] or "")
    if (f["object"] or f["status"] != "skip") and rank[f["status"]] >= rank.get(worst.get(k), 0):
        worst[k] = f["status"]
want = sorted((a, b, s) for (a, b), s in worst.items())
check(got == want, "exporter --once serves the doctor's findings, the worst per check and object (not what does not apply)",
      f"got {got}\nwant {want}")
PY

# ---- the port down: the netdev under rxea --------------------------------------------------------
ip link set va down
kernel_says rdma link show rxea/1
like "$out" 'state DOWN physical_state DISABLED' "va down: rdma link shows rxea/1 DOWN/DISABLED"
doctor
is "$(statuses port.state rxea/1)" fail "va down: port.state fails for rxea/1"
like "$(titles port.state rxea/1)" 'DOWN/Disabled' "va down: the title says DOWN/Disabled, as the kernel does"
like "$(titles port.state rxea/1)" '\| .*ip link set va up' "va down: the fix brings va up"
is "$rc" 2 "va down: exit 2"
ip link set va up
vm_wait_gid rxea 10.77.0.1

# ---- memlock: a pod's limit, as libibverbs sees it ------------------------------------------------
# as nobody: libibverbs says nothing to root, and root's CAP_IPC_LOCK makes the limit moot
(
	ulimit -l 32
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }
	kernel_says as_nobody ibv_devinfo -l
	echo "$err" >"$TMP/verbs-warning"
	VM_AS=as_nobody
	doctor --pod --check pod.memlock
	printf '%s\n' "$rc" >"$TMP/memlock.rc"
	printf '%s\n' "$findings" >"$TMP/memlock"
)
is "$(<"$TMP/memlock.rc")" 2 "memlock 32 KiB: doctor --pod exits 2"
_slurp findings "$TMP/memlock"
is "$(statuses pod.memlock)" fail "memlock 32 KiB: pod.memlock fails"
like "$(titles pod.memlock)" '^32 KiB \(libibverbs warns "RLIMIT_MEMLOCK is ' "memlock 32 KiB: names the limit and libibverbs' warning"
like "$(cat "$TMP/verbs-warning")" 'RLIMIT_MEMLOCK is 32768 bytes' "  which libibverbs itself prints with that limit: $(head -1 "$TMP/verbs-warning")"
like "$(titles pod.memlock)" '\| .*(ulimit|memlock|IPC_LOCK)' "memlock 32 KiB: the fix names the limit"

# ---- uverbs node 0600 ------------------------------------------------------------------------------
uv=$(basename "$(dirname "$(grep -lx rxea /sys/class/infiniband_verbs/uverbs*/ibdev)")")
chmod 0600 "/dev/infiniband/$uv"
doctor --check chardev.nodes
like "$(statuses chardev.nodes)" warn "$uv 0600: chardev.nodes warns"
like "$(titles chardev.nodes)" "$uv.*0600" "$uv 0600: names the node and its mode"
like "$(titles chardev.nodes)" '\| .*(0666|udev)' "$uv 0600: the fix gives the mode non-root pods need"
chmod 0666 "/dev/infiniband/$uv"

# ---- rdma_ucm unloaded -----------------------------------------------------------------------------
rmmod rdma_ucm
doctor --check kernel.modules
is "$(statuses kernel.modules rdma_ucm)" warn "rdma_ucm unloaded: kernel.modules warns"
like "$(titles kernel.modules rdma_ucm)" '\| modprobe rdma_ucm' "rdma_ucm unloaded: the fix is modprobe rdma_ucm"
modprobe rdma_ucm

# ---- ib_uverbs unloaded: rdma_rxe needs it, so the kernel refuses while rxe is there ---------------
is "$(modinfo -F depends rdma_rxe | tr , '\n' | grep -x ib_uverbs)" ib_uverbs "rdma_rxe depends on ib_uverbs (modinfo)"
kernel_says rmmod ib_uverbs
ok $([ "$rc" -ne 0 ] && echo 0 || echo 1) "so rmmod ib_uverbs is refused while rxe is loaded: $why"
rdma link delete rxea
# the device goes with its last reference: retry until the modules may go
for i in $(seq 50); do modprobe -r rdma_ucm rdma_rxe 2>/dev/null && break; vm_sleep 0.1; done
ok $([ ! -e /sys/module/ib_uverbs ] && echo 0 || echo 1) "without rxe and rdma_ucm, ib_uverbs is gone (modprobe -r took it)"
doctor
is "$(statuses rdma.devices)" fail "no ib_uverbs, no rxe: rdma.devices fails"
like "$(titles rdma.devices)" 'no RDMA device.*\| .*modprobe' "  with a modprobe as its fix"
is "$(statuses kernel.modules)" skip "  kernel.modules: nothing RDMA to judge (rdma.devices says it)"
is "$rc" 2 "  exit 2"
vm_node

contract_holds
done_testing
