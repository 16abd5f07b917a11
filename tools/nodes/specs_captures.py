# SPDX-License-Identifier: Apache-2.0
"""Nodes rebuilt from the public captures in shared/reference/real-outputs.md. Every fact a
capture shows is reproduced; what it does not show (PCI addresses, netdev names where not
printed, the cut tail of a capture, GPUs) is a plausible choice listed in examples/README.md."""
from . import hw
from .compose import (rp, switch, gpu, fn, rdma, ib_port, ib_down, roce_port, eth, ipoib, bond, node,
                      MLX5, MLX4, NVIDIA)

IB, ETH = hw.CLASS_IB, hw.CLASS_ETH
SPR_NUMA = {0: "0-55,112-167", 1: "56-111,168-223"}


def b1_gb10_roce():
    """B1: DGX Spark / Dell GB10. One ConnectX-7 reached through two PCIe x4 links (domains 0000
    and 0002), two functions on each: four RoCE devices renamed by udev (roce[P2]p1s0f[01]).
    Port 0 is up on both halves (Rate 200), port 1 has no link on both (Down/Disabled, Rate 40)."""
    fw = "28.45.4028"
    sysg = "fc4cea0300f94230"
    devs = []
    for dom, base in ((0, 0x30), (2, 0x34)):
        fns = []
        for f in range(2):
            bdf = "%04x:01:00.%d" % (dom, f)
            g = "fc4cea0300f942%02x" % (base + f)
            mac = "fc:4c:ea:f9:42:%02x" % (base + f)
            nd = hw.pci_name("en", bdf, multifunction=True, port_name="p%d" % f)
            up = f == 0
            fns.append(fn(bdf, "cx7", ETH,
                          rdma=[rdma(g, fw, [roce_port(nd, 200)], name=hw.pci_name("roce", bdf, multifunction=True),
                                     sys_image_guid=sysg, board_id="MT_0000001093")],
                          net=[eth(nd, mac, mtu=9000 if up else 1500, carrier=up,
                                   ipv4=["192.168.%d.10" % (100 + dom)] if up else [])]))
        devs.append(rp("%04x:00:00.0" % dom, "nvidia-gb10-rp", 0, *fns))
    return node("b1-gb10-roce", "dell-gb10-1", 20, {}, devs, MLX5, netns_mode="Y")


def b2_cx6dx_roce():
    """B2: ConnectX-6 Dx dual-port 100GbE, both RoCE ports Active (l2fwd-nv host, with an
    A100 PCIe as the GPU of that project)."""
    fw = "22.32.2004"
    pfs = ["0000:b1:00.0", "0000:b1:00.1"]
    g = ["0c42a103001dd12a", "0c42a103001dd12b"]
    fns = []
    for i in range(2):
        nd = hw.pci_name("en", pfs[i], multifunction=True, port_name="p%d" % i)
        fns.append(fn(pfs[i], "cx6dx", ETH,
                      rdma=[rdma(g[i], fw, [roce_port(nd, 100)], sys_image_guid=g[0])],
                      net=[eth(nd, "0c:42:a1:1d:d1:%02x" % (0x2a + i), ipv4=["192.168.%d.1" % (10 * (i + 1))])]))
    return node("b2-cx6dx-roce", "l2fwd-01", 128, {0: "0-31,64-95", 1: "32-63,96-127"},
                [rp("0000:b0:02.0", "intel-icx-rp", 1, *fns),
                 rp("0000:c9:02.0", "intel-icx-rp", 1, gpu("0000:ca:00.0", "a100-pcie-40g"))],
                MLX5 + NVIDIA + ["nvidia_peermem"], nvidia_version="535.183.01")


def b4_cx3_ib():
    """B4: ConnectX-3 (mlx4) dual-port FDR IB on ONE PCI function: port 1 Down/Disabled (still
    showing lid 38, SM lid 13), port 2 Active at 56 Gb/s; IPoIB ib0/ib1 on that function with
    dev_id 0x0/0x1. hca_type MT4099 is the PCI device id 0x1003 (mlx4 prints MT%d of it too)."""
    g = "f4521403007be0e0"
    cap = 0x02594868
    p1 = ib_down("f4521403007be0e1", lid=38, sm_lid=13, cap_mask=cap, gid_tbl_len=128)
    p2 = ib_port("f4521403007be0e2", num=2, rate=hw.rate("FDR", 4), lid=39, sm_lid=13, cap_mask=cap,
                 gid_tbl_len=128)
    cx3 = fn("0000:04:00.0", "cx3", IB,
             rdma=[rdma(g, "2.42.5000", [p1, p2], name="mlx4_0", sys_image_guid="f4521403007be0e3",
                        driver="mlx4")],
             net=[ipoib("ib0", port=1, mtu=4092, qpn=0x208, connected_flag=True),
                  ipoib("ib1", port=2, qpn=0x209, connected_flag=True, ipv4=["10.11.0.7"])])
    return node("b4-cx3-ib", "hpc-cn07", 56, {0: "0-13,28-41", 1: "14-27,42-55"},
                [rp("0000:00:03.0", "intel-bdx-rp", 0, cx3)], MLX4 + ["ib_ipoib"])


