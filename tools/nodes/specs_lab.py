# SPDX-License-Identifier: Apache-2.0
"""Demo nodes: the lab's V100 and A100 nodes (seed 003), an SR-IOV RoCE node, the scale node
with 1016 IB VFs, and a server without RDMA. Facts not in a source are plausible choices;
examples/README.md says which is which."""
from . import hw
from .compose import (rp, switch, gpu, fn, vf, vf_bdfs, sriov, rdma, ib_port, ib_down, roce_port,
                      eth, ipoib, bond, node, MLX5, NVIDIA)

IB, ETH = hw.CLASS_IB, hw.CLASS_ETH


def v100_ib():
    """Seed 003 V100 node: one dual-port ConnectX-5 VPI (two PCI functions), both ports on the
    IB fabric at EDR, IPoIB up; 4 V100 SXM2 behind two PLX switches, one per socket."""
    pf = ["0000:5e:00.0", "0000:5e:00.1"]
    g = ["b8599f0300a1b2c4", "b8599f0300a1b2c5"]
    nic = [fn(pf[i], "cx5", IB,
              rdma=[rdma(g[i], "16.35.2000", sys_image_guid=g[0],
                         ports=[ib_port(g[i], rate=hw.rate("EDR", 4), lid=0x21 + i, sm_lid=0x1)])],
              net=[ipoib(hw.pci_name("ib", pf[i], multifunction=True), ipv4=["10.10.0.%d" % (31 + 100 * i)])])
           for i in range(2)]
    mgmt = [fn("0000:03:00.0", "x550", ETH, net=[eth("enp3s0f0", "ac:1f:6b:4c:2a:10", ipv4=["172.16.20.31"])]),
            fn("0000:03:00.1", "x550", ETH, net=[eth("enp3s0f1", "ac:1f:6b:4c:2a:11", carrier=False)])]
    v = "v100-sxm2-16g"
    return node(
        "v100-ib", "lab-v100-03", 80, {0: "0-19,40-59", 1: "20-39,60-79"},
        [rp("0000:00:1c.0", "intel-pch-rp", 0, *mgmt),
         rp("0000:17:00.0", "intel-skx-rp", 0,
            switch("0000:18:00.0", "plx-8747", ("0000:19:08.0", gpu("0000:1a:00.0", v)),
                   ("0000:19:10.0", gpu("0000:1b:00.0", v)))),
         rp("0000:5d:00.0", "intel-skx-rp", 0, *nic),
         rp("0000:85:00.0", "intel-skx-rp", 1,
            switch("0000:86:00.0", "plx-8747", ("0000:87:08.0", gpu("0000:88:00.0", v)),
                   ("0000:87:10.0", gpu("0000:89:00.0", v))))],
        MLX5 + ["ib_ipoib"] + NVIDIA + ["nvidia_peermem", "ixgbe"],
        netns_mode="Y", nvidia_version="535.183.01")


def _dgx_group(h, numa, gpu_model, nic=None):
    """AMD root port <h>:01.1 -> level-1 switch -> two level-2 switches; the first holds a
    GPU and (optionally) the NIC (PIX), the second another GPU (PXB to that NIC)."""
    b = lambda n, d=0: "0000:%02x:%02x.0" % (h + n, d)
    l2a = [(b(4), gpu(b(5), gpu_model))]
    if nic:
        l2a.append((b(4, 1), nic(b(6))))
    nb = 7 if nic else 6
    return rp("0000:%02x:01.1" % h, "amd-rome-rp", numa,
              switch(b(1), "bcm-pex88096",
                     (b(2), switch(b(3), "bcm-pex88096", *l2a)),
                     (b(2, 1), switch(b(nb), "bcm-pex88096", (b(nb + 1), gpu(b(nb + 2), gpu_model))))))


