#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmak list on a live kernel with two soft-RoCE devices, against the kernel's own tools in the
# same guest: `rdma link` and `rdma dev` (RDMA netlink), ibv_devinfo (verbs), sysfs; then a
# snapshot of the live node read back with list --root gives the same model.
. "$TOP/tests/vm/harness/lib.sh"
vm_node
rdma link add rxeb type rxe netdev vb || echo "Bail out! rdma link add rxeb failed"
vm_wait_gid rxeb 10.77.0.2

# ---- rdma-link and ibdev2netdev: the kernel's tools' own lines ------------------------------
run "$RDMAK" list --format rdma-link
kernel_says rdma link
rdma_link=$out
run "$RDMAK" list --format rdma-link
is "$out" "$rdma_link" "--format rdma-link prints what rdma link prints"
run "$RDMAK" list --format ibdev2netdev
want=$(for d in rxea:va rxeb:vb; do
	nd=${d#*:}
	st=$(cat /sys/class/net/$nd/operstate)
	printf '%s port 1 ==> %s (%s)\n' "${d%:*}" "$nd" "${st^}"
done)
is "$out" "$want" "--format ibdev2netdev: each device's port on its netdev, as rdma link pairs them"

# ---- the table ---------------------------------------------------------------------------------
run "$RDMAK" list
is "$rc" 0 "list exits 0"
like "$out" '^rxea +1 +ACTIVE +LinkUp +10 Gb/s 1X FDR10 +Ethernet +va \(Up\) ' "table: rxea/1 as the kernel reports it"
like "$out" '^rxeb +1 +ACTIVE +LinkUp .* +vb \(Up\) ' "table: rxeb/1 on vb"

# ---- --json against rdma -j, ibv_devinfo -v and sysfs -----------------------------------------
"$RDMAK" list --json >"$TMP/list.json"
rdma -j dev >"$TMP/dev.json"
rdma -j link >"$TMP/link.json"
ibv_devinfo -v >"$TMP/devinfo.txt"
checks "$TMP/list.json" "$TMP/dev.json" "$TMP/link.json" "$TMP/devinfo.txt" <<'PY'
import os, re, stat
m = load(sys.argv[1]); devs = load(sys.argv[2]); links = load(sys.argv[3])
info = open(sys.argv[4]).read()
S = "/sys/class/infiniband"
check([d["name"] for d in m["rdma_devices"]] == sorted(d["ifname"] for d in devs),
      "the devices are those rdma dev lists", m["rdma_devices"])
check(m["kernel"]["netns_mode"] == "shared", "kernel.netns_mode shared, as rdma system says")
check(m["kernel"]["modules"]["rdma_rxe"] == "loaded" and m["kernel"]["modules"]["ib_uverbs"] == "loaded",
      "modules: rdma_rxe and ib_uverbs loaded", m["kernel"]["modules"])
check(m["kernel"]["uverbs_abi"] == int(rd("/sys/class/infiniband_verbs/abi_version")), "uverbs_abi is sysfs's abi_version")
blocks = {b.split("\n")[0].split()[-1]: b for b in re.split(r"(?m)^(?=hca_id:)", info) if b.strip()}
for d in devs:
    n = d["ifname"]; md = next(x for x in m["rdma_devices"] if x["name"] == n)
    b = blocks.get(n, "")
    check(md["node_guid"] == d["node_guid"] == rd(f"{S}/{n}/node_guid"), f"{n}: node_guid as rdma dev and sysfs")
    check(md["sys_image_guid"] == d["sys_image_guid"], f"{n}: sys_image_guid as rdma dev")
    check(f"node_guid:\t\t\t{md['node_guid']}" in b, f"{n}: node_guid as ibv_devinfo", b)
    check(md["node_type"] == "CA" and d["node_type"] == "ca", f"{n}: node_type CA")
    check(md["node_desc"] == rd(f"{S}/{n}/node_desc"), f"{n}: node_desc as sysfs")
    check(md["fw_ver"] is None and rd(f"{S}/{n}/fw_ver") == "", f"{n}: rxe has an empty fw_ver: null")
    check(md["pci"] is None and not os.path.exists(f"{S}/{n}/device"), f"{n}: no PCI function (a virtual device has no device link)")
    nports = int(re.search(r"phys_port_cnt:\s+(\d+)", b).group(1))
    check(len(md["ports"]) == nports, f"{n}: {nports} port(s) as ibv_devinfo")
    uv = [u for u in os.listdir("/sys/class/infiniband_verbs") if u.startswith("uverbs") and rd(f"/sys/class/infiniband_verbs/{u}/ibdev") == n]
    check([md["uverbs"]] == uv, f"{n}: uverbs node {uv} as infiniband_verbs/*/ibdev says")
    cd = next(c for c in m["char_devices"] if c["name"] == md["uverbs"])
    st = os.stat("/dev/infiniband/" + md["uverbs"])
    check(cd["dev"] == rd(f"/sys/class/infiniband_verbs/{md['uverbs']}/dev") == f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}",
          f"{n}: its char device number is sysfs's and /dev's", cd)
    check(cd["devfs"]["mode"] == "%04o" % stat.S_IMODE(st.st_mode) and cd["usable"], f"{n}: devfs mode {cd['devfs']['mode']} as stat says")
    for l in (x for x in links if x["ifname"] == n):
        p = md["ports"][l["port"] - 1]; pre = f"{n}/{l['port']}"
        check(p["state"] == l["state"], f"{pre}: state {p['state']} as rdma link")
        check(p["phys_state"].upper().replace("LINKUP", "LINK_UP") == l["physical_state"], f"{pre}: phys_state as rdma link", p["phys_state"])
        check(p["netdev"]["name"] == l["netdev"], f"{pre}: netdev {l['netdev']} as rdma link")
        check(re.search(rf"state:\s+PORT_{p['state']} \({p['state_id']}\)", b) is not None, f"{pre}: state_id as ibv_devinfo")
        check(re.search(rf"link_layer:\s+{p['link_layer']}", b) is not None, f"{pre}: link_layer as ibv_devinfo")
        check(p["rate"]["text"] == rd(f"{S}/{n}/ports/1/rate"), f"{pre}: rate text as sysfs")
        check(p["lid"] == int(rd(f"{S}/{n}/ports/1/lid"), 16) and p["cap_mask"] == rd(f"{S}/{n}/ports/1/cap_mask"),
              f"{pre}: lid and cap_mask as sysfs")
        want = []
        for i in sorted(int(x) for x in os.listdir(f"{S}/{n}/ports/1/gids")):
            g = rd(f"{S}/{n}/ports/1/gids/{i}")
            if g != "0000:0000:0000:0000:0000:0000:0000:0000":
                want.append((i, g, rd(f"{S}/{n}/ports/1/gid_attrs/types/{i}"), rd(f"{S}/{n}/ports/1/gid_attrs/ndevs/{i}")))
        got = [(g["index"], g["gid"], g["type"], g["netdev"]) for g in p["gids"]]
        check(got == want, f"{pre}: the GID table as sysfs (index, gid, type, ndev)", f"got {got}\nwant {want}")
        gids = re.findall(r"GID\[\s*(\d+)\]:\s+(\S+), (RoCE v\d)", b)
        check(len(gids) == len(got), f"{pre}: as many GIDs as ibv_devinfo -v lists", gids)
        check(p["gid_tbl_len"] == len(os.listdir(f"{S}/{n}/ports/1/gids")), f"{pre}: gid_tbl_len is the kernel's table size")
PY

# ---- snapshot of the live node, read back elsewhere --------------------------------------------
run "$RDMAK" snapshot -o "$TMP/live.tar.gz"
is "$rc" 0 "snapshot of the live node exits 0"
mkdir "$TMP/x" && tar -xzf "$TMP/live.tar.gz" -C "$TMP/x"
ok $? "its archive extracts"
grep -v '"sysfs":\|"devfs":' "$TMP/list.json" >"$TMP/a.json"
"$RDMAK" list --root "$TMP/x" --json | grep -v '"sysfs":\|"devfs":' >"$TMP/b.json"
same_file "$TMP/b.json" "$TMP/a.json" "list --root on the snapshot gives the live node's model"
for fmt in table ibdev2netdev rdma-link; do
	"$RDMAK" list --format $fmt >"$TMP/a.txt"
	"$RDMAK" list --root "$TMP/x" --format $fmt >"$TMP/b.txt"
	same_file "$TMP/b.txt" "$TMP/a.txt" "snapshot: --format $fmt identical"
done

rdma link delete rxeb
done_testing
