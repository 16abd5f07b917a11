/* SPDX-License-Identifier: Apache-2.0 */
/* The link kinds made on a master (macvlan, IPoIB child), the ops table, and the error helper
 * every netlink failure goes through. */
#include <errno.h>
#include <net/if_arp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cni/cni.h"
#include "log/log.h"

int cni_fail_nl(struct cnispec_error *err, int r, const char *kernel_msg, const char *fmt, ...)
{
	char what[CNISPEC_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", "%s", what);
	return cnispec_fail(err, r, CNI_E_KERNEL, what, "%s: %s%s%s", what, strerror(-r),
			    kernel_msg && *kernel_msg ? " (kernel: " : "",
			    kernel_msg && *kernel_msg ? kernel_msg : "");
}

int cni_check_fail(struct cnispec_error *err, const char *fmt, ...)
{
	char details[CNISPEC_DETAILS_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	return cnispec_fail(err, -EINVAL, CNI_E_CHECK, "the interface differs from prevResult",
			    "%s", details);
}

const struct cni_link_ops *cni_link_ops_get(enum cniconf_link k)
{
	switch (k) {
	case CNICONF_LINK_MACVLAN: return &cni_link_macvlan;
	case CNICONF_LINK_IPOIB: return &cni_link_ipoib;
	case CNICONF_LINK_HOSTDEV: return &cni_link_hostdev;
	case CNICONF_LINK_RDMA:
		break; /* makes no interface: cni.c runs chain.c's commands instead */
	}
	return NULL;
}

int cni_config_resolve_link(struct cniconf *c, struct nl_rt *rt)
{
	struct nl_link m;
	int r;

	if (!c->link_by_master)
		return 0;
	r = nl_link_get(rt, c->master, &m);
	if (r < 0)
		return r;
	c->link = r > 0 && m.type == ARPHRD_INFINIBAND ? CNICONF_LINK_IPOIB : CNICONF_LINK_MACVLAN;
	c->link_by_master = false;
	return 0;
}

/* The master on the host, of the right type. code: 101 for ADD, 50 for STATUS. */
static int find_master(struct cni_ctx *c, unsigned code, struct cnispec_error *err)
{
	struct nl_link m;
	int r = nl_link_get(c->host, c->cfg->master, &m);

	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "looking up master %s",
				   c->cfg->master);
	if (r == 0)
		return cnispec_fail(err, -ENODEV, code, "master not found",
				    "master %s: no such netdev in the host's network namespace",
				    c->cfg->master);
	if (c->cfg->link == CNICONF_LINK_IPOIB && m.type != ARPHRD_INFINIBAND)
		return cnispec_fail(
			err, -EINVAL, code, "master is not an IPoIB netdev",
			"master %s is link type %u, not InfiniBand (32): an IPoIB child needs an IPoIB parent "
			"(ib0, ibp70s0)",
			c->cfg->master, m.type);
	if (c->cfg->link == CNICONF_LINK_MACVLAN && m.type != ARPHRD_ETHER)
		return cnispec_fail(
			err, -EINVAL, code, "master is not an Ethernet netdev",
			"master %s is link type %u: macvlan needs an Ethernet (RoCE) netdev or bond; use link "
			"ipoib on InfiniBand",
			c->cfg->master, m.type);
	c->master_ifindex = m.ifindex;
	return 0;
}

static int child_prepare(struct cni_ctx *c, struct cnispec_error *err)
{
	return find_master(c, CNI_E_DEVICE, err);
}

static int child_attach(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err)
{
	/* MTU, MAC and up in the creating request (a refused MTU then makes nothing), and the
	 * kernel's echo of the new link instead of a GETLINK (its index, MAC and MTU) */
	struct nl_link_new set = { .mtu = c->cfg->mtu, .up = true, .echo = c->pod };
	struct nl_link l;
	char mtu[16];
	int r;

	snprintf(mtu, sizeof(mtu), "%u", c->cfg->mtu);
	if (c->cfg->has_mac) {
		set.addr = c->cfg->mac;
		set.addr_len = 6;
	}
	if (c->cfg->link == CNICONF_LINK_MACVLAN)
		r = nl_link_add_macvlan(c->host, c->ifname, c->master_ifindex, c->cfg->macvlan_mode,
					c->pod_ns, &set, &l);
	else
		r = nl_link_add_ipoib(c->host, c->ifname, c->master_ifindex,
				      c->cfg->has_pkey ? c->cfg->pkey : 0, c->pod_ns, &set, &l);
	if (r == -EEXIST)
		return cnispec_fail(err, r, CNI_E_IFNAME_TAKEN, "interface name taken",
				    "%s already exists in the pod", c->ifname);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "creating %s %s on %s%s%s%s",
				   cniconf_link_name(c->cfg->link), c->ifname, c->cfg->master,
				   c->cfg->mtu ? " with MTU " : "", c->cfg->mtu ? mtu : "",
				   c->cfg->has_mac ? " with the MAC address asked" : "");
	if (r == 0 && (r = nl_link_get(c->pod, c->ifname, &l)) <= 0)
		return cni_fail_nl(err, r ? r : -ENODEV, nl_rt_errmsg(c->pod),
				   "finding %s in the pod", c->ifname);
	*ret = l;
	return 0;
}

