/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of `rdmak dra`, the kubelet DRA plugin: what its files share. Nobody outside src/dra/
 * includes this.
 *
 * - inventory.c: the node model (src/hw) as DRA devices: a name, a pool, the attributes.
 * - slices.c: the devices as ResourceSlice objects (resource.k8s.io/v1), pool by pool.
 * - main.c: options, --dry-run, the daemon. */
#ifndef RDMAK_DRA_H
#define RDMAK_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"

#define DRA_DRIVER_DEFAULT "rdma.rdmak.io"
/* The API's limits (k8s.io/api/resource/v1): devices per ResourceSlice, attributes and
 * capacities per device, the bytes of a string attribute, the characters of an attribute's name
 * without its domain. */
#define DRA_SLICE_DEVICES_MAX 128
#define DRA_DEVICE_ATTRS_MAX  32
#define DRA_ATTR_STRING_MAX   64
#define DRA_ATTR_NAME_MAX     32
/* A pool's name is the node's and its PF's, "<node>/pci-0000-18-00-0": at most 253 in all. */
#define DRA_POOL_NAME_MAX 253

/* One DRA device: an RDMA device (a PF's, a VF's or a virtual one such as rxe). */
struct dra_device {
	char name[64]; /* DNS label: "pci-0000-18-00-0" */
	char pool[32]; /* the pool's part after "<node>/": "pci-0000-18-00-0" (the PF), "virtual" */
	const struct hw_rdma_dev *dev;
	json_t *attrs; /* {"<name>": {"string"|"int"|"bool": value}} */
	bool healthy;  /* every port of it passes traffic */
};

struct dra_inventory {
	struct dra_device *v; /* sorted by pool, then name */
	size_t n;
	/* "<device>: <why>" of what could not be published as asked (an attribute value longer
	 * than the API allows, a name taken twice): said once at each load */
	char **notes;
	size_t n_notes;
};

/* The devices of node. -ENOMEM. */
int dra_inventory_build(const struct hw_node *node, struct dra_inventory *ret);
void dra_inventory_clear(struct dra_inventory *inv);
const struct dra_device *dra_inventory_find(const struct dra_inventory *inv, const char *name);

/* What every slice of this driver on this node carries. */
struct dra_slice_meta {
	const char *driver;    /* "rdma.rdmak.io" */
	const char *node_name; /* "node-a" */
	const char *node_uid;  /* the Node's uid for the owner reference; NULL: none (--dry-run) */
};

/* The pools of inv, each with its slices: [{"pool": NAME, "slices": [ResourceSlice...]}], in
 * pool order, every slice's spec.pool.generation from generation(ud, pool name) (NULL: 1).
 * Slice names are "<node>-<driver>-<pool part>-<k>" (a hash where that would pass 253
 * characters), so that the publisher finds its own by name. -EINVAL with a reason in err when
 * the node or driver name cannot make valid names; -ENOMEM. */
int dra_slices_build(const struct dra_inventory *inv, const struct dra_slice_meta *m,
		     int64_t (*generation)(void *ud, const char *pool), void *ud, json_t **ret,
		     char *err, size_t errlen);

#endif
