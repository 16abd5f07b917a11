/* SPDX-License-Identifier: Apache-2.0 */
/* hw_load(): read the node in dependency order; lookups; hw_node_free(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"

void hw_build_free(struct hw_build *b)
{
	if (b->bond_slaves)
		for (size_t i = 0; i < b->node->n_netdevs; i++)
			free(b->bond_slaves[i]);
	free(b->bond_slaves);
	free(b->bond_active);
	free(b->netdev_bdf);
	free(b->netdev_master);
	free(b->rdma_bdf);
}

int hw_load(struct hw_ctx *ctx, unsigned flags, struct hw_node **ret, struct hw_error *err)
{
	struct hw_node *node = calloc(1, sizeof(*node));
	struct hw_error dummy = { 0 };
	struct hw_build b = { .ctx = ctx, .flags = flags, .node = node, .err = err ? err : &dummy };
	int r;

	if (!node)
		return -ENOMEM;
	if ((r = hw_load_netdevs(&b)) < 0 || (r = hw_load_rdma(&b)) < 0 ||
	    (r = hw_load_pci(&b)) < 0)
		goto fail;
	hw_link_netdevs(&b);
	if (!(flags & HW_LOAD_NETNS) &&
	    ((r = hw_load_chardevs(&b)) < 0 || (r = hw_load_kernel(&b)) < 0))
		goto fail;
	hw_map_ports(&b);
	if (!(flags & HW_LOAD_NETNS))
		hw_load_gpus_topology(node);
	hw_build_free(&b);
	*ret = node;
	return 0;
fail:
	hw_build_free(&b);
	hw_node_free(node);
	return r;
}

void hw_node_free(struct hw_node *node)
{
	if (!node)
		return;
	HW_NODE_FOREACH_PORT(node, p)
	{
		free(p->gids);
		free(p->pkeys);
	}
	for (size_t i = 0; i < node->n_rdma; i++)
		free(node->rdma[i].ports);
	free(node->rdma);
	for (size_t i = 0; i < node->n_pci; i++) {
		free(node->pci[i].path);
		free(node->pci[i].vfs);
		free(node->pci[i].netdevs);
		free(node->pci[i].rdma);
	}
	free(node->pci);
	for (size_t i = 0; i < node->n_netdevs; i++) {
		if (node->netdevs[i].bond)
			free(node->netdevs[i].bond->slaves);
		free(node->netdevs[i].bond);
	}
	free(node->netdevs);
	free(node->chardevs);
	free(node->gpus);
	free(node->kernel.modules);
	free(node->skipped);
	free(node);
}

/* The arrays are sorted by name (strcmp), as read from sorted directory listings. */
static int cmp_rdma(const void *key, const void *el)
{
	return strcmp(key, ((const struct hw_rdma_dev *)el)->name);
}
static int cmp_netdev(const void *key, const void *el)
{
	return strcmp(key, ((const struct hw_netdev *)el)->name);
}
static int cmp_pci(const void *key, const void *el)
{
	return strcmp(key, ((const struct hw_pci *)el)->bdf);
}

struct hw_rdma_dev *hw_node_rdma(const struct hw_node *node, const char *name)
{
	return name && node->n_rdma
		       ? bsearch(name, node->rdma, node->n_rdma, sizeof(*node->rdma), cmp_rdma)
		       : NULL;
}

struct hw_netdev *hw_node_netdev(const struct hw_node *node, const char *name)
{
	return name && node->n_netdevs ? bsearch(name, node->netdevs, node->n_netdevs,
						 sizeof(*node->netdevs), cmp_netdev)
				       : NULL;
}

struct hw_pci *hw_node_pci(const struct hw_node *node, const char *bdf)
{
	return bdf && node->n_pci
		       ? bsearch(bdf, node->pci, node->n_pci, sizeof(*node->pci), cmp_pci)
		       : NULL;
}

struct hw_port *hw_rdma_port(const struct hw_rdma_dev *dev, unsigned num)
{
	if (dev)
		HW_DEV_FOREACH_PORT(dev, p)
	if (p->num == num)
		return p;
	return NULL;
}

struct hw_port *hw_node_next_port(const struct hw_node *node, const struct hw_port *prev)
{
	/* the next port of the same device, else the first port of the next device that has one */
	size_t i = prev ? (size_t)(prev->dev - node->rdma) : 0;

	if (prev && prev + 1 < prev->dev->ports + prev->dev->n_ports)
		return (struct hw_port *)(prev + 1);
	for (i += prev ? 1 : 0; i < node->n_rdma; i++)
		if (node->rdma[i].n_ports)
			return node->rdma[i].ports;
	return NULL;
}
