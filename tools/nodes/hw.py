# SPDX-License-Identifier: Apache-2.0
"""Kernel formats and the hardware catalog used by the node specs.

Formats follow the kernel printers (drivers/infiniband/core/sysfs.c, drivers/pci/pci-sysfs.c,
net/core/net-sysfs.c, drivers/net/bonding/bond_sysfs*.c); see examples/README.md.
"""

# ---------------------------------------------------------------- InfiniBand port attributes
PORT_STATE = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATE = {0: "<unknown>", 1: "Sleep", 2: "Polling", 3: "Disabled",
              4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}
# per-lane rate in deci-Gb/s (rate_show); an invalid speed prints as SDR
LANE = {"SDR": 25, "DDR": 50, "QDR": 100, "FDR10": 100, "FDR": 140, "EDR": 250,
        "HDR": 500, "NDR": 1000, "XDR": 2000}
WIDTHS = (1, 2, 4, 8, 12)


def rate(speed, width):
    """rate_show: "%d%s Gb/sec (%dX%s)"; speed None = invalid (0) -> SDR."""
    speed = speed or "SDR"
    assert width in WIDTHS and speed in LANE
    r = LANE[speed] * width
    return "%d%s Gb/sec (%dX %s)" % (r // 10, ".5" if r % 10 else "", width, speed)


# Ethernet speed -> how mlx5 reports it on a RoCE port (translate_eth_*_proto_oper)
ETH_RATE = {
    10: ("QDR", 1),     # 10GBASE-*: 10 Gb/sec (1X QDR)
    25: ("EDR", 1),     # 25GBASE-*: 25 Gb/sec (1X EDR)
    40: ("QDR", 4),     # 40GBASE-*4; also what a port with no link reports (eth_proto_oper 0)
    100: ("EDR", 4),    # 100GBASE-CR4 (4 x 25G)
    200: ("HDR", 4),    # 200GBASE-CR4 (4 x 50G PAM4)
    400: ("NDR", 4),    # 400GBASE-CR4 (4 x 100G)
}
ETH_NO_LINK = ("QDR", 4)


def eth_rate(gbps):
    return rate(*ETH_RATE[gbps])


# ---------------------------------------------------------------- GUIDs, MACs, GIDs
def guid(s):
    """Normalise '0xfc4cea0300f94234', 'fc4c:ea03:00f9:4234' or an int to 16 hex digits."""
    if isinstance(s, int):
        return "%016x" % s
    s = s.lower().replace(":", "")
    if s.startswith("0x"):
        s = s[2:]
    assert len(s) == 16, s
    int(s, 16)
    return s


def guid_sysfs(g):
    """node_guid / sys_image_guid format: %04x:%04x:%04x:%04x."""
    g = guid(g)
    return ":".join(g[i:i + 4] for i in range(0, 16, 4))


def guid_bytes(g):
    g = guid(g)
    return [int(g[i:i + 2], 16) for i in range(0, 16, 2)]


def mac_bytes(mac):
    b = [int(x, 16) for x in mac.split(":")]
    assert len(b) == 6, mac
    return b


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def eui64_from_mac(mac):
    """RoCE default GID interface id: EUI-64 of the MAC with the U/L bit flipped."""
    b = mac_bytes(mac)
    return "%02x%02x%02x%02x%02x%02x%02x%02x" % (b[0] ^ 2, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5])


def mac_from_port_guid(g):
    """Inverse of eui64_from_mac, for captures that only show the RoCE 'Port GUID'."""
    b = guid_bytes(g)
    assert b[3] == 0xff and b[4] == 0xfe, g
    return mac_str([b[0] ^ 2, b[1], b[2], b[5], b[6], b[7]])


def node_guid_from_mac(mac):
    """mlx5 eswitch node_guid_gen_from_mac(): an admin-set VF MAC gives the VF its node GUID."""
    b = mac_bytes(mac)
    return "%02x%02x%02xfffe%02x%02x%02x" % (b[0], b[1], b[2], b[3], b[4], b[5])


def pf_guid_from_mac(mac):
    """Mellanox PF convention: node GUID = OUI, 03:00, then the MAC's last 3 bytes."""
    b = mac_bytes(mac)
    return "%02x%02x%02x0300%02x%02x%02x" % (b[0], b[1], b[2], b[3], b[4], b[5])


def mac_from_pf_guid(g):
    b = guid_bytes(g)
    assert b[3] == 0x03 and b[4] == 0x00, g
    return mac_str([b[0], b[1], b[2], b[5], b[6], b[7]])


def gid_str(hex32):
    """%pI6 full form: 8 groups of 4 hex digits."""
    assert len(hex32) == 32
    return ":".join(hex32[i:i + 4] for i in range(0, 32, 4))


ZERO_GID = gid_str("0" * 32)


def gid_link_local(iid_hex16):
    return gid_str("fe80000000000000" + iid_hex16)


def gid_ipv4(ip):
    a = [int(x) for x in ip.split(".")]
    assert len(a) == 4 and all(0 <= x < 256 for x in a), ip
    return gid_str("00000000000000000000ffff" + "".join("%02x" % x for x in a))


