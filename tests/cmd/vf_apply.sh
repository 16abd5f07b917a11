#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak vf apply against the SR-IOV sysfs stand-in (tests/helpers/sysfs_fuse.c, the kernel's
# sriov_numvfs rules and its driver bind/unbind): the writes in kernel order, idempotence,
# refusal under held VFs, undo, VFs bound by apply when sriov_drivers_autoprobe is 0, one apply
# of a node at a time (concurrent applies, and undo to what was found under the lock). First,
# on a sample node read as it is: a pod's VF whose GUIDs a step would change stops apply.
# There is no SR-IOV NIC here: the rtnetlink steps (MTU, link up, IB VF GUIDs) are not run by
# these tests; apply's GUID requests, their order and their undo are checked attribute by
# attribute in tests/unit/test_vf_apply.c and the derivation in tests/unit/test_vf.c.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-vf.sh"
FX=$TOP/tests/fixtures/vf

# cx7-rail-1016vf: 127 InfiniBand VFs per PF, bound, with GUIDs another tool set (as after
# sriov-network-operator or ib-kubernetes); a pod holds VF 0 of 0000:18:00.0. Every VF needs its
# GUIDs, and a GUID change binds the VF again: the pod's VF would be unbound under it
CX7=$NODES/cx7-rail-1016vf
printf '{"kind":"SriovNetworkNodePolicy","metadata":{"name":"ib"},"spec":{"nodeSelector":{},"resourceName":"ibvf","numVfs":127,"linkType":"ib","isRdma":true,"nicSelector":{"rootDevices":["0000:18:00.0"]}}}\n' >"$TMP/ib.json"
printf '{"Data":{"PodDeviceEntries":[{"PodUID":"9b2e6a51-44c0-4b8e-8f0e-3d6f0c1a7e22","ContainerName":"train","ResourceName":"rdmak/ibvf","DeviceIDs":{"0":["0000:18:00.1"]}}]},"Checksum":1}\n' >"$TMP/cp"
run "$RDMAK" vf apply --policy "$TMP/ib.json" --root "$CX7" --checkpoint "$TMP/cp"
is "$rc" 5 "a pod's VF whose GUIDs are not rdmak's: refused, exit 5"
like "$out" '0000:18:00.0: VF 0 \(0000:18:00.1\) is held by pod 9b2e6a51-44c0-4b8e-8f0e-3d6f0c1a7e22 container train: vf-guids would change its GUIDs' \
	"names the pod and the step"
like "$err" 'refused: pods hold VFs that these steps would remove or change \(--force' "says how to go on"
unlike "$out" 'GUIDs of|bound' "nothing done"

why=$(fuse_why)
if [ -n "$why" ]; then skip "$why" "rdmak vf apply against the SR-IOV stand-in"; done_testing; exit; fi

policy() { # NUMVFS [PF]
	printf '{"kind":"SriovNetworkNodePolicy","metadata":{"name":"p"},"spec":{"nodeSelector":{},"resourceName":"r","numVfs":%s,"nicSelector":{"rootDevices":["%s"]}}}\n' \
		"$1" "${2:-0000:1b:00.0}" >"$TMP/p$1.json"
	echo "$TMP/p$1.json"
}
R=$TMP/node
standin cx5-roce-sriov "$R"; ok $? "stand-in mounted"
PF=$R/sys/bus/pci/devices/0000:1b:00.0
log() { cat "$R/numvfs.log" 2>/dev/null | tr '\n' ';'; }

run "$RDMAK" vf apply --policy "$(policy 8)" --root "$R"
is "$rc" 0 "12 -> 8: exit 0 (done)"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 8 ok;" "the kernel's order: 0 first, then 8"
is "$(cat "$PF/sriov_numvfs")" 8 "sriov_numvfs reads 8"
is "$(ls "$R/sys/class/net" | grep -c '^enp27s0f0v')" 8 "8 VF netdevs (waited for)"
like "$out" '0000:1b:00.0: sriov_numvfs 0 -> 8' "says what it did"

run "$RDMAK" vf apply --policy "$TMP/p8.json" --root "$R"
is "$rc" 0 "again: exit 0"
is "$out" "nothing to do" "again: nothing to do"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 8 ok;" "again: no write"

