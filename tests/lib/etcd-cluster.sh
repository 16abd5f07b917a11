# SPDX-License-Identifier: Apache-2.0
# A throwaway three-member etcd cluster on loopback, for tests and benchmarks. Source it (it
# needs nothing from tests/lib.sh, but for etcd_test_cluster), then:
#   etcd_cluster_start DIR [tls]   start members 0..2 with data under DIR; 0 when all are healthy,
#                                  non-zero with the reason in $ETCD_CLUSTER_ERR otherwise
#   etcd_member_kill I             SIGKILL member I (a crash: no clean shutdown)
#   etcd_member_start I            start member I again on its ports and data dir
#   etcd_cluster_wait_healthy [S]  wait up to S seconds (default 30) for every live member
#   etcd_cluster_stop              kill every member (also run by the EXIT trap it installs)
#   ectl ARGS...                   etcdctl (v3 API) against the whole cluster, TLS included
#   etcd_test_cluster WHAT DIR [tls]
#                                  for tests/cmd, with tests/lib.sh's TAP helpers: start the
#                                  cluster and pass "three-member etcd cluster starts"; without
#                                  etcd, count WHAT as skipped and end the test; when the start
#                                  fails, fail that check with the reason and end the test
# After a start: ETCD_ENDPOINTS (comma list with scheme), ETCD_EP[0..2] (host:port),
# ETCD_URL[0..2], and for tls ETCD_CA, ETCD_CERT, ETCD_KEY (client certificate and key).
#
# Ports are picked free at run time (the kernel hands out port 0), so parallel runs never
# collide; a member that loses the small race between picking and binding makes the start
# retry with new ports. Members run under setpriv --pdeathsig so that a test shell killed
# with SIGKILL (no trap runs) still takes its etcd processes with it.

ETCD_N=3
ETCD_CLUSTER_ERR=
ETCD_DIR=
ETCD_TLS=0
ETCD_ENDPOINTS=
ETCD_EP=() ETCD_URL=() ETCD_PEER=() ETCD_PID=()
_etcd_prev_exit_trap=

etcd_cluster_available() { # 0 if etcd, etcdctl, python3 (and for tls openssl) are here
	command -v etcd >/dev/null && command -v etcdctl >/dev/null && command -v python3 >/dev/null ||
		{ ETCD_CLUSTER_ERR="etcd, etcdctl or python3 missing (tools/install-deps.sh installs etcd-server etcd-client)"; return 1; }
	if [ "${1:-}" = tls ] && ! command -v openssl >/dev/null; then ETCD_CLUSTER_ERR="openssl missing"; return 1; fi
	return 0
}

_etcd_free_ports() { # N: prints N distinct free loopback TCP ports
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

_etcd_make_certs() { # DIR: a CA, a server certificate for 127.0.0.1, a client certificate
	local d=$1
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca-key.pem -out ca.pem \
			-days 2 -subj /CN=rdmak-test-ca -addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign || exit 1
		for who in server client; do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$who-key.pem" \
				-out "$who.csr" -subj "/CN=rdmak-test-$who" || exit 1
			printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=%s\n' \
				"$([ "$who" = server ] && echo serverAuth,clientAuth || echo clientAuth)" >"$who.ext"
			openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
				-extfile "$who.ext" -out "$who.pem" || exit 1
		done
	) >"$d/openssl.log" 2>&1
}

_etcd_member_run() { # I: start member I in the background, record its pid
	local i=$1 scheme=http cluster="" j tlsargs=()
	for j in $(seq 0 $((ETCD_N - 1))); do cluster+="${cluster:+,}m$j=${ETCD_PEER[$j]}"; done
	if [ "$ETCD_TLS" = 1 ]; then
		scheme=https
		tlsargs=(--cert-file "$ETCD_DIR/tls/server.pem" --key-file "$ETCD_DIR/tls/server-key.pem"
			--client-cert-auth --trusted-ca-file "$ETCD_DIR/tls/ca.pem")
	fi
	local pdeath=()
	setpriv --help 2>/dev/null | grep -q pdeathsig && pdeath=(setpriv --pdeathsig KILL --)
	# Short heartbeat and election timeouts: a killed leader is replaced in about a second.
	"${pdeath[@]}" etcd --name "m$i" --data-dir "$ETCD_DIR/m$i" \
		--listen-client-urls "$scheme://${ETCD_EP[$i]}" --advertise-client-urls "$scheme://${ETCD_EP[$i]}" \
		--listen-peer-urls "${ETCD_PEER[$i]}" --initial-advertise-peer-urls "${ETCD_PEER[$i]}" \
		--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$ETCD_TOKEN" \
		--heartbeat-interval 50 --election-timeout 500 \
		--logger zap --log-outputs "$ETCD_DIR/m$i.log" "${tlsargs[@]}" \
		>>"$ETCD_DIR/m$i.out" 2>&1 &
	ETCD_PID[$i]=$!
}

ectl() {
	local tlsargs=()
	[ "$ETCD_TLS" = 1 ] && tlsargs=(--cacert "$ETCD_CA" --cert "$ETCD_CERT" --key "$ETCD_KEY")
	ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINTS" --dial-timeout 2s --command-timeout 10s "${tlsargs[@]}" "$@"
}

