/* SPDX-License-Identifier: Apache-2.0 */
/* Link hostdev: a whole netdev (an SR-IOV VF, found by the PCI function the device plugin
 * allocated, or by name) moves into the pod and comes back under its old name, MAC and MTU;
 * with it, in exclusive mode, its RDMA device; for an InfiniBand VF, the GUID is set through
 * the PF first and the old one put back on DEL. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/rtnetlink.h>

#include "cni/cni.h"
#include "log/log.h"
#include "util/cleanup.h"
#include "util/fileio.h"

/* ib-sriov-cni's "unset" GUID: what a VF gets back when it had none (a zero GUID is refused). */
#define GUID_UNSET UINT64_MAX

static int read_function(struct cni_ctx *c, const char *bdf, struct hw_pci_function *f, struct cnispec_error *err)
{
	int r = hw_pci_read_function(c->hw, bdf, f);

	if (r == -ENOENT)
		return cnispec_fail(err, r, CNI_E_DEVICE, "PCI function not found", "deviceID %s: no such function under "
				    "%s/bus/pci/devices", bdf, hw_ctx_sysfs(c->hw));
	if (r < 0)
		return cnispec_fail(err, r, CNI_E_DEVICE, "reading the PCI function failed", "%s/bus/pci/devices/%s: %s",
				    hw_ctx_sysfs(c->hw), bdf, strerror(-r));
	return 0;
}

/* Refuse what would hurt the host: a bond's slave, the holder of the host's default route. */
static int host_guard(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	struct nl_route *v = NULL;
	size_t n = 0;
	int r;

	if (l->flags & IFF_SLAVE)
		return cnispec_fail(err, -EBUSY, CNI_E_DEVICE, "device is in use on the host",
				    "%s is enslaved to a bond on the host", l->name);
	r = nl_route_list(c->host, AF_UNSPEC, RT_TABLE_MAIN, &v, &n);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "listing the host's routes");
	for (size_t i = 0; i < n; i++)
		if (v[i].dst_len == 0 && v[i].ifindex == l->ifindex) {
			free(v);
			return cnispec_fail(err, -EBUSY, CNI_E_DEVICE, "device is in use on the host",
					    "%s carries the host's default route: moving it would cut the node off", l->name);
		}
	free(v);
	return 0;
}

