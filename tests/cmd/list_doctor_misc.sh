#!/usr/bin/env bash
# Smaller things a new user met (issue 11, item 16): the doctor's gpudirect.acs says what is
# missing when the PCI config space is not there, instead of "needs root" to root.
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
done_testing