_etcd_member_healthy() { # I
	local tlsargs=()
	[ "$ETCD_TLS" = 1 ] && tlsargs=(--cacert "$ETCD_CA" --cert "$ETCD_CERT" --key "$ETCD_KEY")
	ETCDCTL_API=3 etcdctl --endpoints "${ETCD_URL[$1]}" --dial-timeout 1s --command-timeout 2s "${tlsargs[@]}" \
		endpoint health >/dev/null 2>&1
}

etcd_cluster_wait_healthy() { # [SECONDS]: every member with a live pid answers a quorum read
	local deadline=$((SECONDS + ${1:-30})) i ok
	while [ "$SECONDS" -le "$deadline" ]; do
		ok=1
		for i in $(seq 0 $((ETCD_N - 1))); do
			[ -n "${ETCD_PID[$i]}" ] || continue
			if ! kill -0 "${ETCD_PID[$i]}" 2>/dev/null; then
				ETCD_CLUSTER_ERR="member m$i exited: $(tail -n 3 "$ETCD_DIR/m$i.log" "$ETCD_DIR/m$i.out" 2>/dev/null | tr '\n' ' ')"
				return 2
			fi
			_etcd_member_healthy "$i" || { ok=0; break; }
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.2
	done
	ETCD_CLUSTER_ERR="cluster not healthy after ${1:-30} s"
	return 1
}

etcd_member_kill() {
	[ -n "${ETCD_PID[$1]}" ] || return 0
	# a member killed reports 137 and one already gone fails the kill: both are the outcome
	# wanted, and a caller under set -e (make bench, an EXIT trap) must go on to the next
	kill -KILL "${ETCD_PID[$1]}" 2>/dev/null || true
	wait "${ETCD_PID[$1]}" 2>/dev/null || true
	ETCD_PID[$1]=
}

etcd_member_start() { _etcd_member_run "$1"; }

etcd_cluster_stop() {
	local i
	for i in $(seq 0 $((ETCD_N - 1))); do etcd_member_kill "$i"; done
}

_etcd_cluster_exit() {
	etcd_cluster_stop
	if [ -n "$_etcd_prev_exit_trap" ]; then eval "$_etcd_prev_exit_trap"; fi
}

etcd_test_cluster() { # WHAT DIR [tls]
	local name="three-member etcd cluster${3:+ with client TLS} starts"

	if ! etcd_cluster_available "${3:-}"; then
		skip "$ETCD_CLUSTER_ERR" "$1"
		done_testing
		exit
	fi
	if ! etcd_cluster_start "$2" "${3:-}"; then
		ok 1 "$name: $ETCD_CLUSTER_ERR"
		done_testing
		exit
	fi
	ok 0 "$name"
}

etcd_cluster_start() { # DIR [tls]
	local dir=$1 attempt ports i scheme=http prev
	ETCD_DIR=$dir ETCD_TLS=0
	[ "${2:-}" = tls ] && ETCD_TLS=1 scheme=https
	etcd_cluster_available "${2:-}" || return 1
	mkdir -p "$dir" || { ETCD_CLUSTER_ERR="cannot create $dir"; return 1; }
	# Chain whatever EXIT trap the caller had (tests/lib.sh removes $TMP) after our own.
	if [ -z "$_etcd_prev_exit_trap" ]; then
		prev=$(trap -p EXIT)
		if [ -n "$prev" ]; then eval "set -- $prev"; _etcd_prev_exit_trap=$3; else _etcd_prev_exit_trap=:; fi
		trap _etcd_cluster_exit EXIT
		trap 'exit 143' TERM INT HUP
	fi
	if [ "$ETCD_TLS" = 1 ]; then
		_etcd_make_certs "$dir/tls" || { ETCD_CLUSTER_ERR="openssl failed: $(tail -n 3 "$dir/tls/openssl.log")"; return 1; }
		ETCD_CA=$dir/tls/ca.pem ETCD_CERT=$dir/tls/client.pem ETCD_KEY=$dir/tls/client-key.pem
	fi
	for attempt in 1 2 3; do
		rm -rf "$dir"/m[0-9]*
		ETCD_TOKEN=rdmak-$$-$RANDOM-$attempt
		read -r -a ports <<<"$(_etcd_free_ports $((2 * ETCD_N)))"
		ETCD_ENDPOINTS=
		for i in $(seq 0 $((ETCD_N - 1))); do
			ETCD_EP[$i]=127.0.0.1:${ports[$((2 * i))]}
			ETCD_URL[$i]=$scheme://${ETCD_EP[$i]}
			ETCD_PEER[$i]=http://127.0.0.1:${ports[$((2 * i + 1))]}
			ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}${ETCD_URL[$i]}"
		done
		for i in $(seq 0 $((ETCD_N - 1))); do _etcd_member_run "$i"; done
		etcd_cluster_wait_healthy 30 && return 0
		etcd_cluster_stop
		# Only a lost port race is worth another try.
		grep -qs "address already in use" "$dir"/m[0-9]*.log "$dir"/m[0-9]*.out || return 1
	done
	return 1
}
