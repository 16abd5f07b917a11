#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/bench.Dockerfile, the default image of `rdmak bench k8s`: it builds on the rdmak image,
# installs what the pods run (perftest and the verbs providers; infiniband-diags to look
# around), its tag is the image `rdmak bench k8s` asks for, and every package it names exists
# in Debian 12's archive. (No container runtime here: the image itself is not built.)
. "$(dirname "$0")/../lib.sh"

df=$TOP/deploy/bench.Dockerfile
pkgs=$(sed -n '/apt-get install/,/rm -rf/p' "$df" | tr -s ' \\\n' ' ' | sed 's/.*--no-install-recommends //; s/ &&.*//')
for p in perftest ibverbs-providers infiniband-diags; do
	like " $pkgs " " $p " "the image installs $p"
done
like "$(grep '^FROM' "$df")" 'FROM \$\{RDMAK_IMAGE\}' "built on the rdmak image (deploy/Dockerfile)"
v=$("$TOP/tools/version.sh")
like "$(grep -- '--build-arg RDMAK_IMAGE=' "$df")" 'RDMAK_IMAGE=rdmak:\$v ' "... of this version (the build line gives it)"
tag=$(sed -n 's/.*docker build -f deploy\/bench.Dockerfile .*-t \([^ ]*\) .*/\1/p' "$df" | sed "s/\\\$v/$v/")
is "$tag" "rdmak-bench:$v" "the Dockerfile's build line tags it with rdmak's version"
run "$RDMAK" bench k8s --resource rdma/x --node a --node b --json
is "$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["spec"]["containers"][0]["image"])')" "$tag" \
	"rdmak bench k8s's default image is the tag the Dockerfile builds"
if command -v apt-cache >/dev/null && apt-cache show perftest >/dev/null 2>&1; then
	for p in $pkgs; do
		apt-cache show "$p" >/dev/null 2>&1; ok $? "$p is in the Debian archive"
	done
else
	skip "no apt metadata on this machine" "the packages are in the Debian archive"
fi
done_testing
