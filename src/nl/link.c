/* SPDX-License-Identifier: Apache-2.0 */
/* Links: lookups and dumps (parsed here: libnl-route 3.7 reads neither IFLA_PARENT_DEV_NAME nor
 * an ipoib link's data), macvlan and IPoIB children, moves between namespaces, renames, MTU,
 * MAC, up/down, per-interface IPv4 settings and InfiniBand VF GUIDs. */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/socket.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet.h>

#include "nl/nl-internal.h"
#include "util/cleanup.h"

static void copy_str(char *dst, size_t len, const struct nlattr *a)
{
	const char *s = nla_data(a);

	snprintf(dst, len, "%.*s", (int)strnlen(s, (size_t)nla_len(a)), s);
}

static void link_parse_info(const struct nlattr *linkinfo, struct nl_link *l)
{
	struct nlattr *info[IFLA_INFO_MAX + 1],
		*data[IFLA_MACVLAN_MAX > IFLA_IPOIB_MAX ? IFLA_MACVLAN_MAX + 1
							: IFLA_IPOIB_MAX + 1];

	if (nla_parse_nested(info, IFLA_INFO_MAX, (struct nlattr *)linkinfo, NULL) < 0)
		return;
	if (info[IFLA_INFO_KIND])
		copy_str(l->kind, sizeof(l->kind), info[IFLA_INFO_KIND]);
	if (!info[IFLA_INFO_DATA])
		return;
	if (!strcmp(l->kind, "macvlan")) {
		if (nla_parse_nested(data, IFLA_MACVLAN_MAX, info[IFLA_INFO_DATA], NULL) == 0 &&
		    data[IFLA_MACVLAN_MODE] && nla_len(data[IFLA_MACVLAN_MODE]) >= 4)
			l->macvlan_mode = nla_get_u32(data[IFLA_MACVLAN_MODE]);
	} else if (!strcmp(l->kind, "ipoib")) {
		if (nla_parse_nested(data, IFLA_IPOIB_MAX, info[IFLA_INFO_DATA], NULL) == 0 &&
		    data[IFLA_IPOIB_PKEY] && nla_len(data[IFLA_IPOIB_PKEY]) >= 2)
			l->ipoib_pkey = nla_get_u16(data[IFLA_IPOIB_PKEY]);
	}
}

static int link_parse(struct nlmsghdr *h, struct nl_link *l)
{
	struct nlattr *tb[IFLA_MAX + 1];
	const struct ifinfomsg *ifi;
	int r;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return 0;
	r = nlmsg_parse(h, sizeof(*ifi), tb, IFLA_MAX, NULL);
	if (r < 0)
		return -EBADMSG;
	ifi = nlmsg_data(h);
	memset(l, 0, sizeof(*l));
	l->ifindex = ifi->ifi_index;
	l->type = ifi->ifi_type;
	l->flags = ifi->ifi_flags;
	l->link_netnsid = -1;
	l->ipoib_pkey = -1;
	if (tb[IFLA_IFNAME])
		copy_str(l->name, sizeof(l->name), tb[IFLA_IFNAME]);
	if (tb[IFLA_MTU] && nla_len(tb[IFLA_MTU]) >= 4)
		l->mtu = nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_LINK] && nla_len(tb[IFLA_LINK]) >= 4)
		l->link_ifindex = (int)nla_get_u32(tb[IFLA_LINK]);
	if (tb[IFLA_LINK_NETNSID] && nla_len(tb[IFLA_LINK_NETNSID]) >= 4)
		l->link_netnsid = (int)nla_get_u32(tb[IFLA_LINK_NETNSID]);
	if (tb[IFLA_ADDRESS]) {
		l->addr_len = (unsigned)nla_len(tb[IFLA_ADDRESS]);
		if (l->addr_len > sizeof(l->addr))
			l->addr_len = sizeof(l->addr);
		memcpy(l->addr, nla_data(tb[IFLA_ADDRESS]), l->addr_len);
	}
	if (tb[IFLA_PARENT_DEV_NAME])
		copy_str(l->parent_dev, sizeof(l->parent_dev), tb[IFLA_PARENT_DEV_NAME]);
	if (tb[IFLA_PARENT_DEV_BUS_NAME])
		copy_str(l->parent_bus, sizeof(l->parent_bus), tb[IFLA_PARENT_DEV_BUS_NAME]);
	if (tb[IFLA_LINKINFO])
		link_parse_info(tb[IFLA_LINKINFO], l);
	return 1;
}