# a pod holds VF 0 and VF 1 of this PF (the kubelet's checkpoint under the root)
mkdir -p "$R/var/lib/kubelet/device-plugins"
cp "$FX/kubelet_internal_checkpoint" "$R/var/lib/kubelet/device-plugins/"
run "$RDMAK" vf apply --policy "$(policy 4)" --root "$R"
is "$rc" 5 "fewer VFs under held VFs: refused, exit 5"
like "$out" 'VF 0 \(0000:1b:00.2\) is held by pod 6a1c2f9e-0d51-4e0b-9a55-1f3e9b2c7d01 container trainer' "names the pod"
like "$err" 'refused' "says refused"
is "$(cat "$PF/sriov_numvfs")" 8 "nothing written"
run "$RDMAK" vf apply --policy "$(policy 10)" --root "$R"
is "$rc" 5 "more VFs also removes the held ones (0 first): refused too"
run "$RDMAK" vf apply --policy "$TMP/p4.json" --root "$R" --force
is "$rc" 0 "--force: done"
[ "$rc" -eq 0 ] || printf "%s\n" "$out" "$err" | sed "s/^/#   /"
is "$(cat "$PF/sriov_numvfs")" 4 "sriov_numvfs reads 4"
rm -r "$R/var"

# a step that fails is undone: the stand-in refuses 14 (its fixture has 12 VF shapes)
: >"$R/numvfs.log"
run "$RDMAK" vf apply --policy "$(policy 14)" --root "$R"
is "$rc" 1 "a failed step: exit 1"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 14 ENOSPC;0000:1b:00.0 0 ok;0000:1b:00.0 4 ok;" "undone in reverse: back to 0, then 4"
like "$out" 'undo: 0000:1b:00.0: sriov_numvfs back to 4' "says it undid"
is "$(cat "$PF/sriov_numvfs")" 4 "the node is as it was"
is "$(ls "$R/sys/class/net" | grep -c '^enp27s0f0v')" 4 "its 4 VF netdevs are back"

# a firmware step: nothing live is done, exit 4
: >"$R/numvfs.log"
run "$RDMAK" vf apply --policy "$(policy 20)" --root "$R"
is "$rc" 4 "numVfs above sriov_totalvfs: exit 4 (reboot still needed)"
like "$out" 'reboot needed: mlxconfig -d 0000:1b:00.0 set SRIOV_EN=1 NUM_OF_VFS=20' "names the command"
is "$(log)" "" "no write: the live steps come after the reboot"

# without driver autoprobe the kernel binds no VF: apply binds each one after it appears
# (driver_override cleared, then drivers_probe, as sriov-network-operator's BindDefaultDriver)
echo 0 >"$PF/sriov_drivers_autoprobe"
run "$RDMAK" vf apply --policy "$(policy 2)" --root "$R" --timeout 2000
is "$rc" 0 "sriov_drivers_autoprobe 0: done"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 2 ok;0000:1b:00.2 drivers_probe ok;0000:1b:00.3 drivers_probe ok;" \
	"VFs made, then each bound"
is "$(basename "$(readlink "$PF/virtfn1/driver")")" mlx5_core "VF 1 is bound to mlx5_core"
[ -e "$PF/virtfn1/net/enp27s0f0v1" ]; ok $? "... with its netdev"
like "$out" '0000:1b:00.0: 2 VFs bound to their driver' "says so"
run "$RDMAK" vf apply --policy "$TMP/p2.json" --root "$R"
is "$out" "nothing to do" "again: nothing to do (the VFs are bound)"

# a VF left unbound (autoprobe 0, then unbound by hand): the plan's only step binds it
echo 0000:1b:00.3 >"$PF/virtfn1/driver/unbind"
: >"$R/numvfs.log"
run "$RDMAK" vf apply --policy "$TMP/p2.json" --root "$R"
is "$rc" 0 "an unbound VF: done"
is "$(log)" "0000:1b:00.3 drivers_probe ok;" "only that VF is bound, no sriov_numvfs write"

# a later PF's step fails: the VFs bound on the first PF are unbound again, in reverse, before
# its sriov_numvfs goes back (PF 1 asks for 14 VFs: the stand-in has the shape of 12)
two='{"kind":"List","items":[
 {"kind":"SriovNetworkNodePolicy","metadata":{"name":"a"},"spec":{"nodeSelector":{},"resourceName":"a","numVfs":3,"nicSelector":{"rootDevices":["0000:1b:00.0"]}}},
 {"kind":"SriovNetworkNodePolicy","metadata":{"name":"b"},"spec":{"nodeSelector":{},"resourceName":"b","numVfs":14,"nicSelector":{"rootDevices":["0000:1b:00.1"]}}}]}'
