# SPDX-License-Identifier: Apache-2.0
"""build(spec, outdir): write <outdir>/<name>/{sys,dev} for one node spec.

A spec is plain data (dicts and lists, see compose.py for the helpers that make them):

  name, hostname       node directory name; hostname goes into node_desc (rdma-ndd style)
  cpus, numa           nr_cpu_ids; {numa_node: cpulist} or {} for a box whose PCI devices
                       report numa_node -1 (then local_cpulist is every CPU)
  modules              loaded modules (list); decides sys/module, the RDMA classes, /dev nodes
  netns_mode           "Y"/"N": sys/module/ib_core/parameters/netns_mode
  nvidia_version       sys/module/nvidia/version
  dyn_majors           {"infiniband_verbs": M, "infiniband_mad": M}: dynamic char majors
                       used past the fixed minors (uverbs >= 32, umad/issm >= 64)
  rdma_cm_minor        misc minor of /dev/infiniband/rdma_cm
  pci                  root ports; each function dict: bdf, kind (rp|up|down|ep|vf), model,
                       class, driver, numa (root ports), children, slot, sriov, vfs, rdma, net
  bonds                bonding masters: name, mode, slaves, active, miimon, mtu, ipv4, mac

Derived, as the kernel derives them: ifindex (registration order), mlx5_N kernel names
(lowest free, alloc_name), uverbs/umad/issm numbers (lowest free, ida), char majors/minors,
RoCE port state and GID table from the owning netdev, IPoIB addresses from the port GUID,
hca_type/hw_rev/board_id from the PCI function, bus number ranges of the bridges.
"""
import os
import shutil

from . import hw
from .sysfs import Tree

IB_UVERBS_MAJOR = 231
UVERBS_BASE_MINOR = 192
UVERBS_FIXED = 32
UMAD_FIXED = 64
RDMA_MAX_PORTS = 8192
UMAD_DYNAMIC = RDMA_MAX_PORTS - UMAD_FIXED

# module -> modules it depends on (for holders/ and refcnt)
DEPS = {
    "mlx5_ib": ["mlx5_core", "ib_uverbs", "ib_core"],
    "mlx4_ib": ["mlx4_core", "ib_uverbs", "ib_core"],
    "mlx4_en": ["mlx4_core"],
    "ib_uverbs": ["ib_core"],
    "ib_umad": ["ib_core"],
    "ib_ipoib": ["ib_cm", "ib_core"],
    "ib_cm": ["ib_core"],
    "iw_cm": ["ib_core"],
    "rdma_cm": ["iw_cm", "ib_cm", "ib_core"],
    "rdma_ucm": ["rdma_cm", "ib_uverbs", "ib_core"],
    "nvidia_peermem": ["nvidia", "ib_core"],
    "nvidia_uvm": ["nvidia"],
    "nvidia_modeset": ["nvidia"],
}
MODULAR_DRIVERS = {"mlx5_core", "mlx4_core", "nvidia", "igb", "ixgbe"}

IFF_UP, IFF_BROADCAST, IFF_LOOPBACK, IFF_MASTER, IFF_SLAVE, IFF_MULTICAST = 0x1, 0x2, 0x8, 0x400, 0x800, 0x1000


class SpecError(Exception):
    pass


def _lowest_free(used):
    i = 0
    while i in used:
        i += 1
    return i


