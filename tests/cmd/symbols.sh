#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every exported symbol of a module carries its module's prefix (`hw_`, `pool_set_build` in
# pool/pool.c), so that a name says where it lives and no two modules, nor a library (jansson's
# json_*), can collide: checked on the built objects of every module's sources (an object left
# behind by a moved source is not the tree's). A file's own prefix is not enough (`plugin/pool.c`'s
# `pool_` told nothing of which module). The one exception is in `extra` (docs/HACKING.md
# "Naming and layout"). Symbols the compiler adds (gcc's ASan emits __odr_asan.NAME beside each
# exported global) are not the module's names and are left out.
. "$(dirname "$0")/../lib.sh"

if ! command -v nm >/dev/null; then skip "no nm" "exported symbols carry their module prefix"; done_testing; exit; fi

# prefixes a module may use beyond its own name: util's files are its sub-modules, each a small
# library of its own (str_ in strutil.c, strv_, fileio_, inroot_, spawn_, opt_)
declare -A extra=( [util]='str_|strv_|fileio_|inroot_|spawn_|opt_' )

mods=()
for d in "$TOP"/src/*/; do [ -n "$(ls "$BUILD/obj/$(basename "$d")/"*.o 2>/dev/null)" ] && mods+=("$(basename "$d")"); done
ok "$([ ${#mods[@]} -ge 10 ] && echo 0 || echo 1)" "objects of at least 10 modules found under $BUILD/obj (${#mods[@]})"
for mod in "${mods[@]}"; do
	bad=
	for c in "$TOP/src/$mod"/*.c; do
		f=$(basename "$c" .c)
		o="$BUILD/obj/$mod/$f.o"
		re="${mod}_${extra[$mod]:+|${extra[$mod]}}"
		bad+=$(nm -g --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[TDBRV]$/ {print $3}' |
			grep -vE '^__(odr_asan|asan|ubsan|sanitizer)' | grep -vE "^($re)" | sed "s|^|$f.o:|" | tr '\n' ' ')
	done
	is "$bad" "" "src/$mod: every exported symbol starts with ${mod}_${extra[$mod]:+ (or ${extra[$mod]})}"
done

done_testing
