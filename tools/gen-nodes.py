#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""(Re)create the sample nodes: <outdir>/<name>/sys and <outdir>/<name>/dev.

    python3 tools/gen-nodes.py OUTDIR [NAME...]

Each node directory is deleted and rebuilt from its spec (tools/nodes/specs_*.py, every
module's NODES list). Must run as root: /dev nodes are real character devices (mknod).
Output is deterministic. See examples/README.md for the nodes and the conventions.
"""
import fcntl
import glob
import importlib
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodes.build import build, SpecError  # noqa: E402


def all_specs():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nodes")
    specs = []
    for path in sorted(glob.glob(os.path.join(here, "specs_*.py"))):
        mod = importlib.import_module("nodes." + os.path.basename(path)[:-3])
        specs.extend(mod.NODES)
    names = [s["name"] for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SpecError("duplicate node names: %s" % ", ".join(sorted(dup)))
    return specs


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    only = set(argv[2:])
    t0 = time.monotonic()
    specs = all_specs()
    known = {s["name"] for s in specs}
    unknown = only - known
    if unknown:
        sys.stderr.write("gen-nodes: no such node: %s\n" % " ".join(sorted(unknown)))
        return 2
    os.makedirs(out, exist_ok=True)
    # one generator at a time per output directory (two `make`s in one checkout)
    lock = os.open(os.path.join(out, ".gen-nodes.lock"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    # Old trees are renamed aside and removed by a forked child while the new ones are
    # written: deleting ~200k files costs as much as writing them.
    trash = []
    for d in sorted(os.listdir(out)):
        p = os.path.join(out, d)
        if os.path.islink(p) or not os.path.isdir(p):
            continue
        stale = not only and d not in known and os.path.isdir(os.path.join(p, "sys"))
        if d.startswith(".trash."):
            trash.append(p)
        elif (d in only if only else d in known) or stale:
            t = os.path.join(out, ".trash.%s.%d" % (d, os.getpid()))
            os.rename(p, t)
            trash.append(t)
    reaper = None
    if trash:
        reaper = os.fork()
        if reaper == 0:
            for t in trash:
                shutil.rmtree(t, ignore_errors=True)
            os._exit(0)
    os.umask(0o022)
    for s in specs:
        if only and s["name"] not in only:
            continue
        t1 = time.monotonic()
        try:
            b = build(s, out)
        except SpecError as e:
            sys.stderr.write("gen-nodes: %s: %s\n" % (s["name"], e))
            if reaper:
                os.waitpid(reaper, 0)
            return 1
        t = b.t
        print("%-18s %7d files %7d links %5d char devices  %5.1fs" % (
            s["name"], t.nfiles, t.nlinks, t.nnodes, time.monotonic() - t1))
    if reaper:
        os.waitpid(reaper, 0)
    print("gen-nodes: %d nodes in %.1fs" % (len(only or known), time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
