#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One broken port file (state garbage or empty, phys_state unreadable) must not hide the rest
# of the node: list prints everything with that field UNKNOWN, names the file on stderr and
# exits 1; the doctor reports it as a failing finding and goes on; plugin --dry-run names it on
# stderr and serves the rest; snapshot captures it, and list on the snapshot says the same.
# Root reads a mode-000 file: the suite (run as root) also makes an unreadable file as a
# directory where the attribute should be (EISDIR), and runs the mode-000 case as nobody
# through setpriv.
. "$(dirname "$0")/../lib.sh"

mk() { # mk NAME: a private v100-ib; prints mlx5_0 port 1's directory
	cp -a "$NODES/v100-ib" "$TMP/$1"
	echo "$(readlink -f "$TMP/$1/sys/class/infiniband/mlx5_0")/ports/1"
}

# ---- garbage: named as such, not "Invalid argument" --------------------------------------------
p=$(mk garbage); printf 'xyz\n' >"$p/state"
run "$RDMAK" list --root "$TMP/garbage"
is "$rc" 1 "garbage state: list exits 1"
like "$err" "^rdmak list: unexpected content \"xyz\" in $TMP/garbage/sys/class/infiniband/mlx5_0/ports/1/state" \
	"garbage state: stderr names the content and the file"
unlike "$err" 'Invalid argument' "garbage state: not 'Invalid argument'"
like "$out" '^mlx5_0 +1 +UNKNOWN +LinkUp ' "garbage state: mlx5_0's row shows the state UNKNOWN"
like "$out" '^mlx5_1 +1 +ACTIVE +LinkUp ' "garbage state: the rest of the node is listed"
"$RDMAK" list --root "$TMP/garbage" --json >"$TMP/g.json" 2>/dev/null
is "$(jget "$TMP/g.json" "[[q['state_id'], q['errors']] for r in d['rdma_devices'] for q in r['ports'] if r['name']=='mlx5_0'][0]")" \
	'[-1, ["unexpected content \"xyz\" in class/infiniband/mlx5_0/ports/1/state"]]' "garbage state: --json state_id -1 and errors[]"
is "$(jget "$TMP/g.json" "[q['errors'] for r in d['rdma_devices'] for q in r['ports'] if r['name']=='mlx5_1'][0]")" '[]' \
	"--json: a sound port has errors []"
"$PY" -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
	"$TMP/g.json" "$TOP/docs/list.schema.json"
ok $? "garbage state: --json matches docs/list.schema.json"

run "$RDMAK" doctor --root "$TMP/garbage" --json
is "$rc" 2 "garbage state: doctor exits 2 (a failing finding), not 3"
printf '%s' "$out" >"$TMP/gd.json"
is "$(jget "$TMP/gd.json" "[f['status'] for f in d if f['id']=='port.state' and f['object']=='mlx5_0/1'][0]")" fail \
	"garbage state: port.state fails for mlx5_0/1"
like "$(jget "$TMP/gd.json" "[f['title'] for f in d if f['id']=='port.state' and f['object']=='mlx5_0/1'][0]")" \
	'unparsable state.*unexpected content "xyz" in .*/mlx5_0/ports/1/state' "garbage state: the finding names the content and file"
is "$(jget "$TMP/gd.json" "[f['status'] for f in d if f['id']=='port.state' and f['object']=='mlx5_1/1'][0]")" ok \
	"garbage state: the doctor goes on (mlx5_1/1 ok)"
is "$(jget "$TMP/gd.json" "len(set(f['id'] for f in d))")" 14 "garbage state: every node check ran"

run "$RDMAK" snapshot -o "$TMP/g.tar.gz" --root "$TMP/garbage"
is "$rc" 0 "garbage state: snapshot captures the node (exit 0)"
like "$err" "warning: unexpected content \"xyz\" in .*/state \\(captured as it is\\)" "garbage state: snapshot says what it captured"
mkdir "$TMP/gx" && tar -xzf "$TMP/g.tar.gz" -C "$TMP/gx"
run "$RDMAK" list --root "$TMP/gx"
like "$err" "unexpected content \"xyz\" in $TMP/gx/sys/class/infiniband/mlx5_0/ports/1/state" \
	"garbage state: list on the snapshot names the same file"

# ---- empty ----------------------------------------------------------------------------------------
p=$(mk empty); : >"$p/state"
run "$RDMAK" list --root "$TMP/empty"
is "$rc" 1 "empty state: list exits 1"
like "$err" "^rdmak list: empty $TMP/empty/sys/class/infiniband/mlx5_0/ports/1/state \\(shown as unknown\\)" "empty state: says it is empty"
like "$out" '^mlx5_1 +1 +ACTIVE' "empty state: the rest is listed"

# ---- unreadable (a directory in its place: EISDIR, readable by nobody) -------------------------------
p=$(mk unread); rm "$p/phys_state" && mkdir "$p/phys_state"
run "$RDMAK" list --root "$TMP/unread"
is "$rc" 1 "unreadable phys_state: list exits 1"
like "$err" "$TMP/unread/sys/class/infiniband/mlx5_0/ports/1/phys_state: Is a directory \\(shown as unknown\\)" \
	"unreadable phys_state: names the file and the error"
