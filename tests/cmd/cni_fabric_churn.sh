#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Partition churn (issue 21 §2): rdmak-cni ADD and DEL of hostdev VFs on a network with a pkey
# and a fabric, against the UFM stand-in (tests/js/ufm.mjs), with kill -9 of a third of the
# ADDs and half the DELs at a random point of their run (0-60 ms in) and a UFM outage
# (connections reset) for the middle fifth of the run. A killed or failed ADD is followed by
# DEL, a killed DEL is retried, as a runtime does; the runtime's GC comes last. Then the
# partition must hold exactly the live attachments' GUIDs, no record or journal entry may be
# left of a dead attachment, and `rdmak fabric check` must agree. The run stops after CHURN_MAX
# churns (1000) or CHURN_SECONDS (35) of churning, whichever comes first, and prints how many it
# did (one churn: an ADD and the DEL of one attachment); "the middle fifth" is of whichever
# limit the run is nearer to. With CHURN_MIN set, fewer churns than that fail the test: `make
# soak-fabric` runs 1000 of them with CHURN_MIN=1000 (docs/fabric.md). VFs are veth stand-ins
# (no SR-IOV here), as in cni_hostdev.sh.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"
. "$TOP/tests/lib-ufm.sh"

why=$(direct_requirements)
command -v node >/dev/null && command -v openssl >/dev/null && command -v curl >/dev/null || why=${why:-"needs node, openssl and curl"}
if [ -n "$why" ]; then
	skip "$why" "partition churn"
	done_testing
	exit
fi
MAX=${CHURN_MAX:-1000}
SECONDS_BUDGET=${CHURN_SECONDS:-35}
MIN=${CHURN_MIN:-0}
NVF=6
cni_topology 0
cni_vfs "$NVF"
POD=$(cni_pod pod)
S="$TMP/sys"
# the sysfs tree is the node's (its CNI settings): the networks below name the same root
node_conf "\"sysfs\":\"$S\""
DEV=devices/pci0000:3a/0000:3a:00.0
trap 'ufm_stop; cni_cleanup' EXIT
declare -A GUID BDF
for ((k = 0; k < NVF; k++)); do
	bdf=$(printf '0000:3b:00.%d' $((k + 2))) nd="vf$((10 + k))" rdma="mlx5_$((k + 2))" g=$(printf '0002c9030021%04x' $((0x6e70 + k)))
	d="$S/$DEV/$bdf"
	mkdir -p "$d/net/$nd" "$S/bus/pci/devices" "$S/class/net" "$S/bus/pci/drivers/mlx5_core" "$S/class/infiniband" \
		"$d/infiniband/$rdma/ports/1/gids"
	ln -s "../../../$DEV/$bdf" "$S/bus/pci/devices/$bdf"
	ln -s "../../$DEV/$bdf/net/$nd" "$S/class/net/$nd"
	ln -s "../../../$bdf" "$d/net/$nd/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$d/driver"
	ln -s "../../$DEV/$bdf/infiniband/$rdma" "$S/class/infiniband/$rdma"
	echo "fe80:0000:0000:0000:${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}" >"$d/infiniband/$rdma/ports/1/gids/0"
	GUID[$k]=$g BDF[$k]=$bdf
done
ufm_certs "$TMP/pki"
mkdir -p "$TMP/secret" && printf admin >"$TMP/secret/username" && printf 123456 >"$TMP/secret/password"
ufm_start "$TMP/pki" "$HOST_NS"
FABRICS="$TMP/fabrics.json"
printf '{"stateDir":"%s/state","fabrics":{"rail0":{"ufm":"%s","credentials":"%s/secret","ca":"%s/pki/ca.pem","timeoutSeconds":1}}}' \
	"$TMP" "$UFM_URL" "$TMP" "$TMP" >"$FABRICS"
conf() { # conf K VERSION
	printf '{"cniVersion":"%s","name":"churn","type":"rdmak-cni","link":"hostdev","sysfs":"%s","policyRouting":false,"deviceID":"%s","pkey":"0x8101","fabric":"rail0"}' \
		"${2:-1.0.0}" "$S" "${BDF[$1]}" >"$TMP/conf$1.json"
	echo "$TMP/conf$1.json"
}
for ((k = 0; k < NVF; k++)); do conf "$k" >/dev/null; done

# plugin CMD K ID [KILL]: rdmak-cni for VF K's attachment ID (ifname net<K>); with KILL, killed
# with -9 after 0-60 ms if still running; sets rc (137 when killed)
KILLED=0 RUNS=0
plugin() {
	local cmd=$1 k=$2 id=$3 kill=${4:-} pid
	RUNS=$((RUNS + 1))
	ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_FABRICS="$FABRICS" CNI_COMMAND="$cmd" CNI_CONTAINERID="$id" CNI_IFNAME="net$k" \
		CNI_NETNS="$POD" CNI_PATH="$CNIP" "$PLUGIN" <"$TMP/conf$k.json" >"$TMP/p.out" 2>>"$TMP/p.err" &
	pid=$!
	if [ -n "$kill" ]; then
		sleep "0.0$((RANDOM % 60 / 10))$((RANDOM % 10))"
		kill -9 "$pid" 2>/dev/null && KILLED=$((KILLED + 1))
	fi
	{ wait "$pid"; } 2>/dev/null
	rc=$?
}
# del K ID: DEL until it succeeds (a killed DEL is retried, as the runtime does); half the tries killed
del() {
	local tries=0
	while :; do
		plugin DEL "$1" "$2" $([ $((RANDOM % 2)) -eq 0 ] && echo kill)
		[ "$rc" -eq 0 ] && return 0
		tries=$((tries + 1))
		[ "$tries" -lt 20 ] || { echo "# DEL $2 keeps failing: $(cat "$TMP/p.out")"; return 1; }
	done
}

