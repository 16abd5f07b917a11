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

static int read_function(struct cni_ctx *c, const char *bdf, struct hw_pci_function *f,
			 struct cnispec_error *err)
{
	int r = hw_pci_read_function(c->hw, bdf, f);

	if (r == -ENOENT)
		return cnispec_fail(err, r, CNI_E_DEVICE, "PCI function not found",
				    "deviceID %s: no such function under "
				    "%s/bus/pci/devices",
				    bdf, hw_ctx_sysfs(c->hw));
	if (r < 0)
		return cnispec_fail(err, r, CNI_E_DEVICE, "reading the PCI function failed",
				    "%s/bus/pci/devices/%s: %s", hw_ctx_sysfs(c->hw), bdf,
				    strerror(-r));
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
			return cnispec_fail(
				err, -EBUSY, CNI_E_DEVICE, "device is in use on the host",
				"%s carries the host's default route: moving it would cut the node off",
				l->name);
		}
	free(v);
	return 0;
}

/* ---- the VF's settings through its PF (sriov-cni's ApplyVFConfig / ResetVFConfig) ---------- */

/* What ADD sets through the PF: the VF keys given, and mac for a VF with an Ethernet address
 * (sriov-cni sets both the PF's administrative MAC of the VF and the netdev's own). */
static unsigned vf_wanted(const struct cni_ctx *c)
{
	unsigned bits = c->cfg->vf_keys;

	if (c->cfg->has_mac && c->st->pf[0] && c->st->vf_index >= 0 && c->st->host_mac_len == 6)
		bits |= CNICONF_VF_MAC;
	return bits;
}

static int vf_pf_index(struct cni_ctx *c, int *ret, struct cnispec_error *err)
{
	struct nl_link pf;
	int r = nl_link_get(c->host, c->st->pf, &pf);

	if (r <= 0) {
		r = r ? r : -ENODEV;
		(void)cni_fail_nl(err, r, nl_rt_errmsg(c->host), "finding PF %s", c->st->pf);
		return r;
	}
	*ret = pf.ifindex;
	return 0;
}

/* The names of the settings in bits, for messages: "vlan, spoofchk". */
static void vf_names(unsigned bits, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned bit = 1; bit & CNICONF_VF_ALL; bit <<= 1)
		if ((bits & bit) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
					      cniconf_vf_key_name(bit));
}

/* The VF's settings before ADD, kept in the record for DEL (sriov-cni's OrigVfState). A device
 * that is not a VF has no PF to set them through: refused naming the key. */
static int vf_prepare(struct cni_ctx *c, const char *bdf, struct cnispec_error *err)
{
	unsigned want = vf_wanted(c);
	char names[128];
	int pf, r;

	if (!want)
		return 0;
	vf_names(want, names, sizeof(names));
	if (c->st->vf_index < 0 || !c->st->pf[0]) {
		unsigned first = want & -want;
		char msg[64];
		snprintf(msg, sizeof(msg), "%s: not an SR-IOV VF",
			 first == CNICONF_VF_RATE
				 ? (c->cfg->min_tx_rate ? "min_tx_rate" : "max_tx_rate")
				 : cniconf_vf_key_name(first));
		return cnispec_fail(err, -EINVAL, CNI_E_DEVICE, msg,
				    "%s%s%s is not a VF with a PF netdev (physfn, virtfnN): %s "
				    "is set through a VF's PF",
				    c->st->host_name, bdf[0] ? " of " : "", bdf, names);
	}
	if ((r = vf_pf_index(c, &pf, err)) < 0)
		return r;
	r = nl_link_get_vf(c->host, pf, (uint32_t)c->st->vf_index, &c->st->vf_orig);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host),
				   "reading VF %d's settings through PF %s (for %s)",
				   c->st->vf_index, c->st->pf, names);
	if (r == 0)
		return cnispec_fail(
			err, -EOPNOTSUPP, CNI_E_DEVICE, "the PF lists no such VF",
			"PF %s lists no VF %d in the kernel (its driver has no SR-IOV VFs here), so %s cannot be "
			"set through it",
			c->st->pf, c->st->vf_index, names);
	return 0;
}

