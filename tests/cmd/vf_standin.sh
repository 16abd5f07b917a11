#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SR-IOV sysfs stand-in itself: sriov_numvfs behaves as drivers/pci/iov.c's
# sriov_numvfs_store(), and the VFs it shows have the shape the generator gave the fixture.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-vf.sh"

why=$(fuse_why)
if [ -n "$why" ]; then skip "$why" "the SR-IOV sysfs stand-in"; done_testing; exit; fi

R=$TMP/node
standin cx5-roce-sriov "$R"; ok $? "the stand-in mounts cx5-roce-sriov's sys"
PF=$R/sys/bus/pci/devices/0000:1b:00.0
FIX=$NODES/cx5-roce-sriov/sys

# the tree as the generator made it, listed through the mount and directly
listing() { (cd "$1" && find . | LC_ALL=C sort); }
same_file <(listing "$R/sys") <(listing "$FIX") "at rest the stand-in serves the fixture unchanged"
is "$(cat "$PF/sriov_numvfs")" 12 "sriov_numvfs is the fixture's"

echo 3 >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "N while 12 are enabled fails"
is "$(tail -1 "$R/numvfs.log")" "0000:1b:00.0 3 EBUSY" "... with EBUSY"
echo 17 >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "17 > sriov_totalvfs (16) fails"
is "$(tail -1 "$R/numvfs.log")" "0000:1b:00.0 17 ERANGE" "... with ERANGE"
echo junk >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "junk is refused (kstrtou16)"
echo 12 >"$PF/sriov_numvfs"; ok $? "writing the current number succeeds"

echo 0 >"$PF/sriov_numvfs"; ok $? "0 disables"
is "$(cat "$PF/sriov_numvfs")" 0 "sriov_numvfs reads 0"
is "$(ls "$PF" | grep -c '^virtfn')" 0 "no virtfn links"
[ ! -e "$R/sys/bus/pci/devices/0000:1b:00.2" ]; ok $? "VF 0's bus/pci/devices entry is gone"
is "$(ls "$R/sys/class/net" | grep -c 'enp27s0f0v')" 0 "VF netdevs are gone"
vf_ibdevs() { local d n=0; for d in "$R"/sys/class/infiniband/*; do
	[ "$(readlink -f "$d/device/physfn" 2>/dev/null)" = "$(readlink -f "$PF")" ] && n=$((n + 1)); done; echo $n; }
is "$(vf_ibdevs)" 0 "no RDMA device of a VF of this PF remains"

echo 0x4 >"$PF/sriov_numvfs"; ok $? "4 (as 0x4: base from the prefix) enables"
is "$(ls "$PF" | grep '^virtfn' | LC_ALL=C sort | tr '\n' ' ')" "virtfn0 virtfn1 virtfn2 virtfn3 " "virtfn0..3"
# each VF that came back is exactly what the fixture had
for v in 0 1 2 3; do
	vbdf=$(basename "$(readlink "$PF/virtfn$v")")
	same_file <(listing "$PF/virtfn$v/") <(listing "$FIX/bus/pci/devices/$vbdf/") "VF $v ($vbdf) has the fixture's entries"
	is "$(basename "$(readlink -f "$PF/virtfn$v/physfn")")" 0000:1b:00.0 "VF $v's physfn is the PF"
done
is "$(ls "$R/sys/class/net" | grep -c 'enp27s0f0v')" 4 "four VF netdevs"
is "$(vf_ibdevs)" 4 "four VF RDMA devices"
[ -e "$R/sys/bus/pci/drivers/mlx5_core/0000:1b:00.5" ]; ok $? "VF 3 is bound to mlx5_core"
echo 8 >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "4 -> 8 without 0 first is EBUSY"

echo 0 >"$PF/sriov_numvfs"
echo 0 >"$PF/sriov_drivers_autoprobe"; ok $? "sriov_drivers_autoprobe can be cleared"
echo 2 >"$PF/sriov_numvfs"; ok $? "2 VFs without autoprobe"
[ -e "$R/sys/bus/pci/devices/0000:1b:00.3/physfn" ]; ok $? "the VF's PCI function is there"
[ ! -e "$R/sys/bus/pci/devices/0000:1b:00.3/driver" ] && [ ! -e "$R/sys/bus/pci/devices/0000:1b:00.3/net" ]
ok $? "... with no driver and no netdev (nothing probed it)"
is "$(ls "$R/sys/class/net" | grep -c 'enp27s0f0v')" 0 "no VF netdevs without autoprobe"

echo 0 >"$PF/sriov_numvfs"
echo 13 >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "13 (within 16, beyond the fixture's 12 shapes) is refused by the stand-in"
like "$(cat "$R/standin.err")" "shape of 12 VFs, not 13" "... and it says it is its own limit"
echo hello >"$R/sys/bus/pci/devices/0000:1b:00.0/numa_node" 2>/dev/null; ok $((! $?)) "other attributes are read-only"

done_testing
