#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The repository's layout rules (docs/HACKING.md): a licence, every source file with its SPDX
# line (tools/spdx.sh), the formatter's and editors' settings at 100 columns, and the C sources
# of src/ and tests/ as the formatter lays them out.
. "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

# the licence every file names is the one LICENSE holds
ids=$(git ls-files 2>/dev/null | xargs grep -h -o 'SPDX-License-Identifier: [A-Za-z0-9.+-][A-Za-z0-9.+-]*' 2>/dev/null | sort -u | sed 's/.*: //')
is "$ids" "Apache-2.0" "every SPDX line names Apache-2.0"
grep -q 'Apache License' LICENSE && grep -q 'Version 2.0, January 2004' LICENSE
ok $? "... which is the licence LICENSE holds"
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	run tools/spdx.sh --check
	is "$rc $out" "0 " "every source file carries an SPDX-License-Identifier line"
else
	skip "not a git checkout" "every source file carries an SPDX-License-Identifier line"
fi
# what editors are told (.editorconfig) is what the formatter enforces: the same line length,
# indent width and tabs for C
edc() { # KEY: its value in .editorconfig's [*.{c,h}] section
	sed -n '/^\[\*\.{c,h}\]/,/^\[/s/^'"$1"' *= *//p' .editorconfig
}
if command -v clang-format >/dev/null; then
	cf=$(clang-format --dump-config src/main.c)
	cfv() { printf '%s\n' "$cf" | sed -n "s/^$1: *//p"; }
	is "$(edc max_line_length) $(edc indent_size) $(edc indent_style)" \
		"$(cfv ColumnLimit) $(cfv IndentWidth) $([ "$(cfv UseTab)" != Never ] && echo tab || echo space)" \
		".editorconfig's C line length, indent and tabs are clang-format's"
else
	skip "no clang-format" ".editorconfig's C line length, indent and tabs are clang-format's"
fi
# and its rules for every file hold for the tree's code: UTF-8, LF, a final newline, no blank
# at a line's end
if git rev-parse --git-dir >/dev/null 2>&1; then
	is "$(git ls-files '*.c' '*.h' '*.sh' '*.py' '*.mjs' '*.go' Makefile '*.mk' | "$PY" -c '
import sys
for f in sys.stdin.read().split():
    b = open(f, "rb").read()
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError:
        print(f, "is not UTF-8"); continue
    if "\r" in t: print(f, "has a CR")
    if t and not t.endswith("\n"): print(f, "has no final newline")
    n = next((i for i, l in enumerate(t.split("\n"), 1) if l != l.rstrip(" \t")), 0)
    if n: print(f"{f}:{n} ends with a blank")
' | head -5)" "" "the code files keep .editorconfig's rules (UTF-8, LF, final newline, no trailing blank)"
else
	skip "not a git checkout" "the code files keep .editorconfig's rules"
fi
# every C source as .clang-format lays it out (the tree follows its own formatter)
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t cfiles < <(git ls-files 'src/*.c' 'src/*.h')
	run clang-format --dry-run --Werror "${cfiles[@]}"
	is "$rc" 0 "the ${#cfiles[@]} C files of src/ are as clang-format lays them out (clang-format -i src/...)"
	[ "$rc" -eq 0 ] || printf '%s\n' "$err" | grep -m 5 'error:' | sed 's/^/#   /'
else
	skip "no clang-format, or not a git checkout" "the C files of src/ are as clang-format lays them out"
fi
# the C files of tests/ too
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t tfiles < <(git ls-files 'tests/*.c' 'tests/*.h')
	run clang-format --dry-run --Werror "${tfiles[@]}"
	is "$rc" 0 "the ${#tfiles[@]} C files of tests/ are as clang-format lays them out (clang-format -i tests/...)"
	[ "$rc" -eq 0 ] || printf '%s\n' "$err" | grep -m 5 'error:' | sed 's/^/#   /'
	# clang-format leaves long string literals (BreakStringLiterals: false): 100 columns, tabs as 8
	is "$(for f in "${tfiles[@]}"; do expand -t8 "$f" | awk -v f="$f" 'length > 100 { print f ":" FNR }'; done | head -5)" "" \
		"no line of them is over 100 columns"
else
	skip "no clang-format, or not a git checkout" "the C files of tests/ are as clang-format lays them out"
fi
done_testing
