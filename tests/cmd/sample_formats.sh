#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The generated sample nodes (tools/gen-nodes.py, the fixtures of most tests) give each sysfs
# attribute that ib_core and the network core write the format the kernel gives it, and follow
# ib_core's default RoCE GID rule. tests/lib/sysfs_formats.py holds the formats; tests/vm/samples.sh
# checks the same table on a live kernel, so that the table is the kernel's and not a guess.
. "$(dirname "$0")/../lib.sh"
roots=()
for n in "$NODES"/*/; do [ -d "$n/sys" ] && roots+=("${n%/}"); done
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok 0 "${line#ok }" ;;
	"not ok "*) ok 1 "${line#not ok }" ;;
	*) echo "$line" ;;
	esac
done < <("$PY" "$TOP/tests/lib/sysfs_formats.py" "the ${#roots[@]} sample nodes" "${roots[@]}" 2>&1)
done_testing
