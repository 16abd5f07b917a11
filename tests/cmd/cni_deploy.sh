#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The rdmak-cni DaemonSet's installer on a fake host: deploy/bundle.sh packs build/reloc/rdmak with
# its libraries and loader, `rdmak cni install` puts it on the "host" ($TMP/host), and the
# installed plugins then run in a chroot holding nothing but what the installer wrote (no /lib,
# no /usr): proof that a node without Debian 12's libraries can exec them. Re-install is
# idempotent, an upgrade switches the library directory, and no temporary file is left behind.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	skip "needs root and unshare (a chroot with its own /proc)" "rdmak cni install on a fake host"
	done_testing
	exit
fi
# Every exec of rdmak-cni/rdmak-ipam (four per ADD+DEL) pays the dynamic linking of each shared
# object: gRPC and its abseil, upb, re2 and c-ares (~55 objects) are linked statically (Makefile).
is "$(readelf -d "$RDMAK" | grep -cE 'NEEDED.*lib(grpc|gpr|absl_|upb|re2|cares|address_sorting)')" 0 \
	"rdmak needs no gRPC, abseil, upb, re2 or c-ares shared object (linked statically)"
# libmicrohttpd and GnuTLS (with its eight own dependencies) are loaded by the webhook's server
# only (src/http/dl.c), not at every exec
is "$(readelf -d "$RDMAK" | grep -cE 'NEEDED.*lib(microhttpd|gnutls)')" 0 \
	"rdmak does not need libmicrohttpd or libgnutls at start (the webhook loads them)"

# The per-pod binary (rdmak-cni, rdmak-ipam: src/pod.c) loads nothing a CNI request does not use:
# no C++ runtime, gRPC, OpenSSL, YAML, HTTP or TLS library, and no etcd client (docs/cni.md).
POD="$BUILD/cni/rdmak-cni"
is "$(readelf -d "$POD" | grep -cE 'NEEDED.*lib(stdc\+\+|grpc|gpr|absl_|upb|re2|cares|ssl|crypto|yaml|microhttpd|gnutls|protobuf|z\.|atomic|jansson|nl-)')" 0 \
	"rdmak-cni needs no libstdc++, gRPC, OpenSSL, YAML, HTTP/TLS, protobuf or zlib (jansson, libnl static)"
# what is linked in, on the plain build's binary: a sanitizer build links its runtime (libm,
# libgcc_s and C++ code of its own) into every program
LINKED=${PLAIN_BUILD:-$BUILD}/cni/rdmak-cni
if grep -q 'SAN=1' "${PLAIN_BUILD:-$BUILD}/make.vars" 2>/dev/null || [ ! -x "$LINKED" ]; then
	skip "a sanitizer build (set PLAIN_BUILD)" "it needs no shared object"
	skip "a sanitizer build (set PLAIN_BUILD)" "and no dynamic loader"
	skip "a sanitizer build (set PLAIN_BUILD)" "no etcd client, gRPC or C++ code in it"
else
	# a static PIE: no loader runs at its exec (docs/cni.md, "One binary per pod start")
	is "$(readelf -d "$LINKED" | grep -c NEEDED)" 0 "it needs no shared object (static PIE)"
	unlike "$(readelf -lW "$LINKED")" "INTERP" "and no dynamic loader"
	is "$(nm "$LINKED" | grep -cE ' [TDBR] etcd_| [TtDdBbRr] (grpc|_ZN)')" 0 "no etcd client, gRPC or C++ code in it"
