/* SPDX-License-Identifier: Apache-2.0 */
/* Node checks: hardware, kernel modules, ports, GIDs, bonds, MTU, SR-IOV, char devices,
 * GPUDirect and the RDMA netns mode. Each reads only the hardware model (and, for GPUDirect,
 * two version files) and adds findings; none prints. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

bool diag_dev_usable(const struct hw_rdma_dev *dev)
{
	/* libibverbs stat()s /dev/infiniband/uverbsN and silently drops the device if absent */
	return dev->uverbs && dev->uverbs->node.present && dev->uverbs->node.is_char;
}

static bool dev_is_vf(const struct hw_rdma_dev *dev)
{
	return dev->pci && dev->pci->physfn;
}

/* Node mode looks at PFs (a VF port mirrors its PF; sriov.vfs covers VFs as a whole); pod mode
 * looks at the devices this pod can open. */
static bool dev_in_scope(const struct diag *d, const struct hw_rdma_dev *dev)
{
	return d->scope == DIAG_POD ? diag_dev_usable(dev) : !dev_is_vf(dev);
}

static const char *port_obj(const struct hw_port *p, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%u", p->dev->name, p->num);
	return buf;
}

static void ev_port(const struct diag *d, json_t *f, const struct hw_port *p, const char *attr,
		    const char *fmt_val)
{
	char path[PATH_MAX];

	diag_evidence(f,
		      diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/%s",
			       p->dev->name, p->num, attr),
		      "%s", fmt_val);
}

static void ev_state(const struct diag *d, json_t *f, const struct hw_port *p)
{
	char v[64];

	snprintf(v, sizeof(v), "%d: %s", p->state, p->state_name);
	ev_port(d, f, p, "state", v);
	snprintf(v, sizeof(v), "%d: %s", p->phys_state, p->phys_state_name);
	ev_port(d, f, p, "phys_state", v);
}

static void ev_netdev(const struct diag *d, json_t *f, const struct hw_netdev *n, const char *attr)
{
	char path[PATH_MAX];

	diag_sys(d, path, sizeof(path), "/class/net/%s/%s", n->name, attr);
	if (!strcmp(attr, "operstate"))
		diag_evidence(f, path, "%s", n->operstate);
	else if (!strcmp(attr, "carrier"))
		diag_evidence(f, path, "%s",
			      n->carrier < 0
				      ? "(unreadable: EINVAL, the link is administratively down)"
			      : n->carrier ? "1"
					   : "0");
	else if (!strcmp(attr, "mtu"))
		diag_evidence(f, path, "%u", n->mtu);
}

/* ---- rdma.devices --------------------------------------------------------------------------- */

static bool pci_is_rdma_nic(const struct hw_pci *p)
{
	/* 0x0207xx InfiniBand controller, or a Mellanox/NVIDIA network function (RoCE) */
	return (p->class_code >> 8) == 0x0207 ||
	       (p->vendor == 0x15b3 && (p->class_code >> 16) == 0x02);
}

void diag_check_rdma_devices(struct diag *d)
{
	const struct hw_node *n = d->node;
	char path[PATH_MAX];
	size_t unbound = 0, no_ib = 0, vfs = 0;
	json_t *f;

	for (size_t i = 0; i < n->n_pci; i++) {
		const struct hw_pci *p = &n->pci[i];

		if (!pci_is_rdma_nic(p))
			continue;
		if (!p->driver[0]) {
			/* an unbound VF is sriov.vfs' business */
			if (p->physfn)
				continue;
			unbound++;
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "PCI function %04x:%04x has no driver bound", p->vendor,
				     p->device);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/driver",
					       p->bdf),
				      "(no such link)");
			diag_fix(
				f,
				"Load the NIC driver (modprobe mlx5_core) or bind it: echo %s > /sys/bus/pci/drivers/mlx5_core/bind; "
				"check dmesg for a probe error.",
				p->bdf);
		} else if (p->n_rdma == 0 && !p->physfn && d->scope == DIAG_NODE &&
			   /* exclusive mode: the device may live in a pod's namespace */
			   n->kernel.netns_mode != 0 &&
			   (!strcmp(p->driver, "mlx5_core") || !strcmp(p->driver, "mlx4_core"))) {
			/* A PF in a RoCE LAG has its RDMA device registered on PF0 as mlx5_bond_N. */
			bool in_lag = false;

			for (size_t k = 0; k < p->n_netdevs; k++)
				if (p->netdevs[k]->master) {
					for (size_t m = 0; m < n->n_rdma; m++)
						in_lag |= n->rdma[m].lag == p->netdevs[k]->master;
				}
			if (in_lag)
				continue;
			no_ib++;
			f = diag_add(d, DIAG_FAIL, p->bdf, "%s function without an RDMA device",
				     p->driver);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path),
					       "/bus/pci/devices/%s/infiniband", p->bdf),
				      "(absent)");
			diag_fix(
				f,
				"Load the RDMA half of the driver: modprobe %s (and make it persistent in /etc/modules-load.d).",
				!strcmp(p->driver, "mlx4_core") ? "mlx4_ib" : "mlx5_ib");
		}
	}
	if (n->n_rdma == 0) {
		if (unbound || no_ib)
			return;
		f = diag_add(d, DIAG_FAIL, NULL,
			     d->scope == DIAG_POD ? "no RDMA device visible in this container"
						  : "no RDMA device on this node");
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/infiniband"),
			      n->has_rdma_class ? "(empty)" : "(absent)");
		diag_fix(
			f,
			d->scope == DIAG_POD
				? "Schedule the pod on an RDMA node (nodeSelector rdmak.io/rdma.capable: \"true\", see --nfd) and, in "
				  "exclusive RDMA netns mode, chain the rdma CNI so a device is moved into the pod."
				: "This node has no RDMA-capable NIC or its driver is not loaded (modprobe mlx5_ib); keep RDMA pods off it "
				  "with the rdmak.io/rdma.capable label (rdmak doctor --nfd).");
		return;
	}
	for (size_t i = 0; i < n->n_rdma; i++)
		vfs += dev_is_vf(&n->rdma[i]);
	f = diag_add(d, DIAG_OK, NULL, "%zu RDMA device%s (%zu PF/virtual, %zu VF): %s%s",
		     n->n_rdma, n->n_rdma == 1 ? "" : "s", n->n_rdma - vfs, vfs, n->rdma[0].name,
		     n->n_rdma > 1 ? ", ..." : "");
	diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/infiniband"), "%zu entries",
		      n->n_rdma);
}

/* ---- kernel.modules ------------------------------------------------------------------------- */

static bool node_has_driver(const struct hw_node *n, const char *drv)
{
	for (size_t i = 0; i < n->n_pci; i++)
		if (!strcmp(n->pci[i].driver, drv))
			return true;
	return false;
}

