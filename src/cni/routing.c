/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses and per-interface policy routing, in the pod's namespace.
 *
 * With policyRouting (the default) each secondary interface gets its own table (number from
 * its name: cni_route_table), holding its subnet route, a default route via its gateway and
 * IPAM's routes, and a rule "from <address> lookup <table>" at an explicit priority per
 * address. main keeps only the kernel's connected routes of the interface, so the pod's
 * default interface (calico's eth0) keeps the default route, as seed 004's pods show. Where
 * several interfaces of the pod share a subnet (multi-rail RoCE on one L2), each answers ARP
 * only for its own address and sends from it: arp_ignore=1, arp_announce=2, rp_filter=2. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/ip.h>
#include <linux/rtnetlink.h>

#include "cni/cni.h"
#include "log/log.h"

static const int rail_ids[] = { IPV4_DEVCONF_ARP_IGNORE, IPV4_DEVCONF_ARP_ANNOUNCE,
				IPV4_DEVCONF_RP_FILTER };
static const uint32_t rail_values[] = { 1, 2, 2 };
static const char *const rail_names[] = { "arp_ignore", "arp_announce", "rp_filter" };

static int alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* The network of a prefix: host bits cleared. */
static void network_of(const uint8_t *a, unsigned len, int family, uint8_t *out)
{
	memset(out, 0, 16);
	memcpy(out, a, (size_t)alen(family));
	for (unsigned bit = len; bit < (unsigned)alen(family) * 8; bit++)
		out[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
}

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned len, int family)
{
	uint8_t x[16];

	network_of(a, len, family, x);
	return memcmp(x, net, (size_t)alen(family)) == 0;
}

/* The gateway of the first address of `family`, for routes IPAM gave without one (the
 * reference plugins' rule). */
static const struct cnispec_addr *gateway_for(const struct cnispec_result *ipam, int family)
{
	for (size_t i = 0; i < ipam->n_ips; i++)
		if (ipam->ips[i].address.addr.family == family && ipam->ips[i].has_gateway)
			return &ipam->ips[i].gateway;
	return NULL;
}

static int route_install(struct cni_ctx *c, const struct nl_route *r, bool exist_ok,
			 struct cnispec_error *err)
{
	char dst[CNISPEC_PREFIX_STRLEN];
	struct cnispec_prefix p = { .addr = { .family = r->family }, .len = r->dst_len };
	int e;

	memcpy(p.addr.a, r->dst, (size_t)alen(r->family));
	e = nl_route_add(c->pod, r);
	if (e == -EEXIST && exist_ok)
		return 0;
	if (e < 0)
		return cni_fail_nl(err, e, nl_rt_errmsg(c->pod),
				   "adding route %s%s to table %u of %s",
				   cnispec_prefix_str(&p, dst), r->has_gw ? " via a gateway" : "",
				   r->table, c->ifname);
	return 0;
}

static int result_route(struct cnispec_result *res, const struct nl_route *r, bool with_table)
{
	struct cnispec_route rt = { .dst = { .addr = { .family = r->family }, .len = r->dst_len } };

	memcpy(rt.dst.addr.a, r->dst, (size_t)alen(r->family));
	if (r->has_gw) {
		rt.has_gw = true;
		rt.gw.family = r->family;
		memcpy(rt.gw.a, r->gw, (size_t)alen(r->family));
	}
	if (with_table) {
		rt.set |= CNISPEC_ROUTE_TABLE;
		rt.table = r->table;
		if (r->scope == RT_SCOPE_LINK) {
			rt.set |= CNISPEC_ROUTE_SCOPE;
			rt.scope = RT_SCOPE_LINK;
		}
	}
	if (r->mtu) {
		rt.set |= CNISPEC_ROUTE_MTU;
		rt.mtu = r->mtu;
	}
	if (r->priority) {
		rt.set |= CNISPEC_ROUTE_PRIORITY;
		rt.priority = r->priority;
	}
	return cnispec_result_add_route(res, &rt);
}

/* One route from IPAM (into the table, or main without policy routing). */
static int ipam_route(struct cni_ctx *c, int ifindex, const struct cnispec_result *ipam,
		      const struct cnispec_route *ir, struct nl_route *ret,
		      struct cnispec_error *err)
{
	const struct cnispec_addr *gw =
		ir->has_gw ? &ir->gw : gateway_for(ipam, ir->dst.addr.family);
	struct nl_route r = { .family = ir->dst.addr.family,
			      .dst_len = ir->dst.len,
			      .ifindex = ifindex,
			      .table = c->table ? c->table : RT_TABLE_MAIN };

	memcpy(r.dst, ir->dst.addr.a, (size_t)alen(r.family));
	if (gw && gw->family == r.family) {
		r.has_gw = true;
		memcpy(r.gw, gw->a, (size_t)alen(r.family));
	} else {
		r.scope = RT_SCOPE_LINK;
	}
	if (ir->set & CNISPEC_ROUTE_MTU)
		r.mtu = ir->mtu;
	if (ir->set & CNISPEC_ROUTE_PRIORITY)
		r.priority = ir->priority;
	*ret = r;
	/* a route IPAM repeats (its 0.0.0.0/0 next to the gateway's default) is there already */
	return route_install(c, &r, true, err);
}

/* Interfaces other than ours with an IPv4 address in one of our subnets. */
static int rail_peers(struct cni_ctx *c, int ifindex, const struct cnispec_result *ipam, int **ret,
		      size_t *ret_n)
{
	struct nl_ipaddr *v = NULL;
	size_t n = 0, np = 0;
	int *peers = NULL, r;

	r = nl_ipaddr_list(c->pod, 0, AF_INET, &v, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		bool shared = false, dup = false;
		if (v[i].ifindex == ifindex)
			continue;
		for (size_t k = 0; k < ipam->n_ips && !shared; k++) {
			const struct cnispec_prefix *p = &ipam->ips[k].address;
			uint8_t net[16];
			if (p->addr.family != AF_INET)
				continue;
			network_of(p->addr.a, p->len, AF_INET, net);
			shared = in_prefix(v[i].addr, net, p->len, AF_INET);
		}
		for (size_t k = 0; k < np; k++)
			dup |= peers[k] == v[i].ifindex;
		if (shared && !dup) {
			int *np2 = realloc(peers, (np + 1) * sizeof(*peers));
			if (!np2) {
				free(peers);
				free(v);
				return -ENOMEM;
			}
			peers = np2;
			peers[np++] = v[i].ifindex;
		}
	}
	free(v);
	*ret = peers;
	*ret_n = np;
	return 0;
}

static int set_rail_sysctls(struct cni_ctx *c, int ifindex, const struct cnispec_result *ipam,
			    struct cnispec_error *err)
{
	int *peers = NULL, r;
	size_t n = 0;

	r = rail_peers(c, ifindex, ipam, &peers, &n);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "listing the pod's addresses");
	if (n == 0)
		return 0;
	/* ours, and the interfaces that got here first while they were alone in the subnet */
	r = nl_link_set_ipv4_conf(c->pod, ifindex, rail_ids, rail_values, 3);
	for (size_t i = 0; i < n && r >= 0; i++)
		r = nl_link_set_ipv4_conf(c->pod, peers[i], rail_ids, rail_values, 3);
	free(peers);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
				   "setting arp_ignore/arp_announce/rp_filter for %s", c->ifname);
	log_info(
		"%s shares a subnet with %zu other interface(s): arp_ignore=1 arp_announce=2 rp_filter=2",
		c->ifname, n);
	return 0;
}

