/* SPDX-License-Identifier: Apache-2.0 */
/* netdevs under class/net: the PCI function behind each, IPoIB vs Ethernet, bonds. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

#define ARPHRD_ETHER_	   1
#define ARPHRD_INFINIBAND_ 32

static const char *basename_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int hw_path_parent_bdf(const char *path, char bdf[HW_BDF_MAX])
{
	const char *p = path, *c;
	char comp[HW_BDF_MAX];
	bool found = false;
	size_t l;

	/* the device's PCI function is the last BDF-shaped component */
	while ((c = hw_path_next(&p, &l)))
		if (hw_comp_bdf(c, l, comp)) {
			memcpy(bdf, comp, HW_BDF_MAX - 3); /* the 12 bytes and their NUL */
			found = true;
		}
	return found ? 0 : -ENOENT;
}

static int load_bond(struct hw_build *b, size_t i, const struct hw_dir *nd)
{
	struct hw_netdev *n = &b->node->netdevs[i];
	struct hw_dir bd;
	char buf[512];
	int r;

	r = hw_dir_open(b->ctx, nd, "bonding", &bd);
	if (r < 0)
		return r == -ENOENT ? 0 : hw_fail(b->err, nd, "bonding", r);
	n->kind = HW_NETDEV_BOND;
	n->bond = calloc(1, sizeof(*n->bond));
	if (!n->bond) {
		hw_dir_close(&bd);
		return -ENOMEM;
	}
	r = hw_dir_read(b->ctx, &bd, "mode", buf, sizeof(buf));
	if (r >= 0 &&
	    hw_parse_bond_mode(buf, n->bond->mode, sizeof(n->bond->mode), &n->bond->mode_id) < 0)
		str_copy(n->bond->mode, sizeof(n->bond->mode), buf);
	r = hw_read_opt(b->ctx, &bd, "slaves", buf, sizeof(buf));
	if (r >= 0 && !(b->bond_slaves[i] = strdup(buf)))
		r = -ENOMEM;
	if (r >= 0)
		r = hw_read_opt(b->ctx, &bd, "active_slave", b->bond_active[i], HW_IFNAME_MAX);
	hw_dir_close(&bd);
	return r < 0 ? hw_fail(b->err, &bd, "slaves", r) : 0;
}

static int load_netdev(struct hw_build *b, size_t i, const struct hw_dir *class_net,
		       const char *name)
{
	struct hw_netdev *n = &b->node->netdevs[i];
	struct hw_dir nd;
	char buf[256], link[PATH_MAX];
	long long v;
	int r;

	str_copy(n->name, sizeof(n->name), name);
	n->carrier = n->dev_port = n->dev_id = -1;
	r = hw_dir_open_link(b->ctx, class_net, name, link, sizeof(link), &nd);
	if (r < 0)
		return hw_fail(b->err, class_net, name, r);
	if ((r = hw_read_int(b->ctx, &nd, "ifindex", 10, &v)) < 0)
		goto fail_ifindex;
	n->ifindex = (int)v;
	if (hw_read_int(b->ctx, &nd, "type", 10, &v) >= 0)
		n->type = (unsigned)v;
	n->kind = n->type == ARPHRD_INFINIBAND_ ? HW_NETDEV_IPOIB
		  : n->type == ARPHRD_ETHER_	? HW_NETDEV_ETHER
						: HW_NETDEV_OTHER;
	hw_read_opt(b->ctx, &nd, "operstate", n->operstate, sizeof(n->operstate));
	/* carrier reads EINVAL while the link is administratively down: unknown, not an error */
	if (hw_read_int(b->ctx, &nd, "carrier", 10, &v) >= 0)
		n->carrier = v != 0;
	if (hw_read_int(b->ctx, &nd, "mtu", 10, &v) >= 0)
		n->mtu = (unsigned)v;
	hw_read_opt(b->ctx, &nd, "address", n->address, sizeof(n->address));
	if (hw_read_int(b->ctx, &nd, "addr_len", 10, &v) >= 0)
		n->addr_len = (unsigned)v;
	if (hw_read_int(b->ctx, &nd, "dev_port", 0, &v) >= 0)
		n->dev_port = (int)v;
	if (hw_read_int(b->ctx, &nd, "dev_id", 0, &v) >= 0)
		n->dev_id = (int)v;
	/* The class link's own path names the PCI function even when the netdev's parent is not
	 * the function itself (virtio0, an auxiliary device): .../0000:00:03.0/virtio0/net/eth0 */
	if (link[0])
		hw_path_parent_bdf(link, b->netdev_bdf[i]);
	if (hw_dir_readlink(b->ctx, &nd, "master", buf, sizeof(buf)) >= 0)
		str_copy(b->netdev_master[i], HW_IFNAME_MAX, basename_of(buf));
	/* a bond is a virtual netdev (devices/virtual/net/bondN: the bonding driver gives it no
	 * parent device): one behind a PCI function has no bonding directory to probe for */
	r = b->netdev_bdf[i][0] ? 0 : load_bond(b, i, &nd);
	hw_dir_close(&nd);
	return r;
fail_ifindex:
	hw_dir_close(&nd);
	return hw_fail(b->err, &nd, "ifindex", r);
}

