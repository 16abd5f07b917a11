#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` on trees it must serve whatever they hold: what it can read is served, what it
# cannot is left out and counted in rdmak_exporter_read_errors_total{file}, and Prometheus'
# parser (promtool check metrics) takes every answer. A netdev whose name is not UTF-8 (Linux
# takes any byte but '/', ':' and whitespace) comes out escaped as `rdmak list` writes it; a port
# numbered 1000 (the kernel numbers ports with a u32 since 5.13) is a port like any other.
# Hostile trees, which no kernel makes but a --root or a broken sysfs could hand over: a symbolic
# link loop in class/infiniband, a FIFO in place of a port's state, and 10 000 ports (more
# folders than the exporter may hold descriptors for).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-exporter.sh"
PROMTOOL=$(command -v promtool || true)

# promtool_ok FILE WHAT
promtool_ok() {
	if [ -z "$PROMTOOL" ]; then
		skip "promtool not installed (tools/install-deps.sh)" "$2: promtool check metrics passes"
	else
		run "$PROMTOOL" check metrics <"$1"
		is "$rc" 0 "$2: promtool check metrics passes ($out$err)"
	fi
}

# ---- a netdev name that is not UTF-8 (as tests/cmd/odd_names.sh makes it) ----
n=$TMP/odd
cp -a "$NODES/v100-ib" "$n"
bad=$(printf 'ib\377x')
t=$(readlink "$n/sys/class/net/ibp94s0f0")
mv "$n/sys/class/net/$(dirname "$t")/ibp94s0f0" "$n/sys/class/net/$(dirname "$t")/$bad"
rm "$n/sys/class/net/ibp94s0f0"
ln -s "$(dirname "$t")/$bad" "$n/sys/class/net/$bad"
run "$RDMAK" exporter --once --root "$n" --no-pod-resources
is "$rc" 0 "odd netdev name: exit 0"
printf '%s\n' "$out" >"$TMP/odd.txt"
like "$out" 'rdmak_port_info\{device="mlx5_0",port="1",link_layer="InfiniBand",netdev="ib\\\\xffx",' \
	'rdmak_port_info names the netdev escaped as `rdmak list` does (ib\xffx, its backslash escaped)'
like "$("$RDMAK" list --root "$n")" 'ib\\xffx' "... which is how rdmak list names it"
promtool_ok "$TMP/odd.txt" "odd netdev name"

# ---- a symbolic link loop in class/infiniband (hostile) ----
n=$TMP/loop
cp -a "$NODES/b2-cx6dx-roce" "$n"
ln -s loop1 "$n/sys/class/infiniband/loop2"
ln -s loop2 "$n/sys/class/infiniband/loop1"
run "$RDMAK" exporter --once --root "$n" --no-pod-resources
is "$rc" 0 "symbolic link loop in class/infiniband: exit 0 ($err)"
printf '%s\n' "$out" >"$TMP/loop.txt"
like "$out" 'node_infiniband_state_id\{device="mlx5_0",port="1"\} 4' "... the devices that can be read are served"
like "$out" 'node_infiniband_state_id\{device="mlx5_1",port="1"\}' "... both of them"
like "$out" 'rdmak_exporter_read_errors_total\{file="class/infiniband/loop1"\} 1' "... the loop is counted"
like "$out" 'rdmak_exporter_read_errors_total\{file="class/infiniband/loop2"\} 1' "... both of its links"
promtool_ok "$TMP/loop.txt" "symbolic link loop"

# ---- a FIFO in place of a port's state (hostile: opening it for reading would wait for a writer) ----
n=$TMP/fifo
cp -a "$NODES/b2-cx6dx-roce" "$n"
d=$(readlink -f "$n/sys/class/infiniband/mlx5_0")
rm "$d/ports/1/state" && mkfifo "$d/ports/1/state"
# the limit only ends the test if an open waits for ever; the assertions are on the outcome
run timeout -k 5 120 "$RDMAK" exporter --once --root "$n" --no-pod-resources
is "$rc" 0 "a FIFO as a port's state: exit 0 ($err)"
printf '%s\n' "$out" >"$TMP/fifo.txt"
unlike "$out" 'node_infiniband_state_id\{device="mlx5_0",port="1"\}' "... that port is left out"
like "$out" 'node_infiniband_state_id\{device="mlx5_1",port="1"\}' "... the other device's port is served"
like "$out" 'node_infiniband_info\{device="mlx5_0",' "... and the device itself"
like "$out" 'rdmak_exporter_read_errors_total\{file="class/infiniband/mlx5_0/ports/1/state"\} 1' "... the FIFO is counted by its path"
promtool_ok "$TMP/fifo.txt" "FIFO as a port's state"
start_exporter --root "$n" --no-pod-resources
ok $? "... and the exporter serves it"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics")" 200 "... a scrape is answered 200"
stop_exporter

