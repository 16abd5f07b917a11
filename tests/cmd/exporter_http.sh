#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmak exporter` on the pod network, where anyone can connect: what clients hold must never
# cost a scrape. 256 idle connections (plain HTTP, and TLS past its handshake) held while a
# scrape must be answered 200; clients that ask and never read, with the exporter's peak memory
# held to the chart's limit (64 MiB) on the 1016-VF node; three scrapes in progress at once with
# the default limits, and the 503 past --max-scrapes with its Retry-After; a scrape held that
# holds nothing else (/healthz and the 503 answered on every other connection meanwhile, its
# thread gone after its client, SIGTERM); a FIFO given for a file the exporter reads at start,
# refused by name. Scrapes are held in progress by a FUSE
# mirror of the node whose read of one counter file waits until the test lets it go
# (tests/helpers/hold_fuse.c): outcomes, not timings, are asserted.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-exporter.sh"
HOLD_FUSE=$BUILD/tests/helpers/hold_fuse

# listenq.py, imported by the helpers below: how many connections wait in PORT's listening
# socket's queue, not yet accepted by the exporter (/proc/net/tcp's rx_queue of the LISTEN line)
cat >"$TMP/listenq.py" <<'EOF'
def queued(port):
    for line in open("/proc/net/tcp").readlines()[1:]:
        f = line.split()
        if f[3] == "0A" and int(f[1].split(":")[1], 16) == port:
            return int(f[4].split(":")[1], 16)
    return -1
EOF

# the connection helper: holds N connections to PORT, says "ready" once the exporter has accepted
# every one (the listening socket's queue is empty), then waits for FILE to exist and prints how
# many the server closed meanwhile. Plain: not a byte sent. TLS: the handshake, then one request
# (/healthz) answered, as a scraper's keep-alive connection between scrapes: past its handshake
# for the server too
cat >"$TMP/idle.py" <<'EOF'
import os, select, socket, ssl, sys, time
from listenq import queued
port, n, tls, release = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "https", sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if tls:
        s = ctx.wrap_socket(s)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while not got.endswith(b"ok\n"):
            got += s.recv(4096)
    socks.append(s)
while queued(port) != 0:
    time.sleep(0.05)
print("ready", flush=True)
while not os.path.exists(release):
    time.sleep(0.05)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except (BlockingIOError, ssl.SSLWantReadError):
        pass
    except OSError:
        closed += 1
print("closed %d" % closed, flush=True)
EOF

# idle_then_scrape WHAT SCHEME ARGS...: 256 idle connections held, then one scrape
idle_then_scrape() {
	local what=$1 scheme=$2 i code
	shift 2
	rm -f "$TMP/release" "$TMP/idle.out"
	start_exporter --root "$NODES/b2-cx6dx-roce" --no-pod-resources "$@"
	ok $? "$what: the exporter serves"
	"$PY" "$TMP/idle.py" "$EPORT" 256 "$scheme" "$TMP/release" >"$TMP/idle.out" 2>&1 &
	local ipid=$!
	for i in $(seq 600); do grep -q ready "$TMP/idle.out" && break; kill -0 $ipid 2>/dev/null || break; sleep 0.1; done
	ok "$(grep -q ready "$TMP/idle.out"; echo $?)" "$what: 256 connections held, every one accepted ($(tail -1 "$TMP/idle.out"))"
	code=$(curl -s -k -o "$TMP/m.txt" -w '%{http_code}' "$scheme://127.0.0.1:$EPORT/metrics")
	is "$code" 200 "$what: a scrape is answered 200 while they are held"
	like "$(cat "$TMP/m.txt")" 'node_infiniband_state_id\{device="mlx5_0",port="1"\}' "... with the counters"
	touch "$TMP/release"
	wait $ipid
	like "$(tail -1 "$TMP/idle.out")" '^closed [1-9]' "$what: the oldest idle connection made room for it"
	like "$(cat "$TMP/exp.log")" "connection limit \(256\) reached: closed a connection from 127\.0\.0\.1 idle after" \
		"$what: the log says which one went"
	stop_exporter
}

