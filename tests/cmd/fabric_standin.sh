#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The UFM stand-in (tests/js/ufm.mjs) itself, over HTTPS with curl: what the fabric tests rely on
# it to do as NVIDIA's PKey GUIDs REST API reference describes (add with membership, list, get one
# with guids_data, remove through the current DELETE and the deprecated POST, version), its
# refusals (400 for a malformed pkey or GUID, 401 without credentials or with wrong ones, Basic
# under /ufmRest and the token under /ufmRestV3), and its outage modes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-ufm.sh"
command -v node >/dev/null && command -v openssl >/dev/null && command -v curl >/dev/null || {
	skip "needs node, openssl and curl" "UFM stand-in"; done_testing; exit; }
ufm_certs "$TMP/pki"
ufm_start "$TMP/pki" ""
trap 'ufm_stop; rm -rf "$TMP"' EXIT
api() { # api METHOD PATH [BODY] [AUTH-ARGS...]: "<code> <body>"
	local m=$1 p=$2 b=${3:-}; shift 3 || shift $#
	[ $# -gt 0 ] || set -- -u admin:123456
	curl -s --cacert "$TMP/pki/ca.pem" -X "$m" ${b:+-d "$b"} "$@" -w ' %{http_code}' "$UFM_URL$p" | sed -E 's/^(.*) ([0-9]{3})$/\2 \1/'
}
G1=0002c90300216e70 G2=0002c90300216e71
is "$(api GET /ufmRest/app/ufm_version)" '200 {"ufm_release_version":"6.19.3"}' "version"
is "$(api POST /ufmRest/resources/pkeys "{\"pkey\":\"0x8001\",\"guids\":[\"$G1\"]}" | cut -c1-3)" 400 "pkey 0x8001 is refused: a pkey is below 0x7fff, membership is apart"
is "$(api POST /ufmRest/resources/pkeys '{"pkey":"0x101","guids":["12345"]}' | cut -c1-3)" 400 "a GUID of 5 characters is refused"
is "$(api POST /ufmRest/resources/pkeys "{\"pkey\":\"0x101\",\"guids\":[\"$G1\"],\"membership\":\"half\"}" | cut -c1-3)" 400 "membership other than full or limited is refused"
is "$(api POST /ufmRest/resources/pkeys "{\"pkey\":\"0x101\",\"guids\":[\"$G1\"],\"index0\":true}")" '200 {}' "add a GUID (full by default) to a new pkey"
is "$(api POST /ufmRest/resources/pkeys "{\"pkey\":\"0x0101\",\"guids\":[\"$G2\"],\"membership\":\"limited\"}")" '200 {}' "add another, limited, to the same pkey spelled 0x0101"
is "$(api GET '/ufmRest/resources/pkeys/0x101?guids_data=true')" \
	"200 {\"partition_name\":\"api_pkey_0x101\",\"ip_over_ib\":true,\"guids\":[{\"guid\":\"$G1\",\"membership\":\"full\",\"index0\":true},{\"guid\":\"$G2\",\"membership\":\"limited\",\"index0\":false}]}" \
	"get one pkey with its GUIDs, membership and index0"
is "$(api GET /ufmRest/resources/pkeys)" '200 {"0x101":{"partition_name":"api_pkey_0x101","ip_over_ib":true}}' "the list without guids_data has no GUIDs"
is "$(api GET /ufmRest/resources/pkeys/0x202 | cut -c1-3)" 404 "an unknown pkey is 404"
is "$(api DELETE "/ufmRest/resources/pkeys/0x101/guids/$G1")" '200 {}' "remove through DELETE .../guids/<guid>"
is "$(api POST /ufmRest/actions/remove_guids_from_pkey "{\"pkey\":\"0x101\",\"guids\":[\"$G2\"]}")" '200 {}' "remove through the deprecated action"
is "$(ufm_guids 0x101 | wc -w)" 0 "both are gone"
is "$(ufm_ctl dump | "$PY" -c 'import json,sys; c=json.load(sys.stdin)["calls"]; print(c["remove"], c["remove_deprecated"], c["bad"])')" "1 1 3" "the dump counts current and deprecated removals and refusals apart"
is "$(api GET /ufmRest/app/ufm_version '' -H 'Accept: application/json' | cut -c1-3)" 401 "no credentials: 401"
is "$(api GET /ufmRest/app/ufm_version '' -u admin:nope | cut -c1-3)" 401 "a wrong password: 401"
is "$(api GET /ufmRestV3/app/ufm_version '' -H 'Authorization: Basic tok-123' | cut -c1-3)" 200 "the token under /ufmRestV3"
is "$(api GET /ufmRestV3/app/ufm_version '' -u admin:123456 | cut -c1-3)" 401 "user and password are not a token under /ufmRestV3"
is "$(api GET /ufmRest/app/ufm_version '' -H 'Authorization: Basic tok-123' | cut -c1-3)" 401 "nor the token user and password under /ufmRest"
curl -s --cacert "$TMP/pki/other-ca.pem" "$UFM_URL/ufmRest/app/ufm_version" >/dev/null
is "$?" 60 "curl with another CA refuses the stand-in's certificate"
is "$(ufm_ctl dump | "$PY" -c 'import json,sys; w=json.load(sys.stdin)["request_wait_ms"]; print(len(w), all(0 < x < 10000 for x in w))')" "12 True" \
	"the dump times each authorized API request (12 so far) from its connection's accept to its last byte"
ufm_ctl 'down?mode=503' POST >/dev/null
is "$(api GET /ufmRest/app/ufm_version | cut -c1-3)" 503 "down (503)"
ufm_ctl 'down?mode=reset' POST >/dev/null
is "$(api GET /ufmRest/app/ufm_version | cut -c1-3)" 000 "down (connection reset)"
ufm_ctl up POST >/dev/null
is "$(api GET /ufmRest/app/ufm_version | cut -c1-3)" 200 "up again"
done_testing
