#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-ipam on etcd with per-node blocks ("perNodeBlockSize", docs/ipam.md "Per-node blocks"),
# against a real three-member etcd cluster on loopback (tests/lib/etcd-cluster.sh). Nodes are
# simulated: each has its own "nodeName" and its own dataDir, as two machines would.
#   - a node takes a block with one Txn and then allocates from it with no etcd request;
#   - 8 nodes, 16 concurrent exec'd ADDs: every ADD answered, zero duplicate addresses, every
#     address inside a block etcd says its node owns;
#   - a full pool: code 110 naming the pool; every member down: ADDs on nodes with room and all
#     DELs succeed, a node that needs a block fails with code 11 naming the endpoints;
#   - GC gives empty blocks back after the grace period, not before; `rdmak ipam list` shows
#     blocks and owners;
#   - the block size is the pool's (stored at its first block): a configuration with another
#     size, or with none, is refused naming both (issue 28 section 3);
#   - `rdmak ipam reclaim` gives back a node's blocks only once its lease (renewed by its ADD,
#     DEL and GC) has expired: refused while it is live, --force or not; refused without --force
#     when the node never held one or held claims at its last renewal; a node whose lease lapsed
#     renews it (and drops what was reclaimed) before it hands out an address, and with etcd
#     down it does not;
#   - exec'd ADDs killed with SIGKILL at random instants (0-200 ms): after GC no block and no claim is
#     unaccounted.
# No assertion depends on timing.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib/etcd-cluster.sh"
IPAM="$BUILD/cni/rdmak-ipam"
# the nodes are simulated by nodeName: no owner's name from this machine (RDMAK_NODE_NAME, the
# installer's file) may overrule it
unset RDMAK_NODE_NAME
export RDMAK_NODE_NAME_FILE="$TMP/no-node-name"

etcd_test_cluster "rdmak-ipam with per-node blocks" "$TMP/etcd"

# the node's etcd store "cluster" on this cluster (the simulated nodes share one CNI settings file)
eps=$(printf '"%s",' "${ETCD_URL[@]}")
node_conf "\"etcd\":{\"cluster\":{\"endpoints\":[${eps%,}]}}"
# cfg FILE NAME RANGE NODE BLOCK [MORE-IPAM-KEYS]: the node's configuration; dataDir $TMP/node/NODE
cfg() {
	printf '{"cniVersion":"1.1.0","name":"%s","type":"macvlan","master":"eth9","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"cluster","range":"%s","nodeName":"%s","dataDir":"%s","perNodeBlockSize":%s%s}}' \
		"$2" "$3" "$4" "$TMP/node/$4" "$5" "${6:-}" >"$1"
}
# cni COMMAND CONTAINERID CONF-FILE
cni() {
	# counting etcd calls (CALLS=FILE) takes the test build, whose seam writes them out
	local dir=$BUILD/cni
	[ -z "${CALLS:-}" ] || dir=$BUILD/tests/seams/cni
	run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME_FILE="$RDMAK_NODE_NAME_FILE" ${CALLS:+RDMAK_ETCD_CALLS=$CALLS} CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_NETNS=/proc/self/ns/net \
		CNI_IFNAME=net1 CNI_PATH="$dir" CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=p-$2" "$dir/rdmak-ipam" <"$3"
	printf '%s' "$out" >"$TMP/out.json"
}
q() { jget "$TMP/out.json" "$1"; }
blocks() { ectl get --prefix "/rdmak/ipam/blocks/$1/" --keys-only 2>/dev/null | grep -c .; }
owner() { ectl get "/rdmak/ipam/blocks/$1" --print-value-only | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"])'; }
# verify POOL NODE...: the invariants, from etcd and each node's dataDir (prints "ok" or what is wrong)
verify() {
	local pool=$1
	shift
	ectl get --prefix "/rdmak/ipam/blocks/$pool/" -w json >"$TMP/blocks.json"
	python3 - "$TMP/blocks.json" "$TMP/node" "$pool" "$@" <<-'EOF'
		import base64, ipaddress, json, os, sys
		doc, root, pool, nodes = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4:]
		owner = {}
		for kv in doc.get("kvs", []):
		    first = base64.b64decode(kv["key"]).decode().rsplit("/", 1)[1]
		    v = json.loads(base64.b64decode(kv["value"]))
		    owner[first] = (v["node"], int(ipaddress.ip_address(first)), int(ipaddress.ip_address(v["last"])))
		bad, seen = [], {}
		for n in nodes:
		    bdir, pdir = f"{root}/{n}/blocks/{pool}", f"{root}/{n}/pools/{pool}"
		    mine = [b for b in (os.listdir(bdir) if os.path.isdir(bdir) else []) if not b.startswith(".")]
		    for b in mine:
		        if b not in owner or owner[b][0] != n:
		            bad.append(f"{n} lists block {b}, etcd says {owner.get(b, ('nobody',))[0]}")
		    for b, (o, lo, hi) in owner.items():
		        if o == n and b not in mine:
		            bad.append(f"etcd says {n} owns {b}, {n} does not list it")
		    for a in (os.listdir(pdir) if os.path.isdir(pdir) else []):
		        if a.startswith("."):
		            continue
		        x = int(ipaddress.ip_address(a))
		        if a in seen:
		            bad.append(f"{a} claimed on {seen[a]} and {n}")
		        seen[a] = n
		        if not any(o == n and lo <= x <= hi for o, lo, hi in owner.values()):
		            bad.append(f"{n} claims {a} outside its blocks")
		print("; ".join(bad[:5]) if bad else f"ok ({len(owner)} blocks, {len(seen)} claims)")
		EOF
}

