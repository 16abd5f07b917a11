#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` scraped by its real peer: Debian's prometheus, with a scrape config on
# loopback and a short interval, over two "nodes" (two exporters on the cx5-roce-sriov sample
# node, so that every device name is on both), each with its stand-in kubelet
# (tests/js/podresources.mjs, @grpc/grpc-js with the published PodResources v1 proto) saying
# which pods hold its VFs and which two pods share each PF. Each target carries the labels the
# Prometheus Operator's PodMonitor gives one (namespace, pod, container, endpoint: the exporter's
# own pod), as static labels with honor_labels left false, as the Operator leaves it: the stand-in
# for the Operator, which is not here. Prometheus' HTTP API must return the series with the pod
# labels and none renamed exported_*, and the join docs/exporter.md gives must attribute every
# device to each of its holders on each node; promtool check metrics must pass on the same
# output. No timed assertions: the API is polled until the series appear, up to a generous limit.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-exporter.sh"
PROM=$(command -v prometheus || true)
PROMTOOL=$(command -v promtool || true)
NODEJS=$(command -v node || true)
CX5=$NODES/cx5-roce-sriov
if [ -z "$PROM" ] || [ -z "$NODEJS" ] || [ ! -d "$TOP/tests/js/node_modules/@grpc/grpc-js" ]; then
	skip "prometheus, node or tests/js/node_modules missing (tools/install-deps.sh)" "prometheus scrapes rdmak exporter"
	done_testing
	exit
fi

PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap 'cleanup; rm -rf "$TMP"' EXIT

# a stand-in kubelet per node, until killed: node b's pods are node a's with "-b" added to their
# names (the same devices, other pods)
cat >"$TMP/kubelet.mjs" <<EOF
import { PodResources, samplePods } from '$TOP/tests/js/podresources.mjs';
const s = new PodResources(process.argv[2]);
s.pods = samplePods().map((p) => ({ ...p, name: p.name + process.argv[3] }));
await s.start();
console.log('serving');
setInterval(() => {}, 1000);
EOF
printf '{"configList":[{"resourceName":"shared_cx5","rdmaHcaMax":100,"selectors":{"ifNames":["enp27s0f0np0","enp27s0f1np1"]}}]}\n' >"$TMP/plugin.json"
for node in a b; do
	suffix=$([ $node = b ] && echo -b)
	"$NODEJS" "$TMP/kubelet.mjs" "$TMP/pod-resources-$node/kubelet.sock" "$suffix" >"$TMP/kubelet-$node.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 200); do grep -q serving "$TMP/kubelet-$node.log" && break; sleep 0.1; done
	ok "$(grep -q serving "$TMP/kubelet-$node.log"; echo $?)" "node $node: the stand-in kubelet serves PodResources ($(tail -1 "$TMP/kubelet-$node.log"))"
	start_exporter --root "$CX5" --pod-resources "$TMP/pod-resources-$node/kubelet.sock" \
		--plugin-config "$TMP/plugin.json" --pod-resources-max-age 1000
	ok $? "node $node: rdmak exporter listens on loopback"
	PIDS+=("$EPID")
	cp "$TMP/exp.log" "$TMP/exp-$node.log"
	eval "EPORT_$node=$EPORT"
done

curl -s "http://127.0.0.1:$EPORT_a/metrics" >"$TMP/m.txt"
like "$(cat "$TMP/m.txt")" 'node_infiniband_port_data_received_bytes_total\{device="mlx5_2",port="1",k8s_namespace_name="ml",k8s_pod_name="trainer-0",k8s_container_name="trainer"\}' \
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
      - targets: ["127.0.0.1:$EPORT_a"]
        labels: {namespace: rdmak-system, pod: rdmak-exporter-node-a, container: exporter, endpoint: metrics}
      - targets: ["127.0.0.1:$EPORT_b"]
        labels: {namespace: rdmak-system, pod: rdmak-exporter-node-b, container: exporter, endpoint: metrics}
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

wait_series 'up{job="rdmak"} == 1' 2
ok $? "prometheus scrapes both exporters: up == 1 ($(tail -1 "$TMP/prom.log" | cut -c1-200))"
wait_series 'node_infiniband_port_data_received_bytes_total{k8s_pod_name=~"trainer-0.*"}' 4
ok $? "the API returns the VFs' counters with the pods' labels"
is "$(jget "$TMP/q.json" 'sorted((r["metric"]["pod"], r["metric"]["device"], r["metric"]["k8s_namespace_name"], r["metric"]["k8s_pod_name"], r["metric"]["k8s_container_name"], r["metric"]["namespace"]) for r in d["data"]["result"])')" \
	'[["rdmak-exporter-node-a", "mlx5_2", "ml", "trainer-0", "trainer", "rdmak-system"], ["rdmak-exporter-node-a", "mlx5_3", "ml", "trainer-0", "trainer", "rdmak-system"], ["rdmak-exporter-node-b", "mlx5_2", "ml", "trainer-0-b", "trainer", "rdmak-system"], ["rdmak-exporter-node-b", "mlx5_3", "ml", "trainer-0-b", "trainer", "rdmak-system"]]' \
	"... the holder's pod beside the exporter's own pod, namespace and container (the target's)"
