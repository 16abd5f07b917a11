#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak plugin against the live /dev/infiniband: a shared resource selecting the soft-RoCE
# devices, the tests' kubelet (grpc-js) allocating it, then a podman container started with
# exactly the devices and environment Allocate returned, running ibv_devinfo and
# rdmak doctor --pod inside: the container sees its device, its memlock is right.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
rdma link add rxeb type rxe netdev vb || echo "Bail out! rdma link add rxeb failed"
mkdir -p "$TMP/kubelet" "$TMP/devinfo"
printf '%s\n' '{"configList":[{"resourceName":"rdma_rxe","rdmaHcaMax":8,"selectors":{"ifNames":["va","vb"]}}]}' \
	>"$TMP/plugin.json"

"$RDMAK" plugin --kubelet-dir "$TMP/kubelet" --config "$TMP/plugin.json" \
	--device-info-dir "$TMP/devinfo" 2>"$TMP/plugin.log" &
plug=$!
if [ -d "$TOP/tests/js/node_modules/@grpc/grpc-js" ]; then
	run node "$TOP/tests/vm/harness/kubelet-allocate.mjs" "$TMP/kubelet" rdma/rdma_rxe "$TMP/alloc.json"
	is "$rc" 0 "the kubelet allocates rdma/rdma_rxe${err:+: $err}"
else
	skip "tests/js/node_modules missing (npm ci in tests/js)" "the kubelet allocates rdma/rdma_rxe"
fi
kill "$plug"
wait "$plug"
is "$?" 0 "SIGTERM: the plugin exits 0"
[ -f "$TMP/alloc.json" ] || { done_testing; exit; }

checks "$TMP/alloc.json" <<'PY'
a = load(sys.argv[1])
uv = sorted(u for u in os.listdir("/sys/class/infiniband_verbs") if u.startswith("uverbs"))
check(a["registration"]["resource_name"] == "rdma/rdma_rxe", "registered as rdma/rdma_rxe")
check(len(a["devices"]) == 8 and all(d["health"] == "Healthy" for d in a["devices"]),
      "ListAndWatch: rdmaHcaMax (8) ids, Healthy", a["devices"])
c = a["allocate"]["container_responses"][0]
got = sorted((d["host_path"], d["container_path"], d["permissions"]) for d in c["devices"])
mad = sorted(u for u in os.listdir("/sys/class/infiniband_mad") if u.startswith(("umad", "issm"))
             and rd(f"/sys/class/infiniband_mad/{u}/ibdev") in ("rxea", "rxeb"))
nodes = uv + mad + ["rdma_cm"]
want = sorted((f"/dev/infiniband/{u}", f"/dev/infiniband/{u}", "rw") for u in nodes)
check(got == want, f"Allocate: {' '.join(nodes)} of rxea and rxeb, as sysfs names them (docs/plugin.md)",
      f"got {got}\nwant {want}")
with open(sys.argv[1] + ".args", "w") as f:
    for h, cp, p in got:
        f.write(f"--device={h}:{cp}:{p}\n")
    for k, v in sorted(c.get("envs", {}).items()):
        f.write(f"--env={k}={v}\n")
PY

# ---- a container with exactly that --------------------------------------------------------------
if ! command -v podman >/dev/null; then
	skip "podman not installed" "a container with the allocation"
	done_testing
	exit
fi
mapfile -t args <"$TMP/alloc.json.args"
# the guest's root as the container's (no image, no registry), through a bind mount: pivot_root
# cannot make / itself the new root. Storage and state in the test's folder. Besides what
# Allocate returned, only what a pod's spec and its runtime give: memlock unlimited (containerd's
# LimitMEMLOCK=infinity), a 1 GiB /dev/shm (an emptyDir of medium Memory), and the host's
# network (hostNetwork: va and vb own the GIDs; with none of its own, pod.gids rightly fails).
mkdir "$TMP/rootfs"
mount --bind / "$TMP/rootfs"
pod=(podman --root "$TMP/storage" --runroot "$TMP/runroot" --storage-driver vfs --cgroup-manager cgroupfs
	--events-backend file)
run "${pod[@]}" run --rm --network host --ulimit memlock=-1:-1 --shm-size 1g "${args[@]}" \
	--rootfs "$TMP/rootfs" sh -c 'ls /dev/infiniband; echo ---; ibv_devinfo -l; echo ---; "$0" doctor --pod --json' "$RDMAK"
umount "$TMP/rootfs"
is "$rc" 0 "podman run with the allocation's devices and envs${err:+: $(printf '%s' "$err" | tail -1)}"
printf '%s\n' "$out" >"$TMP/in-pod.txt"
checks "$TMP/in-pod.txt" "$TMP/alloc.json" <<'PY'
text = open(sys.argv[1]).read().split("---\n")
a = load(sys.argv[2])
c = a["allocate"]["container_responses"][0]
devs = sorted(os.path.basename(d["container_path"]) for d in c["devices"])
check(len(text) == 3, "the container's three answers", text)
check(sorted(text[0].split()) == devs, f"/dev/infiniband in the container holds exactly those", (devs, text[0]))
found = sorted(l.strip() for l in text[1].splitlines()[1:] if l.strip())
check(found == ["rxea", "rxeb"], "ibv_devinfo -l in the container finds rxea and rxeb", text[1])
d = json.loads(text[2])
st = {f["id"]: f["status"] for f in d if f["id"] in ("pod.devnodes", "pod.memlock")}
check(st.get("pod.devnodes") == "ok", "doctor --pod: pod.devnodes ok (the uverbs nodes it was given)", [f for f in d if f["id"] == "pod.devnodes"])
check(st.get("pod.memlock") == "ok", "doctor --pod: pod.memlock ok (unlimited, as the runtime was told)", [f for f in d if f["id"] == "pod.memlock"])
check(not [f for f in d if f["status"] == "fail"], "doctor --pod: no failure in the container", [(f["id"], f["title"]) for f in d if f["status"] == "fail"])
PY
rdma link delete rxeb
done_testing
