#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Roles over one floor (docs/HACKING.md "Layout"): a role's folder holds one command and includes
# only floor modules, never another role's header, and a floor module includes no role. What two
# roles need moves down into a floor module (the attachment records in src/attach, the fabric
# client in src/ufm, the pool model in src/pool, the doctor's checks in src/diag). A role is a
# folder src/X whose X_main src/roles.h declares; every other folder of src/ is floor. Only
# src/main.c and src/pod.c, the dispatch tables, name roles.
. "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

# Includes allowed for now, each with its reason. An entry no longer used fails the test, so that
# it is removed with the include it excused.
allow=(
)

# the roles: src/roles.h's X_main with a folder src/X
roles_of() { # SRC
	sed -n 's/^int \([a-z_]*\)_main(.*/\1/p' "$1/roles.h" | while read -r r; do
		[ -d "$1/$r" ] && echo "$r"
	done | sort -u
}
# "FOLDER HEADER" for every include of another folder's header, one per line
includes_of() { # SRC
	local f d
	for f in "$1"/*/*.[ch]; do
		d=$(basename "$(dirname "$f")")
		sed -n 's/^#include "\([a-z0-9_]*\)\/\([^"]*\)".*/\1\/\2/p' "$f" | while read -r h; do
			[ "${h%%/*}" = "$d" ] || echo "$d $h"
		done
	done | sort -u
}
# the offending includes of tree SRC, less the allowed ones
check_tree() { # SRC
	local roles line from to
	roles=" $(roles_of "$1" | tr '\n' ' ') "
	includes_of "$1" | while read -r from h; do
		to=${h%%/*}
		case "$roles" in *" $to "*) ;; *) continue ;; esac
		line="$from $h"
		if printf '%s\n' "${allow[@]}" | grep -qxF "$line"; then echo "allowed $line"; continue; fi
		case "$roles" in
		*" $from "*) echo "role $from includes role $to's header $h" ;;
		*) echo "floor module $from includes role $to's header $h" ;;
		esac
	done
}

roles=$(roles_of src | tr '\n' ' ')
like "$roles" "(^| )cni .*doctor .*plugin " "the roles are found from src/roles.h: $roles"
out=$(check_tree src)
is "$(printf '%s\n' "$out" | grep -v '^allowed ' | grep -v '^$')" "" \
	"no role includes another role's header, no floor module a role's"
for a in "${allow[@]}"; do
	printf '%s\n' "$out" | grep -qxF "allowed $a"
	ok $? "the allowed include '$a' is still there (else remove it from the list)"
done

# the check itself on a tree made to break it: a role including a role, and a floor module
# including a role
T="$TMP/src"
mkdir -p "$T/alpha" "$T/beta" "$T/floor"
printf 'int alpha_main(int argc, char **argv);\nint beta_main(int argc, char **argv);\n' >"$T/roles.h"
printf '#include "beta/beta.h"\n#include "floor/floor.h"\n' >"$T/alpha/alpha.c"
printf '#include "floor/floor.h"\n' >"$T/beta/beta.c"
printf '#include "alpha/alpha.h"\n' >"$T/floor/floor.c"
got=$(check_tree "$T")
like "$got" "^role alpha includes role beta's header beta/beta.h" "control: a role including another role is found"
like "$got" "floor module floor includes role alpha's header alpha/alpha.h" "control: a floor module including a role is found"
unlike "$got" "floor/floor.h" "control: including a floor module is fine"

done_testing
