#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Canonical, line-per-object dump of one network namespace's state, from `ip -j`, for the CNI
tests: leak counting (diff a dump taken before ADD with one taken after DEL) and comparing what two
plugin chains left in a pod.

    netstate.py NETNS [--no-mac] [--no-linklocal] [--tables]

Lines (sorted): `link NAME kind=K mtu=M up=0|1 [mac=..]`, `addr IF ADDR/LEN`,
`rule4|rule6 PRIO from SRC lookup TABLE`, `route4|route6 table=T DST [via GW] dev IF [src S]
[scope ...] [proto ...]`, `sysctl IF key=value` (arp_ignore, arp_announce, rp_filter of every
interface but lo). With --tables, rule tables are renamed after the interface their routes use
(`T(net1)`), so chains that number tables differently compare equal; numbers stay in `tablenum`
lines. Every table is dumped (`ip route show table all`), so nothing hides in an unexpected one.
"""
import json
import subprocess
import sys


def ipj(ns, *args):
    out = subprocess.run(["ip", "-n", ns, "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def sysctls(ns):
    """{(ifname, key): value} for the per-interface IPv4 settings multi-rail RoCE needs."""
    out = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                          "cd /proc/sys/net/ipv4/conf && grep -H . */arp_ignore */arp_announce */rp_filter"],
                         capture_output=True, text=True).stdout
    vals = {}
    for line in out.splitlines():
        path, _, v = line.partition(":")
        ifname, _, key = path.partition("/")
        vals[(ifname, key)] = v
    return vals


def dump(ns, no_mac=False, no_linklocal=False, tables=False):
    lines = []
    names = {}
    sc = sysctls(ns)
    for l in ipj(ns, "-d", "link", "show"):
        names[l["ifindex"]] = l["ifname"]
        kind = l.get("linkinfo", {}).get("info_kind", "-")
        up = 1 if "UP" in l.get("flags", []) else 0
        s = f"link {l['ifname']} kind={kind} mtu={l['mtu']} up={up}"
        if not no_mac and l.get("address"):
            s += f" mac={l['address']}"
        lines.append(s)
        if l["ifname"] != "lo":
            for k in ("arp_ignore", "arp_announce", "rp_filter"):
                lines.append(f"sysctl {l['ifname']} {k}={sc.get((l['ifname'], k), '?')}")
    for l in ipj(ns, "addr", "show"):
        for a in l.get("addr_info", []):
            if no_linklocal and a.get("scope") == "link" and a["family"] == "inet6":
                continue
            lines.append(f"addr {l['ifname']} {a['local']}/{a['prefixlen']}")
    routes = []
    for fam in ("4", "6"):
        for r in ipj(ns, "-" + fam, "route", "show", "table", "all"):
            if no_linklocal and fam == "6" and (r.get("dst", "").startswith("fe80:") or r.get("dst", "").startswith("ff00:")):
                continue
            if no_linklocal and fam == "6" and r.get("table") == "local" and r.get("dst", "").startswith("fe80"):
                continue
            routes.append((fam, r))
    rules = []
    for fam in ("4", "6"):
        for r in ipj(ns, "-" + fam, "rule", "show"):
            rules.append((fam, r))
    rename = {}
    if tables:
        # a rule's table is named after the device its routes go out of
        for fam, r in routes:
            t = str(r.get("table", "main"))
            if t not in ("main", "local", "default") and r.get("dev"):
                rename.setdefault(t, set()).add(r["dev"])
        rename = {t: "T(" + ",".join(sorted(d)) + ")" for t, d in rename.items()}
        for t, n in sorted(rename.items()):
            lines.append(f"tablenum {n} {t}")
    for fam, r in rules:
        t = str(r.get("table", "?"))
        src = r.get("src", "all")
        if "srclen" in r:
            src += f"/{r['srclen']}"
        s = f"rule{fam} {r.get('priority', '?') if not tables or t in ('main', 'local', 'default') else 'P'} from {src}"
        if "dst" in r:
            s += f" to {r['dst']}" + (f"/{r['dstlen']}" if "dstlen" in r else "")
        lines.append(s + f" lookup {rename.get(t, t)}")
    for fam, r in routes:
        t = str(r.get("table", "main"))
        s = f"route{fam} table={rename.get(t, t)} {r.get('type', 'unicast') + ' ' if r.get('type', 'unicast') != 'unicast' else ''}{r['dst']}"
        if r.get("gateway"):
            s += f" via {r['gateway']}"
        if r.get("dev"):
            s += f" dev {r['dev']}"
        if r.get("prefsrc"):
            s += f" src {r['prefsrc']}"
        if r.get("scope") and r["scope"] != "global":
            s += f" scope {r['scope']}"
        if r.get("protocol") and r["protocol"] != "boot":
            s += f" proto {r['protocol']}"
        lines.append(s)
    return sorted(set(lines))


if __name__ == "__main__":
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    ns = a[0]
    print("\n".join(dump(ns, "--no-mac" in a, "--no-linklocal" in a, "--tables" in a)))
