#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/image.sh BINARY OUT TAG [CNI_BINARY]: the rdmak image, built by podman FROM scratch with
# no registry (`make image`). BINARY is build/reloc/rdmak (linked for /opt/rdmak: deploy/bundle.sh),
# CNI_BINARY build/reloc/rdmak-cni (the per-pod binary the installer puts on the host). Writes
# OUT/rootfs (the image's files), OUT/Containerfile, the image TAG in podman's store and
# OUT/<TAG with / and : as _>.oci.tar (podman save --format oci-archive: rdmak_0.1.0.oci.tar)
# for nodes without a registry:
# `ctr -n k8s.io images import` or `podman load` (docs/deploy.md).
#   PODMAN   the podman command (default podman; the test passes its own --root and --runroot)
#   BUSYBOX  a static busybox (default /bin/busybox, Debian's busybox-static)
#
# The image holds one copy of rdmak: the relocated one, with its libraries and loader under
# /opt/rdmak, which is also what the CNI installer copies to the host; nothing from a
# distribution's root file system but a static busybox for /bin/sh (docs/deploy.md says why).
set -eu
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: deploy/image.sh BINARY OUT TAG [CNI_BINARY]" >&2; exit 2; }
bin=$1 out=$2 tag=$3 cni=${4:-}
podman=${PODMAN:-podman}
busybox=${BUSYBOX:-/bin/busybox}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "image.sh: $*" >&2; exit 1; }

[ -x "$busybox" ] || die "$busybox: no static busybox (apt-get install busybox-static, or BUSYBOX=)"
# a dynamic busybox would need a loader and libc of its own in /lib
readelf -lW "$busybox" | grep -q 'program interpreter' && die "$busybox is not static"

rm -rf "$out/rootfs"
mkdir -p "$out/rootfs/bin" "$out/rootfs/usr/local/bin" "$out/rootfs/tmp"
chmod 1777 "$out/rootfs/tmp"
# libmicrohttpd and GnuTLS are dlopen'ed by the webhook (src/http/dl.c): ldd does not list them
"$here/bundle.sh" "$bin" "$out/rootfs/opt/rdmak" ${cni:+--cni "$cni"} libmicrohttpd.so.12 libgnutls.so.30
# debug sections and the symbol table (the static gRPC's) are 4 of its 11 MB; nobody debugs in
# the image, and a core file is read against build/reloc/rdmak
strip --strip-all "$out/rootfs/opt/rdmak/bin/rdmak"
[ -z "$cni" ] || strip --strip-all "$out/rootfs/opt/rdmak/bin/rdmak-cni"
install -m 0755 "$here/cni-install.sh" "$out/rootfs/opt/rdmak/cni-install.sh"
for r in rdmak rdmak-plugin rdmak-list rdmak-doctor rdmak-snapshot rdmak-webhook; do
	ln -s /opt/rdmak/bin/rdmak "$out/rootfs/usr/local/bin/$r"
done
install -m 0755 "$busybox" "$out/rootfs/bin/busybox"
# the applets as links: what cni-install.sh, the chart's sh -c lines and a `kubectl exec` use
for a in $("$busybox" --list); do
	[ "$a" = busybox ] || ln -s busybox "$out/rootfs/bin/$a"
done
# scratch has no /etc: a passwd for `ps` and for runAsUser's numbers to have names
mkdir -p "$out/rootfs/etc"
printf 'root:x:0:0:root:/:/bin/sh\nnonroot:x:65532:65532:nonroot:/:/bin/false\n' \
	>"$out/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/rootfs/etc/group"

# What each file came from, for CVE scanners (trivy, grype read status.d as in Google's
# distroless images): the Debian package of every library and of busybox, its version, and the
# os-release that says whose security tracker to ask. A file from no package is named so.
mkdir -p "$out/rootfs/var/lib/dpkg/status.d"
for f in "$out"/rootfs/opt/rdmak/lib/* "$out/rootfs/bin/busybox"; do
	n=/$(basename "$f") pkg=
	# the package that installed this very file (the same name is in libc6-i386, -dev...)
	while IFS= read -r line; do
		p=${line%%: *} path=${line#*: }
		[ "${path%"$n"}" != "$path" ] && cmp -s "$path" "$f" && { pkg=${p%%,*}; break; }
	done <<-EOF
	$(dpkg -S "*$n" 2>/dev/null)
	EOF
	[ -n "$pkg" ] || { echo "image.sh: warning: ${n#/} is in no Debian package here" >&2; continue; }
	dpkg-query -s "$pkg" >"$out/rootfs/var/lib/dpkg/status.d/${pkg%%:*}"
done
# gRPC and what it needs are linked in statically (Makefile, GRPC_LIBS): their -dev packages
# hold the archives, so a CVE in gRPC, abseil, c-ares or re2 is found through them.
for a in libgrpc.a libabsl_base.a libcares.a libre2.a; do
	pkg=$(dpkg -S "*/$a" 2>/dev/null | sed -n '1s/[:,].*//p')
	[ -n "$pkg" ] && dpkg-query -s "$pkg" >"$out/rootfs/var/lib/dpkg/status.d/$pkg"
done
cp -L /etc/os-release "$out/rootfs/etc/os-release"

cp "$here/image.Containerfile" "$out/Containerfile"
# no RUN step (scratch has nothing to run it with), so the build needs no OCI runtime
$podman build --quiet --no-cache --pull=never -f "$out/Containerfile" -t "$tag" "$out" </dev/null >/dev/null
archive="$out/$(echo "$tag" | tr '/:' '__').oci.tar"
rm -f "$archive"
$podman save --quiet --format oci-archive -o "$archive" "$tag" </dev/null
echo "$tag $archive"
