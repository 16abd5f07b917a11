#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A snapshot taken by `rdmak snapshot` on a real machine (a cloud VM with one H100, ib_core and
# mlx5 built into its kernel, no RDMA device): the model reads a real kernel's sysfs as the
# fixtures assume (GPU class/vendor, built-in modules, an empty class/infiniband).
. "$(dirname "$0")/../lib.sh"

mkdir "$TMP/h100" && tar -xzf "$TOP/tests/fixtures/real/h100-vm.tar.gz" -C "$TMP/h100"
ok $? "the real snapshot extracts"
run "$RDMAK" list --root "$TMP/h100"
ok $rc "list on the real snapshot exits 0"
like "$out" 'no RDMA devices on this node .*class/infiniband is empty' "an empty class/infiniband is reported as such"
run "$RDMAK" list --root "$TMP/h100" --json
echo "$out" > "$TMP/h.json"
is "$(jget "$TMP/h.json" "[(g['name'], g['device'], g['pci']) for g in d['gpus']]")" '[["GPU0", "0x2330", "0000:00:06.0"]]' "the H100 (10de:2330, class 0x030200) is GPU0"
is "$(jget "$TMP/h.json" "d['kernel']['modules']['ib_core']")" "builtin" "ib_core built in: a module dir without initstate"
is "$(jget "$TMP/h.json" "d['kernel']['modules']['nvidia']")" "loaded" "nvidia loaded (initstate live)"
is "$(jget "$TMP/h.json" "d['kernel']['netns_mode']")" "shared" "netns_mode read from a built-in ib_core's parameters"
is "$(jget "$TMP/h.json" "[(n['name'], n['pci']) for n in d['netdevs'] if n['name']=='eth0']")" '[["eth0", "0000:00:03.0"]]' "a virtio netdev is tied to its PCI function through virtio2/"
done_testing
