#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make analyze`: the clang static analyzer (clang-tidy, checks in .clang-tidy) over every C file
# of src/ in compile_commands.json, JOBS at a time. A finding fails the run unless
# tools/analyze.supp names it with a reason; a suppression that matches nothing fails too, so
# that the list shrinks with the code. Prints the findings, then "N findings, N suppressed".
#   tools/analyze.sh [compile_commands.json]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cdb=${1:-$top/compile_commands.json}
supp=$top/tools/analyze.supp
cd "$top" || exit 1
command -v clang-tidy >/dev/null || { echo "tools/analyze.sh: no clang-tidy" >&2; exit 2; }
[ -f "$cdb" ] || { echo "tools/analyze.sh: no $cdb (make compile_commands.json)" >&2; exit 2; }
out=$(mktemp) && trap 'rm -f "$out"' EXIT
python3 -c 'import json, sys; [print(e["file"]) for e in json.load(open(sys.argv[1])) if "/src/" in e["file"] and "/gen/" not in e["file"]]' "$cdb" |
	sort -u | xargs -P "${JOBS:-$(nproc)}" -n 4 clang-tidy -p "$(dirname "$cdb")" --quiet 2>/dev/null |
	sed -n "s|^$top/||; s|^\(src/[^:]*:[0-9]*:[0-9]*: warning: .*\)\$|\1|p" | sort -u >"$out"
# tools/analyze.supp: "FILE<TAB>CHECK<TAB>TEXT<TAB>REASON" (TEXT: a fixed part of the message)
python3 - "$out" "$supp" <<'PY'
import re, sys
findings = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
rules = []
for n, l in enumerate(open(sys.argv[2]), 1):
    if not l.strip() or l.startswith("#"):
        continue
    f = l.rstrip("\n").split("\t")
    if len(f) != 4 or not f[3].strip():
        sys.exit(f"tools/analyze.supp:{n}: want FILE, CHECK, TEXT and a REASON, tab-separated")
    rules.append([f, 0, n])
bad = 0
for x in findings:
    m = re.match(r"(src/[^:]+):\d+:\d+: warning: (.*) \[([^\]]+)\]$", x)
    hit = m and next((r for r in rules if r[0][0] == m.group(1) and r[0][1] == m.group(3)
                      and r[0][2] in m.group(2)), None)
    if hit:
        hit[1] += 1
    else:
        bad += 1
        print(x)
for (f, used, n) in rules:
    if not used:
        bad += 1
        print(f"tools/analyze.supp:{n}: matches no finding ({f[0]}, {f[1]}): remove it")
print(f"{bad} findings, {sum(r[1] for r in rules)} suppressed")
sys.exit(1 if bad else 0)
PY
