#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The image that `make image` builds with podman, FROM scratch, without any registry: rdmak runs in
# it on a sample node mounted in, the webhook finds the libraries it dlopen()s, the CNI installer
# (`rdmak cni install`) puts rdmak-cni into a mounted host directory, and that rdmak-cni then runs
# on the host, outside any container, as the runtime execs it. The image as a security review
# reads it: no shell, uid 65532 by default, OCI labels, a link per role, and one commit built
# twice gives one digest. Prints the image's size. Podman's stores are private to this test (its
# $TMP), so nothing is left behind.
. "$(dirname "$0")/../lib.sh"

name="make image, and rdmak, the webhook's libraries and the CNI installer in it"
if [ "$(id -u)" -ne 0 ] || ! command -v podman >/dev/null || ! command -v unshare >/dev/null; then
	skip "needs root, podman (tools/install-deps.sh) and unshare" "$name"
	done_testing
	exit
fi
# The image is built from the plain build's relocated rdmak: a sanitizer build would carry its
# runtime into the image (make check passes PLAIN_BUILD).
plain=${PLAIN_BUILD:-$BUILD}
vars=$(cat "$plain/make.vars" 2>/dev/null || echo "SAN=0")
S=$TMP/podman
mkdir -p "$S/tmp"
# vfs: no overlay mount to leave behind, and it works wherever $TMP is (overlayfs on overlayfs
# does not); no network, no events journal: nothing outside $S. ($S has no blank: mktemp's.)
PODMAN="podman --root $S/root --runroot $S/run --tmpdir $S/tmp --storage-driver vfs"
PODMAN="$PODMAN --events-backend none --cgroup-manager cgroupfs"
P() { $PODMAN "$@" </dev/null; }
cleanup() {
	P rm -af >/dev/null 2>&1
	grep -o " ${S}[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$TMP"
}
trap cleanup EXIT
TAG=localhost/rdmak-test:0.1.0

t0=$(date +%s)
# shellcheck disable=SC2086
run make -s -C "$TOP" $vars BUILD="$plain" PODMAN="$PODMAN" IMAGE=$TAG image
is "$rc" 0 "make image builds the image with podman"
[ "$rc" -eq 0 ] || { printf '%s\n' "$err" | tail -20 | sed 's/^/#   /'; done_testing; exit; }
archive="$plain/image/localhost_rdmak-test_0.1.0.oci.tar"
# its last line (make may print what it linked first)
is "$(printf '%s\n' "$out" | tail -n 1)" "$TAG $archive" "it names the image and its OCI archive"
echo "# build: $(($(date +%s) - t0)) s"
# the name `ctr images import` and `podman load` give it, which the chart's default image names
# (image.registry localhost: docs/deploy.md)
ref=$(tar -xOf "$archive" index.json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])')
is "$ref" "$TAG" "the OCI archive names the image localhost/NAME:TAG (org.opencontainers.image.ref.name)"

