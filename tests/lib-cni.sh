# SPDX-License-Identifier: Apache-2.0
# Network namespaces and the libcni driver for the CNI tests. Source after lib.sh.
#
# The topology stands in for an RDMA node without touching the real root namespace:
#   $HOST_NS  "host" netns: the plugins run here (ip netns exec, which also mounts its own /sys).
#             rdma0..rdmaN-1 are veth ends standing in for the RDMA netdevs (macvlan masters) or,
#             for hostdev, for the VF netdevs moved into the pod.
#   $FAB_NS   "fabric" netns: the other veth ends (fab0..), holding rail k's gateway address
#             172.16.1k.254/24 and fd00:1k::fe/64, so that a pod can reach its gateway for real.
#   pod netns created per test with cni_pod NAME (the path goes in CNI_NETNS).
# Names carry the test's pid; the EXIT trap removes every namespace and the temp dir.
: "${TMP:?source lib.sh first}"
DRIVER="$BUILD/tests/cni-driver"
REFDIR=${REFDIR:-/usr/lib/cni}
NETSTATE="$TOP/tests/netstate.py"
CNI_TAG="rdmak-t-$$"
HOST_NS="$CNI_TAG-host"
FAB_NS="$CNI_TAG-fab"
_cni_netns=()

cni_cleanup() {
	local ns
	for ns in "${_cni_netns[@]}"; do ip netns del "$ns" 2>/dev/null; done
	# cni_pod runs in $(...), a subshell whose additions to _cni_netns are lost: every
	# namespace carrying this run's tag is ours
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$CNI_TAG-"); do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cni_cleanup EXIT
trap 'exit 129' HUP INT TERM # so that the EXIT trap runs

# cni_requirements: prints why this machine cannot run the CNI tests (nothing when it can).
cni_requirements() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; return; }
	[ -x "$DRIVER" ] || { echo "no $DRIVER (make tests needs Go: tools/install-deps.sh)"; return; }
	[ -x "$REFDIR/macvlan" ] || { echo "no reference plugins in $REFDIR (containernetworking-plugins)"; return; }
	command -v ping >/dev/null || { echo "no ping (iputils-ping)"; return; }
	ip netns add "$CNI_TAG-probe" 2>/dev/null || { echo "cannot create network namespaces"; return; }
	ip -n "$CNI_TAG-probe" link add p0 type veth peer name p1 2>/dev/null || { ip netns del "$CNI_TAG-probe"; echo "no veth"; return; }
	ip -n "$CNI_TAG-probe" link add m0 link p0 type macvlan mode bridge 2>/dev/null || { ip netns del "$CNI_TAG-probe"; echo "no macvlan"; return; }
	ip netns del "$CNI_TAG-probe"
}

_cni_ns_add() {
	ip netns add "$1" || return 1
	_cni_netns+=("$1")
	ip -n "$1" link set lo up
}

# _cni_wire HOSTIF K: a veth from HOSTIF (host netns, up) to fab-HOSTIF in the fabric, which
# holds rail K's gateways 172.16.(11+K).254/24 and fd00:(11+K)::fe/64
_cni_wire() {
	local dev=$1 k=$2
	ip -n "$HOST_NS" link add "$dev" type veth peer name "fab-$dev" netns "$FAB_NS" || return 1
	ip -n "$HOST_NS" link set "$dev" up
	ip -n "$FAB_NS" addr add "172.16.$((11 + k)).254/24" dev "fab-$dev"
	ip -n "$FAB_NS" addr add "fd00:$((11 + k))::fe/64" dev "fab-$dev" nodad
	ip -n "$FAB_NS" link set "fab-$dev" up
}

# cni_topology N: host and fabric namespaces with N rails rdma0..rdmaN-1 (up), each wired to the
# fabric, where rail K's gateways are 172.16.(11+K).254/24 and fd00:(11+K)::fe/64.
cni_topology() {
	local n=$1 k
	_cni_ns_add "$HOST_NS" && _cni_ns_add "$FAB_NS" || return 1
	# no DAD on the host's rails: their link-local routes would appear a second later and read
	# as leaks (the pods keep the default)
	ip netns exec "$HOST_NS" sysctl -qw net.ipv6.conf.default.accept_dad=0
	for ((k = 0; k < n; k++)); do _cni_wire "rdma$k" "$k" || return 1; done
}

# cni_vfs N: N stand-ins for VF netdevs in the host netns, vf10..vf(10+N-1), each wired to the
# fabric like a rail (rail numbers 10.., so 172.16.21.254/24 for vf10), for hostdev moves
cni_vfs() {
	local n=$1 k
	for ((k = 10; k < 10 + n; k++)); do _cni_wire "vf$k" "$k" || return 1; done
}

# cni_pod NAME: a fresh pod netns; prints its path
cni_pod() {
	local ns="$CNI_TAG-$1"
	_cni_ns_add "$ns" >/dev/null || return 1
	echo "/run/netns/$ns"
}

# drv CMD ARGS...: the libcni driver, run in the host netns, with the test's CNI_PATH and cache;
# output in $out/$err, exit code in $rc (lib.sh's run).
CNI_PATH_TEST="$BUILD/cni:$REFDIR"
drv() {
	local cmd=$1; shift
	run ip netns exec "$HOST_NS" "$DRIVER" "$cmd" --cni-path "$CNI_PATH_TEST" --cache-dir "$TMP/cache" "$@"
}

