#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One guest test's verdict for tests/run.sh, from what tests/vm/harness/boot.sh left in OUT:
# its TAP output and exit status; a skip, by the reason the VM could not be had; or a failure
# with boot.sh's reason and the console's tail when the VM did not run it.
#   tests/vm/harness/result.sh OUT NAME BOOT-EXIT BOOT-LOG
out=$1 name=$2 boot_rc=$3 boot_log=$4
if [ "$boot_rc" -eq 77 ]; then
	echo "ok 1 - vm/$name # SKIP $(head -1 "$out/skip")"
	echo "1..1"
	exit 0
fi
if [ -f "$out/$name.rc" ]; then
	cat "$out/$name.log"
	rc=$(cat "$out/$name.rc")
	if [ "$rc" -ne 0 ]; then
		echo "# vm/$name exited $rc; the guest's console: $out/console.log"
		grep -v '^vm: ' "$out/console.log" | tail -n 15 | sed 's/^/# console: /'
	fi
	exit "$rc"
fi
echo "not ok 1 - vm/$name: the guest did not run it"
sed 's/^/# /' "$boot_log"
exit 1