# Podman's defaults raise the container's hard RLIMIT_NOFILE to 1048576, which needs
# CAP_SYS_RESOURCE: a VM or CI container without it (this one: Firecracker) cannot start any
# container with them. crun 1.8 refuses a host with controllers in both cgroup v1 and v2
# ("hybrid mode"), where runc runs. The first runtime that starts the image is used.
RUNFLAGS=(--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
RT=()
for r in "" runc; do
	if [ -n "$r" ]; then command -v "$r" >/dev/null || continue; RT=(--runtime "$r"); fi
	run P "${RT[@]}" run "${RUNFLAGS[@]}" "$TAG" --version
	[ "$rc" -eq 0 ] && break
	echo "# runtime ${r:-default}: $(printf '%s' "$err" | tail -1)"
done
if [ "$rc" -ne 0 ]; then
	skip "podman cannot run a container here: $(printf '%s' "$err" | tail -1)" "$name"
	done_testing
	exit
fi
R() { P "${RT[@]}" run "${RUNFLAGS[@]}" "$@"; }
is "$out" "rdmak $("$TOP/tools/version.sh")" "rdmak --version in the image (runtime ${RT[*]:-default})"

node=$NODES/a100-ib-bond
run R -v "$node:/node:ro" "$TAG" list --root /node
want=$("$RDMAK" list --root "$node")
is "$out" "$want" "rdmak list --root on a sample node mounted in: as the host's build prints it"
run R -v "$node:/node:ro" "$TAG" doctor --root /node --json
drc=$rc
"$RDMAK" doctor --root "$node" --json >"$TMP/doctor-host.json" 2>/dev/null
is "$drc" "$?" "rdmak doctor --root: the host build's exit code"
printf '%s\n' "$out" >"$TMP/doctor-image.json"
is "$(jget "$TMP/doctor-image.json" '[c["id"] + ":" + str(c["object"]) + ":" + c["status"] for c in d]')" \
	"$(jget "$TMP/doctor-host.json" '[c["id"] + ":" + str(c["object"]) + ":" + c["status"] for c in d]')" \
	"and the same checks with the same verdicts"
run R -v "$node:/node:ro" -v "$TOP/examples/plugin:/cfg:ro" "$TAG" \
	plugin --dry-run --root /node --config /cfg/shared-seed003.json
want=$("$RDMAK" plugin --dry-run --root "$node" --config "$TOP/examples/plugin/shared-seed003.json" 2>/dev/null)
is "$rc" 0 "rdmak plugin --dry-run in the image exits 0"
is "$out" "$want" "and prints the resources the host's build prints"

# The webhook dlopen()s libmicrohttpd and GnuTLS (src/http/dl.c), which ldd does not list: a
# certificate that is not one is refused by GnuTLS itself, so GnuTLS was loaded.
printf -- '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n' >"$TMP/bad.pem"
run R -v "$TOP/tests/fixtures/webhook:/cfg:ro" -v "$TMP/bad.pem:/tls/bad.pem:ro" "$TAG" \
	webhook --config /cfg/config.yaml --tls-cert /tls/bad.pem --tls-key /tls/bad.pem --listen 127.0.0.1:0
like "$err" "certificate: " "the webhook loads GnuTLS in the image (a bad certificate refused by GnuTLS)"
unlike "$err" "dlopen|cannot open shared|No such file" "no library missing"

# the CNI installer as the chart's DaemonSet runs it (as uid 0, as the chart asks), into a host
# directory mounted in
HOSTR=$TMP/host
mkdir -p "$HOSTR"
run R --user 0 -v "$HOSTR:/host" "$TAG" cni install --host-root=/host --cni-dir=/opt/cni/bin
is "$rc" 0 "the CNI installer (rdmak cni install) runs in the image"
like "$err" "installed /opt/cni/bin/rdmak-cni, /opt/cni/bin/rdmak-ipam" "and says what it installed"
is "$(stat -c %i "$HOSTR/opt/cni/bin/rdmak-cni")" "$(stat -c %i "$HOSTR/opt/cni/bin/rdmak-ipam")" \
	"rdmak-ipam is a hard link of rdmak-cni"
cmp -s "$HOSTR/opt/cni/bin/rdmak-cni" "$plain/image/rootfs/opt/rdmak/bin/rdmak-cni"
ok $? "the installed plugin is the image's per-pod binary (bin/rdmak-cni)"
# On the host, outside any container: the host's own root, with the installed /opt in place of
# its /opt (a private mount namespace), exec'd by its absolute path as a runtime does, with
# VERSION's request on stdin as libcni sends it.
on_host() {
	unshare --mount sh -c 'mount --bind "$0/opt" /opt && exec "$@"' "$HOSTR" "$@" \
		<<<'{"cniVersion":"1.0.0"}'
}
CNI_COMMAND=VERSION run on_host /opt/cni/bin/rdmak-cni
is "$rc" 0 "the installed rdmak-cni runs on the host (CNI_COMMAND=VERSION)"
like "$out" '"supportedVersions":.*"1.1.0"' "and answers VERSION"
CNI_COMMAND=VERSION run on_host /opt/cni/bin/rdmak-ipam
like "$out" '"supportedVersions":.*"1.1.0"' "rdmak-ipam too"
# the per-pod binary is a static PIE: neither the host's loader nor any library of the host's
# (a sanitizer build's is not: its runtimes cannot be linked statically)
case $vars in
*SAN=1*)
	skip "a sanitizer build's rdmak-cni is dynamic (set PLAIN_BUILD)" "static: no loader of the host's or the bundle's is needed"
	skip "a sanitizer build's rdmak-cni is dynamic (set PLAIN_BUILD)" "and no shared library"
	;;
