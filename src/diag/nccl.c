/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_* environment checks: the variables are read from --env FILE or the environment and
 * compared with the HCAs, ports and netdevs this pod can use, with NCCL's own matching rules
 * (parse.c: nccl_list_*). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

static json_t *env_finding(struct diag *d, enum diag_status st, const char *var, const char *val,
			   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static json_t *env_finding(struct diag *d, enum diag_status st, const char *var, const char *val,
			   const char *fmt, ...)
{
	_cleanup_free_ char *title = NULL;
	va_list ap;
	json_t *f;

	va_start(ap, fmt);
	if (vasprintf(&title, fmt, ap) < 0)
		title = NULL;
	va_end(ap);
	f = diag_add(d, st, var, "%s", title ? title : "");
	diag_evidence(f, d->env_source, "%s=%s", var, val);
	return f;
}

/* Devices the entry selects by name (ports aside), in the node's order: how many, and the
 * first six as "a, b, c" in *list (malloc'd; NULL when out of memory). */
static size_t entry_matches(const struct diag *d, const struct diag_nccl_list *l,
			    const struct diag_nccl_entry *e, bool others_only, char **list)
{
	size_t count = 0;

	for (size_t i = 0; i < d->node->n_rdma; i++) {
		const char *name = d->node->rdma[i].name;

		if (!diag_nccl_entry_match(l, e, name, -1) ||
		    (others_only && !strcmp(name, e->name)))
			continue;
		if (count++ < 6)
			str_append_sep(list, ", ", "%s", name);
	}
	if (count > 6)
		str_append_sep(list, ", ", "... (%zu)", count);
	return count;
}

void diag_check_nccl_ib_hca(struct diag *d)
{
	const char *val = diag_env_get(&d->env, "NCCL_IB_HCA");
	struct diag_nccl_list l;
	_cleanup_free_ char *sel = NULL;
	size_t n_sel = 0;
	json_t *f;

	if (!val || !*val)
		return;
	if (diag_nccl_list_parse(val, &l) < 0) {
		f = env_finding(d, DIAG_FAIL, "NCCL_IB_HCA", val,
				"cannot be parsed as [^][=]name[:port],...");
		diag_fix(
			f,
			"Write it as NCCL does: an optional ^ (exclude), an optional = (exact names), then "
			"name[:port] items separated by commas, e.g. =mlx5_0:1,mlx5_1:1.");
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct diag_nccl_entry *e = &l.e[i];
		const struct hw_rdma_dev *dev = hw_node_rdma(d->node, e->name);
		_cleanup_free_ char *names = NULL, *others = NULL;
		size_t n = entry_matches(d, &l, e, false, &names);

		if (n == 0) {
			f = env_finding(d, l.exclude ? DIAG_WARN : DIAG_FAIL, "NCCL_IB_HCA", val,
					"\"%s\" names no HCA here%s", e->name,
					l.exclude ? " (the exclusion does nothing)"
						  : ": NCCL finds no device by that name");
			diag_fix(
				f,
				"Use the names in /sys/class/infiniband (rdmak list); udev may have renamed them "
				"(ibp*, rocep*) and RoCE LAG replaces mlx5_N with mlx5_bond_N.");
			continue;
		}
		if (!l.exact && entry_matches(d, &l, e, true, &others) > 0) {
			f = env_finding(d, DIAG_WARN, "NCCL_IB_HCA", val,
					"\"%s\" is a prefix: it also %s %s", e->name,
					l.exclude ? "excludes" : "selects", others ? others : "");
			diag_fix(f,
				 "Prefix the list with = to match exact names: NCCL_IB_HCA=%s=%s.",
				 l.exclude ? "^" : "", val + (l.exclude ? 1 : 0));
		}
		if (l.exclude || !dev)
			continue;
		if (e->port > 0 && !hw_rdma_port(dev, (unsigned)e->port)) {
			f = env_finding(d, DIAG_FAIL, "NCCL_IB_HCA", val,
					"%s has no port %d (it has %zu)", dev->name, e->port,
					dev->n_ports);
			diag_fix(f, "Name an existing port (%s:1) or drop the port.", dev->name);
			continue;
		}
		if (d->scope == DIAG_POD && !diag_dev_usable(dev)) {
			f = env_finding(d, DIAG_FAIL, "NCCL_IB_HCA", val,
					"%s is named but not usable in this pod (no %s): NCCL "
					"\"NET/IB : Unable to open device %s\" or skips it",
					dev->name,
					dev->uverbs ? dev->uverbs->node.path : "uverbs device",
					dev->name);
			diag_fix(
				f,
				"Name only the HCAs the pod was given (pod.devnodes lists them), or request the resource "
				"that includes %s.",
				dev->name);
			continue;
		}
		HW_DEV_FOREACH_PORT(dev, p)
		{
			_cleanup_free_ char *act = NULL;

			if ((e->port > 0 && p->num != (unsigned)e->port) ||
			    hw_port_state_is_active(p->state))
				continue;
			act = diag_active_hcas(d->node, p->link_layer);
			f = env_finding(d, DIAG_FAIL, "NCCL_IB_HCA", val,
					"%s port %u is %s: NCCL skips non-ACTIVE ports", dev->name,
					p->num, p->state_name);
			diag_fix(
				f,
				"Drop %s from NCCL_IB_HCA until the port is fixed (see port.state): NCCL_IB_HCA==%s.",
				dev->name, act ? act : "<an ACTIVE HCA>");
		}
	}
	/* What NCCL ends up with. */
	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;

		if (d->scope == DIAG_POD && !diag_dev_usable(dev))
			continue;
		if (!hw_port_state_is_active(p->state) ||
		    !diag_nccl_list_selects(&l, dev->name, (int)p->num))
			continue;
		if (n_sel++ < 8)
			str_append_sep(&sel, ", ", "%s:%u", dev->name, p->num);
	}
	if (n_sel == 0) {
		f = env_finding(d, DIAG_FAIL, "NCCL_IB_HCA", val,
				"selects no usable ACTIVE port: NCCL prints \"NET/IB : No "
				"device found.\" and silently uses sockets");
		diag_fix(
			f,
			"Name ACTIVE ports of HCAs this pod can open (=mlx5_1:1,...), or unset NCCL_IB_HCA.");
		return;
	}
	env_finding(d, DIAG_OK, "NCCL_IB_HCA", val, "selects %zu ACTIVE port%s: %s", n_sel,
		    n_sel == 1 ? "" : "s", sel ? sel : "");
}