# --- one node, then two -----------------------------------------------------------------------
cfg "$TMP/n1.json" rail 10.90.0.0/24 n1 4 ',"gateway":"10.90.0.254"'
CALLS="$TMP/calls1" cni ADD a1 "$TMP/n1.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.90.0.1/24" "ADD on node n1: the first address of its first block"
is "$(owner 10.90.0.0_24/10.90.0.0):$(blocks 10.90.0.0_24)" "n1:1" "etcd: block 10.90.0.0 is n1's, the pool's only one"
is "$(cat "$TMP/calls1")" "range 1 put 0 delete 0 txn 3 lease 1" \
	"the node's first ADD: its lease (a grant and a Txn), the pool's blocks (a Range), the pool's first block with its size (a Txn finding none, one storing both)"
is "$(ectl get --prefix /rdmak/ipam/claims/ --keys-only | grep -c .):$(readlink "$TMP/node/n1/pools/10.90.0.0_24/10.90.0.1" | grep -c a1)" "0:1" \
	"the claim is in n1's dataDir, not in etcd"
CALLS="$TMP/calls2" cni ADD a2 "$TMP/n1.json"
is "$rc:$(q "d['ips'][0]['address']"):$(cat "$TMP/calls2" 2>/dev/null)" "0:10.90.0.2/24:" \
	"a second ADD on n1 gets the next address with no etcd request at all"
cni ADD a3 "$TMP/n1.json"
CALLS="$TMP/calls4" cni ADD a4 "$TMP/n1.json"
is "$rc:$(q "d['ips'][0]['address']"):$(owner 10.90.0.0_24/10.90.0.4)" "0:10.90.0.4/24:n1" \
	"n1's first block full (.0 is the network): the next ADD takes block 10.90.0.4"
