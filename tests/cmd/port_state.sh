#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One port state model for every role (issue 11, item 18): a port in ACTIVE_DEFER (the
# kernel's IB_PORT_ACTIVE_DEFER, 5) passes traffic, so the doctor calls it fine, the plugin
# keeps its HCA Healthy, and `list` names it as the kernel and `rdma link` do.
. "$(dirname "$0")/../lib.sh"
EX="$TOP/examples/plugin"

cp -a "$NODES/a100-ib-bond" "$TMP/node"
state=$(readlink -f "$TMP/node/sys/class/infiniband/mlx5_0/ports/1/state")
echo "5: ACTIVE_DEFER" >"$state"
echo "5: LinkUp" >"$(dirname "$state")/phys_state"
echo 1 >"$(readlink -f "$TMP/node/sys/class/net/ibp70s0")/carrier"

run "$RDMAK" doctor --root "$TMP/node" --check port.state --json
printf '%s' "$out" >"$TMP/doctor.json"
is "$(jget "$TMP/doctor.json" "[f['status'] for f in d if f['object'] == 'mlx5_0/1']")" '["ok"]' \
	"doctor: an ACTIVE_DEFER port is ok"

run "$RDMAK" plugin --dry-run --json --root "$TMP/node" --config "$EX/shared-seed003.json"
is "$rc" 0 "plugin --dry-run exits 0"
printf '%s' "$out" >"$TMP/plugin.json"
is "$(jget "$TMP/plugin.json" "[m['healthy'] for r in d['resources'] for m in r['members'] if m['id'] == 'mlx5_0']")" '[true]' \
	"plugin: the same port's HCA is Healthy"

run "$RDMAK" list --root "$TMP/node" --format rdma-link
like "$out" "link mlx5_0/1 .*state ACTIVE_DEFER physical_state LINK_UP" "list --format rdma-link names ACTIVE_DEFER"

done_testing
