#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench's two floors of `rdmak list --json` (tools/bench.py): read_floor reads the files
# the model reads; replay_floor makes the command's own file system calls again, from an
# strace of it, in one process. A floor that skipped work would make rdmak look slow for
# nothing, and one that did other work would hide a cost: each is checked to do the work it
# stands for, and to refuse a list or a trace that is not of the tree it is given.
. "$(dirname "$0")/../lib.sh"
READ=$BUILD/tools/read_floor REPLAY=$BUILD/tools/replay_floor
node=$NODES/a100-ib-bond

# ---- read_floor: every file of the snapshot, read whole ----
run "$RDMAK" snapshot --root "$node" -o "$TMP/s.tar"
is "$rc" 0 "snapshot of the node"
"$PY" - "$TMP/s.tar" "$TMP/files" "$node" >"$TMP/want" <<'PY'
import os, sys, tarfile
names = [m.name for m in tarfile.open(sys.argv[1]).getmembers() if m.isfile() and "/pkeys/" not in m.name]
open(sys.argv[2], "w").write("\0".join(names))
print(len(names), sum(os.path.getsize(os.path.join(sys.argv[3], n)) for n in names))
PY
run "$READ" "$node" "$TMP/files"
is "$rc:$out" "0:$(cat "$TMP/want")" "read_floor reads each listed file to its end: files and bytes"
printf 'sys/no/such/file' >"$TMP/bad"
run "$READ" "$node" "$TMP/bad"
is "$rc" 1 "a name that is not there fails it (a wrong list is no fast floor)"

if ! command -v strace >/dev/null; then
	skip "no strace" "replay_floor replays list --json's file system calls"
	done_testing
	exit
fi
# ---- replay_floor: the command's calls, each with the outcome it had ----
# (LeakSanitizer cannot run under ptrace: off for the traced run of a sanitizer build)
trace() { # trace TREE OUT: strace of list --json on TREE, as bench.py takes it, packed into OUT
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq -xx -X raw -s 65536 -e trace=openat,openat2,read,close,readlinkat,getdents64,newfstatat \
		-o "$TMP/strace" "$RDMAK" list --json --root "$1" >/dev/null 2>&1 &&
		"$PY" -c 'import sys; sys.path.insert(0, sys.argv[1] + "/tools"); import bench; print(bench.replay_trace(sys.argv[2], sys.argv[3]))' \
			"$TOP" "$TMP/strace" "$2"
}
n=$(trace "$node" "$TMP/replay")
ok $? "bench.py packs every traced call ($n)"
# the same calls as strace counts them, by kind
want=$(grep -cE '^[0-9]+ +(openat|openat2|read|close|readlinkat|getdents64|newfstatat)\(' "$TMP/strace")
is "$n" "$want" "... one record per call strace saw"
run "$REPLAY" "$TMP/replay"
read -r calls failed left <<<"$out"
is "$rc:$failed" "0:0" "replay_floor makes them again, each with the outcome it had ($calls made, $left on descriptors no traced call made)"
is "$((calls + left))" "$n" "... all of them"
case $(cat "$BUILD/make.vars" 2>/dev/null) in
*SAN=1*) skip "the sanitizers' runtime makes calls of its own on its descriptors" "... leaving out only the few on untraced descriptors ($left)" ;;
*) [ "$left" -le 3 ]; ok $? "... leaving out only the few on untraced descriptors ($left: an eventfd's close and the like)" ;;
esac
# a trace replayed on a tree that changed since: opens that worked there fail here
cp -a "$node" "$TMP/other"
trace "$TMP/other" "$TMP/replay.other" >/dev/null
dev=$(readlink -f "$TMP/other/sys/class/infiniband/mlx5_0")
rm -rf "$dev/ports/1/gids"
run "$REPLAY" "$TMP/replay.other"
is "$rc" 1 "a trace replayed on a tree it was not taken on fails"
like "$err" "here, 0 there|here, [0-9]+ there|-1 there" "... naming the call that came out otherwise"
rm -rf "$TMP/other"
run "$REPLAY" "$TMP/replay.other"
[ "$rc" -ne 0 ]; ok $? "... and one of a tree that is gone fails too"
printf 'RDMAKRPL\001\000\000\000\000\000\000\000' >"$TMP/short"
run "$REPLAY" "$TMP/short"
is "$rc" 2 "a truncated trace is refused"
done_testing
