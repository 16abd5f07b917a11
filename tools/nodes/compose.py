# SPDX-License-Identifier: Apache-2.0
"""Helpers that return spec fragments (plain dicts) for build.py.

Nothing here writes files; a node spec is the data these return, so a new node (for
instance a broken one for the doctor) is a list of calls plus any dict edits.
"""
from . import hw

MLX_IB_CAP = 0xa651e848      # mlx5 HCA port cap_mask on IB (CX-5/6/7), as seen in the wild
ROCE_CAP = 0x00010000        # RoCE ports: IsCM only


# ---------------------------------------------------------------- PCI functions
def rp(bdf, model, numa, *children):
    """Root port of a host bridge (pci<dom>:<bus>), bound to pcieport."""
    return dict(bdf=bdf, kind="rp", model=hw.BRIDGES[model], **{"class": hw.CLASS_BRIDGE},
                driver="pcieport", numa=numa, children=list(children))


def switch(up_bdf, model, *downs):
    """PCIe switch: upstream port and its downstream ports; downs = (bdf, child) pairs."""
    kids = [dict(bdf=b, kind="down", model=hw.BRIDGES[model], **{"class": hw.CLASS_BRIDGE},
                 driver="pcieport", children=[c] if isinstance(c, dict) else list(c))
            for b, c in downs]
    return dict(bdf=up_bdf, kind="up", model=hw.BRIDGES[model], **{"class": hw.CLASS_BRIDGE},
                driver="pcieport", children=kids)


def gpu(bdf, model):
    return dict(bdf=bdf, kind="ep", model=hw.GPUS[model], **{"class": hw.CLASS_3D}, driver="nvidia")


def fn(bdf, model, cls, rdma=(), net=(), sriov=None, vfs=(), slot=None, driver=None):
    m = hw.NICS[model]
    d = dict(bdf=bdf, kind="ep", model=m, **{"class": cls}, driver=driver or m["driver"],
             rdma=list(rdma), net=list(net), vfs=list(vfs))
    if sriov:
        d["sriov"] = sriov
    if slot is not None:
        d["slot"] = slot
    return d


def vf_bdfs(pf_bdf, num, offset, stride):
    dom, bus, _, _ = hw.parse_bdf(pf_bdf)
    base = (bus << 8) + hw.devfn(pf_bdf)
    return [hw.make_bdf(dom, (base + offset + i * stride) >> 8, (base + offset + i * stride) & 0xff)
            for i in range(num)]


def vf(bdf, model, cls, rdma=(), net=()):
    m = hw.NICS[model]
    return dict(bdf=bdf, kind="vf", model=m, device=m["vf_device"], **{"class": cls},
                driver=m["driver"], rdma=list(rdma), net=list(net))


def sriov(model, total, num, offset, stride=1):
    return dict(total=total, num=num, offset=offset, stride=stride, vf_device=hw.NICS[model]["vf_device"])


# ---------------------------------------------------------------- RDMA devices and ports
def rdma(node_guid, fw, ports, name=None, sys_image_guid=None, **kw):
    d = dict(node_guid=hw.guid(node_guid), fw_ver=fw, ports=list(ports), **kw)
    d["sys_image_guid"] = hw.guid(sys_image_guid or node_guid)
    if name:
        d["name"] = name
    return d


def ib_port(port_guid, state=4, phys=5, rate="100 Gb/sec (4X EDR)", lid=0xffff, sm_lid=0, num=1,
            cap_mask=MLX_IB_CAP, gid_tbl_len=8, pkey_tbl_len=128, sm_sl=0, lmc=0):
    return dict(num=num, link_layer="InfiniBand", port_guid=hw.guid(port_guid), state=state,
                phys_state=phys, rate=rate, lid=lid, sm_lid=sm_lid, cap_mask=cap_mask,
                gid_tbl_len=gid_tbl_len, pkey_tbl_len=pkey_tbl_len, sm_sl=sm_sl, lmc=lmc)


def ib_down(port_guid, **kw):
    """IB port whose link is disabled and that the SM never configured: 1: DOWN / 3: Disabled,
    invalid speed (prints 4X SDR), lid 0xffff, sm_lid 0."""
    kw.setdefault("rate", hw.rate(None, 4))
    return ib_port(port_guid, state=1, phys=3, **kw)


def roce_port(netdev, speed, cap_mask=ROCE_CAP, num=1, rate=None):
    """RoCE port: state, rate and GIDs follow the netdev (or the bond master for a LAG)."""
    d = dict(num=num, link_layer="Ethernet", netdev=netdev, speed=speed, cap_mask=cap_mask,
             gid_tbl_len=255, pkey_tbl_len=1)
    if rate:
        d["rate"] = rate
    return d


# ---------------------------------------------------------------- netdevs
def eth(name, mac, mtu=1500, up=True, carrier=True, ipv4=()):
    return dict(name=name, kind="eth", mac=mac, mtu=mtu, up=up, carrier=carrier, ipv4=list(ipv4))


def ipoib(name, port=1, mtu=2044, up=True, carrier=None, qpn=0x1087, connected_flag=False, ipv4=()):
    d = dict(name=name, kind="ipoib", port=port, mtu=mtu, up=up, qpn=qpn,
             connected_flag=connected_flag, ipv4=list(ipv4))
    if carrier is not None:
        d["carrier"] = carrier
    return d


def bond(name, mode, slaves, active=None, mtu=1500, ipv4=(), mac=None, **kw):
    d = dict(name=name, mode=mode, slaves=list(slaves), mtu=mtu, ipv4=list(ipv4), **kw)
    if active:
        d["active"] = active
    if mac:
        d["mac"] = mac
    return d


# ---------------------------------------------------------------- modules
RDMA_CORE = ["ib_core", "ib_uverbs", "ib_umad", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"]
MLX5 = ["mlx5_core", "mlx5_ib"] + RDMA_CORE
MLX4 = ["mlx4_core", "mlx4_ib"] + RDMA_CORE
NVIDIA = ["nvidia", "nvidia_uvm", "nvidia_modeset"]


def node(name, hostname, cpus, numa, pci, modules, bonds=(), netns_mode="Y", **kw):
    return dict(name=name, hostname=hostname, cpus=cpus, numa=numa, pci=list(pci),
                modules=list(modules), bonds=list(bonds), netns_mode=netns_mode, **kw)
