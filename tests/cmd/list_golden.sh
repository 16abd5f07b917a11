#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `rdmak list` prints for every sample node, in every output form, against the sums
# recorded in tests/fixtures/list-golden/sums: a change to the reader (src/hw/, util/fileio.c,
# util/inroot.c) that is meant to make it cheaper must leave every byte, the exit code and
# stderr as they were. The sums (not the documents: cx7-rail-1016vf's --json --pkeys alone is
# megabytes) are of stdout and stderr with the node's path replaced by ROOT. A change to the
# output or to tools/gen-nodes.py that is meant is recorded again with
#   GOLDEN_UPDATE=1 tests/run.sh build cmd/list_golden
# and the diff of the sums file shows, by node and form, what changed.
. "$(dirname "$0")/../lib.sh"
sums="$TOP/tests/fixtures/list-golden/sums"
forms=("list" "list --json" "list --json --pkeys" "list --format ibdev2netdev" "list --format ibstat"
	"list --format rdma-link")
: >"$TMP/sums"
for node in "$NODES"/*/; do
	node=${node%/}
	name=$(basename "$node")
	[ -d "$node/sys" ] || continue
	for form in "${forms[@]}"; do
		# shellcheck disable=SC2086
		"$RDMAK" $form --root "$node" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		o=$(sed "s|$node|ROOT|g" "$TMP/out" | sha256sum | cut -c1-64)
		e=$(sed "s|$node|ROOT|g" "$TMP/err" | sha256sum | cut -c1-64)
		printf '%s %s %s rc=%s %s\n' "$o" "$e" "$name" "$rc" "${form// /_}" >>"$TMP/sums"
	done
done
if [ -n "${GOLDEN_UPDATE:-}" ]; then
	cp "$TMP/sums" "$sums"
	skip "GOLDEN_UPDATE set: recorded $(wc -l <"$sums") sums in $sums" "list output as recorded"
	done_testing
	exit
fi
[ "$(wc -l <"$TMP/sums")" -ge 17 ]; ok $? "every sample node listed ($(wc -l <"$TMP/sums") node x form)"
while read -r o e name rc form; do
	want=$(awk -v n="$name" -v f="$form" '$3 == n && $5 == f' "$sums")
	got="$o $e $name $rc $form"
	[ "$want" = "$got" ]; ok $? "$name: rdmak ${form//_/ }: stdout, stderr and exit code as recorded${want:- (none recorded)}"
	[ "$want" = "$got" ] || printf '#   recorded: %s\n#   now:      %s\n' "${want:-none}" "$got"
done <"$TMP/sums"
done_testing
