#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One root context for every role (issue 11, item 19): list, snapshot, doctor, plugin and bench
# take --root, --sysfs and --devfs from one parser (hw_roots_option) and open them with one
# function (hw_ctx_new_roots), so each names the path that is really missing, gives --sysfs the
# same precedence over --root in any order, and the doctor reads /proc and the image root
# through the same context as sysfs: inside the root, without blocking on a FIFO.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/doctor/lib.sh"
EX="$TOP/examples/plugin"
CAP="$TOP/tests/captures/bench"
mkdir -p "$TMP/empty"
missing=/nonexistent-rdmak-$$

role() { # role NAME ROOT-ARGS...: run that role reading those roots
	local name=$1
	shift
	case $name in
	list) run "$RDMAK" list "$@" ;;
	snapshot) run "$RDMAK" snapshot -o "$TMP/s.tar" "$@" ;;
	doctor) run "$RDMAK" doctor "$@" ;;
	plugin) run "$RDMAK" plugin --dry-run --config "$EX/shared-seed003.json" "$@" ;;
	bench) run "$RDMAK" bench judge "$@" "$CAP/s002-host-client.txt" ;;
	esac
}

for r in list snapshot doctor plugin bench; do
	role $r --root "$missing"
	ok "$([ "$rc" != 0 ] && echo 0 || echo 1)" "$r --root MISSING: exits non-zero ($rc)"
	like "$err" "cannot open sysfs root $missing \\(--root\\): No such file or directory" \
		"$r --root MISSING: names the --root directory itself"
	role $r --root "$TMP/empty"
	like "$err" "cannot open sysfs root $TMP/empty/sys: No such file or directory" "$r --root DIR without sys: names DIR/sys"
	role $r --sysfs "$missing" --root "$NODES/v100-ib"
	like "$err" "cannot open sysfs root $missing: " "$r --sysfs X --root DIR: --sysfs wins"
	role $r --root "$NODES/v100-ib" --sysfs "$missing"
	like "$err" "cannot open sysfs root $missing: " "$r --root DIR --sysfs X: --sysfs wins, whatever the order"
done
run "$RDMAK" list --json --root "$NODES/v100-ib" --sysfs "$NODES/no-rdma/sys"
is "$(jget "$TMP/out" "len(d['rdma_devices'])")" 0 "list: --sysfs of a node without RDMA over --root v100-ib: no device"
run "$RDMAK" list --json --root "$NODES/v100-ib" --devfs "$TMP/empty"
is "$(jget "$TMP/out" "sorted(set(c['devfs']['present'] for c in d['char_devices']))")" "[false]" \
	"list: --devfs over --root: the device nodes are read from --devfs (none there)"
run "$RDMAK" list --procfs /proc
is "$rc" 2 "list does not take --procfs (only the doctor reads /proc)"

# ---- the doctor's /proc and image reads, inside the root --------------------------------------
base=$TMP/pod; node_copy v100-ib "$base"; pod_files "$base"
: >"$TMP/noenv"
pdoctor() { run "$RDMAK" doctor --pod --json --root "$base" --env "$TMP/noenv"; }
pdoctor
is "$rc" 0 "a healthy pod tree: exit 0"

secret=424242
sed "s/^Max locked memory .*/Max locked memory         $secret               $secret               bytes     /" \
	"$FIX/proc/limits" >"$TMP/outside-limits"
rm "$base/proc/self/limits"; ln -s "$TMP/outside-limits" "$base/proc/self/limits"
pdoctor
unlike "$out" "$secret" "proc/self/limits -> an absolute path outside the root: not read"
like "$(jget "$TMP/out" "[f['status'] for f in d if f['id']=='pod.memlock']")" "warn|fail" \
	"... pod.memlock says it could not read the limits rather than judging the host's"
cp "$FIX/proc/limits" "$base/proc/self/limits" 2>/dev/null || { rm -f "$base/proc/self/limits"; cp "$FIX/proc/limits" "$base/proc/self/limits"; }

mkdir -p "$TMP/outside-lib/libibverbs"
: >"$TMP/outside-lib/libibverbs.so.1"; : >"$TMP/outside-lib/libibverbs/libmlx5-rdmav34.so"
rm -rf "$base/usr/lib/x86_64-linux-gnu"; ln -s "$TMP/outside-lib" "$base/usr/lib/x86_64-linux-gnu"
pdoctor
like "$(jget "$TMP/out" "[f['title'] for f in d if f['id']=='pod.provider']")" "libibverbs is not installed in the image" \
	"usr/lib/x86_64-linux-gnu -> an absolute path outside the image root: its libraries are not the image's"
rm "$base/usr/lib/x86_64-linux-gnu"; pod_files "$base"

rm "$base/proc/self/status"; mkfifo "$base/proc/self/status"
run timeout 30 "$RDMAK" doctor --pod --json --root "$base" --env "$TMP/noenv"
ok "$([ "$rc" != 124 ] && echo 0 || echo 1)" "proc/self/status a FIFO: the doctor does not block on it (rc $rc)"
like "$(jget "$TMP/out" "[f['status'] for f in d if f['id']=='pod.ipc_lock']")" "warn|fail" \
	"... and does not take the pod's capabilities as known"
done_testing
