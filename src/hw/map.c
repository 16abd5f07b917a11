/* SPDX-License-Identifier: Apache-2.0 */
/* Which netdev belongs to which RDMA port: ibdev2netdev's three rules, in its order. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/strutil.h"

/* IPoIB hardware address: 4 bytes QPN/flags + the 16-byte GID; bytes 13..20 are the port
 * GUID, written to hex (16 lower-case digits). 0, or -1 when addr is not such an address. */
static int ipoib_addr_guid(const char *addr, char hex[17])
{
	size_t h = 0;
	int byte = 0;

	for (const char *p = addr; *p && byte < 20; p += 3, byte++) {
		if (byte >= 12 && h + 2 <= 16) {
			hex[h++] = (char)tolower((unsigned char)p[0]);
			hex[h++] = (char)tolower((unsigned char)p[1]);
		}
		if (p[2] != ':' && p[2] != '\0')
			return -1;
		if (!p[2]) {
			byte++;
			break;
		}
	}
	hex[h] = '\0';
	return byte == 20 && h == 16 ? 0 : -1;
}

/* "xxxx:xxxx:xxxx:xxxx" as 16 lower-case hex digits. */
static int guid_hex(const char *guid, char hex[17])
{
	size_t w = 0;

	for (const char *p = guid; *p && w < 16; p++)
		if (*p != ':')
			hex[w++] = (char)tolower((unsigned char)*p);
	hex[w] = '\0';
	return w == 16 ? 0 : -1;
}

/* The node's IPoIB netdevs by the port GUID in their address, so that each port finds its own
 * with one search (a pass over every netdev per port was a million compares on 1024 VFs). */
struct ipoib_key {
	char guid[17];
	bool child; /* a pkey child (ib0.8001): its parent comes first */
	size_t index;
	struct hw_netdev *n;
};

static int cmp_ipoib_key(const void *a, const void *b)
{
	const struct ipoib_key *x = a, *y = b;
	int c = strcmp(x->guid, y->guid);

	if (c)
		return c;
	if (x->child != y->child)
		return x->child ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_ipoib_guid(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ipoib_key *)elem)->guid);
}

/* A bonding master carries its active slave's address: only IPoIB netdevs, as ibdev2netdev. */
static struct ipoib_key *ipoib_index(const struct hw_node *node, size_t *ret_n)
{
	struct ipoib_key *v = calloc(node->n_netdevs + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < node->n_netdevs; i++) {
		struct hw_netdev *d = &node->netdevs[i];

		if (d->kind != HW_NETDEV_IPOIB || ipoib_addr_guid(d->address, v[n].guid) < 0)
			continue;
		v[n].child = strchr(d->name, '.') != NULL;
		v[n].index = i;
		v[n++].n = d;
	}
	qsort(v, n, sizeof(*v), cmp_ipoib_key);
	*ret_n = n;
	return v;
}

/* The first entry of the port's GUID: its parent netdev if it has one, else its first child. */
static struct hw_netdev *by_ipoib_guid(const struct ipoib_key *v, size_t n, const struct hw_port *p)
{
	const struct ipoib_key *k;
	char hex[17];

	if (!v || !strcmp(p->port_guid, "0000:0000:0000:0000") || guid_hex(p->port_guid, hex) < 0)
		return NULL;
	k = bsearch(hex, v, n, sizeof(*v), cmp_ipoib_guid);
	while (k && k > v && !strcmp(k[-1].guid, hex))
		k--;
	return k ? k->n : NULL;
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
	size_t n_keys = 0;
	struct ipoib_key *keys = ipoib_index(node, &n_keys);

	HW_NODE_FOREACH_PORT(node, p)
	{
		struct hw_netdev *n = NULL;

		if (p->link_layer == HW_LINK_IB) {
			if ((n = by_ipoib_guid(keys, n_keys, p)))
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
	free(keys);
}
