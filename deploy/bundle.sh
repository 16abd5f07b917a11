#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/bundle.sh BINARY DEST [CNI_BINARY]: a self-contained rdmak for hosts that lack its libraries.
# DEST/bin/rdmak is BINARY (the multi-call rdmak: the operator CLI, and what rdmak-ipam hands an
# etcd request to); DEST/bin/rdmak-cni is CNI_BINARY (the per-pod binary the runtime execs as
# rdmak-cni and rdmak-ipam, `make build/reloc/rdmak-cni`); DEST/lib holds every shared library
# they load (ldd, transitively) and the dynamic loader. Both must be linked for DEST's final place
# (`make build/reloc/rdmak`: its program interpreter is /opt/rdmak/lib/<loader> and its DT_RPATH
# /opt/rdmak/lib), because the CNI plugins are exec'd by the runtime in the HOST's mount
# namespace: a binary copied out of the image would otherwise look for Debian 12's libgrpc,
# abseil, jansson... on, say, Ubuntu 22.04.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: deploy/bundle.sh BINARY DEST [CNI_BINARY]" >&2; exit 2; }
bin=$1 dest=$2 cni=${3:-}
mkdir -p "$dest/bin" "$dest/lib"
# bundle_one FILE NAME: FILE as DEST/bin/NAME, with its libraries and its loader
bundle_one() {
	interp=$(readelf -lW "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	[ -n "$interp" ] || { echo "bundle.sh: $1 has no program interpreter (static?)" >&2; exit 1; }
	install -m 0755 "$1" "$dest/bin/$2"
	# ldd runs the system loader on the file whatever its interpreter says, so this works before
	# /opt/rdmak exists; "name => /path (addr)" for libraries, "/path (addr)" for the loader.
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' |
		while read -r lib; do
			[ -e "$lib" ] && cp -L "$lib" "$dest/lib/"
		done
	# the loader under the name the binary asks for, from the system's own
	loader=$(basename "$interp")
	[ -e "$dest/lib/$loader" ] || cp -L "$(ldd /bin/sh | awk -v l="$loader" 'index($1, l) { print $1 }' | head -1)" "$dest/lib/$loader"
	chmod 0755 "$dest/lib/$loader"
}
bundle_one "$bin" rdmak
[ -z "$cni" ] || bundle_one "$cni" rdmak-cni
