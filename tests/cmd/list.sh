#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak list on the sample nodes: the facts each node was built to show, the output formats,
# the JSON schema, and the errors.
. "$(dirname "$0")/../lib.sh"

A100=$NODES/a100-ib-bond

run "$RDMAK" list --root "$A100"
ok $rc "list a100-ib-bond exits 0"
like "$out" '^IBDEV +PORT +STATE +PHYS +RATE +LINK +NETDEV +PCI +NUMA +NEAREST GPU +KIND' "table header"
like "$out" 'mlx5_0 +1 +DOWN +Disabled +10 Gb/s 4X SDR +InfiniBand' "mlx5_0 port is Down/Disabled at 10 Gb/s (ibstat: Rate 10)"
like "$out" 'mlx5_1 +1 +ACTIVE +LinkUp +200 Gb/s 4X HDR +InfiniBand' "mlx5_1 port is Active at 200 Gb/s HDR"
like "$out" 'mlx5_bond_0 +1 +ACTIVE +LinkUp +10 Gb/s 1X QDR +Ethernet +bond0 \(Up\) .* LAG$' "mlx5_bond_0 is a RoCE LAG on bond0 (Up)"
like "$out" 'GPU[0-9]' "nearest GPU column is filled"
is "$err" "" "nothing on stderr"

run "$RDMAK" list --root "$A100" --format ibdev2netdev
ok $rc "ibdev2netdev format exits 0"
is "$(echo "$out" | wc -l)" 3 "three ports, as the seed's ibdev2netdev printed"
like "$out" '^mlx5_0 port 1 ==> [a-z0-9]+ \(Down\)$' "mlx5_0's IPoIB netdev has no carrier"
like "$out" 'mlx5_1 port 1 ==> [a-z0-9]+ \(Up\)' "mlx5_1's IPoIB netdev is Up"
like "$out" 'mlx5_bond_0 port 1 ==> bond0 \(Up\)' "ibdev2netdev names the bond master for RoCE LAG"

# A port with no netdev: mlnx-tools' ibdev2netdev prints no line for it (scripts count lines)
cp -a "$NODES/v100-ib" "$TMP/nonetdev"
nd=$(readlink -f "$TMP/nonetdev/sys/class/net/ibp94s0f0")
rm "$TMP/nonetdev/sys/class/net/ibp94s0f0" && rm -rf "$nd"
run "$RDMAK" list --root "$TMP/nonetdev" --format ibdev2netdev
ok $rc "ibdev2netdev format with a netdev-less port exits 0"
is "$out" "mlx5_1 port 1 ==> ibp94s0f1 (Up)" "a port without a netdev prints no line, as ibdev2netdev does"
run "$RDMAK" list --root "$TMP/nonetdev"
like "$out" '^mlx5_0 +1 +ACTIVE .* InfiniBand +- +0000:5e:00.0' "the table still shows that port, netdev '-'"

run "$RDMAK" list --root "$A100" --format rdma-link
like "$out" '^link mlx5_bond_0/1 state ACTIVE physical_state LINK_UP netdev [a-z0-9]+ $' "rdma link names a LAG slave, not bond0"
unlike "$out" 'netdev bond0' "rdma link never names the bond master"
like "$out" 'link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP' "rdma link IB port fields"

run "$RDMAK" list --root "$A100" --json
ok $rc "--json exits 0"
echo "$out" > "$TMP/a100.json"
is "$(jget "$TMP/a100.json" "[d['netdevs'][i]['bond']['mode'] for i in range(len(d['netdevs'])) if d['netdevs'][i]['name']=='bond0'][0]")" "active-backup" "bond0 is active-backup"
is "$(jget "$TMP/a100.json" "sorted(p['rdma_devices'][0] for p in d['pci'] if p['rdma_devices'] and p['device']=='0x101b')")" '["mlx5_0", "mlx5_1"]' "both ConnectX-6 (15b3:101b) functions carry an RDMA device"
is "$(jget "$TMP/a100.json" "[r['hca_type'] for r in d['rdma_devices'] if r['name']=='mlx5_bond_0'][0]")" "MT4117" "the LAG device is a ConnectX-4 Lx"
is "$(jget "$TMP/a100.json" "len(d['gpus'])")" 8 "8 A100s"
is "$(jget "$TMP/a100.json" "d['kernel']['modules']['nvidia_peermem']")" "loaded" "nvidia_peermem loaded"
is "$(jget "$TMP/a100.json" "d['kernel']['netns_mode']")" "shared" "RDMA netns mode shared"
is "$(jget "$TMP/a100.json" "[b['bond']['mode'] for b in d['netdevs'] if b['bond'] and b['type']==32][0]")" "active-backup" "the IPoIB netdevs are in an active-backup bond"
is "$(jget "$TMP/a100.json" "[b['bond']['active_slave']==[p['ports'][0]['netdev']['name'] for p in d['rdma_devices'] if p['name']=='mlx5_1'][0] for b in d['netdevs'] if b['bond'] and b['type']==32][0]")" "True" "the IPoIB bond's active slave is mlx5_1's netdev"
is "$(jget "$TMP/a100.json" "sorted(set(v for g in d['gpus'] for v in g['relations'].values()) & {'PIX','PXB'}) != []")" "True" "some GPU shares a PCIe switch with an HCA"
is "$(jget "$TMP/a100.json" "all(c['usable'] for c in d['char_devices'])")" "True" "every char device node is present with the announced major:minor"

