#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The repository's layout rules (docs/HACKING.md): a licence, every source file with its SPDX
# line (tools/spdx.sh), the formatter's and editors' settings at 100 columns, and the C sources
# of src/ as the formatter lays them out.
. "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

[ -s LICENSE ] && grep -q 'Apache License' LICENSE; ok $? "LICENSE holds the Apache License"
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	run tools/spdx.sh --check
	is "$rc $out" "0 " "every source file carries an SPDX-License-Identifier line"
else
	skip "not a git checkout" "every source file carries an SPDX-License-Identifier line"
fi
grep -q '^ColumnLimit: 100$' .clang-format; ok $? ".clang-format: 100 columns"
grep -q '^max_line_length = 100$' .editorconfig; ok $? ".editorconfig: 100 columns for C"
# every C source as .clang-format lays it out (the tree follows its own formatter)
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t cfiles < <(git ls-files 'src/*.c' 'src/*.h')
	run clang-format --dry-run --Werror "${cfiles[@]}"
	is "$rc" 0 "the ${#cfiles[@]} C files of src/ are as clang-format lays them out (clang-format -i src/...)"
	[ "$rc" -eq 0 ] || printf '%s\n' "$err" | grep -m 5 'error:' | sed 's/^/#   /'
else
	skip "no clang-format, or not a git checkout" "the C files of src/ are as clang-format lays them out"
fi
done_testing
