#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak doctor --pod: each container failure of issue 4 (real-outputs G1, G6-G10, seed 003)
# on a pod tree: a sample node copied, the container's own /proc, cgroup and image files
# added (tests/fixtures/doctor), then exactly what the failure changes. Each test asserts the
# finding id, its status and the exit code.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/doctor/lib.sh"

: >"$TMP/noenv"
pdoctor() { doctor --pod --root "$1" --env "${2:-$TMP/noenv}"; }
envfile() { printf '%s\n' "$@" >"$TMP/env"; }

# ---- a healthy pod: uid 0 + IPC_LOCK, 1 GiB /dev/shm, no memory limit, rdma-core installed ----
base=$TMP/base; node_copy v100-ib "$base"; pod_files "$base"
pdoctor "$base"
is "$rc" 0 "healthy pod: exit 0"
is "$(count_status fail)" 0 "healthy pod: no failure"
is "$(statuses pod.devnodes mlx5_0)" ok "healthy pod: uverbs0 present"
is "$(statuses pod.memlock)" ok "healthy pod: memlock ok (IPC_LOCK effective)"
is "$(statuses pod.shm)" ok "healthy pod: /dev/shm 1 GiB"
is "$(statuses pod.provider mlx5)" ok "healthy pod: libmlx5 installed"
pod() { rm -rf "$1"; cp -a "$base" "$1"; }

# ---- G1: no uverbs node in the pod (only rdma_cm and umad passed in) -------------------------
p=$TMP/g1; pod "$p"; rm -f "$p"/dev/infiniband/uverbs*
pdoctor "$p"
is "$rc" 2 "G1 no uverbs: exit 2"
is "$(statuses pod.devnodes)" fail "G1 no uverbs: pod.devnodes fail"
like "$(titles pod.devnodes)" 'Did not detect devices' "G1: title quotes perftest"

# ---- device cgroup (v1): /dev/infiniband mounted by hostPath, the nodes are not in devices.list ----
p=$TMP/devcg; pod "$p"; mkdir -p "$p/sys/fs/cgroup/devices"
printf 'c *:* m\nb *:* m\nc 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 5:0 rwm\nc 5:2 rwm\nc 1:8 rwm\nc 1:9 rwm\nc 136:* rwm\nc 10:200 rwm\n' \
	>"$p/sys/fs/cgroup/devices/devices.list"
pdoctor "$p"
is "$(statuses pod.devnodes mlx5_0)" fail "device cgroup without 231:192: pod.devnodes fail for mlx5_0"
is "$(statuses pod.devnodes)" "fail fail fail" "device cgroup: both HCAs refused, so none usable"
printf 'c 231:192 rw\nc 231:193 rw\n' >>"$p/sys/fs/cgroup/devices/devices.list"
pdoctor "$p"
is "$(statuses pod.devnodes)" "ok ok" "device plugin added both nodes to devices.list: ok"

# ---- seed 003: `IB device mlx5_bond_0 not found` (LAG device not passed into the pod) ------------
p=$TMP/lag; node_copy a100-ib-bond "$p"; pod_files "$p"
rm -f "$p/dev/infiniband/$(uverbs_of "$p" mlx5_bond_0)"
pdoctor "$p"
is "$(statuses pod.devnodes mlx5_bond_0)" warn "LAG device without its uverbs node: pod.devnodes warn"
like "$(titles pod.devnodes mlx5_bond_0)" 'IB device mlx5_bond_0 not found' "LAG: title quotes perftest"
like "$(titles pod.devnodes mlx5_bond_0)" 'ifNames \["bond0"\]' "LAG: fix selects the bond"
envfile NCCL_IB_HCA=mlx5_bond_0
pdoctor "$p" "$TMP/env"
is "$(statuses nccl.ib_hca NCCL_IB_HCA)" "fail fail" "NCCL_IB_HCA=mlx5_bond_0 not usable: nccl.ib_hca fail (and nothing selected)"
is "$rc" 2 "LAG named in NCCL_IB_HCA: exit 2"

# ---- seed 003: NCCL_IB_HCA naming the Down HCA (Port number 1 state is Down) ----------------------
p=$TMP/down; node_copy a100-ib-bond "$p"; pod_files "$p"
envfile NCCL_IB_HCA=mlx5_0
pdoctor "$p" "$TMP/env"
is "$(statuses port.state mlx5_0/1)" fail "pod: port.state fail for the Down port"
like "$(titles nccl.ib_hca)" 'mlx5_0 port 1 is DOWN.*NCCL_IB_HCA==mlx5_1' "NCCL_IB_HCA=mlx5_0: fail, fix names the ACTIVE HCA"

