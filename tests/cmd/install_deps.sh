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

like "$(sed -n '/^## Set up/,/^## /p' README.md | grep -m1 'install-deps')" "^tools/install-deps.sh && make demo" \
	"README: the first command starts with the script itself, no sudo"
done_testing
