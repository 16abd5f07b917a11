#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/image.sh BINARY OUT TAG [CNI_BINARY]: the rdmak image, built by podman FROM scratch with
# no registry (`make image`). BINARY is build/reloc/rdmak (linked for /opt/rdmak: deploy/bundle.sh),
# CNI_BINARY build/reloc/rdmak-cni (the per-pod binary `rdmak cni install` puts on the host).
# Writes OUT/rootfs (the image's files), OUT/Containerfile, the image TAG in podman's store and
# OUT/<TAG with / and : as _>.oci.tar (podman save --format oci-archive: rdmak_0.1.0.oci.tar)
# for nodes without a registry:
# `ctr -n k8s.io images import` or `podman load` (docs/deploy.md).
#   PODMAN             the podman command (default podman; the test passes its own --root and --runroot)
#   SOURCE_DATE_EPOCH  every file's time and the image's creation time (default: the last commit's),
#                      so that one commit gives one image digest (reproducible-builds.org)
#   IMAGE_VERSION, IMAGE_REVISION, IMAGE_SOURCE
#                      the OCI labels version, revision (the commit) and source (where it comes from)
#
# The image holds one copy of rdmak: the relocated one, with its libraries and loader under
# /opt/rdmak, which is also what the CNI installer copies to the host; nothing else, no shell
# (docs/deploy.md says why). It runs as uid 65532 unless a pod asks for another.
set -eu
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: deploy/image.sh BINARY OUT TAG [CNI_BINARY]" >&2; exit 2; }
bin=$1 out=$2 tag=$3 cni=${4:-}
podman=${PODMAN:-podman}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "image.sh: $*" >&2; exit 1; }
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || echo 0)}

rm -rf "$out/rootfs"
mkdir -p "$out/rootfs/usr/local/bin" "$out/rootfs/tmp"
chmod 1777 "$out/rootfs/tmp"
# libmicrohttpd and GnuTLS are dlopen'ed by the webhook (src/http/dl.c): ldd does not list them
"$here/bundle.sh" "$bin" "$out/rootfs/opt/rdmak" ${cni:+--cni "$cni"} libmicrohttpd.so.12 libgnutls.so.30
# debug sections and the symbol table (the static gRPC's) are 4 of its 11 MB; nobody debugs in
# the image, and a core file is read against build/reloc/rdmak
strip --strip-all "$out/rootfs/opt/rdmak/bin/rdmak"
[ -z "$cni" ] || strip --strip-all "$out/rootfs/opt/rdmak/bin/rdmak-cni"
# rdmak-<role> for every role of the binary's table (rdmak --help), run with the bundle's own
# loader and libraries: the relocated binary asks for /opt/rdmak/lib, which the builder lacks
rdmak_here() {
	"$out/rootfs/opt/rdmak/lib/$(basename "$(readelf -lW "$bin" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')")" \
		--library-path "$out/rootfs/opt/rdmak/lib" "$out/rootfs/opt/rdmak/bin/rdmak" "$@"
}
roles=$(rdmak_here --help | awk '/^Roles:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }')
[ -n "$roles" ] || die "no role in rdmak --help"
ln -s /opt/rdmak/bin/rdmak "$out/rootfs/usr/local/bin/rdmak"
for r in $roles; do
	ln -s /opt/rdmak/bin/rdmak "$out/rootfs/usr/local/bin/rdmak-$r"
done
# scratch has no /etc: a passwd for runAsUser's numbers to have names (nonroot: the image's user)
mkdir -p "$out/rootfs/etc"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' \
	>"$out/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/rootfs/etc/group"

# What each file came from, for CVE scanners (trivy, grype read status.d as in Google's
# distroless images): the Debian package of every library and of busybox, its version, and the
# os-release that says whose security tracker to ask. A file from no package is named so.
mkdir -p "$out/rootfs/var/lib/dpkg/status.d"
for f in "$out"/rootfs/opt/rdmak/lib/*; do
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
# the licence label is rdmak's own; each bundled library keeps its package's licence, shipped
# beside it as Debian ships it (as distroless images do)
for st in "$out"/rootfs/var/lib/dpkg/status.d/*; do
	pkg=$(basename "$st")
	[ -f "/usr/share/doc/$pkg/copyright" ] || continue
	mkdir -p "$out/rootfs/usr/share/doc/$pkg"
	cp "/usr/share/doc/$pkg/copyright" "$out/rootfs/usr/share/doc/$pkg/copyright"
done

cp "$here/image.Containerfile" "$out/Containerfile"
# one commit, one digest: every file's time is the commit's, and so is the image's creation time
find "$out/rootfs" -exec touch -h -d "@$epoch" {} +
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
labels=(--label "org.opencontainers.image.created=$created"
	--label "org.opencontainers.image.version=${IMAGE_VERSION:-unknown}"
	--label "org.opencontainers.image.revision=${IMAGE_REVISION:-unknown}"
	--label "org.opencontainers.image.licenses=Apache-2.0")
[ -z "${IMAGE_SOURCE:-}" ] || labels+=(--label "org.opencontainers.image.source=$IMAGE_SOURCE")
# no RUN step (scratch has nothing to run it with), so the build needs no OCI runtime
$podman build --quiet --no-cache --pull=never --timestamp "$epoch" "${labels[@]}" \
	-f "$out/Containerfile" -t "$tag" "$out" </dev/null >/dev/null
archive="$out/$(echo "$tag" | tr '/:' '__').oci.tar"
rm -f "$archive"
$podman save --quiet --format oci-archive -o "$archive" "$tag" </dev/null
echo "$tag $archive"
