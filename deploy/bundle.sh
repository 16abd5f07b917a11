#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/bundle.sh BINARY DEST [--cni CNI_BINARY] [SONAME...]: a self-contained rdmak for hosts
# that lack its libraries. DEST/bin/rdmak is BINARY (the multi-call rdmak: the operator CLI, the
# daemons, and what rdmak-ipam hands an etcd request to); DEST/bin/rdmak-cni is CNI_BINARY (the
# per-pod binary the runtime execs as rdmak-cni and rdmak-ipam, `make build/reloc/rdmak-cni`:
# static, so it goes in alone);
# DEST/lib holds every shared library they load (ldd, transitively), the dynamic loader, and each
# SONAME (a library BINARY dlopen()s, which ldd cannot see: the webhook's libmicrohttpd and
# GnuTLS) with what that loads in turn. Both binaries must be linked for DEST's final place
# (`make build/reloc/rdmak`: its program interpreter is /opt/rdmak/lib/<loader> and its DT_RPATH
# /opt/rdmak/lib), because the CNI plugins are exec'd by the runtime in the HOST's mount
# namespace: a binary copied out of the image would otherwise look for Debian 12's libgrpc,
# abseil, jansson... on, say, Ubuntu 22.04.
set -eu
usage() { echo "usage: deploy/bundle.sh BINARY DEST [--cni CNI_BINARY] [SONAME...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
bin=$1 dest=$2 cni=
shift 2
if [ "${1:-}" = --cni ]; then
	[ $# -ge 2 ] || usage
	cni=$2
	shift 2
fi
mkdir -p "$dest/bin" "$dest/lib"
# A dlopen()ed library is found where the system's loader finds it (ldconfig's cache); in the
# bundle, dlopen() then finds it through the binary's DT_RPATH.
dl=
for so in "$@"; do
	path=$(ldconfig -p | awk -v so="$so" '$1 == so && $NF ~ /^\// { print $NF; exit }')
	[ -n "$path" ] || { echo "bundle.sh: $so: no such library here (ldconfig -p)" >&2; exit 1; }
	dl="$dl $path"
done
# bundle_one FILE NAME [LIB...]: FILE as DEST/bin/NAME, with its libraries (and LIB's) and its
# loader
bundle_one() {
	file=$1 name=$2
	shift 2
	interp=$(readelf -lW "$file" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	install -m 0755 "$file" "$dest/bin/$name"
	if [ -z "$interp" ]; then
		# a static program (the per-pod binary) brings everything it needs; any other is wrong
		! readelf -d "$file" | grep -q NEEDED ||
			{ echo "bundle.sh: $file has no program interpreter but needs libraries" >&2; exit 1; }
		return 0
	fi
	# ldd runs the system loader on the file whatever its interpreter says, so this works before
	# /opt/rdmak exists; "name => /path (addr)" for libraries, "/path (addr)" for the loader.
	{ ldd "$file"; for lib in "$@"; do echo "$lib (0)"; ldd "$lib"; done; } |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u |
		while read -r lib; do
			[ -e "$lib" ] && cp -L "$lib" "$dest/lib/"
		done
	# the loader under the name the binary asks for, from the system's own
	loader=$(basename "$interp")
	[ -e "$dest/lib/$loader" ] || cp -L "$(ldd /bin/sh | awk -v l="$loader" 'index($1, l) { print $1 }' | head -1)" "$dest/lib/$loader"
	chmod 0755 "$dest/lib/$loader"
}
# shellcheck disable=SC2086
bundle_one "$bin" rdmak $dl
[ -z "$cni" ] || bundle_one "$cni" rdmak-cni
