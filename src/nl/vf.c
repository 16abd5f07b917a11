/* SPDX-License-Identifier: Apache-2.0 */
/* An SR-IOV VF's settings as its PF holds them (administrative MAC, VLAN, rates, spoofchk, trust,
 * link state): one RTM_SETLINK on the PF per setting, IFLA_VFINFO_LIST/IFLA_VF_INFO/IFLA_VF_*,
 * the way iproute2's `ip link set PF vf N ...` writes them, and the PF's VF table read back
 * (RTM_GETLINK with RTEXT_FILTER_VF) so a caller can put back what it changed.
 *
 * One setting per request: the kernel's do_setvfinfo() applies the attributes of one
 * IFLA_VF_INFO in its own order and stops at the first the driver refuses, without saying
 * which, so a request per setting is what lets the caller name the one refused and undo the
 * ones before it. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>

#include "nl/nl-internal.h"

/* RTM_SETLINK on the PF with IFLA_VFINFO_LIST and one IFLA_VF_INFO open; *ret_info is the
 * VF_INFO nest to put the setting in, closed by vf_msg_end(). */
static int vf_msg_start(int pf_ifindex, struct nl_msg **ret, struct nlattr **ret_list,
			struct nlattr **ret_info)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = pf_ifindex };
	struct nl_msg *msg;

	if (pf_ifindex <= 0)
		return -EINVAL;
	msg = nl_rt_msg(RTM_SETLINK, NLM_F_ACK, &ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	if (!(*ret_list = nla_nest_start(msg, IFLA_VFINFO_LIST)) ||
	    !(*ret_info = nla_nest_start(msg, IFLA_VF_INFO))) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	*ret = msg;
	return 0;
}

static void vf_msg_end(struct nl_msg *msg, struct nlattr *list, struct nlattr *info)
{
	nla_nest_end(msg, info);
	nla_nest_end(msg, list);
}