def a100_ib_bond():
    """Seed 003 A100 node: two single-port ConnectX-6 HDR HCAs (mlx5_0 down/disabled, mlx5_1
    active) whose IPoIB netdevs form an active-backup bond, plus a ConnectX-4 Lx dual 10GbE
    in RoCE LAG (mlx5_bond_0 on bond0). DGX-A100-like PCIe: 8 A100 SXM4, 4 switch groups."""
    fw = "20.37.1700"
    g0, g1 = "1c34da0300f12a10", "1c34da0300f12b44"

    def hca0(bdf):
        return fn(bdf, "cx6", IB, rdma=[rdma(g0, fw, [ib_down(g0)])],
                  net=[ipoib(hw.pci_name("ib", bdf))])

    def hca1(bdf):
        return fn(bdf, "cx6", IB,
                  rdma=[rdma(g1, fw, [ib_port(g1, rate=hw.rate("HDR", 4), lid=0x3, sm_lid=0x1)])],
                  net=[ipoib(hw.pci_name("ib", bdf))])

    lx = ["0000:e1:00.0", "0000:e1:00.1"]
    lg = ["98039b03007a1c3a", "98039b03007a1c3b"]
    lmac = ["98:03:9b:7a:1c:3a", "98:03:9b:7a:1c:3b"]
    lxn = [hw.pci_name("en", lx[i], multifunction=True, port_name="p%d" % i) for i in range(2)]
    lx_fns = [fn(lx[0], "cx4lx", ETH,
                 rdma=[rdma(lg[0], "14.32.1010", [roce_port("bond0", 10)], name="mlx5_bond_0", lag_members=2)],
                 net=[eth(lxn[0], lmac[0])]),
              fn(lx[1], "cx4lx", ETH, net=[eth(lxn[1], lmac[1])])]
    a = "a100-sxm4-40g"
    ib0, ib1 = hw.pci_name("ib", "0000:46:00.0"), hw.pci_name("ib", "0000:c6:00.0")
    return node(
        "a100-ib-bond", "lab-a100-01", 256, {0: "0-63,128-191", 1: "64-127,192-255"},
        [_dgx_group(0x00, 0, a), _dgx_group(0x40, 0, a, hca0),
         _dgx_group(0x80, 1, a), _dgx_group(0xc0, 1, a, hca1),
         rp("0000:e0:03.1", "amd-rome-rp", 1, *lx_fns)],
        MLX5 + ["ib_ipoib", "bonding"] + NVIDIA + ["nvidia_peermem"],
        bonds=[bond("bond0", "active-backup", lxn, active=lxn[0], ipv4=["192.168.4.225"]),
               bond("bond1", "active-backup", [ib0, ib1], active=ib1, mtu=2044, ipv4=["10.10.1.21"])],
        netns_mode="Y", nvidia_version="535.183.01")


def cx5_roce_sriov():
    """ConnectX-5 dual-port 100GbE, 2 PFs x 12 VFs (16 possible), each VF bound to mlx5_core
    with an RDMA device and a netdev; exclusive RDMA netns mode; 8 A100 SXM4 in four switch
    groups, the NIC in the first one (PIX to GPU0/GPU1)."""
    fw = "16.35.2000"
    pfs = ["0000:1b:00.0", "0000:1b:00.1"]
    pmac = ["0c:42:a1:5b:3e:40", "0c:42:a1:5b:3e:41"]
    pg = ["0c42a103005b3e40", "0c42a103005b3e41"]
    nic = []
    for p in range(2):
        pfname = hw.pci_name("en", pfs[p], multifunction=True, port_name="p%d" % p)
        offset = 2 + 15 * p     # first VF RID: PF0 at devfn 2, PF1's after PF0's 16 VFs
        vfs = []
        for i, vbdf in enumerate(vf_bdfs(pfs[p], 12, offset, 1)):
            vname = hw.pci_name("en", pfs[p], multifunction=True, vf=i)
            vmac = "02:00:1b:%02x:00:%02x" % (p, i)
            vfs.append(vf(vbdf, "cx5-eth", ETH,
                          rdma=[rdma(hw.node_guid_from_mac(vmac), fw, [roce_port(vname, 100)],
                                     sys_image_guid=pg[0])],
                          net=[eth(vname, vmac)]))
        nic.append(fn(pfs[p], "cx5-eth", ETH,
                      rdma=[rdma(pg[p], fw, [roce_port(pfname, 100)], sys_image_guid=pg[0])],
                      net=[eth(pfname, pmac[p], mtu=9000, ipv4=["10.0.%d.11" % (p + 1)])],
                      sriov=sriov("cx5-eth", 16, 12, offset), vfs=vfs))
    a = "a100-sxm4-80g"

    def group(h, numa, extra=()):
        b = lambda n, d=0, f=0: "0000:%02x:%02x.%d" % (h + n, d, f)
        downs = [(b(2), gpu(b(3), a)), (b(2, 1), gpu(b(4), a))] + list(extra)
        return rp("0000:%02x:02.0" % h, "intel-icx-rp", numa, switch(b(1), "bcm-pex88096", *downs))

    return node(
        "cx5-roce-sriov", "roce-sriov-01", 160, {0: "0-39,80-119", 1: "40-79,120-159"},
        [group(0x16, 0, [("0000:18:02.0", nic)]), group(0x30, 0), group(0x97, 1), group(0xb0, 1)],
        MLX5 + NVIDIA + ["nvidia_peermem"],
        netns_mode="N", nvidia_version="535.183.01")


