#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` against its real peer: Debian's prometheus-node-exporter reads the same
# sample node (--path.sysfs, only its infiniband collector), every counter file set to a
# distinct value first; for every node_infiniband_* series either exports, the other has it
# with the same type and value. Then promtool on rdmak's output, the HTTP side (/metrics in
# both formats, /healthz, the bearer token, TLS), an unreadable counter file (left out and counted,
# the scrape still answers) and a device that goes away (its series dropped).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-exporter.sh"
NE=$(command -v prometheus-node-exporter || true)
PROMTOOL=$(command -v promtool || true)

# counters NODE-COPY: every counters/ and hw_counters/ file of every port and device gets a
# distinct value above 2^32 (a 32-bit truncation or a float's rounding would show)
counters() {
	"$PY" - "$1" <<-'EOF2'
	import os, sys
	root = sys.argv[1] + "/sys/class/infiniband"
	n = 0
	for dev in sorted(os.listdir(root)) if os.path.isdir(root) else []:
	    d = os.path.realpath(os.path.join(root, dev))
	    dirs = [os.path.join(d, "hw_counters")]
	    for p in sorted(os.listdir(os.path.join(d, "ports"))):
	        dirs += [os.path.join(d, "ports", p, x) for x in ("counters", "hw_counters")]
	    for x in dirs:
	        if not os.path.isdir(x):
	            continue
	        for f in sorted(os.listdir(x)):
	            if f == "lifespan":
	                continue
	            n += 1
	            with open(os.path.join(x, f), "w") as fh:
	                fh.write("%d\n" % (5000000000 + n * 7919))
	print(n)
	EOF2
}

# compare RDMAK.txt NE.txt [DEVICES]: node_infiniband_* series of both, by name and labels;
# node_exporter's of the comma-separated DEVICES left out
compare() {
	"$PY" - "$1" "$2" "${3:-}" <<-'EOF2'
	import re, sys
	drop = set(filter(None, sys.argv[3].split(",")))
	def parse(path):
	    types, vals = {}, {}
	    for line in open(path):
	        line = line.rstrip("\n")
	        m = re.match(r"# TYPE (\S+) (\S+)", line)
	        if m:
	            types[m.group(1)] = m.group(2)
	            continue
	        if not line or line.startswith("#"):
	            continue
	        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
	        name, labels, v = m.group(1), m.group(3) or "", m.group(4)
	        if not name.startswith("node_infiniband_"):
	            continue
	        lab = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)))
	        vals[(name, lab)] = float(v)
	    return types, vals
	rt, rv = parse(sys.argv[1])
	nt, nv = parse(sys.argv[2])
	nv = {k: v for k, v in nv.items() if dict(k[1]).get("device") not in drop}
	bad = []
	for k in sorted(set(rv) | set(nv)):
	    if k not in rv:
	        bad.append("only node_exporter: %s %s" % k)
	    elif k not in nv:
	        bad.append("only rdmak: %s %s" % k)
	    elif rv[k] != nv[k]:
	        bad.append("%s %s: rdmak %r, node_exporter %r" % (k[0], k[1], rv[k], nv[k]))
	    elif rt.get(k[0]) != nt.get(k[0]):
	        bad.append("%s: type %s vs %s" % (k[0], rt.get(k[0]), nt.get(k[0])))
	print("%d series, %d names" % (len(nv), len({k[0] for k in nv})))
	for b in bad[:20]:
	    print(b)
	sys.exit(1 if bad or not nv else 0)
	EOF2
}

# node_exporter NODE-COPY OUT: one scrape of its infiniband collector
node_exporter() {
	local port pid i
	port=$(free_port)
	"$NE" --path.sysfs="$1/sys" --collector.disable-defaults --collector.infiniband \
		--web.listen-address="127.0.0.1:$port" >"$TMP/ne.log" 2>&1 &
	pid=$!
	for i in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/metrics" >"$2" 2>/dev/null && break
		sleep 0.1
	done
	kill "$pid"
	wait "$pid" 2>/dev/null
	grep -q '^node_scrape_collector_success{collector="infiniband"} 1' "$2"
}

