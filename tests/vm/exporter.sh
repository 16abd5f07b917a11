#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak exporter on a live soft-RoCE node: every counter `rdma statistic show` lists and every
# hw_counters file is served with the kernel's value; served while perftest runs, the packet
# counters rise; per-QP counter objects, which rxe does not bind, are said so by the kernel's
# own tools (its answer to rdma statistic qp set, or an empty rdma statistic qp show).
. "$TOP/tests/vm/harness/lib.sh"
vm_node

"$RDMAK" exporter --listen 127.0.0.1:0 --no-pod-resources --refresh 3600 2>"$TMP/exporter.log" &
exp=$!
for i in $(seq 100); do
	url=$(sed -n 's|.*listening on \(http://[^ ]*\) .*|\1/metrics|p' "$TMP/exporter.log")
	[ -n "$url" ] && break
	vm_sleep 0.1
done
like "$url" '^http://127.0.0.1:[0-9]+/metrics$' "the exporter listens on a port of its choice"
scrape() { curl -sf "$url" >"$TMP/$1"; }

# ---- idle: the kernel's counters, by name and value --------------------------------------------------
scrape idle.prom
ok $? "a scrape answers"
rdma -j statistic show link rxea/1 >"$TMP/rdma.json"
ls /sys/class/infiniband/rxea/ports/1/hw_counters >"$TMP/files"
checks "$TMP/idle.prom" "$TMP/rdma.json" "$TMP/files" <<'PY'
prom = open(sys.argv[1]).read(); st = load(sys.argv[2])[0]; files = open(sys.argv[3]).read().split()
served = {m[0]: int(m[1]) for m in re.findall(r'^rdmak_port_hw_(\w+)_total\{device="rxea",port="1"\} (\d+)$', prom, re.M)}
names = [k for k in st if k not in ("ifname", "ifindex", "port")]
check(sorted(set(names) - set(served)) == [], f"each of the {len(names)} counters rdma statistic show lists is served",
      sorted(set(names) - set(served)))
check(all(served.get(k) == st[k] for k in names), "with the value rdma statistic show reads (idle port)",
      {k: (served.get(k), st[k]) for k in names if served.get(k) != st[k]})
# lifespan is the kernel's caching interval for these files (ms), a setting, not a counter
check(sorted(served) == sorted(f for f in files if f != "lifespan"), "every hw_counters file but lifespan is served, nothing else",
      f"served {sorted(served)}\nfiles {files}")
check(re.search(r'^node_infiniband_state_id\{device="rxea",port="1"\} 4$', prom, re.M) is not None, "node_infiniband_state_id 4 (ACTIVE)")
check(re.search(r'^rdmak_exporter_rdma_netlink_errors_total 0$', prom, re.M) is not None, "RDMA netlink: no failed request")
ib = "/sys/class/infiniband"
hw_ports = sum(os.path.isdir(f"{ib}/{d}/ports/{p}/hw_counters") for d in os.listdir(ib) for p in os.listdir(f"{ib}/{d}/ports"))
check(re.search(rf'^rdmak_exporter_hw_counters_netlink_ports {hw_ports}$', prom, re.M) is not None,
      f"the hw_counters of each of the {hw_ports} ports came through one RDMA netlink request",
      re.findall(r'^rdmak_exporter_hw_counters_netlink_ports .*$', prom, re.M))
check(re.search(r'^rdmak_rdma_counter_', prom, re.M) is None, "no counter object series while the kernel has none")
PY

# ---- per-QP counter objects: auto mode binds each new RC QP to a counter of its own --------------
kernel_says rdma statistic qp set link rxea/1 auto type on
auto_rc=$rc auto_why=$why

# ---- while perftest runs -------------------------------------------------------------------------------
ib_write_bw -d rxea -x 1 -D 1 --run_infinitely >"$TMP/srv.log" 2>&1 &
srv=$!
for i in $(seq 100); do ss -ltn | grep -q ':18515 ' && break; vm_sleep 0.1; done
ib_write_bw -d rxea -x 1 -D 1 --run_infinitely 10.77.0.1 >"$TMP/cli.log" 2>&1 &
cli=$!
# the counters rise while it runs: scrape until two scrapes a second apart differ (bounded)
rose=no
scrape a.prom
for i in $(seq 60); do
	vm_sleep 1
	kill -0 "$cli" 2>/dev/null || break
	scrape b.prom
	a=$(sed -n 's/^rdmak_port_hw_sent_pkts_total{device="rxea",port="1"} //p' "$TMP/a.prom")
	b=$(sed -n 's/^rdmak_port_hw_sent_pkts_total{device="rxea",port="1"} //p' "$TMP/b.prom")
	if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]; then rose=yes; break; fi
	mv "$TMP/b.prom" "$TMP/a.prom"