/* A setting that is one struct in IFLA_VF_INFO. */
static int vf_build_one(int pf_ifindex, int type, const void *data, size_t len, struct nl_msg **ret)
{
	struct nlattr *list, *info;
	struct nl_msg *msg;
	int r = vf_msg_start(pf_ifindex, &msg, &list, &info);

	if (r < 0)
		return r;
	if (nla_put(msg, type, (int)len, data) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	vf_msg_end(msg, list, info);
	*ret = msg;
	return 0;
}

int nl_build_vf_mac(int pf_ifindex, uint32_t vf, const uint8_t *mac, struct nl_msg **ret)
{
	struct ifla_vf_mac m = { .vf = vf };

	memcpy(m.mac, mac, 6);
	return vf_build_one(pf_ifindex, IFLA_VF_MAC, &m, sizeof(m), ret);
}

int nl_build_vf_vlan(int pf_ifindex, uint32_t vf, uint32_t vlan, uint32_t qos, uint16_t proto,
		     struct nl_msg **ret)
{
	struct ifla_vf_vlan_info vi;
	struct ifla_vf_vlan v = { .vf = vf, .vlan = vlan, .qos = qos };
	struct nlattr *list, *info, *vlist;
	struct nl_msg *msg;
	int r;

	/* its two bytes of tail padding go to the kernel too: zero, not stack */
	memset(&vi, 0, sizeof(vi));
	vi.vf = vf;
	vi.vlan = vlan;
	vi.qos = qos;
	vi.vlan_proto = htons(proto);

	if (vlan > 4095 || qos > 7 || (proto != ETH_P_8021Q && proto != ETH_P_8021AD))
		return -EINVAL;
	/* 802.1Q as iproute2 sends it: the plain IFLA_VF_VLAN every kernel with SR-IOV reads (the
	 * list came in 4.9 with 802.1ad, which only the list can carry) */
	if (proto == ETH_P_8021Q)
		return vf_build_one(pf_ifindex, IFLA_VF_VLAN, &v, sizeof(v), ret);
	if ((r = vf_msg_start(pf_ifindex, &msg, &list, &info)) < 0)
		return r;
	if (!(vlist = nla_nest_start(msg, IFLA_VF_VLAN_LIST)) ||
	    nla_put(msg, IFLA_VF_VLAN_INFO, sizeof(vi), &vi) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nla_nest_end(msg, vlist);
	vf_msg_end(msg, list, info);
	*ret = msg;
	return 0;
}

int nl_build_vf_rate(int pf_ifindex, uint32_t vf, uint32_t min_tx_rate, uint32_t max_tx_rate,
		     struct nl_msg **ret)
{
	struct ifla_vf_rate rt = { .vf = vf,
				   .min_tx_rate = min_tx_rate,
				   .max_tx_rate = max_tx_rate };

	/* both at once: the older IFLA_VF_TX_RATE sets the maximum and keeps the minimum */
	return vf_build_one(pf_ifindex, IFLA_VF_RATE, &rt, sizeof(rt), ret);
}

int nl_build_vf_flag(int pf_ifindex, int type, uint32_t vf, bool on, struct nl_msg **ret)
{
	/* struct ifla_vf_spoofchk and struct ifla_vf_trust are the same two u32s */
	struct ifla_vf_spoofchk s = { .vf = vf, .setting = on };

	if (type != IFLA_VF_SPOOFCHK && type != IFLA_VF_TRUST)
		return -EINVAL;
	return vf_build_one(pf_ifindex, type, &s, sizeof(s), ret);
}

int nl_build_vf_link_state(int pf_ifindex, uint32_t vf, uint32_t state, struct nl_msg **ret)
{
	struct ifla_vf_link_state ls = { .vf = vf, .link_state = state };

	if (state > IFLA_VF_LINK_STATE_DISABLE)
		return -EINVAL;
	return vf_build_one(pf_ifindex, IFLA_VF_LINK_STATE, &ls, sizeof(ls), ret);
}

int nl_build_vf_guid(int pf_ifindex, int type, uint32_t vf, uint64_t guid, struct nl_msg **ret)
{
	struct ifla_vf_guid g;

	/* the four bytes of padding after its u32 go to the kernel too: zero, not stack */
	memset(&g, 0, sizeof(g));
	g.vf = vf;
	g.guid = guid;
	if (type != IFLA_VF_IB_NODE_GUID && type != IFLA_VF_IB_PORT_GUID)
		return -EINVAL;
	return vf_build_one(pf_ifindex, type, &g, sizeof(g), ret);
}

int nl_build_vf_get(int pf_ifindex, struct nl_msg **ret)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = pf_ifindex };
	struct nl_msg *msg;

	if (pf_ifindex <= 0)
		return -EINVAL;
	msg = nl_rt_msg(RTM_GETLINK, 0, &ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	/* the VF table is in the answer only when asked for (rtnl_fill_ifinfo's RTEXT_FILTER_VF);
	 * its per-VF counters are not wanted */
	if (nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	*ret = msg;
	return 0;
}

/* Each attribute of one IFLA_VF_INFO carries the VF's number first; the kernel's structs say
 * so for every one of them, so the number is read from whichever comes. */
static int vf_info_parse(struct nlattr *vfinfo, struct nl_vf_info *ret)
{
	struct nlattr *tb[IFLA_VF_MAX + 1], *a;
	struct nl_vf_info v = { .spoofchk = -1, .trust = -1, .vlan_proto = ETH_P_8021Q };
	int rem;

	if (nla_parse_nested(tb, IFLA_VF_MAX, vfinfo, NULL) < 0)
		return -EBADMSG;
	if (!tb[IFLA_VF_MAC] || nla_len(tb[IFLA_VF_MAC]) < (int)sizeof(struct ifla_vf_mac))
		return -EBADMSG; /* rtnl_fill_vfinfo() always puts it */
	{
		const struct ifla_vf_mac *m = nla_data(tb[IFLA_VF_MAC]);
		v.vf = m->vf;
		memcpy(v.mac, m->mac, sizeof(v.mac));
	}
	if (tb[IFLA_VF_VLAN] && nla_len(tb[IFLA_VF_VLAN]) >= (int)sizeof(struct ifla_vf_vlan)) {
		const struct ifla_vf_vlan *vl = nla_data(tb[IFLA_VF_VLAN]);
		v.vlan = vl->vlan;
		v.qos = vl->qos;
	}
	/* the list says the protocol too (4.9 and later) */
	if (tb[IFLA_VF_VLAN_LIST])
		nla_for_each_nested(a, tb[IFLA_VF_VLAN_LIST], rem)
		{
			const struct ifla_vf_vlan_info *vi = nla_data(a);
			if (nla_type(a) != IFLA_VF_VLAN_INFO || nla_len(a) < (int)sizeof(*vi))
				continue;
			v.vlan = vi->vlan;
			v.qos = vi->qos;
			v.vlan_proto = ntohs(vi->vlan_proto);
			break;
		}
	if (tb[IFLA_VF_RATE] && nla_len(tb[IFLA_VF_RATE]) >= (int)sizeof(struct ifla_vf_rate)) {
		const struct ifla_vf_rate *rt = nla_data(tb[IFLA_VF_RATE]);
		v.min_tx_rate = rt->min_tx_rate;
		v.max_tx_rate = rt->max_tx_rate;
	}
	/* -1 (a driver that does not report it) stays -1 */
	if (tb[IFLA_VF_SPOOFCHK] &&
	    nla_len(tb[IFLA_VF_SPOOFCHK]) >= (int)sizeof(struct ifla_vf_spoofchk))
		v.spoofchk = (int)((const struct ifla_vf_spoofchk *)nla_data(tb[IFLA_VF_SPOOFCHK]))
				     ->setting;
	if (tb[IFLA_VF_TRUST] && nla_len(tb[IFLA_VF_TRUST]) >= (int)sizeof(struct ifla_vf_trust))
		v.trust = (int)((const struct ifla_vf_trust *)nla_data(tb[IFLA_VF_TRUST]))->setting;
	if (v.spoofchk > 1)
		v.spoofchk = -1;
	if (v.trust > 1)
		v.trust = -1;
	if (tb[IFLA_VF_LINK_STATE] &&
	    nla_len(tb[IFLA_VF_LINK_STATE]) >= (int)sizeof(struct ifla_vf_link_state))
		v.link_state = ((const struct ifla_vf_link_state *)nla_data(tb[IFLA_VF_LINK_STATE]))
				       ->link_state;
	if (tb[IFLA_VF_IB_NODE_GUID] && tb[IFLA_VF_IB_PORT_GUID] &&
	    nla_len(tb[IFLA_VF_IB_NODE_GUID]) >= (int)sizeof(struct ifla_vf_guid) &&
	    nla_len(tb[IFLA_VF_IB_PORT_GUID]) >= (int)sizeof(struct ifla_vf_guid)) {
		struct ifla_vf_guid node, port;

		/* copied: an attribute is 4-byte aligned, the struct's __u64 wants 8 */
		memcpy(&node, nla_data(tb[IFLA_VF_IB_NODE_GUID]), sizeof(node));
		memcpy(&port, nla_data(tb[IFLA_VF_IB_PORT_GUID]), sizeof(port));
		v.has_ib_guids = true;
		v.node_guid = node.guid;
		v.port_guid = port.guid;
	}
	*ret = v;
	return 0;
}

int nl_parse_vf_table(const struct nlmsghdr *h, int (*each)(const struct nl_vf_info *v, void *ud),
		      void *ud)
{
	struct nlattr *tb[IFLA_MAX + 1], *a;
	int rem, r;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return 0;
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
		return -EBADMSG;
	/* no list: a device without SR-IOV (or none enabled) */
	if (!tb[IFLA_VFINFO_LIST])
		return 0;
	nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem)
	{
		struct nl_vf_info v;

		if (nla_type(a) != IFLA_VF_INFO)
			continue;
		if ((r = vf_info_parse(a, &v)) < 0 || (r = each(&v, ud)) != 0)
			return r;
	}
	return 0;
}

struct vf_match {
	uint32_t vf;
	struct nl_vf_info *ret;
};

static int vf_match(const struct nl_vf_info *v, void *ud)
{
	struct vf_match *m = ud;

	if (v->vf != m->vf)
		return 0;
	*m->ret = *v;
	return 1;
}

int nl_parse_vf_info(const struct nlmsghdr *h, uint32_t vf, struct nl_vf_info *ret)
{
	struct vf_match m = { .vf = vf, .ret = ret };

	return nl_parse_vf_table(h, vf_match, &m);
}

/* r: the builder's answer (msg is only built when r >= 0) */
static int vf_send(struct nl_rt *rt, int r, struct nl_msg *msg)
{
	return r < 0 ? r : nl_rt_talk_vf(rt, msg, NULL, NULL);
}

int nl_link_set_vf_mac(struct nl_rt *rt, int pf_ifindex, uint32_t vf, const uint8_t *mac)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_mac(pf_ifindex, vf, mac, &msg);

	return vf_send(rt, r, msg);
}