def ipoib_address(qpn, port_guid_hex, connected_flag=False):
    """IPoIB hardware address: flags(1) + QPN(3) + port GID (fe80::/64 + port GUID)."""
    b = [0x80 if connected_flag else 0x00, (qpn >> 16) & 0xff, (qpn >> 8) & 0xff, qpn & 0xff,
         0xfe, 0x80, 0, 0, 0, 0, 0, 0] + guid_bytes(port_guid_hex)
    return mac_str(b)


IPOIB_BROADCAST = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"


# ---------------------------------------------------------------- CPU lists and masks
def parse_cpulist(s):
    cpus = set()
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.update(range(int(a), int(b) + 1))
        else:
            cpus.add(int(part))
    return cpus


def cpumask(cpus, nr_cpu_ids):
    """%*pb of a cpumask: 32-bit words in hex, most significant first, comma separated;
    the first word only as wide as nr_cpu_ids needs."""
    v = 0
    for c in cpus:
        v |= 1 << c
    nwords = (nr_cpu_ids + 31) // 32
    words = [(v >> (32 * i)) & 0xffffffff for i in reversed(range(nwords))]
    first_bits = nr_cpu_ids - 32 * (nwords - 1)
    out = ["%0*x" % ((first_bits + 3) // 4, words[0])]
    out += ["%08x" % w for w in words[1:]]
    return ",".join(out)


# ---------------------------------------------------------------- PCI
def parse_bdf(bdf):
    dom, bus, rest = bdf.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def make_bdf(dom, bus, devfn):
    return "%04x:%02x:%02x.%x" % (dom, bus, devfn >> 3, devfn & 7)


def devfn(bdf):
    _, _, d, f = parse_bdf(bdf)
    return (d << 3) | f


def modalias(vendor, device, svendor, sdevice, cls):
    return "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X" % (
        vendor, device, svendor, sdevice, cls >> 16, (cls >> 8) & 0xff, cls & 0xff)


def pci_name(prefix, bdf, multifunction=False, port_name=None, vf=None):
    """systemd/udev predictable name from the PCI path: <prefix>[P<dom>]p<bus>s<slot>[f<fn>]
    [n<phys_port_name>] and v<N> for an SR-IOV VF (appended to the PF's PCI name)."""
    dom, bus, slot, fn = parse_bdf(bdf)
    s = prefix + ("P%d" % dom if dom else "") + "p%ds%d" % (bus, slot)
    if fn or multifunction:
        s += "f%d" % fn
    if vf is not None:
        return s + "v%d" % vf
    if port_name:
        s += "n" + port_name
    return s


def slot_name(prefix, slot, fn, multifunction=True, port_name=None):
    """Name from a firmware slot number (sys/bus/pci/slots/<N>/address): <prefix>s<N>f<fn>..."""
    s = prefix + "s%d" % slot
    if fn or multifunction:
        s += "f%d" % fn
    if port_name:
        s += "n" + port_name
    return s


# PCI link attributes (pci_speed_string)
GEN = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
       5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}

CLASS_BRIDGE = 0x060400
CLASS_IB = 0x020700
CLASS_ETH = 0x020000
CLASS_3D = 0x030200

# Models: ids, class, driver and link capability. "hca" is the mlx hca_type (MT + decimal
# PCI device id, the rule of both mlx5 and mlx4 hca_type_show).
# Subsystem ids and revisions that no capture shows are plausible choices, see README.
BRIDGES = {
    "intel-skx-rp": dict(vendor=0x8086, device=0x2030, svendor=0x8086, sdevice=0x0000, rev=0x04, gen=3, width=16),
    "intel-bdx-rp": dict(vendor=0x8086, device=0x6f08, svendor=0x8086, sdevice=0x0000, rev=0x01, gen=3, width=16),
    "intel-icx-rp": dict(vendor=0x8086, device=0x347a, svendor=0x8086, sdevice=0x0000, rev=0x04, gen=4, width=16),
    "intel-spr-rp": dict(vendor=0x8086, device=0x352a, svendor=0x8086, sdevice=0x0000, rev=0x04, gen=5, width=16),
    "intel-pch-rp": dict(vendor=0x8086, device=0xa190, svendor=0x8086, sdevice=0x0000, rev=0xf9, gen=3, width=4),
    "intel-e3-rp": dict(vendor=0x8086, device=0x1901, svendor=0x8086, sdevice=0x0000, rev=0x07, gen=3, width=8),
    "amd-rome-rp": dict(vendor=0x1022, device=0x1483, svendor=0x1022, sdevice=0x1453, rev=0x00, gen=4, width=16),
    "nvidia-gb10-rp": dict(vendor=0x10de, device=0x22ce, svendor=0x10de, sdevice=0x0000, rev=0x01, gen=5, width=4),
    "plx-8747": dict(vendor=0x10b5, device=0x8747, svendor=0x10b5, sdevice=0x8747, rev=0xca, gen=3, width=16),
    "bcm-pex88096": dict(vendor=0x1000, device=0xc010, svendor=0x1000, sdevice=0xa064, rev=0xb0, gen=4, width=16),
    "bcm-pex89xxx": dict(vendor=0x1000, device=0xc030, svendor=0x1000, sdevice=0x100b, rev=0x20, gen=5, width=16),
}

NICS = {
    # ConnectX-3 (mlx4): one PCI function, two ports
    "cx3": dict(vendor=0x15b3, device=0x1003, svendor=0x15b3, sdevice=0x0050, rev=0x01, gen=3, width=8,
                driver="mlx4_core", board="MT_1090120019", uverbs_abi=4),
    "cx4lx": dict(vendor=0x15b3, device=0x1015, svendor=0x15b3, sdevice=0x0003, rev=0x00, gen=3, width=8,
                  driver="mlx5_core", board="MT_2420110034", uverbs_abi=1, vf_device=0x1016),
    "cx5": dict(vendor=0x15b3, device=0x1017, svendor=0x15b3, sdevice=0x0008, rev=0x00, gen=3, width=16,
                driver="mlx5_core", board="MT_0000000008", uverbs_abi=1, vf_device=0x1018),
    "cx5-eth": dict(vendor=0x15b3, device=0x1017, svendor=0x15b3, sdevice=0x0007, rev=0x00, gen=3, width=16,
                    driver="mlx5_core", board="MT_0000000012", uverbs_abi=1, vf_device=0x1018),
    "cx6": dict(vendor=0x15b3, device=0x101b, svendor=0x15b3, sdevice=0x0007, rev=0x00, gen=4, width=16,
                driver="mlx5_core", board="MT_0000000594", uverbs_abi=1, vf_device=0x101c),
    "cx6dx": dict(vendor=0x15b3, device=0x101d, svendor=0x15b3, sdevice=0x0016, rev=0x00, gen=4, width=16,
                  driver="mlx5_core", board="MT_0000000359", uverbs_abi=1, vf_device=0x101e),
    "cx7": dict(vendor=0x15b3, device=0x1021, svendor=0x15b3, sdevice=0x0041, rev=0x00, gen=5, width=16,
                driver="mlx5_core", board="MT_0000000838", uverbs_abi=1, vf_device=0x101e),
    "bf3": dict(vendor=0x15b3, device=0xa2dc, svendor=0x15b3, sdevice=0x0009, rev=0x01, gen=5, width=16,
                driver="mlx5_core", board="MT_0000000884", uverbs_abi=1, vf_device=0x101e),
    "i350": dict(vendor=0x8086, device=0x1521, svendor=0x8086, sdevice=0x0001, rev=0x01, gen=2, width=4,
                 driver="igb"),
    "x550": dict(vendor=0x8086, device=0x1563, svendor=0x8086, sdevice=0x0001, rev=0x01, gen=3, width=4,
                 driver="ixgbe"),
}

GPUS = {
    "v100-sxm2-16g": dict(vendor=0x10de, device=0x1db1, svendor=0x10de, sdevice=0x1212, rev=0xa1, gen=3, width=16),
    "a100-sxm4-40g": dict(vendor=0x10de, device=0x20b0, svendor=0x10de, sdevice=0x134f, rev=0xa1, gen=4, width=16),
    "a100-sxm4-80g": dict(vendor=0x10de, device=0x20b2, svendor=0x10de, sdevice=0x1463, rev=0xa1, gen=4, width=16),
    "a40": dict(vendor=0x10de, device=0x2235, svendor=0x10de, sdevice=0x145a, rev=0xa1, gen=4, width=16),
    "a100-pcie-40g": dict(vendor=0x10de, device=0x20f1, svendor=0x10de, sdevice=0x145f, rev=0xa1, gen=4, width=16),
    "h100-sxm5-80g": dict(vendor=0x10de, device=0x2330, svendor=0x10de, sdevice=0x16c1, rev=0xa1, gen=5, width=16),
}


def hca_type(device_id):
    return "MT%d" % device_id


# ports/N/counters: the kernel's PMA attributes (drivers/infiniband/core/sysfs.c, pma_counter
# entries), the same on InfiniBand and RoCE ports of mlx5. port_xmit_data and port_rcv_data
# count 4-byte words (IBTA PortXmitData: octets divided by 4).
PMA_COUNTERS = (
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_data", "port_rcv_data",
    "port_xmit_packets", "port_rcv_packets", "port_xmit_wait", "unicast_xmit_packets",
    "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
)
# ports/N/hw_counters of mlx5 (drivers/infiniband/hw/mlx5/counters.c): the queue-pair counters
# of every port, the congestion (CNP, ECN) and RoCE retransmission ones on RoCE ports only.
# "lifespan" is no counter: the milliseconds a read value is cached.
HW_COUNTERS_QP = (
    "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "rx_dct_connect",
    "out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err",
    "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error",
    "resp_cqe_error", "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors",
    "resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error",
)
HW_COUNTERS_ROCE = (
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets",
    "np_cnp_sent", "rx_icrc_encapsulated",
)
