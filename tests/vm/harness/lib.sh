# SPDX-License-Identifier: Apache-2.0
# Helpers for the live-kernel tests (tests/vm/*.sh), which run as root inside the guest that
# tests/vm/harness/boot.sh boots: tests/lib.sh's TAP helpers plus the soft-RoCE node every test
# starts from. One boot runs every test in turn, so a test leaves the node as vm_node made it.
. "$TOP/tests/lib.sh"

# Under TCG every process costs ~0.3 s to start (python ~1 s): the helpers below keep
# tests/lib.sh's contract with builtins instead of cat and grep.
_slurp() { # _slurp VAR FILE: the file's text without its trailing newlines, as $(cat) gives
	local _t=""
	IFS= read -r -d '' _t <"$2"
	while [[ $_t == *$'\n' ]]; do _t=${_t%$'\n'}; done
	printf -v "$1" '%s' "$_t"
}
# vm_sleep SECONDS: sleep without a process (read's timeout on a pipe nobody writes)
exec 9<> <(:)
vm_sleep() { read -r -t "$1" -u 9 _; }
run() {
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	_slurp out "$TMP/out"
	_slurp err "$TMP/err"
}
_matches() { # _matches TEXT ERE: some line of TEXT matches, as grep -qE would say
	local l
	while IFS= read -r l; do [[ $l =~ $2 ]] && return 0; done <<<"$1"
	return 1
}
like() {
	if _matches "$1" "$2"; then ok 0 "$3"; else
		ok 1 "$3"
		printf '#   no match for /%s/ in:\n' "$2"
		printf '%s\n' "$1" | head -15 | sed 's/^/#     /'
	fi
}
unlike() {
	if _matches "$1" "$2"; then ok 1 "$3"; printf '#   unexpected /%s/\n' "$2"; else ok 0 "$3"; fi
}

# kernel_says CMD...: runs a kernel tool, $out/$err/$rc as run() sets them, and $why: the
# tool's own words for a refusal (its last stderr line), for a test that reports what the
# kernel does not do on rxe by the kernel's answer.
kernel_says() {
	run "$@"
	why=$(printf '%s\n' "$err" | tail -1)
}

# vm_node: rdma_rxe, rdma_ucm and ib_umad loaded (a typical RDMA node's modules); the veth pair va (10.77.0.1/24) / vb (10.77.0.2/24), both up; the
# soft-RoCE device rxea on va. Idempotent: a test calls it first, whatever ran before.
vm_node() {
	local e=0
	modprobe -a rdma_rxe rdma_ucm ib_umad || e=1
	if ! ip link show va >/dev/null 2>&1; then
		ip link add va type veth peer name vb || e=1
		ip addr add 10.77.0.1/24 dev va && ip addr add 10.77.0.2/24 dev vb || e=1
	fi
	ip link set va up && ip link set vb up || e=1
	[ -e /sys/class/infiniband/rxea ] || rdma link add rxea type rxe netdev va || e=1
	if [ "$e" -ne 0 ]; then
		echo "Bail out! the soft-RoCE node could not be made (modprobe, veth va/vb, rxea)"
		exit 1
	fi
	# RoCE GIDs appear when the kernel's GID cache sees the address: wait for va's IPv4 one
	vm_wait_gid rxea 10.77.0.1
}

# vm_wait_gid DEV IPV4 [present|absent]: until DEV port 1's GID table has (or no longer has)
# the IPv4-mapped GID of IPV4; 1 when it never does within 20 s.
vm_wait_gid() {
	local want=${3:-present} g i
	g=$(vm_gid "$2")
	for i in $(seq 200); do
		if grep -qx "$g" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null; then
			[ "$want" = present ] && return 0
		else
			[ "$want" = absent ] && return 0
		fi
		vm_sleep 0.1
	done
	return 1
}