idle_then_scrape "plain HTTP" http
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
idle_then_scrape "TLS, every connection idle after a request" https --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"

# ---- clients that ask and never read ----
cat >"$TMP/noread.py" <<'EOF'
import select, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
# every one answered or closed: each has a byte (or its end) to read; none is read
while len(select.select(socks, [], [], 1)[0]) < n:
    pass
codes = {}
for s in socks:
    try:
        c = s.recv(12, socket.MSG_PEEK)[9:12].decode() or "closed"
    except OSError:
        c = "closed"
    codes[c] = codes.get(c, 0) + 1
print(" ".join("%s:%d" % kv for kv in sorted(codes.items())), flush=True)
time.sleep(0.2)
EOF
sanitized=0
grep -q 'SAN=1' "$BUILD/make.vars" 2>/dev/null && sanitized=1
start_exporter --root "$NODES/cx7-rail-1016vf" --no-pod-resources
ok $? "1016-VF node: the exporter serves"
curl -s -o "$TMP/m.txt" "http://127.0.0.1:$EPORT/metrics"
size=$(stat -c %s "$TMP/m.txt")
for round in 1 2 3; do
	run "$PY" "$TMP/noread.py" "$EPORT" 64 "$round"
	is "$rc" 0 "round $round: 64 clients ask for /metrics ($size bytes) and never read: each answered or closed ($out)"
done
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$EPID/status")
if [ "$sanitized" = 1 ]; then
	skip "a sanitizer's shadow memory and quarantine are no measure of the program's" "peak memory within 64 MiB"
else
	ok "$([ "$hwm" -le 65536 ]; echo $?)" "the exporter's peak memory stayed within the chart's limit of 64 MiB (VmHWM $hwm kB)"
fi
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics")" 200 "a client that reads is answered 200 after them"
stop_exporter

# ---- scrapes in progress at once ----
# busy.py PORT N CTL PATH: N connections opened and accepted by the exporter, then a scrape asked
# on the first; once CTL/held.log says its read is held, PATH asked on each of the others. Prints
# what those got while the scrape was still held (each answer read to its end, 10 s at most: only
# a hang is that slow), then lets the scrape go and prints its answer. The connections are all
# taken before the scrape starts, one accepted before the next is opened (so that the workers
# share them, not one taking a burst): a worker thread busy in a handler accepts none, so only
# those it took before could wait behind it
cat >"$TMP/busy.py" <<'EOF'
import os, select, socket, sys, time
from listenq import queued
port, n, ctl, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
socks = []
for _ in range(n):
    socks.append(socket.create_connection(("127.0.0.1", port)))
    while queued(port) != 0:
        time.sleep(0.01)
def held():
    try:
        return len(open(ctl + "/held.log").readlines())
    except FileNotFoundError:
        return 0
