/* SPDX-License-Identifier: Apache-2.0 */
/* src/nl/vf.c: the VF settings a PF takes (IFLA_VFINFO_LIST/IFLA_VF_INFO/IFLA_VF_*) read back
 * byte by byte against <linux/if_link.h>'s structs, since no kernel here has an SR-IOV PF to
 * answer them; the VF table's parser on an answer built the way the kernel's
 * rtnl_fill_vfinfo() builds it (net/core/rtnetlink.c: per VF one IFLA_VF_INFO holding
 * IFLA_VF_MAC, _BROADCAST, _VLAN, _RATE, _TX_RATE, _SPOOFCHK, _LINK_STATE, _RSS_QUERY_EN,
 * _TRUST, then the IFLA_VF_VLAN_LIST nest, the IB GUIDs where the driver has them); what a
 * veth (no SR-IOV) answers; and the test stand-in (RDMAK_TEST_VF_STANDIN). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "nl/nl-internal.h"

static bool have_netns;

/* The one attribute inside the request's only IFLA_VFINFO_LIST/IFLA_VF_INFO, walked by hand
 * (rtattr headers and NLA_ALIGN as the uapi defines them), after checking the header. */
static const struct nlattr *only_vf_attr(struct nl_msg *msg, int pf_ifindex)
{
	const struct nlmsghdr *h = nlmsg_hdr(msg);
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct nlattr *list, *info, *a;

	assert_int_equal(h->nlmsg_type, RTM_SETLINK);
	assert_true(h->nlmsg_flags & NLM_F_ACK);
	assert_int_equal(ifi->ifi_family, AF_UNSPEC);
	assert_int_equal(ifi->ifi_index, pf_ifindex);
	list = (const struct nlattr *)((const char *)ifi + NLMSG_ALIGN(sizeof(*ifi)));
	assert_int_equal(list->nla_type & NLA_TYPE_MASK, IFLA_VFINFO_LIST);
	/* the list is the message's only attribute */
	assert_int_equal(NLMSG_ALIGN(sizeof(*ifi)) + NLA_ALIGN(list->nla_len),
			 h->nlmsg_len - NLMSG_HDRLEN);
	info = (const struct nlattr *)((const char *)list + NLA_HDRLEN);
	assert_int_equal(info->nla_type & NLA_TYPE_MASK, IFLA_VF_INFO);
	assert_int_equal(NLA_ALIGN(info->nla_len), list->nla_len - NLA_HDRLEN);
	a = (const struct nlattr *)((const char *)info + NLA_HDRLEN);
	assert_int_equal(NLA_ALIGN(a->nla_len), info->nla_len - NLA_HDRLEN);
	return a;
}

static void assert_attr(const struct nlattr *a, int type, const void *want, size_t len)
{
	assert_int_equal(a->nla_type & NLA_TYPE_MASK, type);
	assert_int_equal(a->nla_len, NLA_HDRLEN + len);
	assert_memory_equal((const char *)a + NLA_HDRLEN, want, len);
}

static void test_mac(void **st)
{
	static const uint8_t mac[6] = { 0xca, 0xfe, 0xc0, 0xff, 0xee, 0x00 };
	struct ifla_vf_mac want = { .vf = 7 };
	struct nl_msg *msg;

	memcpy(want.mac, mac, 6); /* the rest of the 32 bytes zero */
	assert_int_equal(nl_build_vf_mac(4, 7, mac, &msg), 0);
	assert_attr(only_vf_attr(msg, 4), IFLA_VF_MAC, &want, sizeof(want));
	assert_int_equal(sizeof(want), 36);
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_mac(0, 7, mac, &msg), -EINVAL);
}