int nl_link_set_vf_vlan(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t vlan, uint32_t qos,
			uint16_t proto)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_vlan(pf_ifindex, vf, vlan, qos, proto, &msg);

	return vf_send(rt, r, msg);
}

int nl_link_set_vf_rate(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t min_tx_rate,
			uint32_t max_tx_rate)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_rate(pf_ifindex, vf, min_tx_rate, max_tx_rate, &msg);

	return vf_send(rt, r, msg);
}

int nl_link_set_vf_spoofchk(struct nl_rt *rt, int pf_ifindex, uint32_t vf, bool on)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_flag(pf_ifindex, IFLA_VF_SPOOFCHK, vf, on, &msg);

	return vf_send(rt, r, msg);
}

int nl_link_set_vf_trust(struct nl_rt *rt, int pf_ifindex, uint32_t vf, bool on)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_flag(pf_ifindex, IFLA_VF_TRUST, vf, on, &msg);

	return vf_send(rt, r, msg);
}

int nl_link_set_vf_link_state(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t state)
{
	struct nl_msg *msg = NULL;
	int r = nl_build_vf_link_state(pf_ifindex, vf, state, &msg);

	return vf_send(rt, r, msg);
}

struct vf_get {
	uint32_t vf;
	struct nl_vf_info info;
	bool found;
};

static int parse_vf(struct nlmsghdr *h, void *ud)
{
	struct vf_get *g = ud;
	int r = nl_parse_vf_info(h, g->vf, &g->info);

	if (r > 0)
		g->found = true;
	return r < 0 ? r : 0;
}

int nl_link_get_vf(struct nl_rt *rt, int pf_ifindex, uint32_t vf, struct nl_vf_info *ret)
{
	struct vf_get g = { .vf = vf };
	struct nl_msg *msg;
	int r = nl_build_vf_get(pf_ifindex, &msg);

	if (r < 0)
		return r;
	r = nl_rt_talk_vf(rt, msg, parse_vf, &g);
	if (r < 0)
		return r;
	if (!g.found)
		return 0;
	*ret = g.info;
	return 1;
}
