#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/install-deps.sh, the README's first command, as root and as a user with or without sudo.
# `id`, `sudo`, `apt-get` and `npm` are stubs on PATH that record how they were called, so that
# nothing is installed; the script itself runs unchanged.
. "$(dirname "$0")/../lib.sh"
cd "$TOP"
stubs() { # stubs UID WITH_SUDO: a PATH of stubs
	rm -rf "$TMP/bin"; mkdir -p "$TMP/bin"; : >"$TMP/log"
	printf '#!/bin/sh\n[ "$1" = -u ] && { echo "${STUB_UID:-%s}"; exit 0; }\nexec /usr/bin/id "$@"\n' "$1" >"$TMP/bin/id"
	# sudo: records, then runs the command as "root" (to the id stub)
	printf '#!/bin/sh\necho "sudo $*" >>%s\nshift\nSTUB_UID=0 exec "$@"\n' "$TMP/log" >"$TMP/bin/sudo.stub"
	[ "$2" = 1 ] && mv "$TMP/bin/sudo.stub" "$TMP/bin/sudo"
	for c in apt-get npm; do printf '#!/bin/sh\necho "%s $* (uid $(id -u))" >>%s\n' "$c" "$TMP/log" >"$TMP/bin/$c"; done
	chmod +x "$TMP"/bin/*
	# the rest of PATH without any real sudo
	mkdir -p "$TMP/sys"; for c in bash sh env dirname cat rm mkdir printf; do ln -sf "$(command -v $c)" "$TMP/sys/$c"; done
}

stubs 0 0
PATH="$TMP/bin:$TMP/sys" run bash tools/install-deps.sh
is "$rc" 0 "as root without sudo: exit 0"
like "$(cat "$TMP/log")" "^apt-get update" "as root: apt-get runs directly"
unlike "$(cat "$TMP/log")" "^sudo" "as root: sudo is not needed"
like "$(cat "$TMP/log")" "npm ci .*\(uid 0\)" "as root: npm ci"

stubs 1000 1
PATH="$TMP/bin:$TMP/sys" run bash tools/install-deps.sh
is "$rc" 0 "as a sudo user: exit 0"
like "$(cat "$TMP/log")" "^sudo -- .*tools/install-deps.sh --system" "as a sudo user: re-runs its root half through sudo"
like "$(cat "$TMP/log")" "apt-get install .*\(uid 0\)" "as a sudo user: packages installed as root"
like "$(cat "$TMP/log")" "npm ci .*\(uid 1000\)" "as a sudo user: tests/js's modules installed as the user, not root"

stubs 1000 0
PATH="$TMP/bin:$TMP/sys" run bash tools/install-deps.sh
is "$rc" 1 "a user without sudo: exit 1"
like "$err" "needs root, and sudo is not installed" "a user without sudo: says why"
like "$err" "run it as root" "a user without sudo: says what to do"
unlike "$(cat "$TMP/log")" "apt-get|npm" "a user without sudo: nothing half-installed"

stubs 0 0
PATH="$TMP/bin:$TMP/sys" run bash tools/install-deps.sh --bogus
is "$rc" 2 "an unknown argument: usage, exit 2"

# what it installs is what the build needs: the Debian package of every pkg-config package the
# Makefiles build against (packages.mk: PKGS, and the unit tests' TEST_PKGS) and of every tool a
# make target runs
stubs 0 0
PATH="$TMP/bin:$TMP/sys" run bash tools/install-deps.sh
installed=" $(grep '^apt-get install' "$TMP/log" | sed 's/ (uid [0-9]*)$//' | tr ' ' '\n' | grep -v '^-' | tr '\n' ' ') "
if command -v dpkg >/dev/null && command -v pkg-config >/dev/null; then
	for p in $(sed -n 's/^\(TEST_\)\{0,1\}PKGS *:= *//p' packages.mk); do
		pc=$(pkg-config --variable=pcfiledir "$p" 2>/dev/null)/$p.pc
		deb=$(dpkg -S "$pc" 2>/dev/null | cut -d: -f1)
		like "$installed" " ${deb:-no-package-for-$p} " "pkg-config $p (packages.mk): its package ${deb:-?} is installed"
	done
	# protoc-c: the generated sources; bear, clang-tidy: make compile_commands.json, make analyze;
	# groff: the man pages' test; clang: make fuzz
	for t in protoc-c bear clang-tidy groff clang; do
		f=$(command -v "$t") || { skip "no $t here" "the package of $t is installed"; continue; }
		deb=$(dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "$f" 2>/dev/null)
		deb=${deb%%:*}
		# versioned packages (clang-tidy-14) come from the unversioned one the script names
		like "$installed" " (${deb}|${deb%-[0-9]*}) " "$t: its package ${deb:-?} is installed"
	done
else
	skip "no dpkg or pkg-config" "the packages the build needs are installed"
fi
done_testing