static void test_vlan(void **st)
{
	struct ifla_vf_vlan v = { .vf = 2, .vlan = 1000, .qos = 4 };
	struct ifla_vf_vlan_info vi;
	const struct nlattr *a, *in;
	struct nl_msg *msg;

	memset(&vi, 0, sizeof(vi)); /* the tail padding is sent: zero */
	vi.vf = 2;
	vi.vlan = 1000;
	vi.qos = 4;
	vi.vlan_proto = htons(ETH_P_8021AD);

	/* 802.1Q: the plain IFLA_VF_VLAN, as iproute2 sends it */
	assert_int_equal(nl_build_vf_vlan(4, 2, 1000, 4, ETH_P_8021Q, &msg), 0);
	assert_attr(only_vf_attr(msg, 4), IFLA_VF_VLAN, &v, sizeof(v));
	assert_int_equal(sizeof(v), 12);
	nlmsg_free(msg);
	/* 802.1ad: the list with one IFLA_VF_VLAN_INFO, protocol in network order (0x88a8) */
	assert_int_equal(nl_build_vf_vlan(4, 2, 1000, 4, ETH_P_8021AD, &msg), 0);
	a = only_vf_attr(msg, 4);
	assert_int_equal(a->nla_type & NLA_TYPE_MASK, IFLA_VF_VLAN_LIST);
	in = (const struct nlattr *)((const char *)a + NLA_HDRLEN);
	assert_int_equal(NLA_ALIGN(in->nla_len), a->nla_len - NLA_HDRLEN);
	assert_attr(in, IFLA_VF_VLAN_INFO, &vi, sizeof(vi));
	assert_int_equal(sizeof(vi), 16);
	assert_int_equal(((const uint8_t *)in)[NLA_HDRLEN + 12], 0x88);
	assert_int_equal(((const uint8_t *)in)[NLA_HDRLEN + 13], 0xa8);
	nlmsg_free(msg);
	/* what the kernel refuses is refused here first */
	assert_int_equal(nl_build_vf_vlan(4, 2, 4096, 0, ETH_P_8021Q, &msg), -EINVAL);
	assert_int_equal(nl_build_vf_vlan(4, 2, 10, 8, ETH_P_8021Q, &msg), -EINVAL);
	assert_int_equal(nl_build_vf_vlan(4, 2, 10, 0, 0x0800, &msg), -EINVAL);
}

static void test_rate_flags_state(void **st)
{
	struct ifla_vf_rate rt = { .vf = 1, .min_tx_rate = 100, .max_tx_rate = 200 };
	struct ifla_vf_spoofchk sc = { .vf = 1, .setting = 0 };
	struct ifla_vf_trust tr = { .vf = 1, .setting = 1 };
	struct ifla_vf_link_state ls = { .vf = 1, .link_state = IFLA_VF_LINK_STATE_ENABLE };
	struct nl_msg *msg;

	assert_int_equal(nl_build_vf_rate(9, 1, 100, 200, &msg), 0);
	assert_attr(only_vf_attr(msg, 9), IFLA_VF_RATE, &rt, sizeof(rt));
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_flag(9, IFLA_VF_SPOOFCHK, 1, false, &msg), 0);
	assert_attr(only_vf_attr(msg, 9), IFLA_VF_SPOOFCHK, &sc, sizeof(sc));
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_flag(9, IFLA_VF_TRUST, 1, true, &msg), 0);
	assert_attr(only_vf_attr(msg, 9), IFLA_VF_TRUST, &tr, sizeof(tr));
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_flag(9, IFLA_VF_MAC, 1, true, &msg), -EINVAL);
	assert_int_equal(nl_build_vf_link_state(9, 1, IFLA_VF_LINK_STATE_ENABLE, &msg), 0);
	assert_attr(only_vf_attr(msg, 9), IFLA_VF_LINK_STATE, &ls, sizeof(ls));
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_link_state(9, 1, 3, &msg), -EINVAL);
}

static void test_get_request(void **st)
{
	struct nl_msg *msg;
	struct nlattr *tb[IFLA_MAX + 1];

	assert_int_equal(nl_build_vf_get(6, &msg), 0);
	assert_int_equal(nlmsg_hdr(msg)->nlmsg_type, RTM_GETLINK);
	assert_false(nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP);
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlmsg_hdr(msg)))->ifi_index, 6);
	assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL),
			 0);
	assert_int_equal(nla_get_u32(tb[IFLA_EXT_MASK]), RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS);
	nlmsg_free(msg);
}

/* One VF as rtnl_fill_vfinfo() puts it: every attribute, in its order. spoofchk and trust
 * are what ndo_get_vf_config() left (the kernel presets -1: "not reported"). */
