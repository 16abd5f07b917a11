#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak ipam list | release | gc over the store the plugin writes: the same config file,
# text and --json, every exit code (0 done, 1 store, 2 usage/config, 3 nothing to release).
. "$(dirname "$0")/../lib.sh"
IPAM="$BUILD/cni/rdmak-ipam"
CFG="$TMP/net.json"
printf '{"cniVersion":"1.1.0","name":"rdma-net","type":"rdmak-cni","link":"macvlan","ipam":{"type":"rdmak-ipam","dataDir":"%s","range":"10.56.0.0/28","gateway":"10.56.0.1","ipRanges":[{"range":"fd00:56::/64"}]}}' "$TMP/data" >"$CFG"
add() { # add CONTAINERID IFNAME
	env -i RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND=ADD CNI_CONTAINERID="$1" CNI_IFNAME="$2" CNI_NETNS=/proc/self/ns/net CNI_PATH=/nonexistent \
		CNI_ARGS="K8S_POD_NAMESPACE=ai;K8S_POD_NAME=pod-$1;K8S_POD_UID=0a1b-$1" "$IPAM" <"$CFG" >/dev/null 2>&1
}

run "$RDMAK" ipam --help
is "$rc" 0 "--help exits 0"
like "$out" "rdmak ipam release --config FILE --container ID" "--help shows release"
run "$RDMAK" ipam
is "$rc" 2 "no command: exit 2"
run "$RDMAK" ipam frobnicate --config "$CFG"
is "$rc" 2 "an unknown command: exit 2"
run "$RDMAK" ipam list
is "$rc" 2 "list without --config: exit 2"
like "$err" "--config FILE is required" "and says so"
run "$RDMAK" ipam list --config "$TMP/none.json"
is "$rc" 2 "a missing config file: exit 2"
printf '{"name":"n","ipam":{"range":"10.0.0.0/24","kubernetes":{}}}' >"$TMP/bad.json"
run "$RDMAK" ipam list --config "$TMP/bad.json"
is "$rc" 2 "a config the plugin would refuse: exit 2"
like "$err" "ipam.kubernetes: unsupported key" "naming the key"

run "$RDMAK" ipam list --config "$CFG"
is "$rc" 0 "list of an empty store exits 0"
like "$out" "10.56.0.0/28 +10.56.0.0_28 +13 +0 +13 +10.56.0.1" "the range's size, used, free and gateway"

add c1 net1; add c1 net2; add c2 net1
run "$RDMAK" ipam list --config "$CFG" --json
is "$rc" 0 "list --json exits 0"
printf '%s' "$out" >"$TMP/list.json"
is "$(jget "$TMP/list.json" "[(r['range'], r['used'], r['free']) for r in d['ranges']]")" \
	'[["10.56.0.0/28", 3, 10], ["fd00:56::/64", 3, "18446744073709551612"]]' "used and free per range (past 2^53 as a string)"
is "$(jget "$TMP/list.json" "[(x['address'], x['containerID'], x['ifname'], x['pod'], x['podUID']) for x in d['ranges'][0]['reservations']]")" \
	'[["10.56.0.2", "c1", "net1", "ai/pod-c1", "0a1b-c1"], ["10.56.0.3", "c1", "net2", "ai/pod-c1", "0a1b-c1"], ["10.56.0.4", "c2", "net1", "ai/pod-c2", "0a1b-c2"]]' \
	"each reservation with its pod"
run "$RDMAK" ipam list --config "$CFG"
like "$out" "10.56.0.3 +c1 +net2 +ai/pod-c1 +rdma-net" "the text table lists reservations"

run "$RDMAK" ipam release --config "$CFG"
is "$rc" 2 "release without --container: exit 2"
run "$RDMAK" ipam release --config "$CFG" --container ../x
is "$rc" 2 "release of an invalid container ID: exit 2"
run "$RDMAK" ipam release --config "$CFG" --container c1 --ifname net2
is "$rc" 0 "release of one interface exits 0"
is "$out" "rdma-net: released 1 reservation of container c1 interface net2" "and says what it released"
run "$RDMAK" ipam release --config "$CFG" --container c1 --ifname net2
is "$rc" 3 "releasing it again: exit 3, nothing to release"
run "$RDMAK" ipam release --config "$CFG" --container c1
is "$out" "rdma-net: released 1 reservation of container c1" "release of all of a container's interfaces"

add c3 net1; add c4 net1
printf '[{"containerID":"c3","ifname":"net1"}]' >"$TMP/valid.json"
run "$RDMAK" ipam gc --config "$CFG"
is "$rc" 2 "gc without --valid: exit 2"
printf '[{"containerID":"c3"}]' >"$TMP/badvalid.json"
run "$RDMAK" ipam gc --config "$CFG" --valid "$TMP/badvalid.json"
is "$rc" 2 "gc with a bad --valid file: exit 2"
like "$err" 'cni.dev/valid-attachments\[0\]\.ifname: missing' "naming the entry and its missing key"
run "$RDMAK" ipam gc --config "$CFG" --valid "$TMP/valid.json" --json
is "$rc" 0 "gc exits 0"
printf '%s' "$out" >"$TMP/gc.json"
is "$(jget "$TMP/gc.json" "[d['kept'], d['released'], d['orphans'], d['errors']]")" "[1, 2, 0, 0]" "gc kept c3, released c2 and c4"
run "$RDMAK" ipam list --config "$CFG" --json
printf '%s' "$out" >"$TMP/list.json"
is "$(jget "$TMP/list.json" "[x['containerID'] for r in d['ranges'] for x in r['reservations']]")" '["c3", "c3"]' "only c3 is left, in both ranges"
printf '{"cni.dev/valid-attachments":[]}' >"$TMP/none-valid.json"
run "$RDMAK" ipam gc --config "$CFG" --valid "$TMP/none-valid.json"
like "$out" "rdma-net: kept 0 attachments, released 1" "gc accepts the object form"

