#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# src/nl/rdma.c against a real kernel's RDMA netlink (through tests/helpers/nl_rdma_cli), each
# answer compared with what iproute2's rdma(8) reads in the same guest: the device dump, the
# port counters, the counter objects, the netns mode and switching it, moving a device (which
# rxe cannot), and the errors the kernel returns for a device or port it does not know.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
cli=$BUILD/tests/helpers/nl_rdma_cli
rdma link add rxeb type rxe netdev vb || echo "Bail out! rdma link add rxeb failed"

# ---- devices, ports, counters -----------------------------------------------------------------
"$cli" devs >"$TMP/devs.json"
ok $? "devs: the dump answers"
"$cli" dev rxeb >"$TMP/dev.json"
ok $? "dev rxeb: found"
"$cli" stat rxea 1 >"$TMP/stat.json"
ok $? "stat rxea 1: answers"
rdma -j statistic show link rxea/1 >"$TMP/rdma-stat.json"
"$cli" counters rxea >"$TMP/counters.json"
ok $? "counters rxea: the dump answers"
rdma -j statistic qp show link rxea/1 >"$TMP/rdma-qp.json"
rdma -j dev >"$TMP/rdma-dev.json"
rdma -j link >"$TMP/rdma-link.json"
checks "$TMP" <<'PY'
t = sys.argv[1]
devs = load(t + "/devs.json"); rdev = load(t + "/rdma-dev.json"); rlink = load(t + "/rdma-link.json")
want = sorted((d["ifindex"], d["ifname"], max(l["port"] for l in rlink if l["ifname"] == d["ifname"])) for d in rdev)
got = sorted((d["index"], d["name"], d["ports"]) for d in devs)
check(got == want, "devs: index, name and last port as rdma dev / rdma link", f"got {got}\nwant {want}")
guids = {d["name"]: d["node_guid"] for d in devs}
sysfs = {n: open(f"/sys/class/infiniband/{n}/node_guid").read().strip() for n in guids}
check(guids == sysfs, "devs: each node GUID as sysfs node_guid reads", f"got {guids}\nwant {sysfs}")
one = load(t + "/dev.json")
check(one == next(d for d in devs if d["name"] == "rxeb"), "dev rxeb: the dump's entry", one)
s = load(t + "/stat.json"); rs = load(t + "/rdma-stat.json")[0]
names = [k for k in rs if k not in ("ifname", "ifindex", "port")]
check(s["dev"] == rs["ifname"] and s["port"] == rs["port"], "stat: device and port as rdma statistic show", s)
check(sorted(s["counters"]) == sorted(names), "stat: the counter names rdma statistic show lists",
      f"got {sorted(s['counters'])}\nwant {sorted(names)}")
check(all(s["counters"][k] == rs[k] for k in names), "stat: the same values on an idle port",
      {k: (s["counters"].get(k), rs[k]) for k in names})
files = sorted(os.listdir("/sys/class/infiniband/rxea/ports/1/hw_counters"))
check(set(names) <= set(files), "stat: each of them a hw_counters file too", f"netlink {names}\nsysfs {files}")
c = load(t + "/counters.json"); rq = load(t + "/rdma-qp.json")
check(c == [] and rq == [], "counters: no counter object on a port without auto mode, as rdma statistic qp show", (c, rq))
PY

# ---- what the kernel answers for what it does not know ----------------------------------------------
kernel_says "$cli" dev nosuch
is "$rc/$err" "1/ENODEV (-19)" "dev nosuch: not in the dump (no request carries a name)"
kernel_says rdma dev show nosuch
like "$err" 'Wrong device name - nosuch' "  as rdma dev show says: $why"
kernel_says "$cli" stat '#4242' 1
like "$err" '^EINVAL \(-22\)' "stat of device index 4242: the kernel answers EINVAL: $why"
kernel_says "$cli" stat rxea 9
like "$err" '^EINVAL \(-22\)' "stat of rxea port 9: the kernel answers EINVAL: $why"
kernel_says rdma statistic show link rxea/9
like "$err" 'Wrong|Invalid|rror' "  rdma statistic show link rxea/9 refuses too: $why"
kernel_says "$cli" counters '#4242'
like "$err" '^(EINVAL|ENODEV|ENOENT) ' "counters of device index 4242: the kernel's answer: $why"

# ---- netns mode: shared, exclusive, and moving rxe ------------------------------------------------
run "$cli" mode
is "$out" '{"shared":true}' "mode: shared, the kernel's default"
like "$(rdma system)" '^netns shared' "  as rdma system says"
run rdma system set netns exclusive
is "$rc" 0 "rdma system set netns exclusive"
run "$cli" mode
is "$out" '{"shared":false}' "mode: exclusive, after rdma system set"
ip netns add "vmnl$$"
kernel_says rdma dev set rxeb netns "vmnl$$"
rdma_why=$why
kernel_says "$cli" set-netns rxeb "/run/netns/vmnl$$"
like "$err" '^EOPNOTSUPP \(-95\)' "set-netns rxeb in exclusive mode: rxe cannot move (EOPNOTSUPP: no disassociate_ucontext)"
like "$rdma_why" 'Operation not supported' "  rdma dev set rxeb netns says the same: $rdma_why"
kernel_says rdma system set netns shared
is "$rc" 1 "back to shared while another namespace exists: refused"
like "$why" 'Device or resource busy' "  the kernel's answer: $why"
ip netns del "vmnl$$"
# a namespace is freed by a kernel worker after its last reference goes: retry the switch
for i in $(seq 100); do rdma system set netns shared 2>/dev/null && break; vm_sleep 0.1; done
run "$cli" mode
is "$out" '{"shared":true}' "mode: shared again once the namespace is gone"
kernel_says "$cli" set-netns rxeb /proc/self/ns/net
like "$err" '^EOPNOTSUPP \(-95\)' "set-netns in shared mode: EOPNOTSUPP, as nl.h says"

rdma link delete rxeb
done_testing
