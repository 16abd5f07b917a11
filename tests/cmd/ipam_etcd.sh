#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-ipam on the etcd store, end to end, against a real three-member etcd cluster on loopback
# (tests/lib/etcd-cluster.sh): the plugin exec'd as a main plugin execs it (ADD, idempotent ADD,
# CHECK, DEL, STATUS, whereabouts' datastore and its etcd_host on DEL), `rdmak ipam list` naming the pod,
# 16 concurrent allocators sharing 1000 attachments with zero duplicates (and again with the
# member every client talks to first killed part way), ADDs killed at random instants and then
# GC, the same plugin over client TLS, and the codes when the cluster is down.
# etcd_store.sh holds the store's ops to the file store's contract; this file holds the
# allocator and the plugin on top of them.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib/etcd-cluster.sh"
STRESS="$BUILD/tests/helpers/ipam_stress"
IPAM="$BUILD/cni/rdmak-ipam"

etcd_test_cluster "rdmak-ipam on the etcd store" "$TMP/etcd"

# node_etcd: the node's etcd stores (its CNI settings) on this cluster: "cluster" with the client
# certificate when the cluster asks for one, "nocert" without it, "wb" the members as whereabouts'
# etcd_host names them
node_etcd() {
	local eps wb tls="" catls=""
	eps=$(printf '"%s",' "${ETCD_URL[@]}") wb=$(printf '"%s",' "${ETCD_EP[@]}")
	if [ "$ETCD_TLS" = 1 ]; then
		tls=",\"tls\":{\"ca\":\"$ETCD_CA\",\"cert\":\"$ETCD_CERT\",\"key\":\"$ETCD_KEY\"}"
		catls=",\"tls\":{\"ca\":\"$ETCD_CA\"}"
	fi
	node_conf "\"etcd\":{\"cluster\":{\"endpoints\":[${eps%,}]$tls},\"nocert\":{\"endpoints\":[${eps%,}]$catls},\"wb\":{\"endpoints\":[${wb%,}]}}"
}
node_etcd
# cfg FILE NAME RANGE [MORE-IPAM-KEYS]: a macvlan network whose IPAM is rdmak-ipam on the node's
# store "cluster"
cfg() {
	printf '{"cniVersion":"1.1.0","name":"%s","type":"macvlan","master":"eth9","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"cluster","range":"%s"%s}}' \
		"$2" "$3" "${4:-}" >"$1"
}
# cni COMMAND CONTAINERID CONF-FILE: the plugin with the CNI environment; stdout in $out (ARGS=...
# set replaces the CNI_ARGS made of the container ID)
cni() {
	# counting etcd calls (CALLS=FILE) takes the test build, whose seam writes them out
	local dir=$BUILD/cni
	[ -z "${CALLS:-}" ] || dir=$BUILD/tests/seams/cni
	run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" ${CALLS:+RDMAK_ETCD_CALLS=$CALLS} CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 \
		CNI_PATH="$dir" CNI_ARGS="${ARGS-${2:+IgnoreUnknown=1;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=vllm-$2;K8S_POD_UID=uid-$2}}" \
		"$dir/rdmak-ipam" <"$3"
	printf '%s' "$out" >"$TMP/out.json"
}
q() { jget "$TMP/out.json" "$1"; }
claims() { ectl get --prefix "/rdmak/ipam/claims/$1/" --keys-only 2>/dev/null | grep -c .; }

# --- the plugin, exec'd ---------------------------------------------------------------------
cfg "$TMP/a.json" rail1 10.70.0.0/24 ',"gateway":"10.70.0.1"'
cni ADD c1 "$TMP/a.json"
is "$rc:$(q "d['ips']")" '0:[{"address": "10.70.0.2/24", "gateway": "10.70.0.1"}]' "ADD on etcd: the first address after the gateway"
like "$err" "rail1: 10.70.0.2/24 for pod ai/vllm-c1" "the log line names the address and the pod"
like "$(ectl get /rdmak/ipam/claims/10.70.0.0_24/10.70.0.2 --print-value-only)" '"containerID":"c1","ifname":"net1".*"podName":"vllm-c1"' \
	"etcdctl sees the claim key, its value the attachment and the pod"