/* One setting, to the configured value (orig NULL) or back to *orig. */
static int vf_set_one(struct cni_ctx *c, int pf, unsigned bit, const struct nl_vf_info *orig)
{
	const struct cniconf *cfg = c->cfg;
	uint32_t vf = (uint32_t)c->st->vf_index;

	switch (bit) {
	case CNICONF_VF_VLAN:
		return orig ? nl_link_set_vf_vlan(c->host, pf, vf, orig->vlan, orig->qos,
						  orig->vlan_proto)
			    : nl_link_set_vf_vlan(c->host, pf, vf, cfg->vlan, cfg->vlan_qos,
						  cfg->vlan_proto);
	case CNICONF_VF_MAC:
		return nl_link_set_vf_mac(c->host, pf, vf, orig ? orig->mac : cfg->mac);
	case CNICONF_VF_RATE:
		return orig ? nl_link_set_vf_rate(c->host, pf, vf, orig->min_tx_rate,
						  orig->max_tx_rate)
			    : nl_link_set_vf_rate(c->host, pf, vf, cfg->min_tx_rate,
						  cfg->max_tx_rate);
	/* a flag the driver did not report (-1) goes back to the kernel's default: spoofchk on,
	 * trust off */
	case CNICONF_VF_SPOOFCHK:
		return nl_link_set_vf_spoofchk(c->host, pf, vf,
					       orig ? orig->spoofchk != 0 : cfg->spoofchk);
	case CNICONF_VF_TRUST:
		return nl_link_set_vf_trust(c->host, pf, vf, orig ? orig->trust == 1 : cfg->trust);
	case CNICONF_VF_LINK_STATE:
		return nl_link_set_vf_link_state(c->host, pf, vf,
						 orig ? orig->link_state : cfg->link_state);
	}
	return -EINVAL;
}

/* Put back the settings of st->vf_set, last applied first. Each one back is cleared from
 * vf_set; the first failure is returned (the others are still tried). */
static int vf_restore(struct cni_ctx *c, struct cnispec_error *err)
{
	int pf, r, first = 0;

	if (!c->st->vf_set)
		return 0;
	if ((r = vf_pf_index(c, &pf, err)) < 0)
		return r;
	for (unsigned bit = CNICONF_VF_LINK_STATE; bit; bit >>= 1) {
		if (!(c->st->vf_set & bit))
			continue;
		r = vf_set_one(c, pf, bit, &c->st->vf_orig);
		/* EOPNOTSUPP: the PF's driver cannot set it, so an ADD killed between recording
		 * it and setting it never changed it: nothing to put back */
		if (r == 0 || r == -EOPNOTSUPP) {
			c->st->vf_set &= ~bit;
			continue;
		}
		if (!first)
			first = cni_fail_nl(err, r, nl_rt_errmsg(c->host),
					    "putting back %s of VF %d through PF %s",
					    cniconf_vf_key_name(bit), c->st->vf_index, c->st->pf);
	}
	return first;
}

/* Apply the configured settings in sriov-cni's order; on a refusal, put back the ones set
 * before it and name the one refused and the PF. */
