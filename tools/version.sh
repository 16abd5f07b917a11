#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# rdmak's version, from one place: `git describe` of the nearest release tag (v0.1.0 ->
# "0.1.0", three commits later "0.1.0-3-g1a2b3c4"), else the VERSION file beside this folder (a
# tarball, or a clone without tags). A release bumps VERSION and tags it; tests/cmd/version.sh
# checks that both agree and that the binary, bench's pods and the chart say the same.
top=$(cd "$(dirname "$0")/.." && pwd)
v=$(git -C "$top" describe --tags --match 'v[0-9]*' 2>/dev/null) && [ -n "$v" ] && {
	echo "${v#v}"
	exit 0
}
tr -d ' \n' <"$top/VERSION"
echo
