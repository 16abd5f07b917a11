#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: `rdmak convert` of 500, 1000, 2000 and 4000 objects (a quarter each SpiderIPPools,
# SpiderMultusConfigs naming them, SriovNetworkNodePolicies and more pools, as a cluster's
# `kubectl get -o yaml` gives them), each run 5 times: the median wall and CPU time (user +
# system) per run and per object, and the ratio of 4000 to 500 against linear (8). Goal: linear,
# 4000 objects in under 1 s (issue 32 item 6; before: 0.14/0.55/2.29/28.7 s).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$py" - "$build/rdmak" "$tmp" <<'EOF'
import os, statistics, subprocess, sys, time

rdmak, tmp = sys.argv[1], sys.argv[2]

def objects(n):
    out = []
    for i in range(n // 4):
        a, b = divmod(i, 250)
        out.append(f"""kind: SpiderIPPool
metadata: {{name: pool-{i}}}
spec: {{subnet: 10.{a % 250}.{b}.0/24, gateway: 10.{a % 250}.{b}.254, ips: [10.{a % 250}.{b}.1-10.{a % 250}.{b}.200]}}
""")
        out.append(f"""kind: SpiderMultusConfig
metadata: {{name: net-{i}, namespace: ns{i % 7}}}
spec:
  cniType: sriov
  sriov: {{resourceName: spidernet.io/gpu{i % 8}sriov, ippools: {{ipv4: [pool-{i}]}}}}
""")
        out.append(f"""kind: SriovNetworkNodePolicy
metadata: {{name: policy-{i}, namespace: sriov}}
spec:
  resourceName: gpu{i % 8}sriov
  numVfs: 8
  nicSelector: {{vendor: "15b3", rootDevices: ["0000:{(i // 32) % 256:02x}:{i % 32:02x}.0"]}}
  deviceType: netdevice
  isRdma: true
""")
        out.append(f"""kind: SpiderIPPool
metadata: {{name: spare-{i}}}
spec: {{subnet: 10.{250 - a % 4}.{b}.0/24, ips: [10.{250 - a % 4}.{b}.1-10.{250 - a % 4}.{b}.9]}}
""")
    return "---\n".join(out)

def run(path):
    t0 = time.monotonic()
    p = subprocess.Popen([rdmak, "convert", path], stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"bench-convert: rdmak convert {path} failed")
    return wall, ru.ru_utime + ru.ru_stime

res = {}
for n in (500, 1000, 2000, 4000):
    path = f"{tmp}/in{n}.yaml"
    with open(path, "w") as f:
        f.write(objects(n))
    runs = [run(path) for _ in range(5)]
    res[n] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))

stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
print(f"bench-convert: rdmak convert, medians of 5 runs ({stamp}, load average "
      f"{' '.join(open('/proc/loadavg').read().split()[:3])})")
for n, (w, c) in res.items():
    print(f"  {n:5d} objects: {w:6.3f} s wall, {c:6.3f} s CPU; {c / n * 1e6:6.1f} us CPU per object")
w8, c8 = res[4000][0] / res[500][0], res[4000][1] / res[500][1]
print(f"  4000/500: {c8:.2f}x CPU, {w8:.2f}x wall (linear: 8; n squared: 64); "
      f"4000 objects {res[4000][0]:.3f} s (goal < 1 s)")
EOF
