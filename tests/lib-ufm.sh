# SPDX-License-Identifier: Apache-2.0
# The UFM stand-in (tests/js/ufm.mjs) for the fabric tests: a CA and a server certificate for
# 127.0.0.1, the server started in the background, its control calls. Source after lib.sh.
# Not a test itself.

# ufm_certs DIR: DIR/ca.pem, DIR/server.pem, DIR/server.key (IP SAN 127.0.0.1, CN ufm.test) and a
# second CA (DIR/other-ca.pem) that did not sign it
ufm_certs() {
	local d=$1
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=test-ufm-ca \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=other-ca \
		-keyout "$d/other-ca.key" -out "$d/other-ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=ufm.test \
		-keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:ufm.test\n' >"$d/ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-extfile "$d/ext" -out "$d/server.pem" 2>/dev/null
}

# ufm_start DIR [NETNS] [ARGS...]: the stand-in with DIR's certificates (in NETNS when not ""),
# user admin, password 123456, token tok-123; sets UFM_PID, UFM_PORT, UFM_URL
ufm_start() {
	local d=$1 ns=${2:-}
	shift 2 || shift $#
	rm -f "$d/port"
	${ns:+ip netns exec "$ns"} node "$TOP/tests/js/ufm.mjs" --cert "$d/server.pem" --key "$d/server.key" \
		--token tok-123 --port-file "$d/port" "$@" >"$d/ufm.out" 2>"$d/ufm.err" &
	UFM_PID=$!
	for _ in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
	UFM_PORT=$(cat "$d/port")
	UFM_URL="https://127.0.0.1:$UFM_PORT"
	UFM_NS=$ns
	UFM_DIR=$d
}

ufm_stop() { [ -n "${UFM_PID:-}" ] && kill "$UFM_PID" 2>/dev/null; wait "$UFM_PID" 2>/dev/null; UFM_PID=; }

# More than one stand-in (one UFM per rail): ufm_keep NAME remembers the one ufm_start just
# started under NAME, ufm_use NAME makes it the one ufm_ctl and ufm_guids talk to, ufm_stop_all
# stops every one kept.
_ufm_kept=()
ufm_keep() {
	eval "_ufm_$1=(\"\$UFM_PID\" \"\$UFM_PORT\" \"\$UFM_URL\" \"\$UFM_NS\" \"\$UFM_DIR\")"
	_ufm_kept+=("$1")
}
ufm_use() {
	eval "UFM_PID=\${_ufm_$1[0]} UFM_PORT=\${_ufm_$1[1]} UFM_URL=\${_ufm_$1[2]} UFM_NS=\${_ufm_$1[3]} UFM_DIR=\${_ufm_$1[4]}"
}
ufm_stop_all() {
	local k
	for k in "${_ufm_kept[@]}"; do ufm_use "$k"; ufm_stop; done
}

# ufm_ctl WHAT [METHOD]: a control call (dump, down?mode=..., up, reset); the answer on stdout
ufm_ctl() {
	${UFM_NS:+ip netns exec "$UFM_NS"} curl -s --cacert "$UFM_DIR/ca.pem" -X "${2:-GET}" "$UFM_URL/_standin/$1"
}

# ufm_guids PKEY: the GUIDs the stand-in holds in PKEY, sorted, one a line
ufm_guids() {
	ufm_ctl dump | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["pkeys"].get(sys.argv[1],{"guids":[]}); print("\n".join(sorted(g["guid"] for g in d["guids"])))' "$1"
}
