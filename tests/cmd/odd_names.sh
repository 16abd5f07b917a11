#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A netdev name is bytes, not text: Linux takes any byte but '/', ':' and whitespace. One that
# is not UTF-8 (jansson refuses it) must come out escaped (\xHH), never make list drop its
# device's row, --json drop the netdev, the doctor print an empty title or the plugin's
# dry run drop the member.
. "$(dirname "$0")/../lib.sh"

n=$TMP/node
cp -a "$NODES/v100-ib" "$n"
bad=$(printf 'ib\377x')
t=$(readlink "$n/sys/class/net/ibp94s0f0")
mv "$n/sys/class/net/$(dirname "$t")/ibp94s0f0" "$n/sys/class/net/$(dirname "$t")/$bad"
rm "$n/sys/class/net/ibp94s0f0"
ln -s "$(dirname "$t")/$bad" "$n/sys/class/net/$bad"

run "$RDMAK" list --root "$n"
ok $rc "list exits 0"
like "$out" '^mlx5_0 +1 +ACTIVE .* ib\\xffx \(Up\)' "list keeps mlx5_0's row, the netdev name escaped"
is "$(printf '%s\n' "$out" | grep -c '^mlx5_')" 2 "both devices listed"

"$RDMAK" list --root "$n" --json >"$TMP/l.json"
ok $? "list --json exits 0"
is "$(jget "$TMP/l.json" "sorted(x['name'] for x in d['netdevs'])")" '["enp3s0f0", "enp3s0f1", "ib\\xffx", "ibp94s0f1", "lo"]' \
	"--json keeps every netdev, the odd one escaped"
is "$(jget "$TMP/l.json" "[r['ports'][0]['netdev']['name'] for r in d['rdma_devices'] if r['name']=='mlx5_0'][0]")" 'ib\xffx' \
	"--json: mlx5_0's port names its netdev"
"$PY" -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
	"$TMP/l.json" "$TOP/docs/list.schema.json"
ok $? "and still matches docs/list.schema.json"

run "$RDMAK" doctor --root "$n" --json --check port.ipoib --check netdev.mtu
printf '%s' "$out" >"$TMP/d.json"
is "$(jget "$TMP/d.json" "[f['title'] for f in d if f['object']=='mlx5_0/1'][0]")" \
	'IPoIB ib\xffx carrier 1 follows the port (ACTIVE)' "doctor: the title names the escaped netdev"
is "$(jget "$TMP/d.json" "all(f['title'] for f in d)")" True "doctor: no finding has an empty title"
is "$(jget "$TMP/d.json" "sorted(f['object'] for f in d if f['id']=='netdev.mtu')")" '["ib\\xffx", "ibp94s0f1"]' \
	"doctor: netdev.mtu names both netdevs (none as null)"

printf '{"configList":[{"resourceName":"r","rdmaHcaMax":4,"selectors":{"vendors":["15b3"],"linkTypes":["infiniband"]}}]}' >"$TMP/cfg.json"
"$RDMAK" plugin --dry-run --root "$n" --config "$TMP/cfg.json" --json >"$TMP/p.json"
ok $? "plugin --dry-run exits 0"
is "$(jget "$TMP/p.json" "[m['netdevs'] for m in d['resources'][0]['members']]")" '["ib\\xffx", "ibp94s0f1"]' \
	"plugin --dry-run keeps both members, the netdev escaped"
done_testing
