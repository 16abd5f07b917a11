#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad configurations and environments given to rdmak-cni ADD: each refused with the spec's
# code (2 unsupported key, 4 environment, 6 not JSON, 7 invalid value), its error object
# naming the key (and for code 2 its value), exit 1, nothing on stdout but that object, and
# nothing changed in the host, the pod or the records. Also IPoIB on a master that is not one.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lib-cni-direct.sh"

why=$(direct_requirements)
if [ -n "$why" ]; then
	skip "$why" "rdmak-cni configuration refusals"
	done_testing
	exit
fi
cni_topology 1
POD=$(cni_pod pod)
IPAM="{\"type\":\"host-local\",\"ranges\":$(range_json 0 4),\"dataDir\":\"$TMP/store-hl\"}"
base='"cniVersion":"1.0.0","name":"rail0","type":"rdmak-cni","stateDir":"'"$TMP/state"'"'
before=$(snap_all "$POD")

# refuse CODE FIELD-REGEX DESC CONF-KEYS [ENV...]: ADD net1 refused, naming the field, nothing changed
refuse() {
	local code=$1 field=$2 desc=$3 keys=$4; shift 4
	cni ADD c1 net1 "$POD" "{${BASE:-$base},$keys}" "$@"
	is "$rc/$(jout 'd["code"]')" "1/$code" "$desc: exit 1, code $code"
	like "$(jout 'd["msg"] + " | " + d.get("details", "")')" "$field" "$desc: names $field"
	is "$(printf '%s' "$out" | wc -l)" 0 "$desc: one line on stdout, the error object"
	is "$(snap_all "$POD")" "$before" "$desc: nothing changed"
}
mv='"link":"macvlan","master":"rdma0","ipam":'"$IPAM"
refuse 7 "link: missing, and nothing names one" "no link, and no key to infer one from" '"mtu":9000'
refuse 7 "link: missing, and master .* and device .* name different kinds" "no link, master and device" '"master":"rdma0","device":"vf1"'
refuse 7 "vlan: only for link hostdev: a setting of an SR-IOV VF" "sriov-cni's vlan on a macvlan" "$mv"',"vlan":2222'
refuse 7 "vlanQoS: needs vlan" "sriov-cni's vlanQoS without vlan (its LoadConf refuses it too)" '"deviceID":"0000:3b:00.2","vlanQoS":3'
refuse 2 "linkInContainer: unsupported key \\(value: true\\)" "OpenShift macvlan's linkInContainer true" "$mv"',"linkInContainer":true'
refuse 7 'link: "tap" is not a link kind' "an unknown link kind" '"link":"tap","master":"rdma0"'
refuse 7 "master: missing" "macvlan without master" '"link":"macvlan"'
refuse 7 'master: "\.\./x" is not a network interface name' "a master name with a slash" '"link":"macvlan","master":"../x"'
refuse 7 'master: .* is not a network interface name' "a master name too long" '"link":"macvlan","master":"averyveryverylongname"'
refuse 7 'mode: "shared" is not a macvlan mode' "an unknown macvlan mode" "$mv"',"mode":"shared"'
refuse 7 "mtu: 10 is out of range" "an MTU too small" "$mv"',"mtu":10'
refuse 7 "mtu: expected an integer" "an MTU as a string" "$mv"',"mtu":"9000"'
refuse 7 "mac: 01:00:5e:00:00:01 is a multicast address" "a multicast MAC" "$mv"',"mac":"01:00:5e:00:00:01"'
refuse 7 'mac: "zz" is not a MAC address' "a MAC that is not one" "$mv"',"mac":"zz"'
refuse 7 "policyRouting: expected true or false" "policyRouting as a string" "$mv"',"policyRouting":"yes"'
refuse 7 "rdmaIsolation: only for link hostdev" "rdmaIsolation on macvlan" "$mv"',"rdmaIsolation":true'
refuse 7 "tableBase .* reserved" "a tableBase putting net1 on table 254 (main)" "$mv"',"tableBase":253'
refuse 7 "rulePriority: 40000 is out of range" "a rule priority past main's" "$mv"',"rulePriority":40000'
refuse 7 'sysfs: "sys" is not an absolute path' "a relative sysfs root" "$mv"',"sysfs":"sys"'
BASE=${base%,\"stateDir\"*} refuse 7 'stateDir: "/var/lib/../x" is not an absolute path' "a stateDir with .." "$mv"',"stateDir":"/var/lib/../x"'
refuse 7 'logLevel: "loud" is not a level' "an unknown log level" "$mv"',"logLevel":"loud"'
refuse 2 'bridge: unsupported key \(value: "cni0"\)' "an unknown key, with its value" "$mv"',"bridge":"cni0"'
refuse 2 "ipMasq: unsupported key .*no masquerading" "ipMasq" "$mv"',"ipMasq":true'
refuse 7 "pkey: only for links ipoib and hostdev" "pkey on macvlan" "$mv"',"pkey":"0x8001"'
refuse 7 "guid: only for link hostdev" "guid on macvlan" "$mv"',"guid":"00:02:c9:03:00:21:6e:70"'
hd='"link":"hostdev","ipam":'"$IPAM"
refuse 7 "deviceID: missing" "hostdev with neither device nor deviceID" "$hd"
refuse 7 "device: give device or deviceID, not both" "hostdev with both" "$hd"',"device":"vf1","deviceID":"0000:3b:00.2"'
refuse 7 'deviceID: "3b:00" is not a PCI address' "a deviceID that is not a PCI address" "$hd"',"deviceID":"3b:00"'
refuse 7 'runtimeConfig.deviceID: "\.\./\.\./etc" is not a PCI address' "a runtimeConfig.deviceID with a path in it" "$hd"',"runtimeConfig":{"deviceID":"../../etc"}'
refuse 7 "pciBusID: 0000:3b:00.3 differs" "deviceID and pciBusID that disagree" "$hd"',"deviceID":"0000:3b:00.2","pciBusID":"0000:3b:00.3"'
refuse 7 "guid: 00:00:00:00:00:00:00:00 cannot be a port's GUID" "an all-zero GUID" "$hd"',"deviceID":"0000:3b:00.2","guid":"00:00:00:00:00:00:00:00"'
refuse 7 'guid: "00:02:c9" is not a GUID' "a GUID that is not one" "$hd"',"deviceID":"0000:3b:00.2","guid":"00:02:c9"'
refuse 7 "pkey: 0x8000 names no partition" "pkey 0x8000" "$hd"',"deviceID":"0000:3b:00.2","pkey":"0x8000"'
refuse 7 "mode: only for link macvlan" "mode on hostdev" "$hd"',"device":"vf1","mode":"bridge"'
refuse 7 "mac: an IPoIB address is the port's GID" "mac on ipoib" '"link":"ipoib","master":"rdma0","mac":"02:00:00:00:00:01"'
refuse 101 "master rdma0 is link type 1, not InfiniBand" "ipoib on an Ethernet master" '"link":"ipoib","master":"rdma0","pkey":"0x8001","ipam":'"$IPAM"
refuse 101 "master rdma7: no such netdev" "a master the host lacks" '"link":"macvlan","master":"rdma7","ipam":'"$IPAM"
refuse 4 "CNI_IFNAME" "an interface name with a slash" "$mv" CNI_IFNAME=a/b
refuse 4 "CNI_NETNS .* is the plugin's own network namespace" "the host's own netns as the pod's" "$mv" CNI_NETNS=/proc/self/ns/net
refuse 3 "no such network namespace" "a netns that is gone" "$mv" CNI_NETNS=/run/netns/$CNI_TAG-none
# a path that is there but is no network namespace: named as what it is, and a FIFO is not
# waited on (opening one read-only blocks until a writer comes)
: >"$TMP/ns-file" && mkdir "$TMP/ns-dir" && mkfifo "$TMP/ns-fifo"
for kind in "regular file:ns-file" "directory:ns-dir" "FIFO:ns-fifo"; do
	CNI_TIMEOUT=20 refuse 4 "CNI_NETNS $TMP/${kind#*:} is a ${kind%%:*}, not a network namespace \\(nsfs\\)" \
		"a ${kind%%:*} as CNI_NETNS" "$mv" CNI_NETNS="$TMP/${kind#*:}"
done
CNI_TIMEOUT=20 refuse 4 "CNI_NETNS /proc/self/ns/uts is a namespace of another kind" "a UTS namespace as CNI_NETNS" \
	"$mv" CNI_NETNS=/proc/self/ns/uts
# DEL finds nothing to undo in what is no namespace: it succeeds, and does not wait either
CNI_TIMEOUT=20 cni DEL c1 net1 "$TMP/ns-fifo" "{$base,$mv}"
is "$rc" 0 "DEL with a FIFO as CNI_NETNS does not hang, and succeeds"
BASE=${base/1.0.0/2.0.0} refuse 1 "incompatible CNI version" "an unknown cniVersion" "$mv"

cni ADD c1 net1 "$POD" '{"cniVersion":"1.0.0",'
is "$rc/$(jout 'd["code"]')" "1/6" "stdin that is not JSON: code 6"
is "$(snap_all "$POD")" "$before" "nothing changed"
cni ADD c1 net1 "$POD" "{$mv}" CNI_COMMAND=
is "$(jout 'd["code"]')" 4 "no CNI_COMMAND: code 4"
is "$(files_under "$TMP/store-hl" | grep -cE '/[0-9a-f.:]+$')" 0 "no address was ever taken from the IPAM"

done_testing