is "$(cat "$TMP/calls4")" "range 1 put 0 delete 0 txn 1" "... with one Range and one Txn (the lease fresh, the pool's size stored)"
is "$(ectl get /rdmak/ipam/blocksizes/10.90.0.0_24 --print-value-only)" 4 "etcd: the pool's block size, stored with its first block"
cfg "$TMP/n2.json" rail 10.90.0.0/24 n2 4 ',"gateway":"10.90.0.254"'
cni ADD b1 "$TMP/n2.json"
is "$rc:$(q "d['ips'][0]['address']"):$(owner 10.90.0.0_24/10.90.0.8)" "0:10.90.0.8/24:n2" "node n2 takes the next free block, 10.90.0.8"
cni ADD a1 "$TMP/n1.json"
is "$(q "d['ips'][0]['address']")" "10.90.0.1/24" "ADD again on n1: the same address (idempotent)"
cni CHECK a1 "$TMP/n1.json"
is "$rc" 0 "CHECK on n1"
run "$RDMAK" ipam list --config "$TMP/n1.json" --json
printf '%s' "$out" >"$TMP/list.json"
is "$rc:$(jget "$TMP/list.json" "[d['node'], d['perNodeBlockSize'], [(b['first'], b['node']) for b in d['ranges'][0]['blocks']], len(d['ranges'][0]['reservations'])]")" \
	'0:["n1", 4, [["10.90.0.0", "n1"], ["10.90.0.4", "n1"], ["10.90.0.8", "n2"]], 4]' \
	"rdmak ipam list --json: every block of the pool with its owner, n1's reservations"
run "$RDMAK" ipam list --config "$TMP/n1.json"
like "$out" "blocks of 4 addresses \(this node: n1\)" "rdmak ipam list (text) has a blocks table"
like "$out" "10\.90\.0\.8 +10\.90\.0\.11 +n2" "... naming each block's owner"

# --- IP= (host-local's CNI_ARGS key): only from a block of this node ------------------------------
# ipreq NODE-CONF CONTAINERID ADDRESS: an ADD asking for ADDRESS
ipreq() {
	run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME_FILE="$RDMAK_NODE_NAME_FILE" CNI_COMMAND=ADD CNI_CONTAINERID="$2" CNI_NETNS=/proc/self/ns/net \
		CNI_IFNAME=net1 CNI_PATH="$BUILD/cni" CNI_ARGS="IP=$3" "$IPAM" <"$1"
	printf '%s' "$out" >"$TMP/out.json"
}
cfg "$TMP/r1.json" ipreq 10.88.0.0/24 r1 4
cfg "$TMP/r2.json" ipreq 10.88.0.0/24 r2 4
cni ADD r2a "$TMP/r2.json"
is "$rc:$(q "d['ips'][0]['address']"):$(owner 10.88.0.0_24/10.88.0.0)" "0:10.88.0.1/24:r2" "node r2 holds block 10.88.0.0"
ipreq "$TMP/r1.json" r1a 10.88.0.2
is "$rc:$(q "d['code']")" "1:112" "node r1 asking for 10.88.0.2 (IP=), in r2's block: refused (code 112), not claimed in r1's dataDir beside r2's"
like "$(q "d['details']")" "IP=10.88.0.2 in CNI_ARGS: it lies in block 10.88.0.0-10.88.0.3 of pool 10.88.0.0_24, which is another node's than r1" "... naming the block"
ipreq "$TMP/r1.json" r1b 10.88.0.21
is "$rc:$(q "d['ips'][0]['address']"):$(owner 10.88.0.0_24/10.88.0.20)" "0:10.88.0.21/24:r1" "IP= in a free cell: r1 takes that block and the address"
ipreq "$TMP/r1.json" r1c 10.88.0.22
is "$rc:$(q "d['ips'][0]['address']")" "0:10.88.0.22/24" "IP= in a block of r1's own"
is "$(verify 10.88.0.0_24 r1 r2 | sed 's/ ([0-9]* blocks, / (/')" "ok (3 claims)" "... every address in a block its node owns"

