# SPDX-License-Identifier: Apache-2.0
# The SR-IOV sysfs stand-in (tests/helpers/sysfs_fuse.c) for the vf tests. Source after lib.sh.
#   fuse_why            prints why FUSE cannot be used here (empty when it can)
#   standin NODE DIR    serves $NODES/NODE/sys at DIR/sys (its writes logged to DIR/numvfs.log)
#                       and links DIR/dev to the node's dev; unmounted when the test exits
STANDIN=$BUILD/tests/helpers/sysfs_fuse
_mounts=()
trap 'for m in "${_mounts[@]}"; do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done; rm -rf "$TMP"' EXIT

fuse_why() {
	if [ ! -x "$STANDIN" ]; then echo "no $STANDIN"; return; fi
	if ! command -v fusermount3 >/dev/null; then echo "no fusermount3 (Debian fuse3)"; return; fi
	if ! { exec 9<>/dev/fuse; } 2>/dev/null; then echo "/dev/fuse is not usable here"; return; fi
	exec 9>&-
}

standin() { # NODE DIR
	mkdir -p "$2/sys"
	ln -sfn "$NODES/$1/dev" "$2/dev"
	"$STANDIN" "$NODES/$1/sys" "$2/sys" --log "$2/numvfs.log" 2>"$2/standin.err" &
	local i
	for i in $(seq 100); do
		mountpoint -q "$2/sys" && { _mounts+=("$2/sys"); return 0; }
		kill -0 $! 2>/dev/null || break
		sleep 0.05
	done
	echo "# the stand-in did not mount: $(cat "$2/standin.err")"
	return 1
}
