#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `rdmak list --json` asks the kernel for, against the floor of one open, read to end of
# file and close per file (issue 18 §3; tools/read_floor.c, make bench). On a node with a
# thousand VFs the syscalls are the whole cost, so the reader must not pay for opens that are
# known to fail: a path through a class directory's entry (class/net/X/..., bus/pci/devices/
# BDF/...) tried first beneath that directory always fails (EXDEV: the entry is a link to
# ../../devices/...), a bonding/ probe under a netdev that has a PCI function always fails, and
# a readlink of one name is one readlinkat, not open + fstat + readlinkat + close, a file is
# read to its end without an fstat first, a VF is not asked for an SR-IOV capability, and one
# name beneath an open directory is an openat
# (a port's directory too: beneath the ports directory, not ports/N beneath the device), and
# a device's ports/ and a port's gids/ are read up to their first missing number, not listed.
# Output equality is tests/cmd/list_golden.sh's.
. "$(dirname "$0")/../lib.sh"
if ! command -v strace >/dev/null; then
	skip "no strace" "list --json: no open known to fail"
	done_testing
	exit
fi
# The counts below are those of the reader's walk with openat2 (Linux 5.6+). Without it (an
# older kernel, or a seccomp profile that refuses it) rdmak walks one name at a time in user
# space, with the fstat and fcntl that takes, and the "no openat2 for ..." checks would pass
# for nothing: all are skipped, said so, rather than failed or passed.
strace -f -qq -o "$TMP/probe" -e trace=openat2 "$RDMAK" list --json --root "$NODES/a100-ib-bond" \
	>/dev/null 2>&1
if ! grep -qE '^[0-9]+ +openat2\(.* = [0-9]+$' "$TMP/probe"; then
	skip "no openat2 succeeds here (kernel before 5.6, or seccomp): the walk is user space's" \
		"list --json: the syscalls of the openat2 walk"
	done_testing
	exit
