#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots Debian's kernel (the linux-image-amd64 package of this machine's archive, fetched with
# apt-get download) under qemu, with this machine's / shared read-only over 9p under a tmpfs
# overlay, and runs the named guest tests (tests/vm/NAME.sh) in it, one boot for all of them.
#   tests/vm/harness/boot.sh BUILD OUT NAME...
# OUT receives, per test, NAME.log (its TAP output), NAME.rc (its exit status) and NAME.secs
# (its seconds in the guest), and console.log (the guest's serial console). Exit status: 0 the
# guest ran every test (each one's own verdict is in its files), 77 the VM cannot be had here
# (OUT/skip says why, by name), anything else the VM failed (the reason and the console's tail
# on stderr).
# Environment: RDMAK_VM_TIMEOUT (seconds for the whole boot, default 900), RDMAK_VM_TEST_TIMEOUT
# (seconds for one guest test, default 300), RDMAK_VM_CACHE (where the kernel and initramfs are
# kept: default the clone's build/vm, else BUILD/vm), RDMAK_VM_KERNEL_PKG (default
# linux-image-amd64), RDMAK_VM_TRACE=1 (each test's commands with the guest's clock in
# OUT/NAME.trace), RDMAK_VM_SHELL=1 (no tests: an interactive shell on the console, for a person).
set -u
build=${1:?usage: boot.sh BUILD OUT NAME...}
out=${2:?usage: boot.sh BUILD OUT NAME...}
shift 2
top=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "$build" && pwd)
# one kernel for every build folder of the clone (build/, build/san-gcc, build/san-clang)
case "$build/" in "$top/build/"*) cache=${RDMAK_VM_CACHE:-$top/build/vm} ;; *) cache=${RDMAK_VM_CACHE:-$build/vm} ;; esac
meta=${RDMAK_VM_KERNEL_PKG:-linux-image-amd64}
me="vm"
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
rm -rf "$out"/*.log "$out"/*.rc "$out"/*.secs "$out"/*.trace "$out"/*.files "$out"/skip "$out"/status "$out"/job

skip() { echo "$*" >"$out/skip"; echo "$me: skipped: $*" >&2; exit 77; }
die() { echo "$me: $*" >&2; exit 1; }

for tool in qemu-system-x86_64:qemu-system-x86 cpio:cpio depmod:kmod dpkg-deb:dpkg apt-get:apt; do
	command -v "${tool%%:*}" >/dev/null || skip "${tool%%:*} not found (Debian package ${tool#*:})"
done
busybox=/bin/busybox
[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || skip "$busybox is not a static busybox (Debian package busybox-static)"

# ---- the kernel: once per package version into the cache -------------------------------------
# The metapackage names the current ABI's package (linux-image-6.1.0-NN-amd64); without the
# archive's lists, the newest one already extracted is used.
pkg=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -1)
if [ -z "$pkg" ]; then
	pkg=$(cd "$cache" && ls -d linux-image-*/ 2>/dev/null | sort -V | tail -1)
	pkg=${pkg%/}
	[ -n "$pkg" ] || skip "$meta: apt-cache names no kernel package (apt-get update first?) and none is in $cache"
fi
kdir=$cache/$pkg
if [ ! -f "$kdir/.done" ]; then
	rm -rf "$kdir" "$cache/dl"
	mkdir -p "$cache/dl"
	echo "$me: fetching $pkg (apt-get download) into $cache" >&2
	(cd "$cache/dl" && apt-get download -q "$pkg" >"$cache/dl/log" 2>&1) ||
		skip "apt-get download $pkg failed: $(grep -E '^(E|W):' "$cache/dl/log" | head -1)"
	dpkg-deb -x "$cache"/dl/*.deb "$kdir" || die "dpkg-deb -x of $pkg failed"
	rm -rf "$cache/dl"
	kver=$(ls "$kdir/lib/modules")
	# the package's postinst runs depmod; here it is run on the extracted tree
	depmod -b "$kdir" "$kver" || die "depmod of $pkg failed"
	touch "$kdir/.done"
fi
kver=$(ls "$kdir/lib/modules")
vmlinuz=$kdir/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || die "$pkg has no boot/vmlinuz-$kver"

# ---- the initramfs: busybox and the modules that mount the 9p root and the overlay ------------
initrd=$kdir/initramfs.cpio.gz
if [ ! -f "$initrd" ] || [ "$top/tests/vm/harness/init" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
	tmp=$(mktemp -d "$cache/initramfs.XXXXXX")
	mkdir -p "$tmp/bin" "$tmp/lib/modules"
	cp "$busybox" "$tmp/bin/busybox"
	cp "$top/tests/vm/harness/init" "$tmp/init"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$kdir" -S "$kver" --show-depends "$m" || die "modprobe --show-depends $m failed for $kver"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$tmp/list"
	while read -r ko; do
		cp "$ko" "$tmp/lib/modules/" && basename "$ko"
	done <"$tmp/list" >"$tmp/modules"
	rm "$tmp/list"
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.new" || die "cpio of the initramfs failed"
	mv "$initrd.new" "$initrd"
	rm -rf "$tmp"
fi

# ---- the job: what the guest runner reads from the results share -----------------------------
{
	printf 'TOP=%q\nBUILD=%q\nRDMAK=%q\nNODES=%q\nVM_KMODULES=%q\n' "$top" "$build" "$build/rdmak" \
		"$top/examples/nodes" "$kdir/lib/modules/$kver"
	printf 'VM_TEST_TIMEOUT=%q\nVM_SHELL=%q\nVM_TRACE=%q\n' "${RDMAK_VM_TEST_TIMEOUT:-300}" \
		"${RDMAK_VM_SHELL:-0}" "${RDMAK_VM_TRACE:-0}"
	printf 'VM_TESTS=%q\n' "$*"
	# the sanitizers' settings of tests/run.sh, for a sanitized build
	printf 'export ASAN_OPTIONS=%q UBSAN_OPTIONS=%q\n' "${ASAN_OPTIONS:-}" "${UBSAN_OPTIONS:-}"
} >"$out/job"

# ---- the boot ----------------------------------------------------------------------------------
# KVM hangs in the firmware on nested hosts, so TCG always: slow but the same everywhere.
qemu=(qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 -nodefaults -no-user-config -no-reboot
	-display none -kernel "$vmlinuz" -initrd "$initrd"
	-append "console=ttyS0 panic=-1 loglevel=4 rdmak.run=$top/tests/vm/harness/guest.sh"
	-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap")
if [ "${RDMAK_VM_SHELL:-0}" = 1 ]; then
	exec "${qemu[@]}" -serial mon:stdio
fi
limit=${RDMAK_VM_TIMEOUT:-900}
start=$(date +%s)
timeout -k 10 "$limit" "${qemu[@]}" -serial "file:$out/console.log" 2>"$out/qemu.err"
rc=$?
tail_console() { tail -n "${1:-40}" "$out/console.log" 2>/dev/null | sed 's/^/    console: /' >&2; }
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "$me: $pkg: the guest did not finish within $limit s (RDMAK_VM_TIMEOUT); its console's last lines:" >&2
	tail_console 60
	exit 1
fi
if [ ! -f "$out/status" ]; then
	echo "$me: $pkg: qemu exited $rc before the guest runner finished: $(head -c 500 "$out/qemu.err")" >&2
	tail_console 60
	exit 1
fi
echo "$me: $pkg booted, ran $# guest test(s) in $(($(date +%s) - start)) s" >&2
exit 0