struct link_one {
	struct nl_link *ret;
	bool found;
};

static int parse_one(struct nlmsghdr *h, void *ud)
{
	struct link_one *o = ud;
	int r = link_parse(h, o->ret);

	if (r > 0)
		o->found = true;
	return r < 0 ? r : 0;
}

static int link_get(struct nl_rt *rt, const char *name, int ifindex, struct nl_link *ret)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_link l;
	struct link_one o = { .ret = &l };
	struct nl_msg *msg;
	int r;

	if (name && (!*name || strlen(name) >= NL_IFNAMSIZ))
		return -EINVAL;
	msg = nl_rt_msg(RTM_GETLINK, 0, &ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0 ||
	    (name && nla_put_string(msg, IFLA_IFNAME, name) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = nl_rt_talk(rt, msg, parse_one, &o);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return r;
	if (!o.found)
		return 0;
	*ret = l;
	return 1;
}

int nl_link_get(struct nl_rt *rt, const char *name, struct nl_link *ret)
{
	return link_get(rt, name, 0, ret);
}

int nl_link_get_by_index(struct nl_rt *rt, int ifindex, struct nl_link *ret)
{
	if (ifindex <= 0)
		return -EINVAL;
	return link_get(rt, NULL, ifindex, ret);
}

struct link_list {
	struct nl_link *v;
	size_t n;
};

static int parse_list(struct nlmsghdr *h, void *ud)
{
	struct link_list *ll = ud;
	struct nl_link l, *slot;
	int r = link_parse(h, &l);

	if (r <= 0)
		return r;
	slot = nl_array_add((void **)&ll->v, &ll->n, sizeof(l));
	if (!slot)
		return -ENOMEM;
	*slot = l;
	return 0;
}

static void reset_list(void *ud)
{
	struct link_list *ll = ud;

	ll->n = 0;
}

int nl_link_list(struct nl_rt *rt, struct nl_link **ret, size_t *ret_n)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct link_list ll = { 0 };
	int r;

	r = nl_rt_dump(rt, nl_rt_msg(RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi)), parse_list,
		       reset_list, &ll);
	if (r < 0) {
		free(ll.v);
		return r;
	}
	*ret = ll.v;
	*ret_n = ll.n;
	return 0;
}

/* One builder for both kinds of child: the kind's data (macvlan mode, IPoIB pkey) and what the
 * request that creates it also sets (MTU, MAC, up: no second request to change the new link). */