void diag_check_kernel_modules(struct diag *d)
{
	static const struct {
		const char *name, *why, *fix;
		enum diag_status missing;
		const char *needs_driver; /* only when a function is bound to this driver */
	} mods[] = {
		{ "ib_uverbs",
		  "user verbs: without it no /dev/infiniband/uverbsN exists and libibverbs finds no device",
		  "modprobe ib_uverbs", DIAG_FAIL, NULL },
		{ "mlx5_ib",
		  "the RDMA driver of ConnectX-4 and later: without it mlx5_core functions have no RDMA device",
		  "modprobe mlx5_ib", DIAG_FAIL, "mlx5_core" },
		{ "mlx4_ib", "the RDMA driver of ConnectX-3", "modprobe mlx4_ib", DIAG_FAIL,
		  "mlx4_core" },
		{ "ib_umad",
		  "MAD access: ibstat, ibstatus, sminfo and the umadN/issmN nodes need it",
		  "modprobe ib_umad", DIAG_WARN, NULL },
		{ "rdma_ucm",
		  "RDMA CM from user space: /dev/infiniband/rdma_cm, rdma_cm tools and perftest -R need it",
		  "modprobe rdma_ucm", DIAG_WARN, NULL },
	};
	char path[PATH_MAX];

	if (d->node->n_rdma == 0 && !node_has_driver(d->node, "mlx5_core") &&
	    !node_has_driver(d->node, "mlx4_core"))
		return; /* nothing RDMA here: rdma.devices says so */
	for (size_t i = 0; i < ELEMENTSOF(mods); i++) {
		const struct hw_module *m = hw_node_module(d->node, mods[i].name);
		json_t *f;

		if (!m || (mods[i].needs_driver && !node_has_driver(d->node, mods[i].needs_driver)))
			continue;
		diag_sys(d, path, sizeof(path), "/module/%s", mods[i].name);
		if (m->state != HW_MOD_ABSENT) {
			f = diag_add(d, DIAG_OK, mods[i].name, "%s %s", mods[i].name,
				     hw_module_state_name(m->state));
			diag_evidence(f, path, "%s",
				      m->state == HW_MOD_LOADED ? "initstate: live" : "(built in)");
			continue;
		}
		f = diag_add(d, mods[i].missing, mods[i].name, "%s not loaded: %s", mods[i].name,
			     mods[i].why);
		diag_evidence(f, path, "(absent)");
		diag_fix(f, "%s, and list it in /etc/modules-load.d/rdma.conf so it loads at boot.",
			 mods[i].fix);
	}
}

/* ---- port.state ------------------------------------------------------------------------------ */

static void port_down_cause(const struct diag *d, json_t *f, const struct hw_port *p)
{
	const struct hw_netdev *nd = p->netdev;
	bool eth = p->link_layer == HW_LINK_ETH;

	if (eth && nd) {
		ev_netdev(d, f, nd, "operstate");
		ev_netdev(d, f, nd, "carrier");
	}
	switch (p->phys_state) {
	case HW_PHYS_DISABLED:
		if (eth && nd && nd->carrier < 0)
			diag_fix(
				f,
				"The RoCE port follows its netdev, which is administratively down: ip link set %s up "
				"(and persist it in the node's network config).",
				nd->name);
		else if (eth)
			diag_fix(
				f,
				"The RoCE port follows its netdev%s%s, which has no carrier: check the cable/transceiver "
				"and the switch port (ethtool %s).",
				nd ? " " : "", nd ? nd->name : "", nd ? nd->name : "<netdev>");
		else
			diag_fix(
				f,
				"The port is disabled (phys_state Disabled): re-enable it (ibportstate -C %s %u enable, or "
				"mlxlink -d %s --port_state UP), and check that a cable is seated; if it is unused, exclude "
				"it from NCCL_IB_HCA and the device plugin selectors.",
				p->dev->name, p->num, p->dev->name);
		break;
	case HW_PHYS_POLLING:
		diag_fix(
			f,
			"No physical link (phys_state Polling: training never completes): check the cable or "
			"transceiver and that the switch port is up and the same speed/type (%s).",
			eth ? "ethtool shows the netdev's link"
			    : "ibswitches/iblinkinfo on the fabric");
		break;
	case HW_PHYS_LINK_UP: /* but not ACTIVE */
		if (!eth)
			diag_fix(
				f,
				"The cable is fine (LinkUp) but no subnet manager has configured the port (state %s, "
				"sm_lid 0x%x): run opensm on one node of the fabric or enable the managed switch's SM.",
				p->state_name, p->sm_lid);
		else
			diag_fix(
				f,
				"Link is up but the port is %s: check the netdev (ip link show %s) and dmesg for mlx5 errors.",
				p->state_name, nd ? nd->name : "<netdev>");
		break;
	default:
		diag_fix(
			f,
			"Check the cable, the switch port and dmesg; `rdma link show %s/%u` shows the live state.",
			p->dev->name, p->num);
	}
}

/* perftest's "Port number %d state is %s" names (perftest_resources.c) */
static const char *perftest_state(enum hw_port_state s)
{
	switch (s) {
	case HW_PORT_DOWN: return "Down";
	case HW_PORT_INIT: return "Init";
	case HW_PORT_ARMED: return "Armed";
	default: return hw_port_state_name(s);
	}
}

static const char *down_title(const struct hw_port *p)
{
	switch (p->phys_state) {
	case HW_PHYS_DISABLED:
		return p->link_layer == HW_LINK_ETH ? "netdev down or no carrier" : "port disabled";
	case HW_PHYS_POLLING: return "no physical link: cable, transceiver or switch port";
	case HW_PHYS_LINK_UP:
		return p->link_layer == HW_LINK_ETH ? "link up but port not active"
						    : "link up, no subnet manager has activated it";
	default: return "not active";
	}
}

/* A port whose state, phys_state or link_layer could not be read or parsed: one failing finding
 * per file, naming it and what it held; the other checks leave the port alone (port_unknown). */
static void port_attr_errors(struct diag *d, const struct hw_port *p)
{
	char obj[HW_NAME_MAX + 8], path[PATH_MAX], msg[PATH_MAX + 128];

	for (size_t i = 0; i < p->n_errors; i++) {
		const struct hw_attr_error *e = &p->errors[i];
		json_t *f;

		diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/%s", p->dev->name,
			 p->num, e->name);
		f = diag_add(d, DIAG_FAIL, port_obj(p, obj, sizeof(obj)),
			     "%s %s, the port's state is unknown: %s",
			     e->err ? "unreadable" : "unparsable", e->name,
			     hw_attr_error_str(p, e, hw_ctx_sysfs(d->ctx), msg, sizeof(msg)));
		diag_evidence(f, path, "%s",
			      e->err	      ? hw_strerror(e->err)
			      : e->content[0] ? e->content
					      : "(empty)");
		diag_fix(
			f,
			"The kernel always writes this file (\"4: ACTIVE\", \"5: LinkUp\", \"InfiniBand\"): on a live "
			"node check dmesg for the driver (mlx5_core) and `rdma link show %s/%u`; in a snapshot or a copied "
			"tree, the file was damaged on the way.",
			p->dev->name, p->num);
	}
}

