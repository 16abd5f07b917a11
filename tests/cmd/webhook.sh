#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak webhook` on the command line: --help, usage errors, --check on the test config (text and
# JSON), --explain on the seeds' pods and seed 003's Volcano job (YAML in, YAML out; --json), a
# second --explain over the first's output adding nothing, refusals exiting 1, bad files exiting 2
# naming the line or field, and the server refusing to start on a bad key pair or a taken port.
. "$(dirname "$0")/../lib.sh"
FX="$TOP/tests/fixtures/webhook"
CFG="$FX/config.yaml"

run "$RDMAK" webhook --help
is "$rc" 0 "--help exits 0"
like "$out" "--tls-cert FILE" "--help documents --tls-cert"
like "$out" "Exit: 0 done" "--help documents the exit codes"
run "$RDMAK" webhook --bogus
is "$rc" 2 "an unknown option exits 2"
run "$RDMAK" webhook --tls-cert a --tls-key b
is "$rc" 2 "no --config exits 2"
like "$err" "--config FILE is required" "and says so"
run "$RDMAK" webhook --config "$CFG"
is "$rc" 2 "serving without a key pair exits 2"
run "$RDMAK" webhook --config "$CFG" --json --tls-cert a --tls-key b
is "$rc" 2 "--json without --explain or --check exits 2"
run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b --listen 1.2.3:80
is "$rc" 2 "a bad --listen exits 2"
like "$err" "--listen 1.2.3:80: the address is not a numeric IPv4 or IPv6 address" "naming the address"
run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b --request-timeout 0
is "$rc" 2 "--request-timeout 0 exits 2"
# issue 16 §2.10: strtod read "nan" as a number that passed both bounds, then 0 ms ("got 0 ms")
for v in nan inf -1 10x 1e1 0x10 ' 10' 1. .5 0.0001 601; do
	run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b --request-timeout "$v"
	is "$rc" 2 "--request-timeout '$v' exits 2"
	is "$err" "rdmak webhook: --request-timeout: expected 0.1 to 600 s (up to 3 decimals), got '$v'" \
		"naming the flag and the value '$v'"
done
for v in 0.05 61 nan; do
	run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b --tls-handshake-timeout "$v"
	is "$err" "rdmak webhook: --tls-handshake-timeout: expected 0.1 to 60 s (up to 3 decimals), got '$v'" \
		"--tls-handshake-timeout '$v' is refused naming the flag"
done
for o in --workers --max-connections; do
	for v in ' 4' 4x 0x4 ''; do
		run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b "$o" "$v"
		like "$rc $err" "^2 rdmak webhook: $o: expected 1 to [0-9]+, got '$v'\$" "$o '$v': refused, one error line"
	done
done
run "$RDMAK" webhook --config "$CFG" --tls-cert a --tls-key b --shutdown-grace nan
is "$err" "rdmak webhook: --shutdown-grace: expected 0 to 600 s (up to 3 decimals), got 'nan'" \
	"--shutdown-grace nan: refused the same way"

# the config's kind: serving (and each reload) takes a regular file only, as every role that keeps
# running; a FIFO once held the start until a writer came. --check and --explain read a pipe.
mkfifo "$TMP/fifo"
run timeout -k 5 30 "$RDMAK" webhook --config "$TMP/fifo" --tls-cert a --tls-key b --listen 127.0.0.1:0
is "$rc $err" "2 rdmak webhook: $TMP/fifo: not a regular file (a FIFO, device or socket): a role that keeps running reads a file (a ConfigMap's); a pipe is read only by a command that reads it once (--check, --explain)" \
	"serving: a FIFO as --config is refused by name, saying what it takes"
run "$RDMAK" webhook --check --config <(cat "$CFG")
is "$rc" 0 "--check reads its config from a pipe ($err)"

# --check
run "$RDMAK" webhook --check --config "$CFG"
is "$rc" 0 "--check on the test config exits 0"
like "$out" "gpu-sriov: 8 networks, IPC_LOCK on, /dev/shm on, memory-limit warning on, on error deny" "--check: a group per line"
like "$out" "  network spiderpool/gpu8-sriov  spidernet.io/gpu8sriov: 1" "--check: its networks"
like "$out" "GPU resources: nvidia.com/gpu, nvidia.com/v100, nvidia.com/a100" "--check: GPU resources"
run "$RDMAK" webhook --check --json --config "$CFG"
printf '%s' "$out" >"$TMP/check.json"
is "$(jget "$TMP/check.json" "[g['name'] for g in d['groups']]")" '["gpu-sriov", "shared-a", "v100", "hostdev"]' "--check --json: the groups, in order"
is "$(jget "$TMP/check.json" "d['groups'][1]['shmSizeLimit']")" "8Gi" "--check --json: options"
printf 'groups:\n  a:\n    networks:\n      - {name: x, resource: rdma/x, count: 2000}\n' >"$TMP/bad.yaml"
run "$RDMAK" webhook --check --config "$TMP/bad.yaml"
is "$rc" 2 "--check on a bad config exits 2"
is "$err" "rdmak webhook: $TMP/bad.yaml: groups.a.networks[0].count: expected 1 to 1024, got 2000" "naming the file and the field"
run "$RDMAK" webhook --check --config "$TMP/nonexistent.yaml"
is "$rc" 2 "--check on a missing config exits 2"