static int hostdev_prepare(struct cni_ctx *c, struct cnispec_error *err)
{
	struct cni_state *st = c->st;
	struct hw_pci_function f = { .vf_index = -1 };
	const char *name = c->cfg->device;
	struct nl_link l;
	char bdf[HW_BDF_MAX] = "";
	int r;

	if (c->cfg->device_id[0]) {
		if ((r = read_function(c, c->cfg->device_id, &f, err)) < 0)
			return r;
		if (f.n_netdevs == 0) {
			r = cnispec_fail(err, -ENODEV, CNI_E_DEVICE, "PCI function has no netdev",
					 "deviceID %s has no netdev under %s/bus/pci/devices/%s/net (driver: %s)", f.bdf,
					 hw_ctx_sysfs(c->hw), f.bdf, f.driver[0] ? f.driver : "none");
			goto out;
		}
		if (f.n_netdevs > 1)
			log_info("%s has %zu netdevs, moving the first: %s", f.bdf, f.n_netdevs, f.netdevs[0]);
		name = f.netdevs[0];
	} else {
		r = hw_netdev_read_pci(c->hw, name, bdf);
		if (r > 0 && (r = read_function(c, bdf, &f, err)) < 0)
			return r;
		/* a netdev the sysfs root does not list (a virtual one) has no function: moved alone */
	}
	r = nl_link_get(c->host, name, &l);
	if (r < 0) {
		r = cni_fail_nl(err, r, nl_rt_errmsg(c->host), "looking up %s", name);
		goto out;
	}
	if (r == 0) {
		r = cnispec_fail(err, -ENODEV, CNI_E_DEVICE, "device not found on the host",
				 "%s%s%s is not in the host's network namespace (in another pod already?)", name,
				 f.bdf[0] ? " of " : "", f.bdf);
		goto out;
	}
	if ((r = host_guard(c, &l, err)) < 0)
		goto out;
	snprintf(st->host_name, sizeof(st->host_name), "%s", l.name);
	st->host_ifindex = l.ifindex;
	memcpy(st->host_mac, l.addr, l.addr_len);
	st->host_mac_len = l.addr_len;
	st->host_mtu = l.mtu;
	st->host_up = l.flags & IFF_UP;
	snprintf(st->pci, sizeof(st->pci), "%s", f.bdf);
	if (f.n_rdma > 0)
		snprintf(st->rdma_dev, sizeof(st->rdma_dev), "%s", f.rdma[0]);
	st->vf_index = f.vf_index;
	if (f.n_pf_netdevs > 0)
		snprintf(st->pf, sizeof(st->pf), "%s", f.pf_netdevs[0]);
	st->has_pkey = c->cfg->has_pkey;
	st->pkey = c->cfg->pkey;
	/* an IPoIB hardware address is QPN(4) + GID(16): its last 8 bytes are the port GUID */
	if (l.addr_len == 20)
		for (int i = 12; i < 20; i++)
			st->guid_orig = st->guid_orig << 8 | l.addr[i];
	if (c->cfg->rdma_isolation && !st->rdma_dev[0]) {
		r = cnispec_fail(err, -ENODEV, CNI_E_RDMA, "rdmaIsolation: no RDMA device",
				 "%s%s%s has no RDMA device under %s/bus/pci/devices/%s/infiniband", l.name,
				 f.bdf[0] ? " (PCI " : "", f.bdf[0] ? f.bdf : "", hw_ctx_sysfs(c->hw), f.bdf[0] ? f.bdf : "?");
		goto out;
	}
	if (c->cfg->has_guid && (f.vf_index < 0 || !st->pf[0])) {
		r = cnispec_fail(err, -EINVAL, CNI_E_DEVICE, "guid: not an SR-IOV VF",
				 "%s is not a VF with a PF netdev (physfn, virtfnN): its GUID cannot be set", f.bdf);
		goto out;
	}
	log_debug("hostdev %s: pci %s, rdma %s, pf %s vf %d", st->host_name, st->pci[0] ? st->pci : "-",
		    st->rdma_dev[0] ? st->rdma_dev : "-", st->pf[0] ? st->pf : "-", st->vf_index);
	r = 0;
out:
	hw_pci_function_clear(&f);
	return r;
}

static int set_guid(struct cni_ctx *c, uint64_t guid, struct cnispec_error *err)
{
	struct nl_link pf;
	int r = nl_link_get(c->host, c->st->pf, &pf);

	if (r <= 0)
		return cni_fail_nl(err, r ? r : -ENODEV, nl_rt_errmsg(c->host), "finding PF %s", c->st->pf);
	r = nl_link_set_vf_guid(c->host, pf.ifindex, (uint32_t)c->st->vf_index, guid, guid);
	if (r == -EOPNOTSUPP)
		return cnispec_fail(err, r, CNI_E_KERNEL, "setting the VF GUID failed",
				    "PF %s refused the GUID of VF %d: operation not supported (its driver cannot set VF "
				    "GUIDs: an InfiniBand PF in SR-IOV mode, such as mlx5 on an IB port, is needed)%s%s",
				    c->st->pf, c->st->vf_index, nl_rt_errmsg(c->host)[0] ? "; kernel: " : "", nl_rt_errmsg(c->host));
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "setting the GUID of VF %d through PF %s", c->st->vf_index,
				   c->st->pf);
	return 0;
}

/* The VF's driver applies a new GUID when it binds (mlx5): unbind and bind it through the
 * sysfs root, then wait for its netdev to come back (up to 10 s). */
