#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench`: time rdmak against a peer doing the same work in the same run, print ratios.

list: `rdmak list --json` on cx7-rail-1016vf (8 PFs x 127 VFs) next to the floor for the same
work, `cat` of exactly the files the model reads (the regular files `rdmak snapshot` captures),
and `rdmak list` (table; reads no GID/pkey tables). Medians of N runs, peak RSS from wait4().
"""
import os, statistics, subprocess, sys, tarfile, tempfile, time

def run(argv, stdout=subprocess.DEVNULL):
    """Wall time, and peak RSS in KiB as GNU time measures it (getrusage of the command
    itself: a child forked from Python would count Python's pages from before its exec)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-o", rss.name, "-f", "%M"] + argv, stdout=stdout, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"bench: {' '.join(argv)} failed: {p.stderr.decode()}")
        return dt, int(rss.read().strip().splitlines()[-1])

def series(argv, n):
    runs = [run(argv) for _ in range(n)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)

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
            files = [os.path.join(node, m.name) for m in t.getmembers() if m.isfile() and "/pkeys/" not in m.name]
        listfile = os.path.join(tmp, "files")
        with open(listfile, "w") as f:
            f.write("\0".join(files))
        # warm the page cache once for everyone
        run([rdmak, "list", "--json", "--root", node])
        floor = ["/bin/sh", "-c", f"xargs -0 cat < {listfile} > /dev/null"]
        json_t, json_rss = series([rdmak, "list", "--json", "--root", node], n)
        table_t, table_rss = series([rdmak, "list", "--root", node], n)
        cat_t, _ = series(floor, n)
    print(f"list on {node}: {len(files)} files read by the model; median of {n} runs")
    print(f"  rdmak list --json : {json_t*1e3:8.1f} ms  peak RSS {json_rss/1024:6.1f} MiB  ({json_t/cat_t:.2f}x the cat floor; target <= 50 ms)")
    print(f"  rdmak list (table): {table_t*1e3:8.1f} ms  peak RSS {table_rss/1024:6.1f} MiB  ({table_t/cat_t:.2f}x the cat floor)")
    print(f"  cat (same files)  : {cat_t*1e3:8.1f} ms  (floor)")

if __name__ == "__main__":
    main()
