#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sample nodes (examples/nodes, made by tools/gen-nodes.py) hold only what a real kernel
# could show: on every node, each invariant below that sysfs/devfs guarantee is checked.
. "$(dirname "$0")/../lib.sh"

cat >"$TMP/check.py" <<'PY'
import os, re, stat, sys

root = sys.argv[1]
res = {}          # check -> list of problems


def bad(check, msg):
    res.setdefault(check, []).append(msg)


def checked(*names):
    for n in names:
        res.setdefault(n, [])


root = os.path.realpath(root)
ROOTLEN = len(root) + 1
_real = {}


def realpath(p, depth=0):
    """os.path.realpath with every prefix memoised (the big node has ~25k links)."""
    if p in _real:
        return _real[p]
    parent, name = os.path.split(p)
    if not name or depth > 40:
        return p
    q = os.path.join(realpath(parent, depth + 1), name)
    if os.path.islink(q):
        q = realpath(os.path.normpath(os.path.join(os.path.dirname(q), os.readlink(q))), depth + 1)
    _real[p] = q
    return q


def rel(p):
    return p[ROOTLEN:] if p.startswith(root + "/") else os.path.relpath(p, root)


def read(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def kernel_link(link, target):
    """kernfs_get_target_path: up from the link's directory to a directory holding the
    target's parent, then down."""
    base, tparent, ups = os.path.dirname(link), os.path.dirname(target), 0
    while base and not (tparent == base or tparent.startswith(base + "/")):
        base, ups = os.path.dirname(base), ups + 1
    return "../" * ups + (target[len(base) + 1:] if base else target)


sysd = os.path.join(root, "sys")
checked("links-resolve", "links-kernel-depth", "links-where", "newline", "gids", "gid-attrs", "rate",
        "port-attrs", "ib-class", "chardev-ibdev", "chardev-nodes", "chardev-numbers", "umad-per-port",
        "sriov", "ipoib-guid", "pci-functions", "netdevs", "bonds")

# ---- walk everything once ------------------------------------------------------------------
links, files, dirs = [], [], []
stack = [root]
while stack:
    with os.scandir(stack.pop()) as it:
        for e in it:
            if e.is_symlink():
                links.append(e.path)
            elif e.is_dir(follow_symlinks=False):
                dirs.append(e.path)
                stack.append(e.path)
            else:
                files.append(e.path)
links.sort(), files.sort(), dirs.sort()

for l in links:
    t = os.readlink(l)
    real = realpath(l)
    if t.startswith("/"):
        bad("links-resolve", "%s -> %s is absolute" % (rel(l), t))
    elif not real.startswith(root + "/") or not os.path.exists(real):
        bad("links-resolve", "%s -> %s does not resolve inside the node" % (rel(l), t))
    else:
        want = kernel_link(rel(l), rel(real))
        if t != want:
            bad("links-kernel-depth", "%s -> %s, the kernel writes %s" % (rel(l), t, want))

# real directories only under sys/devices (plus the bus/driver/module/class skeletons)
for d in dirs:
    r = rel(d)
    parts = r.split("/")
    if r.startswith("sys/class/") and len(parts) > 3:
        bad("links-where", "real directory %s under sys/class" % r)
    if r.startswith("sys/bus/pci/devices/"):
        bad("links-where", "real directory %s under sys/bus/pci/devices" % r)
for f in files:
    r = rel(f)
    parts = r.split("/")
    if r.startswith("sys/class/") and not (len(parts) == 4 and parts[3] in ("abi_version", "bonding_masters")):
        bad("links-where", "regular file %s under sys/class" % r)
    if r.startswith("sys/bus/pci/devices/"):
        bad("links-where", "regular file %s under sys/bus/pci/devices" % r)
for l in links:
    r = rel(l)
    if r.startswith(("sys/class/", "sys/bus/pci/devices/")) and not rel(realpath(l)).startswith("sys/devices/"):
        bad("links-where", "%s does not point into sys/devices" % r)

# ---- file contents ------------------------------------------------------------------------
EMPTY_OK = re.compile(r"/gid_attrs/(types|ndevs)/\d+$|/(carrier|active_slave|primary|ifalias|bonding_masters)$")
GID = re.compile(r"^([0-9a-f]{4}:){7}[0-9a-f]{4}\n$")
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000\n"
RATE = re.compile(r"^(\d+)(\.5)? Gb/sec \((1|2|4|8|12)X (SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\)\n$")
LANE = {"SDR": 25, "DDR": 50, "QDR": 100, "FDR10": 100, "FDR": 140, "EDR": 250, "HDR": 500, "NDR": 1000, "XDR": 2000}
STATES = {"0: NOP", "1: DOWN", "2: INIT", "3: ARMED", "4: ACTIVE", "5: ACTIVE_DEFER"}
PHYS = {"0: <unknown>", "1: Sleep", "2: Polling", "3: Disabled", "4: PortConfigurationTraining",
        "5: LinkUp", "6: LinkErrorRecovery", "7: Phy Test"}
for f in files:
    r = rel(f)
    if not r.startswith("sys/"):
        continue
    c = read(f)
    if c == "":
        if not EMPTY_OK.search(r):
            bad("newline", "%s is empty" % r)
    elif not c.endswith("\n") or c.count("\n") != 1 and "/uevent" not in r:
        bad("newline", "%s: %r is not one line ending in a newline" % (r, c[:60]))

# ---- RDMA devices -----------------------------------------------------------------------------
pci_real = {}
pcidir = os.path.join(sysd, "bus/pci/devices")
for b in sorted(os.listdir(pcidir)) if os.path.isdir(pcidir) else []:
    pci_real[realpath(os.path.join(pcidir, b))] = b

ibdevs = {}       # name -> real dir
port_guids = set()
icls = os.path.join(sysd, "class/infiniband")
for n in sorted(os.listdir(icls)) if os.path.isdir(icls) else []:
    d = realpath(os.path.join(icls, n))
    ibdevs[n] = d
    if not rel(d).startswith("sys/devices/") or not os.path.isdir(d):
        bad("ib-class", "class/infiniband/%s is not a directory under sys/devices" % n)
        continue
    dev = realpath(os.path.join(d, "device"))
    if dev not in pci_real:
        bad("ib-class", "%s/device is not a PCI function listed in sys/bus/pci/devices" % n)
    elif os.path.dirname(d) != os.path.join(dev, "infiniband"):
        bad("ib-class", "%s does not live in its PCI function's infiniband/ directory" % n)
    for pn in sorted(os.listdir(os.path.join(d, "ports"))):
        pd = os.path.join(d, "ports", pn)
        ll = read(os.path.join(pd, "link_layer")).strip()
        st, ph = read(os.path.join(pd, "state")).strip(), read(os.path.join(pd, "phys_state")).strip()
        if st not in STATES or ph not in PHYS:
            bad("port-attrs", "%s/%s state %r phys_state %r" % (n, pn, st, ph))
        for a, rx in (("lid", r"^0x[0-9a-f]+\n$"), ("sm_lid", r"^0x[0-9a-f]+\n$"), ("cap_mask", r"^0x[0-9a-f]{8}\n$"),
                      ("sm_sl", r"^\d+\n$"), ("lid_mask_count", r"^\d+\n$")):
            if not re.match(rx, read(os.path.join(pd, a))):
                bad("port-attrs", "%s/%s/%s = %r" % (n, pn, a, read(os.path.join(pd, a))))
        if ll == "Ethernet" and read(os.path.join(pd, "lid")) != "0x0\n":
            bad("port-attrs", "%s/%s: RoCE port with a LID" % (n, pn))
        m = RATE.match(read(os.path.join(pd, "rate")))
        if not m:
            bad("rate", "%s/%s rate %r" % (n, pn, read(os.path.join(pd, "rate"))))
        else:
            deci = LANE[m.group(4)] * int(m.group(3))
            if (int(m.group(1)), bool(m.group(2))) != (deci // 10, bool(deci % 10)):
                bad("rate", "%s/%s rate %r is not lane x width" % (n, pn, m.group(0)))
        gids = os.listdir(os.path.join(pd, "gids"))
        ng = len(gids)
        if sorted(map(int, gids)) != list(range(ng)):
            bad("gids", "%s/%s: gid indexes are not 0..%d" % (n, pn, ng - 1))
        for i in range(ng):
            g = read(os.path.join(pd, "gids", str(i)))
            ty = read(os.path.join(pd, "gid_attrs/types", str(i)))
            nd = read(os.path.join(pd, "gid_attrs/ndevs", str(i)))
            if not GID.match(g):
                bad("gids", "%s/%s/gids/%d = %r" % (n, pn, i, g))
            if g == ZERO:
                if ty or nd:
                    bad("gid-attrs", "%s/%s: empty GID %d has attributes (the kernel says EINVAL)" % (n, pn, i))
            elif ty not in ("IB/RoCE v1\n", "RoCE v2\n"):
                bad("gid-attrs", "%s/%s: types/%d = %r" % (n, pn, i, ty))
            elif ll == "InfiniBand" and nd:
                bad("gid-attrs", "%s/%s: IB GID %d has a netdev" % (n, pn, i))
            elif ll == "Ethernet" and not os.path.isdir(os.path.join(sysd, "class/net", nd.strip())):
                bad("gid-attrs", "%s/%s: ndevs/%d = %r is not a netdev" % (n, pn, i, nd))
        g0 = read(os.path.join(pd, "gids/0"))
        if ll == "InfiniBand":
            if not g0.startswith("fe80:0000:0000:0000:") or g0 == ZERO or ng != 8 and ng != 128:
                bad("gids", "%s/%s: IB GID0 %r / table %d" % (n, pn, g0.strip(), ng))
            port_guids.add(g0.strip()[20:].replace(":", ""))
        elif ng not in (255, 256):
            bad("gids", "%s/%s: RoCE GID table of %d entries" % (n, pn, ng))
        npk = len(os.listdir(os.path.join(pd, "pkeys")))
        if npk != (1 if ll == "Ethernet" else 128) or read(os.path.join(pd, "pkeys/0")) not in ("0xffff\n", "0x7fff\n"):
            bad("port-attrs", "%s/%s: %d pkeys, pkeys/0 %r" % (n, pn, npk, read(os.path.join(pd, "pkeys/0"))))

# ---- char devices --------------------------------------------------------------------------
devib = os.path.join(root, "dev/infiniband")
seen_nodes = set()
ports_with_umad = {}
for cls, pat in (("infiniband_verbs", "uverbs"), ("infiniband_mad", "umad"), ("infiniband_mad", "issm")):
    cd = os.path.join(sysd, "class", cls)
    for e in sorted(os.listdir(cd)) if os.path.isdir(cd) else []:
        m = re.match(pat + r"(\d+)$", e)
        if not m:
            continue
        num = int(m.group(1))
        d = os.path.join(cd, e)
        ib = read(os.path.join(d, "ibdev")).strip()
        if ib not in ibdevs:
            bad("chardev-ibdev", "%s/%s/ibdev names %r, not an RDMA device" % (cls, e, ib))
        elif realpath(os.path.join(d, "device")) != realpath(os.path.join(ibdevs[ib], "device")):
            bad("chardev-ibdev", "%s/%s/device is not %s's parent" % (cls, e, ib))
        ma, mi = map(int, read(os.path.join(d, "dev")).split(":"))
        fixed = {"uverbs": (num < 32, (231, 192 + num)), "umad": (num < 64, (231, num)),
                 "issm": (num < 64, (231, 64 + num))}[pat]
        if fixed[0] and (ma, mi) != fixed[1]:
            bad("chardev-numbers", "%s%d is %d:%d, the kernel uses %d:%d" % (pat, num, ma, mi) + fixed[1])
        if not fixed[0] and ma == 231:
            bad("chardev-numbers", "%s%d past the fixed minors but on major 231" % (pat, num))
        if pat != "uverbs":
            key = (ib, read(os.path.join(d, "port")).strip())
            ports_with_umad.setdefault(key, []).append(pat)
        node = os.path.join(devib, e)
        seen_nodes.add(e)
        try:
            st = os.lstat(node)
        except OSError:
            bad("chardev-nodes", "no dev/infiniband/%s" % e)
            continue
        if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (ma, mi):
            bad("chardev-nodes", "dev/infiniband/%s is not char %d:%d" % (e, ma, mi))
        want = 0o666 if pat == "uverbs" else 0o600
        if stat.S_IMODE(st.st_mode) != want:
            bad("chardev-nodes", "dev/infiniband/%s mode %o" % (e, stat.S_IMODE(st.st_mode)))
if os.path.isdir(devib):
    for e in os.listdir(devib):
        if e == "rdma_cm":
            st = os.lstat(os.path.join(devib, e))
            want = read(os.path.join(sysd, "class/misc/rdma_cm/dev")).strip()
            if "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) != want or not stat.S_ISCHR(st.st_mode):
                bad("chardev-nodes", "dev/infiniband/rdma_cm is not %s" % want)
        elif e not in seen_nodes:
            bad("chardev-nodes", "dev/infiniband/%s has no class device" % e)
for n, d in ibdevs.items():
    for pn in os.listdir(os.path.join(d, "ports")):
        if sorted(ports_with_umad.get((n, pn), [])) != ["issm", "umad"]:
            bad("umad-per-port", "%s port %s has %s" % (n, pn, ports_with_umad.get((n, pn))))

# ---- SR-IOV --------------------------------------------------------------------------------
virtfns = {}      # PF real path -> real paths its virtfn links point to
for real in pci_real:
    virtfns[real] = [realpath(os.path.join(real, v)) for v in os.listdir(real) if re.match(r"virtfn\d+$", v)]
for real, b in pci_real.items():
    pf = os.path.join(real, "physfn")
    if os.path.islink(pf):
        pfr = realpath(pf)
        back = virtfns.get(pfr, []).count(real)
        if back != 1:
            bad("sriov", "VF %s: its PF %s has %d virtfn links back" % (b, pci_real.get(pfr), back))
    vfs = [v for v in os.listdir(real) if re.match(r"virtfn\d+$", v)]
    if vfs or os.path.exists(os.path.join(real, "sriov_numvfs")):
        num = int(read(os.path.join(real, "sriov_numvfs")))
        if sorted(int(v[6:]) for v in vfs) != list(range(num)) or num > int(read(os.path.join(real, "sriov_totalvfs"))):
            bad("sriov", "PF %s: sriov_numvfs %d, virtfn links %d" % (b, num, len(vfs)))
        for v in vfs:
            vr = realpath(os.path.join(real, v))
            if realpath(os.path.join(vr, "physfn")) != real:
                bad("sriov", "%s/%s has no physfn back" % (b, v))
            elif os.path.dirname(vr) != os.path.dirname(real):
                bad("sriov", "%s/%s is not a sibling of its PF" % (b, v))

# ---- PCI functions ---------------------------------------------------------------------------
BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
for d in dirs:
    r = rel(d)
    if r.startswith("sys/devices/pci") and BDF.match(os.path.basename(d)):
        if realpath(d) not in pci_real:
            bad("pci-functions", "%s is not in sys/bus/pci/devices" % r)
        for a in ("vendor", "device", "subsystem_vendor", "subsystem_device", "class", "revision",
                  "numa_node", "local_cpulist", "modalias", "enable"):
            if not os.path.isfile(os.path.join(d, a)):
                bad("pci-functions", "%s has no %s" % (r, a))
        par = os.path.basename(os.path.dirname(d))
        if BDF.match(par) and read(os.path.join(os.path.dirname(d), "class")).strip() != "0x060400":
            bad("pci-functions", "%s sits under %s, which is not a bridge" % (r, par))
        drv = os.path.join(d, "driver")
        if os.path.islink(drv) and not os.path.islink(os.path.join(realpath(drv), os.path.basename(d))):
            bad("pci-functions", "%s: driver %s does not list it" % (r, os.path.basename(realpath(drv))))

# ---- netdevs, IPoIB, bonds ---------------------------------------------------------------------
ncls = os.path.join(sysd, "class/net")
ifidx = {}
for n in sorted(os.listdir(ncls)) if os.path.isdir(ncls) else []:
    d = os.path.join(ncls, n)
    if n == "bonding_masters":
        continue
    i = read(os.path.join(d, "ifindex")).strip()
    if i in ifidx:
        bad("netdevs", "%s and %s share ifindex %s" % (n, ifidx[i], i))
    ifidx[i] = n
    typ = read(os.path.join(d, "type")).strip()
    addr = read(os.path.join(d, "address")).strip().split(":")
    alen = int(read(os.path.join(d, "addr_len")))
    if len(addr) != alen:
        bad("netdevs", "%s: address has %d bytes, addr_len %d" % (n, len(addr), alen))
    if typ == "32":
        if "".join(addr[12:20]) not in port_guids:
            bad("ipoib-guid", "%s: address bytes 13..20 (%s) are no IB port's GUID" % (n, ":".join(addr[12:20])))
    car = read(os.path.join(d, "carrier"))
    flags = int(read(os.path.join(d, "flags")), 16)
    if (car == "") != (not flags & 1):
        bad("netdevs", "%s: carrier %r with flags %#x (carrier reads EINVAL exactly when down)" % (n, car, flags))
    if os.path.isdir(os.path.join(d, "bonding")):
        slaves = read(os.path.join(d, "bonding/slaves")).split()
        for s in slaves:
            if realpath(os.path.join(ncls, s, "master")) != realpath(d):
                bad("bonds", "%s: slave %s has no master link back" % (n, s))
            if not os.path.islink(os.path.join(d, "lower_" + s)):
                bad("bonds", "%s: no lower_%s" % (n, s))
        act = read(os.path.join(d, "bonding/active_slave")).strip()
        mode = read(os.path.join(d, "bonding/mode")).strip()
        if act and (act not in slaves or not mode.startswith("active-backup")):
            bad("bonds", "%s: active_slave %s in mode %s" % (n, act, mode))
        if act and read(os.path.join(d, "address")) != read(os.path.join(ncls, act, "address")):
            bad("bonds", "%s: address is not the active slave's" % n)

for k in sorted(res):
    v = res[k]
    print("%s\t%s\t%s" % (k, "bad" if v else "ok", "; ".join(v[:5]) + (" (+%d more)" % (len(v) - 5) if len(v) > 5 else "")))
PY

nodes=$(ls -d "$NODES"/*/ 2>/dev/null)
[ -n "$nodes" ]; ok $? "sample nodes exist in $NODES"
for node in $nodes; do
	name=$(basename "$node")
	python3 "$TMP/check.py" "${node%/}" >"$TMP/res" 2>"$TMP/err"
	ok $? "$name: checker runs"
	[ -s "$TMP/err" ] && sed 's/^/#   /' "$TMP/err" | head -5
	while IFS=$'\t' read -r check status detail; do
		is "$status" ok "$name: $check"
		[ "$status" = ok ] || printf '#   %s\n' "$detail"
	done <"$TMP/res"
done
done_testing