cni ADD c1 "$TMP/a.json"
is "$(q "d['ips'][0]['address']")" "10.70.0.2/24" "ADD again: the same address (idempotent)"
is "$(claims 10.70.0.0_24)" 1 "... and still one claim"
python3 - "$TMP/a.json" "$TMP/out.json" "$TMP/check.json" <<-'EOF'
	import json, sys
	c = json.load(open(sys.argv[1])); c["prevResult"] = json.load(open(sys.argv[2]))
	json.dump(c, open(sys.argv[3], "w"))
	EOF
cni CHECK c1 "$TMP/check.json"
is "$rc:$out" "0:" "CHECK with ADD's result as prevResult passes"
# IP= in CNI_ARGS: claimed through the same Txn as any address, so a claimed one is refused
ARGS="IP=10.70.0.77" cni ADD ip1 "$TMP/a.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.70.0.77/24" "IP= on etcd: that address"
like "$(ectl get /rdmak/ipam/claims/10.70.0.0_24/10.70.0.77 --print-value-only)" '"containerID":"ip1"' "... claimed in ip1's name"
ARGS="IP=10.70.0.77" cni ADD ip2 "$TMP/a.json"
is "$rc:$(q "[d['code'], d['details']]")" '1:[112, "IP=10.70.0.77 in CNI_ARGS: claimed by ip1:net1"]' "IP= of a claimed address on etcd: code 112"
ARGS="" cni DEL ip1 "$TMP/a.json"
is "$rc:$(claims 10.70.0.0_24)" "0:1" "DEL gives it back"
# whereabouts' datastore: "etcd" is the store; its etcd_host is the node's, refused on ADD and
# taken by DEL (an attachment made with it) to find the node's store of those members
cfg "$TMP/wb.json" rail1 10.70.0.0/24 ',"gateway":"10.70.0.1"'
sed -i 's|"store":"etcd",|"datastore":"etcd",|' "$TMP/wb.json"
cni ADD c2 "$TMP/wb.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.70.0.3/24" "whereabouts' datastore: etcd with the node's store: the next address of the same pool"
sed "s|\"etcd\":\"cluster\",|\"etcd_host\":\"$(printf '%s\n' "${ETCD_EP[@]}" | paste -sd,)\",|" "$TMP/wb.json" >"$TMP/wb-host.json"
like "$(cat "$TMP/wb-host.json")" '"datastore":"etcd","etcd_host":"127.0.0.1:[0-9]+,' "(whereabouts' datastore and etcd_host)"
cni ADD w1 "$TMP/wb-host.json"
is "$rc:$(q "d['code']")" "1:2" "whereabouts' etcd_host on ADD: refused (the node names etcd)"
ARGS="IP=10.70.0.90" cni ADD w1 "$TMP/wb.json"
cni DEL w1 "$TMP/wb-host.json"
is "$rc" 0 "DEL with etcd_host (the config of an earlier ADD): exits 0"
is "$(ectl get /rdmak/ipam/claims/10.70.0.0_24/10.70.0.90 --keys-only 2>/dev/null | grep -c .)" 0 \
	"... it found the node's store of those members and released the claim"
run "$RDMAK" ipam list --config "$TMP/a.json" --json
printf '%s' "$out" >"$TMP/list.json"
is "$rc:$(jget "$TMP/list.json" "[d['store'], d['ranges'][0]['used'], d['ranges'][0]['free'], [r['pod'] for r in d['ranges'][0]['reservations']]]")" \
	'0:["etcd", 2, 251, ["ai/vllm-c1", "ai/vllm-c2"]]' "rdmak ipam list --json on etcd: used, free and each reservation's pod"
