# SPDX-License-Identifier: Apache-2.0
# TAP helpers for command-level tests. Source it, call the helpers, end with `done_testing`.
# Environment from tests/run.sh: RDMAK (the binary), NODES (examples/nodes), TOP, BUILD.
set -u
: "${RDMAK:?run through tests/run.sh}"
_n=0
_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rdmak-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# node_conf [KEYS]: the node's CNI settings for the plugins this test runs (docs/cni.md, "What
# it trusts"), in $RDMAK_CNI_CONFIG: the test's folder is the node's stateDir, logDir and dataDir,
# so that a network naming a folder under $TMP names one of the node's; KEYS (JSON members,
# "sysfs": "...", "etcd": {...}) are added. A file of root's that nobody else may write.
node_conf() {
	printf '{"stateDir":"%s","logDir":"%s","dataDirs":["%s"]%s}\n' "$TMP" "$TMP" "$TMP" "${1:+,$1}" >"$TMP/cni-node.json"
	chmod 0644 "$TMP/cni-node.json"
	export RDMAK_CNI_CONFIG="$TMP/cni-node.json"
}
node_conf

ok() { # ok COND-EXIT-CODE description
	_n=$((_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $_n - $2"; else echo "not ok $_n - $2"; _failed=$((_failed + 1)); fi
}
skip() { # skip REASON description : counted as skipped by tests/run.sh, never as passed
	_n=$((_n + 1)); echo "ok $_n - $2 # SKIP $1"
}
# run CMD...: runs it, keeps stdout in $out, stderr in $err, exit code in $rc
run() {
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}
is() { # is GOT WANT description
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; printf '#   got:  %s\n#   want: %s\n' "$1" "$2"; fi
}
like() { # like TEXT REGEX description
	if printf '%s' "$1" | grep -qE -- "$2"; then ok 0 "$3"; else ok 1 "$3"; printf '#   no match for /%s/ in:\n' "$2"; printf '%s\n' "$1" | head -15 | sed 's/^/#     /'; fi
}
unlike() {
	if printf '%s' "$1" | grep -qE -- "$2"; then ok 1 "$3"; printf '#   unexpected /%s/\n' "$2"; else ok 0 "$3"; fi
}
same_file() { # same_file GOT_FILE WANT_FILE description : exact text comparison with a diff on failure
	if diff -u "$2" "$1" >"$TMP/diff"; then ok 0 "$3"; else ok 1 "$3"; sed 's/^/#   /' "$TMP/diff" | head -40; fi
}
# jq-free JSON queries: jget FILE EXPR prints a Python expression evaluated on the document `d`.
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); r=eval(sys.argv[2]); print(json.dumps(r) if isinstance(r,(dict,list)) else r)' "$1" "$2"; }
done_testing() { echo "1..$_n"; [ "$_failed" -eq 0 ]; }
