#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a network config (a namespace user's NetworkAttachmentDefinition) can make rdmak-ipam do
# as root, tried as a hostile user would (docs/ipam.md, "What it trusts"): send root's etcd
# client, with the node's client certificate, to an address of its own; read a host file as a
# TLS certificate or key; write its store into any folder, through a symbolic link too; append
# log lines to any file. Each is refused by name, with what to write instead, and nothing is
# contacted, read or written; the node's own settings ($RDMAK_CNI_CONFIG) name the folders and
# the etcd stores a network may use, and are themselves read only as root's.
. "$(dirname "$0")/../lib.sh"
IPAM="$BUILD/cni/rdmak-ipam"
N="$TMP/node" ELSE="$TMP/elsewhere"
mkdir -p "$N/data" "$N/log" "$ELSE"
# the node's settings: its folders under $N, nothing of $ELSE
printf '{"stateDir":"%s","logDir":"%s","dataDirs":["%s"]}' "$N/state" "$N/log" "$N/data" >"$TMP/cni-node.json"

# cni CMD ID IPAM-KEYS: rdmak-ipam exec'd as a main plugin execs it; $out $err $rc
cni() {
	printf '{"cniVersion":"1.0.0","name":"trust","type":"macvlan","master":"eth9","ipam":{"type":"rdmak-ipam","range":"10.61.0.0/24"%s}}' "${3:+,$3}" >"$TMP/stdin"
	run env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND="$1" CNI_CONTAINERID="$2" \
		CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 CNI_PATH="$BUILD/cni" "$IPAM" <"$TMP/stdin"
}
field() { printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$1" 2>/dev/null; }

# A listener standing in for an address a user controls: it counts the connections made to it
# (the kernel queues them whether or not it accepts, so after the plugin exits the count is
# final: no waiting).
coproc LISTEN { "$PY" -u -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64); print(s.getsockname()[1])
s.setblocking(False)
for line in sys.stdin:
    n = 0
    try:
        while True:
            c, _ = s.accept(); c.close(); n += 1
    except BlockingIOError:
        pass
    print(n)
'; }
read -r PORT <&"${LISTEN[0]}"
connections() { echo >&"${LISTEN[1]}"; read -r n <&"${LISTEN[0]}"; echo "$n"; }
# a file of root's that no network should make root read (the node's key, a token)
printf 'root secret\n' >"$TMP/secret"
chmod 0600 "$TMP/secret"

# ---- the etcd store's address and files come from the node, never from the network --------------
cni ADD e0 "\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"127.0.0.1:$PORT\"]}"
is "$rc:$(field code)" "1:2" "an etcd address in the network config: refused (code 2)"
is "$(connections)" 0 "... root's etcd client never connected to it"
cni ADD e1 "\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"127.0.0.1:$PORT\"],\"tls\":{\"ca\":\"$TMP/secret\"}}"
is "$rc:$(field code)" "1:2" "etcd endpoints in the network config: refused (code 2)"
like "$(field details)" "^ipam.etcd.endpoints: unsupported key .*belongs to the node, not to a network.*write \"etcd\": \"NAME\"" \
	"... naming the key and what to write instead"
is "$(connections)" 0 "... and root's etcd client never connected to the address the network named"
unlike "$(field details)" "PEM" "... nor read the file it named as a CA"
cni ADD e2 "\"etcd_host\":\"127.0.0.1:$PORT\",\"etcd_key_file\":\"$TMP/secret\",\"etcd_cert_file\":\"$TMP/secret\""
is "$rc:$(field code)" "1:2" "whereabouts' etcd_host and etcd_*_file: refused (code 2)"
like "$(field details)" "^ipam.etcd_host: unsupported key .*write \"store\": \"etcd\", \"etcd\": \"NAME\"" \
	"... naming the key and what to write instead"
is "$(connections)" 0 "... and nothing connected"
cni ADD e3 '"store":"etcd","etcd":"cluster"'
is "$rc:$(field code)" "1:7" "a store the node does not have: code 7"
like "$(field details)" "^ipam.etcd: \"cluster\" is not an etcd store of this node \($TMP/cni-node.json names: none\)" \
	"... naming the node's stores"
# the node's store by name: its address is the node's (here the listener, as the owner's)
printf '{"stateDir":"%s","logDir":"%s","dataDirs":["%s"],"etcd":{"cluster":{"endpoints":["127.0.0.1:%s"]}}}' \
	"$N/state" "$N/log" "$N/data" "$PORT" >"$TMP/cni-node.json"
cni ADD e4 '"store":"etcd","etcd":"cluster"'
is "$(field code)" 11 "the node's store by name: reached (the stand-in answers no gRPC: code 11)"
n=$(connections)
[ "$n" -ge 1 ]; ok $? "... at the address the node's settings give ($n connections)"
# DEL of an attachment made with the shape before (a runtime deletes with the config of ADD):
# its endpoints find the node's store, its files are never read
cni DEL e5 "\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"127.0.0.1:$PORT\"],\"tls\":{\"key\":\"$TMP/secret\",\"cert\":\"$TMP/secret\"}}"
is "$(field code)" 11 "DEL with the shape before: the node's store of those endpoints (code 11 here)"
unlike "$(field details)" "PEM|$TMP/secret" "... the network's key file never read"
n=$(connections)
[ "$n" -ge 1 ]; ok $? "... the node's store reached ($n connections)"
cni DEL e6 '"etcd_host":"127.0.0.1:1"'
is "$rc:$(field code)" "1:7" "DEL with endpoints no store of the node has: code 7"
like "$(field details)" "no etcd store of this node .* has them: the node's owner adds one" "... saying what to do"
is "$(connections)" 0 "... and nothing connected"

# ---- dataDir: beneath one of the node's dataDirs, never through a link ------------------------
cni ADD d1 "\"dataDir\":\"$ELSE/store\""
is "$rc:$(field code)" "1:7" "a dataDir outside the node's dataDirs: code 7"
like "$(field details)" "^ipam.dataDir: $ELSE/store is none of the node's dataDirs nor beneath one .*leave dataDir out \($N/data\)" \
	"... naming it, the node's folders and what to write instead"
[ ! -e "$ELSE/store" ]; ok $? "... and nothing written there"
ln -s "$ELSE" "$N/data/link"
cni ADD d2 "\"dataDir\":\"$N/data/link/store\""
like "$rc:$(field details)" "^1:.*$N/data/link is a symbolic link: refused" "a dataDir through a symbolic link beneath the node's: refused by name"
[ ! -e "$ELSE/store" ]; ok $? "... and nothing written where it points"
cni ADD d3 "\"dataDir\":\"$N/data/tenant-a\""
is "$rc" 0 "a dataDir beneath the node's: ADD exits 0"
[ -d "$N/data/tenant-a/pools" ]; ok $? "... its store there"
cni ADD d4 ""
is "$rc" 0 "no dataDir: ADD exits 0"
[ -d "$N/data/pools" ]; ok $? "... the store in the node's first dataDir"

# ---- log_file: beneath the node's logDir ------------------------------------------------------
printf 'untouched\n' >"$ELSE/victim"
cni ADD l1 "\"log_file\":\"$ELSE/victim\""
is "$rc:$(field code)" "1:7" "a log_file outside the node's logDir: code 7"
like "$(field details)" "^ipam.log_file: $ELSE/victim is not beneath the node's logDir \($N/log, .*write \"$N/log/victim\", or leave the key out" \
	"... naming it and what to write instead"
is "$(cat "$ELSE/victim")" "untouched" "... and not a line appended to the file it named"
cni DEL l1 "\"log_file\":\"$ELSE/victim\""
is "$rc" 0 "DEL with it (the config of an earlier ADD): exits 0"
like "$err" "warning: ipam.log_file: $ELSE/victim is not beneath the node's logDir .*stderr only" "... warning that the file is not written"
is "$(cat "$ELSE/victim")" "untouched" "... and not written"
ln -s "$ELSE" "$N/log/link"
cni ADD l2 "\"log_file\":\"$N/log/link/victim\""
like "$rc:$(field details)" "^1:.*$N/log/link is a symbolic link: refused" "a log_file through a link beneath the logDir: refused by name"
is "$(cat "$ELSE/victim")" "untouched" "... and not written"
cni ADD l3 "\"log_file\":\"$N/log/ipam.log\""
is "$rc" 0 "a log_file beneath the node's logDir: ADD exits 0"
like "$(cat "$N/log/ipam.log" 2>/dev/null)" "rdmak-ipam ADD l3/net1: info: trust: 10.61.0" "... its lines there"

# ---- the node's settings: root's file, never a link ------------------------------------------
ln -s "$TMP/cni-node.json" "$TMP/link.json"
RDMAK_CNI_CONFIG="$TMP/link.json" cni ADD n1 ""
like "$rc:$(field details)" "^1:$TMP/link.json is a symbolic link: refused" "node settings through a symbolic link: refused by name"
chmod 0664 "$TMP/cni-node.json"
cni ADD n2 ""
like "$rc:$(field details)" "^1:$TMP/cni-node.json is owned by uid 0 with mode 0664: refused" "node settings others may write: refused"
chmod 0644 "$TMP/cni-node.json"
RDMAK_CNI_CONFIG="$TMP/none.json" cni ADD n3 ""
like "$rc:$(field details)" "^1:$TMP/none.json: No such file" "a node settings file the owner named and that is not there: refused"

exec {LISTEN[1]}>&-
done_testing
