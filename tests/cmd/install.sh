#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make install` to a prefix of its own, staged in DESTDIR as a package build does, then copied
# to that prefix: the installed rdmak-ipam, asked for an etcd store it does not hold, hands the
# request to PREFIX/bin/rdmak (compiled in). Nothing listens at the etcd endpoint, so the full
# rdmak answers code 11 naming it; without the hand-off the answer is "the etcd store needs the
# full rdmak", naming where it looked. The build is a copy of this suite's build directory, so
# that the suites running beside this one keep their binaries while the copy is rebuilt.
. "$(dirname "$0")/../lib.sh"

if [ -e /opt/rdmak/bin/rdmak ]; then
	skip "/opt/rdmak/bin/rdmak exists here: rdmak-ipam would find it before PREFIX" "make install to a prefix"
	done_testing
	exit
fi

B="$TMP/build" STAGE="$TMP/stage" PREFIX="$TMP/prefix" CNIDIR="$TMP/prefix/cni/bin"
mkdir -p "$B"
# timestamps kept: only what names the prefix is rebuilt
cp -a "$BUILD/obj" "$BUILD/gen" "$BUILD/librdmak.a" "$BUILD/rdmak" "$BUILD/cni" "$BUILD/man" "$B/"
[ -f "$BUILD/build.vars" ] && cp -a "$BUILD/build.vars" "$B/"
vars=$(cat "$BUILD/make.vars" 2>/dev/null || echo "SAN=0")
# shellcheck disable=SC2086
run make -s -C "$TOP" $vars BUILD="$B" PREFIX="$PREFIX" CNIDIR="$CNIDIR" DESTDIR="$STAGE" install
is "$rc" 0 "make install DESTDIR=... PREFIX=... exits 0"
[ "$rc" -eq 0 ] || printf '%s\n' "$err" | tail -20 | sed 's/^/#   /'
for f in bin/rdmak cni/bin/rdmak-cni cni/bin/rdmak-ipam; do
	ok "$([ -x "$STAGE$PREFIX/$f" ] && echo 0 || echo 1)" "it installs PREFIX/$f under DESTDIR"
done
is "$(find "$STAGE" -path "$STAGE$PREFIX" -prune -o -type f -print | wc -l)" 0 "and nothing outside DESTDIR/PREFIX"
is "$(ls "$STAGE$PREFIX/share/man/man1" 2>&1 | tr '\n' ' ')" "$(ls "$BUILD/man" | grep '\.1$' | tr '\n' ' ')" \
	"the man pages in PREFIX/share/man/man1"

# the package's files land in the prefix
mkdir -p "$PREFIX"
cp -a "$STAGE$PREFIX/." "$PREFIX/"
# the etcd store is the node's (its CNI settings name it); the network names it
printf '{"etcd":{"e":{"endpoints":["127.0.0.1:1"]}}}' >"$TMP/node-cni.json"
etcd_conf='{"cniVersion":"1.0.0","name":"e","type":"rdmak-ipam","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"e","ranges":[[{"subnet":"10.9.0.0/24"}]]}}'
printf '%s' "$etcd_conf" >"$TMP/etcd.json"
ipam() {
	env -i PATH=/usr/bin:/bin RDMAK_CNI_CONFIG="$TMP/node-cni.json" CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net \
		CNI_IFNAME=net1 CNI_PATH="$CNIDIR" "$CNIDIR/rdmak-ipam" <"$TMP/etcd.json"
}
run ipam
like "$out" '"code": *11' "the installed rdmak-ipam hands an etcd store to PREFIX/bin/rdmak (code 11: unreachable)"
like "$out" '127.0.0.1:1' "which names the endpoint"

mv "$PREFIX/bin/rdmak" "$PREFIX/bin/rdmak.away"
run ipam
like "$out" 'the etcd store needs the full rdmak' "control: without PREFIX/bin/rdmak it says what is missing"
like "$out" "$PREFIX/bin/rdmak" "naming PREFIX/bin/rdmak, where it looked"
if command -v man >/dev/null; then
	is "$(MANPATH="$PREFIX/share/man" man -w rdmak-ipam 2>&1)" "$PREFIX/share/man/man1/rdmak-ipam.1" "man finds rdmak-ipam(1) there"
else
	skip "no man" "man finds rdmak-ipam(1) there"
fi

done_testing