# --- the node's name ----------------------------------------------------------------------------
sed 's/"nodeName":"n1",//' "$TMP/n1.json" >"$TMP/noname.json"
run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME=n1 CNI_COMMAND=ADD CNI_CONTAINERID=a5 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 "$IPAM" <"$TMP/noname.json"
printf '%s' "$out" >"$TMP/out.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.90.0.5/24" "without nodeName, RDMAK_NODE_NAME names the node (n1's block again)"
echo n2 >"$TMP/node-name"
sed 's/"nodeName":"n2",//' "$TMP/n2.json" >"$TMP/noname2.json"
run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME_FILE="$TMP/node-name" CNI_COMMAND=ADD CNI_CONTAINERID=b2 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 "$IPAM" <"$TMP/noname2.json"
printf '%s' "$out" >"$TMP/out.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.90.0.9/24" "... else the installer's file (n2's block)"
run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME=Bad_Name CNI_COMMAND=ADD CNI_CONTAINERID=x CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 "$IPAM" <"$TMP/noname.json"
printf '%s' "$out" >"$TMP/out.json"
like "$rc:$(q "d['details']")" '^1:.*from RDMAK_NODE_NAME\) "Bad_Name" is not a node name' "a name that is not a node name is refused, saying where it came from"
# a network's nodeName that names another node than the owner's: it would take and renew that
# node's blocks and lease
cfg "$TMP/own2.json" own 10.89.0.0/24 n2 4
cfg "$TMP/own1.json" own 10.89.0.0/24 n1 4
run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME=n1 CNI_COMMAND=ADD CNI_CONTAINERID=o1 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 "$IPAM" <"$TMP/own2.json"
printf '%s' "$out" >"$TMP/out.json"
like "$rc:$(q "d['details']")" '^1:.*nodeName "n2" is not this node.s name "n1" \(from RDMAK_NODE_NAME\): remove nodeName' \
	"a network's nodeName naming another node than the owner's RDMAK_NODE_NAME is refused"
run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME=n1 CNI_COMMAND=ADD CNI_CONTAINERID=o1 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 "$IPAM" <"$TMP/own1.json"
printf '%s' "$out" >"$TMP/out.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.89.0.1/24" "... one naming the owner's is fine"

# --- 8 nodes, 16 concurrent exec'd ADDs -------------------------------------------------------------
N=16 PER=10
for n in 1 2 3 4 5 6 7 8; do cfg "$TMP/c$n.json" crowd 10.92.0.0/24 node$n 8; done
pids=()
for p in $(seq 0 $((N - 1))); do
	(
		for i in $(seq $PER); do
			env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME_FILE="$RDMAK_NODE_NAME_FILE" CNI_COMMAND=ADD CNI_CONTAINERID="c$p-$i" CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 \
				"$IPAM" <"$TMP/c$((p % 8 + 1)).json" 2>>"$TMP/c.err" | grep -o '"address": "[^"]*"' || echo FAILED
		done >"$TMP/c.out.$p"
	) &
	pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the etcd members are this shell's children too
cat "$TMP"/c.out.* >"$TMP/c.all"
is "$(grep -c address "$TMP/c.all"):$(sort -u "$TMP/c.all" | grep -c address)" "$((N * PER)):$((N * PER))" \
	"8 nodes x 16 concurrent exec'd ADDs: all $((N * PER)) answered, $((N * PER)) distinct addresses"
is "$(verify 10.92.0.0_24 node1 node2 node3 node4 node5 node6 node7 node8 | sed 's/ ([0-9]* blocks, / (/')" "ok ($((N * PER)) claims)" \
	"every address in a block its node owns, every block listed by its owner alone"