static int build_child_add(const char *kind, const char *name, int parent_ifindex, int netns_fd,
			   uint32_t mode, uint16_t pkey, const struct nl_link_new *set,
			   struct nl_msg **ret)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct nlattr *info, *data;
	struct nl_msg *msg;
	bool macvlan = !strcmp(kind, "macvlan");

	if (!name || !*name || strlen(name) >= NL_IFNAMSIZ || parent_ifindex <= 0 ||
	    (set && set->addr_len > 32))
		return -EINVAL;
	if (set && set->up) {
		/* rtnl_configure_link() applies these flags once the link is registered */
		ifi.ifi_flags = IFF_UP;
		ifi.ifi_change = IFF_UP;
	}
	msg = nl_rt_msg(RTM_NEWLINK,
			NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK | (set && set->echo ? NLM_F_ECHO : 0),
			&ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, IFLA_IFNAME, name) < 0 ||
	    nla_put_u32(msg, IFLA_LINK, (uint32_t)parent_ifindex) < 0 ||
	    (netns_fd >= 0 && nla_put_u32(msg, IFLA_NET_NS_FD, (uint32_t)netns_fd) < 0) ||
	    (set && set->mtu && nla_put_u32(msg, IFLA_MTU, set->mtu) < 0) ||
	    (set && set->addr && nla_put(msg, IFLA_ADDRESS, (int)set->addr_len, set->addr) < 0) ||
	    !(info = nla_nest_start(msg, IFLA_LINKINFO)) ||
	    nla_put_string(msg, IFLA_INFO_KIND, kind) < 0 ||
	    !(data = nla_nest_start(msg, IFLA_INFO_DATA)))
		goto nomem;
	/* No pkey attribute means the parent's own partition (the kernel's default child). The
	 * kernel sets the full-membership bit itself. */
	if ((macvlan && nla_put_u32(msg, IFLA_MACVLAN_MODE, mode) < 0) ||
	    (!macvlan && pkey && nla_put_u16(msg, IFLA_IPOIB_PKEY, pkey) < 0))
		goto nomem;
	nla_nest_end(msg, data);
	nla_nest_end(msg, info);
	*ret = msg;
	return 0;
nomem:
	nlmsg_free(msg);
	return -ENOMEM;
}

/* The echo of a link made in another namespace: the kernel unicasts it (rtnl_configure_link ->
 * rtnl_notify with the requester's port id) in the namespace the link now lives in, so it
 * reaches the handle there that holds the same port id (nl_rt_open_peer). It is queued before
 * the request's ACK is: one non-blocking read. 1 and *ret when it is there, 0 when not. */
static int read_echo(struct nl_rt *echo, const char *name, struct nl_link *ret)
{
	_Alignas(struct nlmsghdr) char buf[16384];
	int fd = nl_socket_get_fd(echo->sk), found = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		size_t left = (size_t)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
		     h = NLMSG_NEXT(h, left)) {
			struct nl_link l;
			if (!found && link_parse(h, &l) > 0 && !strcmp(l.name, name)) {
				*ret = l;
				found = 1;
			}
		}
	}
	return found;
}

static int child_add(struct nl_rt *rt, struct nl_msg *msg, const char *name, int netns_fd,
		     const struct nl_link_new *set, struct nl_link *ret)
{
	struct nl_link l;
	struct link_one o = { .ret = &l };
	int r;

	/* made in rt's own namespace, the echo comes back on rt, before the ACK */
	r = nl_rt_talk(rt, msg, set && set->echo ? parse_one : NULL, &o);
	if (r < 0 || !set || !set->echo || !ret)
		return r;
	if (netns_fd >= 0)
		o.found = read_echo(set->echo, name, &l) > 0;
	if (!o.found)
		return 0; /* a kernel before 6.3 echoes no NEWLINK: the caller asks */
	*ret = l;
	return 1;
}

int nl_link_add_macvlan(struct nl_rt *rt, const char *name, int master_ifindex, uint32_t mode,
			int netns_fd, const struct nl_link_new *set, struct nl_link *ret)
{
	struct nl_msg *msg;
	int r = build_child_add("macvlan", name, master_ifindex, netns_fd, mode, 0, set, &msg);

	/* Created straight in the pod's namespace: no moment where the name exists on the host
	 * (two pods' "net1" would collide there) and nothing to move back on failure. */
	if (r < 0)
		return r;
	return child_add(rt, msg, name, netns_fd, set, ret);
}

int nl_build_ipoib_add(const char *name, int parent_ifindex, uint16_t pkey, int netns_fd,
		       const struct nl_link_new *set, struct nl_msg **ret)
{
	return build_child_add("ipoib", name, parent_ifindex, netns_fd, 0, pkey, set, ret);
}

int nl_link_add_ipoib(struct nl_rt *rt, const char *name, int parent_ifindex, uint16_t pkey,
		      int netns_fd, const struct nl_link_new *set, struct nl_link *ret)
{
	struct nl_msg *msg;
	int r = nl_build_ipoib_add(name, parent_ifindex, pkey, netns_fd, set, &msg);

	if (r < 0)
		return r;
	return child_add(rt, msg, name, netns_fd, set, ret);
}