class Builder:
    def __init__(self, spec, root):
        self.s = spec
        self.t = Tree(root)
        self.host = spec.get("hostname", spec["name"])
        self.mods = list(spec.get("modules", []))
        self.fns = []          # every PCI function, PCI order
        self.by_bdf = {}
        self.netdevs = {}      # name -> record
        self.rdma = []         # RDMA device records
        self.bonds = spec.get("bonds", [])

    # ------------------------------------------------------------------ PCI tree
    def walk_pci(self):
        cpus_all = "0-%d" % (self.s["cpus"] - 1)
        numa = self.s.get("numa", {})

        def visit(f, parent, parent_path, numa_node):
            bdf = f["bdf"]
            if bdf in self.by_bdf:
                raise SpecError("duplicate BDF " + bdf)
            if "numa" in f:
                numa_node = f["numa"]
            e = dict(spec=f, bdf=bdf, parent=parent, path=parent_path + "/" + bdf,
                     numa=numa_node if numa else -1, children=[], vfs=[], pf=None,
                     kind=f["kind"])
            e["cpulist"] = numa[numa_node] if numa else cpus_all
            self.by_bdf[bdf] = e
            self.fns.append(e)
            for c in f.get("children", []):
                e["children"].append(visit(c, e, e["path"], numa_node))
            for v in f.get("vfs", []):
                ve = visit(v, parent, parent_path, numa_node)
                ve["pf"] = e
                e["vfs"].append(ve)
            return e

        for rp in self.s["pci"]:
            dom, bus, _, _ = hw.parse_bdf(rp["bdf"])
            if rp["kind"] != "rp":
                raise SpecError("top-level PCI entries must be root ports: " + rp["bdf"])
            visit(rp, None, "sys/devices/pci%04x:%02x" % (dom, bus), rp.get("numa", 0))
        self.fns.sort(key=lambda e: hw.parse_bdf(e["bdf"]))
        self.check_buses()

    def check_buses(self):
        """Bridge bus ranges: children of a bridge sit on its secondary bus (> its own bus),
        the subordinate covers the subtree (VFs included), sibling bridges do not overlap,
        and VFs follow the PF's offset/stride."""
        def span(e):
            dom, bus, _, _ = hw.parse_bdf(e["bdf"])
            if not e["children"]:
                raise SpecError("bridge without children: " + e["bdf"])
            kids = e["children"] + [v for c in e["children"] for v in c["vfs"]]
            buses = {hw.parse_bdf(c["bdf"])[1] for c in e["children"]}
            if len(buses) != 1:
                raise SpecError("children of %s are on several buses" % e["bdf"])
            sec = buses.pop()
            if sec <= bus or any(hw.parse_bdf(k["bdf"])[0] != dom for k in kids):
                raise SpecError("bad secondary bus under " + e["bdf"])
            sub = max(hw.parse_bdf(k["bdf"])[1] for k in kids)
            spans = []
            for c in e["children"]:
                if c["kind"] in ("rp", "up", "down"):
                    lo, hi = span(c)
                    spans.append((lo, hi, c["bdf"]))
                    sub = max(sub, hi)
            spans.sort()
            for a, b in zip(spans, spans[1:]):
                if b[0] <= a[1]:
                    raise SpecError("bus ranges of %s and %s overlap" % (a[2], b[2]))
            e["sec"], e["sub"] = sec, sub
            return sec, sub

        hosts = {}
        for e in self.fns:
            if e["kind"] == "rp":
                dom, bus, _, _ = hw.parse_bdf(e["bdf"])
                hosts.setdefault((dom, bus), []).append(span(e) + (e["bdf"],))
        for (dom, bus), spans in hosts.items():
            spans.sort()
            for a, b in zip(spans, spans[1:]):
                if b[0] <= a[1]:
                    raise SpecError("bus ranges of %s and %s overlap" % (a[2], b[2]))
        for e in self.fns:
            sr = e["spec"].get("sriov")
            if not sr:
                continue
            dom, bus, _, _ = hw.parse_bdf(e["bdf"])
            if len(e["vfs"]) != sr["num"] or sr["num"] > sr["total"]:
                raise SpecError("sriov_numvfs mismatch on " + e["bdf"])
            for i, v in enumerate(e["vfs"]):
                rid = (bus << 8) + hw.devfn(e["bdf"]) + sr["offset"] + i * sr["stride"]
                want = hw.make_bdf(dom, rid >> 8, rid & 0xff)
                if v["bdf"] != want:
                    raise SpecError("VF %d of %s is %s, offset/stride say %s" % (i, e["bdf"], v["bdf"], want))

    # ------------------------------------------------------------------ registries
    def collect(self):
        # netdevs attached to PCI functions
        for e in self.fns:
            for n in e["spec"].get("net", []):
                if n["name"] in self.netdevs:
                    raise SpecError("duplicate netdev " + n["name"])
                rec = dict(n)
                rec.setdefault("kind", "eth")
                rec["fn"] = e
                rec["dir"] = e["path"] + "/net/" + n["name"]
                rec["phase"] = "vf" if e["kind"] == "vf" else ("ipoib" if rec["kind"] == "ipoib" else "eth")
                self.netdevs[n["name"]] = rec
            for r in e["spec"].get("rdma", []):
                rec = dict(r)
                rec["fn"] = e
                rec["phase"] = "vf" if e["kind"] == "vf" else "boot"
                self.rdma.append(rec)
        for b in self.bonds:
            rec = dict(b)
            rec["kind"] = "bond"
            rec["dir"] = "sys/devices/virtual/net/" + b["name"]
            rec["phase"] = "bond"
            rec["fn"] = None
            if b["name"] in self.netdevs:
                raise SpecError("duplicate netdev " + b["name"])
            self.netdevs[b["name"]] = rec
            for sl in b["slaves"]:
                if sl not in self.netdevs:
                    raise SpecError("bond %s: no slave %s" % (b["name"], sl))
                self.netdevs[sl]["master"] = b["name"]
        # ifindex: lo, Ethernet PF netdevs (mlx5_core/igb probe), IPoIB parents (ib_ipoib),
        # bonds (network configuration), then VF netdevs (sriov_numvfs written after boot)
        order = {"eth": 0, "ipoib": 1, "bond": 2, "vf": 3}
        recs = sorted(self.netdevs.values(),
                      key=lambda r: (order[r["phase"]],
                                     hw.parse_bdf(r["fn"]["bdf"]) if r["fn"] else (0, 0, 0, 0)))
        for i, r in enumerate(recs):
            r["ifindex"] = i + 2

    def assign_rdma_numbers(self):
        """Replay registration: boot devices in PCI order (a RoCE LAG device first registered
        as one mlx5_N per PF), then LAG activation (both PF devices unregistered, mlx5_bond_N
        registered), then VFs. Names and uverbs/umad numbers take the lowest free value."""
        names = set()      # kernel mlx5_%d numbers in use
        bond_names = set()
        uverbs = set()
        umad = set()
        for r in self.rdma:
            r["kname"] = None

        def reg(r, nports):
            if r.get("driver", "mlx5") == "mlx5":
                n = _lowest_free(names)
                names.add(n)
                kname = "mlx5_%d" % n
            else:
                kname = r["name"]
            u = _lowest_free(uverbs)
            uverbs.add(u)
            ms = []
            for _ in range(nports):
                m = _lowest_free(umad)
                umad.add(m)
                ms.append(m)
            return kname, u, ms

        boot = [r for r in self.rdma if r["phase"] == "boot"]
        vfs = [r for r in self.rdma if r["phase"] == "vf"]
        lag_tmp = {}
        for r in boot:
            if r.get("lag_members", 1) > 1:
                lag_tmp[id(r)] = [reg(r, 1) for _ in range(r["lag_members"])]
            else:
                r["kname"], r["uverbs"], r["umad"] = reg(r, len(r["ports"]))
        for r in boot:
            if id(r) in lag_tmp:
                for kname, u, ms in lag_tmp[id(r)]:
                    names.discard(int(kname.split("_")[-1]))
                    uverbs.discard(u)
                    umad.difference_update(ms)
                b = _lowest_free(bond_names)
                bond_names.add(b)
                r["kname"] = "mlx5_bond_%d" % b
                r["uverbs"] = _lowest_free(uverbs)
                uverbs.add(r["uverbs"])
                r["umad"] = []
                for _ in r["ports"]:
                    m = _lowest_free(umad)
                    umad.add(m)
                    r["umad"].append(m)
        for r in vfs:
            r["kname"], r["uverbs"], r["umad"] = reg(r, len(r["ports"]))
        seen = set()
        for r in self.rdma:
            # a spec name is either the kernel name or a udev rename (roce*/ib* names)
            r.setdefault("name", r["kname"])
            if r["name"].startswith("mlx5_") and r["name"] != r["kname"]:
                raise SpecError("%s would be named %s by the kernel" % (r["name"], r["kname"]))
            if r["name"] in seen:
                raise SpecError("duplicate RDMA device " + r["name"])
            seen.add(r["name"])

    # ------------------------------------------------------------------ netdev state helpers
    def running(self, n):
        return n.get("up", True)

    def carrier(self, n):
        if not self.running(n):
            return False
        if n["kind"] == "bond":
            return any(self.carrier(self.netdevs[s]) for s in n["slaves"])
        if n["kind"] == "ipoib" and "carrier" not in n:
            return self.ib_port(n)["state"] == 4
        return n.get("carrier", True)

    def ib_port(self, n):
        """The RDMA port under an IPoIB netdev (same PCI function, port n['port'])."""
        for r in self.rdma:
            if r["fn"] is n["fn"]:
                for p in r["ports"]:
                    if p["num"] == n.get("port", 1):
                        return p
        raise SpecError("IPoIB %s has no RDMA port" % n["name"])

    def address(self, n):
        if n["kind"] == "ipoib":
            p = self.ib_port(n)
            return hw.ipoib_address(n.get("qpn", 0x1087), p["port_guid"], n.get("connected_flag", False))
        if n["kind"] == "bond":
            if n.get("mac"):
                return n["mac"]
            slaves = [self.netdevs[s] for s in n["slaves"]]
            if slaves[0]["kind"] == "ipoib":   # fail_over_mac=active: the active slave's
                return self.address(self.netdevs[self.active_slave(n)])
            return slaves[0]["mac"]
        if n.get("master"):
            b = self.netdevs[n["master"]]
            if self.netdevs[b["slaves"][0]]["kind"] == "eth":
                return self.address(b)    # fail_over_mac=none: slaves take the bond's MAC
        return n["mac"]

    def active_slave(self, b):
        if b["mode"] != "active-backup":
            return None
        if b.get("active"):
            return b["active"]
        for s in b["slaves"]:
            if self.carrier(self.netdevs[s]):
                return s
        return None

    def port_state(self, r, p):
        """(state, phys_state, rate). RoCE ports follow their netdev (mlx5_query_port_roce):
        ACTIVE/LinkUp only when it runs with carrier; otherwise DOWN/Disabled, and a port
        without link reports the 4X QDR default speed."""
        if p["link_layer"] == "InfiniBand":
            return p["state"], p["phys_state"], p["rate"]
        n = self.netdevs[p["netdev"]]
        if self.running(n) and self.carrier(n):
            return 4, 5, p.get("rate") or hw.eth_rate(p["speed"])
        # an SR-IOV VF without link of its own reports the PF's speed ("rate_down"; openshift-docs
        # ibstatus of mlx5_3..9: "1: DOWN", "200 Gb/sec (4X HDR)"), a PF without link 4X QDR
        return 1, 3, p.get("rate_down") or hw.rate(*hw.ETH_NO_LINK)

    # ------------------------------------------------------------------ writers
    def write_pci(self):
        t = self.t
        ncpu = self.s["cpus"]
        drivers = {}
        for e in self.fns:
            f = e["spec"]
            m = f["model"]
            cls = f["class"]
            attrs = {
                "vendor": "0x%04x" % m["vendor"],
                "device": "0x%04x" % f.get("device", m["device"]),
                "subsystem_vendor": "0x%04x" % m["svendor"],
                "subsystem_device": "0x%04x" % m["sdevice"],
                "class": "0x%06x" % cls,
                "revision": "0x%02x" % m["rev"],
                "numa_node": e["numa"],
                "local_cpulist": e["cpulist"],
                "local_cpus": hw.cpumask(hw.parse_cpulist(e["cpulist"]), ncpu),
                "modalias": hw.modalias(m["vendor"], f.get("device", m["device"]), m["svendor"], m["sdevice"], cls),
                "enable": 1,
                "driver_override": "(null)",
            }
            if e["kind"] != "vf":
                up = e["parent"]
                if e["kind"] in ("rp", "down"):
                    partner = e["children"][0]["spec"]["model"] if e["children"] else m
                else:
                    partner = up["spec"]["model"] if up else m
                attrs["max_link_speed"] = hw.GEN[m["gen"]]
                attrs["max_link_width"] = m["width"]
                attrs["current_link_speed"] = hw.GEN[min(m["gen"], partner["gen"])]
                attrs["current_link_width"] = min(m["width"], partner["width"])
            if e["kind"] in ("rp", "up", "down"):
                attrs["secondary_bus_number"] = e["sec"]
                attrs["subordinate_bus_number"] = e["sub"]
            sr = f.get("sriov")
            if sr:
                attrs.update(sriov_totalvfs=sr["total"], sriov_numvfs=sr["num"], sriov_offset=sr["offset"],
                             sriov_stride=sr["stride"], sriov_vf_device="%x" % sr["vf_device"],
                             sriov_drivers_autoprobe=1)
            t.files(e["path"], attrs)
            t.link(e["path"] + "/subsystem", "sys/bus/pci")
            t.link("sys/bus/pci/devices/" + e["bdf"], e["path"])
            drv = f.get("driver")
            if drv:
                t.link(e["path"] + "/driver", "sys/bus/pci/drivers/" + drv)
                drivers.setdefault(drv, []).append(e)
            if e["pf"]:
                t.link(e["path"] + "/physfn", e["pf"]["path"])
            for i, v in enumerate(e["vfs"]):
                t.link(e["path"] + "/virtfn%d" % i, v["path"])
            if f.get("slot") is not None:
                dom, bus, dev, _ = hw.parse_bdf(e["bdf"])
                t.write("sys/bus/pci/slots/%d/address" % f["slot"], "%04x:%02x:%02x" % (dom, bus, dev))
        t.mkdir("sys/bus/pci/devices")
        for drv, es in drivers.items():
            d = "sys/bus/pci/drivers/" + drv
            t.mkdir(d)
            for e in es:
                t.link(d + "/" + e["bdf"], e["path"])
            if drv in MODULAR_DRIVERS and drv in self.mods:
                t.link(d + "/module", "sys/module/" + drv)
        self.drivers = drivers

    def write_rdma(self):
        t = self.t
        verbs_dyn = self.s.get("dyn_majors", {}).get("infiniband_verbs", 510)
        mad_dyn = self.s.get("dyn_majors", {}).get("infiniband_mad", 511)
        self.chardevs = []
        for r in self.rdma:
            e = r["fn"]
            f = e["spec"]
            m = f["model"]
            name = r["name"]
            d = e["path"] + "/infiniband/" + name
            t.files(d, {
                "node_type": "1: CA",
                "node_guid": hw.guid_sysfs(r["node_guid"]),
                "sys_image_guid": hw.guid_sysfs(r.get("sys_image_guid", r["node_guid"])),
                "fw_ver": r["fw_ver"],
                "hca_type": hw.hca_type(f.get("device", m["device"])),
                "hw_rev": "%x" % m["rev"],
                "board_id": r.get("board_id", m["board"]),
                "node_desc": r.get("node_desc", "%s %s" % (self.host, name)),
            })
            t.link(d + "/device", e["path"])
            t.link(d + "/subsystem", "sys/class/infiniband")
            t.link("sys/class/infiniband/" + name, d)
            for p in r["ports"]:
                self.write_port(d + "/ports/%d" % p["num"], r, p)
            # user verbs: one per device
            u = r["uverbs"]
            dev = (IB_UVERBS_MAJOR, UVERBS_BASE_MINOR + u) if u < UVERBS_FIXED else (verbs_dyn, u - UVERBS_FIXED)
            if "ib_uverbs" in self.mods:
                ud = e["path"] + "/infiniband_verbs/uverbs%d" % u
                t.files(ud, {"ibdev": name, "abi_version": m.get("uverbs_abi", 1), "dev": "%d:%d" % dev})
                t.link(ud + "/device", e["path"])
                t.link(ud + "/subsystem", "sys/class/infiniband_verbs")
                t.link("sys/class/infiniband_verbs/uverbs%d" % u, ud)
                self.chardevs.append(("uverbs%d" % u, dev, 0o666))
            if "ib_umad" in self.mods:
                for p, mnum in zip(r["ports"], r["umad"]):
                    if mnum < UMAD_FIXED:
                        dmad, dissm = (IB_UVERBS_MAJOR, mnum), (IB_UVERBS_MAJOR, UMAD_FIXED + mnum)
                    else:
                        dmad = (mad_dyn, mnum - UMAD_FIXED)
                        dissm = (mad_dyn, UMAD_DYNAMIC + mnum - UMAD_FIXED)
                    for kind, dv in (("umad", dmad), ("issm", dissm)):
                        cd = e["path"] + "/infiniband_mad/%s%d" % (kind, mnum)
                        t.files(cd, {"ibdev": name, "port": p["num"], "dev": "%d:%d" % dv})
                        t.link(cd + "/device", e["path"])
                        t.link(cd + "/subsystem", "sys/class/infiniband_mad")
                        t.link("sys/class/infiniband_mad/%s%d" % (kind, mnum), cd)
                        self.chardevs.append(("%s%d" % (kind, mnum), dv, 0o600))

    def write_port(self, d, r, p):
        t = self.t
        state, phys, rate = self.port_state(r, p)
        ib = p["link_layer"] == "InfiniBand"
        t.files(d, {
            "state": "%d: %s" % (state, hw.PORT_STATE[state]),
            "phys_state": "%d: %s" % (phys, hw.PHYS_STATE[phys]),
            "rate": rate,
            "link_layer": p["link_layer"],
            "lid": "0x%x" % (p["lid"] if ib else 0),
            "sm_lid": "0x%x" % (p["sm_lid"] if ib else 0),
            "sm_sl": p.get("sm_sl", 0) if ib else 0,
            "lid_mask_count": p.get("lmc", 0) if ib else 0,
            "cap_mask": "0x%08x" % p["cap_mask"],
        })
        # GID table: (gid, type, ndev) per index; None = empty slot
        n = p.get("gid_tbl_len", 8 if ib else 255)
        table = [None] * n
        if ib:
            p_guid = hw.guid(p["port_guid"])
            table[0] = (hw.gid_link_local(p_guid), "IB/RoCE v1", None)
        else:
            nd = self.netdevs[p["netdev"]]
            ll = hw.gid_link_local(hw.eui64_from_mac(self.address(nd)))
            ents = [ll]
            for ip in nd.get("ipv4", []):
                ents.append(hw.gid_ipv4(ip))
            i = 0
            for g in ents:
                for typ in ("IB/RoCE v1", "RoCE v2"):
                    table[i] = (g, typ, p["netdev"])
                    i += 1
            p["port_guid"] = hw.eui64_from_mac(self.address(nd))
        for i, ent in enumerate(table):
            if ent is None:
                t.write(d + "/gids/%d" % i, hw.ZERO_GID)
                t.write_empty(d + "/gid_attrs/types/%d" % i)
                t.write_empty(d + "/gid_attrs/ndevs/%d" % i)
            else:
                t.write(d + "/gids/%d" % i, ent[0])
                t.write(d + "/gid_attrs/types/%d" % i, ent[1])
                if ent[2] is None:
                    t.write_empty(d + "/gid_attrs/ndevs/%d" % i)
                else:
                    t.write(d + "/gid_attrs/ndevs/%d" % i, ent[2])
        # counters read 0 on a quiet fabric; tests set their own values in a copy
        if p.get("counters", True):
            for c in hw.PMA_COUNTERS:
                t.write(d + "/counters/" + c, 0)
            for c in hw.HW_COUNTERS_QP + (() if ib else hw.HW_COUNTERS_ROCE):
                t.write(d + "/hw_counters/" + c, 0)
            t.write(d + "/hw_counters/lifespan", 10)
        npk = p.get("pkey_tbl_len", 128 if ib else 1)
        pkeys = p.get("pkeys", {0: 0xffff})
        for i in range(npk):
            t.write(d + "/pkeys/%d" % i, "0x%04x" % pkeys.get(i, 0))

    def write_netdevs(self):
        t = self.t
        lo = "sys/devices/virtual/net/lo"
        t.files(lo, {"ifindex": 1, "iflink": 1, "type": 772, "addr_len": 6, "address": "00:00:00:00:00:00",
                     "broadcast": "00:00:00:00:00:00", "operstate": "unknown", "carrier": 1, "mtu": 65536,
                     "dev_port": 0, "dev_id": "0x0", "flags": "0x%x" % (IFF_UP | IFF_LOOPBACK),
                     "tx_queue_len": 1000, "addr_assign_type": 0, "link_mode": 0})
        t.write_empty(lo + "/ifalias")
        t.link(lo + "/subsystem", "sys/class/net")
        t.link("sys/class/net/lo", lo)
        for n in sorted(self.netdevs.values(), key=lambda r: r["ifindex"]):
            d = n["dir"]
            up = self.running(n)
            car = self.carrier(n)
            kind = n["kind"]
            ipoib = kind == "ipoib" or (kind == "bond" and self.netdevs[n["slaves"][0]]["kind"] == "ipoib")
            flags = IFF_BROADCAST | IFF_MULTICAST | (IFF_UP if up else 0)
            if kind == "bond":
                flags |= IFF_MASTER
            if n.get("master"):
                flags |= IFF_SLAVE
            if kind == "bond":
                aat = 3 if n.get("mac") else 2     # NET_ADDR_SET / NET_ADDR_STOLEN
            else:
                aat = 0
            port = self.ib_port(n)["num"] - 1 if kind == "ipoib" else 0
            attrs = {
                "ifindex": n["ifindex"], "iflink": n["ifindex"],
                "type": 32 if ipoib else 1,
                "addr_len": 20 if ipoib else 6,
                "address": self.address(n),
                "broadcast": hw.IPOIB_BROADCAST if ipoib else "ff:ff:ff:ff:ff:ff",
                "operstate": "up" if car else "down",
                "mtu": n.get("mtu", 2044 if ipoib else 1500),
                "dev_port": port, "dev_id": "0x%x" % port,
                "flags": "0x%x" % flags,
                "tx_queue_len": n.get("tx_queue_len", 256 if kind == "ipoib" else 1000),
                "addr_assign_type": aat,
                "link_mode": 0,
            }
            t.files(d, attrs)
            if up:
                t.write(d + "/carrier", 1 if car else 0)
            else:
                t.write_empty(d + "/carrier")          # EINVAL while admin down
            t.write_empty(d + "/ifalias")
            if kind == "ipoib":
                t.files(d, {"pkey": "0xffff", "mode": "datagram", "umcast": 0})
            if n["fn"]:
                t.link(d + "/device", n["fn"]["path"])
            t.link(d + "/subsystem", "sys/class/net")
            t.link("sys/class/net/" + n["name"], d)
            if kind == "bond":
                self.write_bond(n)
        if "bonding" in self.mods:
            names = " ".join(b["name"] for b in self.bonds)
            t.write_raw("sys/class/net/bonding_masters", names + "\n" if names else "")

    def write_bond(self, b):
        t = self.t
        d = b["dir"]
        ab = b["mode"] == "active-backup"
        mode = {"active-backup": "active-backup 1", "802.3ad": "802.3ad 4", "balance-xor": "balance-xor 2"}[b["mode"]]
        ipoib = self.netdevs[b["slaves"][0]]["kind"] == "ipoib"
        active = self.active_slave(b)
        bd = d + "/bonding"
        t.files(bd, {
            "mode": mode,
            "slaves": " ".join(b["slaves"]),
            "miimon": b.get("miimon", 100),
            "mii_status": "up" if self.carrier(b) else "down",
            "fail_over_mac": "active 1" if ipoib else "none 0",
            "xmit_hash_policy": b.get("xmit_hash_policy", "layer2 0"),
            "lacp_rate": b.get("lacp_rate", "slow 0"),
        })
        if active:
            t.write(bd + "/active_slave", active)
        else:
            t.write_empty(bd + "/active_slave")      # no active slave (802.3ad): prints nothing
        t.write_empty(bd + "/primary")
        for s in b["slaves"]:
            sn = self.netdevs[s]
            t.link(d + "/lower_" + s, sn["dir"])
            t.link(sn["dir"] + "/master", d)
            t.link(sn["dir"] + "/upper_" + b["name"], d)
            car = self.carrier(sn)
            if ab:
                state = "active" if s == active else "backup"
            else:
                state = "active" if car else "backup"
            perm = self.address(sn) if sn["kind"] == "ipoib" else sn["mac"]
            attrs = {"state": state, "mii_status": "up" if car else "down", "link_failure_count": 0,
                     "perm_hwaddr": perm, "queue_id": 0}
            if b["mode"] == "802.3ad":
                attrs["ad_aggregator_id"] = 1
            t.files(sn["dir"] + "/bonding_slave", attrs)

    def write_kernel(self):
        t = self.t
        mods = self.mods
        holders = {m: [] for m in mods}
        for m in mods:
            for dep in DEPS.get(m, []):
                if dep in holders:
                    holders[dep].append(m)
        for m in mods:
            d = "sys/module/" + m
            t.files(d, {"initstate": "live", "refcnt": len(holders[m])})
            t.mkdir(d + "/holders")
            for h in holders[m]:
                t.link(d + "/holders/" + h, "sys/module/" + h)
            if m in self.drivers:
                t.link(d + "/drivers/pci:" + m, "sys/bus/pci/drivers/" + m)
        if "ib_core" in mods:
            t.write("sys/module/ib_core/parameters/netns_mode", self.s.get("netns_mode", "Y"))
            t.mkdir("sys/class/infiniband")
        if "nvidia" in mods and self.s.get("nvidia_version"):
            t.write("sys/module/nvidia/version", self.s["nvidia_version"])
        if "ib_uverbs" in mods:
            t.write("sys/class/infiniband_verbs/abi_version", 6)
        if "ib_umad" in mods:
            t.write("sys/class/infiniband_mad/abi_version", 5)
        t.mkdir("sys/class/net")
        t.mkdir("dev")
        if any(m in mods for m in ("ib_uverbs", "ib_umad", "rdma_ucm")):
            t.mkdir("dev/infiniband")
        for name, (ma, mi), mode in self.chardevs:
            t.chardev("dev/infiniband/" + name, ma, mi, mode)
        if "rdma_ucm" in mods:
            minor = self.s.get("rdma_cm_minor", 58)
            d = "sys/devices/virtual/misc/rdma_cm"
            t.write(d + "/dev", "10:%d" % minor)
            t.link(d + "/subsystem", "sys/class/misc")
            t.link("sys/class/misc/rdma_cm", d)
            t.chardev("dev/infiniband/rdma_cm", 10, minor, 0o666)
        gpus = [e for e in self.fns if e["spec"].get("driver") == "nvidia"]
        if gpus and "nvidia" in mods:
            for i, e in enumerate(gpus):
                t.chardev("dev/nvidia%d" % i, 195, i, 0o666)
            t.chardev("dev/nvidiactl", 195, 255, 0o666)

    def run(self):
        self.walk_pci()
        self.collect()
        self.assign_rdma_numbers()
        self.write_pci()
        self.write_rdma()      # before netdevs: RoCE port_guid is filled here
        self.write_netdevs()
        self.write_kernel()
        return self


def build(spec, outdir):
    root = os.path.join(outdir, spec["name"])
    if os.path.lexists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    b = Builder(spec, root).run()
    return b