# --explain: seed 004's rdma-tools pod, YAML in and out
run "$RDMAK" webhook --explain --config "$CFG" "$FX/seed004-rdma-tools-pod.yaml"
is "$rc" 0 "--explain on seed 004's pod exits 0"
like "$err" '^pod: groups gpu-sriov, container "rdma-test":' "stderr names the group and container"
like "$err" "  \\+ network spiderpool/gpu1-sriov" "stderr lists the networks added"
like "$err" "  \\+ resource spidernet.io/gpu8sriov: 1" "and the resources"
like "$out" "k8s.v1.cni.cncf.io/networks: '\\[\\{\"name\":\"gpu1-sriov\",\"namespace\":\"spiderpool\"\\}," "stdout: the pod in YAML with the JSON list"
printf '%s\n' "$out" >"$TMP/mutated.yaml"
run "$RDMAK" webhook --explain --json --config "$CFG" "$TMP/mutated.yaml"
is "$rc" 0 "--explain over its own output exits 0"
printf '%s' "$out" >"$TMP/again.json"
is "$(jget "$TMP/again.json" "[d['allowed'], d['results'][0]['changes'], d['results'][0]['patch']]")" '[true, [], []]' "a second pass adds nothing (empty patch)"

run "$RDMAK" webhook --explain --json --config "$CFG" "$FX/seed004-rdma-tools-pod.yaml"
printf '%s' "$out" >"$TMP/ex.json"
is "$(jget "$TMP/ex.json" "[d['allowed'], d['results'][0]['groups'], d['results'][0]['container'], len(d['results'][0]['changes'])]")" \
	'[true, "gpu-sriov", "rdma-test", 17]' "--json: allowed, group, container, 17 changes"
is "$(jget "$TMP/ex.json" "d['object']['spec']['containers'][0]['resources']['limits']['spidernet.io/gpu3sriov']")" "1" "--json: the mutated object"
is "$(jget "$TMP/ex.json" "sorted(set(op['op'] for op in d['results'][0]['patch']))")" '["add"]' "--json: the patch only adds"

# seed 003's Volcano job: both task templates, with the annotation added to them
sed 's/^      template:$/      template:\n        metadata:\n          annotations:\n            rdmak.io\/rdma-networks: v100,shared-a/' \
	"$FX/seed003-vllm-volcano-job.yaml" >"$TMP/job.yaml"
run "$RDMAK" webhook --explain --json --config "$CFG" "$TMP/job.yaml"
is "$rc" 0 "--explain on the Volcano job exits 0"
printf '%s' "$out" >"$TMP/job.json"
is "$(jget "$TMP/job.json" "[(r['template'], r['container'], r['changes']) for r in d['results']]")" \
	'[["spec.tasks[0].template", "master", ["resource rdma/rdma_shared_device_a: 1"]], ["spec.tasks[1].template", "worker", ["resource rdma/rdma_shared_device_a: 1"]]]' \
	"each task's template: the shared HCA added to its GPU container"
is "$(jget "$TMP/job.json" "d['object']['spec']['tasks'][1]['template']['spec']['containers'][0]['resources']['requests']['rdma/rdma_shared_device_a']")" "1" "the job comes back with its templates mutated"

# every --json output above against its documented schema (docs/webhook-*.schema.json)
schema_ok() { # schema_ok SCHEMA FILE
	python3 - "$TOP/docs/$1" "$2" <<'PY'
import json, sys, jsonschema
try:
    jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
    print("valid")
except jsonschema.ValidationError as e:
    print(e.message)
PY
}
is "$(schema_ok webhook-check.schema.json "$TMP/check.json")" valid "--check --json matches docs/webhook-check.schema.json"
for f in ex again job; do
	is "$(schema_ok webhook-explain.schema.json "$TMP/$f.json")" valid "--explain --json ($f) matches docs/webhook-explain.schema.json"
done

