#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The netlink requests an ADD and a DEL of one macvlan with rdmak-ipam (file store, in process)
# and policy routing make, counted under strace (every sendmsg/sendto on a netlink socket, and
# the requests strace decodes in each): a regression that adds a request, a dump or a send
# fails here. What each request is for: docs/cni.md "Netlink requests".
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
[ -n "$why" ] || command -v strace >/dev/null || why="no strace"
if [ -n "$why" ]; then
	skip "$why" "netlink requests of ADD and DEL"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
C="{\"cniVersion\":\"1.0.0\",\"name\":\"rail0\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma0\",\"stateDir\":\"$TMP/state\",\"ipam\":$(ipam_json rdmak-ipam 0 4)}"
printf '%s' "$C" >"$TMP/c.json"

# traced CMD: the plugin under strace; the trace in $TMP/trace.CMD
traced() {
	# LeakSanitizer cannot run under ptrace (a sanitizer build would exit 1 at its end): off here,
	# the other suites run the same code with it
	run ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" ASAN_OPTIONS=detect_leaks=0 CNI_COMMAND="$1" CNI_CONTAINERID=c1 CNI_IFNAME=net1 \
		CNI_NETNS="$POD" CNI_PATH="$CNIP" strace -f -qq -e trace=sendmsg,sendto,openat -e signal=none -yy \
		-o "$TMP/trace.$1" "$PLUGIN" <"$TMP/c.json"
}
# sends CMD: netlink send calls; types CMD: the requests in them, by name (strace names the
# types only on sockets of its own namespace: the pod's come as numbers); requests CMD: how many
sends() { grep -c 'NETLINK' "$TMP/trace.$1"; }
types() {
	grep 'NETLINK' "$TMP/trace.$1" | grep -o 'nlmsg_type=[A-Za-z_0-9]*' | sed 's/nlmsg_type=//' |
		sed 's/^0x10$/RTM_NEWLINK/; s/^0x11$/RTM_DELLINK/; s/^0x12$/RTM_GETLINK/; s/^0x13$/RTM_SETLINK/;
		     s/^0x14$/RTM_NEWADDR/; s/^0x15$/RTM_DELADDR/; s/^0x16$/RTM_GETADDR/; s/^0x18$/RTM_NEWROUTE/;
		     s/^0x19$/RTM_DELROUTE/; s/^0x1a$/RTM_GETROUTE/; s/^0x20$/RTM_NEWRULE/; s/^0x21$/RTM_DELRULE/;
		     s/^0x22$/RTM_GETRULE/' | tr '\n' ' '
}
requests() { types "$1" | wc -w; }

PODNS=$(basename "$POD")
table101() { ip -n "$PODNS" route show table 101 | wc -l; }

traced ADD
is "$rc" 0 "ADD exits 0 under strace"
ok "$([ "$(table101)" -ge 1 ] && echo 0 || echo 1)" "ADD: net1's table 101 holds its routes"
like "$out" '"interfaces"' "and gives a result"
echo "# ADD: $(sends ADD) sends, $(requests ADD) requests: $(types ADD)"
ok "$([ "$(requests ADD)" -le "${NL_ADD_MAX:-8}" ] && echo 0 || echo 1)" \
	"ADD makes at most ${NL_ADD_MAX:-8} netlink requests ($(requests ADD): $(types ADD))"
is "$(types ADD | grep -o 'RTM_GETLINK' | wc -l)" 1 "ADD: one GETLINK (the master on the host; net1 comes back as the kernel's echo)"
is "$(types ADD | grep -o 'RTM_NEWLINK' | wc -l)" 1 "ADD: one NEWLINK (net1 made with MTU, MAC and up)"
# the records' UTC stamps need no time zone: strftime's tzset would read it on every exec
is "$(grep -c 'localtime' "$TMP/trace.ADD")" 0 "ADD reads no /etc/localtime"
traced DEL
is "$rc" 0 "DEL exits 0 under strace"
echo "# DEL: $(sends DEL) sends, $(requests DEL) requests: $(types DEL)"
ok "$([ "$(requests DEL)" -le "${NL_DEL_MAX:-4}" ] && echo 0 || echo 1)" \
	"DEL makes at most ${NL_DEL_MAX:-4} netlink requests ($(requests DEL): $(types DEL))"
is "$(types DEL | grep -oE 'RTM_(GET|DEL)ROUTE' | wc -l)" 0 "DEL: no route dump or delete (the table's routes go with the link)"
is "$(table101)" 0 "DEL: table 101 is empty afterwards"
is "$(ip -n "$PODNS" rule show | grep -c 'lookup 101')" 0 "DEL: and its rule gone"

# make bench's exec'd C floor (nl_floor as a plugin) must make these requests and no others, or
# the goal against it would measure something else
rk_add=$(types ADD) rk_del=$(types DEL)
PLUGIN="$BUILD/tests/helpers/nl_floor"
traced ADD
is "$rc:$(types ADD)" "0:$rk_add" "the exec'd C floor's ADD makes rdmak-cni's requests, in order"
traced DEL
is "$rc:$(types DEL)" "0:$rk_del" "the exec'd C floor's DEL makes rdmak-cni's requests, in order"
is "$(table101)" 0 "the floor's DEL leaves table 101 empty too"

# nl_floor's timing mode, as make bench runs it: with a pause of up to 2 s before each DEL
run ip netns exec "$HOST_NS" "$PLUGIN" rdma0 "$POD" 3 -1
is "$rc" 2 "nl_floor: a negative pause is a usage error"
run ip netns exec "$HOST_NS" "$PLUGIN" rdma0 "$POD" 3 2000000
is "$rc" 0 "nl_floor: 3 cycles with a pause before each DEL"
# three pauses of up to 2 s (the same each run, 2.0 s in all) against DELs of about
# 20 ms: a pause counted in the DEL's time would dwarf it
is "$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); p=d["paused_ms"]
print("ok" if p > 500 and 3 * d["del"]["median_ms"] < p / 2 else "paused %s, del %s" % (p, d["del"]))' "$out")" ok \
	"nl_floor: the pauses are reported and not timed in the DEL"
is "$(table101)" 0 "nl_floor: its DELs leave table 101 empty"

done_testing
