#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The etcd store behind rdmak-ipam's ops table (src/ipam/store-etcd.c) on a real three-member
# etcd cluster: the same answers as the file store for the same ops, the key layout etcdctl
# sees, racing claimers (16 processes claiming the same addresses, with and without a member
# killed part way) ending with each address claimed exactly once, and "unreachable" errors that
# name the endpoints when the cluster is down.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib/etcd-cluster.sh"
SC="$BUILD/tests/helpers/ipam_store_cli"

run "$SC" --endpoints "10.0.0.1" ping
like "$rc:$err" '^2:.*etcd store: etcd endpoint "10.0.0.1": not host:port' "a bad endpoint fails the open, named"
run "$SC" --endpoints "127.0.0.1:2379" --prefix / ping
like "$rc:$err" '^2:.*etcd prefix "/" is empty' "an empty key prefix is refused"

etcd_test_cluster "etcd store tests" "$TMP/etcd"
es() { "$SC" --endpoints "$ETCD_ENDPOINTS" "$@"; }

# --- the contract, side by side with the file store -----------------------------------------
ops=(ping claim p1 10.0.0.1 A claim p1 10.0.0.1 A claim p1 10.0.0.1 B get p1 10.0.0.1 get p1 10.0.0.2
	count p1 claim p1 10.0.0.2 C count p1 list p1
	release p1 10.0.0.1 B release p1 10.0.0.1 A release p1 10.0.0.1 A get p1 10.0.0.1 count p1
	claim p2 fd00::1 X cput p3 10.2.0.9 cget p3 cget p4 cput p3 10.2.0.10 cget p3 pools list p2 list p9
	rput net c1:eth0 '{"state":"pending"}' rput net c1:eth0 '{"ips":["10.0.0.2"]}' rget net c1:eth0
	rput net c2:net1 '{"ips":[]}' rlist net rdel net c1:eth0 rdel net c1:eth0 rget net c1:eth0 rlist other)
run es "${ops[@]}"
is "$rc" 0 "every op answers on etcd"
printf '%s\n' "$out" >"$TMP/etcd.out"
run "$SC" --data-dir "$TMP/files" "${ops[@]}"
printf '%s\n' "$out" >"$TMP/file.out"
same_file "$TMP/etcd.out" "$TMP/file.out" "the etcd store answers every op exactly as the file store does"
like "$(cat "$TMP/etcd.out")" $'^ok\n1\n1\n0\nA\nabsent\n1\n1\n2' "claim: 1 new, 1 again with the same value (a retried write), 0 for another value"
like "$(cat "$TMP/etcd.out")" $'\n0\n1\n0\nabsent\n1\n' "release: 0 for the wrong owner, 1, then 0 when absent"

# The key layout, as etcdctl sees it.
ectl get --prefix /rdmak/ipam/ --keys-only | grep . | sort >"$TMP/keys"
printf '%s\n' /rdmak/ipam/claims/p1/10.0.0.2 /rdmak/ipam/claims/p2/fd00::1 /rdmak/ipam/cursors/p3 \
	/rdmak/ipam/pools/p1 /rdmak/ipam/pools/p2 /rdmak/ipam/records/net/c2:net1 | sort >"$TMP/keys.want"
same_file "$TMP/keys" "$TMP/keys.want" "one key per claim, record, cursor and pool under /rdmak/ipam"
is "$(ectl get /rdmak/ipam/claims/p1/10.0.0.2 --print-value-only)" "C" "a claim's value is the owner"
run es --prefix /other/tenant/ claim p1 10.0.0.1 T list p1
is "$out" $'1\n10.0.0.1 T\nend' "another prefix is another namespace: the same address is free there"
is "$(ectl get /other/tenant/claims/p1/10.0.0.1 --print-value-only)" "T" "... under /other/tenant (trailing '/' dropped)"
run es claim p1 'a/b' x claim 'p/1' 10.0.0.1 x
like "$rc:$err" '^1:error: EINVAL unreachable=0: "a/b" is not an address' "a name with '/' is refused before it reaches a key"
run es claim p1 10.0.0.9 "$(head -c 1001 /dev/zero | tr '\0' x)"
like "$rc:$err" '^1:.*1 to 1000 bytes' "a value over IPAM_STORE_VALUE_MAX is refused"