static void put_vf(struct nl_msg *m, uint32_t vf, const uint8_t *mac, uint32_t vlan, uint32_t qos,
		   uint16_t proto, uint32_t min, uint32_t max, uint32_t spoof, uint32_t trust,
		   uint32_t state, bool guids)
{
	struct ifla_vf_mac vm = { .vf = vf };
	struct ifla_vf_broadcast vb;
	struct ifla_vf_vlan vv = { .vf = vf, .vlan = vlan, .qos = qos };
	struct ifla_vf_rate vr = { .vf = vf, .min_tx_rate = min, .max_tx_rate = max };
	struct ifla_vf_tx_rate vt = { .vf = vf, .rate = max };
	struct ifla_vf_spoofchk vs = { .vf = vf, .setting = spoof };
	struct ifla_vf_link_state vl = { .vf = vf, .link_state = state };
	struct ifla_vf_rss_query_en vq = { .vf = vf, .setting = (uint32_t)-1 };
	struct ifla_vf_trust vtr = { .vf = vf, .setting = trust };
	struct ifla_vf_vlan_info vi = {
		.vf = vf, .vlan = vlan, .qos = qos, .vlan_proto = htons(proto)
	};
	struct ifla_vf_guid g = { .vf = vf, .guid = 0x0002c90300000001ull };
	struct nlattr *info, *list;

	memcpy(vm.mac, mac, 6);
	memset(vb.broadcast, 0xff, sizeof(vb.broadcast));
	assert_non_null(info = nla_nest_start(m, IFLA_VF_INFO));
	assert_int_equal(nla_put(m, IFLA_VF_MAC, sizeof(vm), &vm), 0);
	assert_int_equal(nla_put(m, IFLA_VF_BROADCAST, sizeof(vb), &vb), 0);
	assert_int_equal(nla_put(m, IFLA_VF_VLAN, sizeof(vv), &vv), 0);
	assert_int_equal(nla_put(m, IFLA_VF_RATE, sizeof(vr), &vr), 0);
	assert_int_equal(nla_put(m, IFLA_VF_TX_RATE, sizeof(vt), &vt), 0);
	assert_int_equal(nla_put(m, IFLA_VF_SPOOFCHK, sizeof(vs), &vs), 0);
	assert_int_equal(nla_put(m, IFLA_VF_LINK_STATE, sizeof(vl), &vl), 0);
	assert_int_equal(nla_put(m, IFLA_VF_RSS_QUERY_EN, sizeof(vq), &vq), 0);
	assert_int_equal(nla_put(m, IFLA_VF_TRUST, sizeof(vtr), &vtr), 0);
	if (guids) {
		assert_int_equal(nla_put(m, IFLA_VF_IB_NODE_GUID, sizeof(g), &g), 0);
		assert_int_equal(nla_put(m, IFLA_VF_IB_PORT_GUID, sizeof(g), &g), 0);
	}
	assert_non_null(list = nla_nest_start(m, IFLA_VF_VLAN_LIST));
	assert_int_equal(nla_put(m, IFLA_VF_VLAN_INFO, sizeof(vi), &vi), 0);
	nla_nest_end(m, list);
	nla_nest_end(m, info);
}

/* The answer to the VF table's GETLINK of a PF with three VFs. */
static struct nl_msg *pf_answer(void)
{
	static const uint8_t m0[6] = { 0 }, m1[6] = { 0x02, 0, 0, 0, 0, 0x11 },
			     m2[6] = { 0x02, 0, 0, 0, 0, 0x22 };
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 6, .ifi_type = 1 };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
	struct nlattr *list;

	assert_non_null(m);
	assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
	assert_int_equal(nla_put_string(m, IFLA_IFNAME, "pf0"), 0);
	assert_int_equal(nla_put_u32(m, IFLA_NUM_VF, 3), 0);
	assert_non_null(list = nla_nest_start(m, IFLA_VFINFO_LIST));
	put_vf(m, 0, m0, 0, 0, ETH_P_8021Q, 0, 0, 1, 0, IFLA_VF_LINK_STATE_AUTO, false);
	put_vf(m, 1, m1, 1000, 4, ETH_P_8021AD, 100, 200, 0, 1, IFLA_VF_LINK_STATE_ENABLE, true);
	put_vf(m, 2, m2, 5, 0, ETH_P_8021Q, 0, 0, (uint32_t)-1, (uint32_t)-1,
	       IFLA_VF_LINK_STATE_DISABLE, false);
	nla_nest_end(m, list);
	return m;
}

