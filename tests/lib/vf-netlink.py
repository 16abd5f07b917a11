#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The SR-IOV PF stand-in's side of the tests (RDMAK_TEST_VF_STANDIN, docs/cni.md "Testing
# without SR-IOV"), written from <linux/if_link.h>'s layouts, not from src/nl:
#   vf-netlink.py answer FILE PF_IFINDEX   the VF table's GETLINK answer, as the kernel's
#                                          rtnl_fill_vfinfo() builds it: VF 0 as a driver makes
#                                          it, VF 1 with settings of its own
#   vf-netlink.py decode FILE PF_IFINDEX   each recorded request, checked and decoded on a line
import socket, struct, sys
IFLA_IFNAME, IFLA_NUM_VF, IFLA_VFINFO_LIST, IFLA_EXT_MASK = 3, 21, 22, 29
IFLA_VF_INFO = 1
(MAC, VLAN, TX_RATE, SPOOFCHK, LINK_STATE, RATE, RSS, STATS, TRUST, NODE_GUID, PORT_GUID,
 VLAN_LIST, BROADCAST) = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
VLAN_INFO = 1
def attr(t, data): # struct nlattr + payload, NLA_ALIGNTO 4
    a = struct.pack("=HH", 4 + len(data), t) + data
    return a + b"\0" * (-len(a) % 4)
def vf(n, mac, vlan, qos, proto, mn, mx, spoof, trust, state):
    # rtnl_fill_vfinfo(): MAC, BROADCAST, VLAN, RATE, TX_RATE, SPOOFCHK, LINK_STATE,
    # RSS_QUERY_EN, TRUST, then VLAN_LIST holding one VLAN_INFO
    m = bytes.fromhex(mac.replace(":", "")) + b"\0" * 26
    body = (attr(MAC, struct.pack("=I", n) + m) + attr(BROADCAST, b"\xff" * 32) +
            attr(VLAN, struct.pack("=III", n, vlan, qos)) + attr(RATE, struct.pack("=III", n, mn, mx)) +
            attr(TX_RATE, struct.pack("=II", n, mx)) + attr(SPOOFCHK, struct.pack("=II", n, spoof & 0xffffffff)) +
            attr(LINK_STATE, struct.pack("=II", n, state)) + attr(RSS, struct.pack("=II", n, 0xffffffff)) +
            attr(TRUST, struct.pack("=II", n, trust & 0xffffffff)) +
            attr(VLAN_LIST, attr(VLAN_INFO, struct.pack("=III", n, vlan, qos) + struct.pack("!H", proto) + b"\0\0")))
    return attr(IFLA_VF_INFO, body)
def answer(pf, vfs):
    ifi = struct.pack("=BxHiII", 0, 1, pf, 0x1003, 0)
    payload = ifi + attr(IFLA_IFNAME, b"pf0\0") + attr(IFLA_NUM_VF, struct.pack("=I", len(vfs)))
    payload += attr(IFLA_VFINFO_LIST, b"".join(vfs))
    return struct.pack("=IHHII", 16 + len(payload), 16, 0, 0, 0) + payload   # RTM_NEWLINK
def attrs(b):
    while len(b) >= 4:
        ln, t = struct.unpack("=HH", b[:4])
        assert 4 <= ln <= len(b), "attribute length"
        yield t & 0x3fff, b[4:ln]
        b = b[(ln + 3) & ~3:]
def one(b):
    l = list(attrs(b)); assert len(l) == 1, "one attribute, got %d" % len(l); return l[0]
def decode(line):
    b = bytes.fromhex(line)
    ln, typ, flags = struct.unpack("=IHH", b[:8]); assert ln == len(b), "nlmsg_len"
    fam, iftype, idx = struct.unpack("=BxHi", b[16:24])
    rest = list(attrs(b[32:]))
    if typ == 18:
        return "GETLINK pf=%d ext_mask=%#x" % (idx, dict(rest)[IFLA_EXT_MASK] and struct.unpack("=I", dict(rest)[IFLA_EXT_MASK])[0])
    assert typ == 19 and flags & 4 and len(rest) == 1 and rest[0][0] == IFLA_VFINFO_LIST, "RTM_SETLINK, ACK, one VFINFO_LIST"
    t, info = one(rest[0][1]); assert t == IFLA_VF_INFO
    t, d = one(info)
    if t == MAC:
        assert len(d) == 36; n = struct.unpack("=I", d[:4])[0]
        assert d[10:] == b"\0" * 26
        return "SETLINK pf=%d vf=%d mac=%s" % (idx, n, ":".join("%02x" % x for x in d[4:10]))
    if t == VLAN:
        assert len(d) == 12; return "SETLINK pf=%d vf=%d vlan=%d qos=%d" % ((idx,) + struct.unpack("=III", d))
    if t == VLAN_LIST:
        t, d = one(d); assert t == VLAN_INFO and len(d) == 16 and d[14:] == b"\0\0"
        n, v, q = struct.unpack("=III", d[:12])
        return "SETLINK pf=%d vf=%d vlan-list vlan=%d qos=%d proto=%#06x" % (idx, n, v, q, struct.unpack("!H", d[12:14])[0])
    if t == RATE:
        assert len(d) == 12; return "SETLINK pf=%d vf=%d rate min=%d max=%d" % ((idx,) + struct.unpack("=III", d))
    names = {SPOOFCHK: "spoofchk", TRUST: "trust", LINK_STATE: "link_state"}
    assert t in names and len(d) == 8, "attribute %d" % t
    return "SETLINK pf=%d vf=%d %s=%d" % ((idx, struct.unpack("=I", d[:4])[0], names[t], struct.unpack("=I", d[4:])[0]))
if sys.argv[1] == "answer":
    pf = int(sys.argv[3])
    vfs = [vf(0, "00:00:00:00:00:00", 0, 0, 0x8100, 0, 0, 1, 0, 0),
           vf(1, "02:00:00:00:00:11", 5, 2, 0x8100, 10, 20, 0, 1, 2)]
    open(sys.argv[2], "wb").write(answer(pf, vfs))
else:
    for line in open(sys.argv[2]):
        print(decode(line.strip()).replace("pf=%s " % sys.argv[3], ""))
