#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak doctor's command line: what it refuses (exit 3) before any check runs, naming the
# option and the value, so that a typo in a CI gate or a sidecar's --pid fails loudly.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/doctor/lib.sh"

V100=$NODES/v100-ib

# ---- --check -------------------------------------------------------------------------------
run "$RDMAK" doctor --root "$V100" --check nosuch
is "$rc" 3 "--check nosuch: exit 3"
like "$err" '^rdmak doctor: --check nosuch: no such check' "--check nosuch: names the unknown check"
is "$out" "" "--check nosuch: prints no table"
run "$RDMAK" doctor --root "$V100" --check port.state --check nosuch
is "$rc" 3 "one unknown --check among known ones: exit 3"
run "$RDMAK" doctor --root "$V100" --check pod.memlock
is "$rc" 3 "a pod check without --pod: exit 3"
like "$err" 'pod.memlock: a pod check, run only with --pod' "and says why"
run "$RDMAK" doctor --root "$V100" --check port
is "$rc" 0 "--check by prefix (port) still runs port.state and port.sm"
like "$out" 'port\.sm' "the prefix selected port.sm"

# ---- --pid ------------------------------------------------------------------------------------
p=$TMP/pod; node_copy v100-ib "$p"; pod_files "$p"
run "$RDMAK" doctor --pod --root "$p" --pid 999999
is "$rc" 3 "--pid of no process: exit 3"
like "$err" "--pid 999999: no such process \\($p/proc/999999\\)" "names the process and the path"
is "$out" "" "and reports no finding (not the doctor's own /proc/self)"
cp -a "$p/proc/self" "$p/proc/4242"
run "$RDMAK" doctor --pod --root "$p" --pid 4242 --check pod.memlock
is "$rc" 0 "--pid of a process that exists: the checks run"

# ---- --image ----------------------------------------------------------------------------------
run "$RDMAK" doctor --pod --root "$p" --image "$TMP/nonexistent"
is "$rc" 3 "--image that does not exist: exit 3"
like "$err" "--image $TMP/nonexistent: no such image root" "says no such image root"
unlike "$err$out" 'libibverbs is not installed' "and does not blame the image's libraries"
: >"$TMP/afile"
run "$RDMAK" doctor --pod --root "$p" --image "$TMP/afile"
is "$rc" 3 "--image that is a file: exit 3"
like "$err" 'no such image root \(Not a directory\)' "says it is not a directory"
run "$RDMAK" doctor --pod --root "$p" --image "$p" --check pod.provider
is "$rc" 0 "--image of a real image root: pod.provider runs"