# junk in the file store (issue 16 §2.5): a stray file among the records stopped the record
# pass (readdir order) while the orphan pass freed the claims of the records it skipped
for i in 1 2 3 4 5 6; do add "j$i" net1; done
printf 'x' >"$TMP/data/networks/rdma-net/stray"
printf '[{"containerID":"j1","ifname":"net1"}]' >"$TMP/valid-j1.json"
run "$RDMAK" ipam gc --config "$CFG" --valid "$TMP/valid-j1.json" --json
is "$rc" 1 "gc over a stray file finishes and reports it: exit 1"
like "$err" "skipped $TMP/data/networks/rdma-net/stray: a regular file, not written by rdmak-ipam" "naming it by its path"
printf '%s' "$out" >"$TMP/gc.json"
is "$(jget "$TMP/gc.json" "[d['kept'], d['released'], d['junk']]")" "[1, 5, 1]" "the record pass went past it: j2-j6 released"
records_ok() { # every record of rdma-net names claims that exist
	python3 -c 'import json, os, sys
d = sys.argv[1]; net = os.path.join(d, "networks/rdma-net"); bad = []
for k in sorted(os.listdir(net)):
    p = os.path.join(net, k)
    if k.startswith(".") or not os.path.islink(p): continue
    for c in json.loads(os.readlink(p)).get("ips", []):
        if not os.path.islink(os.path.join(d, "pools", c)): bad.append(k + " -> " + c)
print(bad or "ok")' "$TMP/data"
}
is "$(records_ok)" "ok" "no record is left naming a freed address"
run "$RDMAK" ipam gc --config "$CFG" --valid "$TMP/valid-j1.json" --repair
is "$rc" 0 "gc --repair exits 0"
like "$err" "removed $TMP/data/networks/rdma-net/stray: a regular file" "and says what it removed"
is "$(ls "$TMP/data/networks/rdma-net")" "j1:net1" "the stray file is gone"
run "$RDMAK" ipam list --config "$CFG" --repair
is "$rc" 2 "--repair goes with gc only"

# junk where a claim should be (issue 16 §2.9) stopped every ADD of the pool, naming neither
printf '{"cniVersion":"1.1.0","name":"tiny","type":"macvlan","ipam":{"type":"rdmak-ipam","dataDir":"%s","range":"10.57.0.0/30"}}' "$TMP/data" >"$TMP/tiny.json"
mkdir -p "$TMP/data/pools/10.57.0.0_30/10.57.0.1"
printf 'x' >"$TMP/data/pools/10.57.0.0_30/10.57.0.2"
tiny_add() {
	run env -i RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND=ADD CNI_CONTAINERID=t1 CNI_IFNAME=net1 CNI_NETNS=/proc/self/ns/net CNI_PATH=/nonexistent \
		"$IPAM" <"$TMP/tiny.json"
}
tiny_add
is "$rc" 1 "ADD over junk where a claim should be fails"
like "$out" "pool 10.57.0.0_30: $TMP/data/pools/10.57.0.0_30/10.57.0.[12] is a (directory|regular file) where a claim should be" \
	"naming the pool and the path"
like "$out" 'rdmak ipam gc --repair. removes it' "and the repair"
printf '[]' >"$TMP/valid-none.json"
run "$RDMAK" ipam gc --config "$TMP/tiny.json" --valid "$TMP/valid-none.json" --repair --json
is "$rc" 0 "gc --repair removes both"
printf '%s' "$out" >"$TMP/gc.json"
is "$(jget "$TMP/gc.json" "[d['junk'], d['repaired']]")" "[0, 2]" "counting them"
tiny_add
is "$rc" 0 "ADD succeeds after the repair"

# a store that cannot be opened (a folder the node's settings allow, --cni-config): exit 1
printf '{"name":"n","ipam":{"range":"10.0.0.0/24","dataDir":"/proc/rdmak-no-such-dir"}}' >"$TMP/ro.json"
printf '{"dataDirs":["/proc/rdmak-no-such-dir"]}' >"$TMP/ro-node.json"
run "$RDMAK" ipam list --config "$TMP/ro.json" --cni-config "$TMP/ro-node.json"
is "$rc" 1 "an unusable data directory: exit 1"
like "$err" "file store: dataDir: creating /proc/rdmak-no-such-dir" "naming it"
# a dataDir the node's settings do not allow: a bad configuration, exit 2, saying what to write
run "$RDMAK" ipam list --config "$TMP/ro.json"
is "$rc" 2 "a dataDir beneath none of the node's dataDirs: exit 2"
like "$err" "ipam.dataDir: /proc/rdmak-no-such-dir is none of the node's dataDirs nor beneath one \\($RDMAK_CNI_CONFIG \"dataDirs\": $TMP\\).*leave dataDir out" \
	"naming the key, the node's folders and what to write instead"
# the node's settings as the plugins read them: not a file of root's alone, refused by name
chmod 0666 "$TMP/ro-node.json"
run "$RDMAK" ipam list --config "$TMP/ro.json" --cni-config "$TMP/ro-node.json"
like "$rc:$err" "^2:rdmak ipam: the node's CNI settings: $TMP/ro-node.json is owned by uid 0 with mode 0666: refused" \
	"a node settings file others may write is refused"
done_testing