fi
# (weak and unresolved: nm shows it as "w" in a dynamic link; a static one drops the name)
is "$(nm "$POD" | awk '$NF == "ipam_store_etcd_driver" && $(NF-1) != "w"' | wc -l)" 0 "the etcd store is not defined there"
like "$(nm "$RDMAK" | awk '$NF == "ipam_store_etcd_driver" { print $(NF-1) }')" "^[DR]$" "and defined in rdmak"
# hardening of a program a runtime runs as root (Makefile HARDEN_*)
for b in "$POD" "$BUILD/reloc/rdmak-cni"; do
	n=${b#"$BUILD"/}
	like "$(readelf -hW "$b")" "Type: +DYN" "$n is position independent (PIE)"
	like "$(readelf -d "$b")" "FLAGS_1.*NOW.*PIE" "$n: DF_1_PIE and BIND_NOW"
	like "$(readelf -lW "$b")" "GNU_RELRO" "$n: RELRO segment (with BIND_NOW: full RELRO)"
	like "$(readelf -lW "$b" | grep GNU_STACK)" " RW " "$n: the stack is not executable"
done
like "$(nm "$POD")" "__stack_chk_fail" "rdmak-cni: stack protector"
like "$(nm "$POD")" "__[a-z_]*_chk" "rdmak-cni: fortified libc calls (_FORTIFY_SOURCE)"

RELOC_BIN="$BUILD/reloc/rdmak"
RELOC_POD="$BUILD/reloc/rdmak-cni"
IMG="$TMP/img/opt/rdmak"
HOSTR="$TMP/host"

run "$TOP/deploy/bundle.sh" "$RELOC_BIN" "$IMG" --cni "$RELOC_POD"
is "$rc" 0 "bundle.sh packs build/reloc/rdmak and build/reloc/rdmak-cni"
if grep -q 'SAN=1' "$BUILD/make.vars" 2>/dev/null; then
	like "$(readelf -lW "$RELOC_POD")" "interpreter: /opt/rdmak/lib/ld-linux" "the relocated per-pod binary asks for the bundle's loader"
else
	unlike "$(readelf -lW "$RELOC_POD")" "INTERP" "the per-pod binary is static: it asks for no loader"
fi
like "$(readelf -lW "$RELOC_BIN")" "interpreter: /opt/rdmak/lib/ld-linux" "the relocated binary asks for the bundle's loader"
like "$(readelf -d "$RELOC_BIN")" "\(RPATH\).*\[/opt/rdmak/lib\]" "and finds its libraries (and theirs) through DT_RPATH"
is "$( (ldd "$RELOC_BIN"; ldd "$RELOC_POD") | awk '$2 == "=>" && $3 ~ /^\// { n = split($1, p, "/"); print p[n] }' | sort -u | tr '\n' ' ')" \
	"$(ls "$IMG/lib" | sort | tr '\n' ' ')" "the bundle holds exactly the libraries and loader ldd lists"

mkdir -p "$HOSTR"
RDMAK_NODE_NAME=node-7 run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin
is "$rc" 0 "rdmak cni install exits 0"
like "$err" "installed /opt/cni/bin/rdmak-cni, /opt/cni/bin/rdmak-ipam" "it says what it installed"
# where rdmak-ipam reads its node name for per-node blocks (the runtime execs it without the
# DaemonSet's environment)
nodefile=$(grep -rhoE '#define IPAM_NODE_NAME_FILE "[^"]+"' "$TOP/src" | sed 's/.* "\(.*\)"/\1/')
is "$(cat "$HOSTR$nodefile" 2>&1)" node-7 "RDMAK_NODE_NAME goes to $nodefile, where rdmak-ipam reads it"
is "$(stat -c '%i %a' "$HOSTR/opt/cni/bin/rdmak-cni")" "$(stat -c '%i %a' "$HOSTR/opt/cni/bin/rdmak-ipam")" \
	"rdmak-ipam is a hard link of rdmak-cni (one copy, mode 755)"
is "$(stat -c %a "$HOSTR/opt/cni/bin/rdmak-cni")" 755 "mode 755"
cmp -s "$RELOC_POD" "$HOSTR/opt/cni/bin/rdmak-cni"
ok $? "the installed rdmak-cni is the per-pod binary"
is "$(readlink "$HOSTR/opt/rdmak/lib")" "$(ls "$HOSTR/opt/rdmak" | grep '^lib-')" "/opt/rdmak/lib points at the one library directory"
is "$(find "$HOSTR" -name '.*' | wc -l)" 0 "no temporary file left"

# in a private mount namespace: /proc for the sanitizers, then a chroot to the bare host tree
in_host() {
	mkdir -p "$HOSTR/proc"
	unshare --mount sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$HOSTR" "$@"
}
run in_host /opt/rdmak/bin/rdmak --version
is "$out" "rdmak $("$TOP/tools/version.sh")" "the installed rdmak runs with nothing but the bundle (chroot without /lib)"
CNI_COMMAND=VERSION run in_host /opt/cni/bin/rdmak-ipam
like "$out" '"supportedVersions":.*"1.1.0"' "rdmak-ipam answers VERSION there"
CNI_COMMAND=VERSION run in_host /opt/cni/bin/rdmak-cni
like "$out" '"supportedVersions":.*"1.1.0"' "rdmak-cni answers VERSION there"
# an etcd store: the per-pod rdmak-ipam has none and hands the request to /opt/rdmak/bin/rdmak,
# whose etcd client then finds nothing listening (code 11, naming the endpoint); without the
# hand-off the answer would be "the etcd store needs the full rdmak"
# (the node's store "e", in the host's CNI settings, names the endpoint)
mkdir -p "$HOSTR/etc/rdmak"
printf '{"etcd":{"e":{"endpoints":["127.0.0.1:1"]}}}' >"$HOSTR/etc/rdmak/cni.json"
etcd_conf='{"cniVersion":"1.0.0","name":"e","type":"rdmak-ipam","ipam":{"type":"rdmak-ipam","store":"etcd","etcd":"e","ranges":[[{"subnet":"10.9.0.0/24"}]]}}'
printf '%s' "$etcd_conf" >"$TMP/etcd.json"
RDMAK_CNI_CONFIG= CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
	run in_host /opt/cni/bin/rdmak-ipam <"$TMP/etcd.json"
like "$out" '"code": *11' "rdmak-ipam with an etcd store: the full rdmak answers (code 11, the store cannot be reached)"
like "$out" '127.0.0.1:1' "naming the endpoint"
mv "$HOSTR/opt/rdmak/bin/rdmak" "$HOSTR/opt/rdmak/bin/rdmak.away"
RDMAK_CNI_CONFIG= CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
	run in_host /opt/cni/bin/rdmak-ipam <"$TMP/etcd.json"
like "$out" 'the etcd store needs the full rdmak' "control: without /opt/rdmak/bin/rdmak it says what is missing"
mv "$HOSTR/opt/rdmak/bin/rdmak.away" "$HOSTR/opt/rdmak/bin/rdmak"
# the control: the ordinary build cannot run in that tree, so the check above can fail
cp "$RDMAK" "$HOSTR/rdmak-plain"
run in_host /rdmak-plain --version
[ "$rc" -ne 0 ]
ok $? "control: the ordinary build (loader in /lib64) does not run in the bare tree"
rm -f "$HOSTR/rdmak-plain"

# the node's settings (the chart's cni values, docs/cni.md; its fabric part, docs/fabric.md): a
# Secret volume's files are symbolic links into ..data; they arrive as root's regular files, mode
# 0600, in folders of mode 0700, which the installed rdmak reads (it refuses a symbolic link or a
# file others may write); a fabric or etcd store no longer given loses its folder
FS="$TMP/node-src"
mkdir -p "$FS/fabric/rail0/..2026_11_28" "$HOSTR/etc/rdmak/fabric/gone" "$FS/etcd/e/..2026_11_28" "$HOSTR/etc/rdmak/etcd/old"
printf 'CA\n' >"$FS/etcd/e/..2026_11_28/ca.crt" && printf 'CERT\n' >"$FS/etcd/e/..2026_11_28/tls.crt" && printf 'KEY\n' >"$FS/etcd/e/..2026_11_28/tls.key"
ln -s ..2026_11_28 "$FS/etcd/e/..data"
for f in ca.crt tls.crt tls.key; do ln -s "..data/$f" "$FS/etcd/e/$f"; done
printf '{"etcd":{"e":{"endpoints":["127.0.0.1:1"],"tls":{"ca":"/etc/rdmak/etcd/e/ca.crt","cert":"/etc/rdmak/etcd/e/tls.crt","key":"/etc/rdmak/etcd/e/tls.key"}}}}' >"$FS/cni.json"
printf 'admin\n' >"$FS/fabric/rail0/..2026_11_28/username" && printf '123456\n' >"$FS/fabric/rail0/..2026_11_28/password"
ln -s ..2026_11_28 "$FS/fabric/rail0/..data"
ln -s ..data/username "$FS/fabric/rail0/username" && ln -s ..data/password "$FS/fabric/rail0/password"
printf '{"stateDir":"/var/lib/cni/rdmak-cni","fabrics":{"rail0":{"ufm":"https://127.0.0.1:1","credentials":"/etc/rdmak/fabric/rail0","timeoutSeconds":1}}}' >"$FS/fabrics.json"
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin --node-src "$FS"
is "$rc" 0 "rdmak cni install --node-src exits 0"
like "$err" "installed the node's settings: /etc/rdmak/cni.json \(etcd stores: e\) /etc/rdmak/fabrics.json \(rail0\)" \
	"and says it installed the node's settings"
is "$(stat -c '%F %a %u' "$HOSTR/etc/rdmak/fabrics.json" "$HOSTR/etc/rdmak/fabric/rail0/username" "$HOSTR/etc/rdmak/fabric/rail0/password" \
	"$HOSTR/etc/rdmak/cni.json" "$HOSTR/etc/rdmak/etcd/e/ca.crt" "$HOSTR/etc/rdmak/etcd/e/tls.crt" "$HOSTR/etc/rdmak/etcd/e/tls.key" | sort -u)" \
	"regular file 600 0" "the settings files, the credentials and the etcd client's files are root's regular files, mode 0600"
is "$(cat "$HOSTR/etc/rdmak/etcd/e/tls.key")" KEY "the etcd store's key is the Secret's"
is "$(stat -c '%a' "$HOSTR/etc/rdmak/fabric" "$HOSTR/etc/rdmak/fabric/rail0" "$HOSTR/etc/rdmak/etcd" "$HOSTR/etc/rdmak/etcd/e" | sort -u)" 700 "in folders of mode 0700"
ok "$([ ! -e "$HOSTR/etc/rdmak/fabric/gone" ] && [ ! -e "$HOSTR/etc/rdmak/etcd/old" ] && echo 0 || echo 1)" \
	"a fabric or etcd store no longer given loses its folder"
# the installed rdmak-ipam reads them: the store's TLS files are read (they hold no PEM here)
RDMAK_CNI_CONFIG= CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
	run in_host /opt/cni/bin/rdmak-ipam <"$TMP/etcd.json"
like "$out" "etcd tls: ca /etc/rdmak/etcd/e/ca.crt: no PEM certificate in it|no PEM" "rdmak-ipam takes the installed store and its files"
run in_host /opt/rdmak/bin/rdmak fabric gc --fabrics /etc/rdmak/fabrics.json
is "$rc" 0 "the installed rdmak takes the fabrics file and its credentials (fabric gc, nothing to do)"
[ "$rc" -eq 0 ] || echo "#   $err"
# the chart's gc container: a round at once and every --interval, SIGTERM ends it with exit 0
# (in_host's exec chain without the function, so that $! is the process that ends up as rdmak)
unshare --mount sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$HOSTR" \
	/opt/rdmak/bin/rdmak fabric gc --fabrics /etc/rdmak/fabrics.json --interval 1 \
	--alive-file /gc-alive 2>"$TMP/gc.err" &
pid=$!
n=0
while [ "$(grep -c 'fabric gc' "$TMP/gc.err")" -lt 1 ] || [ ! -f "$HOSTR/gc-alive" ]; do
	[ $n -lt 600 ] || break; sleep 0.1; n=$((n + 1))
done
run "$RDMAK" probe "$HOSTR/gc-alive"
is "$rc" 0 "fabric gc --interval: its loop is alive"
kill -TERM "$pid"; wait "$pid"
is "$?" 0 "and SIGTERM stops it with exit 0"
like "$(cat "$TMP/gc.err")" "gc every 1 s" "saying what it does"
rm -f "$HOSTR/gc-alive"
run in_host /opt/rdmak/bin/rdmak fabric check --fabrics /etc/rdmak/fabrics.json
like "$rc $err" "^1 rdmak fabric check: fabric rail0: UFM https://127.0.0.1:1: " "and check gets as far as calling the fabric manager"
# a network with a fabric: the per-pod binary cannot load GnuTLS (static), so the full rdmak
# takes the request, and goes on to look for the VF (this tree has no /sys); without it the
# answer says what is missing
if grep -q 'SAN=1' "$BUILD/make.vars" 2>/dev/null; then
	skip "a sanitizer build: its rdmak-cni is linked dynamically and loads GnuTLS itself" "rdmak-cni with a fabric: the full rdmak takes it"
	skip "a sanitizer build" "control: without /opt/rdmak/bin/rdmak it says what is missing"
else
	fab_conf='{"cniVersion":"1.0.0","name":"f","type":"rdmak-cni","link":"hostdev","deviceID":"0000:3b:00.2","pkey":"0x8101","fabric":"rail0"}'
	printf '%s' "$fab_conf" >"$HOSTR/fab.json"
	RDMAK_CNI_CONFIG= CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
		run in_host /opt/cni/bin/rdmak-cni <"$HOSTR/fab.json"
	like "$out" '"details":"sysfs: /sys: No such file' "rdmak-cni with a fabric: the full rdmak takes it, past the hand-off"
	mv "$HOSTR/opt/rdmak/bin/rdmak" "$HOSTR/opt/rdmak/bin/rdmak.away"
	RDMAK_CNI_CONFIG= CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_NETNS=/proc/1/ns/net CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
		run in_host /opt/cni/bin/rdmak-cni <"$HOSTR/fab.json"
	like "$rc $out" '^1 .*"code":7,"msg":"a network with a fabric needs the full rdmak"' \
		"control: without /opt/rdmak/bin/rdmak it says what is missing (code 7)"
	mv "$HOSTR/opt/rdmak/bin/rdmak.away" "$HOSTR/opt/rdmak/bin/rdmak"
fi
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin --node-src "$FS"
unlike "$err" "settings" "installed again unchanged: nothing rewritten"
# a node settings file the plugins would refuse is not installed
cp "$FS/cni.json" "$TMP/cni.good"
printf '{"dataDirs":["var/lib"]}' >"$FS/cni.json"
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin --node-src "$FS"
is "$rc" 1 "a bad cni.json: exit 1"
like "$err" "error: $FS/cni.json: dataDirs\[0\]: \"var/lib\" is not an absolute path without \"..\": not installed" \
	"... not installed, naming the key"
grep -q '"e"' "$HOSTR/etc/rdmak/cni.json"; ok $? "... the one installed before stays"
cp "$TMP/cni.good" "$FS/cni.json"
# a rotated Secret while the DaemonSet's container waits: installed again, said once
"$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin --node-src "$FS" \
	--wait 2>"$TMP/rot.err" &
pid=$!
mkdir -p "$FS/fabric/rail0/..2026_11_29"
printf 'admin\n' >"$FS/fabric/rail0/..2026_11_29/username" && printf 'rotated\n' >"$FS/fabric/rail0/..2026_11_29/password"
ln -sfn ..2026_11_29 "$FS/fabric/rail0/..data.tmp" && mv -T "$FS/fabric/rail0/..data.tmp" "$FS/fabric/rail0/..data"
n=0
while [ "$(cat "$HOSTR/etc/rdmak/fabric/rail0/password")" != rotated ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
is "$(cat "$HOSTR/etc/rdmak/fabric/rail0/password")" rotated "--wait: a rotated Secret is installed again"
printf '{"stateDir": 1}' >"$FS/cni.json"
n=0
while ! grep -q "not installed" "$TMP/rot.err" && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
sleep 2.2
is "$(grep -c "not installed" "$TMP/rot.err")" 1 "a source gone bad is said once, not every second"
kill -TERM "$pid"; wait "$pid"
is "$?" 0 "and SIGTERM stops it"

# again: nothing changes; a new bundle: a new library directory, the old one gone
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin
is "$rc" 0 "a second install exits 0"
is "$(ls "$HOSTR/opt/rdmak" | grep -c '^lib-')" 1 "one library directory after a re-install"
old=$(readlink "$HOSTR/opt/rdmak/lib")
cp "$IMG/bin/rdmak-cni" "$TMP/r" && printf '\0' >>"$TMP/r" && cp "$TMP/r" "$IMG/bin/rdmak-cni"
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin
is "$rc" 0 "an upgrade exits 0"
new=$(readlink "$HOSTR/opt/rdmak/lib")
[ "$old" != "$new" ] && [ ! -e "$HOSTR/opt/rdmak/$old" ] && [ -d "$HOSTR/opt/rdmak/$new" ]
ok $? "an upgrade switches lib to a new directory and removes the old one"
cmp -s "$TMP/r" "$HOSTR/opt/cni/bin/rdmak-cni"
ok $? "and replaces the plugin"

run "$RDMAK" cni install --src "$TMP/none" --host-root "$HOSTR"
is "$rc" 1 "a missing bundle exits 1"
like "$err" "is not a bundle" "naming the problem"
run "$RDMAK" cni install --cni-dir opt/cni/bin
is "$rc" 2 "a relative --cni-dir exits 2"
mkfifo "$IMG/lib/fifo"
run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin
is "$rc" 1 "a bundle with a FIFO in lib/: exit 1"
like "$err" "lib/fifo: not a regular file" "naming it, never reading it"
rm -f "$IMG/lib/fifo"
RDMAK_NODE_NAME='a/b' run "$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin
is "$rc" 1 "RDMAK_NODE_NAME that is no node name: exit 1"
like "$err" "RDMAK_NODE_NAME 'a/b': not a node name" "naming it"

# the DaemonSet's container: installed, then alive until SIGTERM, which removes nothing
"$RDMAK" cni install --src "$IMG" --host-root "$HOSTR" --cni-dir /opt/cni/bin --wait \
	--alive-file "$TMP/alive" 2>"$TMP/wait.err" &
pid=$!
n=0
while ! grep -q installed "$TMP/wait.err" && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
run "$RDMAK" probe "$TMP/alive"
is "$rc" 0 "--wait: rdmak probe finds its loop alive"
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "SIGTERM: exit 0"
[ -x "$HOSTR/opt/cni/bin/rdmak-cni" ] && [ -x "$HOSTR/opt/rdmak/bin/rdmak" ]
ok $? "and the installed files stay, for the DEL of pods still attached"
done_testing
