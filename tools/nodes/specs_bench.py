# SPDX-License-Identifier: Apache-2.0
"""Nodes for the perftest outputs that `rdmak bench` judges (tests/captures/bench): the hosts of
seed 002's two tests, the OpenShift SR-IOV client and server of the GPUDirect DMA-BUF run
(openshift-docs, the "A6" capture) and a RoCE LAG host for real-outputs F3. Every fact a capture
shows is reproduced; the rest is a plausible choice listed in examples/README.md."""
from . import hw
from .compose import (rp, switch, gpu, fn, vf, vf_bdfs, sriov, rdma, ib_port, roce_port, eth, ipoib, bond, node,
                      MLX5, NVIDIA)

IB, ETH = hw.CLASS_IB, hw.CLASS_ETH
ICX_NUMA = {0: "0-31,64-95", 1: "32-63,96-127"}


def s002_a31():
    """Seed 002's a31 (and a42): a ConnectX-6 (15b3:101b) on InfiniBand at
    0000:1d:00.0 behind 0000:16:02.0/0000:17:00.0/0000:18:04.0, as the pods' /sys/class/infiniband
    link shows; ib_write_bw ran at MTU 4096 on IB, LID 0x04 here (0x03 on a42)."""
    g = "e8ebd30300a619aa"
    nic = fn("0000:1d:00.0", "cx6", IB,
             rdma=[rdma(g, "20.36.1010", [ib_port(g, rate=hw.rate("HDR", 2), lid=0x04, sm_lid=0x1)])],
             net=[ipoib("ibs102", qpn=0x000d86, ipv4=["10.20.65.13"])], slot=102)
    return node("s002-a31", "a31", 128, ICX_NUMA,
                [rp("0000:16:02.0", "intel-icx-rp", 0, switch("0000:17:00.0", "bcm-pex88096", ("0000:18:04.0", nic)))],
                MLX5 + ["ib_ipoib"], netns_mode="Y")


def s002_a101():
    """Seed 002's a101 (and a102, the same build): 8 A100-SXM4-80GB and a ConnectX-6 IB HCA at
    0000:53:00.0 behind two PCIe switches (pci0000:4a/4a:02.0/4b:00.0/4c:04.0/50:00.0/51:10.0),
    as the GPU pods' /sys/class/infiniband link shows. The pod on a101 got GPU3 (/dev/nvidia3,
    CUDA "PCIe address is 57:00"), behind the HCA's switch; the pod on a102 got GPU6 (/dev/nvidia6,
    "D5:00"), on the other socket."""
    g = "b8cef60300c41e52"
    a = "a100-sxm4-80g"
    nic = fn("0000:53:00.0", "cx6", IB,
             rdma=[rdma(g, "20.36.1010", [ib_port(g, rate=hw.rate("HDR", 2), lid=0x08, sm_lid=0x1)])],
             net=[ipoib(hw.pci_name("ib", "0000:53:00.0"), ipv4=["10.20.66.101"])])
    near = rp("0000:4a:02.0", "intel-icx-rp", 0,
              switch("0000:4b:00.0", "bcm-pex88096",
                     ("0000:4c:04.0", switch("0000:50:00.0", "bcm-pex88096", ("0000:51:10.0", nic),
                                             ("0000:51:14.0", gpu("0000:57:00.0", a))))))
    others = []
    for bus, numa in ((0x17, 0), (0x2a, 0), (0x3d, 0), (0x91, 1), (0xb1, 1), (0xd5, 1), (0xe8, 1)):
        others.append(rp("0000:%02x:02.0" % (bus - 1), "intel-icx-rp", numa, gpu("0000:%02x:00.0" % bus, a)))
    pci = sorted(others + [near], key=lambda r: r["bdf"])
    return node("s002-a101", "a101", 128, ICX_NUMA, pci, MLX5 + ["ib_ipoib"] + NVIDIA + ["nvidia_peermem"],
                netns_mode="Y", nvidia_version="525.85.12")