# ---- Couldn't allocate MR: RLIMIT_MEMLOCK without IPC_LOCK ------------------------------------------
p=$TMP/memlock; pod "$p"; cp "$FIX/proc/status-root-nocap" "$p/proc/self/status"
pdoctor "$p"
is "$rc" 2 "8 MiB memlock, no IPC_LOCK: exit 2"
is "$(statuses pod.memlock)" fail "8 MiB memlock: pod.memlock fail"
like "$(titles pod.memlock)" "Couldn't allocate MR.*64 MiB" "memlock: names the MR error and NCCL's 64 MiB"
like "$(titles pod.memlock)" 'LimitMEMLOCK=infinity' "memlock: fix names the runtime setting"
is "$(statuses pod.ipc_lock)" fail "no IPC_LOCK with a finite memlock: pod.ipc_lock fail"
like "$(titles pod.ipc_lock)" 'capabilities.add: \["IPC_LOCK"\]' "ipc_lock: fix names the pod spec field"
set_memlock "$p" 32768 32768
pdoctor "$p"
like "$(titles pod.memlock)" 'RLIMIT_MEMLOCK is \.\.\. bytes' "32 KiB memlock: libibverbs' warning threshold"
set_memlock "$p" 268435456 268435456
pdoctor "$p"
is "$(statuses pod.memlock)" warn "256 MiB memlock: warn"
envfile NCCL_BUFFSIZE=33554432
pdoctor "$p" "$TMP/env"
is "$(statuses pod.memlock)" fail "256 MiB memlock with NCCL_BUFFSIZE=32 MiB (needs 512 MiB): fail"
set_memlock "$p" unlimited unlimited
pdoctor "$p"
is "$(statuses pod.memlock)" ok "unlimited memlock: ok"
is "$(statuses pod.ipc_lock)" ok "unlimited memlock: IPC_LOCK not needed"

# ---- G10: IPC_LOCK added but ineffective for uid 1000 ---------------------------------------------------
p=$TMP/g10; pod "$p"; cp "$FIX/proc/status-nonroot-ipclock" "$p/proc/self/status"
pdoctor "$p"
is "$rc" 2 "G10: exit 2"
is "$(statuses pod.ipc_lock)" fail "G10: pod.ipc_lock fail"
like "$(titles pod.ipc_lock)" 'not effective.*uid 1000' "G10: says why (non-root)"
is "$(statuses pod.memlock)" fail "G10: memlock 8 MiB applies"

# ---- Couldn't allocate MR: the pod's memory limit (seed 003) ------------------------------------------
p=$TMP/mem; pod "$p"
printf '268435456\n' >"$p/sys/fs/cgroup/memory.max"; printf '234881024\n' >"$p/sys/fs/cgroup/memory.current"
pdoctor "$p"
is "$(statuses pod.memory)" fail "cgroup v2 limit 256 MiB, 224 MiB used: pod.memory fail"
like "$(titles pod.memory)" "Couldn't allocate MR" "memory: names the MR error"
is "$rc" 2 "memory limit: exit 2"
printf '68719476736\n' >"$p/sys/fs/cgroup/memory.max"
pdoctor "$p"
is "$(statuses pod.memory)" ok "64 GiB limit: ok"
# cgroup v1 (memory controller mounted at /sys/fs/cgroup/memory, the container's own group)
p=$TMP/memv1; pod "$p"; rm -f "$p"/sys/fs/cgroup/memory.*
mkdir -p "$p/sys/fs/cgroup/memory"
printf '12:pids:/kubepods/burstable/pod7c1/4f2a\n4:memory:/kubepods/burstable/pod7c1/4f2a\n1:name=systemd:/kubepods/burstable/pod7c1/4f2a\n' >"$p/proc/self/cgroup"
printf '134217728\n' >"$p/sys/fs/cgroup/memory/memory.limit_in_bytes"
printf '104857600\n' >"$p/sys/fs/cgroup/memory/memory.usage_in_bytes"
pdoctor "$p"
is "$(statuses pod.memory)" fail "cgroup v1 limit 128 MiB, 100 MiB used: fail"
printf '9223372036854771712\n' >"$p/sys/fs/cgroup/memory/memory.limit_in_bytes"
pdoctor "$p"
is "$(statuses pod.memory)" ok "cgroup v1 without a limit: ok"

