#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The formats ib_core and the network core give the sysfs attributes the hardware model reads
(the same for every driver), and ib_core's default RoCE GID rule, checked on one or more roots:
the live kernel's (tests/vm/samples.sh: / in the guest, so each format is the kernel's own) and
the generated sample nodes' (tests/cmd/sample_formats.sh). One TAP-like line per check:
"ok DESC" / "not ok DESC" and "#   " details.
    python3 tests/lib/sysfs_formats.py LABEL ROOT [ROOT...]   (ROOT "" is the live /sys)"""
import glob
import os
import re
import sys

H4 = r"[0-9a-f]{4}"
FORMATS = [  # (glob under a root's sys/, the kernel's format)
    ("class/infiniband/*/node_type", r"^[1-4]: (CA|switch|router|RNIC)$"),
    ("class/infiniband/*/node_guid", rf"^{H4}:{H4}:{H4}:{H4}$"),
    ("class/infiniband/*/sys_image_guid", rf"^{H4}:{H4}:{H4}:{H4}$"),
    ("class/infiniband/*/ports/*/state", r"^[0-5]: (NOP|DOWN|INIT|ARMED|ACTIVE|ACTIVE_DEFER)$"),
    ("class/infiniband/*/ports/*/phys_state", r"^[0-7]: (<unknown>|Sleep|Polling|Disabled|PortConfigurationTraining|LinkUp|LinkErrorRecovery|Phy Test)$"),
    ("class/infiniband/*/ports/*/rate", r"^\d+(\.\d)? Gb/sec \((1|2|4|8|12)X [A-Z0-9]+\)$"),
    ("class/infiniband/*/ports/*/lid", r"^0x[0-9a-f]+$"),
    ("class/infiniband/*/ports/*/sm_lid", r"^0x[0-9a-f]+$"),
    ("class/infiniband/*/ports/*/cap_mask", r"^0x[0-9a-f]{8}$"),
    ("class/infiniband/*/ports/*/lid_mask_count", r"^\d+$"),
    ("class/infiniband/*/ports/*/sm_sl", r"^\d+$"),
    ("class/infiniband/*/ports/*/link_layer", r"^(InfiniBand|Ethernet)$"),
    ("class/infiniband/*/ports/*/gids/*", rf"^{H4}(:{H4}){{7}}$"),
    ("class/infiniband/*/ports/*/hw_counters/*", r"^\d+$"),
    ("class/infiniband_verbs/abi_version", r"^6$"),
    # 231 for the first 32, a dynamic major beyond (cx7-rail-1016vf's 510)
    ("class/infiniband_verbs/uverbs*/dev", r"^\d+:\d+$"),
    ("class/infiniband_verbs/uverbs*/abi_version", r"^\d+$"),
    ("class/net/*/operstate", r"^(unknown|notpresent|down|lowerlayerdown|testing|dormant|up)$"),
    ("class/net/*/mtu", r"^\d+$"),
    ("class/net/*/type", r"^\d+$"),
    ("class/net/*/ifindex", r"^\d+$"),
    ("class/net/*/addr_len", r"^\d+$"),
    ("class/net/*/dev_id", r"^0x[0-9a-f]+$"),
    ("class/net/*/dev_port", r"^\d+$"),
    ("class/net/*/flags", r"^0x[0-9a-f]+$"),
    ("class/net/*/address", r"^[0-9a-f]{2}(:[0-9a-f]{2})*$"),
    ("class/net/*/bonding/mode", r"^(balance-rr 0|active-backup 1|balance-xor 2|broadcast 3|802\.3ad 4|balance-tlb 5|balance-alb 6)$"),
    ("class/net/*/bonding/slaves", r"^(\S+( \S+)*)?$"),
    ("class/net/*/bonding/miimon", r"^\d+$"),
    ("class/net/*/bonding/xmit_hash_policy", r"^(layer2|layer3\+4|layer2\+3|encap2\+3|encap3\+4|vlan\+srcmac) \d$"),
]
def values(root, g):
    for p in sorted(glob.glob(f"{root}/sys/{g}")):
        if os.path.isfile(p) and not p.endswith("/lifespan"):
            try:
                v = open(p).read().rstrip("\n")
            except OSError:
                continue  # EINVAL: an empty GID's attributes, a down netdev's carrier
            if not p.split("/")[-2] == "gids" or v != "0000:0000:0000:0000:0000:0000:0000:0000":
                yield p, v


# ib_core's default GID (roce_gid_mgmt): GID 0 of a RoCE port is fe80:: and the EUI-64 of the
# MAC of the netdev that owns it
def eui_gid(root, port):
    try:
        g0 = open(f"{port}/gids/0").read().strip()
        nd = open(f"{port}/gid_attrs/ndevs/0").read().strip()
        mac = [int(x, 16) for x in open(f"{root}/sys/class/net/{nd}/address").read().strip().split(":")]
    except OSError as e:
        return None, str(e)
    mac[0] ^= 2
    want = "fe80:0000:0000:0000:%02x%02x:%02xff:fe%02x:%02x%02x" % tuple(mac)
    return g0 == want, (port, g0, want)
def roce_ports(root):
    for p in sorted(glob.glob(f"{root}/sys/class/infiniband/*/ports/*")):
        if open(p + "/link_layer").read().strip() == "Ethernet":
            yield p


def check(cond, desc, detail=None):
    print(("ok " if cond else "not ok ") + desc, flush=True)
    if not cond and detail is not None:
        for l in str(detail).splitlines()[:15]:
            print("#   " + l)


def main(label, roots):
    for g, fmt in FORMATS:
        n, bad = 0, []
        for r in roots:
            for p, v in values(r, g):
                n += 1
                if not re.match(fmt, v):
                    bad.append((p, v))
        check(n > 0 and not bad, f"{label}: {g} as /{fmt}/ ({n} files, {len(bad)} not)", bad[:3] or "no such file")
    got = [eui_gid(r, p) for r in roots for p in roce_ports(r)]
    check(got and all(x[0] for x in got),
          f"{label}: GID 0 of each RoCE port is fe80:: + the EUI-64 of its netdev's MAC ({len(got)} ports)",
          [x for x in got if not x[0]][:3] or "no RoCE port")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
