#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The guest's PID 1 after the initramfs (tests/vm/harness/init): the kernel file systems, the
# kernel's modules at /lib/modules, lo up, then each test of the job in turn with its output and
# exit status on the results share (/run/vm), then power off. Progress goes to the console.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
# what udev or systemd would add to a devtmpfs: bash's <(...) needs /dev/fd
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin && ln -s fd/1 /dev/stdout && ln -s fd/2 /dev/stderr
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
. /run/vm/job
# before /tmp's tmpfs, which would hide a cache under the host's /tmp
mkdir -p /lib/modules/"$(uname -r)"
mount --bind "$VM_KMODULES" /lib/modules/"$(uname -r)"
# a clone (or a build folder) under /tmp or /var/tmp, as CI's may be, would be hidden by their
# fresh tmpfs as well: each is kept aside and bound back at its own path, so that every path of
# the job stays true
kept=()
for d in "$TOP" "$BUILD"; do
	case $d/ in /tmp/* | /var/tmp/*) ;; *) continue ;; esac
	case $d/ in "$TOP"/*) [ "$d" = "$TOP" ] || continue ;; esac # inside the clone: kept with it
	mkdir -p "/run/vm-keep/${#kept[@]}" && mount --bind "$d" "/run/vm-keep/${#kept[@]}" && kept+=("$d")
done
mount -t tmpfs tmp /tmp
mount -t tmpfs vartmp /var/tmp
for i in "${!kept[@]}"; do
	mkdir -p "${kept[$i]}" && mount --bind "/run/vm-keep/$i" "${kept[$i]}" ||
		echo "vm: binding ${kept[$i]} back failed"
done
hostname rdmak-vm
ip link set lo up
export TOP BUILD RDMAK NODES HOME=/root TMPDIR=/tmp
cd "$TOP" || exit 1

off() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 60
}
if [ "$VM_SHELL" = 1 ]; then
	echo "vm: a shell on the console; the tests are $TOP/tests/vm/*.sh (bash tests/vm/NAME.sh); exit powers off"
	setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
	off
fi
echo "vm: $(uname -r) up in $(cut -d' ' -f1 /proc/uptime) s"
for t in $VM_TESTS; do
	s=$(cut -d' ' -f1 /proc/uptime)
	# RDMAK_VM_TRACE=1: every command of the test with the guest's clock, in NAME.trace (bash
	# does not take PS4 from the environment of root)
	run=(bash "tests/vm/$t.sh")
	[ "$VM_TRACE" = 1 ] && run=(bash -c 'exec 9>"$1"; PS4="+ \$EPOCHREALTIME "; BASH_XTRACEFD=9; set -x; . "$0"' \
		"tests/vm/$t.sh" "/run/vm/$t.trace")
	VM_ARTIFACTS=/run/vm/$t.files timeout -k 5 "$VM_TEST_TIMEOUT" "${run[@]}" </dev/null >"/run/vm/$t.log" 2>&1
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		n=$(($(grep -cE '^(not )?ok [0-9]+' "/run/vm/$t.log") + 1))
		echo "not ok $n - $t did not finish within $VM_TEST_TIMEOUT s (RDMAK_VM_TEST_TIMEOUT)" >>"/run/vm/$t.log"
	fi
	echo "$rc" >"/run/vm/$t.rc"
	awk -v a="$s" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f\n", b - a }' >"/run/vm/$t.secs"
	echo "vm: $t exit $rc, $(grep -c '^ok' "/run/vm/$t.log") ok, $(grep -c '^not ok' "/run/vm/$t.log") not ok, from $s s to $(cut -d' ' -f1 /proc/uptime) s"
done
echo done >/run/vm/status
off