# same_as_ne ROOT RDMAK.txt WHAT: node_exporter over ROOT/sys has the node_infiniband_* series
# of RDMAK.txt, no more, no fewer, same types and values
same_as_ne() {
	if [ -z "$NE" ]; then
		skip "prometheus-node-exporter not installed (tools/install-deps.sh)" "$3: same series as node_exporter"
	elif ! node_exporter "$1" "$TMP/ne.txt"; then
		ok 1 "$3: node_exporter's infiniband collector answered ($(tail -2 "$TMP/ne.log"))"
	else
		run compare "$2" "$TMP/ne.txt"
		is "$rc" 0 "$3: every node_infiniband_* series of either is the other's, same type and value ($out)"
	fi
}

for node in a100-ib-bond a6-sriov-client b1-gb10-roce b2-cx6dx-roce b4-cx3-ib c1-mixed-cx7-cx6 \
	cx5-roce-sriov d4-cx6-hdr e1-cx7-lag e2-bf3-lag f3-roce-lag s002-a101 s002-a31 v100-ib; do
	rm -rf "$TMP/node"
	cp -a "$NODES/$node" "$TMP/node"
	n=$(counters "$TMP/node")
	"$RDMAK" exporter --once --root "$TMP/node" --vf-series all >"$TMP/rdmak.txt"
	is "$?" 0 "$node: exporter --once --vf-series all exits 0 ($n counter files set)"
	same_as_ne "$TMP/node" "$TMP/rdmak.txt" "$node"
	if [ -n "$PROMTOOL" ]; then
		run "$PROMTOOL" check metrics <"$TMP/rdmak.txt"
		is "$rc" 0 "$node: promtool check metrics passes ($out$err)"
	fi
done

# --vf-series held, the default: the VFs no pod holds (here all, no kubelet) have no series of
# their own; the rest is node_exporter's, series for series
rm -rf "$TMP/node"
cp -a "$NODES/cx5-roce-sriov" "$TMP/node"
counters "$TMP/node" >/dev/null
vfs=$(cd "$TMP/node/sys/class/infiniband" && for d in *; do [ -e "$d/device/physfn" ] && printf '%s,' "$d"; done)
like "$vfs" '^(mlx5_[0-9]+,){24}$' "cx5-roce-sriov: 24 VFs"
"$RDMAK" exporter --once --root "$TMP/node" --no-pod-resources >"$TMP/rdmak.txt"
is "$?" 0 "cx5-roce-sriov: exporter --once (--vf-series held) exits 0"
if [ -z "$NE" ]; then
	skip "prometheus-node-exporter not installed (tools/install-deps.sh)" "held: node_exporter's series but the idle VFs'"
elif node_exporter "$TMP/node" "$TMP/ne.txt"; then
	run compare "$TMP/rdmak.txt" "$TMP/ne.txt" "$vfs"
	is "$rc" 0 "cx5-roce-sriov, --vf-series held: node_exporter's node_infiniband_* series but the idle VFs', same values ($out)"
fi
unlike "$(cat "$TMP/rdmak.txt")" 'device="mlx5_(1[0-9]|2[0-9]|[2-9])"' "... and no series names an idle VF"
if [ -n "$PROMTOOL" ]; then
	run "$PROMTOOL" check metrics <"$TMP/rdmak.txt"
	is "$rc" 0 "cx5-roce-sriov, --vf-series held: promtool check metrics passes ($out$err)"
fi
run "$RDMAK" exporter --once --root "$TMP/node" --vf-series some
is "$rc" 2 "--vf-series some: usage error, exit 2 ($err)"