struct netdev_job {
	const struct hw_dir *class_net;
	char **names;
};

static int netdev_job(struct hw_build *b, size_t i, void *ud)
{
	struct netdev_job *j = ud;
	return hw_load_item(b, i, j->class_net, j->names[i], load_netdev);
}

/* Drop the netdevs that vanished while read; nothing points at them yet. */
static void compact_netdevs(struct hw_build *b)
{
	size_t k = 0;

	for (size_t i = 0; i < b->node->n_netdevs; i++) {
		if (b->gone[i]) {
			if (b->node->netdevs[i].bond)
				free(b->node->netdevs[i].bond->slaves);
			free(b->node->netdevs[i].bond);
			free(b->bond_slaves[i]);
			continue;
		}
		if (k != i) {
			b->node->netdevs[k] = b->node->netdevs[i];
			memcpy(b->netdev_bdf[k], b->netdev_bdf[i], sizeof(b->netdev_bdf[k]));
			memcpy(b->netdev_master[k], b->netdev_master[i],
			       sizeof(b->netdev_master[k]));
			memcpy(b->bond_active[k], b->bond_active[i], sizeof(b->bond_active[k]));
			b->bond_slaves[k] = b->bond_slaves[i];
		}
		k++;
	}
	b->node->n_netdevs = k;
}

int hw_load_netdevs(struct hw_build *b)
{
	struct hw_dir class_net;
	char **names = NULL;
	size_t n = 0;
	int r;

	r = hw_dir_open_links(b->ctx, "class/net", &class_net);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return hw_fail(b->err, NULL, "class/net", r);
	r = hw_dir_list(b->ctx, &class_net, "", &names, &n);
	if (r < 0) {
		hw_dir_close(&class_net);
		return hw_fail(b->err, &class_net, NULL, r);
	}
	b->node->netdevs = calloc(n ? n : 1, sizeof(*b->node->netdevs));
	b->netdev_bdf = calloc(n ? n : 1, sizeof(*b->netdev_bdf));
	b->netdev_master = calloc(n ? n : 1, sizeof(*b->netdev_master));
	b->bond_slaves = calloc(n ? n : 1, sizeof(*b->bond_slaves));
	b->bond_active = calloc(n ? n : 1, sizeof(*b->bond_active));
	if (!b->node->netdevs || !b->netdev_bdf || !b->netdev_master || !b->bond_slaves ||
	    !b->bond_active)
		r = -ENOMEM;
	if (r >= 0) {
		struct netdev_job job = { &class_net, names };
		size_t k = 0;

		/* class/net also holds bonding_masters, a file, once the bonding module is loaded */
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(names[i], "bonding_masters")) {
				free(names[i]);
				continue;
			}
			names[k++] = names[i];
		}
		if (names)
			names[k] = NULL;
		n = k;
		b->node->n_netdevs = n; /* every slot is zeroed: a partial load frees cleanly */
		r = hw_items_begin(b, n);
		if (r >= 0)
			r = hw_for_items(b, n, netdev_job, &job);
		if (r >= 0)
			compact_netdevs(b);
		r = hw_items_end(b, r);
	}
	strv_free(names);
	hw_dir_close(&class_net);
	return r < 0 ? r : 0;
}

/* Once every netdev exists: master pointers and bond slave lists. */
void hw_link_netdevs(struct hw_build *b)
{
	struct hw_node *node = b->node;

	for (size_t i = 0; i < node->n_netdevs; i++) {
		struct hw_netdev *n = &node->netdevs[i];

		if (b->netdev_master[i][0])
			n->master = hw_node_netdev(node, b->netdev_master[i]);
		if (b->netdev_bdf[i][0])
			n->pci = hw_node_pci(node, b->netdev_bdf[i]);
		if (!n->bond)
			continue;
		if (b->bond_active[i][0])
			n->bond->active = hw_node_netdev(node, b->bond_active[i]);
		for (char *save = NULL,
			  *tok = b->bond_slaves[i] ? strtok_r(b->bond_slaves[i], " ", &save) : NULL;
		     tok; tok = strtok_r(NULL, " ", &save)) {
			struct hw_netdev *s = hw_node_netdev(node, tok), **ns;

			if (!s)
				continue;
			ns = realloc(n->bond->slaves, (n->bond->n_slaves + 1) * sizeof(*ns));
			if (!ns)
				break;
			n->bond->slaves = ns;
			ns[n->bond->n_slaves++] = s;
		}
	}
}

int hw_netdev_read_carrier(struct hw_ctx *ctx, const char *ifname, int *carrier)
{
	char path[64], buf[16];
	int r;

	if (!str_is_safe_name(ifname, HW_IFNAME_MAX - 1))
		return -EINVAL;
	snprintf(path, sizeof(path), "class/net/%s/carrier", ifname);
	r = hw_dir_read(ctx, NULL, path, buf, sizeof(buf));
	if (r == -EINVAL) { /* administratively down */
		*carrier = 0;
		return 0;
	}
	if (r < 0)
		return r;
	*carrier = strcmp(buf, "0") != 0;
	return 0;
}
