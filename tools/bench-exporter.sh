#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: one scrape of examples/nodes/cx7-rail-1016vf (8 PFs x 127 VFs, 1024 ports) by
# `rdmak exporter` against node_exporter's infiniband collector alone (Debian's
# prometheus-node-exporter, --collector.disable-defaults --collector.infiniband) on the same tree,
# in the same run: the medians of 9 rounds (BENCH_EXPORTER_ROUNDS) after a first scrape, every
# server scraped in turn in each round, plain and asking for gzip (as Prometheus does; both
# servers compress), the CPU time each server took for them (utime + stime, per scrape), and each
# server's resident memory after them (VmHWM, its peak). rdmak with --vf-series all (every VF's series, as node_exporter) is the figure against
# node_exporter, then its default (--vf-series held) and --no-io-uring (the path of a pod whose
# seccomp profile refuses io_uring). All of it twice: on the tree as generated, and on an
# overlayfs copy of it where every port's counters and hw_counters files were written (as a
# node's counters change: the files are then the upper layer's, read through overlayfs; skipped
# where overlayfs cannot be mounted). Goal: 0.5x node_exporter's time on both. Then what --netns-dir adds to a scrape on a node in
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
	umount "$tmp/ov/m" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The servers of one comparison run side by side, and their scrapes are interleaved: each of
# ROUNDS rounds scrapes every server once plain (curl asks no Accept-Encoding) and once gzip'd
# (Accept-Encoding: gzip, as Prometheus asks; curl inflates it), in turn, so that a change of
# the machine's load falls on all of them alike.
ROUNDS=${BENCH_EXPORTER_ROUNDS:-9}
declare -A PID URL

