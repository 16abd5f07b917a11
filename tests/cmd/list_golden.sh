#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `rdmak list` prints for every sample node, in every output form, against the outputs
# recorded in tests/fixtures/list-golden/: a change to the reader (src/hw/, util/fileio.c,
# util/inroot.c) that is meant to make it cheaper must leave every byte, the exit code and
# stderr as they were. NODE/FORM.out is stdout and NODE/FORM.err stderr (only when not empty),
# with the node's path replaced by ROOT; an output over 64 KiB is kept gzipped (FORM.out.gz:
# cx7-rail-1016vf's --json is megabytes); `index` holds each exit code. A difference is shown as
# a diff. A change to the output or to tools/gen-nodes.py that is meant is recorded again with
#   GOLDEN_UPDATE=1 tests/run.sh build cmd/list_golden
# and git's diff of tests/fixtures/list-golden shows, by node and form, what changed.
. "$(dirname "$0")/../lib.sh"
gold="$TOP/tests/fixtures/list-golden"
# FORM-NAME:ARGUMENTS
forms=("table:" "json:--json" "json-pkeys:--json --pkeys" "ibdev2netdev:--format ibdev2netdev"
	"ibstat:--format ibstat" "rdma-link:--format rdma-link")
got="$TMP/got"
mkdir -p "$got"
: >"$got/index"
for node in "$NODES"/*/; do
	node=${node%/}
	name=$(basename "$node")
	[ -d "$node/sys" ] || continue
	mkdir -p "$got/$name"
	for f in "${forms[@]}"; do
		form=${f%%:*}
		# shellcheck disable=SC2086
		"$RDMAK" list ${f#*:} --root "$node" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		sed "s|$node|ROOT|g" "$TMP/out" >"$got/$name/$form.out"
		sed "s|$node|ROOT|g" "$TMP/err" >"$got/$name/$form.err"
		[ -s "$got/$name/$form.err" ] || rm "$got/$name/$form.err"
		[ "$(wc -c <"$got/$name/$form.out")" -le 65536 ] || gzip -9n "$got/$name/$form.out"
		printf '%s %s %s\n' "$name" "$form" "$rc" >>"$got/index"
	done
done
if [ -n "${GOLDEN_UPDATE:-}" ]; then
	rm -rf "$gold" && mkdir -p "$(dirname "$gold")" && cp -r "$got" "$gold"
	skip "GOLDEN_UPDATE set: recorded $(wc -l <"$gold/index") outputs in $gold" "list output as recorded"
	done_testing
	exit
fi
[ "$(wc -l <"$got/index")" -ge 17 ]; ok $? "every sample node listed ($(wc -l <"$got/index") node x form)"
# shows FILE's text, gunzipped when it is
text() { if [ "${1%.gz}" != "$1" ]; then gzip -dc "$1"; else cat "$1"; fi; }
while read -r name form rc; do
	want_rc=$(awk -v n="$name" -v f="$form" '$1 == n && $2 == f { print $3 }' "$gold/index")
	d=
	[ "$rc" = "$want_rc" ] || d+="#   exit code: recorded ${want_rc:-none}, now $rc"$'\n'
	for s in out err; do
		g=$(ls "$got/$name/$form.$s"* 2>/dev/null) w=$(ls "$gold/$name/$form.$s"* 2>/dev/null)
		if ! cmp -s <(text "${g:-/dev/null}") <(text "${w:-/dev/null}"); then
			d+=$(diff -u --label "recorded $name/$form.$s" --label "now" <(text "${w:-/dev/null}") \
				<(text "${g:-/dev/null}") | head -20 | sed 's/^/#   /')$'\n'
		fi
	done
	[ -z "$d" ]; ok $? "$name: rdmak list ($form): stdout, stderr and exit code as recorded"
	[ -z "$d" ] || printf '%s' "$d"
done <"$got/index"
is "$(cut -d' ' -f1,2 "$gold/index" | sort | comm -23 - <(cut -d' ' -f1,2 "$got/index" | sort) | tr '\n' ',')" "" \
	"every recorded node and form is still listed"
done_testing
