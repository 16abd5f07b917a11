#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak snapshot -o: what it does to what is already at the path, and how a full file system
# fails. A device, FIFO, socket or symlink is never replaced by a regular file; ENOSPC is named.
. "$(dirname "$0")/../lib.sh"
N=$NODES/a100-ib-bond
snap() { run timeout 20 "$RDMAK" snapshot --root "$N" "$@"; }
ftype() { stat -c %F "$1" 2>/dev/null || echo absent; }
leftovers() { find "$1" -name '*.tmp.*' | head -3; }

# A FIFO is written through (a reader gets the archive); it stays a FIFO.
mkfifo "$TMP/fifo"
timeout 20 cat "$TMP/fifo" >"$TMP/from-fifo.tar" &
reader=$!
snap -o "$TMP/fifo"
wait $reader
is "$rc" 0 "-o FIFO: exit 0"
is "$(ftype "$TMP/fifo")" fifo "-o FIFO: still a FIFO"
tar -tf "$TMP/from-fifo.tar" | grep -q '^sys/class/infiniband/mlx5_0$'; ok $? "-o FIFO: the reader got the archive"

# A character device is written through, never replaced.
mknod "$TMP/null" c 1 3 2>/dev/null && {
	snap -o "$TMP/null"
	is "$rc" 0 "-o a null char device: exit 0"
	is "$(ftype "$TMP/null")" "character special file" "-o a char device: still a char device"
} || { skip "mknod failed" "-o a null char device"; skip "mknod failed" "-o a char device: still a char device"; }
# a full device of our own (c 1 7, as /dev/full): a regression must not turn the real one
# into a regular file
if mknod "$TMP/full" c 1 7 2>/dev/null; then
	snap -o "$TMP/full"
	is "$rc" 1 "-o a full device: exit 1"
	like "$err" "writing $TMP/full: No space left on device" "-o a full device: ENOSPC named, with the path"
	is "$(ftype "$TMP/full")" "character special file" "-o a full device: still a char device"
else
	skip "mknod failed" "-o a full device (3)"
fi
# a link to /proc/self/fd/1 as /dev/stdout is (our own: a regression must not replace the real
# one), here a pipe
ln -s /proc/self/fd/1 "$TMP/stdout"
run bash -c "'$RDMAK' snapshot --root '$N' -o '$TMP/stdout' | tar -tf - | grep -c '^sys/class/infiniband/mlx5_0\$'"
is "$out" 1 "-o /dev/stdout (a link to fd 1) into a pipe: the archive comes out of the pipe"

# A block device, a directory: refused, untouched.
mknod "$TMP/blk" b 7 254 2>/dev/null && {
	snap -o "$TMP/blk"
	is "$rc" 1 "-o a block device: exit 1"
	like "$err" "blk: a block device: refusing" "-o a block device: says why"
	is "$(ftype "$TMP/blk")" "block special file" "-o a block device: still a block device"
} || { skip "mknod failed" "-o a block device (3)"; }
mkdir "$TMP/dir.tar"
snap -o "$TMP/dir.tar"
is "$rc" 1 "-o a directory: exit 1"
like "$err" "dir.tar: Is a directory" "-o a directory: says so"

# A symlink to a regular file: the target is replaced, the link stays.
echo old >"$TMP/real.tar.gz"
ln -s real.tar.gz "$TMP/link.tar.gz"
snap -o "$TMP/link.tar.gz"
is "$rc" 0 "-o a symlink to a file: exit 0"
is "$(ftype "$TMP/link.tar.gz")" "symbolic link" "-o a symlink: still a symlink"
tar -tzf "$TMP/real.tar.gz" | grep -q '^sys/class/infiniband/mlx5_0$'; ok $? "-o a symlink: its target holds the archive"
is "$(leftovers "$TMP")" "" "-o a symlink: no temporary file left"
# A symlink to a FIFO is written through.
mkfifo "$TMP/fifo2"; ln -s fifo2 "$TMP/link2"
timeout 20 cat "$TMP/fifo2" >"$TMP/from-fifo2.tar" &
reader=$!
snap -o "$TMP/link2"
wait $reader
is "$rc" 0 "-o a symlink to a FIFO: exit 0"
is "$(ftype "$TMP/fifo2")/$(ftype "$TMP/link2")" "fifo/symbolic link" "-o a symlink to a FIFO: both stay"
[ -s "$TMP/from-fifo2.tar" ]; ok $? "-o a symlink to a FIFO: the reader got the archive"
# A dangling symlink: refused, left as it is.
ln -s nowhere/x.tar "$TMP/dangling.tar"
snap -o "$TMP/dangling.tar"
is "$rc" 1 "-o a dangling symlink: exit 1"
like "$err" "dangling.tar: a symbolic link to nothing" "-o a dangling symlink: says why"
is "$(ftype "$TMP/dangling.tar")" "symbolic link" "-o a dangling symlink: the link stays"

done_testing