void diag_check_nccl_socket_ifname(struct diag *d)
{
	const char *val = diag_env_get(&d->env, "NCCL_SOCKET_IFNAME");
	struct diag_nccl_list l;
	_cleanup_free_ char *sel = NULL;
	char path[PATH_MAX];
	size_t n_sel = 0;
	json_t *f;

	if (!val || !*val)
		return;
	if (diag_nccl_list_parse(val, &l) < 0) {
		f = env_finding(d, DIAG_FAIL, "NCCL_SOCKET_IFNAME", val,
				"cannot be parsed as [^][=]name,...");
		diag_fix(
			f,
			"Write interface names or prefixes separated by commas, e.g. =net1 or ^lo,docker.");
		return;
	}
	for (size_t i = 0; i < d->node->n_netdevs; i++) {
		const char *name = d->node->netdevs[i].name;

		if (!diag_nccl_list_selects(&l, name, -1))
			continue;
		if (n_sel++ < 8)
			str_append_sep(&sel, ", ", "%s", name);
	}
	if (n_sel == 0) {
		f = env_finding(d, DIAG_FAIL, "NCCL_SOCKET_IFNAME", val,
				"matches no interface here: NCCL bootstrap fails "
				"(\"Bootstrap : no socket interface found\")");
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/net"), "%zu interfaces",
			      d->node->n_netdevs);
		diag_fix(
			f,
			"Name an interface of the pod (ip -br link: eth0 for the pod network, net1 for a Multus "
			"attachment); prefixes work unless the list starts with =.");
		return;
	}
	for (size_t i = 0; i < l.n && !l.exclude; i++) {
		bool any = false;

		for (size_t k = 0; k < d->node->n_netdevs && !any; k++)
			any = diag_nccl_entry_match(&l, &l.e[i], d->node->netdevs[k].name, -1);
		if (!any) {
			f = env_finding(d, DIAG_WARN, "NCCL_SOCKET_IFNAME", val,
					"\"%s\" matches no interface here (the others do)",
					l.e[i].name);
			diag_fix(
				f,
				"Drop \"%s\" or fix its name; ranks on other nodes may pick a different interface.",
				l.e[i].name);
		}
	}
	env_finding(d, DIAG_OK, "NCCL_SOCKET_IFNAME", val, "selects %s", sel ? sel : "");
}