static bool port_unknown(const struct hw_port *p)
{
	return p->n_errors > 0;
}

void diag_check_port_state(struct diag *d)
{
	char obj[HW_NAME_MAX + 8];

	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		json_t *f;

		if (!dev_in_scope(d, dev))
			continue;
		if (port_unknown(p)) {
			port_attr_errors(d, p);
			continue;
		}
		if (hw_port_state_is_active(p->state)) {
			f = diag_add(d, DIAG_OK, port_obj(p, obj, sizeof(obj)), "%s %s, %s",
				     p->state_name, p->phys_state_name,
				     p->rate.raw[0] ? p->rate.raw : "rate unknown");
			ev_state(d, f, p);
			continue;
		}
		f = diag_add(
			d, DIAG_FAIL, port_obj(p, obj, sizeof(obj)),
			"%s/%s (%s): %s; perftest says \"Port number %u state is %s\", NCCL skips the port",
			p->state_name, p->phys_state_name, hw_link_layer_name(p->link_layer),
			down_title(p), p->num, perftest_state(p->state));
		ev_state(d, f, p);
		port_down_cause(d, f, p);
	}
}

/* ---- port.sm --------------------------------------------------------------------------------- */

void diag_check_port_sm(struct diag *d)
{
	char obj[HW_NAME_MAX + 8], v[32];

	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		json_t *f;

		if (!dev_in_scope(d, dev))
			continue;
		if (port_unknown(p)) {
			diag_add(d, DIAG_SKIP, port_obj(p, obj, sizeof(obj)),
				 "port attributes unreadable (see port.state)");
			continue;
		}
		if (p->link_layer != HW_LINK_IB)
			continue;
		if (p->phys_state != HW_PHYS_LINK_UP) {
			diag_add(
				d, DIAG_SKIP, port_obj(p, obj, sizeof(obj)),
				"physical link not up (%s): the subnet manager cannot reach the port",
				p->phys_state_name);
			continue;
		}
		if (p->sm_lid == 0 || p->lid == 0 || p->lid == 0xffff) {
			f = diag_add(
				d, DIAG_FAIL, port_obj(p, obj, sizeof(obj)),
				"no subnet manager: sm_lid 0x%x, lid 0x%x (ibv_devinfo shows port_lid %u)",
				p->sm_lid, p->lid, p->lid);
			snprintf(v, sizeof(v), "0x%x", p->sm_lid);
			ev_port(d, f, p, "sm_lid", v);
			snprintf(v, sizeof(v), "0x%x", p->lid);
			ev_port(d, f, p, "lid", v);
			diag_fix(
				f,
				"Run a subnet manager on the fabric (systemctl enable --now opensm on one node, or the "
				"managed switch's SM); `sminfo` from a node with ib_umad shows whether one answers.");
			continue;
		}
		f = diag_add(d, DIAG_OK, port_obj(p, obj, sizeof(obj)),
			     "subnet manager at lid %u, port lid %u", p->sm_lid, p->lid);
		snprintf(v, sizeof(v), "0x%x", p->sm_lid);
		ev_port(d, f, p, "sm_lid", v);
	}
}

/* ---- port.ipoib ------------------------------------------------------------------------------ */

char *diag_active_hcas(const struct hw_node *n, enum hw_link_layer ll)
{
	char *list = NULL;

	for (size_t i = 0; i < n->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &n->rdma[i];
		bool active = false;

		if (dev_is_vf(dev))
			continue;
		HW_DEV_FOREACH_PORT(dev, p)
		active |= hw_port_state_is_active(p->state) && p->link_layer == ll;
		if (active && str_append_sep(&list, ",", "%s", dev->name) < 0)
			break;
	}
	return list ? list : strdup("<an ACTIVE HCA>");
}

void diag_check_port_ipoib(struct diag *d)
{
	char obj[HW_NAME_MAX + 8];

	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		const struct hw_netdev *nd = p->netdev, *master;
		json_t *f;

		if (!dev_in_scope(d, dev) || port_unknown(p))
			continue;
		if (p->link_layer != HW_LINK_IB || !nd || nd->kind != HW_NETDEV_IPOIB)
			continue;
		master = nd->master;
		if (!hw_port_state_is_active(p->state) && master && master->carrier == 1) {
			_cleanup_free_ char *list = diag_active_hcas(d->node, HW_LINK_IB);

			f = diag_add(
				d, DIAG_WARN, port_obj(p, obj, sizeof(obj)),
				"%s reports Up while %s port %u is %s: a bond's carrier hides a dead slave port",
				master->name, dev->name, p->num, p->state_name);
			ev_state(d, f, p);
			ev_netdev(d, f, master, "carrier");
			ev_netdev(d, f, nd, "carrier");
			diag_fix(
				f,
				"Read the port state, not ibdev2netdev's (Up/Down), which is the netdev carrier: "
				"rdma link show %s/%u. Until the port is fixed, name only ACTIVE HCAs in NCCL_IB_HCA "
				"(=%s) and the device plugin selectors.",
				dev->name, p->num, list ? list : "<an ACTIVE HCA>");
		} else if (hw_port_state_is_active(p->state) && nd->carrier != 1) {
			f = diag_add(
				d, DIAG_WARN, port_obj(p, obj, sizeof(obj)),
				"IB port ACTIVE but IPoIB %s is %s: ibdev2netdev's \"(Down)\" is this netdev, not the port; "
				"verbs work, IP over this port does not",
				nd->name, nd->carrier < 0 ? "admin down" : "without carrier");
			ev_state(d, f, p);
			ev_netdev(d, f, nd, "operstate");
			ev_netdev(d, f, nd, "carrier");
			diag_fix(
				f,
				"Only IP over IB needs it (rdma_cm, perftest -R, NCCL bootstrap over %s): ip link set %s up "
				"and give it an address; RDMA verbs (ib_write_bw, NCCL NET/IB) already work.",
				nd->name, nd->name);
		} else {
			f = diag_add(d, DIAG_OK, port_obj(p, obj, sizeof(obj)),
				     "IPoIB %s carrier %d follows the port (%s)", nd->name,
				     nd->carrier, p->state_name);
			ev_netdev(d, f, nd, "carrier");
		}
	}
}

/* ---- roce.gids ------------------------------------------------------------------------------- */