static int child_detach(struct cni_ctx *c, struct cnispec_error *err)
{
	const char *kind = c->cfg->link == CNICONF_LINK_MACVLAN ? "macvlan" : "ipoib";
	struct nl_link l;
	int r = nl_link_get(c->pod, c->ifname, &l);

	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "looking up %s in the pod",
				   c->ifname);
	if (r == 0)
		return 0; /* gone already: DEL twice, or ADD failed before creating it */
	if (strcmp(l.kind, kind)) {
		/* not ours to delete (another plugin's interface of the same name) */
		log_warning("%s in the pod is a %s link, not %s: left alone", c->ifname,
			    l.kind[0] ? l.kind : "physical", kind);
		return 0;
	}
	r = nl_link_del(c->pod, l.ifindex);
	if (r < 0 && r != -ENODEV)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "deleting %s", c->ifname);
	return 0;
}

static int child_reclaim(struct cni_ctx *c, struct cnispec_error *err)
{
	/* a macvlan or IPoIB child dies with its namespace: nothing comes back to the host */
	return 0;
}

static int child_check(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	const char *kind = c->cfg->link == CNICONF_LINK_MACVLAN ? "macvlan" : "ipoib";
	int r = find_master(c, CNI_E_CHECK, err);

	if (r < 0)
		return r;
	if (strcmp(l->kind, kind))
		return cni_check_fail(err, "%s is a %s link, not %s", c->ifname,
				      l->kind[0] ? l->kind : "physical", kind);
	/* IFLA_LINK of a child whose master is in another namespace is the master's index there */
	if (l->link_ifindex != c->master_ifindex || l->link_netnsid < 0)
		return cni_check_fail(err, "%s is not on master %s (its lower device has index %d)",
				      c->ifname, c->cfg->master, l->link_ifindex);
	if (c->cfg->link == CNICONF_LINK_MACVLAN && l->macvlan_mode != c->cfg->macvlan_mode)
		return cni_check_fail(err, "%s is in macvlan mode %s, the configuration says %s",
				      c->ifname, cniconf_macvlan_mode_name(l->macvlan_mode),
				      cniconf_macvlan_mode_name(c->cfg->macvlan_mode));
	if (c->cfg->link == CNICONF_LINK_IPOIB && c->cfg->has_pkey && l->ipoib_pkey >= 0 &&
	    (l->ipoib_pkey | 0x8000) != (c->cfg->pkey | 0x8000))
		return cni_check_fail(err,
				      "%s has partition key 0x%04x, the configuration says 0x%04x",
				      c->ifname, (unsigned)l->ipoib_pkey, c->cfg->pkey);
	return 0;
}

static int child_status(struct cni_ctx *c, struct cnispec_error *err)
{
	return find_master(c, CNISPEC_E_UNAVAILABLE, err);
}

static const char *child_pci_id(const struct cni_ctx *c)
{
	return NULL;
}

const struct cni_link_ops cni_link_macvlan = {
	.kind = CNICONF_LINK_MACVLAN,
	.creates_by_name = true,
	.prepare = child_prepare,
	.attach = child_attach,
	.detach = child_detach,
	.reclaim = child_reclaim,
	.check = child_check,
	.status = child_status,
	.pci_id = child_pci_id,
};

const struct cni_link_ops cni_link_ipoib = {
	.kind = CNICONF_LINK_IPOIB,
	.creates_by_name = true,
	.prepare = child_prepare,
	.attach = child_attach,
	.detach = child_detach,
	.reclaim = child_reclaim,
	.check = child_check,
	.status = child_status,
	.pci_id = child_pci_id,
};
