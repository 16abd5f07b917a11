#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: one scrape of examples/nodes/cx7-rail-1016vf (8 PFs x 127 VFs, 1024 ports) by
# `rdmak exporter` against node_exporter's infiniband collector alone (Debian's
# prometheus-node-exporter, --collector.disable-defaults --collector.infiniband) on the same tree,
# in the same run: the median of 7 scrapes each after a first one, and each server's resident
# memory after them (VmHWM, its peak); and rdmak again with --no-io-uring (the path of a pod
# whose seccomp profile refuses io_uring).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
tree=examples/nodes/cx7-rail-1016vf
ne=$(command -v prometheus-node-exporter || true)
if [ -z "$ne" ] || ! command -v curl >/dev/null || [ ! -d "$tree" ]; then
	echo "bench-exporter: skipped (needs prometheus-node-exporter, curl and $tree: tools/install-deps.sh, make)"
	exit 0
fi
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# measure NAME PID URL: the median scrape time (ms), the peak RSS (MiB), the series count
measure() {
	local name=$1 pid=$2 url=$3 i t
	for i in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
	curl -sf -o "$tmp/$name.txt" "$url"
	for i in $(seq 7); do curl -sf -o /dev/null -w '%{time_total}\n' "$url"; done | sort -n | sed -n 4p >"$tmp/$name.t"
	t=$(cat "$tmp/$name.t")
	printf '%s %.1f %.1f %d\n' "$name" "$(echo "$t * 1000" | bc -l)" \
		"$(awk '/^VmHWM/ {print $2 / 1024}' "/proc/$pid/status")" "$(grep -vc '^#' "$tmp/$name.txt")"
}

p1=$(port)
"$build/rdmak" exporter --root "$tree" --listen "127.0.0.1:$p1" 2>"$tmp/rdmak.log" &
pids+=($!)
r=$(measure rdmak $! "http://127.0.0.1:$p1/metrics")
p2=$(port)
"$ne" --path.sysfs="$tree/sys" --collector.disable-defaults --collector.infiniband \
	--web.listen-address="127.0.0.1:$p2" 2>"$tmp/ne.log" &
pids+=($!)
n=$(measure node_exporter $! "http://127.0.0.1:$p2/metrics")
# the path of a pod whose seccomp profile refuses io_uring (RuntimeDefault on containerd 2.0+)
p3=$(port)
"$build/rdmak" exporter --root "$tree" --listen "127.0.0.1:$p3" --no-io-uring 2>"$tmp/rdmak-plain.log" &
pids+=($!)
q=$(measure rdmak-plain $! "http://127.0.0.1:$p3/metrics")
read -r _ rt rm rs <<<"$r"
read -r _ nt nm ns <<<"$n"
read -r _ qt qm qs <<<"$q"
printf 'bench-exporter: one scrape of %s: rdmak %s ms (%s series, %s MiB peak RSS), node_exporter %s ms (%s series, %s MiB); rdmak/node_exporter time %.2fx\n' \
	"$(basename "$tree")" "$rt" "$rs" "$rm" "$nt" "$ns" "$nm" "$(echo "$rt / $nt" | bc -l)"
printf 'bench-exporter: with --no-io-uring (one file at a time, as under a seccomp profile that refuses io_uring): rdmak %s ms (%s series, %s MiB); rdmak/node_exporter time %.2fx\n' \
	"$qt" "$qs" "$qm" "$(echo "$qt / $nt" | bc -l)"
