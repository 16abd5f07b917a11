#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/cni-install.sh: puts rdmak-cni and rdmak-ipam on a node (the rdmak-cni DaemonSet runs it).
#   cni-install.sh [--src DIR] [--host-root DIR] [--cni-dir DIR] [--wait]
# --src        the bundle from deploy/bundle.sh (default /opt/rdmak, where the image holds it)
# --host-root  where the host's / is mounted (default /host)
# --cni-dir    the runtime's CNI_PATH directory on the host (default /opt/cni/bin)
# --wait       after installing, sleep until SIGTERM (the DaemonSet's container)
#
# On the host: /opt/rdmak/lib -> lib-<hash> (the libraries, the loader), /opt/rdmak/bin/rdmak (the
# operator CLI: rdmak ipam list ...; rdmak-ipam hands an etcd store's requests to it), and
# CNI_DIR/rdmak-cni, the bundle's per-pod binary (bin/rdmak-cni; a bundle without one: its rdmak),
# with CNI_DIR/rdmak-ipam as a hard link of it (one binary that dispatches on its name; a symlink
# would not survive being copied around).
# Every file appears by rename(2), so a runtime exec'ing the plugin mid-upgrade gets the old or the
# new one, never half a file. The libraries go first, under a new directory switched in by
# renaming a symlink, so an old binary never meets a half-copied library. Nothing is removed on
# SIGTERM: pods attached with rdmak-cni still need it for their DEL.
set -eu
src=/opt/rdmak host=/host cnidir=/opt/cni/bin wait=0
while [ $# -gt 0 ]; do
	case $1 in
	--src=*) src=${1#*=} ;;
	--host-root=*) host=${1#*=} ;;
	--cni-dir=*) cnidir=${1#*=} ;;
	--src | --host-root | --cni-dir)
		[ $# -ge 2 ] || { echo "cni-install.sh: $1 needs a value" >&2; exit 2; }
		opt=$1 val=$2
		shift 2
		set -- "$opt=$val" "$@"
		continue ;;
	--wait) wait=1 ;;
	*) echo "cni-install.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case $cnidir in /*) ;; *) echo "cni-install.sh: --cni-dir must be absolute (a path on the host)" >&2; exit 2 ;; esac
log() { echo "cni-install: $*"; }
die() { echo "cni-install: $*" >&2; exit 1; }

[ -x "$src/bin/rdmak" ] && [ -d "$src/lib" ] || die "$src is not a bundle (bin/rdmak, lib/): see deploy/bundle.sh"
[ -d "$host" ] || die "--host-root $host does not exist (mount the host's / there)"
# The bundle runs here as it will on the host: /opt/rdmak is its place in the image as well.
if [ "$src" = /opt/rdmak ]; then
	version=$("$src/bin/rdmak" --version) || die "the bundled rdmak does not run: $src/bin/rdmak --version failed"
	log "installing $version"
fi

dest="$host/opt/rdmak"
plugin="$src/bin/rdmak-cni"
[ -x "$plugin" ] || plugin="$src/bin/rdmak"
hash=$(cat "$src"/bin/* "$src"/lib/* | sha256sum | cut -c1-12)
mkdir -p "$dest/bin" "$host$cnidir"
if [ ! -d "$dest/lib-$hash" ]; then
	rm -rf "$dest/.lib-$hash.tmp"
	cp -a "$src/lib" "$dest/.lib-$hash.tmp"
	mv "$dest/.lib-$hash.tmp" "$dest/lib-$hash"
fi
ln -sfn "lib-$hash" "$dest/.lib.tmp"
mv -Tf "$dest/.lib.tmp" "$dest/lib"

# put FILE in place as DEST by rename (same directory, so the same filesystem)
place() {
	cp "$1" "$(dirname "$2")/.$(basename "$2").tmp"
	chmod 0755 "$(dirname "$2")/.$(basename "$2").tmp"
	mv -f "$(dirname "$2")/.$(basename "$2").tmp" "$2"
}
place "$src/bin/rdmak" "$dest/bin/rdmak"
place "$plugin" "$host$cnidir/rdmak-cni"
ln -f "$host$cnidir/rdmak-cni" "$host$cnidir/.rdmak-ipam.tmp"
mv -f "$host$cnidir/.rdmak-ipam.tmp" "$host$cnidir/rdmak-ipam"

# The node's name for rdmak-ipam's per-node blocks (docs/ipam.md): the runtime execs the plugin
# without this container's environment, so the DaemonSet's RDMAK_NODE_NAME (the downward API's
# spec.nodeName) reaches it as /opt/rdmak/node-name (src/ipam/store.h IPAM_NODE_NAME_FILE).
if [ -n "${RDMAK_NODE_NAME:-}" ]; then
	printf '%s\n' "$RDMAK_NODE_NAME" >"$dest/.node-name.tmp"
	mv -f "$dest/.node-name.tmp" "$dest/node-name"
fi

# libraries of earlier versions: no new process can reach them once lib points elsewhere
for d in "$dest"/lib-*; do
	[ "$d" = "$dest/lib-$hash" ] || rm -rf "$d"
done
log "installed $cnidir/rdmak-cni, $cnidir/rdmak-ipam and /opt/rdmak (libraries lib-$hash)"

if [ "$wait" -eq 1 ]; then
	trap 'exit 0' TERM INT
	while :; do sleep 3600 & wait $!; done
fi
