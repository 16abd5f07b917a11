#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Symbolic links inside --root resolve inside it, as chroot(2) (and openat2's RESOLVE_IN_ROOT)
# would: an absolute target is taken relative to the root, ".." stops at it. So a tree cannot
# make rdmak read this machine's files (fw_ver -> /etc/hostname printed the host name), while
# sysfs's own relative links (../../devices/...) keep working. Everything runs twice: with
# openat2, and with the user-space walk that replaces it on kernels before 5.6 (the shipped
# rdmak under tests/helpers/no_openat2, a seccomp filter answering openat2 ENOSYS as those
# kernels do).
. "$(dirname "$0")/../lib.sh"
NO_OPENAT2=$BUILD/tests/helpers/no_openat2
# the filter is what it says: openat2 answers ENOSYS (38) under it, EFAULT (14) without
probe='import ctypes; l = ctypes.CDLL(None, use_errno=True); l.syscall(437, -100, b"/", None, 24); print(ctypes.get_errno())'
is "$("$PY" -c "$probe")" 14 "openat2 with a NULL open_how: EFAULT from the kernel"
is "$("$NO_OPENAT2" "$PY" -c "$probe")" 38 "under no_openat2: ENOSYS, as a kernel before 5.6"
secret="outside-the-root-$$"
echo "$secret" >"$TMP/secret"
host=$(cat /etc/hostname 2>/dev/null || true)

for mode in openat2 walk; do
	if [ $mode = walk ]; then R=("$NO_OPENAT2" "$RDMAK"); else R=("$RDMAK"); fi
	rm -rf "$TMP/n"; cp -a "$NODES/a100-ib-bond" "$TMP/n"
	dev=$(readlink -f "$TMP/n/sys/class/infiniband/mlx5_0")
	run "${R[@]}" list --root "$TMP/n" --format ibstat
	like "$out" "Firmware version: 20\\.37\\.1700" "$mode: the sample node's fw_ver reads through sysfs's relative links"

	# an absolute link out of the root
	rm "$dev/fw_ver"; ln -s "$TMP/secret" "$dev/fw_ver"
	run "${R[@]}" list --root "$TMP/n" --format ibstat
	unlike "$out$err" "$secret" "$mode: fw_ver -> an absolute path outside: not read"
	# the same path under the root is what it names
	mkdir -p "$TMP/n/sys$TMP" && echo "fw-under-root" >"$TMP/n/sys$TMP/secret"
	run "${R[@]}" list --root "$TMP/n" --format ibstat
	like "$out" "Firmware version: fw-under-root" "$mode: an absolute target is taken relative to the sysfs root"
	rm -rf "$TMP/n/sys/${TMP#/}"
	if [ -n "$host" ]; then
		rm "$dev/fw_ver"; ln -s /etc/hostname "$dev/fw_ver"
		run "${R[@]}" list --root "$TMP/n" --format ibstat
		unlike "$out" "Firmware version: $host\$" "$mode: fw_ver -> /etc/hostname does not print the host name"
	fi
	# climbing out with ".."
	rm "$dev/fw_ver"; ln -s "$(printf '../%.0s' $(seq 1 40))${TMP#/}/secret" "$dev/fw_ver"
	run "${R[@]}" list --root "$TMP/n" --format ibstat
	unlike "$out$err" "$secret" "$mode: fw_ver -> ../../(x40)/secret: clamped at the root, not read"

	# a whole device directory behind an absolute link that is valid inside the root
	rel=${dev#"$TMP/n/sys"}
	rm "$TMP/n/sys/class/infiniband/mlx5_0"; ln -s "$rel" "$TMP/n/sys/class/infiniband/mlx5_0"
	run "${R[@]}" list --root "$TMP/n" --json
	is "$rc" 0 "$mode: class/infiniband/mlx5_0 -> /devices/... (absolute, inside the root) reads"
	like "$out" '"name": "mlx5_0"' "$mode: and the device is there"

	# the device nodes: /dev/infiniband/uverbs0 -> an absolute path outside the devfs root
	mknod "$TMP/outside-uverbs" c 231 192 2>/dev/null || true
	rm -f "$TMP/n/dev/infiniband/uverbs0"; ln -s "$TMP/outside-uverbs" "$TMP/n/dev/infiniband/uverbs0"
	run "${R[@]}" list --root "$TMP/n" --json
	like "$(jget "$TMP/out" "[c['devfs']['present'] for c in d['char_devices'] if c['name']=='uverbs0']")" '\[false\]' \
		"$mode: dev/infiniband/uverbs0 -> outside the devfs root: absent, not the host's node"
	rm -f "$TMP/outside-uverbs"

	# the doctor's own sysfs reads (an IPoIB netdev's mode) and the snapshot
	nd=$(readlink -f "$TMP/n/sys/class/net/ibp70s0")
	rm "$nd/mode"; ln -s "$TMP/secret" "$nd/mode"
	run "${R[@]}" doctor --root "$TMP/n" --json
	unlike "$out$err" "$secret" "$mode: doctor: ibp70s0/mode -> outside: not read"
	run "${R[@]}" snapshot --root "$TMP/n" -o "$TMP/s.tar"
	is "$rc" 0 "$mode: snapshot of the tree with escaping links"
	tar -xOf "$TMP/s.tar" 2>/dev/null | grep -c "$secret" >"$TMP/count"
	is "$(cat "$TMP/count")" 0 "$mode: the snapshot holds nothing from outside the root"
	rm -f "$TMP/s.tar"
done
done_testing