# --- a full pool ---------------------------------------------------------------------------------
cfg "$TMP/f1.json" small 10.94.0.0/28 f1 4
cfg "$TMP/f2.json" small 10.94.0.0/28 f2 4
for i in 1 2 3 4 5 6 7; do cni ADD f1-$i "$TMP/f1.json"; done
is "$rc:$(blocks 10.94.0.0_28)" "0:2" "node f1: 7 addresses in 2 blocks of a /28"
for i in 1 2 3 4 5 6 7; do cni ADD f2-$i "$TMP/f2.json"; done
is "$rc:$(blocks 10.94.0.0_28)" "0:4" "node f2: 7 more in the last 2 blocks (the broadcast address is not handed out)"
cni ADD f2-8 "$TMP/f2.json"
is "$rc:$(q "d['code']")" "1:110" "f2 with its blocks full and no free block: code 110"
like "$(q "d['details']")" "pool 10.94.0.0_28 .*no block of node f2 has room and no free block of 4 addresses is left" "... naming the pool and the node"
cni DEL f1-3 "$TMP/f1.json"
cni ADD f2-8 "$TMP/f2.json"
is "$rc:$(q "d['code']")" "1:110" "an address free in f1's block is not borrowed by f2: still code 110"

# --- every member down ---------------------------------------------------------------------------
cfg "$TMP/z.json" zed 10.91.0.0/24 z 4 ',"nodeLeaseTTL":2'
cni ADD z1 "$TMP/z.json"
is "$rc" 0 "node z (nodeLeaseTTL 2) holds a block"
etcd_cluster_stop
sleep 2 # z's lease lapses (9/10 of its 2 s, by z's clock)
cni ADD a6 "$TMP/n1.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.90.0.6/24" "every etcd member down: ADD on n1, whose block has room, succeeds"
for k in a1 a2 a3 a4 a5 a6; do
	cni DEL $k "$TMP/n1.json"
	[ "$rc" = 0 ] || break
done
is "$rc" 0 "... and every DEL on n1 succeeds"
cni ADD b3 "$TMP/n2.json"
cni ADD b4 "$TMP/n2.json"
cni ADD b5 "$TMP/n2.json"
is "$rc:$(q "d['code']")" "1:11" "a node that needs a new block fails with code 11"
cp "$TMP/out.json" "$TMP/b5.json"
cni ADD z2 "$TMP/z.json"
is "$rc:$(q "d['code']")" "1:11" "node z, whose block has room but whose lease lapsed: code 11 (it hands out nothing unrenewed)"
like "$(q "d['details']")" "node z renews its lease in etcd \(/rdmak/ipam/leases/z, the proof .*\) before it hands out an address, and its last renewal has lapsed" "... saying why"
cp "$TMP/b5.json" "$TMP/out.json"
like "$(q "d['details']")" "no etcd endpoint answered \(3 tried\): http://127\.0\.0\.1:[0-9]+: .*; http://127\.0\.0\.1:[0-9]+: .*; http://127" \
	"... naming the endpoints"
ls "$TMP/node/n2/pools/10.90.0.0_24/" >"$TMP/n2.claims"
is "$(grep -c . "$TMP/n2.claims")" 4 "... and nothing is left of that ADD on n2 (b1-b4 fill its block)"
for i in 0 1 2; do etcd_member_start $i; done
etcd_cluster_wait_healthy 30
ok $? "the cluster is back"

# --- GC and reclaim ---------------------------------------------------------------------------------
echo '[]' >"$TMP/none.json"
cfg "$TMP/n1-grace.json" rail 10.90.0.0/24 n1 4 ',"gateway":"10.90.0.254","blockReleaseAfter":3600'
run "$RDMAK" ipam gc --config "$TMP/n1-grace.json" --valid "$TMP/none.json" --json
printf '%s' "$out" >"$TMP/gc.json"
is "$rc:$(jget "$TMP/gc.json" "d['blocks']"):$(blocks 10.90.0.0_24)" '0:{"node": "n1", "kept": 2, "freed": 0, "adopted": 0, "dropped": 0}:3' \
	"GC on n1 with its blocks empty but inside the grace period: both kept"
