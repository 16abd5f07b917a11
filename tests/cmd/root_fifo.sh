#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A FIFO in the root (sysfs holds only regular files, directories and symlinks) must not hang
# any role: each refuses it, naming the path. Every run has a timeout, so that a regression
# fails here (rc 124) instead of hanging the suite.
. "$(dirname "$0")/../lib.sh"
cp -a "$NODES/a100-ib-bond" "$TMP/n"
state=$(readlink -f "$TMP/n/sys/class/infiniband/mlx5_0/ports/1/state")
rm "$state" && mkfifo "$state"
for role in list doctor snapshot plugin; do
	case $role in
	snapshot) args=(snapshot -o "$TMP/x.tar") ;;
	plugin) args=(plugin --dry-run --config "$TOP/examples/plugin/shared-seed003.json") ;;
	*) args=("$role") ;;
	esac
	run timeout 10 "$RDMAK" "${args[@]}" --root "$TMP/n"
	[ "$rc" -ne 124 ]; ok $? "$role: a FIFO at ports/1/state does not hang (rc $rc)"
	[ "$rc" -ne 0 ]; ok $? "$role: and does not pass as if all were read"
	like "$out$err" "mlx5_0/ports/1/state: not a regular file" "$role: names the FIFO and why"
done
[ ! -e "$TMP/x.tar" ]; ok $? "snapshot: no archive written"

# the doctor's own reads (an IPoIB netdev's mode)
cp -a "$NODES/a100-ib-bond" "$TMP/m"
mode=$(readlink -f "$TMP/m/sys/class/net/ibp70s0")/mode
if [ -f "$mode" ]; then
	rm "$mode" && mkfifo "$mode"
	run timeout 10 "$RDMAK" doctor --root "$TMP/m"
	[ "$rc" -ne 124 ]; ok $? "doctor: a FIFO at class/net/ibp70s0/mode does not hang (rc $rc)"
else
	skip "no ibp70s0/mode in the sample node" "doctor: a FIFO at class/net/ibp70s0/mode"
fi
done_testing
