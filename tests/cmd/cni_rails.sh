#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Seed 004's pod: a default interface eth0 keeping main and its default route, and eight RDMA
# rails net1..net8 (macvlan on rdma0..rdma7, 172.16.11-18.10/24, each with its gateway), each
# with its own table (101..108) and a rule "from <address> lookup <table>"; main keeps the eight
# connected routes. Each address reaches its own rail's gateway, and asks the kernel to go out
# its own interface. Then two rails in one subnet: arp_ignore=1, arp_announce=2, rp_filter=2 on
# both, and none of it on a rail alone in its subnet. DEL of all leaves the pod as it was.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "eight rails in one pod"
	done_testing
	exit
fi
cni_topology 8
POD=$(cni_pod rails)
P=$(pns "$POD")
# the pod's default network, as calico's eth0: a veth to the host with the default route
ip -n "$HOST_NS" link add calipod type veth peer name eth0 netns "$P"
ip -n "$P" addr add 10.233.119.164/32 dev eth0
ip -n "$P" link set eth0 up
ip -n "$P" route add 169.254.1.1 dev eth0 scope link
ip -n "$P" route add default via 169.254.1.1 dev eth0

conf() { # conf RAIL [ADDRESS]: rail K's macvlan with a static address
	local k=$1 a=${2:-172.16.$((11 + $1)).10/24} gw=172.16.$((11 + $1)).254
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"rail$k\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\",\"master\":\"rdma$k\",\"stateDir\":\"$TMP/state\",\"ipam\":{\"type\":\"static\",\"addresses\":[{\"address\":\"$a\",\"gateway\":\"${3:-$gw}\"}]}}"
}

before=$(snap_all "$POD")
bad=0
for k in 0 1 2 3 4 5 6 7; do
	cni ADD rails "net$((k + 1))" "$POD" "$(conf "$k")"
	[ "$rc" -eq 0 ] || { bad=$((bad + 1)); echo "#   net$((k + 1)): $out"; }
done
is "$bad" 0 "eight ADDs, net1..net8"
is "$(ip -n "$P" -4 rule show | grep -cE '^30000:	from 172\.16\.1([1-8])\.10 lookup 10\1$')" 8 \
	"eight rules, from 172.16.1K.10 lookup 10K, at priority 30000"
tables_ok=0
for k in 1 2 3 4 5 6 7 8; do
	t=$(ip -n "$P" -4 route show table $((100 + k)) | sort | tr '\n' '|')
	[ "$t" = "172.16.1$k.0/24 dev net$k proto kernel scope link src 172.16.1$k.10 |default via 172.16.1$k.254 dev net$k proto static |" ] &&
		tables_ok=$((tables_ok + 1)) || echo "#   table $((100 + k)): $t"
done
is "$tables_ok" 8 "tables 101..108: each rail's subnet and its default via its own gateway"
is "$(ip -n "$P" -4 route show table main | grep -c '^default')" 1 "main has one default route"
like "$(ip -n "$P" -4 route show table main)" "^default via 169.254.1.1 dev eth0" "and it is eth0's"
is "$(ip -n "$P" -4 route show table main | grep -cE '^172\.16\.1[1-8]\.0/24 dev net[1-8] proto kernel scope link src 172\.16\.1[1-8]\.10')" 8 \
	"main keeps the eight connected routes"
out_ok=0
for k in 1 2 3 4 5 6 7 8; do
	ip netns exec "$P" ip route get 10.0.0.1 from "172.16.1$k.10" | grep -q "via 172.16.1$k.254 dev net$k table 10$k" && out_ok=$((out_ok + 1))
done
is "$out_ok" 8 "traffic from each rail's address leaves by its own rail"
like "$(ip netns exec "$P" ip route get 10.0.0.1)" "via 169.254.1.1 dev eth0" "traffic without a rail's source keeps eth0"
ping_ok=0
for k in 1 2 3 4 5 6 7 8; do
	ip netns exec "$P" ping -q -c1 -w5 -I "172.16.1$k.10" "172.16.1$k.254" >/dev/null 2>&1 && ping_ok=$((ping_ok + 1))
done
is "$ping_ok" 8 "each address reaches its rail's gateway"
is "$(ip netns exec "$P" sysctl -n net.ipv4.conf.net1.arp_ignore net.ipv4.conf.net1.arp_announce | tr '\n' ' ')" "0 0 " \
	"rails alone in their subnets: no ARP settings"
for k in 1 2 3 4 5 6 7 8; do
	cni DEL rails "net$k" "$POD" "$(conf $((k - 1)))"
done
is "$(snap_all "$POD")" "$before" "eight DELs leave the pod (eth0 and its default untouched) and the host as before"

# --- two rails in one subnet ------------------------------------------------------------------
C1=$(conf 0 172.16.11.21/24)
C2=$(conf 1 172.16.11.22/24 172.16.11.254 | sed 's/"master":"rdma1"/"master":"rdma0"/')
cni ADD same net1 "$POD" "$C1"
is "$rc" 0 "first rail in 172.16.11.0/24"
R1=$out
is "$(ip netns exec "$P" sysctl -n net.ipv4.conf.net1.arp_ignore)" 0 "alone: arp_ignore left as it was"
cni ADD same net2 "$POD" "$C2"
is "$rc" 0 "second rail in the same subnet"
for i in net1 net2; do
	is "$(ip netns exec "$P" sysctl -n "net.ipv4.conf.$i.arp_ignore" "net.ipv4.conf.$i.arp_announce" "net.ipv4.conf.$i.rp_filter" | tr '\n' ' ')" \
		"1 2 2 " "$i: arp_ignore=1 arp_announce=2 rp_filter=2"
done
is "$(ip netns exec "$P" sysctl -n net.ipv4.conf.eth0.arp_ignore)" 0 "eth0 (another subnet) untouched"
like "$(ip netns exec "$P" ip route get 10.0.0.1 from 172.16.11.22)" "dev net2 table 102" "the second address leaves by net2"
like "$(ip netns exec "$P" ip route get 10.0.0.1 from 172.16.11.21)" "dev net1 table 101" "the first by net1"
cni CHECK same net1 "$POD" "$(prev_conf "$C1" "$R1")"
is "$rc" 0 "CHECK of the first rail, now sharing its subnet"
ip netns exec "$P" sysctl -qw net.ipv4.conf.net1.arp_ignore=0
cni CHECK same net1 "$POD" "$(prev_conf "$C1" "$R1")"
like "$(jout 'd["details"]')" "net1 shares a subnet with another interface but arp_ignore is 0, not 1" "CHECK names the setting that differs"
cni DEL same net2 "$POD" "$C2"
cni DEL same net1 "$POD" "$C1"
is "$(snap_all "$POD")" "$before" "both DELs leave the pod as before"

done_testing