cfg "$TMP/n1-now.json" rail 10.90.0.0/24 n1 4 ',"gateway":"10.90.0.254","blockReleaseAfter":0'
run "$RDMAK" ipam gc --config "$TMP/n1-now.json" --valid "$TMP/none.json" --json
printf '%s' "$out" >"$TMP/gc.json"
is "$rc:$(jget "$TMP/gc.json" "d['blocks']['freed']"):$(blocks 10.90.0.0_24)" "0:2:1" "past the grace period GC gives n1's two empty blocks back"
ls -A "$TMP/node/n1/blocks/10.90.0.0_24/" | grep -v '^\.lock$' >"$TMP/n1.left"
is "$(grep -c . "$TMP/n1.left")" 0 "... and n1's local list is empty"
# reclaim run on n1 while n2 runs its pods (issue 28 section 3: it gave n2's block back, and n2
# then handed out its addresses again): n2's lease is live
run "$RDMAK" ipam reclaim --config "$TMP/n1.json" --node n2
is "$rc:$(blocks 10.90.0.0_24)" "4:1" "rdmak ipam reclaim --node n2 from n1 while n2 is alive: refused (exit 4), its block kept"
like "$err" "checked /rdmak/ipam/leases/n2: live \(last renewed .*, TTL 600 s, [0-9]+ claims then" "... saying what it checked: n2's lease, live"
like "$err" "the node is alive: node n2 renewed its lease /rdmak/ipam/leases/n2 at .*expires in [0-9]+ s" "... and when it expires"
run "$RDMAK" ipam reclaim --config "$TMP/n1.json" --node n2 --force
is "$rc:$(blocks 10.90.0.0_24)" "4:1" "--force does not give a live node's blocks back"
run "$RDMAK" ipam reclaim --config "$TMP/n1.json" --node n2 --json
printf '%s' "$out" >"$TMP/rc.json"
is "$rc:$(jget "$TMP/rc.json" "[d['checked']['lease']['state'], d['checked']['lease']['key'], d['refused']['msg'], d['blocks']]")" \
	'4:["live", "/rdmak/ipam/leases/n2", "the node is alive", []]' "--json: what it checked and why it refused"
cni ADD b6 "$TMP/n2.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.90.0.1/24" "n2 goes on with its own addresses (its block full: a new one, n1's given back by its GC), none given to another node"
is "$(verify 10.90.0.0_24 n1 n2 | sed 's/ ([0-9]* blocks, / (/')" "ok (5 claims)" "... every address in a block its node owns"
run "$RDMAK" ipam reclaim --config "$TMP/f1.json" --node gone-node
is "$rc" 4 "a node that never held a lease: refused without --force (nothing proves it is gone)"
like "$err" "node gone-node never renewed a lease in this store \(/rdmak/ipam/leases/gone-node" "... saying so"
run "$RDMAK" ipam reclaim --config "$TMP/f1.json" --node gone-node --force
is "$rc:$out" "0:small: node gone-node: 0 blocks given back" "... with --force: a node that owns nothing has nothing to give back"