static int vf_apply(struct cni_ctx *c, struct cnispec_error *err)
{
	unsigned want = vf_wanted(c);
	int pf, r;

	if (!want)
		return 0;
	if ((r = vf_pf_index(c, &pf, err)) < 0)
		return r;
	for (unsigned bit = 1; bit & CNICONF_VF_ALL; bit <<= 1) {
		if (!(want & bit))
			continue;
		/* recorded before it is set: an ADD killed from here on leaves a record that DEL
		 * and GC put back (putting back one not yet set writes the value it has) */
		c->st->vf_set |= bit;
		if ((r = cni_ctx_save_state(c, err)) < 0) {
			struct cnispec_error e = { 0 };

			c->st->vf_set &= ~bit;
			if (vf_restore(c, &e) < 0)
				log_warning("rollback: %s (%s)", e.msg, e.details);
			return r;
		}
		r = vf_set_one(c, pf, bit, NULL);
		if (r < 0) {
			struct cnispec_error e = { 0 };
			char kmsg[256];

			snprintf(kmsg, sizeof(kmsg), "%s", nl_rt_errmsg(c->host));
			c->st->vf_set &= ~bit; /* refused: not changed */
			if (vf_restore(c, &e) < 0)
				log_warning("rollback: %s (%s)", e.msg, e.details);
			if (r == -EOPNOTSUPP)
				return cnispec_fail(
					err, r, CNI_E_KERNEL,
					"setting a VF setting through the PF failed",
					"PF %s refused %s of VF %d: operation not supported (its driver cannot set "
					"it)%s%s",
					c->st->pf, cniconf_vf_key_name(bit), c->st->vf_index,
					kmsg[0] ? "; kernel: " : "", kmsg);
			return cni_fail_nl(err, r, kmsg, "setting %s of VF %d through PF %s",
					   cniconf_vf_key_name(bit), c->st->vf_index, c->st->pf);
		}
	}
	return 0;
}

static int hostdev_prepare(struct cni_ctx *c, struct cnispec_error *err)
{
	struct attach_record *st = c->st;
	struct hw_pci_function f = { .vf_index = -1 };
	const char *name = c->cfg->device;
	struct nl_link l;
	char bdf[HW_BDF_MAX] = "";
	int r;

	if (c->cfg->device_id[0]) {
		if ((r = read_function(c, c->cfg->device_id, &f, err)) < 0)
			return r;
		if (f.n_netdevs == 0) {
			r = cnispec_fail(
				err, -ENODEV, CNI_E_DEVICE, "PCI function has no netdev",
				"deviceID %s has no netdev under %s/bus/pci/devices/%s/net (driver: %s)",
				f.bdf, hw_ctx_sysfs(c->hw), f.bdf, f.driver[0] ? f.driver : "none");
			goto out;
		}
		if (f.n_netdevs > 1)
			log_info("%s has %zu netdevs, moving the first: %s", f.bdf, f.n_netdevs,
				 f.netdevs[0]);
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
		r = cnispec_fail(
			err, -ENODEV, CNI_E_DEVICE, "device not found on the host",
			"%s%s%s is not in the host's network namespace (in another pod already?)",
			name, f.bdf[0] ? " of " : "", f.bdf);
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
	/* a virtual netdev's RDMA device is a software one made on it (rdma link add ... type rxe):
	 * isolation is then the kernel's to refuse, in its words */
	if (c->cfg->rdma_isolation && !f.bdf[0] &&
	    (r = hw_netdev_read_soft_rdma(c->hw, l.name, st->rdma_dev)) < 0) {
		r = cnispec_fail(err, r, CNI_E_RDMA,
				 "rdmaIsolation: reading the RDMA devices failed",
				 "%s/class/infiniband: %s", hw_ctx_sysfs(c->hw), strerror(-r));
		goto out;
	}
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
		if (f.bdf[0])
			r = cnispec_fail(
				err, -ENODEV, CNI_E_RDMA, "rdmaIsolation: no RDMA device",
				"%s (PCI %s) has no RDMA device under %s/bus/pci/devices/%s/infiniband",
				l.name, f.bdf, hw_ctx_sysfs(c->hw), f.bdf);
		else
			r = cnispec_fail(
				err, -ENODEV, CNI_E_RDMA, "rdmaIsolation: no RDMA device",
				"%s is a virtual netdev (no PCI function) and no software RDMA "
				"device (rxe, siw) under %s/class/infiniband has it as parent",
				l.name, hw_ctx_sysfs(c->hw));
		goto out;
	}
	if (c->cfg->has_guid && (f.vf_index < 0 || !st->pf[0])) {
		r = cnispec_fail(
			err, -EINVAL, CNI_E_DEVICE, "guid: not an SR-IOV VF",
			"%s is not a VF with a PF netdev (physfn, virtfnN): its GUID cannot be set",
			f.bdf);
		goto out;
	}
	if ((r = vf_prepare(c, f.bdf, err)) < 0)
		goto out;
	log_debug("hostdev %s: pci %s, rdma %s, pf %s vf %d", st->host_name,
		  st->pci[0] ? st->pci : "-", st->rdma_dev[0] ? st->rdma_dev : "-",
		  st->pf[0] ? st->pf : "-", st->vf_index);
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
		return cni_fail_nl(err, r ? r : -ENODEV, nl_rt_errmsg(c->host), "finding PF %s",
				   c->st->pf);
	r = nl_link_set_vf_guid(c->host, pf.ifindex, (uint32_t)c->st->vf_index, guid, guid);
	if (r == -EOPNOTSUPP)
		return cnispec_fail(
			err, r, CNI_E_KERNEL, "setting the VF GUID failed",
			"PF %s refused the GUID of VF %d: operation not supported (its driver cannot set VF "
			"GUIDs: an InfiniBand PF in SR-IOV mode, such as mlx5 on an IB port, is needed)%s%s",
			c->st->pf, c->st->vf_index, nl_rt_errmsg(c->host)[0] ? "; kernel: " : "",
			nl_rt_errmsg(c->host));
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host),
				   "setting the GUID of VF %d through PF %s", c->st->vf_index,
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
		return cnispec_fail(err, dfd, CNI_E_DEVICE, "rebinding the VF failed", "%s: %s",
				    path, strerror(-dfd));
	for (int i = 0; i < 2; i++) {
		const char *op = i == 0 ? "unbind" : "bind";
		_cleanup_close_ int fd = openat(dfd, op, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fileio_write_all(fd, c->st->pci, strlen(c->st->pci)) < 0)
			return cnispec_fail(err, -errno, CNI_E_DEVICE, "rebinding the VF failed",
					    "%s/%s %s: %s", path, op, c->st->pci, strerror(errno));
	}
	for (int tries = 0; tries < 200; tries++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		if (hw_pci_read_function(c->hw, c->st->pci, &f) == 0) {
			bool back = f.n_netdevs > 0;
			if (back) {
				snprintf(c->st->host_name, sizeof(c->st->host_name), "%s",
					 f.netdevs[0]);
				if (f.n_rdma > 0)
					snprintf(c->st->rdma_dev, sizeof(c->st->rdma_dev), "%s",
						 f.rdma[0]);
			}
			hw_pci_function_clear(&f);
			if (back)
				return 0;
		}
		nanosleep(&ts, NULL);
	}
	return cnispec_fail(err, -ETIMEDOUT, CNI_E_DEVICE,
			    "the VF did not come back after its rebind",
			    "%s has no netdev 10 s after bind", c->st->pci);
}

