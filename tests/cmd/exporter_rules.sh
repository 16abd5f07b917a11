#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/exporter/rdmak-rules.yaml (the alerts the chart's PrometheusRule renders) against
# Debian's promtool: `check rules`, then `test rules` on tests/fixtures/exporter/rules-test.yaml
# (for every alert a series that fires and one that does not). Then the unit tests must fail on
# a copy of the rules where one alert never fires, alert by alert: each alert is really tested.
. "$(dirname "$0")/../lib.sh"
PROMTOOL=$(command -v promtool || true)
RULES="$TOP/deploy/exporter/rdmak-rules.yaml"
TESTS="$TOP/tests/fixtures/exporter/rules-test.yaml"
ALERTS="RdmaPortNotActive RdmaLinkDownedIncreasing RdmaSymbolErrorsIncreasing RdmaCnpStorm RdmaPcieDowntrained"

if [ -z "$PROMTOOL" ]; then
	skip "promtool not installed (Debian's prometheus, tools/install-deps.sh)" "promtool check rules"
	skip "promtool not installed (Debian's prometheus, tools/install-deps.sh)" "promtool test rules"
	for a in $ALERTS; do skip "promtool not installed" "$a: the unit tests fail when it never fires"; done
	done_testing
	exit
fi

run "$PROMTOOL" check rules "$RULES"
is "$rc" 0 "promtool check rules: $(printf '%s' "$out" | grep -o 'SUCCESS.*' || printf '%s' "$err" | tail -3)"
like "$out" "SUCCESS: 5 rules found" "five rules, one per alert"
run "$PROMTOOL" test rules "$TESTS"
is "$rc" 0 "promtool test rules: every alert fires where expected and nowhere else$( [ "$rc" -eq 0 ] || printf '\n%s' "$out$err" | head -30 | sed 's/^/# /')"

# a copy of the tests beside a copy of the rules in which alert A's expr never matches
mkdir -p "$TMP/a/b/c/deploy/exporter" "$TMP/a/b/c/tests/fixtures/exporter"
cp "$TESTS" "$TMP/a/b/c/tests/fixtures/exporter/"
for a in $ALERTS; do
	"$PY" - "$RULES" "$a" "$TMP/a/b/c/deploy/exporter/rdmak-rules.yaml" <<-'EOF2'
	import sys
	# text, not a YAML library (none is in tools/install-deps.sh): the alert's expr line and
	# its continuation lines (a ">-" block) become one expression that never matches
	lines, out, n, i = open(sys.argv[1]).read().split("\n"), [], 0, 0
	ind = lambda l: len(l) - len(l.lstrip(" "))
	while i < len(lines):
	    l = lines[i]
	    out.append(l)
	    i += 1
	    if l.strip() == "- alert: " + sys.argv[2]:
	        while "expr:" not in lines[i]:
	            out.append(lines[i])
	            i += 1
	        e = lines[i]
	        out.append(e[:e.index("expr:")] + "expr: vector(1) == 0")
	        i += 1
	        while i < len(lines) and lines[i].strip() and ind(lines[i]) > ind(e):
	            i += 1
	        n += 1
	assert n == 1, n
	open(sys.argv[3], "w").write("\n".join(out))
	EOF2
	run "$PROMTOOL" test rules "$TMP/a/b/c/tests/fixtures/exporter/rules-test.yaml"
	if [ "$rc" -ne 0 ] && printf '%s' "$out$err" | grep -q "alertname: $a,"; then ok 0 "$a: the unit tests fail when it never fires"
	else ok 1 "$a: the unit tests fail when it never fires (rc $rc)"; fi
done
done_testing