*)
	is "$(readelf -lW "$HOSTR/opt/cni/bin/rdmak-cni" | grep -c 'interpreter:')" 0 \
		"static: no loader of the host's or the bundle's is needed"
	is "$(readelf -dW "$HOSTR/opt/cni/bin/rdmak-cni" | grep -c '(NEEDED)')" 0 "and no shared library"
	;;
esac

# what the image holds, as a security review reads it (the image's config and its files)
cfg=$(P image inspect --format '{{json .Config}}' "$TAG")
printf '%s' "$cfg" >"$TMP/config.json"
is "$(jget "$TMP/config.json" 'd["User"]')" "65532:65532" "the image runs as uid 65532 unless a pod asks for root"
is "$(jget "$TMP/config.json" 'd["Labels"]["org.opencontainers.image.version"]')" "$("$RDMAK" --version | cut -d' ' -f2)" \
	"label org.opencontainers.image.version: rdmak's version"
is "$(jget "$TMP/config.json" 'd["Labels"]["org.opencontainers.image.revision"]')" "$(git -C "$TOP" rev-parse HEAD 2>/dev/null || echo unknown)" \
	"label org.opencontainers.image.revision: the commit"
is "$(jget "$TMP/config.json" 'd["Labels"]["org.opencontainers.image.licenses"]')" "Apache-2.0" "label org.opencontainers.image.licenses"
like "$(jget "$TMP/config.json" 'd["Labels"]["org.opencontainers.image.created"]')" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "label org.opencontainers.image.created"
rootfs=$plain/image/rootfs
is "$(find "$rootfs" -name sh -o -name busybox -o -name bash -o -name dash | wc -l)" 0 "no shell in the image"
run R --entrypoint /bin/sh "$TAG" -c true
[ "$rc" -ne 0 ]
ok $? "podman run --entrypoint /bin/sh fails: there is none"
is "$(ls "$rootfs/usr/local/bin" | sort | tr '\n' ' ')" \
	"$( (echo rdmak; "$RDMAK" --help | awk '/^Roles:/ { on = 1; next } on && NF == 0 { exit } on { print "rdmak-" $1 }') | sort | tr '\n' ' ')" \
	"a link rdmak-<role> for every role of rdmak --help"
run R --entrypoint rdmak-probe "$TAG" --help
is "$rc" 0 "and each runs its role (rdmak-probe --help)"
ok "$(for p in "$rootfs"/var/lib/dpkg/status.d/*; do [ -f "$rootfs/usr/share/doc/$(basename "$p")/copyright" ] || echo "$p"; done | wc -l)" \
	"each bundled Debian package's copyright file is shipped beside it"

# one commit, one digest: the same image again into a second, empty store
S2=$TMP/podman2
mkdir -p "$S2/tmp"
PODMAN2="podman --root $S2/root --runroot $S2/run --tmpdir $S2/tmp --storage-driver vfs --events-backend none --cgroup-manager cgroupfs"
# shellcheck disable=SC2086
run make -s -C "$TOP" $vars BUILD="$plain" PODMAN="$PODMAN2" IMAGE=$TAG image
id1=$(P image inspect --format '{{.Id}}' "$TAG")
id2=$($PODMAN2 image inspect --format '{{.Id}}' "$TAG" </dev/null)
$PODMAN2 rmi -af >/dev/null 2>&1 </dev/null
is "$id2" "$id1" "built again from the same commit into another store: the same image ID"

# the OCI archive loads into an empty store and runs
P rmi -f "$TAG" >/dev/null 2>&1
run P load -q -i "$archive"
is "$rc" 0 "podman load takes the OCI archive"
run R "$TAG" --version
is "$out" "rdmak $("$TOP/tools/version.sh")" "and the loaded image runs"

size=$(P image inspect --format '{{.Size}}' "$TAG")
echo "# image size: $size bytes ($((size / 1000000)) MB); OCI archive $(stat -c %s "$archive") bytes; $(($(date +%s) - t0)) s in all"
case $vars in
*SAN=1*) skip "a sanitizer build's image (set PLAIN_BUILD)" "the image is under 30 MB" ;;
*) [ "$size" -lt 30000000 ]; ok $? "the image is under 30 MB ($size bytes)" ;;
esac

done_testing