/* The netdev on the host again after something may have re-created it (an RDMA device's
 * move re-creates its IPoIB netdev): by name, else by its PCI function. */
static int find_on_host(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err)
{
	struct hw_pci_function f = { .vf_index = -1 };
	int r = nl_link_get(c->host, c->st->host_name, ret);

	if (r != 0)
		return r < 0 ? cni_fail_nl(err, r, nl_rt_errmsg(c->host), "looking up %s",
					   c->st->host_name)
			     : 0;
	if (c->st->pci[0] && hw_pci_read_function(c->hw, c->st->pci, &f) == 0 && f.n_netdevs > 0)
		r = nl_link_get(c->host, f.netdevs[0], ret);
	hw_pci_function_clear(&f);
	if (r <= 0)
		return cnispec_fail(err, -ENODEV, CNI_E_DEVICE, "device not found on the host",
				    "%s%s%s is gone", c->st->host_name, c->st->pci[0] ? " of " : "",
				    c->st->pci);
	return 0;
}

static int hostdev_attach(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err)
{
	struct attach_record *st = c->st;
	struct nl_link_change ch;
	struct nl_link l;
	int r;

	/* the PF's settings of the VF first (sriov-cni's ApplyVFConfig before SetupVF, ib-sriov-cni's
	 * link state before the GUID) */
	if ((r = vf_apply(c, err)) < 0)
		return r;
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
		return cnispec_fail(err, r, CNI_E_IFNAME_TAKEN, "interface name taken",
				    "%s already exists in the pod", c->ifname);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "moving %s into the pod as %s",
				   l.name, c->ifname);
	r = nl_link_get(c->pod, c->ifname, &l);
	if (r <= 0)
		return cni_fail_nl(err, r ? r : -ENODEV, nl_rt_errmsg(c->pod),
				   "finding %s in the pod", c->ifname);
	if ((r = cni_link_settings(c, &l, err)) < 0)
		return r;
	*ret = l;
	return 0;
}