static const struct hw_gid *find_v2_ipv4(const struct hw_port *p)
{
	for (size_t k = 0; k < p->n_gids; k++)
		if (p->gids[k].ipv4 && !strcmp(p->gids[k].type, "RoCE v2"))
			return &p->gids[k];
	return NULL;
}

void diag_check_roce_gids(struct diag *d)
{
	char obj[HW_NAME_MAX + 8], path[PATH_MAX];

	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		const struct hw_gid *g;
		json_t *f;

		if (!dev_in_scope(d, dev))
			continue;
		if (p->link_layer != HW_LINK_ETH)
			continue;
		diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/gids", dev->name,
			 p->num);
		if (p->n_gids == 0) {
			f = diag_add(
				d, hw_port_state_is_active(p->state) ? DIAG_FAIL : DIAG_WARN,
				port_obj(p, obj, sizeof(obj)),
				"RoCE GID table empty (ibstat shows Port GUID 0x0000000000000000): no QP can leave INIT");
			diag_evidence(f, path,
				      "all %zu entries 0000:0000:0000:0000:0000:0000:0000:0000",
				      p->gid_tbl_len);
			diag_fix(
				f,
				"GIDs come from the netdev's addresses: bring %s up with an IPv4 address (ip addr add "
				"<ip>/<len> dev %s); for a VF, the VF netdev must be in this network namespace.",
				p->netdev ? p->netdev->name : "the port's netdev",
				p->netdev ? p->netdev->name : "<netdev>");
			continue;
		}
		g = find_v2_ipv4(p);
		if (!g && !hw_port_state_is_active(p->state)) {
			diag_add(d, DIAG_SKIP, port_obj(p, obj, sizeof(obj)),
				 "no RoCE v2 IPv4 GID, port not active");
			continue;
		}
		if (!g) {
			f = diag_add(
				d, DIAG_WARN, port_obj(p, obj, sizeof(obj)),
				"no RoCE v2 IPv4 GID: NCCL's default (NCCL_IB_ADDR_FAMILY=AF_INET, RoCE v2) finds no GID");
			diag_evidence(f, path,
				      "%zu non-zero GIDs, none ::ffff:a.b.c.d with type RoCE v2",
				      p->n_gids);
			diag_fix(
				f,
				"Add an IPv4 address to %s (the kernel then adds a RoCE v2 GID), or point NCCL at the GID "
				"you want with NCCL_IB_GID_INDEX.",
				p->netdev ? p->netdev->name : "the port's netdev");
			continue;
		}
		f = diag_add(d, DIAG_OK, port_obj(p, obj, sizeof(obj)),
			     "RoCE v2 IPv4 GID at index %u (%s%s%s)", g->index, g->gid,
			     g->ndev[0] ? " on " : "", g->ndev);
		diag_evidence(f,
			      diag_sys(d, path, sizeof(path),
				       "/class/infiniband/%s/ports/%u/gid_attrs/types/%u",
				       dev->name, p->num, g->index),
			      "%s", g->type);
	}
}

/* ---- bond.lag -------------------------------------------------------------------------------- */

static const struct hw_rdma_dev *lag_dev_of(const struct hw_node *n, const struct hw_netdev *bond)
{
	for (size_t i = 0; i < n->n_rdma; i++)
		if (n->rdma[i].lag == bond)
			return &n->rdma[i];
	return NULL;
}

void diag_check_bond_lag(struct diag *d)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_netdevs; i++) {
		const struct hw_netdev *b = &d->node->netdevs[i];
		const struct hw_bond *bd = b->bond;
		const struct hw_rdma_dev *lag;
		size_t up = 0, ipoib = 0, rdma_eth = 0;
		json_t *f;

		if (!bd)
			continue;
		diag_sys(d, path, sizeof(path), "/class/net/%s/bonding/slaves", b->name);
		if (bd->n_slaves == 0) {
			f = diag_add(d, DIAG_WARN, b->name, "bond without slaves");
			diag_evidence(f, path, "(empty)");
			diag_fix(
				f,
				"Enslave the ports (ip link set <port> master %s) or remove the bond.",
				b->name);
			continue;
		}
		for (size_t k = 0; k < bd->n_slaves; k++) {
			const struct hw_netdev *s = bd->slaves[k];

			up += s->carrier == 1;
			ipoib += s->kind == HW_NETDEV_IPOIB;
			rdma_eth +=
				s->kind != HW_NETDEV_IPOIB && s->pci && s->pci->vendor == 0x15b3;
		}
		lag = lag_dev_of(d->node, b);
		if (ipoib && bd->mode_id != 1) {
			f = diag_add(d, DIAG_FAIL, b->name,
				     "IPoIB bond in mode %s: IPoIB supports only active-backup",
				     bd->mode);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path), "/class/net/%s/bonding/mode",
					       b->name),
				      "%s %d", bd->mode, bd->mode_id);
			diag_fix(f, "Recreate %s with mode=active-backup (1) and fail_over_mac=1.",
				 b->name);
			continue;
		}
		if (lag && bd->mode_id != 1 && bd->mode_id != 2 && bd->mode_id != 4) {
			f = diag_add(d, DIAG_FAIL, b->name,
				     "RoCE LAG %s over a %s bond: mlx5 LAG supports active-backup, "
				     "balance-xor and 802.3ad only",
				     lag->name, bd->mode);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path), "/class/net/%s/bonding/mode",
					       b->name),
				      "%s %d", bd->mode, bd->mode_id);
			diag_fix(f, "Set the bond mode to 802.3ad (4) or active-backup (1).");
			continue;
		}
		if (!lag && rdma_eth >= 2) {
			f = diag_add(
				d, DIAG_WARN, b->name,
				"bond of %zu ConnectX Ethernet ports but no mlx5_bond_N device: "
				"RoCE LAG is not active, each port keeps its own RDMA device",
				rdma_eth);
			diag_evidence(f, path, "%zu slaves", bd->n_slaves);
			diag_fix(
				f,
				"LAG needs both PFs of one card in the same bond (mode 1, 2 or 4) and no SR-IOV VFs in legacy "
				"eswitch mode; re-create the bond after fixing, then check for mlx5_bond_0 in rdma link.");
			continue;
		}
		if (up == 0) {
			f = diag_add(d, DIAG_FAIL, b->name, "no slave of %s has carrier", b->name);
			diag_evidence(f, path, "%zu slaves, 0 with carrier", bd->n_slaves);
			diag_fix(
				f,
				"Check the cables and switch ports of the slaves (ip link show master %s).",
				b->name);
			continue;
		}
		if (up < bd->n_slaves) {
			f = diag_add(d, DIAG_WARN, b->name,
				     "%zu of %zu slaves of %s (%s%s%s) have carrier: %s", up,
				     bd->n_slaves, b->name, bd->mode, lag ? ", RoCE LAG " : "",
				     lag ? lag->name : "",
				     bd->mode_id == 1 ? "no failover left" : "half the bandwidth");
			diag_evidence(f, path, "%zu slaves", bd->n_slaves);
			for (size_t k = 0; k < bd->n_slaves; k++)
				if (bd->slaves[k]->carrier != 1)
					ev_netdev(d, f, bd->slaves[k], "carrier");
			diag_fix(
				f,
				"Bring the dead slave back (cable, switch port, ip link set <slave> up); ibdev2netdev still "
				"shows the bond Up.");
			continue;
		}
		f = diag_add(d, DIAG_OK, b->name, "%s bond, %zu slaves up%s%s", bd->mode,
			     bd->n_slaves, lag ? ", RoCE LAG device " : "", lag ? lag->name : "");
		diag_evidence(
			f, diag_sys(d, path, sizeof(path), "/class/net/%s/bonding/mode", b->name),
			"%s %d", bd->mode, bd->mode_id);
	}
}