void diag_check_nccl_misc(struct diag *d)
{
	const char *dis = diag_env_get(&d->env, "NCCL_IB_DISABLE"),
		   *gid = diag_env_get(&d->env, "NCCL_IB_GID_INDEX");
	const char *gdr = diag_env_get(&d->env, "NCCL_NET_GDR_LEVEL");
	size_t before, roce = 0;
	long long idx;
	json_t *f;

	if (dis && strcmp(dis, "0") != 0 && *dis) {
		f = env_finding(d, DIAG_WARN, "NCCL_IB_DISABLE", dis,
				"NCCL will not use IB/RoCE: all traffic goes over sockets");
		diag_fix(f,
			 "Unset NCCL_IB_DISABLE (or set it to 0) once the pod's RDMA checks pass.");
	}
	if (gdr && (!strcmp(gdr, "LOC") || !strcmp(gdr, "0"))) {
		f = env_finding(d, DIAG_WARN, "NCCL_NET_GDR_LEVEL", gdr,
				"GPUDirect RDMA disabled: GPU buffers are staged "
				"through host memory");
		diag_fix(
			f,
			"Unset it to let NCCL decide from the PCIe topology, or raise it (PXB, PHB).");
	}
	if (!gid || !*gid)
		return;
	if (str_to_i64(gid, 10, &idx) < 0 || idx < -1 || idx > 65535) {
		f = env_finding(d, DIAG_FAIL, "NCCL_IB_GID_INDEX", gid, "not an integer index");
		diag_fix(f, "Use -1 (automatic, NCCL >= 2.21) or the index of a RoCE v2 GID.");
		return;
	}
	if (idx < 0) {
		env_finding(d, DIAG_OK, "NCCL_IB_GID_INDEX", gid, "automatic GID selection");
		return;
	}
	before = json_array_size(d->findings);
	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		const struct hw_gid *g = NULL;

		if (!diag_dev_usable(dev))
			continue;
		if (p->link_layer != HW_LINK_ETH)
			continue;
		roce++;
		for (size_t k = 0; k < p->n_gids; k++)
			if (p->gids[k].index == (unsigned)idx)
				g = &p->gids[k];
		if (!g ||
		    (d->scope == DIAG_POD && (!g->ndev[0] || !hw_node_netdev(d->node, g->ndev)))) {
			f = env_finding(
				d, DIAG_FAIL, "NCCL_IB_GID_INDEX", gid,
				"%s/%u GID %lld is %s: ibv_modify_qp fails with "
				"EINVAL (NCCL's hint: \"the incorrect GID index is forced\")",
				dev->name, p->num, idx,
				g ? "owned by a netdev outside this pod" : "empty");
			diag_fix(
				f,
				"Set NCCL_IB_GID_INDEX=-1 so NCCL picks the RoCE v2 IPv4 GID itself; GID indexes are "
				"not stable across pods (macvlan adds entries).");
		} else if (strcmp(g->type, "RoCE v2") != 0) {
			f = env_finding(d, DIAG_WARN, "NCCL_IB_GID_INDEX", gid,
					"%s/%u GID %lld is %s, not RoCE v2", dev->name, p->num, idx,
					g->type[0] ? g->type : "of unknown type");
			diag_fix(
				f,
				"Use the RoCE v2 entry for the same address (usually the next index) or -1.");
		}
	}
	if (json_array_size(d->findings) == before && roce)
		env_finding(d, DIAG_OK, "NCCL_IB_GID_INDEX", gid,
			    "GID %lld is a RoCE v2 GID of every usable RoCE port", idx);
}
