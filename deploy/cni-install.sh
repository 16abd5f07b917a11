#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/cni-install.sh: puts rdmak-cni and rdmak-ipam on a node (the rdmak-cni DaemonSet runs it).
#   cni-install.sh [--src DIR] [--host-root DIR] [--cni-dir DIR] [--fabric-src DIR] [--wait]
# --src        the bundle from deploy/bundle.sh (default /opt/rdmak, where the image holds it)
# --host-root  where the host's / is mounted (default /host)
# --cni-dir    the runtime's CNI_PATH directory on the host (default /opt/cni/bin)
# --fabric-src the node's fabrics (the chart's fabric part): DIR/fabrics.json and DIR/fabric/NAME/
#              (each fabric's Secret: username and password, or token; ca.crt), installed as the
#              host's /etc/rdmak/fabrics.json and /etc/rdmak/fabric/NAME/ (docs/fabric.md)
# --wait       after installing, sleep until SIGTERM (the DaemonSet's container); with
#              --fabric-src, install the fabrics again every minute when they changed (a Secret
#              rotated)
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
src=/opt/rdmak host=/host cnidir=/opt/cni/bin fabricsrc= wait=0
while [ $# -gt 0 ]; do
	case $1 in
	--src=*) src=${1#*=} ;;
	--host-root=*) host=${1#*=} ;;
	--cni-dir=*) cnidir=${1#*=} ;;
	--fabric-src=*) fabricsrc=${1#*=} ;;
	--src | --host-root | --cni-dir | --fabric-src)
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

# put_file SRC DEST MODE: SRC's content (a Secret volume's files are symbolic links into ..data:
# followed) as the regular file DEST, root's, MODE, by rename; nothing when DEST holds it already.
# 0: unchanged, 1: written.
put_file() {
	cmp -s "$1" "$2" 2>/dev/null && [ ! -L "$2" ] && return 0
	cp -L "$1" "$(dirname "$2")/.$(basename "$2").tmp"
	chmod "$3" "$(dirname "$2")/.$(basename "$2").tmp"
	mv -f "$(dirname "$2")/.$(basename "$2").tmp" "$2"
	return 1
}

# The node's fabrics (docs/fabric.md, "What it trusts"): rdmak-cni reads the fabrics file and the
# credentials it names only as regular files owned by root that neither group nor others may
# write, never through a symbolic link: so each is copied, mode 0600 in folders of mode 0700. A
# fabric no longer in DIR loses its folder. The fabrics file goes last, once what it names is there.
install_fabric() {
	local d name f changed=0
	[ -f "$fabricsrc/fabrics.json" ] || die "--fabric-src $fabricsrc has no fabrics.json"
	mkdir -p "$host/etc/rdmak/fabric"
	chmod 0700 "$host/etc/rdmak/fabric"
	for d in "$fabricsrc"/fabric/*/; do
		[ -d "$d" ] || continue
		name=$(basename "$d")
		mkdir -p "$host/etc/rdmak/fabric/$name"
		chmod 0700 "$host/etc/rdmak/fabric/$name"
		for f in username password token ca.crt; do
			if [ -e "$d/$f" ]; then
				put_file "$d/$f" "$host/etc/rdmak/fabric/$name/$f" 0600 || changed=1
			elif [ -e "$host/etc/rdmak/fabric/$name/$f" ]; then
				rm -f "$host/etc/rdmak/fabric/$name/$f" && changed=1
			fi
		done
	done
	for d in "$host"/etc/rdmak/fabric/*/; do
		[ -d "$d" ] && [ ! -d "$fabricsrc/fabric/$(basename "$d")" ] && rm -rf "$d" && changed=1
	done
	put_file "$fabricsrc/fabrics.json" "$host/etc/rdmak/fabrics.json" 0600 || changed=1
	[ "$changed" -eq 0 ] || log "installed the node's fabrics: /etc/rdmak/fabrics.json ($(ls "$fabricsrc/fabric" | tr '\n' ' ' | sed 's/ $//'))"
}

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
[ -z "$fabricsrc" ] || install_fabric

if [ "$wait" -eq 1 ]; then
	trap 'exit 0' TERM INT
	while :; do
		sleep "$([ -n "$fabricsrc" ] && echo 60 || echo 3600)" & wait $!
		[ -z "$fabricsrc" ] || install_fabric
	done
fi