int nl_link_del(struct nl_rt *rt, int ifindex)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_msg *msg;

	if (ifindex <= 0)
		return -EINVAL;
	msg = nl_rt_msg(RTM_DELLINK, NLM_F_ACK, &ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	return nl_rt_talk(rt, msg, NULL, NULL);
}

void nl_link_change_init(struct nl_link_change *c)
{
	memset(c, 0, sizeof(*c));
	c->netns_fd = -1;
	c->up = -1;
}

/* Send the difference `changes` makes to the link `ifindex`, as libnl-route builds it. */
static int link_send_change(struct nl_rt *rt, int ifindex, struct rtnl_link *changes)
{
	struct rtnl_link *orig = rtnl_link_alloc();
	struct nl_msg *msg = NULL;
	int r;

	if (!orig)
		return -ENOMEM;
	rtnl_link_set_ifindex(orig, ifindex);
	r = rtnl_link_build_change_request(orig, changes, NLM_F_ACK, &msg);
	rtnl_link_put(orig);
	if (r < 0)
		return r == -NLE_NOMEM ? -ENOMEM : -EINVAL;
	return nl_rt_talk(rt, msg, NULL, NULL);
}

int nl_link_change(struct nl_rt *rt, int ifindex, const struct nl_link_change *c)
{
	struct rtnl_link *l;
	int r = 0;

	if (ifindex <= 0 || (c->name && (!*c->name || strlen(c->name) >= NL_IFNAMSIZ)))
		return -EINVAL;
	l = rtnl_link_alloc();
	if (!l)
		return -ENOMEM;
	if (c->name)
		rtnl_link_set_name(l, c->name);
	/* With a name, a move renames the link in the target namespace in the same request
	 * (the kernel moves first, then renames there): a pod's "net1" never meets the host's. */
	if (c->netns_fd >= 0)
		rtnl_link_set_ns_fd(l, c->netns_fd);
	if (c->mtu)
		rtnl_link_set_mtu(l, c->mtu);
	if (c->addr) {
		struct nl_addr *a = nl_addr_build(AF_UNSPEC, c->addr, c->addr_len);
		if (!a) {
			r = -ENOMEM;
			goto out;
		}
		rtnl_link_set_addr(l, a);
		nl_addr_put(a);
	}
	if (c->up == 1)
		rtnl_link_set_flags(l, IFF_UP);
	else if (c->up == 0)
		rtnl_link_unset_flags(l, IFF_UP);
	r = link_send_change(rt, ifindex, l);
out:
	rtnl_link_put(l);
	return r;
}

int nl_link_set_ipv4_conf(struct nl_rt *rt, int ifindex, const int *ids, const uint32_t *values,
			  size_t n)
{
	struct rtnl_link *l;
	int r = 0;

	if (ifindex <= 0)
		return -EINVAL;
	l = rtnl_link_alloc();
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < n && r >= 0; i++)
		if (rtnl_link_inet_set_conf(l, (unsigned)ids[i], values[i]) < 0)
			r = -EINVAL;
	if (r >= 0)
		r = link_send_change(rt, ifindex, l);
	rtnl_link_put(l);
	return r;
}

struct conf_get {
	int id;
	uint32_t value;
	bool found;
};