def ask(s, p):
    s.sendall(b"GET " + p.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
open(ctl + "/hold", "w").close()
ask(socks[0], "/metrics")
end = time.time() + 60
while held() < 1 and time.time() < end:
    time.sleep(0.05)
if held() < 1:
    print("the scrape was never held", flush=True)
    os.unlink(ctl + "/hold")
    sys.exit(1)
others = socks[1:]
for s in others:
    ask(s, path)
got, reading = {s: b"" for s in others}, set(others)
end = time.time() + 10
while reading and time.time() < end:
    for s in select.select(list(reading), [], [], max(0, end - time.time()))[0]:
        d = s.recv(65536)
        got[s] += d
        if not d:
            reading.discard(s)
codes = {}
for s in others:
    a, c = got[s], "none"
    if s not in reading and a.startswith(b"HTTP/1.1 "):
        c = a[9:12].decode()
        if c == "503" and b"\r\nRetry-After: 1\r\n" in a:
            c = "503+Retry-After"
        if c == "200" and path == "/healthz" and not a.endswith(b"\r\n\r\nok\n"):
            c = "200-without-ok"
    codes[c] = codes.get(c, 0) + 1
still = held() == 1 and not select.select([socks[0]], [], [], 0)[0]
print("answered " + " ".join("%s:%d" % kv for kv in sorted(codes.items())) +
      (", the scrape still held" if still else ", the scrape not held any more"), flush=True)
os.unlink(ctl + "/hold")
a = b""
socks[0].settimeout(60)
while True:
    d = socks[0].recv(65536)
    if not d:
        break
    a += d
head, _, body = a.partition(b"\r\n\r\n")
cl = [l.split(b":", 1)[1].strip().decode() for l in head.split(b"\r\n")
      if l.lower().startswith(b"content-length:")]
print("scrape: %s, %d bytes of Content-Length %s%s" % (head[9:12].decode(), len(body),
      cl[0] if cl else "none",
      ", with the counters" if b'node_infiniband_state_id{device="mlx5_0",port="1"}' in body
      else ""), flush=True)
EOF
if [ ! -x "$HOLD_FUSE" ] || [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	for t in "three scrapes at once with the default limits" "--max-scrapes 1: 503 with Retry-After" \
		"a scrape held: the other connections answered" "a client gone while its scrape is held" \
		"SIGTERM while a scrape is held"; do
		skip "no FUSE here (/dev/fuse, fusermount3, $HOLD_FUSE)" "$t"
	done
else
	node=$TMP/node
	cp -a "$NODES/b2-cx6dx-roce" "$node"
	mkdir -p "$TMP/mnt" "$TMP/ctl"
	dev=$(readlink -f "$node/sys/class/infiniband/mlx5_0")
	"$HOLD_FUSE" "$node" "$TMP/mnt" "${dev#"$node"/}/ports/1/counters/port_rcv_data" "$TMP/ctl" 2>"$TMP/fuse.log" &
	FPID=$!
	for i in $(seq 100); do [ -d "$TMP/mnt/sys/class" ] && break; sleep 0.1; done
	mounted=0
	[ -d "$TMP/mnt/sys/class" ] && mounted=1
	held() { [ -f "$TMP/ctl/held.log" ] && wc -l <"$TMP/ctl/held.log" || echo 0; }
	# scrape_held N: one more scrape in the background (its status in $TMP/s.N, its pid added to
	# CURLS), then wait until N reads are held or the scrape is answered without being held.
	# s.N goes first: the 503 block's s.1 is the second, and the first's "200" read before the
	# background curl had truncated it (a loaded machine) made its scrape count as answered
	CURLS=()
	scrape_held() {
		rm -f "$TMP/s.$1" "$TMP/h.$1"
		curl -s -D "$TMP/h.$1" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics" >"$TMP/s.$1" &
		CURLS+=($!)
		for i in $(seq 600); do
			[ "$(held)" -ge "$1" ] && return 0
			[ -s "$TMP/s.$1" ] && return 1
			sleep 0.1
		done
		return 1
	}
	if [ "$mounted" = 0 ]; then
		skip "the FUSE mirror did not mount ($(cat "$TMP/fuse.log"))" "three scrapes at once with the default limits"
	else
		start_exporter --root "$TMP/mnt" --no-pod-resources
		ok $? "exporter over the FUSE mirror serves"
		touch "$TMP/ctl/hold"
		for n in 1 2 3; do
			scrape_held $n
			ok $? "default limits: scrape $n is in progress with $((n - 1)) others ($(cat "$TMP/s.$n"))"
		done
		rm -f "$TMP/ctl/hold"
		wait "${CURLS[@]}"
		CURLS=()
		is "$(cat "$TMP/s.1") $(cat "$TMP/s.2") $(cat "$TMP/s.3")" "200 200 200" "... and all three are answered 200"
		stop_exporter

		rm -f "$TMP/ctl/held.log"
		start_exporter --root "$TMP/mnt" --no-pod-resources --max-scrapes 1
		touch "$TMP/ctl/hold"
		scrape_held 1
		ok $? "--max-scrapes 1: one scrape in progress"
		run curl -s -D "$TMP/h.busy" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics"
		is "$out" 503 "... the next one is answered 503"
		like "$(tr -d '\r' <"$TMP/h.busy")" '^Retry-After: 1$' "... with Retry-After"
		rm -f "$TMP/ctl/hold"
		wait "${CURLS[@]}"
		CURLS=()
		is "$(cat "$TMP/s.1")" 200 "... and the one in progress is answered 200"
		stop_exporter

		# a scrape held: every other connection is answered meanwhile, those the worker that
		# took the scrape had taken too (the workers of --max-scrapes 1 and of the defaults)
		for args in "--max-scrapes 1 /healthz" "--max-scrapes 1 /metrics" "/healthz"; do
			path=${args##* }
			limits=${args% "$path"}
			[ "$limits" = "$path" ] && limits=
			what="${limits:-default limits}: a scrape held, $path on 16 connections taken before it"
			want="answered 200:16, the scrape still held"
			[ "$path" = /metrics ] && want="answered 503+Retry-After:16, the scrape still held"
			rm -f "$TMP/ctl/held.log"
			# shellcheck disable=SC2086
			start_exporter --root "$TMP/mnt" --no-pod-resources $limits
			run "$PY" "$TMP/busy.py" "$EPORT" 17 "$TMP/ctl" "$path"
			rm -f "$TMP/ctl/hold"
			is "$(sed -n 1p <<<"$out")" "$want" "$what: each is answered while the scrape is held"
			like "$(sed -n 2p <<<"$out")" '^scrape: 200, ([0-9]+) bytes of Content-Length \1, with the counters$' \
				"... and once let go, the scrape is answered in full ($(sed -n 2p <<<"$out"))"
			stop_exporter
			is "$?" 0 "... and the exporter exits 0"
		done

		# a client that hangs up while its scrape is held: its thread goes once the read returns
		rm -f "$TMP/ctl/held.log"
		start_exporter --root "$TMP/mnt" --no-pod-resources --no-io-uring
		tasks() { ls "/proc/$EPID/task" | wc -l; }
		before=$(tasks)
		touch "$TMP/ctl/hold"
		scrape_held 1
		ok $? "a client gone while its scrape is held: the scrape is held"
		kill "${CURLS[0]}"
		wait "${CURLS[@]}" 2>/dev/null
		CURLS=()
		rm -f "$TMP/ctl/hold"
		for i in $(seq 300); do [ "$(tasks)" -le "$before" ] && break; sleep 0.1; done
		is "$(tasks)" "$before" "... once let go, the exporter is back to its $before threads"
		is "$(curl -s -m 10 "http://127.0.0.1:$EPORT/healthz")" ok "... and answers /healthz"
		stop_exporter
		is "$?" 0 "... and exits 0 (a sanitizer's leak report would not)"

		# SIGTERM with a scrape held: its connection is resumed and closed at once; the exporter
		# exits once the read returns (a thread in a FUSE read cannot be made to leave it)
		rm -f "$TMP/ctl/held.log"
		start_exporter --root "$TMP/mnt" --no-pod-resources
		touch "$TMP/ctl/hold"
		scrape_held 1
		ok $? "SIGTERM while a scrape is held: the scrape is held"
		kill "$EPID"
		for i in $(seq 300); do kill -0 "${CURLS[0]}" 2>/dev/null || break; sleep 0.1; done
		run kill -0 "${CURLS[0]}"
		is "$rc $(cat "$TMP/s.1")" "1 000" "... its client's connection is closed without an answer while the scrape is held"
		like "$(cat "$TMP/exp.log")" 'stopping with 1 requests whose handlers still run: their connections closed' \
			"... and the log says so"
		rm -f "$TMP/ctl/hold"
		wait "${CURLS[@]}" 2>/dev/null
		CURLS=()
		for i in $(seq 300); do kill -0 "$EPID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$EPID" 2>/dev/null && kill -KILL "$EPID"
		wait "$EPID"
		is "$?" 0 "... once let go, the exporter exits 0"
	fi
	fusermount3 -u "$TMP/mnt" 2>/dev/null || kill $FPID
	wait $FPID 2>/dev/null
fi

# ---- Accept-Encoding: gzip for a client that asks, the plain text for one that does not ----
start_exporter --root "$NODES/b2-cx6dx-roce" --no-pod-resources
ok $? "gzip: the exporter serves"
body() { grep -v '^rdmak_exporter_scrape_duration_seconds ' "$1"; }
curl -s -D "$TMP/h.gz" -o "$TMP/m.gz" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$EPORT/metrics"
like "$(tr -d '\r' <"$TMP/h.gz")" $'\nContent-Encoding: gzip\n' "Accept-Encoding: gzip: answered with Content-Encoding: gzip"
like "$(tr -d '\r' <"$TMP/h.gz")" $'\nVary: Accept-Encoding\n' "... and Vary: Accept-Encoding"
gzip -dc <"$TMP/m.gz" >"$TMP/m.gunzip"
is "$?" 0 "... a gzip stream that gzip -d reads"
for h in '' 'Accept-Encoding: identity' 'Accept-Encoding: gzip;q=0' 'Accept-Encoding: deflate, br'; do
	curl -s -D "$TMP/h.plain" -o "$TMP/m.plain" ${h:+-H "$h"} "http://127.0.0.1:$EPORT/metrics"
	unlike "$(tr -d '\r' <"$TMP/h.plain")" 'Content-Encoding' "${h:-no Accept-Encoding}: no Content-Encoding"
	is "$(body "$TMP/m.plain" | md5sum)" "$(body "$TMP/m.gunzip" | md5sum)" "... the plain text, the same as the gzip'd one's"
done
like "$(cat "$TMP/m.plain")" 'node_infiniband_state_id\{device="mlx5_0",port="1"\} 4' "... with the counters"
stop_exporter
like "$(cat "$TMP/exp.log")" "sent gzip'd" "... and the exporter counts the gzip'd one at shutdown"
is "$(sed -n "s/.*scrapes (\([0-9]*\) sent gzip'd.*/\1/p" "$TMP/exp.log")" 1 "... one of five"

# ---- files read at start: a FIFO is refused by its name, never waited on ----
mkfifo "$TMP/fifo"
printf 's3cret\n' >"$TMP/token"
for opt in --tls-cert --tls-key --client-ca --bearer-token-file --plugin-config; do
	case $opt in
	--tls-cert) args=(--tls-cert "$TMP/fifo" --tls-key "$TMP/key.pem") ;;
	--tls-key) args=(--tls-cert "$TMP/cert.pem" --tls-key "$TMP/fifo") ;;
	--client-ca) args=(--tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" --client-ca "$TMP/fifo") ;;
	--bearer-token-file) args=(--bearer-token-file "$TMP/fifo") ;;
	--plugin-config) args=(--plugin-config "$TMP/fifo") ;;
	esac
	# a FIFO without a writer: an open that waits would wait for ever (the limit is only there
	# to end the test; the assertion is on the exit code and the message)
	run timeout -k 5 60 "$RDMAK" exporter --listen 127.0.0.1:0 --root "$NODES/b2-cx6dx-roce" "${args[@]}"
	is "$rc" 2 "$opt FIFO: refused, exit 2 (not left waiting)"
	like "$err" "$TMP/fifo: not a regular file" "... naming the file ($err)"
done

done_testing