static int rebind(struct cni_ctx *c, struct cnispec_error *err)
{
	struct hw_pci_function f = { .vf_index = -1 };
	_cleanup_close_ int dfd = -1;
	char path[PATH_MAX], rel[HW_NAME_MAX + 32];
	int r;

	if ((r = read_function(c, c->st->pci, &f, err)) < 0)
		return r;
	if (!f.driver[0]) {
		hw_pci_function_clear(&f);
		return 0;
	}
	snprintf(rel, sizeof(rel), "bus/pci/drivers/%s", f.driver);
	snprintf(path, sizeof(path), "%s/%s", hw_ctx_sysfs(c->hw), rel);
	hw_pci_function_clear(&f);
	/* inside the sysfs root like every other access to it; unbind and bind are attributes
	 * of that directory, never links */
	dfd = hw_ctx_open(c->hw, HW_ROOT_SYSFS, rel, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return cnispec_fail(err, dfd, CNI_E_DEVICE, "rebinding the VF failed", "%s: %s", path, strerror(-dfd));
	for (int i = 0; i < 2; i++) {
		const char *op = i == 0 ? "unbind" : "bind";
		_cleanup_close_ int fd = openat(dfd, op, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fileio_write_all(fd, c->st->pci, strlen(c->st->pci)) < 0)
			return cnispec_fail(err, -errno, CNI_E_DEVICE, "rebinding the VF failed", "%s/%s %s: %s", path, op,
					    c->st->pci, strerror(errno));
	}
	for (int tries = 0; tries < 200; tries++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		if (hw_pci_read_function(c->hw, c->st->pci, &f) == 0) {
			bool back = f.n_netdevs > 0;
			if (back) {
				snprintf(c->st->host_name, sizeof(c->st->host_name), "%s", f.netdevs[0]);
				if (f.n_rdma > 0)
					snprintf(c->st->rdma_dev, sizeof(c->st->rdma_dev), "%s", f.rdma[0]);
			}
			hw_pci_function_clear(&f);
			if (back)
				return 0;
		}
		nanosleep(&ts, NULL);
	}
	return cnispec_fail(err, -ETIMEDOUT, CNI_E_DEVICE, "the VF did not come back after its rebind",
			    "%s has no netdev 10 s after bind", c->st->pci);
}

/* The netdev on the host again after something may have re-created it (an RDMA device's
 * move re-creates its IPoIB netdev): by name, else by its PCI function. */
static int find_on_host(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err)
{
	struct hw_pci_function f = { .vf_index = -1 };
	int r = nl_link_get(c->host, c->st->host_name, ret);

	if (r != 0)
		return r < 0 ? cni_fail_nl(err, r, nl_rt_errmsg(c->host), "looking up %s", c->st->host_name) : 0;
	if (c->st->pci[0] && hw_pci_read_function(c->hw, c->st->pci, &f) == 0 && f.n_netdevs > 0)
		r = nl_link_get(c->host, f.netdevs[0], ret);
	hw_pci_function_clear(&f);
	if (r <= 0)
		return cnispec_fail(err, -ENODEV, CNI_E_DEVICE, "device not found on the host", "%s%s%s is gone",
				    c->st->host_name, c->st->pci[0] ? " of " : "", c->st->pci);
	return 0;
}

static int hostdev_attach(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err)
{
	struct cni_state *st = c->st;
	struct nl_link_change ch;
	struct nl_link l;
	int r;

	if (c->cfg->has_guid) {
		if ((r = set_guid(c, c->cfg->guid, err)) < 0)
			return r;
		st->guid_set = true;
		if ((r = cni_ctx_save_state(c, err)) < 0 || (r = rebind(c, err)) < 0)
			return r;
	}
	if (c->cfg->has_pkey)
		log_info("%s: partition key 0x%04x recorded (the subnet manager applies it)",
			    st->host_name, c->cfg->pkey);
	/* the RDMA device first: its move re-creates an IPoIB netdev in the host's namespace,
	 * which is then the one to move (ib-sriov-cni's order) */
	if (c->cfg->rdma_isolation) {
		if ((r = cni_rdma_move(st->rdma_dev, c->host_ns, c->pod_ns, err)) < 0)
			return r;
		st->rdma_moved = true;
		if ((r = cni_ctx_save_state(c, err)) < 0)
			return r;
	}
	if ((r = find_on_host(c, &l, err)) < 0)
		return r;
	nl_link_change_init(&ch);
	ch.up = 0;
	if ((r = nl_link_change(c->host, l.ifindex, &ch)) < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "setting %s down", l.name);
	/* one request: moved, and renamed in the pod, so the pod's name never meets the host's */
	nl_link_change_init(&ch);
	ch.netns_fd = c->pod_ns;
	ch.name = c->ifname;
	r = nl_link_change(c->host, l.ifindex, &ch);
	if (r == -EEXIST)
		return cnispec_fail(err, r, CNI_E_IFNAME_TAKEN, "interface name taken", "%s already exists in the pod",
				    c->ifname);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "moving %s into the pod as %s", l.name, c->ifname);
	r = nl_link_get(c->pod, c->ifname, &l);
	if (r <= 0)
		return cni_fail_nl(err, r ? r : -ENODEV, nl_rt_errmsg(c->pod), "finding %s in the pod", c->ifname);
	if ((r = cni_link_settings(c, &l, err)) < 0)
		return r;
	*ret = l;
	return 0;
}