like "$out" '^mlx5_0 +1 +ACTIVE +UNKNOWN ' "unreadable phys_state: that field UNKNOWN, the state still shown"
run "$RDMAK" doctor --root "$TMP/unread"
is "$rc" 2 "unreadable phys_state: doctor exits 2"
like "$out" 'fail +port\.state +mlx5_0/1 +unreadable phys_state' "unreadable phys_state: port.state fails naming the file"
run "$RDMAK" snapshot -o "$TMP/u.tar.gz" --root "$TMP/unread"
is "$rc" 0 "unreadable phys_state: snapshot captures the node"

# ---- mode 000: root reads it anyway, so the list runs as nobody (setpriv) when the suite is root ----
p=$(mk mode0); chmod 000 "$p/state"; chmod 755 "$TMP"
as_user=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
if [ "$(id -u)" -ne 0 ] || [ ${#as_user[@]} -gt 0 ]; then
	run "${as_user[@]}" "$RDMAK" list --root "$TMP/mode0"
	is "$rc" 1 "mode-000 state: list exits 1"
	like "$err" "$TMP/mode0/sys/class/infiniband/mlx5_0/ports/1/state: Permission denied \\(shown as unknown\\)" \
		"mode-000 state: Permission denied, named"
	like "$out" '^mlx5_1 +1 +ACTIVE' "mode-000 state: the rest listed"
	run "${as_user[@]}" "$RDMAK" doctor --root "$TMP/mode0" --check port.state
	like "$out" 'fail +port\.state +mlx5_0/1 +unreadable state' "mode-000 state: the doctor fails port.state and goes on"
	cp "$TOP/examples/plugin/shared-seed003.json" "$TMP/plugin.json" && chmod 644 "$TMP/plugin.json"
	run "${as_user[@]}" "$RDMAK" plugin --dry-run --root "$TMP/mode0" --config "$TMP/plugin.json"
	like "$err" "^rdmak plugin: $TMP/mode0/sys/class/infiniband/mlx5_0/ports/1/state: Permission denied \\(shown as unknown\\)" \
		"mode-000 state: plugin --dry-run names the file, Permission denied"
else
	skip "root without setpriv reads a mode-000 file" "mode-000 state as non-root"
fi

# ---- plugin --dry-run: the same files named on stderr, the port unknown, the rest served --------------
# seed 003's config selects both v100-ib HCAs; a broken file makes mlx5_0 Unhealthy (exit 0: the
# daemon would serve mlx5_1), and stderr says which file and why instead of a bare "unknown".
PCFG="$TOP/examples/plugin/shared-seed003.json"
run "$RDMAK" plugin --dry-run --root "$TMP/garbage" --config "$PCFG"
is "$rc" 0 "garbage state: plugin --dry-run exits 0 (the rest is served)"
like "$err" "^rdmak plugin: unexpected content \"xyz\" in $TMP/garbage/sys/class/infiniband/mlx5_0/ports/1/state \\(shown as unknown\\)" \
	"garbage state: plugin --dry-run names the content and the file"
like "$out" 'mlx5_0 +mlx5_0 +ibp94s0f0 +0 +no +mlx5_0 port 1 unknown' "garbage state: plugin --dry-run shows mlx5_0 Unhealthy, unknown"
like "$out" 'mlx5_1 +mlx5_1 +ibp94s0f1 +0 +yes ' "garbage state: plugin --dry-run serves mlx5_1"
run "$RDMAK" plugin --dry-run --json --root "$TMP/garbage" --config "$PCFG"
like "$rc:$err" "^0:rdmak plugin: unexpected content \"xyz\" in .*/mlx5_0/ports/1/state" "garbage state: --json too, on stderr"
printf '%s' "$out" >"$TMP/gp.json"
is "$(jget "$TMP/gp.json" "d['resources'][0]['members'][0]['reason']")" "mlx5_0 port 1 unknown" "garbage state: stdout stays the JSON report"
run "$RDMAK" plugin --dry-run --root "$TMP/empty" --config "$PCFG"
like "$err" "^rdmak plugin: empty $TMP/empty/sys/class/infiniband/mlx5_0/ports/1/state \\(shown as unknown\\)" \
	"empty state: plugin --dry-run says it is empty"
run "$RDMAK" plugin --dry-run --root "$TMP/unread" --config "$PCFG"
like "$err" "^rdmak plugin: $TMP/unread/sys/class/infiniband/mlx5_0/ports/1/phys_state: Is a directory \\(shown as unknown\\)" \
	"unreadable phys_state: plugin --dry-run names the file and the error"
run "$RDMAK" plugin --dry-run --root "$NODES/v100-ib" --config "$PCFG"
is "$rc:$err" "0:" "a sound node: plugin --dry-run says nothing on stderr"
done_testing
