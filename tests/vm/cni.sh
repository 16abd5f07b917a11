#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak-cni on a live kernel with soft-RoCE: a macvlan on the rxe netdev in a pod's namespace
# (the pod's address becomes a RoCE GID of the device, which list and the pod's doctor see, and
# goes on DEL); rdmaIsolation refused in shared mode, then, in exclusive mode, refused with the
# kernel's own reason for rxe, nothing changed. rdmak reads the netns mode, it never switches
# it: `rdma system set netns` does, as an operator would.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
ns=vmpod$$
netns=/run/netns/$ns
ip netns add "$ns"

# cniv CMD IFNAME CONF: rdmak-cni as a runtime runs it (environment, config on stdin)
cniv() {
	printf '%s' "$3" >"$TMP/conf.json"
	run env -i PATH="$PATH" CNI_COMMAND="$1" CNI_CONTAINERID="vm$$" CNI_IFNAME="$2" CNI_NETNS="$netns" \
		CNI_PATH="$BUILD/cni:/usr/lib/cni" "$BUILD/cni/rdmak-cni" <"$TMP/conf.json"
}
# switch_mode shared|exclusive: the kernel refuses while another namespace exists, and frees a
# deleted one in a worker: retry for a while
switch_mode() {
	local i
	for i in $(seq 100); do rdma system set netns "$1" 2>/dev/null && return 0; vm_sleep 0.1; done
	return 1
}

# ---- macvlan on va in the pod: its address is a RoCE GID of rxea -----------------------------
mv='{"cniVersion":"1.0.0","name":"roce","type":"rdmak-cni","master":"va","mode":"bridge",
     "ipam":{"type":"static","addresses":[{"address":"10.77.0.50/24"}]}}'
cniv ADD net1 "$mv"
is "$rc" 0 "macvlan ADD on va${err:+: $err}"
like "$out" '"sandbox": *"/run/netns/' "  its result puts net1 in the pod"
like "$(ip -n "$ns" -o addr show net1)" 'inet 10\.77\.0\.50/24' "net1 in the pod holds 10.77.0.50"
vm_wait_gid rxea 10.77.0.50
ok $? "rxea's GID table gains $(vm_gid 10.77.0.50), the pod's address"
idx=$(grep -lx "$(vm_gid 10.77.0.50)" /sys/class/infiniband/rxea/ports/1/gids/*)
idx=${idx##*/}
is "$(</sys/class/infiniband/rxea/ports/1/gid_attrs/ndevs/"$idx")" net1 "  at index $idx, owned by net1 (gid_attrs/ndevs)"
is "$(</sys/class/infiniband/rxea/ports/1/gid_attrs/types/"$idx")" "RoCE v2" "  a RoCE v2 GID"
"$RDMAK" list --json >"$TMP/list.json"
is "$(jget "$TMP/list.json" "[(g['index'], g['type'], g['netdev'], g['ipv4']) for d in d['rdma_devices'] if d['name'] == 'rxea' for g in d['ports'][0]['gids'] if g['gid'] == '$(vm_gid 10.77.0.50)']")" \
	"[[$idx, \"RoCE v2\", \"net1\", true]]" "list --json shows it: index, type, netdev net1, IPv4"
# the pod's own view: ip netns exec mounts the namespace's sysfs, where net1 is the pod's
run ip netns exec "$ns" "$RDMAK" doctor --pod --json --check pod.gids
printf '%s' "$out" >"$TMP/pod.json"
is "$(jget "$TMP/pod.json" "[f['status'] for f in d]")" '["ok"]' "doctor --pod in the pod: pod.gids ok"
like "$(jget "$TMP/pod.json" "d[0]['title']")" "net1" "  naming net1's GID"
cniv DEL net1 "$mv"
is "$rc" 0 "macvlan DEL${err:+: $err}"
vm_wait_gid rxea 10.77.0.50 absent
ok $? "the pod's GID leaves rxea's table"

# ---- rdmaIsolation for rxe ---------------------------------------------------------------------------
ip link add vc type veth peer name vd
ip link set vc up && ip link set vd up
rdma link add rxec type rxe netdev vc
iso='{"cniVersion":"1.0.0","name":"iso","type":"rdmak-cni","device":"vc","rdmaIsolation":true}'
cniv ADD net2 "$iso"
is "$rc" 1 "rdmaIsolation in shared mode: refused"
like "$out" '"code": *102' "  code 102"
like "$out" 'shared mode' "  the subsystem is in shared mode, as rdma system says: $(rdma system | head -1)"
like "$out" 'rdma system set netns exclusive' "  the fix names rdma system set netns exclusive"
cniv DEL net2 "$iso"

ip netns del "$ns"
switch_mode exclusive
ok $? "rdma system set netns exclusive (once no other namespace is left)"
"$RDMAK" list --json >"$TMP/list2.json"
is "$(jget "$TMP/list2.json" "d['kernel']['netns_mode']")" exclusive "list --json: netns_mode exclusive"
printf '%s\n' '{"rdmaNetnsMode":"shared","configList":[{"resourceName":"rxe","rdmaHcaMax":1,"selectors":{"ifNames":["va"]}}]}' \
	>"$TMP/plugin.json"
doctor --check netns.mode --plugin-config "$TMP/plugin.json"
is "$(statuses netns.mode)" fail "doctor: exclusive mode against a plugin config that expects shared fails"
ip netns add "$ns"
cniv ADD net2 "$iso"
is "$rc" 1 "rdmaIsolation of vc in exclusive mode: refused"
like "$out" '"code": *102' "  code 102"
like "$out" 'moving the RDMA device failed.*rxec: Operation not supported' \
	"  the kernel's reason, by name: rxec cannot move (rxe has no disassociate_ucontext)"
ok $([ -e /sys/class/net/vc ] && ip link show vc >/dev/null 2>&1 && echo 0 || echo 1) "  nothing changed: vc is still the host's"
like "$(rdma dev show rxec)" 'rxec' "  and rxec too"
cniv DEL net2 "$iso"
is "$rc" 0 "DEL after the refused ADD succeeds"
ip netns del "$ns"
switch_mode shared
ok $? "rdma system set netns shared again"

rdma link delete rxec
ip link del vc
contract_holds
done_testing