# the rdmak_ families on a RoCE node
rm -rf "$TMP/node"
cp -a "$NODES/b2-cx6dx-roce" "$TMP/node"
counters "$TMP/node" >/dev/null
hw=$(readlink -f "$TMP/node/sys/class/infiniband/mlx5_0")
cnp=$(cat "$hw/ports/1/hw_counters/np_cnp_sent")
mkdir "$hw/hw_counters" && echo 42 >"$hw/hw_counters/dev_internal_queue_oos" && echo 10 >"$hw/hw_counters/lifespan"
"$RDMAK" exporter --once --root "$TMP/node" >"$TMP/rdmak.txt"
out=$(cat "$TMP/rdmak.txt")
like "$out" "rdmak_port_hw_np_cnp_sent_total\{device=\"mlx5_0\",port=\"1\"\} $cnp" "a port's hw_counters file is a rdmak_port_hw_*_total counter"
like "$out" "# TYPE rdmak_port_hw_np_cnp_sent_total counter" "... typed counter"
like "$out" "rdmak_device_hw_dev_internal_queue_oos_total\{device=\"mlx5_0\"\} 42" "a device's hw_counters file is a rdmak_device_hw_*_total counter"
unlike "$out" "lifespan" "hw_counters' lifespan (a cache setting, no counter) is left out"
like "$out" "rdmak_port_info\{device=\"mlx5_0\",port=\"1\",link_layer=\"Ethernet\",netdev=\"[^\"]+\",gid=\"fe80:" "rdmak_port_info: link layer, netdev, GID 0"
like "$out" "rdmak_pcie_link_speed_gigatransfers_per_second\{device=\"mlx5_0\",pci=\"[0-9a-f:.]+\"\} [0-9.]+" "PCIe link speed of a PF"
like "$out" "rdmak_pcie_link_max_width_lanes\{device=\"mlx5_0\",pci=" "PCIe max link width of a PF"
like "$out" "rdmak_doctor_check\{check=\"port.state\",object=\"[^\"]*\",status=\"(ok|warn|fail)\"\} 1" "the doctor's findings as rdmak_doctor_check"
is "$(grep -c '^rdmak_doctor_check{check="port.state",object="mlx5_0/1",' "$TMP/rdmak.txt") $(grep -c '^rdmak_doctor_check{check="port.state",object="mlx5_0/1",.*} 1$' "$TMP/rdmak.txt")" "4 1" \
	"one series per state (ok, warn, fail, skip), 1 for the finding's"
like "$out" "rdmak_exporter_scrape_duration_seconds [0-9.e-]+" "the scrape's own duration"
# the doctor's own word, through its JSON: each port.state finding of the node is a series
run "$RDMAK" doctor --root "$TMP/node" --check port.state --json
printf '%s' "$out" >"$TMP/doctor.json"
want=$(jget "$TMP/doctor.json" "len({(f['object'] or '') for f in d if f['id'] == 'port.state'})")
is "$(grep -c '^rdmak_doctor_check{check="port.state".*} 1$' "$TMP/rdmak.txt")" "$want" "one rdmak_doctor_check series at 1 per port.state object the doctor names"
# a port that goes down changes the values, never which series there are (Prometheus' enum
# convention): a rule or a graph follows one series through the change
series() { grep '^rdmak_doctor_check{' "$1" | sed 's/ [0-9]*$//' | sort; }
cp "$hw/ports/1/state" "$TMP/state.keep"
echo "1: DOWN" >"$hw/ports/1/state"
"$RDMAK" exporter --once --root "$TMP/node" >"$TMP/down.txt"
same_file <(series "$TMP/down.txt") <(series "$TMP/rdmak.txt") "mlx5_0/1 down: the same rdmak_doctor_check series as before"
isnt_state=$(grep '^rdmak_doctor_check{check="port.state",object="mlx5_0/1",.*} 1$' "$TMP/down.txt" | sed 's/.*status="\([a-z]*\)".*/\1/')
was_state=$(grep '^rdmak_doctor_check{check="port.state",object="mlx5_0/1",.*} 1$' "$TMP/rdmak.txt" | sed 's/.*status="\([a-z]*\)".*/\1/')
ok "$([ -n "$isnt_state" ] && [ "$isnt_state" != "$was_state" ]; echo $?)" "... with another one at 1 ($was_state, then $isnt_state)"
cp "$TMP/state.keep" "$hw/ports/1/state"

# the counter files read one at a time (--no-io-uring, as where io_uring is refused): the same
# series and values as in batches through io_uring
nodur() { grep -v '^rdmak_exporter_scrape_duration_seconds ' "$1"; }
run "$RDMAK" exporter --once --no-io-uring --root "$TMP/node"
printf '%s\n' "$out" >"$TMP/one.txt"
is "$rc" 0 "--no-io-uring: exits 0"
is "$(nodur "$TMP/one.txt")" "$(nodur "$TMP/rdmak.txt")" "--no-io-uring: the same series and values as through io_uring"

"$RDMAK" exporter --once --openmetrics --root "$TMP/node" >"$TMP/om.txt"
like "$(cat "$TMP/om.txt")" "# TYPE node_infiniband_port_data_received_bytes counter" "OpenMetrics: a counter's family is named without _total"
is "$(tail -1 "$TMP/om.txt")" "# EOF" "OpenMetrics: ends with # EOF"
# (promtool check metrics reads the text format only: it takes an OpenMetrics counter family's
# name, without _total, for another metric; the Prometheus scrape reads both)