fi
for node in a100-ib-bond cx5-roce-sriov; do
	strace -f -qq -o "$TMP/trace" -e trace=openat2,openat,fcntl,readlinkat,newfstatat,fstat -Z \
		"$RDMAK" list --json --root "$NODES/$node" >/dev/null 2>&1
	is "$(grep -c 'EXDEV' "$TMP/trace")" 0 "$node: no open tried beneath a directory it leaves (EXDEV)"
	virt=$(for l in "$NODES/$node"/sys/class/net/*; do readlink "$l"; done | grep -c /virtual/)
	probes=$(grep -c '"bonding".*ENOENT' "$TMP/trace")
	[ "$probes" -le "$virt" ]; ok $? "$node: bonding/ probed only under virtual netdevs ($probes probes, $virt virtual)"
	# a VF has no SR-IOV capability: its PF's virtfn links, read first, say which functions
	# are VFs, and none of them is asked for sriov_totalvfs (an open that fails)
	run "$RDMAK" list --json --root "$NODES/$node"
	asked=$(grep -c '"sriov_totalvfs".*ENOENT' "$TMP/trace")
	nonvf=$(jget "$TMP/out" "len([p for p in d['pci'] if not p.get('physfn') and not p.get('sriov')])")
	[ "$asked" -le "$nonvf" ]; ok $? "$node: sriov_totalvfs asked of no VF ($asked failed, $nonvf functions neither PF nor VF)"
	strace -f -qq -o "$TMP/all" -c "$RDMAK" list --json --root "$NODES/$node" >/dev/null 2>&1
	is "$(awk '$NF == "fcntl" {print $4}' "$TMP/all")" "" "$node: no fcntl (directory listings read with getdents64 on their fd)"
	# a file is read to its end with no fstat first: one is asked only where a read ends empty,
	# fails or fills the buffer (a FIFO or a device could answer so), which few sysfs files do
	# (less the fstats of a run that reads nothing: the loader's and, in the sanitizer build,
	# the runtime's own)
	strace -f -qq -o "$TMP/base" -c "$RDMAK" --version >/dev/null 2>&1
	opens=$(awk '$NF == "openat2" || $NF == "openat" {s += $4} END {print s + 0}' "$TMP/all")
	stats=$(awk '$NF == "fstat" || $NF == "newfstatat" {s += $4} END {print s + 0}' "$TMP/all")
	base=$(awk '$NF == "fstat" || $NF == "newfstatat" {s += $4} END {print s + 0}' "$TMP/base")
	stats=$((stats - base))
	[ "$((stats * 20))" -lt "$opens" ]; ok $? "$node: an fstat for under 5% of the opens ($stats fstat beyond a bare run's $base, $opens opens)"
	# every readlink of one name is a readlinkat alone: no O_PATH|O_NOFOLLOW open of the link
	# (with O_DIRECTORY such an open is a directory held to open beneath: a link fails it)
	is "$(grep -E 'O_PATH.*O_NOFOLLOW|O_NOFOLLOW.*O_PATH' "$TMP/trace" | grep -vc O_DIRECTORY)" 0 \
		"$node: no link opened to be read"
	# a directory held to open beneath is opened O_PATH, one name deep with openat
	held=$(grep -cE 'openat\([0-9]+, "[^"/]+", [^)]*O_PATH[^)]*O_DIRECTORY' "$TMP/trace")
	[ "$held" -gt 0 ]; ok $? "$node: directories held O_PATH ($held opened so beneath one)"
	# one name beneath an open directory is one openat, not openat2's scoped walk (a link
	# there, which the trees here do not have, would take the walk)
	# (every openat2, not only the failed ones of $TMP/trace; "." is a class directory opened
	# again to be listed, once each)
	strace -f -qq -o "$TMP/open2" -e trace=openat2 "$RDMAK" list --json --root "$NODES/$node" \
		>/dev/null 2>&1
	is "$(grep -E '^[0-9]+ +openat2\([0-9]+, "[^/"]+", .*RESOLVE_BENEATH' "$TMP/open2" |
		grep -cv '"\."')" 0 \
		"$node: no openat2 for a plain name beneath a directory"
	# a port is opened beneath the ports directory, one name deep
	is "$(grep -cE '^[0-9]+ +openat2\([0-9]+, "ports/' "$TMP/open2")" 0 \
		"$node: each port opened beneath its ports directory"
	# ports/ and gids/ are numbered by the kernel with none missing: read from the first up to
	# the one that is absent (one failed openat per table), never listed (two getdents64 each)
	strace -f -qq -y -o "$TMP/dents" -e trace=getdents64,openat "$RDMAK" list --json \
		--root "$NODES/$node" >/dev/null 2>&1
	is "$(grep -E '^[0-9]+ +getdents64\(' "$TMP/dents" | grep -cE '/(ports|gids)>')" 0 \
		"$node: no ports/ or gids/ directory listed"
	ports=$(jget "$TMP/out" "len(d['rdma_devices']) + sum(len(x['ports']) for x in d['rdma_devices'])")
	is "$(grep -E '/(ports|gids)>, "[0-9]+".* = -1 ENOENT' "$TMP/dents" | wc -l)" "$ports" \
		"$node: one number tried past each table's end ($ports: a ports/ per device, a gids/ per port)"
	# --pkeys reads pkeys/ the same way, each entry one name beneath the table's directory
	strace -f -qq -y -o "$TMP/pk" -e trace=getdents64,openat,openat2 "$RDMAK" list --json --pkeys \
		--root "$NODES/$node" >/dev/null 2>&1
	is "$(grep -E '^[0-9]+ +getdents64\(' "$TMP/pk" | grep -c '/pkeys>')" 0 "$node --pkeys: no pkeys/ listed"
	is "$(grep -cE '^[0-9]+ +openat2\(.*"pkeys/' "$TMP/pk")" 0 "$node --pkeys: no pkeys/N walked from the port"
	nports=$(jget "$TMP/out" "sum(len(x['ports']) for x in d['rdma_devices'])")
	is "$(grep -E '/pkeys>, "[0-9]+".* = -1 ENOENT' "$TMP/pk" | wc -l)" "$nports" \
		"$node --pkeys: one number tried past each pkey table's end ($nports ports)"
done
# a bond is still read as one (its bonding/ directory under devices/virtual/net)
run "$RDMAK" list --json --root "$NODES/a100-ib-bond"
like "$(jget "$TMP/out" "[n['name'] for n in d['netdevs'] if n.get('bond')]")" "bond0" "a100-ib-bond: bond0 is a bond"
done_testing