int cni_routing_setup(struct cni_ctx *c, int ifindex, const struct cnispec_result *ipam,
		      struct cnispec_result *res, size_t iface, struct cnispec_error *err)
{
	bool with_table = c->req->conf->version >= CNISPEC_V1_1_0;
	bool default_done[2] = { false, false };
	int r;

	for (size_t i = 0; i < ipam->n_ips; i++) {
		const struct cnispec_ip *ip = &ipam->ips[i];
		struct nl_ipaddr a = { .family = ip->address.addr.family,
				       .prefixlen = ip->address.len,
				       .ifindex = ifindex };
		struct cnispec_ip out = *ip;
		char text[CNISPEC_PREFIX_STRLEN];

		memcpy(a.addr, ip->address.addr.a, (size_t)alen(a.family));
		/* No duplicate address detection: the address is the IPAM's to guarantee, and a
		 * tentative IPv6 address can neither source a route nor give RoCE its GID. */
		if (a.family == AF_INET6)
			a.flags = IFA_F_NODAD;
		r = nl_ipaddr_add(c->pod, &a);
		if (r < 0)
			return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "adding %s to %s",
					   cnispec_prefix_str(&ip->address, text), c->ifname);
		out.interface = (int)iface;
		if ((r = cnispec_result_add_ip(res, &out)) < 0)
			return r;
	}
	if (!c->table) {
		/* no policy routing: IPAM's routes in main, as the reference plugins do */
		for (size_t i = 0; i < ipam->n_routes; i++) {
			struct nl_route nr;
			if ((r = ipam_route(c, ifindex, ipam, &ipam->routes[i], &nr, err)) < 0)
				return r;
			if ((r = cnispec_result_add_route(res, &ipam->routes[i])) < 0)
				return r;
		}
		return 0;
	}
	for (size_t i = 0; i < ipam->n_ips; i++) {
		const struct cnispec_ip *ip = &ipam->ips[i];
		int fam = ip->address.addr.family;
		/* the connected route's copy, as the kernel writes it in main (proto kernel): the
		 * table then routes the subnet on-link like main does */
		struct nl_route sub = { .family = fam,
					.dst_len = ip->address.len,
					.ifindex = ifindex,
					.table = c->table,
					.scope = RT_SCOPE_LINK,
					.protocol = RTPROT_KERNEL };
		struct nl_rule rule = { .family = fam,
					.priority = c->cfg->rule_priority,
					.table = c->table,
					.src_len = (unsigned)alen(fam) * 8 };

		network_of(ip->address.addr.a, ip->address.len, fam, sub.dst);
		if (fam == AF_INET) { /* IPv6 picks its source by the address rules on its own */
			sub.has_src = true;
			memcpy(sub.src, ip->address.addr.a, 4);
		}
		if ((r = route_install(c, &sub, true, err)) < 0)
			return r;
		if (with_table && (r = result_route(res, &sub, true)) < 0)
			return r;
		if (ip->has_gateway && !default_done[fam == AF_INET6]) {
			struct nl_route def = {
				.family = fam, .ifindex = ifindex, .table = c->table, .has_gw = true
			};
			memcpy(def.gw, ip->gateway.a, (size_t)alen(fam));
			if ((r = route_install(c, &def, false, err)) < 0)
				return r;
			if (with_table && (r = result_route(res, &def, true)) < 0)
				return r;
			default_done[fam == AF_INET6] = true;
		}
		memcpy(rule.src, ip->address.addr.a, (size_t)alen(fam));
		r = nl_rule_add(c->pod, &rule);
		if (r < 0 && r != -EEXIST) {
			char text[CNISPEC_PREFIX_STRLEN];
			return cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
					   "adding rule from %s lookup %u priority %u",
					   cnispec_addr_str(&ip->address.addr, text), c->table,
					   c->cfg->rule_priority);
		}
	}
	for (size_t i = 0; i < ipam->n_routes; i++) {
		struct nl_route nr;
		if ((r = ipam_route(c, ifindex, ipam, &ipam->routes[i], &nr, err)) < 0)
			return r;
		if (with_table && (r = result_route(res, &nr, true)) < 0)
			return r;
	}
	return set_rail_sysctls(c, ifindex, ipam, err);
}