done
# (the loop scrapes only while the client runs: both scrapes saw it running)
is "$rose" yes "served while ib_write_bw runs, sent_pkts rises between two scrapes ($a, then $b)"
rdma -j statistic qp show link rxea/1 >"$TMP/qp.json"
if [ "$auto_rc" -ne 0 ]; then
	like "$auto_why" 'Operation not supported' "rdma statistic qp set link rxea/1 auto type on: rxe refuses: $auto_why"
	skip "rxe: the kernel answers '$auto_why' to rdma statistic qp set link rxea/1 auto type on" \
		"rdmak_rdma_counter_* series of the counter objects bound to perftest's QPs"
elif [ "$(<"$TMP/qp.json")" = "[]" ]; then
	ok 0 "rdma statistic qp set link rxea/1 auto type on: accepted"
	skip "rxe: auto mode accepted, but rdma statistic qp show lists no counter object while ib_write_bw runs (rxe binds no QP to a counter)" \
		"rdmak_rdma_counter_* series of the counter objects bound to perftest's QPs"
	unlike "$(<"$TMP/b.prom")" '^rdmak_rdma_counter_' "  and the exporter serves none"
else
	checks "$TMP/qp.json" "$TMP/b.prom" <<'PY'
qp = load(sys.argv[1]); prom = open(sys.argv[2]).read()
ids = sorted({str(c.get("cntn")) for c in qp})
served = sorted(set(re.findall(r'^rdmak_rdma_counter_info\{device="rxea",port="1",counter_id="(\d+)"', prom, re.M)))
check(ids and set(ids) <= set(served), "every counter object rdma statistic qp show lists is served (rdmak_rdma_counter_info)",
      f"kernel {ids}\nserved {served}")
PY
fi
rdma statistic qp set link rxea/1 auto off
if [ "$rose" = yes ]; then
	checks "$TMP/a.prom" "$TMP/b.prom" <<'PY'
def vals(p):
    return {m[0]: int(m[1]) for m in re.findall(r'^rdmak_port_hw_(\w+)_total\{device="rxea",port="1"\} (\d+)$', open(p).read(), re.M)}
a, b = vals(sys.argv[1]), vals(sys.argv[2])
check(b["rcvd_pkts"] > a["rcvd_pkts"], "rcvd_pkts rises too (rxe loops its own traffic back)", (a, b))
check(all(b[k] >= a[k] for k in a), "no counter goes down", {k: (a[k], b[k]) for k in a if b[k] < a[k]})
PY
fi
kill "$cli" "$srv" 2>/dev/null
wait "$cli" "$srv" 2>/dev/null

# ---- idle again: the served values are the kernel's -----------------------------------------------------
vm_sleep 1
scrape after.prom
rdma -j statistic show link rxea/1 >"$TMP/rdma2.json"
checks "$TMP/after.prom" "$TMP/rdma2.json" <<'PY'
prom = open(sys.argv[1]).read(); st = load(sys.argv[2])[0]
served = {m[0]: int(m[1]) for m in re.findall(r'^rdmak_port_hw_(\w+)_total\{device="rxea",port="1"\} (\d+)$', prom, re.M)}
names = [k for k in st if k not in ("ifname", "ifindex", "port")]
check(all(served.get(k) == st[k] for k in names), "after the run, the served values are rdma statistic show's",
      {k: (served.get(k), st[k]) for k in names if served.get(k) != st[k]})
check(st["sent_pkts"] > 0, "and traffic was counted", st["sent_pkts"])
PY
kill "$exp"
wait "$exp"
is "$?" 0 "SIGTERM: the exporter exits 0"

# ---- another node's tree (--root) naming a device as this kernel does: its files, not the kernel's
if [ ! -d "$TOP/examples/nodes/b2-cx6dx-roce" ]; then
	skip "no examples/nodes/b2-cx6dx-roce (make builds the sample nodes)" "another node's tree naming a device as this kernel does"
	done_testing
	exit
fi
cp -a "$TOP/examples/nodes/b2-cx6dx-roce" "$TMP/node"
ib=$TMP/node/sys/class/infiniband
dir=$(dirname "$(readlink -f "$ib/mlx5_0")")
mv "$dir/mlx5_0" "$dir/rxea"
rm "$ib/mlx5_0"
ln -s "$(realpath --relative-to="$ib" "$dir/rxea")" "$ib/rxea"
echo 4242 >"$dir/rxea/ports/1/hw_counters/out_of_sequence"
"$RDMAK" exporter --once --root "$TMP/node" --no-pod-resources >"$TMP/other.prom" 2>"$TMP/other.log"
ok $? "--root of a tree with its own rxea: one scrape"
like "$(cat "$TMP/other.prom")" '^rdmak_port_hw_out_of_sequence_total\{device="rxea",port="1"\} 4242$' \
	"the tree's rxea (another node GUID than the kernel's) is read from its files"
like "$(cat "$TMP/other.prom")" '^rdmak_exporter_hw_counters_netlink_ports 0$' "... and no port through netlink"
done_testing