def c1_mixed_cx7_cx6():
    """C1: 8 ConnectX-7 NDR IB (IPoIB ibpXXs0 not configured, so ibdev2netdev says Down while
    the IB ports are ACTIVE) + 2 dual-port ConnectX-6 Dx Ethernet (f0 Up, f1 no link); 8 H100,
    each sharing a PCIe switch with one ConnectX-7."""
    rails = [(0x16, 0), (0x38, 0), (0x49, 0), (0x5a, 0), (0x98, 1), (0xb8, 1), (0xc8, 1), (0xd8, 1)]
    rps = []
    for r, (h, numa) in enumerate(rails):
        b = lambda n, d=0: "0000:%02x:%02x.0" % (h + n, d)
        g = "946dae0300d2c4%02x" % (0x10 + r)
        nic = fn(b(4), "cx7", IB,
                 rdma=[rdma(g, "28.39.2048", [ib_port(g, rate=hw.rate("NDR", 4), lid=0x101 + r, sm_lid=0x1)])],
                 net=[ipoib(hw.pci_name("ib", b(4)), mtu=4092, up=False)])
        rps.append(rp("0000:%02x:01.0" % h, "intel-spr-rp", numa,
                      switch(b(1), "bcm-pex89xxx", (b(2), gpu(b(3), "h100-sxm5-80g")), (b(2, 1), nic))))
        if r in (0, 4):        # the ConnectX-6 Dx cards on their own root ports
            fns = []
            for f in range(2):
                bdf = "0000:%02x:00.%d" % (h + 5, f)
                mac = "b8:ce:f6:%02x:61:%02x" % (0x10 + r, 0x40 + f)
                nd = hw.pci_name("en", bdf, multifunction=True, port_name="p%d" % f)
                fns.append(fn(bdf, "cx6dx", ETH,
                              rdma=[rdma(hw.pf_guid_from_mac(mac), "22.39.1002", [roce_port(nd, 100)],
                                         sys_image_guid=hw.pf_guid_from_mac(mac[:-2] + "40"))],
                              net=[eth(nd, mac, carrier=f == 0, ipv4=["10.100.%d.21" % r] if f == 0 else [])]))
            rps.append(rp("0000:%02x:05.0" % h, "intel-spr-rp", numa, *fns))
    return node("c1-mixed-cx7-cx6", "h100-ch-017", 224, SPR_NUMA, rps,
                MLX5 + ["ib_ipoib"] + NVIDIA + ["nvidia_peermem"], nvidia_version="550.90.07")


def d4_cx6_hdr():
    """D4: one dual-port ConnectX-6 HDR card (two functions sharing a system image GUID); port
    of mlx5_0 ACTIVE 4X HDR, lid 4, SM lid 1; mlx5_1 DOWN/Disabled, lid 0xffff, invalid speed."""
    fw = "20.37.1700"
    g = ["88e9a4ffff25a462", "88e9a4ffff25a463"]
    cap = 0xa259e848
    pf = ["0000:41:00.0", "0000:41:00.1"]
    ports = [ib_port(g[0], rate=hw.rate("HDR", 4), lid=4, sm_lid=1, cap_mask=cap),
             ib_down(g[1], cap_mask=cap)]
    fns = [fn(pf[i], "cx6", IB, rdma=[rdma(g[i], fw, [ports[i]], sys_image_guid=g[0])],
              net=[ipoib(hw.pci_name("ib", pf[i], multifunction=True), mtu=2044 if i == 0 else 4092,
                         ipv4=["10.12.0.4"] if i == 0 else [])])
           for i in range(2)]
    return node("d4-cx6-hdr", "ucx-node04", 128, {0: "0-31,64-95", 1: "32-63,96-127"},
                [rp("0000:40:01.1", "amd-rome-rp", 0, *fns)], MLX5 + ["ib_ipoib"])


def _lag_card(model, pfs, guids, macs, names, bondname, fw, speed, board=None):
    """A dual-PF card in RoCE LAG: one mlx5_bond_N device on PF0 (after 2 PF devices at boot)."""
    extra = {"board_id": board} if board else {}
    return [fn(pfs[0], model, ETH,
               rdma=[rdma(guids[0], fw, [roce_port(bondname, speed)], lag_members=2, **extra)],
               net=[eth(names[0], macs[0], mtu=9000)]),
            fn(pfs[1], model, ETH, net=[eth(names[1], macs[1], mtu=9000)])]


