/* SPDX-License-Identifier: Apache-2.0 */
/* Node checks of ports and links: port state, subnet manager, IPoIB carrier, RoCE GIDs, bonds
 * and RoCE LAG, MTUs. They read the hardware model only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* ---- port.state ------------------------------------------------------------------------------ */

static void port_down_cause(const struct diag *d, json_t *f, const struct hw_port *p)
{
	const struct hw_netdev *nd = p->netdev;
	bool eth = p->link_layer == HW_LINK_ETH;

	if (eth && nd) {
		diag_ev_netdev(d, f, nd, "operstate");
		diag_ev_netdev(d, f, nd, "carrier");
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
		f = diag_add(d, DIAG_FAIL, diag_port_obj(p, obj, sizeof(obj)),
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

		if (!diag_dev_in_scope(d, dev))
			continue;
		if (port_unknown(p)) {
			port_attr_errors(d, p);
			continue;
		}
		if (hw_port_state_is_active(p->state)) {
			f = diag_add(d, DIAG_OK, diag_port_obj(p, obj, sizeof(obj)), "%s %s, %s",
				     p->state_name, p->phys_state_name,
				     p->rate.raw[0] ? p->rate.raw : "rate unknown");
			diag_ev_state(d, f, p);
			continue;
		}
		f = diag_add(
			d, DIAG_FAIL, diag_port_obj(p, obj, sizeof(obj)),
			"%s/%s (%s): %s; perftest says \"Port number %u state is %s\", NCCL skips the port",
			p->state_name, p->phys_state_name, hw_link_layer_name(p->link_layer),
			down_title(p), p->num, perftest_state(p->state));
		diag_ev_state(d, f, p);
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

		if (!diag_dev_in_scope(d, dev))
			continue;
		if (port_unknown(p)) {
			diag_add(d, DIAG_SKIP, diag_port_obj(p, obj, sizeof(obj)),
				 "port attributes unreadable (see port.state)");
			continue;
		}
		if (p->link_layer != HW_LINK_IB)
			continue;
		if (p->phys_state != HW_PHYS_LINK_UP) {
			diag_add(
				d, DIAG_SKIP, diag_port_obj(p, obj, sizeof(obj)),
				"physical link not up (%s): the subnet manager cannot reach the port",
				p->phys_state_name);
			continue;
		}
		if (p->sm_lid == 0 || p->lid == 0 || p->lid == 0xffff) {
			f = diag_add(
				d, DIAG_FAIL, diag_port_obj(p, obj, sizeof(obj)),
				"no subnet manager: sm_lid 0x%x, lid 0x%x (ibv_devinfo shows port_lid %u)",
				p->sm_lid, p->lid, p->lid);
			snprintf(v, sizeof(v), "0x%x", p->sm_lid);
			diag_ev_port(d, f, p, "sm_lid", v);
			snprintf(v, sizeof(v), "0x%x", p->lid);
			diag_ev_port(d, f, p, "lid", v);
			diag_fix(
				f,
				"Run a subnet manager on the fabric (systemctl enable --now opensm on one node, or the "
				"managed switch's SM); `sminfo` from a node with ib_umad shows whether one answers.");
			continue;
		}
		f = diag_add(d, DIAG_OK, diag_port_obj(p, obj, sizeof(obj)),
			     "subnet manager at lid %u, port lid %u", p->sm_lid, p->lid);
		snprintf(v, sizeof(v), "0x%x", p->sm_lid);
		diag_ev_port(d, f, p, "sm_lid", v);
	}
}

/* ---- port.ipoib ------------------------------------------------------------------------------ */

char *diag_active_hcas(const struct hw_node *n, enum hw_link_layer ll)
{
	char *list = NULL;

	for (size_t i = 0; i < n->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &n->rdma[i];
		bool active = false;

		if (diag_dev_is_vf(dev))
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

		if (!diag_dev_in_scope(d, dev) || port_unknown(p))
			continue;
		if (p->link_layer != HW_LINK_IB || !nd || nd->kind != HW_NETDEV_IPOIB)
			continue;
		master = nd->master;
		if (!hw_port_state_is_active(p->state) && master && master->carrier == 1) {
			_cleanup_free_ char *list = diag_active_hcas(d->node, HW_LINK_IB);

			f = diag_add(
				d, DIAG_WARN, diag_port_obj(p, obj, sizeof(obj)),
				"%s reports Up while %s port %u is %s: a bond's carrier hides a dead slave port",
				master->name, dev->name, p->num, p->state_name);
			diag_ev_state(d, f, p);
			diag_ev_netdev(d, f, master, "carrier");
			diag_ev_netdev(d, f, nd, "carrier");
			diag_fix(
				f,
				"Read the port state, not ibdev2netdev's (Up/Down), which is the netdev carrier: "
				"rdma link show %s/%u. Until the port is fixed, name only ACTIVE HCAs in NCCL_IB_HCA "
				"(=%s) and the device plugin selectors.",
				dev->name, p->num, list ? list : "<an ACTIVE HCA>");
		} else if (hw_port_state_is_active(p->state) && nd->carrier != 1) {
			f = diag_add(
				d, DIAG_WARN, diag_port_obj(p, obj, sizeof(obj)),
				"IB port ACTIVE but IPoIB %s is %s: ibdev2netdev's \"(Down)\" is this netdev, not the port; "
				"verbs work, IP over this port does not",
				nd->name, nd->carrier < 0 ? "admin down" : "without carrier");
			diag_ev_state(d, f, p);
			diag_ev_netdev(d, f, nd, "operstate");
			diag_ev_netdev(d, f, nd, "carrier");
			diag_fix(
				f,
				"Only IP over IB needs it (rdma_cm, perftest -R, NCCL bootstrap over %s): ip link set %s up "
				"and give it an address; RDMA verbs (ib_write_bw, NCCL NET/IB) already work.",
				nd->name, nd->name);
		} else {
			f = diag_add(d, DIAG_OK, diag_port_obj(p, obj, sizeof(obj)),
				     "IPoIB %s carrier %d follows the port (%s)", nd->name,
				     nd->carrier, p->state_name);
			diag_ev_netdev(d, f, nd, "carrier");
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

		if (!diag_dev_in_scope(d, dev))
			continue;
		if (p->link_layer != HW_LINK_ETH)
			continue;
		diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/gids", dev->name,
			 p->num);
		if (p->n_gids == 0) {
			f = diag_add(
				d, hw_port_state_is_active(p->state) ? DIAG_FAIL : DIAG_WARN,
				diag_port_obj(p, obj, sizeof(obj)),
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
			diag_add(d, DIAG_SKIP, diag_port_obj(p, obj, sizeof(obj)),
				 "no RoCE v2 IPv4 GID, port not active");
			continue;
		}
		if (!g) {
			f = diag_add(
				d, DIAG_WARN, diag_port_obj(p, obj, sizeof(obj)),
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
		f = diag_add(d, DIAG_OK, diag_port_obj(p, obj, sizeof(obj)),
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
					diag_ev_netdev(d, f, bd->slaves[k], "carrier");
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
	if (p->netdev == nd && p->link_layer == HW_LINK_ETH && !diag_dev_is_vf(p->dev))
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
			diag_ev_netdev(d, f, nd, "mtu");
			diag_ev_netdev(d, f, nd->master, "mtu");
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
				diag_ev_netdev(d, f, nd, "mtu");
				diag_fix(f, "ip link set %s mtu %s", nd->name,
					 connected ? "65520"
						   : "4092 (with a 4K fabric MTU) or 2044");
			} else {
				f = diag_add(d, DIAG_OK, nd->name, "IPoIB %s MTU %u",
					     connected ? "connected" : "datagram", nd->mtu);
				diag_ev_netdev(d, f, nd, "mtu");
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
			diag_ev_netdev(d, f, nd, "mtu");
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
			diag_ev_netdev(d, f, nd, "mtu");
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
			diag_ev_netdev(d, f, roce_first, "mtu");
			diag_ev_netdev(d, f, nd, "mtu");
			diag_fix(
				f,
				"Use one MTU (1500 or 9000) on every RoCE netdev and switch port; the path MTU is the "
				"smallest on the way.");
		}
	}
}
