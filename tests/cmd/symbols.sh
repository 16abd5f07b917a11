#!/usr/bin/env bash
# Every exported symbol of a module carries its module's prefix (STYLE.md "Naming"), so that
# a name says where it lives and two modules cannot collide: checked on the built objects.
# util/fileio.c (read_file_*, write_file_*, write_all, mkdir_p) keeps its names for now; of util,
# the string modules are checked.
. "$(dirname "$0")/../lib.sh"

if ! command -v nm >/dev/null; then skip "no nm" "exported symbols carry their module prefix"; done_testing; exit; fi
check() { # check DIR[/FILE.o] PREFIX-REGEX
	local objs bad
	case $1 in *.o) objs=("$BUILD/obj/$1") ;; *) objs=("$BUILD/obj/$1"/*.o) ;; esac
	bad=$(nm -g --defined-only "${objs[@]}" 2>/dev/null | awk '$2 ~ /^[TDBRV]$/ {print $3}' | grep -vE "^($2)" | sort -u | tr '\n' ' ')
	is "$bad" "" "src/$1: every exported symbol starts with ${2//|/ or }"
}
check doctor 'doctor_'
check list 'list_'
check snapshot 'snapshot_|tar_'
check hw 'hw_'
check out 'out_'
check util/strutil.o 'str_'
check util/strv.o 'strv_'
done_testing