def e1_cx7_lag():
    """E1 (+ E5/E6 style): two dual-port ConnectX-7 200GbE cards, each in RoCE LAG over an
    802.3ad bond (mlx5_bond_0 on bond0, mlx5_bond_1 on bond1); slot-named netdevs ens10f*/ens11f*;
    8 H100, the two NICs each sharing a switch with two GPUs."""
    fw = "28.39.1002"
    cards = [("5c2573030094212a", "5c:25:73:94:21:2a", 10), ("5c25730300943566", "5c:25:73:94:35:66", 11)]
    bonds = []
    rps = []
    groups = [(0x15, 0, 0), (0x26, 0, None), (0x97, 1, 1), (0xa7, 1, None)]
    for h, numa, card in groups:
        b = lambda n, d=0: "0000:%02x:%02x.0" % (h + n, d)
        downs = [(b(2), gpu(b(3), "h100-sxm5-80g")), (b(2, 1), gpu(b(4), "h100-sxm5-80g"))]
        if card is not None:
            g0, mac0, slot = cards[card]
            g = [g0, "%016x" % (int(g0, 16) + 1)]
            m = [mac0, mac0[:-2] + "%02x" % (int(mac0[-2:], 16) + 1)]
            pfs = ["0000:%02x:00.%d" % (h + 5, f) for f in range(2)]
            names = [hw.slot_name("en", slot, f, port_name="p%d" % f) for f in range(2)]
            bn = "bond%d" % card
            fns = _lag_card("cx7", pfs, g, m, names, bn, fw, 200, board="MT_0000000834")
            fns[0]["slot"] = slot
            downs.append((b(2, 2), fns))
            bonds.append(bond(bn, "802.3ad", names, mtu=9000, ipv4=["10.%d.0.11" % (200 + card)],
                              xmit_hash_policy="layer3+4 1", lacp_rate="fast 1"))
        rps.append(rp("0000:%02x:01.0" % h, "intel-spr-rp", numa, switch(b(1), "bcm-pex89xxx", *downs)))
    return node("e1-cx7-lag", "h800-deepep-03", 224, SPR_NUMA, rps,
                MLX5 + ["bonding"] + NVIDIA + ["nvidia_peermem"], bonds=bonds, nvidia_version="550.90.07")


def e2_bf3_lag():
    """E2: four BlueField-3 (host side, 2 PFs each) in RoCE LAG over 802.3ad bonds whose MAC is
    set by configuration (the bond MAC, not a PF MAC, gives the Port GUID); Rate 200."""
    fw = "32.39.3804"
    # (node GUID of PF0, bond MAC); the last two are invented (cut / not in the capture)
    cards = [("c470bd0300720dee", "00:25:9d:79:03:b8"), ("c470bd0300579b32", "00:25:9d:5a:37:8a"),
             ("c470bd0300722baa", "00:25:9d:7a:4c:2e"), ("c470bd030072310c", "00:25:9d:7a:51:06")]
    groups = [(0x15, 0), (0x37, 0), (0x97, 1), (0xb7, 1)]
    rps, bonds = [], []
    for c, (h, numa) in enumerate(groups):
        b = lambda n, d=0: "0000:%02x:%02x.0" % (h + n, d)
        g0, bmac = cards[c]
        g = [g0, "%016x" % (int(g0, 16) + 1)]
        m = [hw.mac_from_pf_guid(x) for x in g]
        pfs = ["0000:%02x:00.%d" % (h + 5, f) for f in range(2)]
        names = [hw.pci_name("en", pfs[f], multifunction=True, port_name="p%d" % f) for f in range(2)]
        fns = _lag_card("bf3", pfs, g, m, names, "bond%d" % c, fw, 200)
        downs = [(b(2), gpu(b(3), "h100-sxm5-80g")), (b(2, 1), gpu(b(4), "h100-sxm5-80g")), (b(2, 2), fns)]
        rps.append(rp("0000:%02x:01.0" % h, "intel-spr-rp", numa, switch(b(1), "bcm-pex89xxx", *downs)))
        bonds.append(bond("bond%d" % c, "802.3ad", names, mtu=9000, mac=bmac, ipv4=["10.%d.1.5" % (50 + c)],
                          xmit_hash_policy="layer3+4 1", lacp_rate="fast 1"))
    return node("e2-bf3-lag", "pplx-gpu-01", 224, SPR_NUMA, rps,
                MLX5 + ["bonding"] + NVIDIA + ["nvidia_peermem"], bonds=bonds, nvidia_version="550.90.07")


NODES = [b1_gb10_roce(), b2_cx6dx_roce(), b4_cx3_ib(), c1_mixed_cx7_cx6(), d4_cx6_hdr(), e1_cx7_lag(),
         e2_bf3_lag()]
