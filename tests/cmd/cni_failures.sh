#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni ADD failing at each stage, and what it leaves: nothing. A missing IPAM plugin, a full
# pool (host-local's error passed through), the kernel refusing the MTU right after the macvlan
# is made, the kernel refusing an IPAM route after the addresses and the table are in place
# (host-local must then hold no reservation: the address was released). Each error names what
# failed; the DEL a runtime sends after a failed ADD succeeds and changes nothing either.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni failures and rollback"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
HL="$TMP/store-hl"
held() { files_under "$HL" | grep -cE '/[0-9a-f.:]+$'; }
conf() { # conf IPAM [EXTRA-KEYS]
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"rail0\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"stateDir\":\"$TMP/state\",\"ipam\":$1${2:+,$2}}"
}
hostlocal() { # hostlocal [EXTRA-RANGE-KEYS] [ROUTES]
	echo "{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"172.16.11.0/24\",\"rangeStart\":\"172.16.11.10\",\"gateway\":\"172.16.11.254\"${1:+,$1}}]],\"routes\":${2:-[]},\"dataDir\":\"$HL\"}"
}

# fails CODE REGEX DESC CONF: ADD net2 fails at some stage; nothing is left behind
fails() {
	local before
	before=$(snap_all "$POD")
	cni ADD "f-$RANDOM" net2 "$POD" "$4"
	is "$rc/$(jout 'd["code"]')" "1/$1" "$3: exit 1, code $1"
	like "$(jout 'd["msg"] + " | " + d.get("details", "")')" "$2" "$3: says what failed"
	is "$(snap_all "$POD")" "$before" "$3: pod, host and records as before"
	is "$(held)" "$HELD" "$3: the IPAM holds what it held before"
	cni DEL "f-$RANDOM" net2 "$POD" "$4"
	if [ "$1" = 7 ] && [ -z "${4##*no-such-ipam*}" ]; then
		# the IPAM cannot be asked to release: DEL fails, for the runtime to retry
		is "$rc/$(jout 'd["code"]')" 1/7 "$3: the runtime's DEL fails too, naming the plugin (retried, no address leaked)"
	else
		is "$rc" 0 "$3: the runtime's DEL after it succeeds"
	fi
	is "$(snap_all "$POD")" "$before" "$3: and changes nothing"
}

HELD=0
fails 7 "no-such-ipam" "a missing IPAM plugin" "$(conf '{"type":"no-such-ipam"}')"
fails 999 "10.1.1.1" "an IPAM that refuses its own config (static, an address without its prefix)" \
	"$(conf '{"type":"static","addresses":[{"address":"10.1.1.1"}]}')"

# a one-address pool: the first ADD takes it, the second fails in the IPAM
C=$(conf "$(hostlocal '"rangeEnd":"172.16.11.10"')")
cni ADD first net1 "$POD" "$C"
is "$rc" 0 "the pool's one address goes to the first ADD"
HELD=1
fails 999 "no IP addresses available in range set" "a full pool (host-local's error passed through)" "$C"
cni DEL first net1 "$POD" "$C"
is "$(held)" 0 "DEL of the first frees the pool"
HELD=0

# the kernel refuses a step after the macvlan exists: its MTU above the master's
fails 100 "creating macvlan net2 on .* with MTU 9000: Invalid argument" "an MTU the master cannot carry (refused by the request that makes the macvlan)" \
	"$(conf "$(hostlocal)" '"mtu":9000')"
# the kernel refuses an IPAM route after addresses, table and rule are in place: all undone,
# and the address host-local gave is released
fails 100 "adding route 10.30.0.0/16 via a gateway to table 102 of net2: .*kernel: " \
	"an IPAM route whose gateway is off-link (refused last)" "$(conf "$(hostlocal '' '[{"dst":"10.30.0.0/16","gw":"10.99.0.1"}]')")"

done_testing
