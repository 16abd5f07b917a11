#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SR-IOV sysfs stand-in itself: sriov_numvfs behaves as drivers/pci/iov.c's
# sriov_numvfs_store(), the VFs it shows have the shape the generator gave the fixture, and a
# VF's driver binds and unbinds as drivers/base/bus.c and drivers/pci/pci-driver.c define.
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
# the files the stand-in adds are the kernel's bind, unbind and drivers_probe (the fixtures have none)
same_file <(listing "$R/sys" | grep -Ev '/(bind|unbind|drivers_probe)$') <(listing "$FIX") "at rest the stand-in serves the fixture unchanged"
is "$(listing "$R/sys" | grep -E '/(bind|unbind|drivers_probe)$' | tr '\n' ' ')" \
	"./bus/pci/drivers/mlx5_core/bind ./bus/pci/drivers/mlx5_core/unbind ./bus/pci/drivers/nvidia/bind ./bus/pci/drivers/nvidia/unbind ./bus/pci/drivers/pcieport/bind ./bus/pci/drivers/pcieport/unbind ./bus/pci/drivers_probe " \
	"... plus bind and unbind for each driver and the bus's drivers_probe"
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

# bind, unbind, drivers_probe and driver_override (drivers/base/bus.c, drivers/pci/pci-driver.c)
V=$R/sys/bus/pci/devices/0000:1b:00.3
D=$R/sys/bus/pci/drivers
blog() { tail -1 "$R/numvfs.log"; }
is "$(cat "$V/driver_override")" "(null)" "driver_override reads (null) when unset"
echo 0000:1b:00.3 >"$D/nvidia/bind" 2>/dev/null; ok $((! $?)) "bind to a driver that does not match the VF fails"
is "$(blog)" "0000:1b:00.3 bind nvidia ENODEV" "... with ENODEV"
echo 0000:1b:00.4 >"$D/mlx5_core/bind" 2>/dev/null; ok $((! $?)) "bind of a VF that does not exist (VF 2 of 2) fails"
is "$(blog)" "0000:1b:00.4 bind mlx5_core ENODEV" "... with ENODEV"
echo nvidia >"$V/driver_override"; ok $? "driver_override can be set"
is "$(cat "$V/driver_override")" nvidia "... and reads back"
echo 0000:1b:00.3 >"$D/mlx5_core/bind" 2>/dev/null; ok $((! $?)) "an override naming another driver: its own driver does not match"
is "$(blog)" "0000:1b:00.3 bind mlx5_core ENODEV" "... ENODEV (pci_match_device)"
echo 0000:1b:00.3 >"$R/sys/bus/pci/drivers_probe"; ok $? "drivers_probe with no matching driver succeeds"
[ ! -e "$V/driver" ]; ok $? "... and leaves the VF unbound"
echo >"$V/driver_override"; ok $? "a newline clears driver_override"
is "$(cat "$V/driver_override")" "(null)" "... (null) again"
echo 0000:1b:00.3 >"$R/sys/bus/pci/drivers_probe"; ok $? "drivers_probe binds the VF"
is "$(basename "$(readlink "$V/driver")")" mlx5_core "... to its driver"
is "$(ls "$V/net")" enp27s0f0v1 "... and its netdev appears"
[ -e "$R/sys/class/net/enp27s0f0v1" ] && [ -e "$D/mlx5_core/0000:1b:00.3" ]; ok $? "... in class/net, and in the driver's folder"
echo 0000:1b:00.3 >"$D/mlx5_core/bind" 2>/dev/null; ok $((! $?)) "bind of a bound VF fails"
is "$(blog)" "0000:1b:00.3 bind mlx5_core EBUSY" "... with EBUSY"
echo 0000:1b:00.3 >"$R/sys/bus/pci/drivers_probe"; ok $? "drivers_probe of a bound VF succeeds and changes nothing"
echo 0000:1b:00.2 >"$D/mlx5_core/unbind" 2>/dev/null; ok $((! $?)) "unbind of a VF not bound fails"
is "$(blog)" "0000:1b:00.2 unbind mlx5_core ENODEV" "... with ENODEV"
echo 0000:1b:00.3 >"$V/driver/unbind"; ok $? "unbind through the VF's driver link"
[ ! -e "$V/driver" ] && [ ! -e "$V/net" ] && [ ! -e "$R/sys/class/net/enp27s0f0v1" ]; ok $? "... driver link and netdev gone"
echo 0000:1b:00.3 >"$D/mlx5_core/bind"; ok $? "bind through the driver's bind file"
[ -e "$V/net/enp27s0f0v1" ]; ok $? "... the netdev is back"
echo 0000:1b:00.0 >"$D/mlx5_core/unbind" 2>/dev/null; ok $((! $?)) "a PF's binding is not modelled: refused"
is "$(blog)" "0000:1b:00.0 unbind mlx5_core EPERM" "... with EPERM"
echo 99:99.9 >"$R/sys/bus/pci/drivers_probe" 2>/dev/null; ok $((! $?)) "drivers_probe of no device fails"
is "$(blog)" "99:99.9 drivers_probe ENODEV" "... with ENODEV"
echo nvidia >"$V/driver_override"
echo 0 >"$PF/sriov_numvfs"
echo 2 >"$PF/sriov_numvfs"
[ ! -e "$V/driver" ]; ok $? "a VF removed and made again (autoprobe 0) is unbound"
is "$(cat "$V/driver_override")" "(null)" "... and its override is gone with the old device"

echo 0 >"$PF/sriov_numvfs"
echo 13 >"$PF/sriov_numvfs" 2>/dev/null; ok $((! $?)) "13 (within 16, beyond the fixture's 12 shapes) is refused by the stand-in"
like "$(cat "$R/standin.err")" "shape of 12 VFs, not 13" "... and it says it is its own limit"
echo hello >"$R/sys/bus/pci/devices/0000:1b:00.0/numa_node" 2>/dev/null; ok $((! $?)) "other attributes are read-only"

done_testing