# vm_gid IPV4: the IPv4-mapped GID of an address as sysfs writes it
vm_gid() { printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' $(echo "$1" | tr . ' '); }

# checks [ARGS...] <<'PY' ... PY: many comparisons in one interpreter (a start of python costs
# about a second under TCG; -S would save a third of it but hide Debian's dist-packages). The code, on stdin, calls check(cond, description[, detail]) for
# each; every call becomes one TAP line here, and an exception one failure. sys.argv[1:] are ARGS.
checks() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok 0 "${line#ok }" ;;
		"not ok "*) ok 1 "${line#not ok }" ;;
		*) echo "$line" ;;
		esac
	done < <("$PY" -c '
import json, os, re, sys, traceback
def check(cond, desc, detail=None):
    print(("ok " if cond else "not ok ") + desc, flush=True)
    if not cond and detail is not None:
        for l in str(detail).splitlines()[:15]:
            print("#   " + l)
def load(p):
    with open(p) as f:
        return json.load(f)
def rd(p):
    with open(p) as f:
        return f.read().strip()
try:
    exec(sys.stdin.read())
except Exception:
    print("not ok the checks raised an exception")
    for l in traceback.format_exc().splitlines():
        print("#   " + l)
' "$@" 2>&1)
}

# A failed test leaves its files for a person: the guest runner names where (the results
# share), and the host keeps them beside the console.
if [ -n "${VM_ARTIFACTS:-}" ]; then
	trap '[ "$_failed" -eq 0 ] && [ -z "${_killed:-}" ] || cp -a "$TMP" "$VM_ARTIFACTS" 2>/dev/null; rm -rf "$TMP"' EXIT
	# the guest runner's timeout sends TERM: exit through the EXIT trap, keeping the files
	trap '_killed=1; exit 143' TERM
fi

# doctor ARGS...: rdmak doctor --json (through the command $VM_AS when set), $out/$err/$rc as
# run() sets them, and its findings one per line in $findings: "STATUS<TAB>ID<TAB>OBJECT<TAB>TITLE | FIX" (one python for all the
# questions below). Every run also records a finding that breaks the documented contract (a
# warn or fail without a fix, an ok or skip with one, an exit code that is not the worst).
doctor() {
	# shellcheck disable=SC2086
	run ${VM_AS:-} "$RDMAK" doctor --json "$@"
	[ "$rc" -le 2 ] || { findings=""; return 0; }
	printf '%s' "$out" >"$TMP/doctor.json"
	"$PY" -S -c '
import json, sys
d = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
with open(sys.argv[3], "w") as o:
    for f in d:
        o.write("%s\t%s\t%s\t%s | %s\n" % (f["status"], f["id"], f["object"] or "-", f["title"], f["fix"] or ""))
with open(sys.argv[4], "a") as v:
    for f in d:
        if (f["fix"] is None) != (f["status"] in ("ok", "skip")):
            v.write("%s %s %s: fix %r\n" % (f["id"], f["object"], f["status"], f["fix"]))
    worst = max([{"skip": 0, "ok": 0, "warn": 1, "fail": 2}[f["status"]] for f in d] + [0])
    if worst != rc:
        v.write("exit %d but worst status %d\n" % (rc, worst))' "$TMP/doctor.json" "$rc" "$TMP/findings" "$TMP/violations"
	_slurp findings "$TMP/findings"
}
_findings() { # _findings FIELD ID [OBJECT]: that field (1 status, 4 title | fix) of the matching findings
	local st id obj title r=()
	while IFS=$'\t' read -r st id obj title; do
		[ "$id" = "$2" ] && { [ $# -lt 3 ] || [ "$obj" = "$3" ]; } || continue
		case $1 in 1) r+=("$st") ;; 4) r+=("$title") ;; esac
	done <<<"$findings"
	if [ "$1" = 1 ]; then echo "${r[*]}"; else printf '%s\n' "${r[@]}"; fi
}
statuses() { _findings 1 "$@"; }
titles() { _findings 4 "$@"; }
count_status() {
	local st rest n=0
	while IFS=$'\t' read -r st rest; do [ "$st" = "$1" ] && n=$((n + 1)); done <<<"$findings"
	echo "$n"
}
contract_holds() {
	local v=""
	[ -f "$TMP/violations" ] && _slurp v "$TMP/violations"
	is "$v" "" "every doctor run: a fix exactly on warn/fail, the exit code the worst status"
}
