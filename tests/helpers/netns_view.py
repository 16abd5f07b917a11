# SPDX-License-Identifier: Apache-2.0
"""Split a sample node's sysfs as the kernel shows it once the RDMA CNI moved VFs into a pod in
the RDMA subsystem's exclusive netns mode.

    netns_view.py ROOT NS_SYSFS DEV=IFNAME...

ROOT is a copy of a sample node (ROOT/sys). Each DEV (an RDMA device of a PCI function) moves with
that function's netdev, renamed IFNAME. Afterwards ROOT/sys is the host's view and NS_SYSFS (made
here, a sysfs root) the pod namespace's view. What the kernel filters by network namespace is
what sysfs tags: class/net and each device's net/ entries (netdevs), class/infiniband and each
device's infiniband/ entries (ib_core's class carries the net namespace type). The rest (the PCI
tree, class/infiniband_verbs, class/infiniband_mad, module parameters) every namespace sees
whole. Both views keep the empty net/ and infiniband/ folders a namespace has no entry in."""
import os
import shutil
import sys


def real(sysfs, link):
    return os.path.realpath(os.path.join(sysfs, link))


def main():
    root, ns = sys.argv[1], sys.argv[2]
    host = os.path.join(root, "sys")
    moves = dict(a.split("=", 1) for a in sys.argv[3:])
    shutil.copytree(host, ns, symlinks=True)
    netdevs = {}  # old name -> new name
    for dev, ifname in moves.items():
        fn = os.path.dirname(os.path.dirname(real(host, "class/infiniband/" + dev)))
        names = sorted(os.listdir(os.path.join(fn, "net"))) if os.path.isdir(os.path.join(fn, "net")) else []
        if len(names) != 1:
            sys.exit("%s: expected one netdev on its PCI function, found %s" % (dev, names))
        netdevs[names[0]] = ifname
    # the pod's view: only the moved devices and netdevs (and its own lo)
    for name in os.listdir(os.path.join(ns, "class/infiniband")):
        if name not in moves:
            shutil.rmtree(real(ns, "class/infiniband/" + name))
            os.unlink(os.path.join(ns, "class/infiniband", name))
    for name in os.listdir(os.path.join(ns, "class/net")):
        if name == "lo":
            continue
        path = real(ns, "class/net/" + name)
        os.unlink(os.path.join(ns, "class/net", name))
        if name not in netdevs:
            shutil.rmtree(path)
            continue
        new = os.path.join(os.path.dirname(path), netdevs[name])
        os.rename(path, new)
        os.symlink(os.path.relpath(new, os.path.join(ns, "class/net")),
                   os.path.join(ns, "class/net", netdevs[name]))
        uevent = os.path.join(new, "uevent")
        if os.path.isfile(uevent):
            text = open(uevent).read().replace("INTERFACE=%s\n" % name, "INTERFACE=%s\n" % netdevs[name])
            open(uevent, "w").write(text)
    for dev in moves:
        ports = os.path.join(real(ns, "class/infiniband/" + dev), "ports")
        for port in os.listdir(ports):
            ndevs = os.path.join(ports, port, "gid_attrs", "ndevs")
            for f in os.listdir(ndevs) if os.path.isdir(ndevs) else []:
                p = os.path.join(ndevs, f)
                try:
                    v = open(p).read().strip()
                except OSError:
                    continue
                if v in netdevs:
                    open(p, "w").write(netdevs[v] + "\n")
    # the host's view: without them
    for dev in moves:
        shutil.rmtree(real(host, "class/infiniband/" + dev))
        os.unlink(os.path.join(host, "class/infiniband", dev))
    for name in netdevs:
        shutil.rmtree(real(host, "class/net/" + name))
        os.unlink(os.path.join(host, "class/net", name))


if __name__ == "__main__":
    main()
