#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The file store under load and under kill -9:
#  - 16 processes x 6250 ADDs on one pool with room for all (driven through the allocator by
#    tests/helpers/ipam_stress: exec'ing 100 000 sanitized processes would take CI minutes);
#    zero duplicates, and the store reads back consistent;
#  - 8 x 25 ADDs by exec'd rdmak-ipam processes at once: the same, through the real binary;
#  - 200 ADDs each killed with SIGKILL at a random instant, then the store reads back
#    consistent, GC with the attachments whose ADD answered frees every orphan, and what is
#    left is exactly those attachments' claims.
. "$(dirname "$0")/../lib.sh"
STRESS="$BUILD/tests/helpers/ipam_stress"
IPAM="$BUILD/cni/rdmak-ipam"
cfg() { # cfg FILE DATADIR RANGE
	printf '{"cniVersion":"1.1.0","name":"stress","type":"macvlan","ipam":{"type":"rdmak-ipam","dataDir":"%s","range":"%s"}}' "$2" "$3" >"$1"
}

# 16 x 6250 through the allocator; on the file system TMPDIR is on (the real one, not tmpfs)
cfg "$TMP/big.json" "$TMP/big" 10.64.0.0/15
run "$STRESS" stress "$TMP/big.json" 16 100000
is "$rc" 0 "16 processes x 6250 ADDs: every one answered"
is "$out" "100000 adds, 100000 distinct addresses" "zero duplicates among 100000 ADDs"
run "$STRESS" verify "$TMP/big.json"
is "$out" "100000 claims, 0 violations" "the store reads back consistent: one claim per ADD, each in its name"
rm -rf "$TMP/big"

# 8 x 25 exec'd rdmak-ipam at once
cfg "$TMP/exec.json" "$TMP/exec" 10.66.0.0/24
for p in 0 1 2 3 4 5 6 7; do
	(
		for i in $(seq 0 24); do
			CNI_COMMAND=ADD CNI_CONTAINERID="e$p-$i" CNI_IFNAME=net1 CNI_NETNS=/proc/self/ns/net \
				"$IPAM" <"$TMP/exec.json" 2>/dev/null | grep -o '"address": "[^"]*"'
		done >"$TMP/exec.$p"
	) &
done
wait
is "$(cat "$TMP"/exec.? | wc -l)" 200 "200 exec'd ADDs from 8 processes at once all answered"
is "$(cat "$TMP"/exec.? | sort -u | wc -l)" 200 "with 200 distinct addresses"
run "$STRESS" verify "$TMP/exec.json"
is "$out" "200 claims, 0 violations" "the store reads back consistent"

# 200 ADDs killed at random instants
cfg "$TMP/kill.json" "$TMP/kill" 10.68.0.0/24
run "$STRESS" kill "$TMP/kill.json" 200 "${RANDOM}"
is "$rc" 0 "200 ADDs, each killed at a random instant"
printf '%s' "$out" >"$TMP/valid.json"
printf '# %s\n' "$err"
run "$STRESS" verify "$TMP/kill.json"
like "$out" ", 0 violations$" "after the kills the store reads back consistent (no torn claim or record)"
run "$RDMAK" ipam gc --config "$TMP/kill.json" --valid "$TMP/valid.json" --json
is "$rc" 0 "GC with the attachments whose ADD answered exits 0"
printf '# gc: %s\n' "$(echo $out)"
run "$STRESS" verify "$TMP/kill.json" "$TMP/valid.json"
is "$rc" 0 "after GC the claims are exactly those of the answered ADDs (orphans freed)"
printf '# %s %s\n' "$out" "$err"
# and a fresh ADD works after all that
CNI_COMMAND=ADD CNI_CONTAINERID=after CNI_IFNAME=net1 CNI_NETNS=/proc/self/ns/net "$IPAM" <"$TMP/kill.json" >/dev/null 2>&1
is "$?" 0 "ADD after the kills and GC succeeds"
done_testing