# --- the block size is the pool's --------------------------------------------------------------------
# node a with 32 and node b with 16 on one /24 gave .16 .17 .18 to both (issue 28 section 3)
cfg "$TMP/s32.json" sizes 10.93.0.0/24 sa 32
cfg "$TMP/s16.json" sizes 10.93.0.0/24 sb 16
cni ADD sa1 "$TMP/s32.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.93.0.1/24" "node sa (perNodeBlockSize 32): 10.93.0.1, the pool's size stored as 32"
cni ADD sb1 "$TMP/s16.json"
is "$rc:$(q "d['code']")" "1:7" "node sb (perNodeBlockSize 16) on the same pool: refused (code 7)"
like "$(q "d['details']")" 'pool 10.93.0.0_24 is handed out to nodes in blocks of 32 addresses .* this configuration says 16: write "perNodeBlockSize": 32' "... naming both sizes and what to write"
is "$(blocks 10.93.0.0_24)" 1 "... and etcd holds no second, overlapping block"
run "$RDMAK" ipam gc --config "$TMP/s16.json" --valid "$TMP/none.json"
like "$rc:$err" "^2:.*blocks of 32 addresses .* this configuration says 16" "GC with the other size: refused too, exit 2 (it would read the blocks on another grid)"
eps=$(printf '"%s",' "${ETCD_URL[@]}")
printf '{"cniVersion":"1.1.0","name":"single","type":"macvlan","master":"eth9","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"cluster","range":"10.93.0.0/24"}}' >"$TMP/single.json"
cni ADD ss1 "$TMP/single.json"
is "$rc:$(q "d['code']")" "1:7" "single-address claims (no perNodeBlockSize) on a pool handed out in blocks: refused (code 7)"
like "$(q "d['details']")" 'blocks of 32 addresses .* claims single addresses \(no perNodeBlockSize\): give it "perNodeBlockSize": 32' "... naming both ways"
printf '{"cniVersion":"1.1.0","name":"single","type":"macvlan","master":"eth9","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"cluster","range":"10.95.0.0/24"}}' >"$TMP/single2.json"
cni ADD ss2 "$TMP/single2.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.95.0.1/24" "a pool of single-address claims"
cfg "$TMP/sblk.json" single 10.95.0.0/24 sc 8
cni ADD sc1 "$TMP/sblk.json"
is "$rc:$(q "d['code']")" "1:7" "... then a configuration with blocks on it: refused (code 7)"
like "$(q "d['details']")" 'pool 10.95.0.0_24 holds single-address claims .* remove "perNodeBlockSize"' "... naming both ways"
# a pool from before sizes were stored, with a block of 32: a configuration of 16 sees it
ectl put /rdmak/ipam/blocks/10.97.0.0_24/10.97.0.0 '{"node":"old","last":"10.97.0.31","created":"2026-01-01T00:00:00Z"}' >/dev/null
cfg "$TMP/old16.json" legacy 10.97.0.0/24 sd 16
cni ADD sd1 "$TMP/old16.json"
is "$rc:$(q "d['code']")" "1:7" "a block of 32 taken before the pool stored its size, and a configuration of 16: refused"
like "$(q "d['details']")" "pool 10.97.0.0_24 holds block 10.97.0.0-10.97.0.31 \(node old\), which is no block of 16 addresses" "... naming the block"
cfg "$TMP/old32.json" legacy 10.97.0.0/24 se 32
cni ADD se1 "$TMP/old32.json"
is "$rc:$(q "d['ips'][0]['address']"):$(ectl get /rdmak/ipam/blocksizes/10.97.0.0_24 --print-value-only)" "0:10.97.0.32/24:32" \
	"a configuration of 32 takes the next block, and the pool stores its size"

# --- a node's lease --------------------------------------------------------------------------------
# lease_gone NODE: wait (up to 30 s) for etcd to expire NODE's lease
lease_gone() { for _ in $(seq 60); do [ -z "$(ectl get "/rdmak/ipam/leases/$1" --keys-only)" ] && return 0; sleep 0.5; done; return 1; }
cfg "$TMP/x.json" leases 10.98.0.0/24 x 4 ',"nodeLeaseTTL":2'
cfg "$TMP/y.json" leases 10.98.0.0/24 y 4 ',"nodeLeaseTTL":2'
cfg "$TMP/w.json" leases 10.98.0.0/24 w 4
cni ADD x1 "$TMP/x.json"
cni ADD y1 "$TMP/y.json"
is "$rc:$(q "d['ips'][0]['address']"):$(ectl get /rdmak/ipam/leases/x --print-value-only | python3 -c 'import json,sys; print(json.load(sys.stdin)["claims"])')" "0:10.98.0.4/24:1" \
	"nodes x and y (nodeLeaseTTL 2) each hold a block; x's lease says it holds 1 claim"