def cx7_rail_1016vf():
    """Scale case: 8 ConnectX-7 NDR IB PFs, one per rail, each sharing a PCIe switch with one
    H100 (PIX), each PF with 127 VFs; every VF has an RDMA device (IB port, 8 GIDs, 128 pkeys),
    an IPoIB netdev (admin down on the host) and umad/issm/uverbs nodes."""
    fw = "28.39.2048"
    hosts = [(0x15, 0), (0x26, 0), (0x37, 0), (0x48, 0), (0x97, 1), (0xa7, 1), (0xb7, 1), (0xc7, 1)]
    rps = []
    for r, (h, numa) in enumerate(hosts):
        b = lambda n, d=0: "0000:%02x:%02x.0" % (h + n, d)
        pf = b(3)
        pg = "a088c20300456a%02x" % (0x10 + r)
        lid = 0x10 + r * 0x80
        vfs = []
        for i, vbdf in enumerate(vf_bdfs(pf, 127, 1, 1)):
            vg = "0200%04x0000%04x" % (r, i + 1)   # admin-assigned VF GUID (node = port GUID)
            vfs.append(vf(vbdf, "cx7", IB,
                          rdma=[rdma(vg, fw, [ib_port(vg, rate=hw.rate("NDR", 4), lid=lid + 1 + i, sm_lid=0x1)],
                                     sys_image_guid=pg)],
                          net=[ipoib(hw.pci_name("ib", pf, vf=i), mtu=4092, up=False)]))
        nic = fn(pf, "cx7", IB,
                 rdma=[rdma(pg, fw, [ib_port(pg, rate=hw.rate("NDR", 4), lid=lid, sm_lid=0x1)])],
                 net=[ipoib(hw.pci_name("ib", pf), mtu=4092, ipv4=["10.20.%d.31" % r])],
                 sriov=sriov("cx7", 127, 127, 1), vfs=vfs)
        rps.append(rp("0000:%02x:01.0" % h, "intel-spr-rp", numa,
                      switch(b(1), "bcm-pex89xxx", (b(2), nic), (b(2, 1), gpu(b(4), "h100-sxm5-80g")))))
    return node(
        "cx7-rail-1016vf", "h100-sriov-01", 224, {0: "0-55,112-167", 1: "56-111,168-223"},
        rps, MLX5 + ["ib_ipoib"] + NVIDIA + ["nvidia_peermem"],
        netns_mode="N", nvidia_version="550.90.07")


def no_rdma():
    """An ordinary server: single socket, a dual-port Intel I350 (igb), no RDMA modules."""
    nics = [fn("0000:01:00.0", "i350", ETH, net=[eth("enp1s0f0", "3c:ec:ef:12:34:56", ipv4=["172.16.30.5"])]),
            fn("0000:01:00.1", "i350", ETH, net=[eth("enp1s0f1", "3c:ec:ef:12:34:57", carrier=False)])]
    return node("no-rdma", "web-01", 16, {}, [rp("0000:00:01.0", "intel-e3-rp", 0, *nics)], ["igb"])


NODES = [v100_ib(), a100_ib_bond(), cx5_roce_sriov(), cx7_rail_1016vf(), no_rdma()]