# Every sample node: exit 0, valid against the documented schema, table and JSON agree on ports.
for node in "$NODES"/*/; do
	name=$(basename "$node")
	"$RDMAK" list --root "$node" --json > "$TMP/$name.json" 2>"$TMP/err"
	ok $? "list --json on $name"
	"$PY" -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
		"$TMP/$name.json" "$TOP/docs/list.schema.json" 2>"$TMP/schema-err"
	ok $? "$name matches docs/list.schema.json"
	[ -s "$TMP/schema-err" ] && head -5 "$TMP/schema-err" | sed 's/^/#   /'
	ports=$(jget "$TMP/$name.json" "sum(len(r['ports']) for r in d['rdma_devices'])")
	rows=$("$RDMAK" list --root "$node" | tail -n +2 | grep -vc '^no RDMA')
	[ "$ports" = 0 ] && rows=0
	is "$rows" "$ports" "$name: one table row per port"
done

run "$RDMAK" list --root "$NODES/no-rdma"
ok $rc "a node without RDMA exits 0"
like "$out" '^no RDMA devices on this node' "and says so"
run "$RDMAK" list --root "$NODES/no-rdma" --json
is "$(echo "$out" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["rdma_present"], len(d["rdma_devices"]))')" "False 0" "JSON says no RDMA"

run "$RDMAK" list --root "$TMP/does-not-exist"
is "$rc" 1 "missing root exits 1"
like "$err" "$TMP/does-not-exist" "and names the path"
mkdir "$TMP/nosys"
run "$RDMAK" list --root "$TMP/nosys"
is "$rc" 1 "a root without sys/ exits 1"
like "$err" "cannot open sysfs root $TMP/nosys/sys: No such file" "and names DIR/sys, the path really missing"

# Options that would be ignored are refused (exit 2), not accepted silently
run "$RDMAK" list --root "$A100" --pkeys
is "$rc" 2 "--pkeys without --json: exit 2"
like "$err" '--pkeys: pkey tables are shown only with --json' "and says why"
is "$out" "" "and prints nothing"
run "$RDMAK" list --root "$A100" --json --format ibstat
is "$rc" 2 "--json --format ibstat: exit 2"
like "$err" '--json and --format ibstat: choose one' "and says so"
run "$RDMAK" list --root "$A100" --json --format json --pkeys
is "$rc" 0 "--json --format json --pkeys agree: exit 0"

# A required attribute that cannot be read (a directory where the kernel has a file reads EISDIR)
cp -a "$NODES/v100-ib" "$TMP/broken"
st=$(readlink -f "$TMP/broken/sys/class/infiniband/mlx5_0")/ports/1/state
rm "$st" && mkdir "$st"
run "$RDMAK" list --root "$TMP/broken"
is "$rc" 1 "an unreadable port state exits 1"
like "$err" 'class/infiniband/mlx5_0/ports/1/state: Is a directory' "and names the file and the error"
like "$out" '^mlx5_0 +1 +UNKNOWN ' "and prints the node with that state unknown (tests/cmd/port_files.sh)"

# Devices and netdevs come and go while the model reads (hot-unplug, a pod's veth being
# deleted): an entry listed but gone by the time it is opened is left out, not a failure.
# (A dangling class link stands in for "listed, then removed before the open".)
cp -a "$NODES/v100-ib" "$TMP/churn"
ln -s ../../devices/pci0000:99/0000:99:00.0/infiniband/mlx5_9 "$TMP/churn/sys/class/infiniband/mlx5_9"
ln -s ../../devices/virtual/net/veth1234 "$TMP/churn/sys/class/net/veth1234"
run "$RDMAK" list --root "$TMP/churn" --format ibdev2netdev
ok $rc "a device and a netdev that vanished during the scan do not fail the load"
is "$out" "$("$RDMAK" list --root "$NODES/v100-ib" --format ibdev2netdev)" "and the rest of the node reads as before"

# Ports and GID tables are read up to the first number missing, from the kernel's first port
# (rdma_start_port): 1 on a CA, 0 on a switch, whose only port is port 0
cp -a "$NODES/v100-ib" "$TMP/switch"
sw=$(readlink -f "$TMP/switch/sys/class/infiniband/mlx5_1")
mv "$sw/ports/1" "$sw/ports/0" && echo "2: switch" >"$sw/node_type"
run "$RDMAK" list --json --root "$TMP/switch"
is "$rc" 0 "a switch's tree reads: exit 0"
is "$(jget "$TMP/out" "[(x['name'], [(p['port'], p['gid_tbl_len']) for p in x['ports']]) for x in d['rdma_devices']]")" \
	"$(jget <("$RDMAK" list --json --root "$NODES/v100-ib") "[(x['name'], [(p['port'] - (x['name'] == 'mlx5_1'), p['gid_tbl_len']) for p in x['ports']]) for x in d['rdma_devices']]")" \
	"its port 0 is read as the CA's port 1 was, GID table and all; the CA beside it as before"

run "$RDMAK" list --format yaml --root "$A100"
is "$rc" 2 "unknown format exits 2"
like "$err" "unknown format 'yaml'" "and names it"
run "$RDMAK" list --bogus
is "$rc" 2 "unknown option exits 2"
run "$RDMAK" list --help
ok $rc "--help exits 0"
like "$out" '--format FMT' "--help documents --format"
run "$RDMAK" nosuchrole
is "$rc" 2 "unknown role exits 2"
done_testing