int cni_routing_teardown(struct cni_ctx *c, bool link_gone, struct cnispec_error *err)
{
	struct nl_rule *rules = NULL;
	struct nl_route *routes = NULL;
	size_t n = 0;
	int r, first = 0;

	if (!c->table || !c->pod)
		return 0;
	/* the rules outlive the interface: found by table and priority, no prevResult needed */
	r = nl_rule_list(c->pod, AF_UNSPEC, &rules, &n);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "listing the pod's rules");
	for (size_t i = 0; i < n; i++)
		if (rules[i].table == c->table && rules[i].priority == c->cfg->rule_priority) {
			r = nl_rule_del(c->pod, &rules[i]);
			if (r < 0 && r != -ENOENT && !first)
				first = cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
						    "removing a rule of table %u", c->table);
		}
	free(rules);
	/* the table's routes go with the interface (the kernel flushes a link's routes when it is
	 * unregistered from the namespace); those of an interface still here (ADD's rollback, a
	 * device DEL could not give back) are removed one by one */
	if (link_gone)
		return first;
	r = nl_route_list(c->pod, AF_UNSPEC, c->table, &routes, &n);
	if (r < 0)
		return first ? first
			     : cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "listing table %u",
					   c->table);
	for (size_t i = 0; i < n; i++) {
		r = nl_route_del(c->pod, &routes[i]);
		if (r < 0 && r != -ESRCH && !first)
			first = cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
					    "removing a route of table %u", c->table);
	}
	free(routes);
	return first;
}

static bool has_route(const struct nl_route *v, size_t n, int fam, const uint8_t *dst,
		      unsigned dst_len, const struct cnispec_addr *gw)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].family == fam && v[i].dst_len == dst_len &&
		    !memcmp(v[i].dst, dst, (size_t)alen(fam)) &&
		    (!gw || (v[i].has_gw && !memcmp(v[i].gw, gw->a, (size_t)alen(fam)))))
			return true;
	return false;
}

int cni_routing_check(struct cni_ctx *c, int ifindex, const struct cnispec_result *prev,
		      struct cnispec_error *err)
{
	struct nl_ipaddr *addrs = NULL;
	struct nl_route *routes = NULL;
	struct nl_rule *rules = NULL;
	size_t na = 0, nr = 0, nu = 0;
	char text[CNISPEC_PREFIX_STRLEN];
	long iface = -1;
	int r;