# ---- --env FILE: a shell's simple assignments, or /proc/PID/environ, nothing guessed ---------------
printf '%s\n' '# NCCL' 'export NCCL_IB_HCA="=mlx5_1"' "NCCL_DEBUG='INFO'  # why" >"$TMP/ok.env"
run "$RDMAK" doctor --pod --root "$p" --env "$TMP/ok.env" --check nccl.ib_hca --json
is "$rc" 0 "--env with comments, export and quotes: read"
like "$out" '=mlx5_1' "the quoted value is taken without its quotes"
printf 'NCCL_IB_HCA=mlx5_1\nNCCL_SOCKET_IFNAME=$IFACE\n' >"$TMP/var.env"
run "$RDMAK" doctor --pod --root "$p" --env "$TMP/var.env"
is "$rc" 3 "--env with a shell expansion: exit 3"
like "$err" "--env $TMP/var.env: line 2: a character the shell would interpret" "names the line and why"
printf 'NCCL_IB_HCA=mlx5_1\nNCCL_DEBUG=INFO\0NCCL_IB_HCA=mlx5_0\n' >"$TMP/nul.env"
run "$RDMAK" doctor --pod --root "$p" --env "$TMP/nul.env"
is "$rc" 3 "--env text with a NUL byte inside: exit 3, not read as /proc/PID/environ"
like "$err" 'line 2: a NUL byte' "names the line of the NUL byte"
mkdir -p "$TMP/proc1"
printf 'PATH=/bin\0NCCL_IB_HCA==mlx5_0:1\0' >"$TMP/proc1/environ"
run "$RDMAK" doctor --pod --root "$p" --env "$TMP/proc1/environ" --check nccl.ib_hca --json
is "$rc" 0 "--env .../environ: read as NUL-separated records"
like "$out" '=mlx5_0:1' "its value is taken"
# ---- --interval, --alive-file, --warnings-ok: the chart's DaemonSet and helm test Job ----------
run "$RDMAK" doctor --root "$V100" --interval 0
is "$rc" 3 "--interval 0: exit 3"
like "$err" "--interval: expected 1 to 86400 s, got '0'" "names the range"
run "$RDMAK" doctor --root "$V100" --interval ' 5'
is "$rc" 3 "--interval ' 5' (a blank): exit 3, as every number of every role"
run "$RDMAK" doctor --pod --root "$p" --interval 5
is "$rc" 3 "--interval with --pod: exit 3"
like "$err" "--interval is for node mode" "says why"
run "$RDMAK" doctor --root "$V100" --alive-file "$TMP/alive"
is "$rc" 3 "--alive-file without --interval: exit 3"
# /dev/shm of 512 MiB is a warning (doctor_pod.sh): exit 1, or 0 with --warnings-ok; a failure
# stays 2 either way
sed -i 's/size=1048576k/size=524288k/' "$p/proc/self/mountinfo"
run "$RDMAK" doctor --pod --root "$p" --check pod.shm --json
w=$rc
like "$out" '"status": "warn"' "the pod tree with a 512 MiB /dev/shm: a warning"
run "$RDMAK" doctor --pod --root "$p" --check pod.shm --json --warnings-ok
is "$w:$rc" "1:0" "a warning: exit 1, and 0 with --warnings-ok"
run "$RDMAK" doctor --root "$NODES/a100-ib-bond" --check port.state --warnings-ok
is "$rc" 2 "--warnings-ok leaves a failure at exit 2"

# node mode as a daemon: a round at once and every interval, each its own JSON array, the alive
# file touched, SIGTERM ends it with exit 0 (PID 1 of a container gets no default action)
"$RDMAK" doctor --root "$V100" --json --interval 1 --alive-file "$TMP/alive" --nfd "$TMP/nfd" \
	>"$TMP/rounds" 2>"$TMP/rounds.err" &
pid=$!
n=0
# (cat, not grep on the file: until the job has opened it there is no file, and grep -c of no
# file prints nothing, which ended the wait at once)
while [ "$(cat "$TMP/rounds" 2>/dev/null | grep -c '^\[')" -lt 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
run "$RDMAK" probe "$TMP/alive"
is "$rc" 0 "rdmak probe on the running doctor's alive file: exit 0"
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "SIGTERM: the doctor stops with exit 0"
ok "$([ "$(grep -c '^\[' "$TMP/rounds")" -ge 2 ]; echo $?)" "two rounds or more were printed"
"$PY" -c 'import json,sys; t=open(sys.argv[1]).read(); d=json.JSONDecoder(); i=0; n=0
while i < len(t):
	o, i = d.raw_decode(t, i); n += 1
	while i < len(t) and t[i].isspace(): i += 1
	assert isinstance(o, list) and o
print(n)' "$TMP/rounds" >"$TMP/n"
ok $? "each round is one whole JSON array of findings"
like "$(cat "$TMP/rounds.err")" "checking the node every 1 s" "the log says what it does"
like "$(cat "$TMP/rounds.err")" "stopping on" "and why it stopped"
[ -s "$TMP/nfd" ]
ok $? "the NFD feature file was written"
touch -d '2 minutes ago' "$TMP/alive"
run "$RDMAK" probe --max-age 60 "$TMP/alive"
is "$rc" 1 "rdmak probe on a file older than --max-age: exit 1"
like "$err" "last touched 1[0-9][0-9] s ago" "saying how old"

done_testing