# ---- /dev/shm too small (the runtime's 64 MiB, no emptyDir) -----------------------------------------------
p=$TMP/shm; pod "$p"; sed -i '/size=1048576k/d' "$p/proc/self/mountinfo"
pdoctor "$p"
is "$(statuses pod.shm)" fail "/dev/shm 64 MiB: pod.shm fail"
like "$(titles pod.shm)" 'failed to extend /dev/shm' "shm: quotes NCCL"
like "$(titles pod.shm)" 'medium: Memory' "shm: fix names the emptyDir"
is "$rc" 2 "shm: exit 2"
sed -i 's/size=65536k/size=524288k/' "$p/proc/self/mountinfo"
pdoctor "$p"
is "$(statuses pod.shm)" warn "/dev/shm 512 MiB: warn"

# ---- G6: provider library missing in the image ----------------------------------------------------------------
p=$TMP/g6; pod "$p"; rm -f "$p"/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav*.so
pdoctor "$p"
is "$(statuses pod.provider mlx5)" fail "G6 no libmlx5: pod.provider fail"
like "$(titles pod.provider mlx5)" 'no userspace device-specific driver found' "G6: quotes libibverbs"
is "$rc" 2 "G6: exit 2"
p=$TMP/g6b; pod "$p"; rm -f "$p/etc/libibverbs.d/mlx5.driver"
pdoctor "$p"
is "$(statuses pod.provider mlx5)" fail "no mlx5.driver config: pod.provider fail"
p=$TMP/g6c; pod "$p"; rm -rf "$p/usr/lib/x86_64-linux-gnu"
pdoctor "$p"
like "$(titles pod.provider mlx5)" 'libibverbs is not installed' "no libibverbs at all: fail"

