#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak snapshot: what list prints on the extracted archive is what it printed on the node.
. "$(dirname "$0")/../lib.sh"

strip_roots() { grep -v '"sysfs":\|"devfs":'; }

for name in a100-ib-bond cx5-roce-sriov v100-ib b4-cx3-ib no-rdma; do
	node=$NODES/$name
	[ -d "$node" ] || continue
	run "$RDMAK" snapshot --root "$node" -o "$TMP/$name.tar.gz"
	ok $rc "snapshot of $name"
	like "$err" "wrote $TMP/$name.tar.gz" "it says what it wrote"
	mkdir "$TMP/x-$name" && tar -xzf "$TMP/$name.tar.gz" -C "$TMP/x-$name"
	ok $? "the archive extracts with GNU tar"
	"$RDMAK" list --root "$node" --json | strip_roots > "$TMP/a.json"
	"$RDMAK" list --root "$TMP/x-$name" --json | strip_roots > "$TMP/b.json"
	same_file "$TMP/b.json" "$TMP/a.json" "$name: list --json on the extracted snapshot equals the node's"
	for fmt in table ibdev2netdev ibstat rdma-link; do
		"$RDMAK" list --root "$node" --format $fmt | sed "s|$node|ROOT|g" > "$TMP/a.txt"
		"$RDMAK" list --root "$TMP/x-$name" --format $fmt | sed "s|$TMP/x-$name|ROOT|g" > "$TMP/b.txt"
		same_file "$TMP/b.txt" "$TMP/a.txt" "$name: --format $fmt identical"
	done
done

# Only what the model reads: no GPU firmware, no power/ files, no unread driver dirs.
tar -tzf "$TMP/a100-ib-bond.tar.gz" > "$TMP/list"
unlike "$(cat "$TMP/list")" '/power/|/uevent$' "the snapshot holds no file the model never reads"
like "$(cat "$TMP/list")" '^dev/infiniband/uverbs0$' "the devfs listing is in it"
tar -tvzf "$TMP/a100-ib-bond.tar.gz" | grep ' dev/infiniband/uverbs0$' > "$TMP/uv"
like "$(cat "$TMP/uv")" '^c' "uverbs0 is stored as a character device"

# Failures leave nothing behind.
run "$RDMAK" snapshot --root "$NODES/a100-ib-bond" -o "$TMP/no-such-dir/x.tar.gz"
is "$rc" 1 "an unwritable output exits 1"
like "$err" "no-such-dir/x.tar.gz" "and names it"
run "$RDMAK" snapshot --root "$NODES/a100-ib-bond"
is "$rc" 2 "-o is required"
run "$RDMAK" snapshot --root "$TMP/nope" -o "$TMP/nope.tar"
is "$rc" 1 "a missing root exits 1"
[ ! -e "$TMP/nope.tar" ]; ok $? "and writes no archive"
ls "$TMP" | grep -q '\.tmp\.'; [ $? -ne 0 ]; ok $? "no temporary file is left"
done_testing
