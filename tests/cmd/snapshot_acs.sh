#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The doctor's PCI config-space read goes through the hardware context, so a snapshot captures
# the bridges' config space and gpudirect.acs says on the extracted snapshot what it said on
# the node.
. "$(dirname "$0")/../lib.sh"
cp -a "$NODES/a100-ib-bond" "$TMP/n"
# every PCI function gets a 4 KiB config space with an ACS capability at 0x100 whose control
# has P2P Request and Completion Redirect on (0x000c)
"$PY" - "$TMP/n/sys/devices" <<'PY'
import os, sys
cfg = bytearray(4096)
cfg[0x100:0x104] = (0x000d | (1 << 16)).to_bytes(4, 'little')
cfg[0x106:0x108] = (0x000c).to_bytes(2, 'little')
for dp, dn, fn in os.walk(sys.argv[1]):
    if os.path.basename(dp).count(':') == 2 and 'vendor' in fn:
        open(os.path.join(dp, 'config'), 'wb').write(cfg)
PY
acs() { "$RDMAK" doctor --root "$1" --check gpudirect.acs --json | "$PY" -c 'import json,sys; print(" ".join(sorted(f["status"] for f in json.load(sys.stdin))))'; }
on_node=$(acs "$TMP/n")
like "$on_node" "warn" "on the tree: gpudirect.acs sees the ACS redirect"
run "$RDMAK" snapshot --root "$TMP/n" -o "$TMP/s.tar"
is "$rc" 0 "snapshot"
tar -tf "$TMP/s.tar" | grep -q '/config$'; ok $? "the snapshot holds config space"
mkdir "$TMP/x" && tar -xf "$TMP/s.tar" -C "$TMP/x"
is "$(acs "$TMP/x")" "$on_node" "on the extracted snapshot: gpudirect.acs says the same"
done_testing