def _a6(name, host, pf_guid, ib_guid, ib_lid, up_vf, up_mac, up_ip, down_guids):
    """OpenShift SR-IOV host (openshift-docs rdma-verifying-rdma-connectivity): one dual-port
    ConnectX-6 VPI (MT4123, fw 20.43.1014), port 1 Ethernet 200G (mlx5_0) with 8 VFs (MT4124,
    mlx5_2..mlx5_9), port 2 InfiniBand HDR (mlx5_1). The pod's net1 is one VF (altname
    enp55s0f0vN), MTU 1500, so RoCE runs at path MTU 1024. The VFs without a pod report DOWN
    at the PF's 200 Gb/sec (4X HDR), as the capture's ibstatus shows. An A40 at 61:00."""
    fw = "20.43.1014"
    pf0, pf1 = "0000:37:00.0", "0000:37:00.1"
    pf0_mac = hw.mac_from_pf_guid(pf_guid)
    hdr200 = hw.eth_rate(200)
    vfs = []
    for i, vbdf in enumerate(vf_bdfs(pf0, 8, 2, 1)):
        vname = hw.pci_name("en", pf0, multifunction=True, vf=i)
        if i == up_vf:
            mac, nd = up_mac, eth(vname, up_mac, ipv4=[up_ip])
        else:
            mac = down_guids[i]
            nd = eth(vname, mac, up=False)
        port = roce_port(vname, 200)
        port["rate_down"] = hdr200
        vfs.append(vf(vbdf, "cx6", ETH, rdma=[rdma(hw.node_guid_from_mac(mac), fw, [port], sys_image_guid=pf_guid)],
                      net=[nd]))
    p0 = hw.pci_name("en", pf0, multifunction=True, port_name="p0")
    fns = [fn(pf0, "cx6", ETH, rdma=[rdma(pf_guid, fw, [roce_port(p0, 200)])], net=[eth(p0, pf0_mac)],
              sriov=sriov("cx6", 8, 8, 2), vfs=vfs),
           fn(pf1, "cx6", IB,
              rdma=[rdma(ib_guid, fw, [ib_port(ib_guid, rate=hw.rate("HDR", 4), lid=ib_lid, sm_lid=0x1)],
                         sys_image_guid=pf_guid)],
              net=[ipoib(hw.pci_name("ib", pf1, multifunction=True), mtu=4092)])]
    return node(name, host, 64, {0: "0-15,32-47", 1: "16-31,48-63"},
                [rp("0000:36:02.0", "intel-icx-rp", 0, *fns),
                 rp("0000:60:02.0", "intel-icx-rp", 0, gpu("0000:61:00.0", "a40"))],
                MLX5 + ["ib_ipoib"] + NVIDIA + ["nvidia_peermem"], netns_mode="Y", nvidia_version="535.154.05")


def a6_sriov_client():
    # the client pod's ibstat: VF0 mlx5_2 up (net1 56:6c:59:41:ae:4a, 192.168.4.226), the other
    # VFs' node GUIDs as captured (their MACs follow: node_guid_from_mac)
    down = {1: "b2:ae:4b:8f:3d:02", 2: "2a:99:67:8b:f2:72", 3: "5a:ff:2f:2e:17:e8", 4: "12:1b:f1:07:44:19",
            5: "b2:2b:16:d0:3d:d7", 6: "52:38:00:16:d1:05", 7: "d2:b4:a1:bd:c4:a9"}
    return _a6("a6-sriov-client", "rdma-worker-33", "e8ebd303007209f4", "e8ebd303007209f5", 0xd, 0,
               "56:6c:59:41:ae:4a", "192.168.4.226", down)


def a6_sriov_server():
    # the server pod: VF5 mlx5_7 up (net1 26:34:fd:53:a6:ec, 192.168.4.225), IB GUID ...1415 lid 0xc
    down = {i: "02:00:37:00:00:%02x" % i for i in range(8)}
    return _a6("a6-sriov-server", "rdma-worker-32", "e8ebd30300721414", "e8ebd30300721415", 0xc, 5,
               "26:34:fd:53:a6:ec", "192.168.4.225", down)


def f3_roce_lag():
    """real-outputs F3 (nccl-tests#191): `ib_write_bw -x 3 -q 8 -d mlx5_bond_1` on a RoCE LAG of
    two 100G ports, Mtu 1024, 184.94 Gb/s. Two dual-port ConnectX-6 Dx cards, each in an 802.3ad
    LAG (mlx5_bond_0 on bond0, mlx5_bond_1 on bond1), bond MTU 1500 (path MTU 1024), IPv4 on the
    bonds so GID 3 is the RoCE v2 IPv4 GID perftest was given."""
    fw = "22.36.1010"
    bonds, rps = [], []
    for c, (h, numa) in enumerate(((0x17, 0), (0x98, 1))):
        pfs = ["0000:%02x:00.%d" % (h + 1, f) for f in range(2)]
        macs = ["0c:42:a1:%02x:7e:%02x" % (0x30 + c, 0x10 + f) for f in range(2)]
        g = [hw.pf_guid_from_mac(m) for m in macs]
        names = [hw.pci_name("en", pfs[f], multifunction=True, port_name="p%d" % f) for f in range(2)]
        fns = [fn(pfs[0], "cx6dx", ETH, rdma=[rdma(g[0], fw, [roce_port("bond%d" % c, 100)], lag_members=2)],
                  net=[eth(names[0], macs[0])]),
               fn(pfs[1], "cx6dx", ETH, net=[eth(names[1], macs[1])])]
        rps.append(rp("0000:%02x:02.0" % h, "intel-icx-rp", numa, *fns))
        bonds.append(bond("bond%d" % c, "802.3ad", names, ipv4=["10.%d.0.21" % (30 + c)],
                          xmit_hash_policy="layer3+4 1", lacp_rate="fast 1"))
    return node("f3-roce-lag", "nccl-host-07", 128, ICX_NUMA, rps, MLX5 + ["bonding"], bonds=bonds)


NODES = [s002_a31(), s002_a101(), a6_sriov_client(), a6_sriov_server(), f3_roce_lag()]
