# SPDX-License-Identifier: Apache-2.0
# rdmak-cni run directly (environment + stdin, no runtime library in between) for the
# tests/cmd/cni_*.sh tests. Source after lib.sh; uses tests/lib-cni.sh's namespaces (a "host"
# netns with rails rdma0.. and VF stand-ins vf10.., a "fabric" netns with their gateways, pods
# beside them) and its netstate/leaks dumps. Not a test itself (run.sh runs cni_*.sh).
. "$TOP/tests/lib-cni.sh"

CNIP="$BUILD/cni:/usr/lib/cni"
PLUGIN="$BUILD/cni/rdmak-cni"
# the test build (Makefile, tests/seams/): the same plugin with the SR-IOV PF stand-in, which
# answers the VF table's requests when RDMAK_TEST_VF_STANDIN=DIR is in its environment
SEAMS_PLUGIN="$BUILD/tests/seams/cni/rdmak-cni"

# direct_requirements: why these tests cannot run here (nothing when they can)
direct_requirements() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; return; }
	ip netns add "$CNI_TAG-probe" 2>/dev/null || { echo "cannot create network namespaces"; return; }
	ip -n "$CNI_TAG-probe" link add p0 type veth peer name p1 2>/dev/null || { ip netns del "$CNI_TAG-probe"; echo "no veth"; return; }
	ip -n "$CNI_TAG-probe" link add m0 link p0 type macvlan mode bridge 2>/dev/null || { ip netns del "$CNI_TAG-probe"; echo "no macvlan"; return; }
	ip netns del "$CNI_TAG-probe"
}

# cni CMD ID IFNAME NETNS CONF [VAR=VALUE...]: the plugin in the host netns, the configuration
# (a file or a JSON string) on stdin, a clean environment; $out $err $rc as lib.sh's run. With
# RDMAK_TEST_VF_STANDIN=DIR among the variables, the test build's plugin (SEAMS_PLUGIN) runs.
# With CNI_TIMEOUT=SECONDS set, a plugin still running then is killed (rc 124): for the
# cases that once hung.
cni() {
	local cmd=$1 id=$2 ifname=$3 netns=$4 conf=$5 plugin=$PLUGIN v; shift 5
	[ -f "$conf" ] || { printf '%s' "$conf" >"$TMP/conf.json"; conf="$TMP/conf.json"; }
	for v in "$@"; do case $v in RDMAK_TEST_VF_STANDIN=*) plugin=$SEAMS_PLUGIN ;; esac; done
	run ${CNI_TIMEOUT:+timeout "$CNI_TIMEOUT"} ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" CNI_COMMAND="$cmd" CNI_CONTAINERID="$id" CNI_IFNAME="$ifname" \
		CNI_NETNS="$netns" CNI_PATH="$CNIP" "$@" "$plugin" <"$conf"
}

# jout EXPR: a Python expression on the JSON document in $out (`d`)
jout() {
	printf '%s' "$out" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); r=eval(sys.argv[1]); print(json.dumps(r) if isinstance(r,(dict,list)) else r)' "$1" 2>/dev/null
}

# prev_conf CONF RESULT: CONF with prevResult set to RESULT (for CHECK and DEL)
prev_conf() {
	"$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); c["prevResult"]=json.loads(sys.argv[2]); print(json.dumps(c))' "$1" "$2"
}

# pns PATH: the netns name of a /run/netns path
pns() { echo "${1#/run/netns/}"; }

# snap_all POD: the host's and the pod's state, for "nothing changed" checks
snap_all() {
	# link-local addresses come a moment after a link goes up: left out
	{ netstate "$HOST_NS" --no-linklocal; echo "--- pod"; netstate "$1" --no-linklocal; echo "--- state"; files_under "$TMP/state"; } 2>&1
}