declare -A LIVE # VF index -> container ID
start=$(date +%s%N)
churns=0 adds_ok=0 adds_failed=0 down_phase=0 dels=0 fail=0 outage_adds=0 outage_tries=0
down_at=- down_ms=- up_at=- up_ms=-
while [ "$churns" -lt "$MAX" ]; do
	el=$((($(date +%s%N) - start) / 1000000))
	[ "$el" -ge $((SECONDS_BUDGET * 1000)) ] && break
	# the outage: the middle fifth of the run, in per mille of the time budget or of the churns,
	# whichever is further on
	done_pm=$((el / SECONDS_BUDGET)) && [ $((churns * 1000 / MAX)) -gt "$done_pm" ] && done_pm=$((churns * 1000 / MAX))
	if [ "$down_phase" -eq 0 ] && [ "$done_pm" -ge 400 ]; then
		ufm_ctl 'down?mode=reset' POST >/dev/null; down_phase=1 down_at=$churns down_ms=$el
	elif [ "$down_phase" -eq 1 ] && [ "$done_pm" -ge 600 ]; then
		ufm_ctl up POST >/dev/null; down_phase=2 up_at=$churns up_ms=$el
	fi
	k=$((RANDOM % NVF))
	if [ -n "${LIVE[$k]:-}" ]; then
		del "$k" "${LIVE[$k]}" || fail=1
		unset "LIVE[$k]"
		dels=$((dels + 1))
		churns=$((churns + 1))
		continue
	fi
	id="c$RANDOM$churns"
	[ "$down_phase" -eq 1 ] && outage_tries=$((outage_tries + 1))
	plugin ADD "$k" "$id" $([ $((RANDOM % 3)) -eq 0 ] && echo kill)
	if [ "$rc" -eq 0 ]; then
		LIVE[$k]=$id
		adds_ok=$((adds_ok + 1))
		[ "$down_phase" -eq 1 ] && outage_adds=$((outage_adds + 1))
	else
		adds_failed=$((adds_failed + 1))
		del "$k" "$id" || fail=1
		churns=$((churns + 1))
	fi
done
elapsed=$((($(date +%s%N) - start) / 1000000))
[ "$down_phase" -eq 1 ] && ufm_ctl up POST >/dev/null && up_at=$churns up_ms=$elapsed
echo "# $churns churns in $elapsed ms ($((elapsed / (churns > 0 ? churns : 1))) ms each): $adds_ok ADDs succeeded, $adds_failed failed or killed (then DEL), $dels DELs of live attachments, $RUNS plugin runs of which $KILLED killed with -9; ${#LIVE[@]} attachments live at the end"
echo "# UFM down from churn $down_at ($down_ms ms) to churn $up_at ($up_ms ms): $outage_tries ADDs tried then"
ok "$fail" "every DEL succeeded within 20 tries"
ok $([ "$down_phase" -ge 1 ] && echo 0 || echo 1) "the outage happened during the run"
ok $([ "$outage_tries" -gt 0 ] && echo 0 || echo 1) "ADDs were tried while UFM was down ($outage_tries)"
is "$outage_adds" 0 "no ADD succeeded while UFM was down"
ok $([ "$churns" -ge "$MIN" ] && echo 0 || echo 1) "at least CHURN_MIN ($MIN) churns done ($churns)"
# the runtime's GC, with the live attachments as valid ones
valid=$(for k in "${!LIVE[@]}"; do printf '{"containerID":"%s","ifname":"net%s"},' "${LIVE[$k]}" "$k"; done | sed 's/,$//')
"$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["cni.dev/valid-attachments"]=json.loads(sys.argv[2]); print(json.dumps(c))' \
	"$(conf 0 1.1.0)" "[$valid]" >"$TMP/gc.json"
ip netns exec "$HOST_NS" env -i PATH="$PATH" RDMAK_CNI_CONFIG="$RDMAK_CNI_CONFIG" RDMAK_FABRICS="$FABRICS" CNI_COMMAND=GC CNI_PATH="$CNIP" "$PLUGIN" <"$TMP/gc.json" >"$TMP/gc.out" 2>&1
is "$?" 0 "CNI GC"
want=$(for k in "${!LIVE[@]}"; do echo "${GUID[$k]}"; done | sort | tr '\n' ' ' | sed 's/ *$//')
is "$(ufm_guids 0x101 | tr '\n' ' ' | sed 's/ *$//')" "$want" "the partition holds exactly the ${#LIVE[@]} live attachments' GUIDs"
is "$(find "$TMP/state/churn" -name '*:*' -type f | wc -l)" "${#LIVE[@]}" "one record per live attachment, none of a dead one"
is "$(ls "$TMP/state/.fabric/rail0/journal" 2>/dev/null | grep -vc '^\.')" 0 "the journal is empty"
run ip netns exec "$HOST_NS" "$RDMAK" fabric check --fabrics "$FABRICS"
is "$rc" 0 "rdmak fabric check agrees"
[ "$rc" -eq 0 ] || echo "#   $out $err"
is "$(ufm_ctl dump | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["calls"]["remove_deprecated"])')" 0 "no removal through the deprecated endpoint"
done_testing