	for (size_t i = 0; i < prev->n_interfaces && iface < 0; i++)
		if (prev->interfaces[i].name && !strcmp(prev->interfaces[i].name, c->ifname) &&
		    prev->interfaces[i].sandbox && prev->interfaces[i].sandbox[0])
			iface = (long)i;
	if ((r = nl_ipaddr_list(c->pod, ifindex, AF_UNSPEC, &addrs, &na)) < 0 ||
	    (r = nl_route_list(c->pod, AF_UNSPEC, c->table ? c->table : RT_TABLE_MAIN, &routes,
			       &nr)) < 0 ||
	    (c->table && (r = nl_rule_list(c->pod, AF_UNSPEC, &rules, &nu)) < 0)) {
		r = cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
				"reading the pod's addresses and routes");
		goto out;
	}
	for (size_t i = 0; i < prev->n_ips; i++) {
		const struct cnispec_ip *ip = &prev->ips[i];
		int fam = ip->address.addr.family;
		bool found = false;

		if (ip->interface != iface)
			continue;
		for (size_t k = 0; k < na && !found; k++)
			found = addrs[k].family == fam && addrs[k].prefixlen == ip->address.len &&
				!memcmp(addrs[k].addr, ip->address.addr.a, (size_t)alen(fam));
		if (!found) {
			r = cni_check_fail(err, "%s: address %s is missing", c->ifname,
					   cnispec_prefix_str(&ip->address, text));
			goto out;
		}
		if (!c->table)
			continue;
		found = false;
		for (size_t k = 0; k < nu && !found; k++)
			found = rules[k].family == fam && rules[k].table == c->table &&
				rules[k].priority == c->cfg->rule_priority &&
				rules[k].src_len == (unsigned)alen(fam) * 8 &&
				!memcmp(rules[k].src, ip->address.addr.a, (size_t)alen(fam));
		if (!found) {
			r = cni_check_fail(err,
					   "rule \"from %s lookup %u\" at priority %u is missing",
					   cnispec_addr_str(&ip->address.addr, text), c->table,
					   c->cfg->rule_priority);
			goto out;
		}
		if (ip->has_gateway &&
		    !has_route(routes, nr, fam, (const uint8_t[16]){ 0 }, 0, &ip->gateway)) {
			r = cni_check_fail(err, "table %u: the default route via %s is missing",
					   c->table, cnispec_addr_str(&ip->gateway, text));
			goto out;
		}
	}
	for (size_t i = 0; i < prev->n_routes; i++) {
		const struct cnispec_route *rt = &prev->routes[i];
		uint32_t want = rt->set & CNISPEC_ROUTE_TABLE ? rt->table : RT_TABLE_MAIN;

		/* routes of other tables belong to other interfaces or plugins of the chain */
		if (want != (c->table ? c->table : RT_TABLE_MAIN))
			continue;
		if (!has_route(routes, nr, rt->dst.addr.family, rt->dst.addr.a, rt->dst.len,
			       rt->has_gw ? &rt->gw : NULL)) {
			r = cni_check_fail(err, "table %u: route %s%s is missing", want,
					   cnispec_prefix_str(&rt->dst, text),
					   rt->has_gw ? " via its gateway" : "");
			goto out;
		}
	}
	r = 0;
	if (c->table && iface >= 0) {
		/* the multi-rail settings, where a subnet is shared */
		struct cnispec_result mine = { .ips = prev->ips, .n_ips = prev->n_ips };
		int *peers = NULL;
		size_t np = 0;

		if (rail_peers(c, ifindex, &mine, &peers, &np) == 0 && np > 0) {
			for (size_t k = 0; k < 3 && r == 0; k++) {
				uint32_t v;
				if (nl_link_get_ipv4_conf(c->pod, ifindex, rail_ids[k], &v) == 0 &&
				    v != rail_values[k])
					r = cni_check_fail(
						err,
						"%s shares a subnet with another interface but %s is %u, not %u",
						c->ifname, rail_names[k], v, rail_values[k]);
			}
		}
		free(peers);
	}
out:
	free(addrs);
	free(routes);
	free(rules);
	return r;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t cni_route_table(uint32_t table_base, const char *ifname)
{
	size_t len = strlen(ifname), i = len;
	uint64_t t;

	while (i > 0 && isdigit((unsigned char)ifname[i - 1]))
		i--;
	/* net1 -> base + 1: the numbers Multus gives (net1..net8) make the tables of seed 004's
	 * eight rails readable. A name with no number (or one too long to be an index) gets a
	 * hashed slot above every numbered one. */
	if (i < len && len - i <= 5 && strtoul(ifname + i, NULL, 10) <= 65535)
		t = (uint64_t)table_base + strtoul(ifname + i, NULL, 10);
	else
		t = (uint64_t)table_base + 65536 + (fnv1a(ifname) & 0xffff);
	if (t == 0 || (t >= 253 && t <= 255) || t > 0x7fffffff)
		return 0;
	return (uint32_t)t;
}