cni DEL y1 "$TMP/y.json"
run "$RDMAK" ipam gc --config "$TMP/y.json" --valid "$TMP/none.json"
is "$rc:$(ectl get /rdmak/ipam/nodes/y --print-value-only | python3 -c 'import json,sys; print(json.load(sys.stdin)["claims"])')" "0:0" "y's pod gone, its GC renews its lease with 0 claims"
lease_gone x && lease_gone y
ok $? "x and y go quiet: etcd expires their leases"
run "$RDMAK" ipam reclaim --config "$TMP/w.json" --node x
is "$rc:$(blocks 10.98.0.0_24)" "4:2" "x's lease expired, but its last renewal said it held a claim: refused without --force"
like "$err" "node x's lease /rdmak/ipam/leases/x expired; its last renewal, at .*, said it held 1 claims" "... saying what it checked"
run "$RDMAK" ipam reclaim --config "$TMP/w.json" --node y --json
printf '%s' "$out" >"$TMP/rc.json"
is "$rc:$(jget "$TMP/rc.json" "[d['checked']['lease']['state'], d['checked']['lease']['claims'], [b['first'] for b in d['blocks']]]"):$(blocks 10.98.0.0_24)" \
	'0:["expired", 0, ["10.98.0.4"]]:1' "y: lease expired with no claims: reclaim gives its block back, saying what it checked"
cni ADD w1 "$TMP/w.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.98.0.4/24" "node w takes the first free block, y's old one"
cni ADD y2 "$TMP/y.json"
is "$rc:$(q "d['ips'][0]['address']")" "0:10.98.0.8/24" \
	"y comes back: its lease lapsed, so it renews it and drops the block etcd no longer says is its (w's now) before it hands out anything: a new block"
is "$(verify 10.98.0.0_24 w x y | sed 's/ ([0-9]* blocks, / (/')" "ok (3 claims)" "... every address in a block its node owns, y lists none of w's"
run "$RDMAK" ipam reclaim --config "$TMP/w.json" --node x --force
is "$rc:$(blocks 10.98.0.0_24)" "0:2" "x with --force: its block given back, on the operator's word that x is gone"
like "$err" "checked /rdmak/ipam/leases/x: expired \(last renewed .*, TTL 2 s, 1 claims then\)" "... saying what it checked"

# --- ADDs killed at random instants -----------------------------------------------------------------
for n in 1 2 3 4; do cfg "$TMP/k$n.json" killed 10.96.0.0/24 k$n 4; done
pids=()
for i in $(seq 0 59); do
	env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_NODE_NAME_FILE="$RDMAK_NODE_NAME_FILE" CNI_COMMAND=ADD CNI_CONTAINERID="k$i" CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 \
		"$IPAM" <"$TMP/k$((i % 4 + 1)).json" >"$TMP/k.out.$i" 2>/dev/null &
	pid=$!
	sleep "0.$(printf %03d $((RANDOM % 200)))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
done
answered=$(grep -l '"address"' "$TMP"/k.out.* 2>/dev/null | grep -c .)
printf '# %s of 60 killed ADDs answered before the kill\n' "$answered"
for n in 1 2 3 4; do
	valid=$(for i in $(seq $((n - 1)) 4 59); do grep -q '"address"' "$TMP/k.out.$i" 2>/dev/null && printf '{"containerID":"k%s","ifname":"net1"},' "$i"; done)
	echo "[${valid%,}]" >"$TMP/valid$n.json"
	run "$RDMAK" ipam gc --config "$TMP/k$n.json" --valid "$TMP/valid$n.json" --json
	[ "$rc" = 0 ] || break
done
is "$rc" 0 "after the kills, GC on each of the 4 nodes with the ADDs that answered"
is "$(verify 10.96.0.0_24 k1 k2 k3 k4 | sed 's/ ([0-9]* blocks, / (/')" "ok ($answered claims)" \
	"no block and no claim unaccounted: each claim an answered ADD's, in its node's block, etcd and the nodes agree"

done_testing