/* ---- netdev.mtu ------------------------------------------------------------------------------ */

static bool netdev_is_roce(const struct hw_node *n, const struct hw_netdev *nd)
{
	HW_NODE_FOREACH_PORT(n, p)
	if (p->netdev == nd && p->link_layer == HW_LINK_ETH && !dev_is_vf(p->dev))
		return true;
	return false;
}

void diag_check_netdev_mtu(struct diag *d)
{
	const struct hw_node *n = d->node;
	unsigned roce_mtu = 0;
	const struct hw_netdev *roce_first = NULL;
	char path[PATH_MAX], mode[32];

	for (size_t i = 0; i < n->n_netdevs; i++) {
		const struct hw_netdev *nd = &n->netdevs[i];
		json_t *f;

		if (nd->master && nd->mtu != nd->master->mtu) {
			f = diag_add(d, DIAG_WARN, nd->name, "MTU %u differs from its bond %s (%u)",
				     nd->mtu, nd->master->name, nd->master->mtu);
			ev_netdev(d, f, nd, "mtu");
			ev_netdev(d, f, nd->master, "mtu");
			diag_fix(
				f,
				"Set the MTU on the bond only (ip link set %s mtu <mtu>); the bond propagates it to its slaves.",
				nd->master->name);
		}
		if (nd->pci && nd->pci->physfn)
			continue; /* a VF's netdev belongs to the pod that gets it; pod checks see it there */
		if (nd->kind == HW_NETDEV_IPOIB && !nd->master) {
			bool connected = diag_sys_read(d,
						       diag_sys(d, path, sizeof(path),
								"/class/net/%s/mode", nd->name),
						       mode, sizeof(mode)) > 0 &&
					 str_startswith(mode, "connected");

			if (connected ? nd->mtu > 65520 : (nd->mtu != 2044 && nd->mtu != 4092)) {
				f = diag_add(d, DIAG_WARN, nd->name,
					     "IPoIB %s mode MTU %u: expected %s",
					     connected ? "connected" : "datagram", nd->mtu,
					     connected ? "at most 65520"
						       : "2044 (2K IB MTU) or 4092 (4K IB MTU)");
				ev_netdev(d, f, nd, "mtu");
				diag_fix(f, "ip link set %s mtu %s", nd->name,
					 connected ? "65520"
						   : "4092 (with a 4K fabric MTU) or 2044");
			} else {
				f = diag_add(d, DIAG_OK, nd->name, "IPoIB %s MTU %u",
					     connected ? "connected" : "datagram", nd->mtu);
				ev_netdev(d, f, nd, "mtu");
			}
			continue;
		}
		if (nd->kind == HW_NETDEV_IPOIB ||
		    !(netdev_is_roce(n, nd) || (nd->bond && lag_dev_of(n, nd))))
			continue;
		if (nd->mtu < 1500) {
			f = diag_add(
				d, DIAG_WARN, nd->name,
				"RoCE netdev MTU %u below 1500: RoCE path MTU drops to 512 or 256",
				nd->mtu);
			ev_netdev(d, f, nd, "mtu");
			diag_fix(
				f,
				"ip link set %s mtu 9000 (or 1500), the same on every node and switch port.",
				nd->name);
		} else {
			f = diag_add(d, DIAG_OK, nd->name, "RoCE netdev MTU %u: RoCE path MTU %s",
				     nd->mtu,
				     nd->mtu >= 4200 ? "4096"
				     : nd->mtu >= 2200
					     ? "2048"
					     : "1024 (9000 gives 4096, ~5% more bandwidth)");
			ev_netdev(d, f, nd, "mtu");
		}
		if (nd->master)
			continue;
		if (!roce_first) {
			roce_first = nd;
			roce_mtu = nd->mtu;
		} else if (nd->mtu != roce_mtu) {
			f = diag_add(d, DIAG_WARN, nd->name,
				     "RoCE rails disagree on MTU: %s %u, %s %u", roce_first->name,
				     roce_mtu, nd->name, nd->mtu);
			ev_netdev(d, f, roce_first, "mtu");
			ev_netdev(d, f, nd, "mtu");
			diag_fix(
				f,
				"Use one MTU (1500 or 9000) on every RoCE netdev and switch port; the path MTU is the "
				"smallest on the way.");
		}
	}
}

/* ---- sriov.vfs ------------------------------------------------------------------------------- */

