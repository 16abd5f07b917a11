#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The man pages (tools/man.py, from each command's --help): one for rdmak and one per role of
# `rdmak --help`, each read by groff without a warning, naming the role's summary and every long
# option its --help names, with rdmak's version in the footer.
. "$(dirname "$0")/../lib.sh"

M="$BUILD/man"
v=$("$TOP/tools/version.sh")
roles=$("$RDMAK" --help | sed -n '/^Roles:/,/^$/s/^  \([a-z]*\) .*/\1/p')
like "$(echo $roles)" '^list snapshot .* probe$' "the roles, from rdmak --help: $(echo $roles)"
is "$(cd "$M" && ls *.1 | sort | tr '\n' ' ')" "$(printf '%s\n' rdmak.1 $(printf 'rdmak-%s.1 ' $roles) | sort | tr '\n' ' ')" \
	"exactly rdmak.1 and rdmak-ROLE.1 for each role in $M"
if ! command -v groff >/dev/null; then
	skip "no groff" "the pages render"
	done_testing
	exit
fi
for r in "" $roles; do
	p="$M/rdmak${r:+-$r}.1"
	run groff -man -Tutf8 -ww -z "$p"
	is "$rc $err" "0 " "rdmak${r:+-$r}(1): groff reads it without a warning"
	text=$(MANWIDTH=200 groff -man -Tutf8 -P-cbou "$p" 2>/dev/null)
	like "$text" "rdmak $v" "rdmak${r:+-$r}(1): the version in its footer"
	[ -n "$r" ] || continue
	summary=$("$RDMAK" --help | sed -n "s/^  $r  *//p")
	like "$(printf '%s' "$text" | tr -s ' \n' ' ')" "rdmak-$r - $(printf '%s' "$summary" | sed 's/[][()*.|^$?+]/\\&/g')" "rdmak-$r(1): NAME is the role's summary"
	missing=
	for o in $("$RDMAK" "$r" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
		printf '%s' "$text" | grep -qF -- "$o" || missing+=" $o"
	done
	is "$missing" "" "rdmak-$r(1): every long option of its --help"
done

# a help text whose line starts with a dot would be a roff request: escaped, it reads as text
fake="$TMP/fake"
cat >"$fake" <<'SH'
#!/bin/sh
if [ "$1" = --help ]; then printf 'Usage: rdmak <role>\n\nRoles:\n  dot        a role\n'; exit 0; fi
printf 'Usage: rdmak dot\n\n.SH NOT A SECTION\n\\fBnot bold\\fR and -x\n\nExit: 0 ok\n'
SH
chmod +x "$fake"
mkdir -p "$TMP/man"
run python3 "$TOP/tools/man.py" "$fake" "$TMP/man" 9.9.9
is "$rc" 0 "control: tools/man.py on a made-up program"
text=$(groff -man -Tutf8 -P-cbou "$TMP/man/rdmak-dot.1" 2>&1)
like "$text" '\.SH NOT A SECTION' "control: a line starting with a dot stays text"
like "$text" '\\fBnot bold\\fR and -x' "control: backslashes and hyphens stay as written"
like "$text" 'EXIT STATUS' "control: Exit: becomes EXIT STATUS"

done_testing