# netstate NS [flags]: canonical dump of a namespace (tests/netstate.py); NS is a name or /run/netns path
# It first waits (up to 5 s) for IPv6 duplicate address detection to end in NS: a link-local
# address's local route appears only when DAD ends, a second or more after the link came up
# (longer on a loaded machine), and would otherwise read as a leak in a later dump.
netstate() {
	local ns=${1#/run/netns/} i; shift
	for ((i = 0; i < 50; i++)); do
		[ -z "$(ip -n "$ns" -6 addr show tentative 2>/dev/null)" ] && break
		sleep 0.1
	done
	"$PY" "$NETSTATE" "$ns" "$@"
}

# leaks BEFORE AFTER: counts per kind of the lines AFTER has and BEFORE lacks
# (e.g. "links=0 addrs=0 rules=0 routes=0"), the lines themselves after a newline.
leaks() {
	"$PY" - "$1" "$2" <<-'EOF'
	import sys
	before = set(open(sys.argv[1]).read().split("\n"))
	after = [l for l in open(sys.argv[2]).read().split("\n") if l and l not in before]
	kinds = {"links": "link ", "addrs": "addr ", "rules": "rule", "routes": "route", "sysctls": "sysctl "}
	print(" ".join(f"{k}={sum(1 for l in after if l.startswith(p))}" for k, p in kinds.items()))
	for l in after[:20]:
	    print("#   leaked: " + l)
	EOF
}

# files_under DIR...: every entry but directories (the plugins' and IPAM stores' state: files,
# and symbolic links, which rdmak-ipam's file store uses as records), one a line, less what a
# store keeps by design across attachments (host-local's lock and last_reserved_ip.N,
# rdmak-ipam's per-pool .lock and .cursor and per-network .pending)
files_under() {
	local d
	for d in "$@"; do [ -d "$d" ] && find "$d" ! -type d; done |
		grep -vE '/(lock|last_reserved_ip\.[0-9]+|\.lock|\.cursor|\.pending)$' | sort
}

# cni_rdmak_ready [PLUGIN...]: empty when each of build/cni/PLUGIN (default rdmak-cni and
# rdmak-ipam) answers VERSION, else why not.
cni_rdmak_ready() {
	local p v
	for p in ${@:-rdmak-cni rdmak-ipam}; do
		v=$(CNI_COMMAND=VERSION "$BUILD/cni/$p" </dev/null 2>&1)
		case "$v" in *supportedVersions*) ;; *) echo "$p does not answer VERSION yet: ${v:0:80}"; return ;; esac
	done
}

# Network configurations, one writer per chain, so that every scenario runs the same rails through
# the reference plugins and through rdmak's.
# Rail K (0..7): master rdmaK, 172.16.(11+K).0/24 from .10, gateway .254; fd00:(11+K)::/64 from
# ::10, gateway ::fe (the gateways live in the fabric netns: see lib-cni.sh). FAM is 4, 6 or 46.

# range_json RAIL FAM: host-local's range objects, one set per family (ranges = [[v4], [v6]])
range_json() {
	local k=$1 fam=$2 r4 r6
	r4="[{\"subnet\":\"172.16.$((11 + k)).0/24\",\"rangeStart\":\"172.16.$((11 + k)).10\",\"gateway\":\"172.16.$((11 + k)).254\"}]"
	r6="[{\"subnet\":\"fd00:$((11 + k))::/64\",\"rangeStart\":\"fd00:$((11 + k))::10\",\"gateway\":\"fd00:$((11 + k))::fe\"}]"
	case $fam in 4) echo "[$r4]" ;; 6) echo "[$r6]" ;; 46) echo "[$r4,$r6]" ;; esac
}

# ipam_json KIND RAIL FAM: the ipam object; the store of each kind lives under $TMP
ipam_json() {
	local kind=$1 k=$2 fam=$3
	case $kind in
	host-local) echo "{\"type\":\"host-local\",\"ranges\":$(range_json "$k" "$fam"),\"dataDir\":\"$TMP/store-hl\"}" ;;
	rdmak-ipam) echo "{\"type\":\"rdmak-ipam\",\"ranges\":$(range_json "$k" "$fam"),\"dataDir\":\"$TMP/store-rk\"}" ;;
	static)
		local a="[{\"address\":\"172.16.$((11 + k)).50/24\",\"gateway\":\"172.16.$((11 + k)).254\"}]"
		[ "$fam" = 6 ] && a="[{\"address\":\"fd00:$((11 + k))::50/64\",\"gateway\":\"fd00:$((11 + k))::fe\"}]"
		echo "{\"type\":\"static\",\"addresses\":$a}" ;;
	*) echo "{\"type\":\"$kind\"}" ;;
	esac
}

# conf_ref FILE RAIL IPAM [sbr]: the reference chain, macvlan (+ sbr for policy routing)
conf_ref() {
	local file=$1 k=$2 ipam=$3 sbr=${4:-sbr} extra=
	[ "$sbr" = sbr ] && extra=',{"type":"sbr"}'
	cat >"$file" <<-EOF
	{"cniVersion":"1.0.0","name":"rail$k","plugins":[
	 {"type":"macvlan","master":"rdma$k","mode":"bridge","ipam":$ipam}$extra]}
	EOF
}

# conf_rdmak FILE RAIL IPAM [EXTRA-KEYS]: rdmak-cni's macvlan with the same IPAM
conf_rdmak() {
	local file=$1 k=$2 ipam=$3 extra=${4:+,$4}
	cat >"$file" <<-EOF
	{"cniVersion":"1.0.0","name":"rail$k","type":"rdmak-cni","link":"macvlan","master":"rdma$k",
	 "mode":"bridge","stateDir":"$TMP/state-cni","ipam":$ipam$extra}
	EOF
}