# ---- HTTP ----

start_exporter --root "$TMP/node"
ok $? "exporter serves plain HTTP on a port the kernel picks"
run curl -s -o "$TMP/m.txt" -w '%{http_code} %{content_type}' "http://127.0.0.1:$EPORT/metrics"
is "$out" "200 text/plain; version=0.0.4; charset=utf-8" "GET /metrics: 200, the text format 0.0.4"
like "$(cat "$TMP/m.txt")" "node_infiniband_port_data_received_bytes_total\{device=\"mlx5_0\",port=\"1\"\}" "... with the port counters"
run curl -s -o "$TMP/om.txt" -w '%{http_code} %{content_type}' \
	-H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' "http://127.0.0.1:$EPORT/metrics"
is "$out" "200 application/openmetrics-text; version=1.0.0; charset=utf-8" "Accept: openmetrics (as Prometheus sends it): OpenMetrics"
is "$(tail -1 "$TMP/om.txt")" "# EOF" "... ending with # EOF"
run curl -s -w ' %{http_code}' "http://127.0.0.1:$EPORT/healthz"
is "$out" "ok
 200" "GET /healthz: 200"

# an unreadable counter: left out, counted, the scrape answers
sym="$hw/ports/1/counters/symbol_error"
rm "$sym" && mkdir "$sym"
run curl -s -o "$TMP/m.txt" -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics"
is "$out" 200 "a counter file that cannot be read does not fail the scrape"
unlike "$(cat "$TMP/m.txt")" "node_infiniband_symbol_error_total\{device=\"mlx5_0\",port=\"1\"\}" "... its series is left out"
like "$(cat "$TMP/m.txt")" "rdmak_exporter_read_errors_total\{file=\"class/infiniband/mlx5_0/ports/1/counters/symbol_error\"\} 1" \
	"... and counted in rdmak_exporter_read_errors_total{file}"
like "$(cat "$TMP/m.txt")" "node_infiniband_symbol_error_total\{device=\"mlx5_1\",port=\"1\"\}" "... the other ports' are there"
# a counter file that is no number, seen by a scrape of a topology loaded with it (--once):
# left out and counted, through io_uring as one file at a time
ld="$hw/ports/1/counters/link_downed"
cp "$ld" "$TMP/link_downed" && echo garbage >"$ld"
for how in "" --no-io-uring; do
	"$RDMAK" exporter --once $how --root "$TMP/node" >"$TMP/m1.txt" 2>/dev/null
	like "$(cat "$TMP/m1.txt")" "rdmak_exporter_read_errors_total\{file=\"class/infiniband/mlx5_0/ports/1/counters/link_downed\"\} 1" \
		"--once ${how:-(io_uring where offered)}: a counter that is no number is counted once"
	unlike "$(cat "$TMP/m1.txt")" "node_infiniband_link_downed_total\{device=\"mlx5_0\",port=\"1\"\}" "... and left out"
done
cp "$TMP/link_downed" "$ld"

# a device that goes away: its series are dropped, the topology reloaded once
gone=$(ls "$TMP/node/sys/class/infiniband" | tail -1)
loads=$(sed -n 's/^rdmak_exporter_topology_loads_total \([0-9]*\)$/\1/p' "$TMP/m.txt")
rm "$TMP/node/sys/class/infiniband/$gone"
curl -s -o "$TMP/m.txt" "http://127.0.0.1:$EPORT/metrics"
unlike "$(cat "$TMP/m.txt")" "device=\"$gone\"" "a device that disappears drops its series ($gone)"
is "$(sed -n 's/^rdmak_exporter_topology_loads_total \([0-9]*\)$/\1/p' "$TMP/m.txt")" "$((loads + 1))" "... the topology is loaded again, once"
curl -s -o "$TMP/m.txt" "http://127.0.0.1:$EPORT/metrics"
is "$(sed -n 's/^rdmak_exporter_topology_loads_total \([0-9]*\)$/\1/p' "$TMP/m.txt")" "$((loads + 1))" "... and not at the next scrape"
# RDMA netlink's counter objects (NETLINK_RDMA is protocol 20): this kernel has no RDMA, so the
# exporter said so once and its scrapes (three above) answered without those series
if python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)' 2>/dev/null; then
	skip "this kernel has RDMA: the absent-netlink case is not seen here" "RDMA netlink absent: said once"