cni DEL c1 "$TMP/a.json"
is "$rc" 0 "DEL exits 0"
is "$(claims 10.70.0.0_24)" 1 "DEL removed c1's claim key (c2's is left)"
cni DEL c1 "$TMP/a.json"
is "$rc" 0 "DEL twice exits 0"
cni STATUS "" "$TMP/a.json"
is "$rc" 0 "STATUS with the cluster up exits 0"

# --- what one attachment asks of etcd ------------------------------------------------------------
# Each exec'd plugin appends its requests (RDMAK_ETCD_CALLS, read by the test build: tests/seams/etcd_calls.c). A new attachment:
# one write (the claim's Txn, which also writes its record, the cursor and the pool's key) and
# two reads (its record, the cursor); before, 3 Puts (record pending, cursor, record) and 4 Ranges.
cfg "$TMP/n.json" calls 10.71.0.0/24
: >"$TMP/calls"
for i in 1 2 3 4 5 6 7 8 9 10; do CALLS="$TMP/calls" cni ADD n$i "$TMP/n.json"; done
is "$(grep -c . "$TMP/calls"):$(awk '{r+=$2; p+=$4; d+=$6; t+=$8} END {print r/NR, p/NR, d/NR, t/NR}' "$TMP/calls")" \
	"10:2 0 0 1" "10 exec'd ADDs on etcd: per ADD 2 Ranges, 0 Puts, 0 DeleteRanges, 1 Txn (one write)"
is "$(ectl get --prefix /rdmak/ipam/records/calls/ --keys-only | grep -c .):$(claims 10.71.0.0_24)" "10:10" \
	"... and each left its record and its claim"
is "$(ectl get /rdmak/ipam/cursors/10.71.0.0_24 --print-value-only):$(ectl get /rdmak/ipam/pools/10.71.0.0_24 --keys-only)" \
	"10.71.0.10:/rdmak/ipam/pools/10.71.0.0_24" "... the cursor at the last address and the pool's key"
like "$(ectl get /rdmak/ipam/records/calls/n3:net1 --print-value-only)" '^\{"ips":\["10.71.0.0_24/10.71.0.3"\]\}$' \
	"... n3's record names its claim"
: >"$TMP/calls"
CALLS="$TMP/calls" cni DEL n3 "$TMP/n.json"
is "$rc:$(cat "$TMP/calls"):$(claims 10.71.0.0_24)" "0:range 3 put 0 delete 1 txn 1:9" "DEL: 3 Ranges (the record, its claim twice), a Txn (the claim), a delete (the record)"
CALLS="$TMP/calls" cni ADD n3 "$TMP/n.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.71.0.11/24" "an ADD after it gets the next address after the cursor"

# --- 16 concurrent allocators, 1000 attachments ----------------------------------------------
N=1000
cfg "$TMP/s.json" stress 10.72.0.0/16
run "$STRESS" stress "$TMP/s.json" 16 $N
is "$rc:$out" "0:$N adds, $N distinct addresses" "16 allocator processes x $N attachments on etcd: every ADD answered, zero duplicates"
printf '# %s\n' "$err"
run "$STRESS" verify "$TMP/s.json"
is "$out" "$N claims, 0 violations" "the store reads back consistent: one claim per attachment, each in its name"
is "$(claims 10.72.0.0_16)" $N "etcdctl counts $N claim keys"

# The same while member 0, which every client talks to first, is killed part way.
cfg "$TMP/k.json" stress-kill 10.74.0.0/16
"$STRESS" stress "$TMP/k.json" 16 $N >"$TMP/k.out" 2>"$TMP/k.err" &
bg=$!
for _ in $(seq 600); do
	killed_at=$(claims 10.74.0.0_16)
	[ "$killed_at" -ge $((N / 10)) ] && break
	sleep 0.05
