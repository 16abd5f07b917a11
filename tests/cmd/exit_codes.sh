#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The exit codes of snapshot, plugin, bench, vf, exporter, convert, fabric and dra (their *_EXIT_* constants) as
# their users see them: the codes each role's --help "Exit:" sentence names are the codes its page
# names (README's snapshot section, docs/plugin.md, docs/bench.md, docs/convert.md), and each of
# them is what a real invocation returns. A code added, dropped or renumbered in one place and not
# the others fails. (Every other test checks single cases; this one checks the lists against each other.)
. "$(dirname "$0")/../lib.sh"
CAP=$TOP/tests/captures/bench
A100=$NODES/a100-ib-bond
PCFG=$TOP/examples/plugin/shared-seed003.json

# exit_sentence FILE START-REGEX: the codes the sentence starting at the first match names, as
# "0 1 2". A code opens a clause of that sentence (`N` or N, then a word); parenthesised asides
# (where "port 1" or "e.g." may stand) are dropped first.
exit_sentence() {
	"$PY" - "$1" "$2" <<-'EOF'
	import re, sys
	text = open(sys.argv[1]).read()
	m = re.search(sys.argv[2], text)
	if not m:
	    sys.exit("no match for " + sys.argv[2])
	s = text[m.start():].replace("e.g.", "eg")
	s = re.split(r"\.(\s|$)", s, maxsplit=1)[0]
	s = re.sub(r"\([^()]*\)", "", s, flags=re.S)
	s = re.sub(r"^Exit( codes)?:?\s*", "", s)
	print(" ".join(sorted({c for c in re.findall(r"(?:^|,)\s*`?([0-9])`?\s+\w", s)})))
	EOF
}
# check ROLE DOC DOC-REGEX CODE:COMMAND...: --help and DOC name the same codes, each produced
check() {
	local role=$1 doc=$2 re=$3 want got seen="" c
	shift 3
	"$RDMAK" "$role" --help >"$TMP/$role.help"
	want=$(exit_sentence "$TMP/$role.help" '(?m)^Exit:')
	got=$(exit_sentence "$TOP/$doc" "$re")
	is "$got" "$want" "$role: $doc names the exit codes --help names ($want)"
	for c in "$@"; do
		run bash -c "${c#*:}"
		c=${c//"'"/} c=${c//$RDMAK/rdmak} c=${c//$TMP/\$TMP} c=${c//$TOP\//}
		is "$rc" "${c%%:*}" "$role: ${c#*:} exits ${c%%:*}"
		seen="$seen $rc"
	done
	is "$(printf '%s\n' $seen | sort -u | tr '\n' ' ' | sed 's/ $//')" "$want" "$role: every documented code is produced, no other"
}

check snapshot README.md 'Exit 0 written' \
	"0:'$RDMAK' snapshot --root '$A100' -o '$TMP/a.tar.gz'" \
	"0:'$RDMAK' snapshot --help" \
	"1:'$RDMAK' snapshot --root '$A100' -o '$TMP/none/a.tar'" \
	"1:'$RDMAK' snapshot --root '$TMP/nowhere' -o '$TMP/b.tar'" \
	"2:'$RDMAK' snapshot --root '$A100'" \
	"2:'$RDMAK' snapshot --bogus -o '$TMP/c.tar'" \
	"2:'$RDMAK' snapshot -o '$TMP/d.tar' extra"
check dra docs/dra.md 'Exit codes: `0` done' \
	"0:'$RDMAK' dra --dry-run --root '$A100' --node-name a" \
	"0:'$RDMAK' dra --help" \
	"1:'$RDMAK' dra --dry-run --root '$TMP/nowhere' --node-name a" \
	"1:'$RDMAK' dra --dry-run --root '$A100' --node-name a >/dev/full" \
	"1:env -u KUBERNETES_SERVICE_HOST '$RDMAK' dra --once --node-name a --root '$A100'" \
	"2:'$RDMAK' dra --bogus" \
	"2:'$RDMAK' dra --root '$A100'" \
	"2:'$RDMAK' dra --once --node-name a --kubeconfig '$TMP/none.yaml'" \
	"2:'$RDMAK' dra --dry-run --root '$A100' --node-name Node_A"
check plugin docs/plugin.md 'Exit codes: `0`' \
	"0:'$RDMAK' plugin --dry-run --root '$A100' --config '$PCFG'" \
	"0:'$RDMAK' plugin --help" \
	"1:'$RDMAK' plugin --dry-run --root '$TMP/nowhere' --config '$PCFG'" \
	"1:'$RDMAK' plugin --dry-run --root '$A100' --config '$PCFG' >/dev/full" \
	"2:'$RDMAK' plugin --bogus" \
	"2:'$RDMAK' plugin --dry-run --root '$A100' --config '$TMP/none.json'"
check bench docs/bench.md '`0` pass' \
	"0:'$RDMAK' bench judge --root '$NODES/a6-sriov-client' '$CAP/A6-client.txt'" \
	"0:'$RDMAK' bench --help" \
	"0:'$RDMAK' bench k8s --resource rdma/x --node a --node b" \
	"1:'$RDMAK' bench judge '$CAP/F5.txt'" \
	"2:'$RDMAK' bench judge --min-gbps 50 '$CAP/F5.txt'" \
	"3:'$RDMAK' bench frobnicate" \
	"3:'$RDMAK' bench judge '$TMP/none.txt'" \
	"3:'$RDMAK' bench k8s --node a --node b" \
	"4:'$RDMAK' bench judge --root '$NODES/a6-sriov-client' '$CAP/edited-above-ceiling.txt'" \
	"4:'$RDMAK' bench judge '$CAP/edited-bw-header-lat-table.txt'"
check vf docs/vf.md 'Exit codes: `0` nothing' \
	"0:printf '{\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeSelector\":{},\"resourceName\":\"r\",\"numVfs\":12,\"nicSelector\":{\"rootDevices\":[\"0000:1b:00.0\"]}}}' >'$TMP/same.json'; '$RDMAK' vf plan --policy '$TMP/same.json' --root '$NODES/cx5-roce-sriov'" \
	"0:'$RDMAK' vf --help" \
	"1:'$RDMAK' vf plan --policy '$TOP/tests/fixtures/vf/operator-basic-dpdk-vfio.yaml' --root '$NODES/cx5-roce-sriov'" \
	"1:'$RDMAK' vf plan --policy '$TMP/none.yaml' --root '$NODES/cx5-roce-sriov'" \
	"2:'$RDMAK' vf plan --root '$NODES/cx5-roce-sriov'" \
	"2:'$RDMAK' vf frobnicate" \
	"3:printf '{\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeSelector\":{},\"resourceName\":\"r\",\"numVfs\":4,\"nicSelector\":{\"rootDevices\":[\"0000:1b:00.0\"]}}}' >'$TMP/p.json'; '$RDMAK' vf plan --policy '$TMP/p.json' --root '$NODES/cx5-roce-sriov'" \
	"4:printf '{\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeSelector\":{},\"resourceName\":\"r\",\"numVfs\":40,\"nicSelector\":{\"rootDevices\":[\"0000:1b:00.0\"]}}}' >'$TMP/q.json'; '$RDMAK' vf plan --policy '$TMP/q.json' --root '$NODES/cx5-roce-sriov'" \
	"4:'$RDMAK' vf apply --policy '$TMP/q.json' --root '$NODES/cx5-roce-sriov'" \
	"5:'$RDMAK' vf apply --policy '$TMP/p.json' --root '$NODES/cx5-roce-sriov' --checkpoint '$TOP/tests/fixtures/vf/kubelet_internal_checkpoint'" \
	"6:'$RDMAK' vf plan --policy '$TOP/tests/fixtures/vf/seed004-gpu-nic-policies.yaml' --root '$NODES/cx5-roce-sriov'" \
	"6:'$RDMAK' vf apply --policy '$TOP/tests/fixtures/vf/seed004-gpu-nic-policies.yaml' --root '$NODES/cx5-roce-sriov'"
check exporter docs/exporter.md '(?m)^Exit: 0 stopped' \
	"0:'$RDMAK' exporter --once --root '$A100' >/dev/null" \
	"0:'$RDMAK' exporter --help" \
	"1:'$RDMAK' exporter --once --root '$TMP/nowhere'" \
	"1:'$RDMAK' exporter --once --root '$A100' >/dev/full" \
	"2:'$RDMAK' exporter --bogus" \
	"2:'$RDMAK' exporter --tls-cert '$TMP/none.pem'"
CFX=$TOP/tests/fixtures/convert
check convert docs/convert.md 'Exit codes: `0`' \
	"0:'$RDMAK' convert '$CFX/seed003-ncp-shared.yaml'" \
	"0:'$RDMAK' convert --help" \
	"1:'$RDMAK' convert '$CFX/seed004-ibsriov.yaml'" \
	"2:'$RDMAK' convert --bogus '$CFX/seed004-ibsriov.yaml'" \
	"2:'$RDMAK' convert" \
	"3:'$RDMAK' convert '$TMP/none.yaml'" \
	"3:'$RDMAK' convert '$CFX/seed003-ncp-shared.yaml' >/dev/full"
# fabric: the UFM stand-in (tests/js/ufm.mjs) for "consistent" and "differs"; a port nothing
# listens on for "unreachable"; a live record (its netns /proc/self/ns/net) whose GUID UFM lacks
if command -v node >/dev/null && command -v openssl >/dev/null; then
	. "$TOP/tests/lib-ufm.sh"
	ufm_certs "$TMP/pki" && ufm_start "$TMP/pki" ""
	trap 'ufm_stop; rm -rf "$TMP"' EXIT
	mkdir -p "$TMP/sec" "$TMP/fst/fab" && printf admin >"$TMP/sec/username" && printf 123456 >"$TMP/sec/password"
	# ffile FILE STATEDIR URL: a node's fabrics file naming fabric "fab"
	ffile() { printf '{"stateDir":"%s","fabrics":{"fab":{"ufm":"%s","credentials":"%s/sec","ca":"%s/pki/ca.pem"}}}' "$TMP/$2" "$3" "$TMP" "$TMP" >"$TMP/$1"; }
	ffile ok.json est "$UFM_URL"; ffile live.json fst "$UFM_URL"; ffile down.json est https://127.0.0.1:1
	printf '{"netns":"/proc/self/ns/net","hostName":"vf10","pkey":33025,"fabricGuid":"0002c90300216e70","fabric":"fab"}' >"$TMP/fst/fab/c1:net1"
	check fabric docs/fabric.md 'Exit codes: `0` done' \
		"0:'$RDMAK' fabric --help" \
		"0:'$RDMAK' fabric check --fabrics '$TMP/ok.json'" \
		"0:'$RDMAK' fabric list --fabrics '$TMP/live.json'" \
		"1:'$RDMAK' fabric check --fabrics '$TMP/down.json'" \
		"1:'$RDMAK' fabric list --fabrics '$TMP/live.json' >/dev/full" \
		"2:'$RDMAK' fabric frobnicate" \
		"2:'$RDMAK' fabric gc --fabrics '$TMP/none.json'" \
		"2:'$RDMAK' fabric gc --config '$TMP/ok.json'" \
		"3:'$RDMAK' fabric check --fabrics '$TMP/live.json'"
else
	skip "needs node and openssl (the UFM stand-in)" "fabric exit codes"
fi
done_testing