echo "$two" >"$TMP/two.json"
: >"$R/numvfs.log"
run "$RDMAK" vf apply --policy "$TMP/two.json" --root "$R"
is "$rc" 1 "PF 1's step fails: exit 1"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 3 ok;0000:1b:00.2 drivers_probe ok;0000:1b:00.3 drivers_probe ok;0000:1b:00.4 drivers_probe ok;0000:1b:00.1 0 ok;0000:1b:00.1 14 ENOSPC;0000:1b:00.1 0 ok;0000:1b:00.1 12 ok;0000:1b:00.4 unbind mlx5_core ok;0000:1b:00.3 unbind mlx5_core ok;0000:1b:00.2 unbind mlx5_core ok;0000:1b:00.0 0 ok;0000:1b:00.0 0 ok;0000:1b:00.0 2 ok;0000:1b:00.2 drivers_probe ok;0000:1b:00.3 drivers_probe ok;" \
	"undone in reverse: PF 1 back to 12, PF 0's VFs unbound, its sriov_numvfs back to 2 and those 2 VFs bound as they were"
is "$(basename "$(readlink "$PF/virtfn1/driver")")" mlx5_core "the node is as it was: VF 1 bound"
like "$out" 'undo: 0000:1b:00.0: VF 0000:1b:00.2 unbound' "says it unbound them"

# the other PF is not touched by a policy for PF 0
is "$(cat "$R/sys/bus/pci/devices/0000:1b:00.1/sriov_numvfs")" 12 "PF 1 still has its 12 VFs"

# --- one apply of a node at a time -----------------------------------------------------------
# The lock is flock on the sysfs root's bus/pci/devices; flock(1) takes it here as an apply would
# (hold_lock), and the applies started meanwhile wait, each saying so, until it is released.
echo 1 >"$PF/sriov_drivers_autoprobe"
LOCKED="$R/sys/bus/pci/devices"
hold_lock() {
	rm -f "$TMP/held" "$TMP/release"
	flock "$LOCKED" sh -c 'touch "$1/held"; while [ ! -e "$1/release" ]; do sleep 0.05; done' _ "$TMP" &
	holder=$!
	until [ -e "$TMP/held" ]; do sleep 0.05; done
}
release_lock() { touch "$TMP/release"; wait "$holder"; }
waits() { # NAME PID: until apply NAME says it waits for the lock, or has ended; then whether it said so
	while kill -0 "$2" 2>/dev/null && ! grep -q 'waiting for it' "$TMP/$1.err"; do sleep 0.05; done
	grep -q "another apply of this node holds $LOCKED; waiting for it" "$TMP/$1.err"
}
# three applies at once, 4, 6 and 8 VFs (PF 0 has 2): while the lock is held they write nothing
: >"$R/numvfs.log"
hold_lock
pids=()
for n in 4 6 8; do
	"$RDMAK" vf apply --policy "$(policy $n)" --root "$R" >"$TMP/a$n.out" 2>"$TMP/a$n.err" &
	pids+=($!)
done
for i in 0 1 2; do n=$((4 + 2 * i)); waits "a$n" "${pids[$i]}"; ok $? "apply of $n VFs waits for the node's lock"; done
is "$(log)" "" "nothing written while another apply holds the lock"
release_lock
for i in 0 1 2; do wait "${pids[$i]}"; is "$?" 0 "apply of $((4 + 2 * i)) VFs: done"; done
# then one after the other: the writes are whole applies (0, then its N), each apply planned from
# what the one before it left (its "from"), and the node has the N of the last
"$PY" - "$R/numvfs.log" "$TMP" "$(cat "$PF/sriov_numvfs")" >"$TMP/order" <<'EOF'
import sys
writes = [l.split() for l in open(sys.argv[1]) if l.startswith("0000:1b:00.0 ")]
problems, prev = [], "2"
for k in range(0, len(writes), 2):
    pair = writes[k:k + 2]
    if len(pair) != 2 or pair[0][1:] != ["0", "ok"] or pair[1][2] != "ok":
        problems.append("writes %d..: %s, not 0 then N" % (k, pair))
        break
    n = pair[1][1]
    try:
        out = open("%s/a%s.out" % (sys.argv[2], n)).read()
    except OSError:
        problems.append("a write of %s VFs, which no apply asked for" % n)
        break
    if "0000:1b:00.0: sriov_numvfs %s -> 0\n" % prev not in out:
        problems.append("apply of %s did not start from %s: %r" % (n, prev, out))
    prev = n