else
	is "$(grep -c 'RDMA netlink: no RDMA subsystem in this kernel' "$TMP/exp.log")" 1 "RDMA netlink absent: said once in the log"
	unlike "$(cat "$TMP/m.txt")" "rdmak_rdma_counter" "... and the scrapes answer without rdmak_rdma_counter_* series"
fi
stop_exporter
is "$?" 0 "SIGTERM: exit 0"

# a bearer token
printf 's3cret\n' >"$TMP/token"
start_exporter --root "$TMP/node" --bearer-token-file "$TMP/token"
ok $? "exporter with --bearer-token-file starts"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics")" 401 "no token: 401"
is "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong!' "http://127.0.0.1:$EPORT/metrics")" 401 "a wrong token: 401"
is "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' "http://127.0.0.1:$EPORT/metrics")" 200 "the token: 200"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/healthz")" 200 "/healthz needs no token (the kubelet's probe)"
stop_exporter

# TLS through the same layer as the webhook
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
start_exporter --root "$TMP/node" --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"
ok $? "exporter with --tls-cert serves HTTPS"
is "$(curl -s --cacert "$TMP/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$EPORT/metrics")" 200 "HTTPS GET /metrics: 200"
stop_exporter

# client certificates (--client-ca): made here, by openssl, from two CAs of their own
for ca in ca1 ca2; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=rdmak test $ca" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
		-days 2 -keyout "$TMP/$ca.key" -out "$TMP/$ca.pem" 2>/dev/null
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=prometheus-$ca" \
		-keyout "$TMP/client-$ca.key" -out "$TMP/client-$ca.csr" 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\n' >"$TMP/client.ext"
	openssl x509 -req -in "$TMP/client-$ca.csr" -CA "$TMP/$ca.pem" -CAkey "$TMP/$ca.key" -CAcreateserial \
		-days 2 -extfile "$TMP/client.ext" -out "$TMP/client-$ca.pem" 2>/dev/null
done
# a client certificate for servers only (extendedKeyUsage serverAuth), from the right CA
printf 'extendedKeyUsage=serverAuth\n' >"$TMP/server.ext"
openssl x509 -req -in "$TMP/client-ca1.csr" -CA "$TMP/ca1.pem" -CAkey "$TMP/ca1.key" -CAcreateserial \
	-days 2 -extfile "$TMP/server.ext" -out "$TMP/client-ca1-server.pem" 2>/dev/null
cp "$TMP/ca1.pem" "$TMP/client-ca.pem"
# get [CLIENT [CERT]]: the HTTP status of GET /metrics with that client certificate (000: refused)
get() {
	local who=${1:-} cert=${2:-${1:-}}
	curl -s --cacert "$TMP/cert.pem" ${who:+--cert "$TMP/client-$cert.pem" --key "$TMP/client-$who.key"} \
		-o /dev/null -w '%{http_code}' "https://127.0.0.1:$EPORT/metrics"
}
start_exporter --root "$TMP/node" --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" --client-ca "$TMP/client-ca.pem"
ok $? "exporter with --client-ca starts"
like "$(cat "$TMP/exp.log")" "client certificate required" "... and says it requires client certificates"
is "$(get)" 000 "--client-ca: no client certificate: refused in the handshake"
is "$(get ca2)" 000 "... a client certificate from another CA: refused"
is "$(get ca1 ca1-server)" 000 "... one from the CA but for servers only (extendedKeyUsage serverAuth): refused"
is "$(get ca1)" 200 "... one from the CA: 200"
like "$(cat "$TMP/exp.log")" "closed a connection from 127.0.0.1: client certificate refused: The certificate is NOT trusted\\. The certificate issuer is unknown\\.$" "... a refused certificate is logged with its client and GnuTLS's reason"
# the CA file replaced (a Secret volume's swap): reloaded, the other CA's client now passes
cp "$TMP/ca2.pem" "$TMP/client-ca.pem.new" && mv "$TMP/client-ca.pem.new" "$TMP/client-ca.pem"
for i in $(seq 50); do [ "$(get ca2)" = 200 ] && break; sleep 0.1; done
is "$(get ca2)" 200 "the client CA file changes: the new CA's client gets 200"
is "$(get ca1)" 000 "... and the old CA's is refused"
# a CA file that is not one: refused, the CAs in use stay
echo garbage >"$TMP/client-ca.pem"
for i in $(seq 50); do grep -q "client CA $TMP/client-ca.pem" "$TMP/exp.log" && break; sleep 0.1; done
like "$(cat "$TMP/exp.log")" "client CA $TMP/client-ca.pem: " "a broken client CA file is refused and logged"
is "$(get ca2)" 200 "... and the CAs in use stay"
stop_exporter