void diag_check_sriov(struct diag *d)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_pci; i++) {
		const struct hw_pci *p = &d->node->pci[i];
		size_t unbound = 0, no_rdma = 0;
		json_t *f;

		if (p->sriov_totalvfs <= 0 || p->physfn)
			continue;
		diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/sriov_numvfs", p->bdf);
		if (p->sriov_numvfs > p->sriov_totalvfs) {
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "sriov_numvfs %d above sriov_totalvfs %d", p->sriov_numvfs,
				     p->sriov_totalvfs);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(f, "Reset it: echo 0 > %s, then write a count up to %d.", path,
				 p->sriov_totalvfs);
			continue;
		}
		if (p->sriov_numvfs == 0) {
			f = diag_add(d, DIAG_OK, p->bdf,
				     "SR-IOV capable (sriov_totalvfs %d), no VFs enabled",
				     p->sriov_totalvfs);
			diag_evidence(f, path, "0");
			continue;
		}
		if ((size_t)p->sriov_numvfs != p->n_vfs) {
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "sriov_numvfs %d but %zu virtfn links: VF creation failed",
				     p->sriov_numvfs, p->n_vfs);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(
				f,
				"Check dmesg for the mlx5_core error; re-create them: echo 0 > %s; echo %d > %s "
				"(firmware SRIOV_EN and NUM_OF_VFS via mlxconfig bound the total).",
				path, p->sriov_numvfs, path);
			continue;
		}
		for (size_t k = 0; k < p->n_vfs; k++) {
			unbound += !p->vfs[k]->driver[0];
			no_rdma += p->vfs[k]->driver[0] && p->vfs[k]->n_rdma == 0;
		}
		/* In exclusive mode a VF's RDMA device leaves the host's namespace with its pod. */
		if (d->node->kernel.netns_mode == 0 && no_rdma && !unbound) {
			f = diag_add(
				d, DIAG_OK, p->bdf,
				"%d of %d VFs enabled and bound; %zu RDMA devices are in pod namespaces "
				"(exclusive mode) or missing",
				p->sriov_numvfs, p->sriov_totalvfs, no_rdma);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			continue;
		}
		if (unbound || no_rdma) {
			f = diag_add(d, DIAG_WARN, p->bdf,
				     "%d VFs: %zu without a driver, %zu without an RDMA device",
				     p->sriov_numvfs, unbound, no_rdma);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(
				f,
				"Unbound VFs are invisible to the device plugin: bind them (echo <vf-bdf> > "
				"/sys/bus/pci/drivers/mlx5_core/bind) unless they are meant for VFIO; VFs without RDMA need "
				"mlx5_ib.");
			continue;
		}
		f = diag_add(d, DIAG_OK, p->bdf,
			     "%d of %d VFs enabled, all bound with an RDMA device", p->sriov_numvfs,
			     p->sriov_totalvfs);
		diag_evidence(f, path, "%d", p->sriov_numvfs);
	}
}

/* ---- chardev.nodes --------------------------------------------------------------------------- */

/* Whether a device node the model found absent is in fact hidden: stat says EACCES (a
 * directory on the way without search permission for this user). dir and its mode then. */
static bool devnode_denied(const struct diag *d, const char *path, char *dir, size_t n,
			   unsigned *mode)
{
	_cleanup_close_ int fd = diag_open(d, HW_ROOT_DEVFS, path, O_PATH), dfd = -1;
	struct stat st;
	char *slash;

	if (fd != -EACCES)
		return false;
	snprintf(dir, n, "%s", path);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	dfd = diag_open(d, HW_ROOT_DEVFS, dir, O_PATH);
	*mode = dfd >= 0 && fstat(dfd, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
	return true;
}

void diag_check_chardevs(struct diag *d)
{
	const struct hw_node *n = d->node;
	size_t good = 0;
	unsigned dir_mode = 0;
	char path[PATH_MAX], sysp[PATH_MAX], dirp[PATH_MAX];
	json_t *f;

	for (size_t i = 0; i < n->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &n->rdma[i];

		if (dev->uverbs)
			continue;
		f = diag_add(
			d, DIAG_FAIL, dev->name,
			"%s has no uverbs device: libibverbs cannot list it (\"IB device %s not "
			"found\")",
			dev->name, dev->name);
		diag_evidence(f,
			      diag_sys(d, path, sizeof(path),
				       "/class/infiniband/%s/device/infiniband_verbs", dev->name),
			      "(absent)");
		diag_fix(
			f,
			"Load ib_uverbs (modprobe ib_uverbs); if it is loaded, the driver did not register user verbs "
			"for this device: check dmesg.");
	}
	for (size_t i = 0; i < n->n_chardevs; i++) {
		const struct hw_chardev *c = &n->chardevs[i];
		bool world = c->kind == HW_CHR_UVERBS || c->kind == HW_CHR_RDMA_CM;
		const char *obj = c->dev ? c->dev->name : c->name;

		diag_dev(d, path, sizeof(path), "/%s", c->node.path);
		diag_sys(d, sysp, sizeof(sysp), "/class/%s/%s/dev",
			 c->kind == HW_CHR_UVERBS    ? "infiniband_verbs"
			 : c->kind == HW_CHR_RDMA_CM ? "misc"
						     : "infiniband_mad",
			 c->name);
		if (!c->node.present && devnode_denied(d, path, dirp, sizeof(dirp), &dir_mode)) {
			/* not missing: this user may not look into the directory (mode 000 /dev/infiniband) */
			f = diag_add(
				d, c->kind == HW_CHR_UVERBS ? DIAG_FAIL : DIAG_WARN, obj,
				"%s: permission denied (its directory, mode %04o, cannot be searched by this user), not missing",
				c->node.path, dir_mode);
			diag_evidence(f, dirp, "mode %04o", dir_mode);
			diag_evidence(f, path, "(stat: Permission denied)");
			diag_fix(
				f,
				"Give the directory its usual mode (chmod 0755 %s); in a pod, check what mounted it.",
				dirp);
			continue;
		}
		if (!c->node.present) {
			f = diag_add(d, c->kind == HW_CHR_UVERBS ? DIAG_FAIL : DIAG_WARN, obj,
				     "%s missing from devfs%s", c->node.path,
				     c->kind == HW_CHR_UVERBS
					     ? ": libibverbs silently drops the device"
					     : "");
			diag_evidence(f, sysp, "%u:%u", c->major, c->minor);
			diag_evidence(f, path, "(absent)");
			diag_fix(
				f,
				"udev did not create it: udevadm trigger --subsystem-match=infiniband_verbs "
				"--subsystem-match=infiniband_mad --subsystem-match=misc, or mknod %s c %u %u.",
				path, c->major, c->minor);
			continue;
		}
		if (!c->matches) {
			f = diag_add(d, DIAG_FAIL, obj,
				     "%s is not the character device %u:%u the kernel registered",
				     c->node.path, c->major, c->minor);
			diag_evidence(f, sysp, "%u:%u", c->major, c->minor);
			diag_evidence(f, path,
				      c->node.is_char ? "char %u:%u" : "not a character device",
				      c->node.major, c->node.minor);
			diag_fix(
				f,
				"A stale node (copied /dev or a reused minor after hot-plug): rm %s and udevadm trigger.",
				path);
			continue;
		}
		if (world && (c->node.mode & 0666) != 0666) {
			f = diag_add(
				d, DIAG_WARN, obj,
				"%s mode %04o: non-root users (and pods running as non-root) cannot open it",
				c->node.path, c->node.mode);
			diag_evidence(f, path, "mode %04o uid %u gid %u", c->node.mode,
				      (unsigned)c->node.uid, (unsigned)c->node.gid);
			diag_fix(
				f,
				"rdma-core's udev rules make uverbs and rdma_cm 0666: chmod 0666 %s, and install rdma-core's "
				"udev rules (90-rdma-umad/91-ib-permissions) so it survives a reboot.",
				path);
			continue;
		}
		good++;
	}
	if (good) {
		f = diag_add(d, DIAG_OK, NULL,
			     "%zu of %zu character devices present with the kernel's numbers", good,
			     n->n_chardevs);
		diag_evidence(f, diag_dev(d, path, sizeof(path), "/infiniband"),
			      "%zu nodes checked", n->n_chardevs);
	}
}

/* ---- gpudirect.driver ------------------------------------------------------------------------- */

void diag_check_gpudirect_driver(struct diag *d)
{
	const struct hw_module *peermem = hw_node_module(d->node, "nvidia_peermem");
	const struct hw_module *legacy = hw_node_module(d->node, "nv_peer_mem");
	const struct hw_module *nv = hw_node_module(d->node, "nvidia");
	char path[PATH_MAX], vpath[PATH_MAX], buf[512];
	unsigned kmaj = 0, kmin = 0, nvmaj = 0;
	bool open_mod = false, have_kernel = false, have_nv = false;
	json_t *f;

	if (d->node->n_gpus == 0)
		return;
	if (d->node->n_rdma == 0) {
		diag_add(d, DIAG_SKIP, NULL,
			 "%zu GPUs but no RDMA device: GPUDirect RDMA has nothing to pair with",
			 d->node->n_gpus);
		return;
	}
	if (nv && nv->state == HW_MOD_ABSENT) {
		f = diag_add(d, DIAG_FAIL, "nvidia", "%zu GPUs but the nvidia driver is not loaded",
			     d->node->n_gpus);
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/nvidia"), "(absent)");
		diag_fix(
			f,
			"Install and load the NVIDIA driver (GPU Operator, or the distribution's package).");
		return;
	}
	if ((peermem && peermem->state != HW_MOD_ABSENT) ||
	    (legacy && legacy->state != HW_MOD_ABSENT)) {
		const struct hw_module *m =
			peermem && peermem->state != HW_MOD_ABSENT ? peermem : legacy;

		f = diag_add(
			d, DIAG_OK, m->name,
			"%s loaded: GPU memory can be registered (ibv_reg_mr on cudaMalloc memory)",
			m->name);
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/%s/initstate", m->name),
			      "live");
		return;
	}
	/* dma-buf: ibv_reg_dmabuf_mr needs kernel >= 5.12 (ib_umem_dmabuf) and the NVIDIA open kernel
	 * modules >= 515; the proprietary module does not export dma-buf for device memory. */
	if (diag_read(d, HW_ROOT_PROCFS, diag_proc(d, path, sizeof(path), "/sys/kernel/osrelease"),
		      buf, sizeof(buf)) > 0 &&
	    diag_kernel_release_parse(buf, strlen(buf), &kmaj, &kmin) == 0)
		have_kernel = true;
	if (diag_read(d, HW_ROOT_PROCFS,
		      diag_proc(d, vpath, sizeof(vpath), "/driver/nvidia/version"), buf,
		      sizeof(buf)) > 0 &&
	    diag_nvidia_version_parse(buf, strlen(buf), &nvmaj, &open_mod) > 0)
		have_nv = true;
	if (have_kernel && have_nv && (kmaj > 5 || (kmaj == 5 && kmin >= 12)) && open_mod &&
	    nvmaj >= 515) {
		f = diag_add(
			d, DIAG_OK, "dma-buf",
			"no nvidia_peermem, but dma-buf works: kernel %u.%u, NVIDIA open kernel "
			"module %u (NCCL >= 2.13 and perftest --use_cuda_dmabuf use it)",
			kmaj, kmin, nvmaj);
		diag_evidence(f, path, "%u.%u", kmaj, kmin);
		diag_evidence(f, vpath, "Open Kernel Module %u", nvmaj);
		return;
	}
	f = diag_add(
		d, have_kernel && have_nv ? DIAG_FAIL : DIAG_WARN, "nvidia_peermem",
		"%s: registering GPU memory fails (perftest \"Couldn't allocate MR with error=14\"; NCCL falls back "
		"to staging through host memory)",
		have_kernel && have_nv
			? "neither nvidia_peermem nor dma-buf (needs kernel >= 5.12 and the open module >= 515)"
			: "nvidia_peermem not loaded and dma-buf support unknown");
	diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/nvidia_peermem"), "(absent)");
	if (have_kernel)
		diag_evidence(f, diag_proc(d, path, sizeof(path), "/sys/kernel/osrelease"), "%u.%u",
			      kmaj, kmin);
	if (have_nv)
		diag_evidence(f, vpath, "%s kernel module %u", open_mod ? "open" : "proprietary",
			      nvmaj);
	else
		diag_evidence(f, vpath, "(unreadable)");
	diag_fix(
		f,
		"modprobe nvidia-peermem (GPU Operator: driver.rdma.enabled=true), or use the NVIDIA open kernel "
		"modules >= 515 on a kernel >= 5.12 so NCCL can use dma-buf (NCCL_DMABUF_ENABLE=1).");
}

