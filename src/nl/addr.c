/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses: requests built by libnl-route, dumps parsed here into plain structs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/route/addr.h>

#include "nl/nl-internal.h"

static int family_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : -1;
}

static int ipaddr_build(const struct nl_ipaddr *a, bool add, struct nl_msg **ret)
{
	int alen = family_len(a->family), r;
	struct rtnl_addr *ra;
	struct nl_addr *local;

	if (alen < 0 || a->ifindex <= 0 || a->prefixlen > (unsigned)alen * 8)
		return -EINVAL;
	ra = rtnl_addr_alloc();
	local = nl_addr_build(a->family, a->addr, (size_t)alen);
	if (!ra || !local) {
		rtnl_addr_put(ra);
		nl_addr_put(local);
		return -ENOMEM;
	}
	nl_addr_set_prefixlen(local, (int)a->prefixlen);
	rtnl_addr_set_ifindex(ra, a->ifindex);
	rtnl_addr_set_family(ra, a->family);
	r = rtnl_addr_set_local(ra, local);
	if (r >= 0 && a->flags)
		rtnl_addr_set_flags(ra, a->flags);
	if (r >= 0)
		r = add ? rtnl_addr_build_add_request(ra, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK,
						      ret)
			: rtnl_addr_build_delete_request(ra, NLM_F_ACK, ret);
	nl_addr_put(local);
	rtnl_addr_put(ra);
	return r < 0 ? (r == -NLE_NOMEM ? -ENOMEM : -EINVAL) : 0;
}

int nl_ipaddr_add(struct nl_rt *rt, const struct nl_ipaddr *a)
{
	struct nl_msg *msg;
	int r = ipaddr_build(a, true, &msg);

	return r < 0 ? r : nl_rt_talk(rt, msg, NULL, NULL);
}

int nl_ipaddr_del(struct nl_rt *rt, const struct nl_ipaddr *a)
{
	struct nl_msg *msg;
	int r = ipaddr_build(a, false, &msg);

	return r < 0 ? r : nl_rt_talk(rt, msg, NULL, NULL);
}

struct addr_list {
	int ifindex, family;
	struct nl_ipaddr *v;
	size_t n;
};

static int parse_addr(struct nlmsghdr *h, void *ud)
{
	struct addr_list *al = ud;
	struct nlattr *tb[IFA_MAX + 1], *a;
	const struct ifaddrmsg *ifa;
	struct nl_ipaddr *slot;
	int alen;

	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return 0;
	if (nlmsg_parse(h, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return -EBADMSG;
	ifa = nlmsg_data(h);
	if ((al->ifindex && (int)ifa->ifa_index != al->ifindex) ||
	    (al->family != AF_UNSPEC && ifa->ifa_family != al->family))
		return 0;
	alen = family_len(ifa->ifa_family);
	/* IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer's on a
	 * point-to-point IPv4 link); IPv6 sends only IFA_ADDRESS */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (alen < 0 || !a || nla_len(a) != alen)
		return 0;
	slot = nl_array_add((void **)&al->v, &al->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	slot->family = ifa->ifa_family;
	memcpy(slot->addr, nla_data(a), (size_t)alen);
	slot->prefixlen = ifa->ifa_prefixlen;
	slot->ifindex = (int)ifa->ifa_index;
	slot->scope = ifa->ifa_scope;
	slot->flags = tb[IFA_FLAGS] && nla_len(tb[IFA_FLAGS]) >= 4 ? nla_get_u32(tb[IFA_FLAGS])
								   : ifa->ifa_flags;
	return 0;
}

static void reset_addr(void *ud)
{
	((struct addr_list *)ud)->n = 0;
}

int nl_ipaddr_list(struct nl_rt *rt, int ifindex, int family, struct nl_ipaddr **ret, size_t *ret_n)
{
	struct ifaddrmsg ifa = { .ifa_family = (unsigned char)family };
	struct addr_list al = { .ifindex = ifindex, .family = family };
	int r = nl_rt_dump(rt, nl_rt_msg(RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof(ifa)), parse_addr,
			   reset_addr, &al);

	if (r < 0) {
		free(al.v);
		return r;
	}
	*ret = al.v;
	*ret_n = al.n;
	return 0;
}