# ---- exclusive RDMA netns mode: a healthy SR-IOV pod, then G7/G8 and no isolation ------------------------------------
x=$TMP/excl; node_copy cx5-roce-sriov "$x"; pod_files "$x"
exclusive_pod "$x" mlx5_2 enp27s0f0v0
g=$x/sys/class/infiniband/mlx5_2/ports/1
# net1 got 10.0.1.21 from IPAM: the kernel adds the IPv4 GIDs (v1 at 2, v2 at 3)
for i in 2 3; do printf '0000:0000:0000:0000:0000:ffff:0a00:0115\n' >"$g/gids/$i"; printf 'enp27s0f0v0\n' >"$g/gid_attrs/ndevs/$i"; done
printf 'IB/RoCE v1\n' >"$g/gid_attrs/types/2"; printf 'RoCE v2\n' >"$g/gid_attrs/types/3"
pdoctor "$x"
is "$(statuses pod.netns)" ok "exclusive pod with its VF: pod.netns ok"
is "$(statuses pod.gids mlx5_2/1)" ok "exclusive pod: RoCE v2 IPv4 GID on the VF netdev"
is "$(count_status fail)" 0 "exclusive pod: no failure"
envfile NCCL_IB_GID_INDEX=3
pdoctor "$x" "$TMP/env"
is "$(statuses nccl.env NCCL_IB_GID_INDEX)" ok "NCCL_IB_GID_INDEX=3 is the RoCE v2 GID: ok"
envfile NCCL_IB_GID_INDEX=7
pdoctor "$x" "$TMP/env"
is "$(statuses nccl.env NCCL_IB_GID_INDEX)" fail "NCCL_IB_GID_INDEX=7 is empty: fail"
# G8: the VF's GID table is empty in the pod (netdev not up / no address)
p=$TMP/g8; rm -rf "$p"; cp -a "$x" "$p"; g=$p/sys/class/infiniband/mlx5_2/ports/1
for f in "$g"/gids/*; do printf '0000:0000:0000:0000:0000:0000:0000:0000\n' >"$f"; done
for f in "$g"/gid_attrs/types/* "$g"/gid_attrs/ndevs/*; do : >"$f"; done
pdoctor "$p"
is "$(statuses pod.gids mlx5_2/1)" fail "G8 empty GID table: pod.gids fail"
like "$(titles pod.gids mlx5_2/1)" 'n_gids_found=0' "G8: quotes show_gids"
is "$rc" 2 "G8: exit 2"
# G7: the GIDs belong to a netdev that is not in the pod (GID 0 all-zero, the rest elsewhere)
p=$TMP/g7; rm -rf "$p"; cp -a "$x" "$p"; rm -f "$p/sys/class/net/enp27s0f0v0"
g=$p/sys/class/infiniband/mlx5_2/ports/1
printf '0000:0000:0000:0000:0000:0000:0000:0000\n' >"$g/gids/0"; : >"$g/gid_attrs/types/0"; : >"$g/gid_attrs/ndevs/0"
pdoctor "$p"
is "$(statuses pod.gids mlx5_2/1)" fail "G7 GIDs owned outside the pod: pod.gids fail"
like "$(titles pod.gids mlx5_2/1)" "Unable to Connect the HCA's through the link" "G7: quotes perftest"
# exclusive mode without isolation: uverbs passed in, but no RDMA device moved into the namespace
p=$TMP/noiso; rm -rf "$p"; cp -a "$x" "$p"; rm -f "$p"/sys/class/infiniband/*
pdoctor "$p"
is "$(statuses pod.netns)" fail "exclusive mode, no device in the pod's netns: pod.netns fail"
like "$(titles pod.netns)" 'uverbs nodes were passed in' "no isolation: notes the device plugin did its part"
like "$(titles pod.netns)" '"type": "rdma"' "no isolation: fix names the rdma CNI"
is "$rc" 2 "no isolation: exit 2"

# ---- NCCL_IB_HCA syntax against the devices: prefix pitfall, exact names, ports ----------------------------------------
p=$TMP/cx5; node_copy cx5-roce-sriov "$p"; pod_files "$p"
envfile NCCL_IB_HCA=mlx5_1
pdoctor "$p" "$TMP/env"
is "$(statuses nccl.ib_hca)" "warn ok" "NCCL_IB_HCA=mlx5_1 beside mlx5_10..: prefix warn"
like "$(titles nccl.ib_hca)" 'also selects mlx5_10, mlx5_11' "prefix: names what else it selects"
like "$(titles nccl.ib_hca)" 'NCCL_IB_HCA==mlx5_1' "prefix: fix adds ="
envfile NCCL_IB_HCA==mlx5_1
pdoctor "$p" "$TMP/env"
is "$(statuses nccl.ib_hca)" ok "NCCL_IB_HCA==mlx5_1: ok"
envfile 'NCCL_IB_HCA=^=mlx5_1'
pdoctor "$p" "$TMP/env"
is "$(statuses nccl.ib_hca)" ok "NCCL_IB_HCA=^=mlx5_1: ok"
envfile 'NCCL_IB_HCA=mlx5_0:1,mlx5_9'
pdoctor "$base" "$TMP/env"
like "$(statuses nccl.ib_hca)" '^fail ok$' "v100: mlx5_9 names no HCA: fail, mlx5_0:1 still selected"
envfile 'NCCL_IB_HCA==mlx5_0:2'
pdoctor "$base" "$TMP/env"
like "$(statuses nccl.ib_hca)" '^fail fail$' "v100: mlx5_0 has no port 2: fail"
envfile 'NCCL_IB_HCA=mlx5_0,'
pdoctor "$base" "$TMP/env"
is "$(statuses nccl.ib_hca)" fail "malformed NCCL_IB_HCA: fail"

# ---- NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE --------------------------------------------------------------------------------
envfile NCCL_SOCKET_IFNAME=eth0
pdoctor "$base" "$TMP/env"
is "$(statuses nccl.socket_ifname)" fail "NCCL_SOCKET_IFNAME=eth0 absent: fail"
envfile NCCL_SOCKET_IFNAME=ibp94s0f0 NCCL_IB_DISABLE=1
pdoctor "$base" "$TMP/env"
is "$(statuses nccl.socket_ifname)" ok "NCCL_SOCKET_IFNAME=ibp94s0f0: ok"
is "$(statuses nccl.env NCCL_IB_DISABLE)" warn "NCCL_IB_DISABLE=1: warn"
envfile 'NCCL_SOCKET_IFNAME=^lo,docker'
pdoctor "$base" "$TMP/env"
is "$(statuses nccl.socket_ifname)" ok "NCCL_SOCKET_IFNAME=^lo,docker: ok"

# ---- where the variables come from: /proc/PID/environ format, or the environment ---------------------------------------
printf 'PATH=/usr/bin\0NCCL_IB_HCA=mlx5_7\0HOME=/root\0' >"$TMP/environ"
pdoctor "$base" "$TMP/environ"
is "$(statuses nccl.ib_hca | cut -d' ' -f1)" fail "environ format read"
NCCL_IB_HCA=mlx5_7 run "$RDMAK" doctor --json --pod --root "$base"
is "$(statuses nccl.ib_hca | cut -d' ' -f1)" fail "process environment read without --env"

contract_holds
done_testing