# ---- port 1000 ----
# (the kernel numbers a device's ports from 1 with none missing, so port 1000 comes with 2 to
# 999: those are bare, a state and no counters, and port 1000 a copy of port 1)
n=$TMP/p1000
cp -a "$NODES/b2-cx6dx-roce" "$n"
d=$(readlink -f "$n/sys/class/infiniband/mlx5_0")
mkdir -p "$d"/ports/{2..999}/{counters,hw_counters}
for k in {2..999}; do
	printf '1: DOWN\n' >"$d/ports/$k/state"
	printf '3: Disabled\n' >"$d/ports/$k/phys_state"
	printf 'Ethernet\n' >"$d/ports/$k/link_layer"
done
cp -a "$d/ports/1" "$d/ports/1000"
run "$RDMAK" exporter --once --root "$n" --no-pod-resources
is "$rc" 0 "a port folder 1000: exit 0 ($err)"
printf '%s\n' "$out" >"$TMP/p1000.txt"
like "$out" 'node_infiniband_state_id\{device="mlx5_0",port="1000"\} 4' "... port 1000 is served"
like "$out" 'node_infiniband_port_data_received_bytes_total\{device="mlx5_0",port="1000"\}' "... with its counters"
unlike "$out" 'rdmak_exporter_read_errors_total\{' "... and nothing is counted as unreadable"
promtool_ok "$TMP/p1000.txt" "port 1000"

# ---- 10 000 ports (hostile: more folders than descriptors) ----
# 40 devices of 250 ports each (the first two the node's own, the others made beside mlx5_0
# under its PCI function), every port with its state files, two counters and a hw_counters file:
# three folders a port, 30 000 in all, past the 16384 descriptors allowed here
n=$TMP/big
cp -a "$NODES/b2-cx6dx-roce" "$n"
"$PY" - "$n" <<'EOF'
import os, shutil, sys
root = sys.argv[1] + "/sys/class/infiniband"
first = os.path.realpath(os.path.join(root, "mlx5_0"))
one = os.path.join(first, "ports", "1")
keep = ["state", "phys_state", "link_layer", "rate", "lid", "sm_lid", "lid_mask_count", "sm_sl", "cap_mask"]
for k in range(2, 40):
    d = os.path.join(os.path.dirname(first), "mlx5_%d" % k)
    os.makedirs(os.path.join(d, "ports"))
    for f in os.listdir(first):
        if os.path.isfile(os.path.join(first, f)) and not os.path.islink(os.path.join(first, f)):
            shutil.copyfile(os.path.join(first, f), os.path.join(d, f))
    os.symlink(os.path.relpath(d, root), os.path.join(root, "mlx5_%d" % k))
for k in range(40):
    d = os.path.realpath(os.path.join(root, "mlx5_%d" % k, "ports"))
    for p in range(1, 251):
        pd = os.path.join(d, str(p))
        if os.path.exists(pd):
            continue
        os.makedirs(pd + "/counters")
        os.makedirs(pd + "/hw_counters")
        os.makedirs(pd + "/gids")
        for f in keep:
            if os.path.exists(os.path.join(one, f)):
                shutil.copyfile(os.path.join(one, f), os.path.join(pd, f))
        shutil.copyfile(os.path.join(one, "gids/0"), os.path.join(pd, "gids/0"))
        for f in ("port_rcv_data", "port_xmit_data"):
            with open(os.path.join(pd, "counters", f), "w") as fh:
                fh.write("%d\n" % (k * 1000 + p))
        with open(os.path.join(pd, "hw_counters", "np_cnp_sent"), "w") as fh:
            fh.write("%d\n" % p)
EOF
ok $? "10 000 ports made"
run bash -c 'ulimit -n 16384 && exec "$@"' _ "$RDMAK" exporter --once --root "$n" --no-pod-resources
is "$rc" 0 "10 000 ports with 16384 descriptors: exit 0 ($(printf '%s' "$err" | tail -2))"
printf '%s\n' "$out" >"$TMP/big.txt"
is "$(grep -c '^node_infiniband_state_id{' "$TMP/big.txt")" 10000 "... every port's state is served"
is "$(grep -c '^node_infiniband_port_data_received_bytes_total{' "$TMP/big.txt")" 10000 "... and every port's counters"
like "$out" 'node_infiniband_port_data_received_bytes_total\{device="mlx5_39",port="250"\} 157000' "... the last port's read right (4 x 39250)"
like "$out" 'rdmak_port_hw_np_cnp_sent_total\{device="mlx5_39",port="249"\} 249' "... and its hw_counters"
unlike "$out" 'rdmak_exporter_read_errors_total\{' "... nothing unreadable"
promtool_ok "$TMP/big.txt" "10 000 ports"
# served: the scrapes open the folders the topology does not hold, batch by batch, and close them
ulimit -n 16384
start_exporter --root "$n" --no-pod-resources
ok $? "10 000 ports: the exporter serves"
for k in 1 2; do
	curl -s -o "$TMP/b$k.txt" -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics" >"$TMP/b$k.code"
	is "$(cat "$TMP/b$k.code") $(grep -c '^node_infiniband_port_data_received_bytes_total{' "$TMP/b$k.txt")" "200 10000" \
		"scrape $k: 200, every port's counters"
done
fds=$(ls "/proc/$EPID/fd" | wc -l)
ok "$([ "$fds" -le 8192 ]; echo $?)" "... the topology holds half of the descriptors past its reserve at most, leaving room for connections ($fds of 16384 open)"
stop_exporter

done_testing