run "$RDMAK" exporter --client-ca "$TMP/ca1.pem"
is "$rc" 2 "--client-ca without --tls-cert: exit 2"
run "$RDMAK" exporter --listen 127.0.0.1:0 --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" --client-ca "$TMP/client.ext"
is "$rc" 2 "--client-ca of a file without a certificate: exit 2"
like "$err" "no PEM certificate in the file|client CA" "... saying why ($err)"
run "$RDMAK" exporter --tls-cert "$TMP/cert.pem"
is "$rc" 2 "--tls-cert without --tls-key: exit 2"
run "$RDMAK" exporter --listen nowhere
is "$rc" 2 "a bad --listen: exit 2"
run "$RDMAK" exporter --once --root "$TMP/nowhere"
is "$rc" 1 "a missing root: exit 1"

# ---- devices in pods' network namespaces (exclusive RDMA netns mode) ----
# cx5-roce-sriov (netns_mode N) split as the kernel shows it once the RDMA CNI moved the VFs
# mlx5_2 and mlx5_3 into a pod with their netdevs renamed net1, net2: the host's view without
# them, the pod namespace's sysfs with only them (tests/helpers/netns_view.py)
rm -rf "$TMP/node" "$TMP/ns" && cp -a "$NODES/cx5-roce-sriov" "$TMP/node" && mkdir "$TMP/ns"
counters "$TMP/node" >/dev/null
"$PY" "$TOP/tests/helpers/netns_view.py" "$TMP/node" "$TMP/ns/cni-trainer0" mlx5_2=net1 mlx5_3=net2
ok $? "netns_view.py splits the node into the host's and the pod's views"
"$RDMAK" exporter --once --root "$TMP/node" >"$TMP/host.txt"
unlike "$(cat "$TMP/host.txt")" 'device="mlx5_2"' "without --netns-sysfs: the moved VF is not seen (the host's sysfs has it not)"
run "$RDMAK" exporter --once --root "$TMP/node" --netns-sysfs "$TMP/ns"
is "$rc" 0 "--netns-sysfs: exit 0"
printf '%s\n' "$out" >"$TMP/ns.txt"
v=$(cat "$(readlink -f "$TMP/ns/cni-trainer0/class/infiniband/mlx5_2")/ports/1/counters/port_rcv_data")
like "$out" "node_infiniband_port_data_received_bytes_total\{device=\"mlx5_2\",port=\"1\",netns=\"cni-trainer0\"\} $((v * 4))" "the moved VF's port counter, with netns (4 x port_rcv_data)"
like "$out" "rdmak_port_info\{device=\"mlx5_2\",port=\"1\",link_layer=\"Ethernet\",netdev=\"net1\",[^}]*netns=\"cni-trainer0\"\} 1" "rdmak_port_info names the netdev the pod sees (net1)"
like "$out" "rdmak_port_hw_np_cnp_sent_total\{device=\"mlx5_3\",port=\"1\",netns=\"cni-trainer0\"\} [0-9]+" "the moved VF's hw_counters"
like "$out" "node_infiniband_info\{device=\"mlx5_3\",[^}]*netns=\"cni-trainer0\"\} 1" "node_infiniband_info of a moved VF"
like "$out" "rdmak_exporter_netns_scanned 1" "rdmak_exporter_netns_scanned counts the namespace"
is "$(grep -c '^node_infiniband_state_id{' "$TMP/ns.txt")" "$(grep -c '^node_infiniband_state_id{' "$TMP/host.txt" | awk '{print $1 + 2}')" "every host port and the two moved ones, once each"
if [ -n "$PROMTOOL" ]; then
	run "$PROMTOOL" check metrics <"$TMP/ns.txt"
	is "$rc" 0 "promtool check metrics passes with the netns series ($out$err)"
