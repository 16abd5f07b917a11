#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak snapshot -o on a full file system, and into a pipe whose reader goes away: the error is
# named (No space left on device, Broken pipe), with the path, exit 1, nothing left behind.
. "$(dirname "$0")/../lib.sh"
N=$NODES/a100-ib-bond
snap() { run timeout 20 "$RDMAK" snapshot --root "$N" "$@"; }

# A full file system (tmpfs of 16 KiB; the gzip'd archive is ~20 KB, the plain tar ~1 MB).
mkdir "$TMP/small"
if mount -t tmpfs -o size=16k tmpfs "$TMP/small" 2>/dev/null; then
	for f in x.tar.gz x.tar; do
		snap -o "$TMP/small/$f"
		is "$rc" 1 "ENOSPC ($f): exit 1, not a signal"
		like "$err" "writing $TMP/small/$f: No space left on device" "ENOSPC ($f): named, with the path"
		is "$(ls -A "$TMP/small")" "" "ENOSPC ($f): the temporary file is removed"
	done
	umount "$TMP/small"
else
	skip "cannot mount a tmpfs (not root?)" "ENOSPC on a small tmpfs"
fi
# A reader that goes away: a named error, not death by SIGPIPE.
run bash -c "'$RDMAK' snapshot --root '$N' -o - | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}"
is "$out" 1 "-o - into a pipe closed early: exit 1, not 141"
like "$err" "writing -: Broken pipe" "-o - into a pipe closed early: says so"
done_testing