static void test_parse(void **st)
{
	struct nl_msg *m = pf_answer();
	struct nl_vf_info v;

	assert_int_equal(nl_parse_vf_info(nlmsg_hdr(m), 1, &v), 1);
	assert_int_equal(v.vf, 1);
	assert_memory_equal(v.mac, ((const uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x11 }), 6);
	assert_int_equal(v.vlan, 1000);
	assert_int_equal(v.qos, 4);
	assert_int_equal(v.vlan_proto, ETH_P_8021AD);
	assert_int_equal(v.min_tx_rate, 100);
	assert_int_equal(v.max_tx_rate, 200);
	assert_int_equal(v.spoofchk, 0);
	assert_int_equal(v.trust, 1);
	assert_int_equal(v.link_state, IFLA_VF_LINK_STATE_ENABLE);
	/* the IB GUIDs, read by the same reader (rdmak vf apply saves them through it) */
	assert_true(v.has_ib_guids);
	assert_true(v.node_guid == 0x0002c90300000001ull && v.port_guid == 0x0002c90300000001ull);
	assert_int_equal(nl_parse_vf_info(nlmsg_hdr(m), 0, &v), 1);
	assert_false(v.has_ib_guids);
	assert_int_equal(v.vf, 0);
	assert_int_equal(v.vlan, 0);
	assert_int_equal(v.vlan_proto, ETH_P_8021Q);
	assert_int_equal(v.spoofchk, 1);
	assert_int_equal(v.trust, 0);
	assert_int_equal(v.link_state, IFLA_VF_LINK_STATE_AUTO);
	/* a driver that reports neither flag: -1 kept, not read as "on" */
	assert_int_equal(nl_parse_vf_info(nlmsg_hdr(m), 2, &v), 1);
	assert_int_equal(v.spoofchk, -1);
	assert_int_equal(v.trust, -1);
	assert_int_equal(v.vlan, 5);
	assert_int_equal(v.link_state, IFLA_VF_LINK_STATE_DISABLE);
	/* no VF 3, and a PF without the list (no SR-IOV): 0 */
	assert_int_equal(nl_parse_vf_info(nlmsg_hdr(m), 3, &v), 0);
	nlmsg_free(m);
	{
		struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 6 };
		m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
		assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
		assert_int_equal(nl_parse_vf_info(nlmsg_hdr(m), 0, &v), 0);
		nlmsg_free(m);
	}
}

static void test_veth_has_no_vfs(void **st)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 1 };
	struct nl_rt *rt;
	struct nl_link pf;
	struct nl_vf_info v;

	if (!have_netns)
		skip();
	assert_int_equal(system("ip link add pf0 type veth peer name pf0p"), 0);
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get(rt, "pf0", &pf), 1);
	/* a veth lists no VFs, and refuses every setting as a driver without it does */
	assert_int_equal(nl_link_get_vf(rt, pf.ifindex, 0, &v), 0);
	assert_int_equal(nl_link_set_vf_mac(rt, pf.ifindex, 0, mac), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_vlan(rt, pf.ifindex, 0, 10, 0, ETH_P_8021Q), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_vlan(rt, pf.ifindex, 0, 10, 0, ETH_P_8021AD), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_rate(rt, pf.ifindex, 0, 1, 2), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_spoofchk(rt, pf.ifindex, 0, true), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_trust(rt, pf.ifindex, 0, true), -EOPNOTSUPP);
	assert_int_equal(nl_link_set_vf_link_state(rt, pf.ifindex, 0, IFLA_VF_LINK_STATE_ENABLE),
			 -EOPNOTSUPP);
	nl_rt_free(rt);
}

static void test_standin(void **st)
{
	char dir[] = "/tmp/rdmak-nlvf.XXXXXX", path[64], line[512];
	struct nl_msg *m = pf_answer();
	struct nl_vf_info v;
	struct nl_rt rt = { 0 }; /* the stand-in answers without the kernel: no socket */
	FILE *f;
	int fd, n = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vfinfo", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len),
			 (ssize_t)nlmsg_hdr(m)->nlmsg_len);
	close(fd);
	nlmsg_free(m);
	setenv("RDMAK_TEST_VF_STANDIN", dir, 1);
	assert_int_equal(nl_link_get_vf(&rt, 6, 1, &v), 1);
	assert_int_equal(v.vlan, 1000);
	snprintf(path, sizeof(path), "%s/fail", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "3\n", 2), 2);
	close(fd);
	assert_int_equal(nl_link_set_vf_trust(&rt, 6, 1, true), 0);
	assert_int_equal(nl_link_set_vf_spoofchk(&rt, 6, 1, false),
			 -EOPNOTSUPP); /* the 3rd request */
	unsetenv("RDMAK_TEST_VF_STANDIN");
	/* every request, in order, as hex of the message built */
	snprintf(path, sizeof(path), "%s/requests", dir);
	assert_non_null(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f)) {
		unsigned type;
		assert_int_equal(sscanf(line + 8, "%2x", &type), 1); /* nlmsg_type's low byte */
		assert_int_equal(type, n == 0 ? RTM_GETLINK : RTM_SETLINK);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 3);
	snprintf(line, sizeof(line), "rm -rf %s", dir);
	assert_int_equal(system(line), 0);
}

static int setup(void **st)
{
	if (unshare(CLONE_NEWNET) == 0)
		have_netns = true;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_vlan),
		cmocka_unit_test(test_rate_flags_state),
		cmocka_unit_test(test_get_request),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_veth_has_no_vfs),
		cmocka_unit_test(test_standin),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
