#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sample nodes rebuilt from real captures: `rdmak list --format <tool>` must print what the
# captured tool printed (tests/captures/*.txt), and `rdmak list --json` must hold the facts
# ibv_devinfo showed (tests/captures/*.facts). Whitespace is normalised (captures were pasted
# with tabs turned into spaces); "prefix" captures were cut short in the original post.
. "$(dirname "$0")/../lib.sh"

norm() { sed -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' | grep -v '^$'; }
header() { sed -n "s/^# $1: //p" "$2" | head -1; }

for cap in "$TOP"/tests/captures/*.txt; do
	id=$(basename "$cap" .txt)
	node=$(header node "$cap"); fmt=$(header format "$cap"); match=$(header match "$cap")
	grep -v '^# ' "$cap" | norm > "$TMP/want"
	"$RDMAK" list --root "$NODES/$node" --format "$fmt" > "$TMP/got.raw" 2>"$TMP/err"
	ok $? "$id: rdmak list --format $fmt on $node"
	norm < "$TMP/got.raw" > "$TMP/got"
	if [ "$match" = prefix ]; then
		head -n "$(wc -l < "$TMP/want")" "$TMP/got" > "$TMP/got.cut"
		same_file "$TMP/got.cut" "$TMP/want" "$id: the capture (cut in the original) is what rdmak prints, line for line"
	else
		same_file "$TMP/got" "$TMP/want" "$id: rdmak prints exactly what the captured $fmt printed"
	fi
done

for facts in "$TOP"/tests/captures/*.facts; do
	id=$(basename "$facts" .facts)
	node=$(header node "$facts")
	"$RDMAK" list --root "$NODES/$node" --json > "$TMP/$id.json"
	ok $? "$id: rdmak list --json on $node"
	"$PY" - "$TMP/$id.json" "$facts" > "$TMP/facts.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
devs = {r["name"]: r for r in d["rdma_devices"]}
for line in open(sys.argv[2]):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    path, want = [x.strip() for x in line.split("=", 1)]
    parts = path.split(".")
    cur = devs.get(parts[0])
    rest = parts[1:]
    if cur is not None and rest and rest[0].isdigit():
        cur = next((p for p in cur["ports"] if p["port"] == int(rest[0])), None)
        rest = rest[1:]
    for k in rest:
        if cur is None:
            break
        cur = cur[int(k)] if isinstance(cur, list) else cur.get(k)
    got = "" if cur is None else str(cur)
    print(("ok" if got == want else "bad"), path, "got", got, "want", want)
PY
	bad=$(grep -c '^bad' "$TMP/facts.out")
	is "$bad" 0 "$id: every fact the capture shows ($(wc -l < "$TMP/facts.out") facts)"
	grep '^bad' "$TMP/facts.out" | sed 's/^/#   /'
done
done_testing
