/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf apply's rtnetlink requests for an InfiniBand PF's VFs, attribute by attribute, in
 * the order apply makes them, and the undo that puts the VFs' old GUIDs back.
 *
 * There is no SR-IOV NIC here, and this kernel answers a GUID request on any other link with
 * EOPNOTSUPP at the first one. So this test links with -Wl,--wrap=nl_rt_talk (Makefile): every
 * request src/nl builds comes here instead of to the socket. The stand-in records it (after
 * libnl's nl_complete_msg, as nl_send_auto would send it) and answers as the kernel's rtnetlink
 * does for an IPoIB PF whose driver has ndo_set_vf_guid and ndo_get_vf_guid: RTM_GETLINK with an
 * ifinfomsg and IFLA_IFNAME, plus IFLA_VFINFO_LIST (one IFLA_VF_INFO per VF with IFLA_VF_MAC and
 * the two struct ifla_vf_guid) when the request's IFLA_EXT_MASK has RTEXT_FILTER_VF; RTM_SETLINK
 * with IFLA_VFINFO_LIST sets the GUID it names (do_setvfinfo: one GUID per IFLA_VF_INFO, -EINVAL
 * for a VF index at or above sriov_numvfs). The sysfs side is a plain directory: only the order of
 * the writes against the requests is checked here (tests/cmd/vf_apply.sh runs apply against the
 * FUSE stand-in of the kernel's sriov_numvfs semantics). Each VF i has an IPoIB netdev ib0v<i>
 * (ifindex 20 + i) whose MTU RTM_SETLINK's IFLA_MTU sets; the steps on single VFs touch only the
 * VFs they list, and a pod's VF stops them all. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "nl/nl-internal.h"
#include "vf/vf.h"

#define PF_INDEX 7
#define NVF	 4

static struct {
	char root[64];		  /* the sysfs directory */
	struct nlmsghdr *req[64]; /* what was sent, in order */
	char numvfs_then[64][8];  /* sriov_numvfs when each request was sent */
	bool probed_then[64];	  /* drivers_probe written to when it was sent */
	size_t n;
	uint64_t node[NVF], port[NVF]; /* the PF's VF state */
	bool reports;		       /* ndo_get_vf_guid */
	int fail_set;		       /* the Nth RTM_SETLINK (1-based) fails with EIO; 0: none */
	int n_set;
	unsigned vfmtu[NVF]; /* VF i's netdev ib0v<i>, ifindex VF_INDEX + i */
} k;

#define VF_INDEX 20

static unsigned numvfs(void)
{
	char path[128], buf[8] = "";
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:03:00.0/sriov_numvfs", k.root);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return (unsigned)atoi(buf);
}

static bool probed(void)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof(path), "%s/bus/pci/drivers_probe", k.root);
	return stat(path, &st) == 0 && st.st_size > 0;
}

