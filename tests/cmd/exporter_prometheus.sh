#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` scraped by its real peer: Debian's prometheus, with a scrape config on
# loopback and a short interval, over the cx5-roce-sriov sample node while a stand-in kubelet
# (tests/js/podresources.mjs, @grpc/grpc-js with the published PodResources v1 proto) says which
# pods hold its VFs and share its PFs. Prometheus' HTTP API must return the series with the pod
# labels; promtool check metrics must pass on the same output. No timed assertions: the API is
# polled until the series appear, up to a generous limit.
. "$(dirname "$0")/../lib.sh"
PROM=$(command -v prometheus || true)
PROMTOOL=$(command -v promtool || true)
NODEJS=$(command -v node || true)
CX5=$NODES/cx5-roce-sriov
if [ -z "$PROM" ] || [ -z "$NODEJS" ] || [ ! -d "$TOP/tests/js/node_modules/@grpc/grpc-js" ]; then
	skip "prometheus, node or tests/js/node_modules missing (tools/install-deps.sh)" "prometheus scrapes rdmak exporter"
	done_testing
	exit
fi

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

# the stand-in kubelet, until killed
SOCK=$TMP/pod-resources/kubelet.sock
cat >"$TMP/kubelet.mjs" <<EOF
import { PodResources, samplePods } from '$TOP/tests/js/podresources.mjs';
const s = new PodResources(process.argv[2]);
s.pods = samplePods();
await s.start();
console.log('serving');
setInterval(() => {}, 1000);
EOF
"$NODEJS" "$TMP/kubelet.mjs" "$SOCK" >"$TMP/kubelet.log" 2>&1 &
PIDS+=($!)
for i in $(seq 200); do grep -q serving "$TMP/kubelet.log" && break; sleep 0.1; done
ok "$(grep -q serving "$TMP/kubelet.log"; echo $?)" "the stand-in kubelet serves PodResources ($(tail -1 "$TMP/kubelet.log"))"

printf '{"configList":[{"resourceName":"shared_cx5","rdmaHcaMax":100,"selectors":{"ifNames":["enp27s0f0np0","enp27s0f1np1"]}}]}\n' >"$TMP/plugin.json"
"$RDMAK" exporter --listen 127.0.0.1:0 --root "$CX5" --pod-resources "$SOCK" --plugin-config "$TMP/plugin.json" \
	--pod-resources-max-age 1000 >"$TMP/exp.log" 2>&1 &
PIDS+=($!)
EPORT=
for i in $(seq 100); do
	EPORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/exp.log")
	[ -n "$EPORT" ] && break
	sleep 0.1
done
ok "$([ -n "$EPORT" ]; echo $?)" "rdmak exporter listens on loopback"

curl -s "http://127.0.0.1:$EPORT/metrics" >"$TMP/m.txt"
like "$(cat "$TMP/m.txt")" 'node_infiniband_port_data_received_bytes_total\{device="mlx5_2",port="1",namespace="ml",pod="trainer-0",container="trainer"\}' \
	"the exporter's own answer has the pod labels"
if [ -n "$PROMTOOL" ]; then
	run "$PROMTOOL" check metrics <"$TMP/m.txt"
	is "$rc" 0 "promtool check metrics passes on the output with pod labels ($out$err)"
else
	skip "promtool not installed" "promtool check metrics on the output with pod labels"
fi

PPORT=$(free_port)
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rdmak
    static_configs:
      - targets: ["127.0.0.1:$EPORT"]
EOF
if [ -n "$PROMTOOL" ]; then
	run "$PROMTOOL" check config "$TMP/prometheus.yml"
	is "$rc" 0 "the scrape config is valid ($err)"
fi
"$PROM" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" >"$TMP/prom.log" 2>&1 &
PIDS+=($!)

# query PROMQL: the API's answer in $TMP/q.json
query() { curl -s -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" >"$TMP/q.json" 2>/dev/null; }
# wait_series PROMQL N: poll until the query returns at least N series (60 s at most)
wait_series() {
	local i
	for i in $(seq 300); do
		if query "$1" && [ "$(jget "$TMP/q.json" 'len(d["data"]["result"])' 2>/dev/null || echo 0)" -ge "$2" ]; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

wait_series 'up{job="rdmak"} == 1' 1
ok $? "prometheus scrapes rdmak exporter: up == 1 ($(tail -1 "$TMP/prom.log" | cut -c1-200))"
wait_series 'node_infiniband_port_data_received_bytes_total{pod="trainer-0"}' 2
ok $? "the API returns the VFs' counters with the pod's labels"
is "$(jget "$TMP/q.json" 'sorted((r["metric"]["device"], r["metric"]["namespace"], r["metric"]["pod"], r["metric"]["container"], r["metric"]["job"]) for r in d["data"]["result"])')" \
	'[["mlx5_2", "ml", "trainer-0", "trainer", "rdmak"], ["mlx5_3", "ml", "trainer-0", "trainer", "rdmak"]]' \
	"... mlx5_2 and mlx5_3 (0000:1b:00.2 and .3) held by ml/trainer-0/trainer"
wait_series 'rdmak_device_pod_info{resource="rdma/shared_cx5"}' 4
is "$(jget "$TMP/q.json" 'sorted((r["metric"]["device"], r["metric"]["pod"]) for r in d["data"]["result"])')" \
	'[["mlx5_0", "bench"], ["mlx5_0", "bench2"], ["mlx5_1", "bench"], ["mlx5_1", "bench2"]]' \
	"the pods sharing the PFs are rdmak_device_pod_info series in Prometheus"
query 'node_infiniband_port_data_received_bytes_total{device="mlx5_0"}'
is "$(jget "$TMP/q.json" '[sorted(r["metric"]) for r in d["data"]["result"]]')" \
	'[["__name__", "device", "instance", "job", "port"]]' "a shared PF's counters carry no pod labels"
wait_series 'rdmak_exporter_pod_resources_up == 1' 1
ok $? "rdmak_exporter_pod_resources_up is 1 in Prometheus"
# the scrapes were also read as OpenMetrics (Prometheus asks for it first): nothing failed
query 'scrape_samples_scraped{job="rdmak"}'
like "$(jget "$TMP/q.json" 'd["data"]["result"][0]["value"][1]')" '^[0-9]{3,}$' "every sample of a scrape was taken"

done_testing
