#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench`: time rdmak against a peer doing the same work in the same run, print ratios.

list: `rdmak list --json` on cx7-rail-1016vf (8 PFs x 127 VFs) next to the floor for the same
work, tools/read_floor.c opening, reading to end of file and closing exactly the files the model
reads (the regular files `rdmak snapshot` captures) once each in one process, and `rdmak list`
(table; reads no GID/pkey tables). Rounds interleaved (floor, json, table, floor, ...), so that
all three see the same machine; medians of N rounds, of wall time and of CPU time (user + system
of the command and its threads: on a loaded machine the wall time is mostly waiting), peak RSS
from GNU time, and the median of the per-round CPU ratios. Target (issue 18 §3): rdmak list
--json <= 1.2x the floor.
"""
import os, resource, statistics, subprocess, sys, tarfile, tempfile, time

TARGET = 1.2

def run(argv, stdout=subprocess.DEVNULL):
    """Wall time, CPU time (user + system of the children reaped: GNU time and the command,
    whose threads count with it), and peak RSS in KiB as GNU time measures it (getrusage of
    the command itself: a child forked from Python would count Python's pages from before its
    exec)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-o", rss.name, "-f", "%M"] + argv, stdout=stdout, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit(f"bench: {' '.join(argv)} failed: {p.stderr.decode()}")
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        return dt, cpu, int(rss.read().strip().splitlines()[-1])

def interleaved(cmds, n, base):
    """n rounds of every command in turn: per command the median wall, median CPU, peak RSS, and
    the median and quartiles of its CPU time over base's in the same round (what another load on
    the machine does to both in a round cancels there: steadier than the ratio of the medians)."""
    runs = {k: [] for k in cmds}
    for _ in range(n):
        for k, argv in cmds.items():
            runs[k].append(run(argv))
    def per_round(v):
        r = [x[1] / b[1] for x, b in zip(v, runs[base])]
        q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
        return statistics.median(r), q[0], q[2]
    return {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), max(r[2] for r in v),
                per_round(v))
            for k, v in runs.items()}

def dentry_cache():
    """The dentry cache's entries now, and its hash table's buckets where the boot said
    (dhash_entries= on the kernel's command line): every name a path holds is looked up by
    walking one bucket's chain, so the floor's cost, and rdmak's, grow with entries/buckets
    (docs/list-json.md)."""
    try:
        with open("/proc/sys/fs/dentry-state") as f:
            entries = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return "dentry cache unknown"
    buckets = None
    try:
        with open("/proc/cmdline") as f:
            for w in f.read().split():
                if w.startswith("dhash_entries="):
                    buckets = int(w.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    if buckets:
        return f"dentry cache {entries} entries in {buckets} hash buckets ({entries / buckets:.1f} per chain)"
    return f"dentry cache {entries} entries (hash size as the kernel sized it)"

def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rdmak = os.path.abspath(os.path.join(build, "rdmak"))
    node = os.path.join(os.environ.get("NODES", "examples/nodes"), "cx7-rail-1016vf")
    n = int(os.environ.get("BENCH_RUNS", "21"))
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "s.tar")
        run([rdmak, "snapshot", "--root", node, "-o", snap])
        with tarfile.open(snap) as t:
            # snapshot captures what any list variant reads; `list --json` reads all but the pkeys
            files = [m.name for m in t.getmembers() if m.isfile() and "/pkeys/" not in m.name] # relative to node
        listfile = os.path.join(tmp, "files")
        with open(listfile, "w") as f:
            f.write("\0".join(files))
        # warm the page cache once for everyone
        run([rdmak, "list", "--json", "--root", node])
        floor = [os.path.abspath(os.path.join(build, "tools", "read_floor")), node, listfile]
        m = interleaved({"floor": floor, "json": [rdmak, "list", "--json", "--root", node],
                         "table": [rdmak, "list", "--root", node]}, n, "floor")
    fw, fc, _, _ = m["floor"]
    load = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"list on {node}: {len(files)} files read by the model; medians of {n} interleaved rounds; {when}, load {load:.1f}")
    print(f"  {dentry_cache()}")
    for k, label in (("json", "rdmak list --json "), ("table", "rdmak list (table)")):
        w, c, rss, (rm, rq1, rq3) = m[k]
        print(f"  {label}: {w*1e3:8.1f} ms wall ({w/fw:.2f}x the floor), {c*1e3:8.1f} ms CPU ({c/fc:.2f}x the floor)"
              f"  peak RSS {rss/1024:6.1f} MiB" + (f"  target <= {TARGET}x" if k == "json" else ""))
        print(f"  {' ' * len(label)}  CPU over the floor's in each round: median {rm:.2f}x, quartiles {rq1:.2f}x-{rq3:.2f}x")
    print(f"  floor (read_floor): {fw*1e3:8.1f} ms wall, {fc*1e3:8.1f} ms CPU")

if __name__ == "__main__":
    main()