for l in exported_namespace exported_pod exported_container; do
	query "count({$l=~\".+\"})"
	is "$(jget "$TMP/q.json" 'len(d["data"]["result"])')" 0 "no series has $l: no label of the exporter's clashes with a target label"
done
wait_series 'rdmak_device_pod_info{resource="rdma/shared_cx5"}' 8
is "$(jget "$TMP/q.json" 'sorted((r["metric"]["pod"][-6:], r["metric"]["device"], r["metric"]["k8s_pod_name"]) for r in d["data"]["result"])')" \
	'[["node-a", "mlx5_0", "bench"], ["node-a", "mlx5_0", "bench2"], ["node-a", "mlx5_1", "bench"], ["node-a", "mlx5_1", "bench2"], ["node-b", "mlx5_0", "bench-b"], ["node-b", "mlx5_0", "bench2-b"], ["node-b", "mlx5_1", "bench-b"], ["node-b", "mlx5_1", "bench2-b"]]' \
	"the pods sharing the PFs are rdmak_device_pod_info series, per node"
query 'node_infiniband_port_data_received_bytes_total{device="mlx5_0"}'
is "$(jget "$TMP/q.json" 'sorted(sorted(r["metric"]) for r in d["data"]["result"])')" \
	'[["__name__", "container", "device", "endpoint", "instance", "job", "namespace", "pod", "port"], ["__name__", "container", "device", "endpoint", "instance", "job", "namespace", "pod", "port"]]' \
	"a shared PF's counters carry no holder's labels"
wait_series 'rdmak_exporter_pod_resources_up == 1' 2
ok $? "rdmak_exporter_pod_resources_up is 1 in Prometheus"

# the join of docs/exporter.md, word for word: a device's traffic, once per holder, per node
JOIN=$(sed -n '/^<!-- join: tests\/cmd\/exporter_prometheus.sh -->$/,/^```$/p' "$TOP/docs/exporter.md" | sed '1,2d;$d')
like "$JOIN" 'group_right' "docs/exporter.md gives the join ($(printf '%s' "$JOIN" | tr '\n' ' '))"
# 7 holders a node (bench and bench2 on each PF, trainer-0 on two VFs, trainer-1 on one), 2 nodes
wait_series "$JOIN" 14
ok $? "the join answers one series per node, device and holder: 14"
is "$(jget "$TMP/q.json" 'sorted((r["metric"]["instance"] == "127.0.0.1:'"$EPORT_a"'" and "a" or "b", r["metric"]["device"], r["metric"]["k8s_pod_name"]) for r in d["data"]["result"])')" \
	'[["a", "mlx5_0", "bench"], ["a", "mlx5_0", "bench2"], ["a", "mlx5_1", "bench"], ["a", "mlx5_1", "bench2"], ["a", "mlx5_14", "trainer-1"], ["a", "mlx5_2", "trainer-0"], ["a", "mlx5_3", "trainer-0"], ["b", "mlx5_0", "bench-b"], ["b", "mlx5_0", "bench2-b"], ["b", "mlx5_1", "bench-b"], ["b", "mlx5_1", "bench2-b"], ["b", "mlx5_14", "trainer-1-b"], ["b", "mlx5_2", "trainer-0-b"], ["b", "mlx5_3", "trainer-0-b"]]' \
	"... each device's holders on its own node, the sharing pods each once"
# what the docs said before: on(device) alone matches one node's devices with the other's and
# two sharers with one device: Prometheus refuses it
query 'node_infiniband_port_data_received_bytes_total * on(device) group_left(k8s_namespace_name, k8s_pod_name, k8s_container_name) rdmak_device_pod_info'
like "$(jget "$TMP/q.json" 'd.get("status") + ": " + d.get("error", "")')" '^error: .*(many-to-many|duplicate)' \
	"the join on(device) alone is refused by Prometheus (shared devices, many nodes)"
# the scrapes were also read as OpenMetrics (Prometheus asks for it first): nothing failed
query 'scrape_samples_scraped{job="rdmak"}'
like "$(jget "$TMP/q.json" 'd["data"]["result"][0]["value"][1]')" '^[0-9]{3,}$' "every sample of a scrape was taken"
# Prometheus asks for gzip (Accept-Encoding): every one of its scrapes went compressed, and was
# read (the series above are in); the test's own plain curl of node a was not
kill -TERM "$EPID" && wait "$EPID"
like "$(cat "$TMP/exp.log")" "shutting down after ([0-9]+) scrapes \\(([0-9]+) sent gzip'd" "node b's exporter stops and says how many scrapes it sent gzip'd"
n=$(sed -n "s/.*shutting down after \([0-9]*\) scrapes (\([0-9]*\) sent gzip'd.*/\1 \2/p" "$TMP/exp.log")
read -r all gz <<<"$n"
ok "$([ -n "$all" ] && [ "$all" -ge 2 ] && [ "$gz" = "$all" ] && echo 0 || echo 1)" "node b: every scrape Prometheus made went gzip'd ($gz of $all)"

done_testing