/* a VF's IPoIB netdev, ib0v<vf>, with its MTU */
static int answer_vf_netdev(int vf, int (*parse)(struct nlmsghdr *h, void *ud), void *ud)
{
	struct nl_msg *a = nlmsg_alloc_simple(RTM_NEWLINK, 0);
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC,
				 .ifi_index = VF_INDEX + vf,
				 .ifi_type = ARPHRD_INFINIBAND };
	char name[16];
	assert_non_null(a);
	snprintf(name, sizeof(name), "ib0v%d", vf);
	assert_int_equal(nlmsg_append(a, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
	assert_int_equal(nla_put_string(a, IFLA_IFNAME, name), 0);
	assert_int_equal(nla_put_u32(a, IFLA_MTU, k.vfmtu[vf]), 0);
	int r = parse ? parse(nlmsg_hdr(a), ud) : 0;
	nlmsg_free(a);
	return r;
}

static int answer_getlink(const struct nlmsghdr *h, int (*parse)(struct nlmsghdr *h, void *ud),
			  void *ud)
{
	struct nlattr *tb[IFLA_MAX + 1];
	const struct ifinfomsg *q = nlmsg_data(h);
	assert_int_equal(nlmsg_parse((struct nlmsghdr *)h, sizeof(*q), tb, IFLA_MAX, NULL), 0);
	int vf = -1;
	if (tb[IFLA_IFNAME] && sscanf(nla_get_string(tb[IFLA_IFNAME]), "ib0v%d", &vf) == 1 &&
	    vf >= 0 && vf < NVF)
		return answer_vf_netdev(vf, parse, ud);
	if (tb[IFLA_IFNAME] ? strcmp(nla_get_string(tb[IFLA_IFNAME]), "ib0")
			    : q->ifi_index != PF_INDEX)
		return -ENODEV;
	uint32_t mask = tb[IFLA_EXT_MASK] ? nla_get_u32(tb[IFLA_EXT_MASK]) : 0;
	struct nl_msg *a = nlmsg_alloc_simple(RTM_NEWLINK, 0);
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC,
				 .ifi_index = PF_INDEX,
				 .ifi_type = ARPHRD_INFINIBAND };
	assert_non_null(a);
	assert_int_equal(nlmsg_append(a, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
	assert_int_equal(nla_put_string(a, IFLA_IFNAME, "ib0"), 0);
	if (mask & RTEXT_FILTER_VF) {
		struct nlattr *list = nla_nest_start(a, IFLA_VFINFO_LIST);
		for (unsigned i = 0; i < numvfs() && i < NVF; i++) {
			struct nlattr *info = nla_nest_start(a, IFLA_VF_INFO);
			struct ifla_vf_mac mac = { .vf = i };
			struct ifla_vf_guid node = { .vf = i, .guid = k.node[i] },
					    port = { .vf = i, .guid = k.port[i] };
			assert_int_equal(nla_put(a, IFLA_VF_MAC, sizeof(mac), &mac), 0);
			if (k.reports) {
				assert_int_equal(
					nla_put(a, IFLA_VF_IB_NODE_GUID, sizeof(node), &node), 0);
				assert_int_equal(
					nla_put(a, IFLA_VF_IB_PORT_GUID, sizeof(port), &port), 0);
			}
			nla_nest_end(a, info);
		}
		nla_nest_end(a, list);
	}
	int r = parse ? parse(nlmsg_hdr(a), ud) : 0;
	nlmsg_free(a);
	return r;
}

static int answer_setlink(const struct nlmsghdr *h)
{
	struct nlattr *tb[IFLA_MAX + 1], *info, *vf[IFLA_VF_MAX + 1];
	struct ifla_vf_guid g;
	int rem;
	if (++k.n_set == k.fail_set)
		return -EIO;
	assert_int_equal(
		nlmsg_parse((struct nlmsghdr *)h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
	int ifindex = ((const struct ifinfomsg *)nlmsg_data(h))->ifi_index;
	if (tb[IFLA_MTU] && ifindex >= VF_INDEX && ifindex < VF_INDEX + NVF)
		k.vfmtu[ifindex - VF_INDEX] = nla_get_u32(tb[IFLA_MTU]);
	if (!tb[IFLA_VFINFO_LIST])
		return 0; /* link up, MTU */
	nla_for_each_nested(info, tb[IFLA_VFINFO_LIST], rem)
	{
		assert_int_equal(nla_parse_nested(vf, IFLA_VF_MAX, info, NULL), 0);
		/* do_setvfinfo() takes the node GUID and returns: one GUID per VF_INFO */
		struct nlattr *a = vf[IFLA_VF_IB_NODE_GUID] ? vf[IFLA_VF_IB_NODE_GUID]
							    : vf[IFLA_VF_IB_PORT_GUID];
		assert_non_null(a);
		memcpy(&g, nla_data(a), sizeof(g));
		if (g.vf >= numvfs())
			return -EINVAL;
		(a == vf[IFLA_VF_IB_NODE_GUID] ? k.node : k.port)[g.vf] = g.guid;
	}
	return 0;
}

int __wrap_nl_rt_talk(struct nl_rt *rt, struct nl_msg *msg,
		      int (*parse)(struct nlmsghdr *h, void *ud), void *ud);
int __wrap_nl_rt_talk(struct nl_rt *rt, struct nl_msg *msg,
		      int (*parse)(struct nlmsghdr *h, void *ud), void *ud)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	int r;
	if (!(h->nlmsg_flags & NLM_F_DUMP))
		h->nlmsg_flags |= NLM_F_ACK; /* as the real nl_rt_talk does */
	nl_complete_msg(rt->sk, msg);
	assert_true(k.n < sizeof(k.req) / sizeof(k.req[0]));
	k.req[k.n] = malloc(h->nlmsg_len);
	assert_non_null(k.req[k.n]);
	memcpy(k.req[k.n], h, h->nlmsg_len);
	k.probed_then[k.n] = probed();
	snprintf(k.numvfs_then[k.n++], sizeof(k.numvfs_then[0]), "%u", numvfs());
	r = h->nlmsg_type == RTM_GETLINK ? answer_getlink(h, parse, ud) : answer_setlink(h);
	nlmsg_free(msg);
	return r;
}

static void mkfile(const char *rel, const char *text)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", k.root, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	memset(&k, 0, sizeof(k));
	k.reports = true;
	snprintf(k.root, sizeof(k.root), "/tmp/test_vf_apply.XXXXXX");
	assert_non_null(mkdtemp(k.root));
	char path[160];
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:03:00.0", k.root);
	for (char *p = strchr(path + strlen(k.root) + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_int_equal(mkdir(path, 0755), 0);
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "0\n");
	mkfile("bus/pci/devices/0000:03:00.0/sriov_drivers_autoprobe", "0\n");
	mkfile("bus/pci/drivers_probe", "");
	/* VF i is 0000:03:00.<i+1>, bound to its driver, with a netdev (sriov_drivers_autoprobe
	 * 1) */
	for (int i = 0; i < NVF; i++) {
		char rel[96], target[32];
		snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:03:00.0/virtfn%d", k.root, i);
		snprintf(target, sizeof(target), "../0000:03:00.%d", i + 1);
		assert_int_equal(symlink(target, path), 0);
		static const char *const dirs[] = { "", "/driver", "/net", "/net/ib0v" };
		for (size_t d = 0; d < 4; d++) {
			snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:03:00.%d%s%s", k.root,
				 i + 1, dirs[d],
				 d == 3 ? (const char *[]){ "0", "1", "2", "3" }[i] : "");
			assert_int_equal(mkdir(path, 0755), 0);
		}
		k.vfmtu[i] = 4092;
		snprintf(rel, sizeof(rel), "bus/pci/devices/0000:03:00.%d/driver_override", i + 1);
		mkfile(rel, "(null)\n");
		snprintf(rel, sizeof(rel), "bus/pci/devices/0000:03:00.%d/driver/unbind", i + 1);
		mkfile(rel, "");
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	for (size_t i = 0; i < k.n; i++)
		free(k.req[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k.root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* steps: a JSON array of the VF steps, as vf_plan_build writes them; holders: of the PF */
static json_t *plan_of(int from, int to, bool numvfs_step, const char *steps_json,
		       const char *holders_json)
{
	json_t *steps = json_array(), *vfsteps = json_loads(steps_json, 0, NULL);
	assert_non_null(vfsteps);
	if (numvfs_step && from)
		json_array_append_new(steps,
				      json_pack("{s:s,s:s,s:i,s:i}", "when", "live", "action",
						"sriov_numvfs", "from", from, "to", 0));
	if (numvfs_step)
		json_array_append_new(steps,
				      json_pack("{s:s,s:s,s:i,s:i}", "when", "live", "action",
						"sriov_numvfs", "from", 0, "to", to));
	json_array_extend(steps, vfsteps);
	json_decref(vfsteps);
	json_t *holders = json_loads(holders_json ? holders_json : "[]", 0, NULL);
	assert_non_null(holders);
	return json_pack("{s:[{s:s,s:s,s:s,s:i,s:o,s:o}]}", "pfs", "pf", "0000:03:00.0", "netdev",
			 "ib0", "pf_guid", "e8eb:d303:0072:09f4", "want_numvfs", to, "steps", steps,
			 "holders", holders);
}

/* every VF below `to` gets its GUIDs, and is bound (again) */
static json_t *plan(int from, int to, bool numvfs_step)
{
	char steps[256], list[64] = "";
	for (int i = 0; i < to; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? "," : "", i);
	snprintf(steps, sizeof(steps),
		 "[{\"when\":\"live\",\"action\":\"vf-guids\",\"vfs\":%d,\"vf_indices\":[%s]},"
		 "{\"when\":\"live\",\"action\":\"vf-bind\",\"vfs\":%d,\"vf_indices\":[%s]}]",
		 to, list, to, list);
	return plan_of(from, to, numvfs_step, steps, NULL);
}

static int run_apply(json_t *p, struct vf_apply_report *rep)
{
	struct hw_ctx *ctx;
	struct vf_apply_opts o = { .timeout_ms = 200 };
	assert_int_equal(hw_ctx_new(k.root, "/dev", &ctx), 0);
	int r = vf_apply(ctx, p, &o, rep);
	hw_ctx_free(ctx);
	json_decref(p);
	return r;
}

static bool has_line(const struct vf_apply_report *rep, const char *text)
{
	for (size_t i = 0; i < rep->n_lines; i++)
		if (strstr(rep->lines[i], text))
			return true;
	return false;
}

/* One GUID request: RTM_SETLINK on the PF, IFLA_VFINFO_LIST holding exactly one IFLA_VF_INFO
 * holding exactly one attribute of `type`, a struct ifla_vf_guid {vf, guid}. */
static void check_guid_request(const struct nlmsghdr *h, int type, uint32_t vf, uint64_t guid)
{
	const struct ifinfomsg *ifi = nlmsg_data(h);
	struct nlattr *a, *info, *g;
	int rem, rem2, n = 0;
	struct ifla_vf_guid v;
	assert_int_equal(h->nlmsg_type, RTM_SETLINK);
	assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	assert_int_equal(ifi->ifi_family, AF_UNSPEC);
	assert_int_equal(ifi->ifi_index, PF_INDEX);
	assert_int_equal(ifi->ifi_change, 0);
	nlmsg_for_each_attr(a, (struct nlmsghdr *)h, sizeof(*ifi), rem)
	{
		assert_int_equal(nla_type(a), IFLA_VFINFO_LIST);
		nla_for_each_nested(info, a, rem2)
		{
			int rem3, m = 0;
			assert_int_equal(nla_type(info), IFLA_VF_INFO);
			nla_for_each_nested(g, info, rem3)
			{
				assert_int_equal(nla_type(g), type);
				assert_int_equal(nla_len(g), sizeof(struct ifla_vf_guid));
				memcpy(&v, nla_data(g), sizeof(v));
				assert_int_equal(v.vf, vf);
				assert_true(v.guid == guid);
				m++;
			}
			assert_int_equal(m, 1);
			n++;
		}
	}
	assert_int_equal(n, 1);
}

static void check_getlink(const struct nlmsghdr *h, const char *name, int ifindex, uint32_t mask)
{
	struct nlattr *tb[IFLA_MAX + 1];
	assert_int_equal(h->nlmsg_type, RTM_GETLINK);
	assert_int_equal(((const struct ifinfomsg *)nlmsg_data(h))->ifi_index, ifindex);
	assert_int_equal(
		nlmsg_parse((struct nlmsghdr *)h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
	if (name)
		assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), name);
	else
		assert_null(tb[IFLA_IFNAME]);
	assert_int_equal(nla_get_u32(tb[IFLA_EXT_MASK]), mask);
}

/* 0 -> 3 VFs of an IB PF: numvfs written, then the PF looked up, its VFs' GUIDs read (saved),
 * then per VF the node GUID and the port GUID, as two requests, each the derived GUID. */
static void test_guid_requests(void **state)
{
	struct vf_apply_report rep;
	uint64_t pg = UINT64_C(0xe8ebd303007209f4);
	assert_int_equal(run_apply(plan(0, 3, true), &rep), 0);
	assert_int_equal(rep.result, VF_APPLY_DONE);
	assert_true(has_line(&rep, "ib0: GUIDs of 3 VFs set"));
	assert_int_equal(k.n, 2 + 2 * 3);
	check_getlink(k.req[0], "ib0", 0, RTEXT_FILTER_SKIP_STATS);
	check_getlink(k.req[1], NULL, PF_INDEX, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS);
	for (uint32_t i = 0; i < 3; i++) {
		check_guid_request(k.req[2 + 2 * i], IFLA_VF_IB_NODE_GUID, i, vf_guid(pg, i));
		check_guid_request(k.req[3 + 2 * i], IFLA_VF_IB_PORT_GUID, i, vf_guid(pg, i));
		assert_true(k.node[i] == vf_guid(pg, i) && k.port[i] == vf_guid(pg, i));
	}
	/* every request came after the VFs were made (sriov_numvfs already read 3) and before any
	 * VF's driver was bound again (nothing written to drivers_probe yet) */
	for (size_t i = 0; i < k.n; i++) {
		assert_string_equal(k.numvfs_then[i], "3");
		assert_false(k.probed_then[i]);
	}
	assert_true(k.node[3] == 0);
	/* then each VF was unbound and bound again: its driver reads the GUIDs at probe */
	assert_true(probed());
	assert_true(has_line(
		&rep,
		"0000:03:00.0: 0 VFs bound to their driver, 3 bound again after their GUIDs"));
	vf_apply_report_clear(&rep);
}

/* A GUID request that fails: the GUIDs already changed go back to what the PF reported before,
 * in reverse (VF 1's pair, then VF 0's), each as the same two requests. */
static void test_guid_undo(void **state)
{
	struct vf_apply_report rep;
	uint64_t pg = UINT64_C(0xe8ebd303007209f4);
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "2\n");
	k.node[0] = 0x11, k.port[0] = 0x12, k.node[1] = 0x21, k.port[1] = 0x22;
	k.fail_set = 4; /* VF 1's port GUID */
	assert_int_equal(run_apply(plan(2, 2, false), &rep), -EIO);
	assert_int_equal(k.n, 2 + 4 + 2 * 3);
	check_guid_request(k.req[2], IFLA_VF_IB_NODE_GUID, 0, vf_guid(pg, 0));
	check_guid_request(k.req[5], IFLA_VF_IB_PORT_GUID, 1, vf_guid(pg, 1));
	/* undo looks the PF up again (a rename in between would otherwise hit another link) */
	check_getlink(k.req[6], "ib0", 0, RTEXT_FILTER_SKIP_STATS);
	check_guid_request(k.req[7], IFLA_VF_IB_NODE_GUID, 1, 0x21);
	check_guid_request(k.req[8], IFLA_VF_IB_PORT_GUID, 1, 0x22);
	check_guid_request(k.req[10], IFLA_VF_IB_NODE_GUID, 0, 0x11);
	check_guid_request(k.req[11], IFLA_VF_IB_PORT_GUID, 0, 0x12);
	assert_true(k.node[0] == 0x11 && k.port[0] == 0x12 && k.node[1] == 0x21 &&
		    k.port[1] == 0x22);
	assert_true(
		has_line(&rep, "undo: ib0: VF 1 GUIDs back to 0000000000000021/0000000000000022"));
	assert_true(
		has_line(&rep, "undo: ib0: VF 0 GUIDs back to 0000000000000011/0000000000000012"));
	vf_apply_report_clear(&rep);
}

static size_t line_of(const struct vf_apply_report *rep, const char *text)
{
	for (size_t i = 0; i < rep->n_lines; i++)
		if (strstr(rep->lines[i], text))
			return i;
	fail_msg("no report line with \"%s\"", text);
	return 0;
}

/* A rebind that fails (VF 1 cannot be unbound): undo puts both VFs' old GUIDs back and binds
 * VF 0, which this run had bound again for its new GUIDs, once more after its old ones, so that
 * its driver shows them; VF 1's unbind fails again and is reported. */
static void test_rebind_undo(void **state)
{
	struct vf_apply_report rep;
	char path[160];
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "2\n");
	k.node[0] = 0x11, k.port[0] = 0x12, k.node[1] = 0x21, k.port[1] = 0x22;
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:03:00.2/driver/unbind", k.root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(run_apply(plan(2, 2, false), &rep), -ENOENT);
	assert_true(k.node[0] == 0x11 && k.port[0] == 0x12 && k.node[1] == 0x21 &&
		    k.port[1] == 0x22);
	size_t back0 =
		line_of(&rep, "undo: ib0: VF 0 GUIDs back to 0000000000000011/0000000000000012");
	size_t again0 =
		line_of(&rep, "undo: ib0: VF 0 (0000:03:00.1) bound again after its old GUIDs");
	assert_true(back0 < again0);
	assert_false(strstr(rep.lines[again0], ": No such"));
	assert_true(strstr(rep.lines[line_of(&rep, "undo: ib0: VF 1 (0000:03:00.2) bound again")],
			   "No such file"));
	vf_apply_report_clear(&rep);
}

/* A PF driver without ndo_get_vf_guid: the GUIDs are still set, and the report says that undo
 * could not restore them. */
static void test_guid_unreported(void **state)
{
	struct vf_apply_report rep;
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "1\n");
	k.reports = false;
	assert_int_equal(run_apply(plan(1, 1, false), &rep), 0);
	assert_true(has_line(
		&rep, "ib0: VF 0: the PF does not report its GUIDs: undo cannot restore them"));
	assert_true(k.node[0] != 0);
	vf_apply_report_clear(&rep);
}

/* nl_link_get_vf_guids() reads the kernel's answer shape: VFs without GUID attributes are left
 * out, the rest keep their index. */
static void test_read_back(void **state)
{
	struct nl_rt *rt;
	struct nl_vf_guid *g;
	size_t n;
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "2\n");
	k.node[1] = 0xaa, k.port[1] = 0xbb;
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get_vf_guids(rt, PF_INDEX, &g, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(g[1].vf, 1);
	assert_true(g[1].node_guid == 0xaa && g[1].port_guid == 0xbb);
	free(g);
	k.reports = false;
	assert_int_equal(nl_link_get_vf_guids(rt, PF_INDEX, &g, &n), 0);
	assert_int_equal(n, 0);
	free(g);
	assert_int_equal(nl_link_get_vf_guids(rt, 0, &g, &n), -EINVAL);
	nl_rt_free(rt);
}

static size_t file_size(const char *rel)
{
	char path[160];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", k.root, rel);
	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A vf-guids step names its VFs: only VF 1's GUIDs are set and only VF 1 is bound again; VF 0,
 * which already has its GUIDs, is not touched (its driver is not unbound under a pod). */
static void test_guids_listed_only(void **state)
{
	struct vf_apply_report rep;
	uint64_t pg = UINT64_C(0xe8ebd303007209f4);
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "2\n");
	k.node[0] = k.port[0] = vf_guid(pg, 0), k.node[1] = 0x21, k.port[1] = 0x22;
	assert_int_equal(run_apply(plan_of(2, 2, false,
					   "[{\"when\":\"live\",\"action\":"
					   "\"vf-guids\",\"vfs\":1,\"vf_indices\":"
					   "[1]},"
					   "{\"when\":\"live\",\"action\":"
					   "\"vf-bind\",\"vfs\":1,\"vf_indices\":"
					   "[1]}]",
					   NULL),
				   &rep),
			 0);
	assert_int_equal(k.n, 2 + 2);
	check_guid_request(k.req[2], IFLA_VF_IB_NODE_GUID, 1, vf_guid(pg, 1));
	check_guid_request(k.req[3], IFLA_VF_IB_PORT_GUID, 1, vf_guid(pg, 1));
	assert_int_equal(file_size("bus/pci/devices/0000:03:00.1/driver/unbind"), 0);
	assert_int_equal(file_size("bus/pci/devices/0000:03:00.2/driver/unbind"),
			 strlen("0000:03:00.2\n"));
	assert_int_equal(file_size("bus/pci/drivers_probe"), strlen("0000:03:00.2\n"));
	assert_true(has_line(&rep, "ib0: GUIDs of 1 VFs set"));
	assert_true(has_line(
		&rep,
		"0000:03:00.0: 0 VFs bound to their driver, 1 bound again after their GUIDs"));
	vf_apply_report_clear(&rep);
}

/* A pod holds VF 0, whose GUIDs a step would change: refused before any request or write; with
 * --force, done. A holder of a VF no step lists is no reason to refuse. */
static void test_held_vf(void **state)
{
	struct vf_apply_report rep;
	struct hw_ctx *ctx;
	static const char steps[] =
		"[{\"when\":\"live\",\"action\":\"vf-guids\",\"vfs\":2,\"vf_indices\":[0,1]},"
		"{\"when\":\"live\",\"action\":\"vf-bind\",\"vfs\":2,\"vf_indices\":[0,1]}]";
	static const char held[] =
		"[{\"namespace\":\"ai\",\"pod\":\"trainer\",\"pod_uid\":null,\"container\":\"c\","
		"\"resource\":\"r\",\"vf\":\"0000:03:00.1\",\"vf_index\":0}]";
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "2\n");
	assert_int_equal(run_apply(plan_of(2, 2, false, steps, held), &rep), 0);
	assert_int_equal(rep.result, VF_APPLY_REFUSED);
	assert_true(has_line(
		&rep,
		"0000:03:00.0: VF 0 (0000:03:00.1) is held by pod ai/trainer container c: vf-guids "
		"would change its GUIDs"));
	assert_int_equal(k.n, 0);
	assert_int_equal(file_size("bus/pci/drivers_probe"), 0);
	vf_apply_report_clear(&rep);

	struct vf_apply_opts o = { .timeout_ms = 200, .force = true };
	json_t *p = plan_of(2, 2, false, steps, held);
	assert_int_equal(hw_ctx_new(k.root, "/dev", &ctx), 0);
	assert_int_equal(vf_apply(ctx, p, &o, &rep), 0);
	hw_ctx_free(ctx);
	json_decref(p);
	assert_int_equal(rep.result, VF_APPLY_DONE);
	assert_true(has_line(&rep, "(--force: done)"));
	vf_apply_report_clear(&rep);

	/* the same pod, and steps that list only VF 1 */
	assert_int_equal(run_apply(plan_of(2, 2, false,
					   "[{\"when\":\"live\",\"action\":"
					   "\"vf-guids\",\"vfs\":1,\"vf_indices\":"
					   "[1]}]",
					   held),
				   &rep),
			 0);
	assert_int_equal(rep.result, VF_APPLY_DONE);
	assert_false(has_line(&rep, "is held by"));
	vf_apply_report_clear(&rep);
}

/* vf-mtu: each listed VF's netdev to the policy's MTU over rtnetlink (one whose MTU is already
 * that is left alone); when a later one fails, the ones set go back. */
static void test_vf_mtu(void **state)
{
	struct vf_apply_report rep;
	mkfile("bus/pci/devices/0000:03:00.0/sriov_numvfs", "3\n");
	k.vfmtu[1] = 2044;
	assert_int_equal(run_apply(plan_of(3, 3, false,
					   "[{\"when\":\"live\",\"action\":\"vf-mtu\","
					   "\"to\":2044,\"vfs\":2,\"vf_indices\":[0,"
					   "1]}]",
					   NULL),
				   &rep),
			 0);
	assert_true(k.vfmtu[0] == 2044 && k.vfmtu[1] == 2044 && k.vfmtu[2] == 4092);
	assert_int_equal(k.n_set, 1);
	assert_true(has_line(&rep, "0000:03:00.0: MTU 2044 on 2 VFs (1 changed)"));
	vf_apply_report_clear(&rep);

	k.vfmtu[0] = 4092, k.n_set = 0, k.fail_set = 2;
	assert_int_equal(run_apply(plan_of(3, 3, false,
					   "[{\"when\":\"live\",\"action\":\"vf-mtu\","
					   "\"to\":2044,\"vfs\":3,\"vf_indices\":[0,1,"
					   "2]}]",
					   NULL),
				   &rep),
			 -EIO);
	assert_true(k.vfmtu[0] == 4092 && k.vfmtu[2] == 4092);
	assert_true(has_line(&rep, "undo: 0000:03:00.0: VF netdev ib0v0: mtu back to 4092"));
	vf_apply_report_clear(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guid_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guid_undo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebind_undo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guid_unreported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guids_listed_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_vf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vf_mtu, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