# --- racing claimers ------------------------------------------------------------------------
# 16 processes each try to claim the same N addresses in their own random order.
race() { # POOL N [kill]: runs the race (killing member 0, which every client talks to
	# first, part way), leaves $TMP/race.* and sets wins/dups/won_total/bad_exit
	local pool=$1 n=$2 i pids=()
	rm -f "$TMP"/race.*
	for i in $(seq 1 16); do
		es race "$pool" "$n" "id$i" >"$TMP/race.$i" 2>"$TMP/race.$i.err" &
		pids+=($!)
	done
	if [ -n "${3:-}" ]; then
		# once a tenth of the claims are made, whatever the machine's speed
		for _ in $(seq 600); do
			killed_at=$(ectl get --prefix "/rdmak/ipam/claims/$pool/" --keys-only 2>/dev/null | grep -c .)
			[ "$killed_at" -ge $((n / 10)) ] && break
			sleep 0.05
		done
		etcd_member_kill 0
	fi
	bad_exit=0
	for i in "${pids[@]}"; do wait "$i" || bad_exit=$((bad_exit + 1)); done
	cat "$TMP"/race.[0-9]* | grep '^won 10\.' | awk '{print $2}' | sort >"$TMP/wins"
	wins=$(grep -c . "$TMP/wins")
	dups=$(uniq -d "$TMP/wins" | grep -c .)
	won_total=$(cat "$TMP"/race.[0-9]* | awk '/^won [0-9]+$/ {s += $2} END {print s + 0}')
}
N=300
race r1 $N
is "$bad_exit" 0 "16 racing claimers x $N addresses: every process finished"
is "$wins:$dups:$won_total" "$N:0:$N" "each of the $N addresses won by exactly one process (no duplicate, none lost)"
ectl get --prefix /rdmak/ipam/claims/r1/ | paste - - | awk '{print $1, $2}' | sed 's|/rdmak/ipam/claims/r1/||' | sort >"$TMP/etcdctl.claims"
is "$(grep -c . "$TMP/etcdctl.claims")" "$N" "etcdctl counts $N claim keys"
for i in $(seq 1 16); do grep '^won 10\.' "$TMP/race.$i" | awk -v id="id$i" '{print $2, id}'; done | sort >"$TMP/race.claims"
same_file "$TMP/etcdctl.claims" "$TMP/race.claims" "each claim key holds the id of the process that was told it won"
run es count r1
is "$out" "$N" "the store's count agrees"

# The same with the member every client talks to first killed while they race.
race r2 $N kill
if [ "$killed_at" -gt 0 ] && [ "$killed_at" -lt "$N" ]; then ok 0 "member 0 killed part way ($killed_at of $N claims made)"
else ok 1 "member 0 killed part way ($killed_at of $N claims made)"; fi
is "$bad_exit" 0 "with member 0 killed during the race: every process finished"
grep -h '^error' "$TMP"/race.*.err | head -3 | sed 's/^/# /'
is "$wins:$dups:$won_total" "$N:0:$N" "... each address still won by exactly one process"
is "$(ectl get --prefix /rdmak/ipam/claims/r2/ --keys-only | grep -c .)" "$N" "... and etcdctl counts $N claims"
etcd_member_start 0
etcd_cluster_wait_healthy 30
ok $? "member 0 rejoins"
is "$(ectl get --endpoints "${ETCD_URL[0]}" --consistency s --prefix /rdmak/ipam/claims/r2/ --keys-only 2>/dev/null | grep -c .)" \
	"$N" "the rejoined member has every claim made while it was down"

# --- unreachable ----------------------------------------------------------------------------
etcd_cluster_stop
run es ping
is "$rc" 1 "ping with the cluster down fails"
like "$err" "unreachable=1: etcd: no etcd endpoint answered \(3 tried\)" "... as unreachable (STATUS's code 50)"
for i in 0 1 2; do like "$err" "${ETCD_URL[$i]}: " "... naming ${ETCD_URL[$i]}"; done
run es claim p1 10.0.0.3 Z
like "$rc:$err" "^1:error: EHOSTUNREACH unreachable=1" "a claim with the cluster down fails as unreachable, not as taken"

done_testing
