#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak bench k8s --run against a stand-in kubectl (tests/bench/k8s/kubectl) that records its
# calls, answers with recorded kubectl output and runs each `kubectl exec ... rdmak bench` as this
# build's rdmak on a pod tree with the stand-in perftest. Checked: the calls and their order
# (create, wait, get, exec server, exec client with the server pod's IP, delete), the result,
# a pod that never gets Ready (unschedulable, image pull), a server that cannot run, and an
# interrupt: the pods are deleted in every case. The pods themselves are checked as Kubernetes
# objects in tests/js/bench_k8s.test.mjs.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/doctor/lib.sh"

CAP=$TOP/tests/captures/bench
KUBECTL=$TOP/tests/bench/k8s/kubectl
export PATH="$TOP/tests/bench/standin:$PATH" KUBECTL_LOG=$TMP/kubectl BENCH_LOG=$TMP/perftest
unset BENCH_CAPTURE BENCH_CAPTURE_SERVER BENCH_CAPTURE_DIR BENCH_STATUS BENCH_BARRIER BENCH_HOLD KUBECTL_SCENARIO

srv=$TMP/a31; node_copy s002-a31 "$srv"; pod_files "$srv"
cli=$TMP/a42; node_copy s002-a31 "$cli"; pod_files "$cli"
export KUBECTL_ROOT_SERVER=$srv KUBECTL_ROOT_CLIENT=$cli
k8s() { : >"$KUBECTL_LOG"; : >"$BENCH_LOG"; run "$RDMAK" bench k8s --kubectl "$KUBECTL" --resource rdma/rdma_shared_device_a \
	--node a31 --node a42 --name t "$@"; }
field() { printf '%s' "$out" >"$TMP/doc.json"; jget "$TMP/doc.json" "$1"; }
calls() { cut -d' ' -f1 "$KUBECTL_LOG" | tr '\n' ' '; }

# ---- seed 002's test between a31 and a42, the whole way -----------------------------------------
export BENCH_CAPTURE=$CAP/s002-host-client.txt BENCH_CAPTURE_SERVER=$CAP/s002-host-server.txt
k8s --run --json
is "$rc" 0 "seed 002 through kubectl: exit 0"
is "$(calls)" "create wait get exec exec delete " "create, wait, get, exec server, exec client, delete"
is "$(sed -n 2p "$KUBECTL_LOG")" "wait --for=condition=Ready -n default --timeout=300s pod t-server t-client" "wait for both pods Ready"
is "$(sed -n 4p "$KUBECTL_LOG")" "exec -n default t-server -c bench -- rdmak bench server --json" "the server first"
is "$(sed -n 5p "$KUBECTL_LOG")" "exec -n default t-client -c bench -- rdmak bench client --json 10.233.84.218" \
	"then the client, given the server pod's IP"
is "$(sed -n 6p "$KUBECTL_LOG")" "delete pod t-server t-client -n default --ignore-not-found --wait=false" "the pods deleted"
like "$(cat "$KUBECTL_LOG.create")" 'name: t-server' "create was given the pods"
is "$(field 'd["verdict"]') $(field 'd["path"]["limited_by"]') $(field 'd["server"]["verdict"]') $(field 'd["client"]["verdict"]')" \
	"pass client pass pass" "both sides judged, the path's ceiling from the lower side"
like "$(field 'd["path"]["reasons"][0]["text"]')" '98.38 Gb/s is 99 % of the 99.4 Gb/s the path can carry' "the path in words"
is "$(wc -l <"$BENCH_LOG")" 2 "perftest ran once in each pod"
k8s --run
like "$out" '== rdmak bench k8s: pass ==' "text: the verdict"
like "$out" ' 8388608    5000             98.38              98.38' "text: the client's perftest table"
like "$err" 'deleting pod/t-server pod/t-client' "stderr: what it does"

# options reach rdmak bench in the pods
k8s --run --json --test ib_write_bw -q 2 --all --min-gbps 90 -- -n 100
is "$(sed -n 5p "$KUBECTL_LOG")" "exec -n default t-client -c bench -- rdmak bench client --json --test ib_write_bw --qps 2 --all --min-gbps 90 10.233.84.218 -- -n 100" \
	"test options, thresholds and perftest's own arguments passed on"

# numbers as every role reads them (util/opt.h), before any pod is made
k8s --count ' 2'
is "$rc $err" "3 rdmak bench k8s: --count: expected 1 to 1024, got ' 2'" "--count ' 2': refused, one error line"
k8s --timeout 010 --min-percent nan
is "$rc $err" "3 rdmak bench k8s: --min-percent: expected 1 to 100 % (up to 3 decimals), got 'nan'" \
	"--min-percent nan: refused here, not taken as 0 and passed to the pods"
is "$(wc -c <"$KUBECTL_LOG")" 0 "nothing asked of kubectl"

