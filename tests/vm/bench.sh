#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak bench server and client running perftest over soft-RoCE end to end, and bench judge on
# the client's capture. Under TCG the figure means nothing (perftest's cycle counter and the
# emulated CPU): the verdict's shape is what is judged, never a pass.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
gid=$(grep -lx "$(vm_gid 10.77.0.1)" /sys/class/infiniband/rxea/ports/1/gids/*)
gid=${gid##*/}

# perftest says "Waiting for client to connect" with printf and no fflush: into a pipe, nothing
# comes out before its client does, so a reader of its output cannot tell that it listens
mkfifo "$TMP/pipe"
cat "$TMP/pipe" >"$TMP/pipe.out" &
ib_write_bw -d rxea -x "$gid" >"$TMP/pipe" 2>&1 &
pt=$!
for i in $(seq 100); do ss -ltn | grep -q ':18515 ' && break; vm_sleep 0.1; done
ok $(ss -ltn | grep -q ':18515 ' && echo 0 || echo 1) "perftest's server listens on TCP 18515"
is "$(stat -c %s "$TMP/pipe.out")" 0 "  and has written nothing into its pipe yet (stdout fully buffered)"
kill "$pt"
wait

"$RDMAK" bench server -d rxea -q 1 -D 2 --json >"$TMP/server.json" 2>"$TMP/server.err" &
srv=$!
for i in $(seq 300); do
	_slurp e "$TMP/server.err"
	[[ $e == *"ready: perftest listening"* ]] && break
	kill -0 "$srv" 2>/dev/null || break
	vm_sleep 0.1
done
like "$e" 'rdmak bench: ready: perftest listening on TCP port 18515' "server: perftest waits for its client"
run "$RDMAK" bench client -d rxea -q 1 -D 2 --json 10.77.0.1
printf '%s\n' "$out" >"$TMP/client.json"
printf '%s\n' "$err" >"$TMP/client.err"
wait "$srv"
src=$?
crc=$rc
checks "$TMP/client.json" "$TMP/server.json" "$TOP/docs/bench.schema.json" "$crc" "$src" "$gid" <<'PY'
import jsonschema
c = load(sys.argv[1]); s = load(sys.argv[2]); schema = load(sys.argv[3])
crc, src, gid = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
for name, d, rc in (("client", c, crc), ("server", s, src)):
    try:
        jsonschema.validate(d, schema); err = None
    except jsonschema.ValidationError as e:
        err = e.message
    check(err is None, f"{name}: its JSON is what docs/bench.schema.json describes", err)
    check(d["verdict"] in ("pass", "warn", "fail"), f"{name}: a verdict ({d['verdict']}), not invalid", d.get("sides"))
    check(rc == {"pass": 0, "warn": 1, "fail": 2}.get(d["verdict"]), f"{name}: exit {rc} follows the verdict")
    side = d["sides"][0]
    check(side["device"] == "rxea" and side["port"] == 1 and side["netdev"] == "va", f"{name}: rxea port 1 on va", side)
    check(side["gid_index"] == gid, f"{name}: -x {gid}, the RoCE v2 GID of va's IPv4 address (sysfs)", side["gid_index"])
    check(f"-x {gid}" in " ".join(side["command"]) if isinstance(side["command"], list) else f"-x {gid}" in side["command"],
          f"{name}: perftest was run with -x {gid}", side["command"])
    check(side["exit_status"] == 0, f"{name}: perftest exited 0", side.get("output", "")[-800:])
sc = c["sides"][0]
check(sc["gbps"] is not None and sc["gbps"] > 0, f"client: a figure measured over rxe ({sc['gbps']} Gb/s)", sc)
check(sc["ceiling"]["data_gbps"] == 10 and sc["ceiling"]["rate"] == rd("/sys/class/infiniband/rxea/ports/1/rate"),
      "client: the ceiling starts from rxe's rate file (10 Gb/s of data)", sc["ceiling"])
check(len(sc["reasons"]) > 0 and all(r.get("status") for r in sc["reasons"]), "client: the verdict gives its reasons", sc["reasons"])
with open(sys.argv[1] + ".out", "w") as f:
    f.write(sc["output"])
PY

# ---- judge the capture: the same verdict ------------------------------------------------------------
run "$RDMAK" bench judge --json "$TMP/client.json.out"
printf '%s\n' "$out" >"$TMP/judge.json"
checks "$TMP/judge.json" "$TMP/client.json" "$rc" <<'PY'
j = load(sys.argv[1]); c = load(sys.argv[2]); rc = int(sys.argv[3])
js, cs = j["sides"][0], c["sides"][0]
check(j["mode"] == "judge", "judge: mode judge")
check((j["verdict"], js["gbps"], js["ceiling"]["gbps"]) == (c["verdict"], cs["gbps"], cs["ceiling"]["gbps"]),
      "judge on the client's perftest output: the client's verdict, figure and ceiling",
      f"judge {(j['verdict'], js['gbps'], js['ceiling'])}\nclient {(c['verdict'], cs['gbps'], cs['ceiling'])}")
check(js["result"]["device"] == "rxea", "judge: the device from perftest's header", js["result"])
check(rc == {"pass": 0, "warn": 1, "fail": 2}.get(j["verdict"]), f"judge: exit {rc} follows the verdict")
PY
done_testing