if len(writes) != 6:
    problems.append("%d writes, not 6" % len(writes))
if sys.argv[3] != prev:
    problems.append("sriov_numvfs reads %s, the last apply asked %s" % (sys.argv[3], prev))
print("\n".join(problems) or "consistent")
EOF
is "$(cat "$TMP/order")" consistent "three applies: one after the other, each from the last one's VFs, the node with the last one's"

# an apply that fails undoes to what it found under the lock: here the VFs change (to 6, as an
# apply that held the lock would leave them) while it waits, and its undo goes back to 6, not to
# the number the node had when it started
last=$(cat "$PF/sriov_numvfs")
hold_lock
"$RDMAK" vf apply --policy "$(policy 14)" --root "$R" >"$TMP/a14.out" 2>"$TMP/a14.err" &
pid=$!
waits a14 "$pid"; ok $? "apply of 14 VFs waits for the lock"
echo 0 >"$PF/sriov_numvfs" && echo 6 >"$PF/sriov_numvfs"
: >"$R/numvfs.log"
release_lock
wait "$pid"; is "$?" 1 "14 VFs (the stand-in has the shape of 12): the step fails, exit 1"
like "$(cat "$TMP/a14.out")" "undo: 0000:1b:00.0: sriov_numvfs back to 6" "undone to the 6 it found under the lock (it started with $last)"
is "$(log)" "0000:1b:00.0 0 ok;0000:1b:00.0 14 ENOSPC;0000:1b:00.0 0 ok;0000:1b:00.0 6 ok;" "its writes: 0, 14 refused, then back to 0 and 6"
is "$(cat "$PF/sriov_numvfs")" 6 "the node has 6 VFs"
# the chart's vf DaemonSet: apply --interval at once, the ready marker on success; a changed
# policy (a ConfigMap swaps its ..data link) applied without waiting for the interval; a policy
# that selects no PF of this node (exit 6) leaves the marker as it is and says so; SIGTERM exit 0
rm -f "$R/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
CM=$TMP/cm
mkdir -p "$CM/..v1" && cp "$(policy 4)" "$CM/..v1/policies.json"
ln -s ..v1 "$CM/..data" && ln -s ..data/policies.json "$CM/policies.json"
"$RDMAK" vf apply --policy "$CM/policies.json" --root "$R" --interval 3600 --ready-file "$TMP/ready" \
	--alive-file "$TMP/vf-alive" >"$TMP/w.out" 2>"$TMP/w.err" &
pid=$!
n=0; while [ ! -e "$TMP/ready" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
is "$(cat "$PF/sriov_numvfs")" 4 "--interval: applied at once (4 VFs)"
ok "$([ -e "$TMP/ready" ]; echo $?)" "and the ready marker written"
run "$RDMAK" probe "$TMP/vf-alive"
is "$rc" 0 "its loop is alive (rdmak probe)"
rm -f "$TMP/ready"
mkdir -p "$CM/..v2" && cp "$(policy 2)" "$CM/..v2/policies.json"
ln -s ..v2 "$CM/..data.tmp" && mv -T "$CM/..data.tmp" "$CM/..data"
n=0; while [ ! -e "$TMP/ready" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
is "$(cat "$PF/sriov_numvfs")" 2 "a swapped ConfigMap is applied at once, not at the next interval (an hour)"
rm -f "$TMP/ready"
mkdir -p "$CM/..v3" && cp "$(policy 2 0000:99:00.0)" "$CM/..v3/policies.json"
ln -s ..v3 "$CM/..data.tmp" && mv -T "$CM/..data.tmp" "$CM/..data"
n=0; while ! grep -q 'exited 6' "$TMP/w.err" && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
like "$(cat "$TMP/w.err")" "rdmak vf apply exited 6: not ready; again in 3600 s" "a policy that selects no PF: exit 6 said, not taken for ready"
ok "$([ ! -e "$TMP/ready" ]; echo $?)" "no ready marker for it"
kill -TERM "$pid"; wait "$pid"
is "$?" 0 "SIGTERM: exit 0"
run "$RDMAK" vf apply --policy "$CM/policies.json" --root "$R" --ready-file "$TMP/ready"
is "$rc" 2 "--ready-file without --interval: exit 2"
run "$RDMAK" vf plan --policy "$CM/policies.json" --root "$R" --interval 5
is "$rc" 2 "--interval is apply's: exit 2"
done_testing