# rails: each pod runs one pair per interface; the path is judged per pod
export BENCH_CAPTURE=$CAP/s002-host-client.txt BENCH_CAPTURE_SERVER=$CAP/s002-host-server.txt
KUBECTL_ROOT_SERVER=$NODES/v100-ib KUBECTL_ROOT_CLIENT=$NODES/v100-ib k8s --run --json --rails
is "$(sed -n 5p "$KUBECTL_LOG")" "exec -n default t-client -c bench -- rdmak bench client --json --rails 10.233.84.218" "--rails passed on"
is "$(grep -c ' 10.233.84.218$' "$BENCH_LOG")" 2 "two rails in the client pod"
is "$(field 'd["path"]["reasons"][0]["code"]') $(field 'd["client"]["total"]["rails"]')" "rails 2" "judged per rail, with the client's total"

# ---- a pod that never gets Ready ------------------------------------------------------------------
KUBECTL_SCENARIO=unschedulable k8s --run --json
is "$rc" 2 "client pod unschedulable: exit 2"
is "$(calls)" "create wait get delete " "no exec, and the pods deleted"
is "$(field 'd["reasons"][0]["code"]')" pod_not_ready "pod_not_ready"
like "$(field 'd["reasons"][0]["text"]')" 'pod t-client is not scheduled: Unschedulable: 0/9 nodes are available: 1 Insufficient rdma/rdma_shared_device_a' \
	"the scheduler's message"
is "$(field 'len(d["reasons"])')" 1 "the running server pod is not blamed"
KUBECTL_SCENARIO=imagepull k8s --run --json
is "$rc" 2 "image pull back-off: exit 2"
like "$(field 'd["reasons"][0]["text"]')" 'container bench: ImagePullBackOff: Back-off pulling image "rdmak-bench:'"$("$TOP/tools/version.sh")"'"' "the kubelet's reason"
like "$(field 'd["reasons"][0]["fix"]')" '--registry' "the fix: build, push, --registry"
is "$(tail -1 "$KUBECTL_LOG" | cut -d' ' -f1)" delete "deleted"

# ---- the server cannot run: its own verdict says why, the client never starts -------------------
KUBECTL_ROOT_SERVER=$NODES/no-rdma k8s --run --json
is "$rc" 2 "no RDMA device in the server pod: exit 2"
is "$(calls)" "create wait get exec delete " "no client exec"
is "$(field 'd["server"]["sides"][0]["reasons"][0]["code"]')" no_usable_device "the server's reason"

# ---- Ctrl-C while the client runs: the pods are deleted -------------------------------------------
: >"$KUBECTL_LOG"
KUBECTL_SCENARIO=hang "$RDMAK" bench k8s --kubectl "$KUBECTL" --resource rdma/rdma_shared_device_a --node a31 --node a42 \
	--name t --run --json >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
for _ in $(seq 1 400); do grep -q 'exec -n default t-client' "$KUBECTL_LOG" && break; sleep 0.05; done
like "$(cat "$KUBECTL_LOG")" 'exec -n default t-client' "the client's exec is running"
kill -INT "$pid"
wait "$pid"; rc=$?
is "$rc" 2 "SIGINT: exit 2"
is "$(tail -1 "$KUBECTL_LOG")" "delete pod t-server t-client -n default --ignore-not-found --wait=false" "SIGINT: the pods deleted"
out=$(cat "$TMP/int.out")
is "$(field 'd["reasons"][0]["code"]')" interrupted "the result says it was interrupted"
is "$(pgrep -f "$KUBECTL exec -n default t-client" | wc -l)" 0 "no kubectl exec left behind"

# ---- usage ---------------------------------------------------------------------------------------
run "$RDMAK" bench k8s --node a --node b; is "$rc" 3 "no --resource: exit 3"
run "$RDMAK" bench k8s --resource rdma/x --node a; is "$rc" 3 "one --node: exit 3"
run "$RDMAK" bench k8s --resource 'rdma x' --node a --node b; is "$rc" 3 "a resource name with a blank: exit 3"
run "$RDMAK" bench k8s --resource rdma/x --node A_B --node b; is "$rc" 3 "a node name that is not DNS: exit 3"
run "$RDMAK" bench k8s --resource rdma/x --node a --node b --image i --registry r; is "$rc" 3 "--image with --registry: exit 3"
# names as Kubernetes has them (src/k8s): what the API server or the kubelet would refuse
for r in kubernetes.io/x requests.nvidia.com/gpu rdma/_x mykubernetes.io/hca; do
	run "$RDMAK" bench k8s --resource "$r" --node a --node b; is "$rc" 3 "--resource $r (not an extended resource): exit 3"
done
like "$err" "not an extended resource name \\(vendor/name\\): the kubernetes.io domain is reserved" "and says which rule"
run "$RDMAK" bench k8s --resource rdma/x --node a..b --node b; is "$rc" 3 "a node name with an empty label: exit 3"
run "$RDMAK" bench k8s --resource rdma/x --node a --node b --namespace a.b; is "$rc" 3 "a namespace with a dot: exit 3"
like "$err" "not a namespace name: must not contain dots" "and says why"
run "$RDMAK" bench k8s --help; is "$rc" 0 "--help: exit 0"

done_testing
