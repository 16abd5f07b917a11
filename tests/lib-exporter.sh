# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` served in the background for the exporter tests, on a port the kernel picks.
# Source after lib.sh. Not a test itself.

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_exporter ARGS...: in the background (EPID), its port (EPORT) from its "listening on" line,
# its log in $TMP/exp.log. 1: it did not start listening (it exited, or 30 s passed).
# The log is emptied here, not by the background job's redirection: on a loaded machine the
# loop below read the previous exporter's line, and its port, before the job had truncated it.
start_exporter() {
	local i
	EPORT=
	: >"$TMP/exp.log"
	"$RDMAK" exporter --listen 127.0.0.1:0 "$@" >>"$TMP/exp.log" 2>&1 &
	EPID=$!
	for i in $(seq 300); do
		EPORT=$(sed -n 's/.*listening on https\{0,1\}:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/exp.log")
		[ -n "$EPORT" ] && return 0
		kill -0 "$EPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop_exporter() { kill "$EPID"; wait "$EPID"; }