static bool dev_has_active_port(const struct hw_rdma_dev *dev)
{
	HW_DEV_FOREACH_PORT(dev, p)
	if (hw_port_state_is_active(p->state))
		return true;
	return false;
}

/* ---- gpudirect.topology ----------------------------------------------------------------------- */

void diag_check_gpudirect_topology(struct diag *d)
{
	char obj[32], path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_gpus; i++) {
		const struct hw_gpu *g = &d->node->gpus[i];
		json_t *f;

		snprintf(obj, sizeof(obj), "GPU%u", g->index);
		diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s", g->pci ? g->pci->bdf : "?");
		if (!g->nearest) {
			if (d->node->n_rdma)
				diag_add(d, DIAG_SKIP, obj, "no HCA with a known PCIe relation");
			continue;
		}
		if (!dev_has_active_port(g->nearest)) {
			f = diag_add(
				d, DIAG_WARN, obj,
				"nearest HCA %s (%s) has no ACTIVE port: this GPU's traffic goes to a "
				"farther HCA",
				g->nearest->name, hw_topo_name(g->nearest_rel));
			diag_fix(
				f,
				"Fix %s's port (see port.state); until then expect lower GPUDirect bandwidth for %s.",
				g->nearest->name, obj);
		} else {
			switch (g->nearest_rel) {
			case HW_TOPO_PIX:
			case HW_TOPO_PXB:
				f = diag_add(
					d, DIAG_OK, obj,
					"nearest HCA %s is %s (same PCIe switch): GPUDirect RDMA at full speed",
					g->nearest->name, hw_topo_name(g->nearest_rel));
				break;
			case HW_TOPO_PHB:
			case HW_TOPO_NODE:
				f = diag_add(
					d, DIAG_OK, obj,
					"nearest HCA %s is %s (through the CPU, same socket): NCCL's default "
					"NCCL_NET_GDR_LEVEL (PXB) stages GPU buffers through host memory",
					g->nearest->name, hw_topo_name(g->nearest_rel));
				break;
			case HW_TOPO_SYS:
				f = diag_add(
					d, DIAG_WARN, obj,
					"nearest HCA %s is SYS (across sockets): GPU buffers may reach half "
					"the host-memory bandwidth (perftest#241)",
					g->nearest->name);
				diag_fix(
					f,
					"Give the pod's GPUs HCAs on the same socket (device plugin topology hints with the kubelet "
					"Topology Manager, policy single-numa-node); with no HCA on that socket, expect staging.");
				break;
			default:
				f = diag_add(d, DIAG_SKIP, obj, "PCIe relation to %s unknown",
					     g->nearest->name);
			}
		}
		diag_evidence(f, path, "%s -> %s: %s", g->pci ? g->pci->bdf : "?",
			      g->nearest->pci ? g->nearest->pci->bdf : g->nearest->name,
			      hw_topo_name(g->nearest_rel));
	}
}