/* Name, MAC, MTU and up/down as they were, on the host. */
static int restore_on_host(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	struct attach_record *st = c->st;
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
		return cni_fail_nl(err, r, nl_rt_errmsg(c->host), "restoring %s as %s", l->name,
				   st->host_name);
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
static bool is_ours(const struct attach_record *st, const struct nl_link *l)
{
	return !st->pci[0] || !l->parent_dev[0] || !strcmp(st->pci, l->parent_dev);
}

static int hostdev_reclaim(struct cni_ctx *c, struct cnispec_error *err);

static int hostdev_detach(struct cni_ctx *c, struct cnispec_error *err)
{
	struct attach_record *st = c->st;
	struct nl_link_change ch;
	struct nl_link l, h;
	int r, first;

	/* the PF's settings of the VF before the VF itself, as sriov-cni's DEL does (some drivers
	 * refuse a VF's reset while it is untrusted) */
	first = vf_restore(c, err);
	r = nl_link_get(c->pod, c->ifname, &l);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "looking up %s in the pod",
				   c->ifname);
	if (r > 0 && is_ours(st, &l)) {
		nl_link_change_init(&ch);
		ch.up = 0;
		(void)nl_link_change(c->pod, l.ifindex, &ch);
		nl_link_change_init(&ch);
		ch.netns_fd = c->host_ns;
		ch.name = st->host_name;
		r = nl_link_change(c->pod, l.ifindex, &ch);
		if (r < 0)
			return cni_fail_nl(err, r, nl_rt_errmsg(c->pod),
					   "moving %s back to the host as %s", c->ifname,
					   st->host_name);
		if ((r = nl_link_get(c->host, st->host_name, &h)) > 0)
			r = restore_on_host(c, &h, err);
		if (r < 0 && !first)
			first = r;
	} else {
		/* not in the pod (never moved, or the kernel gave it back): on the host somewhere;
		 * 1 (not there either) keeps the record for GC */
		r = hostdev_reclaim(c, err);
		if (!first)
			first = r;
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
	struct attach_record *st = c->st;
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
	/* the PF keeps the VF's settings wherever the VF's netdev is */
	int v = vf_restore(c, err), r = hostdev_reclaim(c, err);

	/* the RDMA device of a dead namespace is the kernel's to return (to init_net) */
	if (r == 0 && guid_back(c, err) < 0)
		return -EIO;
	return v < 0 ? v : r;
}

static int hostdev_check(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err)
{
	int r;

	if (!is_ours(c->st, l))
		return cni_check_fail(err, "%s is PCI function %s, the attachment moved %s",
				      c->ifname, l->parent_dev, c->st->pci);
	if (c->cfg->rdma_isolation && c->st->rdma_dev[0]) {
		r = cni_rdma_visible(c->st->rdma_dev, c->pod_ns, err);
		if (r < 0)
			return r;
		if (r == 0)
			return cni_check_fail(err, "RDMA device %s is not in the pod's namespace",
					      c->st->rdma_dev);
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
	.kind = CNICONF_LINK_HOSTDEV,
	.prepare = hostdev_prepare,
	.attach = hostdev_attach,
	.detach = hostdev_detach,
	.reclaim = hostdev_reclaim_op,
	.check = hostdev_check,
	.status = hostdev_status,
	.pci_id = hostdev_pci_id,
};
