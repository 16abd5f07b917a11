#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smaller things a new user met (issue 11, item 16): the doctor's gpudirect.acs says what is
# missing when the PCI config space is not there, instead of "needs root" to root; a
# /dev/infiniband this user cannot search is "permission denied", not "missing".
. "$(dirname "$0")/../lib.sh"

A100=$NODES/a100-ib-bond

# ---- gpudirect.acs on a tree without config files: says so, not "needs root" -----------------------
run "$RDMAK" doctor --root "$A100" --check gpudirect.acs
like "$out" 'skip +gpudirect\.acs +GPU2 +ACS not visible on the 2 bridge\(s\) to mlx5_0: 2 have no PCI config file in this tree' \
	"no config files: says they are absent from the tree"
unlike "$out" 'needs root' "no config files: does not blame a missing root"

# ---- config files cut at 64 bytes (what a non-root read gets): as root, name the size --------------
cp -a "$A100" "$TMP/cfg64"
find "$TMP/cfg64/sys/devices" -maxdepth 6 -type d -name '0000:*' | while read -r dev; do
	[ -e "$dev/config" ] || head -c 64 /dev/zero >"$dev/config"
done
run "$RDMAK" doctor --root "$TMP/cfg64" --check gpudirect.acs
if [ "$(id -u)" -eq 0 ]; then
	like "$out" 'GPU2 +ACS not visible on the 2 bridge\(s\) to mlx5_0: their config files hold 64 bytes or fewer, not the extended space' \
		"64-byte config files, run as root: names the size, not root"
	unlike "$out" 'needs root' "64-byte config files, run as root: does not say it needs root"
else
	like "$out" 'needs root \(run doctor as root\)' "64-byte config files, not root: needs root"
fi

# ---- a mode-000 /dev/infiniband: "permission denied", not "missing" ---------------------------------
# root searches any directory: the doctor runs as nobody (setpriv) on a copy it can read
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	cp -a "$NODES/v100-ib" "$TMP/dev000"
	chmod 000 "$TMP/dev000/dev/infiniband"
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMAK" doctor --root "$TMP/dev000" --check chardev.nodes
	like "$out" 'fail +chardev\.nodes +mlx5_0 +infiniband/uverbs0: permission denied \(its directory, mode 0000, cannot be searched' \
		"mode-000 /dev/infiniband as non-root: permission denied"
	unlike "$out" 'missing from devfs' "and not reported missing"
	chmod 755 "$TMP/dev000/dev/infiniband"
else
	skip "needs root to switch to an unprivileged user" "mode-000 /dev/infiniband: permission denied"
fi
done_testing
