/* SPDX-License-Identifier: Apache-2.0 */
/* Routes and policy rules: requests built by libnl-route, dumps parsed here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "nl/nl-internal.h"

static int family_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : -1;
}

static struct nl_addr *addr_new(int family, const uint8_t *bytes, unsigned prefixlen)
{
	struct nl_addr *a = nl_addr_build(family, bytes, (size_t)family_len(family));

	if (a)
		nl_addr_set_prefixlen(a, (int)prefixlen);
	return a;
}

static int nle_to_errno(int r)
{
	return r == -NLE_NOMEM ? -ENOMEM : -EINVAL;
}

static int route_build(const struct nl_route *r, bool add, struct nl_msg **ret)
{
	int alen = family_len(r->family), err = -ENOMEM;
	struct rtnl_route *rr = NULL;
	struct rtnl_nexthop *nh = NULL;
	struct nl_addr *dst = NULL, *gw = NULL, *src = NULL;

	if (alen < 0 || r->dst_len > (unsigned)alen * 8)
		return -EINVAL;
	rr = rtnl_route_alloc();
	dst = addr_new(r->family, r->dst, r->dst_len);
	if (!rr || !dst)
		goto out;
	rtnl_route_set_family(rr, (uint8_t)r->family);
	rtnl_route_set_table(rr, r->table ? r->table : RT_TABLE_MAIN);
	rtnl_route_set_scope(rr, r->scope);
	rtnl_route_set_protocol(rr, r->protocol ? r->protocol : RTPROT_STATIC);
	rtnl_route_set_type(rr, r->type ? r->type : RTN_UNICAST);
	if ((err = rtnl_route_set_dst(rr, dst)) < 0)
		goto nle;
	if (r->priority)
		rtnl_route_set_priority(rr, r->priority);
	if (r->mtu && (err = rtnl_route_set_metric(rr, RTAX_MTU, r->mtu)) < 0)
		goto nle;
	if (r->has_src) {
		err = -ENOMEM;
		if (!(src = addr_new(r->family, r->src, (unsigned)alen * 8)))
			goto out;
		if ((err = rtnl_route_set_pref_src(rr, src)) < 0)
			goto nle;
	}
	if (r->ifindex > 0 || r->has_gw) {
		err = -ENOMEM;
		if (!(nh = rtnl_route_nh_alloc()))
			goto out;
		if (r->ifindex > 0)
			rtnl_route_nh_set_ifindex(nh, r->ifindex);
		if (r->has_gw) {
			if (!(gw = addr_new(r->family, r->gw, (unsigned)alen * 8)))
				goto out;
			rtnl_route_nh_set_gateway(nh, gw);
		}
		rtnl_route_add_nexthop(rr, nh);
		nh = NULL; /* the route owns it now */
	}
	err = add ? rtnl_route_build_add_request(rr, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, ret)
		  : rtnl_route_build_del_request(rr, NLM_F_ACK, ret);
nle:
	if (err < 0)
		err = nle_to_errno(err);
out:
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(dst);
	nl_addr_put(gw);
	nl_addr_put(src);
	rtnl_route_put(rr);
	return err < 0 ? err : 0;
}

int nl_route_add(struct nl_rt *rt, const struct nl_route *r)
{
	struct nl_msg *msg;
	int e = route_build(r, true, &msg);

	return e < 0 ? e : nl_rt_talk(rt, msg, NULL, NULL);
}

int nl_route_del(struct nl_rt *rt, const struct nl_route *r)
{
	struct nl_msg *msg;
	int e = route_build(r, false, &msg);

	return e < 0 ? e : nl_rt_talk(rt, msg, NULL, NULL);
}

struct route_list {
	int family;
	uint32_t table;
	struct nl_route *v;
	size_t n;
};

static void attr_copy(uint8_t *dst, const struct nlattr *a, int alen, bool *has)
{
	if (a && nla_len(a) == alen) {
		memcpy(dst, nla_data(a), (size_t)alen);
		if (has)
			*has = true;
	}
}

