#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: one scrape of examples/nodes/cx7-rail-1016vf (8 PFs x 127 VFs, 1024 ports) by
# `rdmak exporter` against node_exporter's infiniband collector alone (Debian's
# prometheus-node-exporter, --collector.disable-defaults --collector.infiniband) on the same tree,
# in the same run: the median of 7 scrapes each after a first one, and each server's resident
# memory after them (VmHWM, its peak); and rdmak again with --no-io-uring (the path of a pod
# whose seccomp profile refuses io_uring). Then what --netns-dir adds to a scrape on a node in
# the exclusive RDMA netns mode (cx5-roce-sriov) with 64 pod namespaces of this kernel (made with
# unshare --net=FILE; none holds an RDMA device here), per namespace, against the floor of the
# same system calls in one C process (tools/netns_floor.c). Goal: 2x the floor.
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
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for f in "$tmp"/netns/*; do umount "$f" 2>/dev/null || true; done
	rm -rf "$tmp"
}
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

# --netns-dir: the scrape's cost per pod namespace
ex=examples/nodes/cx5-roce-sriov
mkdir "$tmp/netns"
nsn=64
for i in $(seq "$nsn"); do
	touch "$tmp/netns/cni-$i"
	unshare --net="$tmp/netns/cni-$i" true 2>/dev/null || { nsn=0; break; }
done
if [ "$nsn" = 0 ] || [ ! -x "$build/tools/netns_floor" ]; then
	echo "bench-exporter: --netns-dir skipped (needs unshare --net=FILE as root and $build/tools/netns_floor)"
	exit 0
fi
p4=$(port)
"$build/rdmak" exporter --root "$ex" --listen "127.0.0.1:$p4" --no-pod-resources 2>"$tmp/base.log" &
pids+=($!)
b=$(measure base $! "http://127.0.0.1:$p4/metrics")
p5=$(port)
"$build/rdmak" exporter --root "$ex" --listen "127.0.0.1:$p5" --no-pod-resources --netns-dir "$tmp/netns" 2>"$tmp/ns.log" &
pids+=($!)
w=$(measure netns $! "http://127.0.0.1:$p5/metrics")
grep -q "^rdmak_exporter_netns_scanned $nsn$" "$tmp/netns.txt" || { echo "bench-exporter: --netns-dir did not scan $nsn namespaces"; exit 1; }
fl=$("$build/tools/netns_floor" "$tmp/netns" 7)
read -r _ bt _ _ <<<"$b"
read -r _ wt _ _ <<<"$w"
printf 'bench-exporter: --netns-dir, %d namespaces on %s: scrape %s ms against %s ms without, %.1f us per namespace; floor (netns_floor: open, setns, fsopen/fsconfig/fsmount, setns back, list class/infiniband) %.1f us per namespace; %.2fx the floor (goal 2)\n' \
	"$nsn" "$(basename "$ex")" "$wt" "$bt" "$(echo "($wt - $bt) * 1000 / $nsn" | bc -l)" \
	"$(echo "$fl * 1000 / $nsn" | bc -l)" "$(echo "($wt - $bt) / $fl" | bc -l)"
