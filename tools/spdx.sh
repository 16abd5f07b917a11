#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Adds the licence's SPDX line to every tracked source file that lacks one (first line, or the
# second after a shebang), in the comment syntax of its language. Idempotent; tests/cmd/layout.sh
# checks the result. Usage: tools/spdx.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
id='SPDX-License-Identifier: Apache-2.0'
check=0; [ "${1:-}" = --check ] && check=1
missing=0
while IFS= read -r f; do
	case "$f" in
	*.c|*.h) line="/* $id */" ;;
	*.mjs|*.js|*.go|*.proto) line="// $id" ;;
	*.sh|*.py|Makefile|*/Makefile|*.mk|*.tpl) line="# $id" ;;
	*) continue ;;
	esac
	case "$f" in *.tpl) line="{{/* $id */}}" ;; esac
	head -3 "$f" | grep -q 'SPDX-License-Identifier:' && continue
	missing=$((missing + 1))
	if [ $check = 1 ]; then echo "$f: no SPDX line"; continue; fi
	if head -1 "$f" | grep -q '^#!'; then
		{ head -1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$f.spdx"
	else
		{ echo "$line"; cat "$f"; } >"$f.spdx"
	fi
	chmod --reference="$f" "$f.spdx"; mv "$f.spdx" "$f"
done < <(git ls-files -co --exclude-standard -- src tests tools deploy Makefile ':!:tests/fuzz/corpus' ':!:tests/fixtures' ':!:tests/captures')
[ $check = 0 ] || [ $missing -eq 0 ]