static int parse_route(struct nlmsghdr *h, void *ud)
{
	struct route_list *rl = ud;
	struct nlattr *tb[RTA_MAX + 1];
	const struct rtmsg *rtm;
	struct nl_route *slot;
	uint32_t table;
	int alen;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return 0;
	if (nlmsg_parse(h, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return -EBADMSG;
	rtm = nlmsg_data(h);
	table = tb[RTA_TABLE] && nla_len(tb[RTA_TABLE]) >= 4 ? nla_get_u32(tb[RTA_TABLE])
							     : rtm->rtm_table;
	alen = family_len(rtm->rtm_family);
	if (alen < 0 || (rl->family != AF_UNSPEC && rtm->rtm_family != rl->family) ||
	    (rl->table && table != rl->table))
		return 0;
	slot = nl_array_add((void **)&rl->v, &rl->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	slot->family = rtm->rtm_family;
	slot->dst_len = rtm->rtm_dst_len;
	slot->table = table;
	slot->scope = rtm->rtm_scope;
	slot->protocol = rtm->rtm_protocol;
	slot->type = rtm->rtm_type;
	attr_copy(slot->dst, tb[RTA_DST], alen, NULL);
	attr_copy(slot->gw, tb[RTA_GATEWAY], alen, &slot->has_gw);
	attr_copy(slot->src, tb[RTA_PREFSRC], alen, &slot->has_src);
	if (tb[RTA_OIF] && nla_len(tb[RTA_OIF]) >= 4)
		slot->ifindex = (int)nla_get_u32(tb[RTA_OIF]);
	if (tb[RTA_PRIORITY] && nla_len(tb[RTA_PRIORITY]) >= 4)
		slot->priority = nla_get_u32(tb[RTA_PRIORITY]);
	if (tb[RTA_METRICS]) {
		struct nlattr *mx[RTAX_MAX + 1];
		if (nla_parse_nested(mx, RTAX_MAX, tb[RTA_METRICS], NULL) == 0 && mx[RTAX_MTU] &&
		    nla_len(mx[RTAX_MTU]) >= 4)
			slot->mtu = nla_get_u32(mx[RTAX_MTU]);
	}
	return 0;
}

static void reset_route(void *ud)
{
	((struct route_list *)ud)->n = 0;
}

int nl_route_list(struct nl_rt *rt, int family, uint32_t table, struct nl_route **ret,
		  size_t *ret_n)
{
	struct rtmsg rtm = { .rtm_family = (unsigned char)family };
	struct route_list rl = { .family = family, .table = table };
	int r = nl_rt_dump(rt, nl_rt_msg(RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof(rtm)), parse_route,
			   reset_route, &rl);

	if (r < 0) {
		free(rl.v);
		return r;
	}
	*ret = rl.v;
	*ret_n = rl.n;
	return 0;
}

static int rule_build(const struct nl_rule *r, bool add, struct nl_msg **ret)
{
	int alen = family_len(r->family), err = 0;
	struct rtnl_rule *rr;
	struct nl_addr *src = NULL;

	if (alen < 0 || r->src_len > (unsigned)alen * 8 || !r->table)
		return -EINVAL;
	rr = rtnl_rule_alloc();
	if (!rr)
		return -ENOMEM;
	rtnl_rule_set_family(rr, r->family);
	rtnl_rule_set_prio(rr, r->priority);
	rtnl_rule_set_table(rr, r->table);
	rtnl_rule_set_action(rr, FR_ACT_TO_TBL);
	if (r->src_len) {
		if (!(src = addr_new(r->family, r->src, r->src_len)))
			err = -ENOMEM;
		else if (rtnl_rule_set_src(rr, src) < 0)
			err = -EINVAL;
	}
	if (err >= 0) {
		err = add ? rtnl_rule_build_add_request(rr, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK,
							ret)
			  : rtnl_rule_build_delete_request(rr, NLM_F_ACK, ret);
		if (err < 0)
			err = nle_to_errno(err);
	}
	nl_addr_put(src);
	rtnl_rule_put(rr);
	return err < 0 ? err : 0;
}

int nl_rule_add(struct nl_rt *rt, const struct nl_rule *r)
{
	struct nl_msg *msg;
	int e = rule_build(r, true, &msg);

	return e < 0 ? e : nl_rt_talk(rt, msg, NULL, NULL);
}

int nl_rule_del(struct nl_rt *rt, const struct nl_rule *r)
{
	struct nl_msg *msg;
	int e = rule_build(r, false, &msg);

	return e < 0 ? e : nl_rt_talk(rt, msg, NULL, NULL);
}

struct rule_list {
	int family;
	struct nl_rule *v;
	size_t n;
};

static int parse_rule(struct nlmsghdr *h, void *ud)
{
	struct rule_list *rl = ud;
	struct nlattr *tb[FRA_MAX + 1];
	const struct fib_rule_hdr *frh;
	struct nl_rule *slot;
	int alen;

	if (h->nlmsg_type != RTM_NEWRULE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*frh)))
		return 0;
	if (nlmsg_parse(h, sizeof(*frh), tb, FRA_MAX, NULL) < 0)
		return -EBADMSG;
	frh = nlmsg_data(h);
	alen = family_len(frh->family);
	if (alen < 0 || (rl->family != AF_UNSPEC && frh->family != rl->family))
		return 0;
	slot = nl_array_add((void **)&rl->v, &rl->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	slot->family = frh->family;
	slot->src_len = frh->src_len;
	slot->table = tb[FRA_TABLE] && nla_len(tb[FRA_TABLE]) >= 4 ? nla_get_u32(tb[FRA_TABLE])
								   : frh->table;
	if (tb[FRA_PRIORITY] && nla_len(tb[FRA_PRIORITY]) >= 4)
		slot->priority = nla_get_u32(tb[FRA_PRIORITY]);
	attr_copy(slot->src, tb[FRA_SRC], alen, NULL);
	return 0;
}

static void reset_rule(void *ud)
{
	((struct rule_list *)ud)->n = 0;
}

int nl_rule_list(struct nl_rt *rt, int family, struct nl_rule **ret, size_t *ret_n)
{
	struct fib_rule_hdr frh = { .family = (unsigned char)family };
	struct rule_list rl = { .family = family };
	int r = nl_rt_dump(rt, nl_rt_msg(RTM_GETRULE, NLM_F_DUMP, &frh, sizeof(frh)), parse_rule,
			   reset_rule, &rl);

	if (r < 0) {
		free(rl.v);
		return r;
	}
	*ret = rl.v;
	*ret_n = rl.n;
	return 0;
}