done
etcd_member_kill 0
wait "$bg"
krc=$?
if [ "$killed_at" -gt 0 ] && [ "$killed_at" -lt "$N" ]; then ok 0 "member 0 killed part way ($killed_at of $N claims made)"
else ok 1 "member 0 killed part way ($killed_at of $N claims made)"; fi
is "$krc:$(cat "$TMP/k.out")" "0:$N adds, $N distinct addresses" "with member 0 killed: every ADD answered, zero duplicates"
sed 's/^/# /' "$TMP/k.err" | head -5
run "$STRESS" verify "$TMP/k.json"
is "$out" "$N claims, 0 violations" "... and the store reads back consistent"
etcd_member_start 0
etcd_cluster_wait_healthy 30
ok $? "member 0 rejoins"

# --- ADDs killed at random instants, then GC -------------------------------------------------
cfg "$TMP/g.json" killed 10.76.0.0/24
run "$STRESS" kill "$TMP/g.json" 100 "${RANDOM}" 150
is "$rc" 0 "100 ADDs on etcd, each killed at a random instant (0-150 ms)"
printf '%s' "$out" >"$TMP/valid.json"
printf '# %s\n' "$err"
run "$STRESS" verify "$TMP/g.json"
like "$out" ", 0 violations$" "after the kills the store reads back consistent (no claim outside its attachment's record)"
printf '# before GC: %s\n' "$out"
run "$RDMAK" ipam gc --config "$TMP/g.json" --valid "$TMP/valid.json" --json
is "$rc" 0 "rdmak ipam gc on etcd with the attachments whose ADD answered exits 0"
printf '# gc: %s\n' "$(echo $out)"
run "$STRESS" verify "$TMP/g.json" "$TMP/valid.json"
is "$rc" 0 "after GC the claims are exactly those of the answered ADDs (orphans freed)"
printf '# %s %s\n' "$out" "$err"
is "$(claims 10.76.0.0_24)" "$(grep -o containerID "$TMP/valid.json" | grep -c .)" "etcdctl agrees: one claim per answered ADD"

# --- the cluster down ----------------------------------------------------------------------
etcd_cluster_stop
cni STATUS "" "$TMP/a.json"
is "$rc:$(q "d['code']")" "1:50" "STATUS with the cluster down: code 50"
like "$(q "d['details']")" "no etcd endpoint answered \(3 tried\)" "... saying no endpoint answered"
cni DEL c2 "$TMP/a.json"
is "$rc:$(q "d['code']")" "1:11" "DEL with the cluster down fails with code 11 (the runtime retries; the address is not leaked)"
cni ADD c3 "$TMP/a.json"
is "$rc:$(q "d['code']")" "1:11" "ADD with the cluster down: code 11"

# --- client TLS ----------------------------------------------------------------------------
etcd_test_cluster "rdmak-ipam on etcd with TLS" "$TMP/etcd-tls" tls
node_etcd
cfg "$TMP/t.json" rail-tls 10.78.0.0/24
like "$(cat "$RDMAK_CNI_CONFIG")" '"cluster":\{"endpoints":\["https://.*"tls":\{"ca":' "(https endpoints, the node's store's tls)"
cni ADD t1 "$TMP/t.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.78.0.1/24" "ADD over TLS with a client certificate"
is "$(claims 10.78.0.0_24)" 1 "etcdctl (TLS) sees the claim"
node_etcd
sed 's|"etcd":"cluster"|"etcd":"nocert"|' "$TMP/t.json" >"$TMP/t-nocert.json"
cni ADD t2 "$TMP/t-nocert.json"
is "$rc:$(q "d['code']")" "1:11" "without a client certificate the members refuse the plugin: code 11"
like "$(q "d['details']")" "bad certificate|certificate required" "... and the details say why"
cni DEL t1 "$TMP/t.json"
is "$rc:$(claims 10.78.0.0_24)" "0:0" "DEL over TLS removes the claim"

done_testing