/* Name, MAC, MTU and up/down as they were, on the host. */
static int restore_on_host(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	struct cni_state *st = c->st;
	struct nl_link_change ch;
	int r;

	nl_link_change_init(&ch);
	ch.up = st->host_up;
	if (strcmp(l->name, st->host_name))
		ch.name = st->host_name;
	if (st->host_mtu && l->mtu != st->host_mtu)
		ch.mtu = st->host_mtu;
	if (st->host_mac_len == 6 && l->addr_len == 6 && memcmp(l->addr, st->host_mac, 6)) {
		ch.addr = st->host_mac;
		ch.addr_len = 6;
	}
	r = nl_link_change(c->host, l->ifindex, &ch);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "restoring %s as %s", l->name, st->host_name);
	return 0;
}

static int guid_back(struct cni_ctx *c, struct cnispec_error *err)
{
	int r;

	if (!c->st->guid_set)
		return 0;
	r = set_guid(c, c->st->guid_orig ? c->st->guid_orig : GUID_UNSET, err);
	if (r == 0)
		c->st->guid_set = false;
	return r;
}

/* The pod's netdev is this record's device: same PCI function when both say. */
static bool is_ours(const struct cni_state *st, const struct nl_link *l)
{
	return !st->pci[0] || !l->parent_dev[0] || !strcmp(st->pci, l->parent_dev);
}

static int hostdev_reclaim(struct cni_ctx *c, struct cnispec_error *err);

static int hostdev_detach(struct cni_ctx *c, struct cnispec_error *err)
{
	struct cni_state *st = c->st;
	struct nl_link_change ch;
	struct nl_link l, h;
	int r, first = 0;

	r = nl_link_get(c->pod, c->ifname, &l);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "looking up %s in the pod", c->ifname);
	if (r > 0 && is_ours(st, &l)) {
		nl_link_change_init(&ch);
		ch.up = 0;
		(void)nl_link_change(c->pod, l.ifindex, &ch);
		nl_link_change_init(&ch);
		ch.netns_fd = c->host_ns;
		ch.name = st->host_name;
		r = nl_link_change(c->pod, l.ifindex, &ch);
		if (r < 0)
			return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "moving %s back to the host as %s", c->ifname,
					   st->host_name);
		if ((r = nl_link_get(c->host, st->host_name, &h)) > 0)
			first = restore_on_host(c, &h, err);
	} else {
		/* not in the pod (never moved, or the kernel gave it back): on the host somewhere;
		 * 1 (not there either) keeps the record for GC */
		first = hostdev_reclaim(c, err);
	}
	if (st->rdma_moved) {
		r = cni_rdma_move(st->rdma_dev, c->pod_ns, c->host_ns, err);
		if (r == -ENODEV && cni_rdma_visible(st->rdma_dev, c->host_ns, err) == 1)
			r = 0; /* back already */
		if (r == 0)
			st->rdma_moved = false;
		else if (!first)
			first = r;
	}
	r = guid_back(c, err);
	if (first < 0)
		return first;
	return r < 0 ? r : first;
}