# start NAME ROOT ARGS...: a server on a free port (rdmak with ARGS, or node_exporter when NAME is
# node_exporter), answering once before it returns; its first scrape kept in $tmp/NAME.txt
start() {
	local name=$1 root=$2 p i
	shift 2
	p=$(port)
	if [ "$name" = node_exporter ]; then
		"$ne" --path.sysfs="$root/sys" --collector.disable-defaults --collector.infiniband \
			--web.listen-address="127.0.0.1:$p" 2>"$tmp/$name.log" &
	else
		"$build/rdmak" exporter --root "$root" --listen "127.0.0.1:$p" --no-pod-resources "$@" \
			2>"$tmp/$name.log" &
	fi
	PID[$name]=$!
	pids+=("$!")
	URL[$name]="http://127.0.0.1:$p/metrics"
	for i in $(seq 300); do curl -sf -o /dev/null "${URL[$name]}" && break; sleep 0.1; done
	curl -sf -o "$tmp/$name.txt" "${URL[$name]}"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# rounds NAME...: the interleaved rounds; then per server one line "NAME T RSS SERIES CPU G": the
# median plain scrape (ms), the peak RSS (MiB, VmHWM), the series count, the server's CPU time
# per scrape (ms, utime + stime over all of its scrapes) and the median gzip'd scrape (ms)
rounds() {
	local n i mid=$(((ROUNDS + 1) / 2))
	declare -A c0
	for n; do
		c0[$n]=$(cpu_ticks "${PID[$n]}")
		: >"$tmp/$n.t"
		: >"$tmp/$n.g"
	done
	for i in $(seq "$ROUNDS"); do
		for n; do
			curl -sf -o /dev/null -w '%{time_total}\n' "${URL[$n]}" >>"$tmp/$n.t"
			curl -sf --compressed -o /dev/null -w '%{time_total}\n' "${URL[$n]}" >>"$tmp/$n.g"
		done
	done
	for n; do
		printf '%s %.1f %.1f %d %.0f %.1f\n' "$n" "$(echo "$(sort -n "$tmp/$n.t" | sed -n "${mid}p") * 1000" | bc -l)" \
			"$(awk '/^VmHWM/ {print $2 / 1024}' "/proc/${PID[$n]}/status")" "$(grep -vc '^#' "$tmp/$n.txt")" \
			"$(echo "($(cpu_ticks "${PID[$n]}") - ${c0[$n]}) * 1000 / $(getconf CLK_TCK) / (2 * $ROUNDS)" | bc -l)" \
			"$(echo "$(sort -n "$tmp/$n.g" | sed -n "${mid}p") * 1000" | bc -l)"
	done
}

# stop NAME...: stop those servers
stop() {
	local n
	for n; do
		kill "${PID[$n]}" 2>/dev/null || true
		wait "${PID[$n]}" 2>/dev/null || true
	done
}

# per_round A B KIND: the median, over the rounds, of A's scrape time over B's in the same round
# (KIND t: plain, g: gzip'd), which a drift of the machine's load between rounds moves less than
# the ratio of the two medians
per_round() {
	paste "$tmp/$1.$3" "$tmp/$2.$3" | awk '{ print $1 / $2 }' | sort -n | sed -n "$(((ROUNDS + 1) / 2))p"
}

# bench_tree LABEL ROOT: rdmak (every VF, then the default, then without io_uring) against
# node_exporter on ROOT
bench_tree() {
	local label=$1 root=$2 r n h q out
	start rdmak "$root" --vf-series all
	start node_exporter "$root"
	start rdmak-held "$root"
	start rdmak-plain "$root" --vf-series all --no-io-uring
	out=$(rounds rdmak node_exporter rdmak-held rdmak-plain)
	stop rdmak node_exporter rdmak-held rdmak-plain
	local pt pg
	pt=$(per_round rdmak node_exporter t)
	pg=$(per_round rdmak node_exporter g)
	r=$(grep '^rdmak ' <<<"$out")
	n=$(grep '^node_exporter ' <<<"$out")
	h=$(grep '^rdmak-held ' <<<"$out")
	q=$(grep '^rdmak-plain ' <<<"$out")
	read -r _ rt rm rs rc rg <<<"$r"
	read -r _ nt nm ns nc ng <<<"$n"
	read -r _ ht hm hs hc hg <<<"$h"
	read -r _ qt qm qs qc qg <<<"$q"
	printf 'bench-exporter: one scrape of %s (medians of %d interleaved rounds): rdmak --vf-series all %s ms, gzip %s ms (%s series, %s ms CPU, %s MiB peak RSS); node_exporter %s ms, gzip %s ms (%s series, %s ms CPU, %s MiB); rdmak/node_exporter time %.2fx, gzip %.2fx (goal 0.5; the median of the per-round ratios %.2fx, gzip %.2fx), CPU %.2fx; load %s\n' \
		"$label" "$ROUNDS" "$rt" "$rg" "$rs" "$rc" "$rm" "$nt" "$ng" "$ns" "$nc" "$nm" "$(echo "$rt / $nt" | bc -l)" \
		"$(echo "$rg / $ng" | bc -l)" "$pt" "$pg" "$(echo "$rc / $nc" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
	printf 'bench-exporter: %s, rdmak by default (--vf-series held, no VF held): %s ms, gzip %s ms (%s series: %.1f million per 10 000 such nodes, --vf-series all %.1f million; %s ms CPU), %.2fx, gzip %.2fx; with --no-io-uring (one file at a time, as under a seccomp profile that refuses io_uring): %s ms, gzip %s ms (%s ms CPU), %.2fx, gzip %.2fx\n' \
		"$label" "$ht" "$hg" "$hs" "$(echo "$hs / 100" | bc -l)" "$(echo "$rs / 100" | bc -l)" "$hc" "$(echo "$ht / $nt" | bc -l)" "$(echo "$hg / $ng" | bc -l)" \
		"$qt" "$qg" "$qc" "$(echo "$qt / $nt" | bc -l)" "$(echo "$qg / $ng" | bc -l)"
}

bench_tree "$(basename "$tree")" "$tree"

# the same tree with every port's counters and hw_counters written, through overlayfs
mkdir -p "$tmp/ov/u" "$tmp/ov/w" "$tmp/ov/m"
if mount -t overlay overlay -o "lowerdir=$PWD/$tree,upperdir=$tmp/ov/u,workdir=$tmp/ov/w" "$tmp/ov/m" 2>/dev/null; then
	python3 - "$tmp/ov/m/sys/class/infiniband" <<-'EOF2'
	import os, sys
	ib, n = sys.argv[1], 0
	for dev in sorted(os.listdir(ib)):
	    ports = os.path.join(os.path.realpath(os.path.join(ib, dev)), "ports")
	    for port in sorted(os.listdir(ports)):
	        for sub in ("counters", "hw_counters"):
	            d = os.path.join(ports, port, sub)
	            for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
	                n += 1
	                with open(os.path.join(d, f), "w") as fh:
	                    fh.write("%d\n" % (1000000 + n * 7919))
	EOF2
	bench_tree "$(basename "$tree") with every counter file written (overlayfs)" "$tmp/ov/m"
else
	echo "bench-exporter: the written copy skipped (needs root and overlayfs)"
fi

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
start base "$ex"
start netns "$ex" --netns-dir "$tmp/netns"
out=$(rounds base netns)
stop base netns
b=$(grep '^base ' <<<"$out")
w=$(grep '^netns ' <<<"$out")
grep -q "^rdmak_exporter_netns_scanned $nsn$" "$tmp/netns.txt" || { echo "bench-exporter: --netns-dir did not scan $nsn namespaces"; exit 1; }
fl=$("$build/tools/netns_floor" "$tmp/netns" 7)
read -r _ bt _ _ <<<"$b"
read -r _ wt _ _ <<<"$w"
printf 'bench-exporter: --netns-dir, %d namespaces on %s: scrape %s ms against %s ms without, %.1f us per namespace; floor (netns_floor: open, setns, fsopen/fsconfig/fsmount, setns back, list class/infiniband) %.1f us per namespace; %.2fx the floor (goal 2)\n' \
	"$nsn" "$(basename "$ex")" "$wt" "$bt" "$(echo "($wt - $bt) * 1000 / $nsn" | bc -l)" \
	"$(echo "$fl * 1000 / $nsn" | bc -l)" "$(echo "($wt - $bt) / $fl" | bc -l)"
