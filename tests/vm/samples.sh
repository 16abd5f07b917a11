#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sysfs formats that tests/cmd/sample_formats.sh holds the generated sample nodes to
# (tests/lib/sysfs_formats.py), checked on the live kernel: each is what the kernel writes, for
# soft-RoCE devices, veths and a bond, and ib_core's default RoCE GID rule holds.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
modprobe bonding max_bonds=0
ip link add bond9 type bond mode active-backup
ip link add s9 type veth peer name p9 && ip link set s9 master bond9 && ip link set p9 up && ip link set bond9 up
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok 0 "${line#ok }" ;;
	"not ok "*) ok 1 "${line#not ok }" ;;
	*) echo "$line" ;;
	esac
done < <("$PY" "$TOP/tests/lib/sysfs_formats.py" "live kernel $(uname -r)" "" 2>&1)
ip link del bond9
ip link del s9
done_testing
