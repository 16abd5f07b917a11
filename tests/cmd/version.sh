#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The version comes from one place, tools/version.sh (git describe of a v* tag, else the
# VERSION file), and everything that names it agrees: the binary, bench's pod image, the chart's
# appVersion and the changelog's latest release.
. "$(dirname "$0")/../lib.sh"

v=$("$TOP/tools/version.sh")
file=$(tr -d ' \n' <"$TOP/VERSION")
like "$v" '^[0-9]+\.[0-9]+\.[0-9]+' "tools/version.sh prints a version ($v)"
like "$v" "^$(printf '%s' "$file" | sed 's/\./\\./g')(\$|-)" "it is VERSION ($file), or a tag of it and the commits since"
run "$RDMAK" --version
is "$out" "rdmak $v" "rdmak --version"
run "$RDMAK" --help
like "$out" "rdmak $v\$" "rdmak --help ends with it"
run "$RDMAK" bench k8s --resource rdma/x --node a --node b --json
is "$(printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["spec"]["containers"][0]["image"])')" \
	"rdmak-bench:$v" "bench k8s's pods run the bench image of this version"
chart=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$TOP/deploy/chart/rdmak/Chart.yaml")
is "$chart" "$file" "the chart's appVersion is VERSION (its image tag defaults to it)"
like "$(grep -m1 '^## \[[0-9]' "$TOP/CHANGELOG.md")" "^## \[$file\]" "CHANGELOG.md's latest release is VERSION"

# the script itself, in a copy: the file without git, then a tag and a commit after it
C="$TMP/copy"
mkdir -p "$C/tools"
cp "$TOP/tools/version.sh" "$C/tools/"
echo 9.8.7 >"$C/VERSION"
is "$("$C/tools/version.sh")" "9.8.7" "control: without git, the VERSION file"
if command -v git >/dev/null; then
	g() { git -C "$C" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@" >/dev/null 2>&1; }
	g init -q && g add -A && g commit -qm one
	is "$("$C/tools/version.sh")" "9.8.7" "control: a clone without tags, the file too"
	g tag v9.8.7 && echo x >"$C/x" && g add x && g commit -qm two
	like "$("$C/tools/version.sh")" '^9\.8\.7-1-g[0-9a-f]+$' "control: a commit after tag v9.8.7 is 9.8.7-1-gHASH"
else
	skip "no git" "control: git describe of a tag"
fi

done_testing
