/* SPDX-License-Identifier: Apache-2.0 */
/* Which netdev belongs to which RDMA port: ibdev2netdev's three rules, in its order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/strutil.h"

/* IPoIB hardware address: 4 bytes QPN/flags + the 16-byte GID; bytes 13..20 are the port
 * GUID. Compare against "xxxx:xxxx:xxxx:xxxx" without allocating. */
static bool ipoib_addr_has_guid(const char *addr, const char *guid)
{
	char hex[17] = { 0 }, want[17] = { 0 };
	size_t h = 0, w = 0;
	int byte = 0;

	for (const char *p = addr; *p && byte < 20; p += 3, byte++) {
		if (byte >= 12 && h + 2 <= 16) {
			hex[h++] = p[0];
			hex[h++] = p[1];
		}
		if (p[2] != ':' && p[2] != '\0')
			return false;
		if (!p[2]) {
			byte++;
			break;
		}
	}
	if (byte != 20)
		return false;
	for (const char *p = guid; *p && w < 16; p++)
		if (*p != ':')
			want[w++] = *p;
	return h == 16 && w == 16 && strcasecmp(hex, want) == 0;
}

static struct hw_netdev *by_ipoib_guid(struct hw_node *node, const struct hw_port *p)
{
	struct hw_netdev *fallback = NULL;

	if (!strcmp(p->port_guid, "0000:0000:0000:0000"))
		return NULL;
	for (size_t i = 0; i < node->n_netdevs; i++) {
		struct hw_netdev *n = &node->netdevs[i];

		/* a bonding master carries its active slave's address: skip it, as ibdev2netdev does */
		if (n->kind != HW_NETDEV_IPOIB || !ipoib_addr_has_guid(n->address, p->port_guid))
			continue;
		if (!strchr(n->name, '.')) /* the parent before its pkey children (ib0.8001) */
			return n;
		if (!fallback)
			fallback = n;
	}
	return fallback;
}

static struct hw_netdev *by_pci_function(const struct hw_port *p)
{
	const struct hw_pci *pci = p->dev->pci;
	struct hw_netdev *first = NULL;

	if (!pci)
		return NULL;
	for (size_t i = 0; i < pci->n_netdevs; i++) {
		struct hw_netdev *n = pci->netdevs[i];

		/* mlx4: one function, two ports; dev_port (or dev_id) tells the port apart */
		if (n->dev_port >= 0 && (unsigned)n->dev_port + 1 == p->num && pci->n_netdevs > 1)
			return n;
		if (!first)
			first = n;
	}
	if (pci->n_netdevs > 1) {
		for (size_t i = 0; i < pci->n_netdevs; i++)
			if (pci->netdevs[i]->dev_id >= 0 &&
			    (unsigned)pci->netdevs[i]->dev_id + 1 == p->num)
				return pci->netdevs[i];
	}
	return first;
}

void hw_map_ports(struct hw_build *b)
{
	struct hw_node *node = b->node;

	HW_NODE_FOREACH_PORT(node, p)
	{
		struct hw_netdev *n = NULL;

		if (p->link_layer == HW_LINK_IB) {
			if ((n = by_ipoib_guid(node, p)))
				p->netdev_via = HW_NDEV_IPOIB_GUID;
		} else if (p->n_gids && p->gids[0].index == 0 && p->gids[0].ndev[0]) {
			if ((n = hw_node_netdev(node, p->gids[0].ndev)))
				p->netdev_via = HW_NDEV_GID_NDEV;
		}
		if (!n && (n = by_pci_function(p)))
			p->netdev_via = HW_NDEV_PCI_FUNCTION;
		p->netdev = n;
		/* RoCE LAG: the GIDs belong to the bond master */
		if (n && n->bond && p->link_layer == HW_LINK_ETH)
			p->dev->lag = n;
	}
}
