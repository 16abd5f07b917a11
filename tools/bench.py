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
import os, re, resource, shutil, statistics, struct, subprocess, sys, tarfile, tempfile, time

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

def per_round(v, b):
    """The median and quartiles of the CPU time of runs v over that of runs b, round by round
    (what another load on the machine does to both in a round cancels there: steadier than the
    ratio of the medians)."""
    r = [x[1] / y[1] for x, y in zip(v, b)]
    q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    return statistics.median(r), q[0], q[2]

def interleaved(cmds, n, base):
    """n rounds of every command in turn: per command the median wall, median CPU, peak RSS, the
    per-round CPU ratio over base's (per_round), and the runs themselves."""
    runs = {k: [] for k in cmds}
    for _ in range(n):
        for k, argv in cmds.items():
            runs[k].append(run(argv))
    return {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), max(r[2] for r in v),
                per_round(v, runs[base]), v)
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

# The file system calls of `rdmak list --json` as `strace -xx -X raw` prints them, and how
# tools/replay_floor.c's records hold them (op, descriptor, result, flags, resolve, count, name)
TRACED = "openat,openat2,read,close,readlinkat,getdents64,newfstatat"
_CALL = re.compile(r'^(?:\d+ +)?(\w+)\((.*)\) += (-?\d+)')
_HEX = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_OPS = {"openat": 1, "openat2": 2, "read": 3, "close": 4, "readlinkat": 5, "getdents64": 6, "newfstatat": 7}

def replay_trace(strace_out, path):
    """tools/replay_floor's input from strace's output: every traced call, in order. The number
    of calls, or exit when a line is not understood (a floor that skipped calls would be low)."""
    recs, names, offsets = [], bytearray(), {}
    def name(hexs):
        b = bytes.fromhex(hexs.replace("\\x", ""))
        if b not in offsets:
            offsets[b] = len(names)
            names.extend(b + b"\0")
        return offsets[b]
    with open(strace_out) as f:
        for line in f:
            m = _CALL.match(line)
            if not m:
                if "resumed>" in line or "+++" in line or "---" in line:
                    continue
                sys.exit(f"bench: replay: a line not understood: {line!r}")
            call, args, ret = m.group(1), m.group(2), int(m.group(3))
            fd = int(args.split(",", 1)[0])
            strs = _HEX.findall(args)
            nums = [int(x, 0) for x in re.findall(r'(?:^|, )(-?(?:0x[0-9a-f]+|\d+))(?=,|$)', args)]
            flags = resolve = count = off = 0
            if call == "openat":
                off, flags = name(strs[0]), nums[-1]
            elif call == "openat2":
                off = name(strs[0])
                flags = int(re.search(r'flags=(0x[0-9a-f]+|\d+)', args).group(1), 0)
                r = re.search(r'resolve=(0x[0-9a-f]+|\d+)', args)
                resolve = int(r.group(1), 0) if r else 0
            elif call in ("read", "getdents64"):
                count = nums[-1]
            elif call == "readlinkat":
                off, count = name(strs[0]), nums[-1]
            elif call == "newfstatat":
                off, flags = name(strs[0]), nums[-1]
            recs.append(struct.pack("<BxxxiiIIII", _OPS[call], fd, ret, flags, resolve, count, off))
    with open(path, "wb") as f:
        f.write(b"RDMAKRPL" + struct.pack("<II", len(recs), len(names)))
        f.write(b"".join(recs))
        f.write(names)
    return len(recs)

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
        cmds = {"floor": floor, "json": [rdmak, "list", "--json", "--root", node],
                "table": [rdmak, "list", "--root", node]}
        # the second floor: the same command's own file system calls, replayed by one process
        replayed = 0
        if shutil.which("strace"):
            out = os.path.join(tmp, "strace")
            subprocess.run(["strace", "-f", "-qq", "-xx", "-X", "raw", "-s", "65536", "-e", "trace=" + TRACED,
                            "-o", out, rdmak, "list", "--json", "--root", node],
                           stdout=subprocess.DEVNULL, check=True)
            trace = os.path.join(tmp, "replay")
            replayed = replay_trace(out, trace)
            cmds["replay"] = [os.path.abspath(os.path.join(build, "tools", "replay_floor")), trace]
        m = interleaved(cmds, n, "floor")
    fw, fc, _, _, _ = m["floor"]
    load = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"list on {node}: {len(files)} files read by the model; medians of {n} interleaved rounds; {when}, load {load:.1f}")
    print(f"  {dentry_cache()}")
    for k, label in (("json", "rdmak list --json "), ("table", "rdmak list (table)")):
        w, c, rss, (rm, rq1, rq3), _ = m[k]
        print(f"  {label}: {w*1e3:8.1f} ms wall ({w/fw:.2f}x the floor), {c*1e3:8.1f} ms CPU ({c/fc:.2f}x the floor)"
              f"  peak RSS {rss/1024:6.1f} MiB" + (f"  target <= {TARGET}x" if k == "json" else ""))
        print(f"  {' ' * len(label)}  CPU over the floor's in each round: median {rm:.2f}x, quartiles {rq1:.2f}x-{rq3:.2f}x")
    print(f"  floor (read_floor): {fw*1e3:8.1f} ms wall, {fc*1e3:8.1f} ms CPU")
    if "replay" in m:
        # rdmak over its own system calls: what it does in user space (parsing, the model, the
        # document, starting); the second floor over the first: the lookups, links, listings and
        # devfs stats the model asks for beyond reading the files
        rw, rc, _, (fm, _, _), rruns = m["replay"]
        jc, jruns = m["json"][1], m["json"][4]
        jm, jq1, jq3 = per_round(jruns, rruns)
        print(f"  floor 2 (replay_floor: the {replayed} file system calls of rdmak list --json, replayed): {rw*1e3:8.1f} ms wall, "
              f"{rc*1e3:8.1f} ms CPU, {rc/fc:.2f}x floor 1 (per round {fm:.2f}x)")
        print(f"  rdmak list --json over floor 2 (its own work in user space): {jc/rc:.2f}x; per round median {jm:.2f}x, "
              f"quartiles {jq1:.2f}x-{jq3:.2f}x")
    else:
        print("  floor 2 (replayed system calls): not measured, no strace")

if __name__ == "__main__":
    main()