static int parse_conf(struct nlmsghdr *h, void *ud)
{
	struct conf_get *g = ud;
	struct nlattr *tb[IFLA_MAX + 1], *af, *inet[IFLA_INET_MAX + 1];
	int rem;

	if (h->nlmsg_type != RTM_NEWLINK ||
	    nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
		return 0;
	if (!tb[IFLA_AF_SPEC])
		return 0;
	nla_for_each_nested(af, tb[IFLA_AF_SPEC], rem)
	{
		if (nla_type(af) != AF_INET || nla_parse_nested(inet, IFLA_INET_MAX, af, NULL) < 0)
			continue;
		/* IFLA_INET_CONF is a plain u32 array; entry i holds IPV4_DEVCONF id i + 1 */
		if (inet[IFLA_INET_CONF] &&
		    (size_t)nla_len(inet[IFLA_INET_CONF]) >= (size_t)g->id * 4) {
			memcpy(&g->value,
			       (const char *)nla_data(inet[IFLA_INET_CONF]) + (g->id - 1) * 4, 4);
			g->found = true;
		}
	}
	return 0;
}

int nl_link_get_ipv4_conf(struct nl_rt *rt, int ifindex, int id, uint32_t *ret)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct conf_get g = { .id = id };
	struct nl_msg *msg;
	int r;

	if (ifindex <= 0 || id <= 0 || id > IPV4_DEVCONF_MAX)
		return -EINVAL;
	msg = nl_rt_msg(RTM_GETLINK, 0, &ifi, sizeof(ifi));
	if (!msg)
		return -ENOMEM;
	r = nl_rt_talk(rt, msg, parse_conf, &g);
	if (r < 0)
		return r;
	if (!g.found)
		return -ENODATA; /* no IPv4 on this link (an IPoIB child before it is up has it) */
	*ret = g.value;
	return 0;
}

int nl_link_set_vf_guid(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint64_t node_guid,
			uint64_t port_guid)
{
	static const int types[] = { IFLA_VF_IB_NODE_GUID, IFLA_VF_IB_PORT_GUID };
	const uint64_t guids[] = { node_guid, port_guid };

	/* Two requests: the kernel's do_setvfinfo() applies the node GUID of a VF_INFO and
	 * returns, so a port GUID in the same nest would be dropped without an error. */
	for (size_t i = 0; i < 2; i++) {
		struct nl_msg *msg;
		int r = nl_build_vf_guid(pf_ifindex, types[i], vf, guids[i], &msg);

		if (r >= 0)
			r = nl_rt_talk(rt, msg, NULL, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- VF GUIDs read back (rdmak vf apply saves them before it changes them) ------------------- */

struct vf_guid_read {
	struct nl_vf_guid *v;
	size_t n;
	int ifindex;
};

static int add_vf_guid(const struct nl_vf_info *v, void *ud)
{
	struct vf_guid_read *g = ud;
	struct nl_vf_guid *slot;

	/* a VF whose GUIDs the PF does not report is left out, so the caller knows it cannot
	 * restore them */
	if (!v->has_ib_guids)
		return 0;
	slot = nl_array_add((void **)&g->v, &g->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = (struct nl_vf_guid){ .vf = v->vf,
				     .node_guid = v->node_guid,
				     .port_guid = v->port_guid };
	return 0;
}

/* the PF's VF table, read by vf.c's one reader */
static int parse_vf_guids(struct nlmsghdr *h, void *ud)
{
	struct vf_guid_read *g = ud;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)) ||
	    ((struct ifinfomsg *)nlmsg_data(h))->ifi_index != g->ifindex)
		return 0;
	return nl_parse_vf_table(h, add_vf_guid, g);
}

int nl_link_get_vf_guids(struct nl_rt *rt, int pf_ifindex, struct nl_vf_guid **ret, size_t *ret_n)
{
	struct vf_guid_read g = { .ifindex = pf_ifindex };
	struct nl_msg *msg;
	int r = nl_build_vf_get(pf_ifindex, &msg); /* the VF table request of vf.c */

	if (r < 0)
		return r;
	/* an IB PF's answer with every VF's info is larger than a page (127 VFs: tens of KiB);
	 * MSG_PEEK lets libnl size its buffer to the message instead of truncating it */
	nl_socket_enable_msg_peek(rt->sk);
	r = nl_rt_talk(rt, msg, parse_vf_guids, &g);
	if (r < 0) {
		free(g.v);
		return r;
	}
	*ret = g.v;
	*ret_n = g.n;
	return 0;
}
