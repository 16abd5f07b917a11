#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A bond (active-backup) over two veths, with soft-RoCE on the bond: list and doctor see the bond
# as they see it on the sample LAG nodes (tools/nodes: the device's netdev is the bond, its
# slaves and mode from bonding/, bond.lag ok while a slave is up), and follow a failover.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
modprobe bonding max_bonds=0 || echo "Bail out! modprobe bonding failed"
ip link add bond0 type bond mode active-backup miimon 100
for i in 0 1; do
	ip link add "s$i" type veth peer name "p$i"
	ip link set "s$i" master bond0
	ip link set "p$i" up
done
ip link set bond0 up
ip addr add 10.78.0.1/24 dev bond0
rdma link add rxebond type rxe netdev bond0
vm_wait_gid rxebond 10.78.0.1
ok $? "rxebond on bond0: its IPv4 GID appears"

run "$RDMAK" list
like "$out" '^rxebond +1 +ACTIVE +LinkUp .* +bond0 \(Up\) .* LAG$' "list: rxebond's netdev is bond0 (Up), KIND LAG as on the sample LAG nodes"
"$RDMAK" list --json >"$TMP/list.json"
checks "$TMP/list.json" <<'PY'
m = load(sys.argv[1])
d = next(x for x in m["rdma_devices"] if x["name"] == "rxebond")
nd = {n["name"]: n for n in m["netdevs"]}
b = nd["bond0"]
check(d["ports"][0]["netdev"]["name"] == "bond0", "--json: the port's netdev is bond0", d["ports"][0]["netdev"])
check(b["kind"] == "bond", "--json: bond0 is a bond", b)
mode = rd("/sys/class/net/bond0/bonding/mode").split()
check([b["bond"]["mode"], str(b["bond"]["mode_id"])] == mode, f"--json: mode {mode} as bonding/mode", b["bond"])
check(b["bond"]["slaves"] == rd("/sys/class/net/bond0/bonding/slaves").split(), "--json: the slaves as bonding/slaves", b["bond"])
check(b["bond"]["active_slave"] == rd("/sys/class/net/bond0/bonding/active_slave"), "--json: the active slave as bonding/active_slave", b["bond"])
check(all(nd[s]["master"] == "bond0" for s in ("s0", "s1")), "--json: each slave's master is bond0", [nd[s]["master"] for s in ("s0", "s1")])
check(all(g["netdev"] == "bond0" for g in d["ports"][0]["gids"]), "--json: every GID of rxebond is on bond0 (gid_attrs/ndevs)", d["ports"][0]["gids"])
# as mlx5_bond_0 on the sample LAG nodes: the device whose GIDs the bond owns is the bond's
check(d["lag_bond"] == "bond0", "--json: lag_bond bond0, as a RoCE LAG device on the sample LAG nodes", d["lag_bond"])
PY

doctor --check bond.lag --check netdev.mtu --check port.state
like "$(titles bond.lag bond0)" '^active-backup bond, 2 slaves up' "doctor bond.lag: an active-backup bond, 2 slaves up"
is "$(statuses bond.lag bond0)" ok "doctor bond.lag: ok"
is "$(statuses netdev.mtu bond0)" ok "doctor netdev.mtu: bond0 and its slaves agree"
is "$(statuses port.state rxebond/1)" ok "doctor port.state: rxebond/1 ok"

# ---- failover: the active slave loses its carrier --------------------------------------------------
act=$(</sys/class/net/bond0/bonding/active_slave)
ip link set "p${act#s}" down
for i in $(seq 100); do [ "$(</sys/class/net/bond0/bonding/active_slave)" != "$act" ] && break; vm_sleep 0.1; done
now=$(</sys/class/net/bond0/bonding/active_slave)
ok $([ "$now" != "$act" ] && echo 0 || echo 1) "the bond fails over from $act to $now"
"$RDMAK" list --json >"$TMP/list2.json"
is "$(jget "$TMP/list2.json" '[n["bond"]["active_slave"] for n in d["netdevs"] if n["name"] == "bond0"][0]')" "$now" \
	"list --json: the active slave is now $now"
doctor --check bond.lag --check port.state
is "$(statuses bond.lag bond0)" warn "doctor bond.lag: warn, a slave without carrier"
like "$(titles bond.lag bond0)" '^1 of 2 slaves of bond0 \(active-backup\) have carrier' "  1 of 2 slaves with carrier"
is "$(statuses port.state rxebond/1)" ok "doctor port.state: rxebond/1 still ok (the bond carries on)"
ip link set "p${act#s}" up

rdma link delete rxebond
ip link del bond0
ip link del s0
ip link del s1
contract_holds
done_testing