/* ---- netns.mode ------------------------------------------------------------------------------ */

void diag_check_netns_mode(struct diag *d)
{
	int mode = d->node->kernel.netns_mode;
	char path[PATH_MAX];
	const char *name = mode == 1 ? "shared" : "exclusive";
	json_t *f;

	diag_sys(d, path, sizeof(path), "/module/ib_core/parameters/netns_mode");
	if (mode < 0) {
		if (d->node->n_rdma)
			diag_add(d, DIAG_SKIP, NULL,
				 "RDMA netns mode unknown (no ib_core parameters in sysfs)");
		return;
	}
	if (d->plugin_netns < 0 || d->plugin_netns == mode) {
		f = diag_add(d, DIAG_OK, NULL, "RDMA netns mode %s%s%s", name,
			     d->plugin_config ? "; plugin config: " : "",
			     d->plugin_config ? d->plugin_why : "");
		diag_evidence(f, path, "%s", mode ? "Y" : "N");
		if (d->plugin_config)
			diag_evidence(f, d->plugin_config, "%s", d->plugin_why);
		return;
	}
	f = diag_add(
		d, DIAG_FAIL, NULL, "RDMA netns mode is %s but the plugin config expects %s%s",
		name, d->plugin_netns ? "shared" : "exclusive",
		mode == 0
			? ": shared HCAs are not in the pods' network namespaces, so pods see no device "
			  "(k8s-rdma-shared-dev-plugin refuses to start)"
			: ": RDMA CNI refuses to move devices, per-VF pods are not isolated");
	diag_evidence(f, path, "%s", mode ? "Y" : "N");
	diag_evidence(f, d->plugin_config, "%s", d->plugin_why);
	diag_fix(
		f,
		"rdma system set netns %s (only while no other network namespace exists), or persist it: echo "
		"\"options ib_core netns_mode=%d\" > /etc/modprobe.d/ib_core.conf and reboot.",
		d->plugin_netns ? "shared" : "exclusive", d->plugin_netns);
}

/* ---- gpudirect.acs ---------------------------------------------------------------------------- */

/* The downstream ports between a GPU and its HCA are where ACS redirects peer-to-peer
 * requests up to the root complex: GPUDirect RDMA then crosses the CPU (or fails under an
 * IOMMU), although nvidia-smi topo still says PIX. */
void diag_check_gpudirect_acs(struct diag *d)
{
	char obj[32], path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_gpus; i++) {
		const struct hw_gpu *g = &d->node->gpus[i];
		const struct hw_pci *a = g->pci, *b = g->nearest ? g->nearest->pci : NULL;
		size_t common, checked = 0, hidden = 0, absent = 0, shortest = SIZE_MAX;
		char first_hidden[PATH_MAX] = "";
		json_t *f = NULL;

		if (!b || (g->nearest_rel != HW_TOPO_PIX && g->nearest_rel != HW_TOPO_PXB))
			continue; /* traffic crosses the host bridge anyway: ACS changes nothing */
		snprintf(obj, sizeof(obj), "GPU%u", g->index);
		common = hw_pci_common_path(a, b);
		for (int side = 0; side < 2; side++) {
			const struct hw_pci *p = side ? b : a;

			for (size_t k = common; k < p->path_len; k++) {
				uint8_t cfg[4096 + 1];
				ssize_t n;
				int ctl;

				/* through the context: a snapshot records it, and replays this check */
				diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/config",
					 p->path[k]);
				n = diag_sys_read(d, path, (char *)cfg, sizeof(cfg));
				ctl = n < 0 ? -2 : hw_pci_acs_control(cfg, (size_t)n);
				if (ctl == -2) {
					/* why it is hidden: no file (a snapshot or copied tree), or a dump cut at
					 * 64 bytes (the kernel's answer to non-root) or short for another reason */
					hidden++;
					if (n < 0)
						absent++;
					else if ((size_t)n < shortest)
						shortest = (size_t)n;
					if (!first_hidden[0])
						str_copy(first_hidden, sizeof(first_hidden), path);
					continue;
				}
				checked++;
				if (ctl < 0 || !(ctl & (HW_PCI_ACS_P2P_REQUEST_REDIRECT |
							HW_PCI_ACS_P2P_COMPLETION_REDIRECT)))
					continue;
				f = diag_add(
					d, DIAG_WARN, obj,
					"ACS on bridge %s redirects peer-to-peer traffic to the root complex: "
					"GPUDirect RDMA between %s and %s crosses the CPU",
					p->path[k], obj, g->nearest->name);
				diag_evidence(
					f, path,
					"ACS Control 0x%04x (P2P Request Redirect %s, Completion Redirect %s)",
					(unsigned)ctl,
					ctl & HW_PCI_ACS_P2P_REQUEST_REDIRECT ? "on" : "off",
					ctl & HW_PCI_ACS_P2P_COMPLETION_REDIRECT ? "on" : "off");
				diag_fix(
					f,
					"Disable ACS redirect on the switch ports between them (BIOS \"ACS\" setting, or "
					"setpci -s %s ECAP_ACS+0x6.w=0000 at boot) and run the IOMMU in passthrough (iommu=pt).",
					p->path[k]);
			}
		}
		if (f)
			continue;
		if (checked)
			diag_add(d, DIAG_OK, obj,
				 "no ACS redirect on the %zu bridge(s) between %s and %s", checked,
				 obj, g->nearest->name);
		else if (hidden && absent)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: %zu have no PCI config file "
				"in this tree (a snapshot or copy without config space)",
				hidden, g->nearest->name, absent);
		else if (hidden && geteuid() != 0)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: PCI extended config space "
				"needs root (run doctor as root)",
				hidden, g->nearest->name);
		else if (hidden)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: their config files hold "
				"%zu bytes or fewer, not the extended space (4096) that root reads on a live node",
				hidden, g->nearest->name, shortest);
		if (hidden)
			diag_evidence(f, first_hidden, "%s", absent ? "(absent)" : "(short)");
	}
}