# refusals and bad input
sed 's/rdma-resource-inject: gpu-sriov/rdma-resource-inject: gpu-none/' "$FX/seed004-rdma-tools-pod.yaml" >"$TMP/unknown.yaml"
run "$RDMAK" webhook --explain --config "$CFG" "$TMP/unknown.yaml"
is "$rc" 1 "--explain on a pod the webhook refuses exits 1"
like "$err" 'pod: refused: annotation cni.spidernet.io/rdma-resource-inject: no group "gpu-none"' "naming the group"
is "$out" "" "and prints no pod"
run "$RDMAK" webhook --explain --json --config "$CFG" "$TMP/unknown.yaml"
is "$rc" 1 "--explain --json on a refused pod exits 1 too"
printf '%s' "$out" >"$TMP/refused.json"
is "$(jget "$TMP/refused.json" "[d['allowed'], d['results'][0]['container'], d['results'][0]['patch']]")" '[false, null, []]' "--json: allowed false, no container, no patch"
is "$(schema_ok webhook-explain.schema.json "$TMP/refused.json")" valid "and matches the schema"
# issue 16 §2.1: a refusal decided before the groups are read (the two annotations disagree) was
# printed as "no ... annotation: unchanged" above the refusal
sed 's/^    cni.spidernet.io\/rdma-resource-inject: gpu-sriov$/&\n    rdmak.io\/rdma-networks: shared-a/' \
	"$FX/seed004-rdma-tools-pod.yaml" >"$TMP/two.yaml"
run "$RDMAK" webhook --explain --config "$CFG" "$TMP/two.yaml"
is "$rc" 1 "--explain on a pod whose two annotations name different groups exits 1"
is "$err" 'pod: refused: annotations rdmak.io/rdma-networks ("shared-a") and cni.spidernet.io/rdma-resource-inject ("gpu-sriov") name different groups; keep one' \
	"one line: refused, naming both annotations (nothing says unchanged)"
is "$out" "" "and prints no pod"
run "$RDMAK" webhook --explain --json --config "$CFG" "$TMP/two.yaml"
printf '%s' "$out" >"$TMP/two.json"
is "$(jget "$TMP/two.json" "[d['allowed'], d['results'][0]['allowed'], d['results'][0]['groups'], d['results'][0]['message'][:11]]")" \
	'[false, false, null, "annotations"]' "--json: refused, no groups read, the message"
run "$RDMAK" webhook --explain --config "$CFG" "$TMP/nope.yaml"
is "$rc" 2 "--explain on a missing file exits 2"
printf 'apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n' >"$TMP/broken.yaml"
run "$RDMAK" webhook --explain --config "$CFG" "$TMP/broken.yaml"
is "$rc" 2 "--explain on broken YAML exits 2"
like "$err" "broken.yaml: line 5 column 1: " "naming the line"
run "$RDMAK" webhook --explain --config "$CFG"
is "$rc" 2 "--explain without a pod file exits 2"

# the server: a key that is not the certificate's, a missing file, a taken port
P="$TMP/pki"; mkdir -p "$P"
for n in a b; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$P/$n.key" -out "$P/$n.crt" \
		-days 1 -subj "/CN=$n" >/dev/null 2>&1
done
run timeout 20 "$RDMAK" webhook --config "$CFG" --tls-cert "$P/a.crt" --tls-key "$P/b.key" --listen 127.0.0.1:0
is "$rc" 2 "a key that is not the certificate's: exit 2"
like "$err" "the key is not the certificate's key" "and says so"
run timeout 20 "$RDMAK" webhook --config "$CFG" --tls-cert "$P/none.crt" --tls-key "$P/a.key" --listen 127.0.0.1:0
is "$rc" 2 "a missing certificate: exit 2"
like "$err" "none.crt: No such file or directory" "naming the file"
"$RDMAK" webhook --config "$CFG" --tls-cert "$P/a.crt" --tls-key "$P/a.key" --listen 127.0.0.1:0 2>"$TMP/first.log" &
first=$!
trap 'kill $first 2>/dev/null; rm -rf "$TMP"' EXIT
port=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on https:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/first.log")
	[ -n "$port" ] && break
	sleep 0.1
done
run timeout 20 "$RDMAK" webhook --config "$CFG" --tls-cert "$P/a.crt" --tls-key "$P/a.key" --listen "127.0.0.1:$port"
is "$rc" 1 "a port in use: exit 1"
like "$err" "cannot serve on 127.0.0.1:$port: the address is in use" "and says so"
kill -TERM "$first"
wait "$first"
is "$?" 0 "the first server exits 0 on SIGTERM"
done_testing
