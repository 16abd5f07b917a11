#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/environment.md against what the programs really read: the variables its first table names
# are exactly those src/ looks up (getenv, secure_getenv, the CNI environment, the doctor's NCCL
# checks, src/diag); the shipped programs (what `make install` and the image take: build/rdmak,
# build/cni/rdmak-cni, build/reloc/*) hold no RDMAK_ name the page does not list, and none of
# the test build's seams (tests/seams/), whose variables the page's last table names.
. "$(dirname "$0")/../lib.sh"
DOC=$TOP/docs/environment.md

# doc_vars HEADING: the variables (backquoted names in a table row's first cell) under "## HEADING"
doc_vars() {
	"$PY" - "$DOC" "$1" <<-'EOF'
	import re, sys
	names = set()
	for part in re.split(r"(?m)^## ", open(sys.argv[1]).read())[1:]:
	    if part.split("\n", 1)[0].strip() != sys.argv[2]:
	        continue
	    for line in part.splitlines():
	        m = re.match(r"\|([^|]*)\|", line)
	        if m:
	            names.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", m.group(1)))
	print("\n".join(sorted(names)))
	EOF
}
# lookups DIR: the names DIR's C files look up, one per line
lookups() {
	grep -rhoE '(secure_getenv|getenv)\("[A-Za-z0-9_]+"\)|(env_get|take)\(envp, "[A-Za-z0-9_]+"|diag_env_get\([^,]+, "[A-Za-z0-9_]+"' \
		--include='*.c' "$1" | grep -oE '"[A-Za-z0-9_]+"' | tr -d '"' | sort -u
}

shipped=$(doc_vars "Read by rdmak and rdmak-cni")
seamed=$(doc_vars "Read by the test build only")
[ -n "$shipped" ] && [ -n "$seamed" ]; ok $? "the page has both tables"

# every lookup names its variable literally, or the list below would miss it
is "$(grep -rnE '(secure_getenv|[^_]getenv)\(' --include='*.c' "$TOP/src" | grep -vE 'getenv\("[A-Za-z0-9_]+"\)')" "" \
	"every getenv in src/ names its variable"
is "$(lookups "$TOP/src")" "$shipped" "the page's first table is what src/ reads"
is "$(lookups "$TOP/tests/seams")" "$seamed" "its last table is what the test build's seams read"

for b in "$BUILD/rdmak" "$BUILD/cni/rdmak-cni" "$BUILD/reloc/rdmak" "$BUILD/reloc/rdmak-cni"; do
	name=${b#"$BUILD"/}
	strings -a "$b" | grep -oE 'RDMAK_[A-Z0-9_]+' | sort -u >"$TMP/names"
	is "$(comm -23 "$TMP/names" <(echo "$shipped"))" "" "$name: every RDMAK_ name in it is on the page"
	is "$(grep -xF "$seamed" "$TMP/names")" "" "$name: none of the test build's variables"
done
# ... which the test build does hold: the check above can fail
strings -a "$BUILD/tests/seams/rdmak" | grep -oE 'RDMAK_[A-Z0-9_]+' | sort -u >"$TMP/names"
is "$(grep -xF "$seamed" "$TMP/names")" "$seamed" "the test build's rdmak holds all of them"
strings -a "$BUILD/tests/seams/cni/rdmak-cni" >"$TMP/strings"
grep -qx RDMAK_TEST_VF_STANDIN "$TMP/strings"; ok $? "the test build's rdmak-cni holds RDMAK_TEST_VF_STANDIN"
done_testing