static int hostdev_reclaim(struct cni_ctx *c, struct cnispec_error *err)
{
	struct cni_state *st = c->st;
	struct hw_pci_function f = { .vf_index = -1 };
	struct nl_link l;
	int r;

	/* The kernel gives a physical netdev of a dying namespace back to the initial one, named
	 * as it was in the pod or "dev<ifindex>" if that name is taken, with its index kept when
	 * free. Look for it by its old name, its index, then its PCI function. */
	r = nl_link_get(c->host, st->host_name, &l);
	if (r > 0 && is_ours(st, &l))
		return restore_on_host(c, &l, err);
	r = nl_link_get_by_index(c->host, st->host_ifindex, &l);
	if (r > 0 && st->pci[0] && l.parent_dev[0] && !strcmp(l.parent_dev, st->pci))
		return restore_on_host(c, &l, err);
	/* without a PCI function (a virtual netdev), the index and a MAC it had */
	if (r > 0 && !st->pci[0] &&
	    ((st->host_mac_len == l.addr_len && !memcmp(st->host_mac, l.addr, l.addr_len)) ||
	     (c->cfg->has_mac && l.addr_len == 6 && !memcmp(c->cfg->mac, l.addr, 6))))
		return restore_on_host(c, &l, err);
	if (st->pci[0] && hw_pci_read_function(c->hw, st->pci, &f) == 0 && f.n_netdevs > 0) {
		r = nl_link_get(c->host, f.netdevs[0], &l);
		hw_pci_function_clear(&f);
		if (r > 0)
			return restore_on_host(c, &l, err);
	}
	hw_pci_function_clear(&f);
	log_warning("%s%s%s is not back on the host yet: its record is kept for GC", st->host_name,
		    st->pci[0] ? " of " : "", st->pci);
	return 1;
}

static int hostdev_reclaim_op(struct cni_ctx *c, struct cnispec_error *err)
{
	int r = hostdev_reclaim(c, err);

	/* the RDMA device of a dead namespace is the kernel's to return (to init_net) */
	if (r == 0 && guid_back(c, err) < 0)
		return -EIO;
	return r;
}

static int hostdev_check(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	int r;

	if (!is_ours(c->st, l))
		return cni_check_fail(err, "%s is PCI function %s, the attachment moved %s", c->ifname, l->parent_dev, c->st->pci);
	if (c->cfg->rdma_isolation && c->st->rdma_dev[0]) {
		r = cni_rdma_visible(c->st->rdma_dev, c->pod_ns, err);
		if (r < 0)
			return r;
		if (r == 0)
			return cni_check_fail(err, "RDMA device %s is not in the pod's namespace", c->st->rdma_dev);
	}
	return 0;
}

static int hostdev_status(struct cni_ctx *c, struct cnispec_error *err)
{
	struct cnispec_error e = { 0 };
	int r;

	if (!c->cfg->rdma_isolation)
		return 0;
	r = cni_rdma_check_mode(&e);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_UNAVAILABLE, e.msg, "%s", e.details);
	return 0;
}

static const char *hostdev_pci_id(const struct cni_ctx *c)
{
	return c->st && c->st->pci[0] ? c->st->pci : NULL;
}

const struct cni_link_ops cni_link_hostdev = {
	.kind = CNI_LINK_HOSTDEV,
	.prepare = hostdev_prepare,
	.attach = hostdev_attach,
	.detach = hostdev_detach,
	.reclaim = hostdev_reclaim_op,
	.check = hostdev_check,
	.status = hostdev_status,
	.pci_id = hostdev_pci_id,
};