fi
# node_exporter run inside the pod's namespace would read that namespace's sysfs: the same
# series, but for the netns label
grep -v '^node_infiniband_' "$TMP/ns.txt" >"$TMP/ns-pod.txt"
grep '^node_infiniband_.*netns="cni-trainer0"' "$TMP/ns.txt" | sed 's/,netns="cni-trainer0"//' >>"$TMP/ns-pod.txt"
mkdir -p "$TMP/podroot" && rm -f "$TMP/podroot/sys" && ln -s "$TMP/ns/cni-trainer0" "$TMP/podroot/sys"
same_as_ne "$TMP/podroot" "$TMP/ns-pod.txt" "the pod's view of the moved VFs"
# shared mode: every device is in every namespace already; the namespaces are not read
echo Y >"$TMP/node/sys/module/ib_core/parameters/netns_mode"
run "$RDMAK" exporter --once --root "$TMP/node" --netns-sysfs "$TMP/ns"
unlike "$out" 'netns="' "shared RDMA netns mode: no namespace is read"
like "$out" "rdmak_exporter_netns_scanned 0" "... rdmak_exporter_netns_scanned 0"
like "$err" "not exclusive" "... and the log says why"
echo N >"$TMP/node/sys/module/ib_core/parameters/netns_mode"
# the pod goes away while the exporter runs: its namespace's series go with it
start_exporter --root "$TMP/node" --netns-sysfs "$TMP/ns" --no-pod-resources
ok $? "exporter with --netns-sysfs serves"
like "$(curl -s "http://127.0.0.1:$EPORT/metrics")" 'device="mlx5_2",port="1",netns="cni-trainer0"' "... the moved VF's series"
mv "$TMP/ns/cni-trainer0" "$TMP/gone"
out=$(curl -s "http://127.0.0.1:$EPORT/metrics")
unlike "$out" 'netns="' "the pod's namespace gone: its series are dropped at the next scrape"
like "$out" 'node_infiniband_state_id\{device="mlx5_0",port="1"\}' "... the host's stay"
mv "$TMP/gone" "$TMP/ns/cni-trainer0"
like "$(curl -s "http://127.0.0.1:$EPORT/metrics")" 'device="mlx5_3",port="1",netns="cni-trainer0"' "a namespace that comes (back) is read at the next scrape"
stop_exporter
run "$RDMAK" exporter --once --root "$TMP/node" --netns-sysfs "$TMP/nowhere"
is "$rc" 2 "--netns-sysfs of a missing folder: exit 2"
like "$err" "--netns-sysfs $TMP/nowhere: No such file or directory" "... naming it"
run "$RDMAK" exporter --once --root "$TMP/node" --netns-sysfs "$TMP/ns" --netns-dir "$TMP/ns"
is "$rc" 2 "--netns-dir with --netns-sysfs: exit 2"

# real namespaces: entered and mounted (this kernel has no RDMA, so no device in them: the
# mechanism, end to end; tests/unit/test_nl.c checks what the mount shows)
mkdir -p "$TMP/netns" && touch "$TMP/netns/pod1" "$TMP/netns/stale"
if ! unshare --net="$TMP/netns/pod1" true 2>/dev/null; then
	skip "unshare --net=FILE not possible here" "--netns-dir on real namespaces"
else
	run "$RDMAK" exporter --once --root "$TMP/node" --netns-dir "$TMP/netns"
	is "$rc" 0 "--netns-dir of real namespace files: exit 0 ($err)"
	like "$out" "rdmak_exporter_netns_scanned 2" "... both entries looked at"
	like "$out" "rdmak_exporter_netns_errors_total 0" "... the namespace entered and mounted, the plain file left (no error)"
	unlike "$out" 'netns="' "... no RDMA device in it (none in this kernel)"
	if command -v setpriv >/dev/null; then
		run setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$RDMAK" exporter --once --root "$TMP/node" --netns-dir "$TMP/netns"
		is "$rc" 1 "--netns-dir without CAP_SYS_ADMIN: exit 1"
		like "$err" "cannot enter a network namespace and mount its sysfs: Operation not permitted \(needs CAP_SYS_ADMIN" "... saying what it needs"
	fi
	umount "$TMP/netns/pod1"
fi

done_testing
