/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of `rdmak dra`, the kubelet DRA plugin: what its files share. Nobody outside src/dra/
 * includes this.
 *
 * - inventory.c: the node model (src/hw) as DRA devices: a name, a pool, the attributes.
 * - slices.c: the devices as ResourceSlice objects (resource.k8s.io/v1), pool by pool.
 * - ncclxml.c: NCCL's topology file for a claim's NICs and GPUs.
 * - publish.c: the slices at the API server, written where a pool changed.
 * - prepare.c: NodePrepareResources / NodeUnprepareResources of one claim: the CDI spec, the
 *   topology file, the state that lets Unprepare work after a restart.
 * - status.c: the prepared claims' device status, networkData from rdmak-cni's records.
 * - main.c: options, --dry-run, the daemon. */
#ifndef RDMAK_DRA_H
#define RDMAK_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "hw/hw.h"
#include "kubelet/kubelet.h"

#define DRA_DRIVER_DEFAULT "rdma.rdmak.io"
/* The API's limits (k8s.io/api/resource/v1): devices per ResourceSlice, attributes and
 * capacities per device, the bytes of a string attribute, the characters of an attribute's name
 * without its domain. */
#define DRA_SLICE_DEVICES_MAX 128
#define DRA_DEVICE_ATTRS_MAX  32
#define DRA_ATTR_STRING_MAX   64
#define DRA_ATTR_NAME_MAX     32
/* The taint of a device whose port is down. */
#define DRA_TAINT_PORT_DOWN "rdma.rdmak.io/port-down"
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

/* The devices of node; only (NULL: all) names the RDMA devices to publish, those of the
 * resources the device plugin's config gives the driver. -ENOMEM. */
int dra_inventory_build(const struct hw_node *node, char *const *only, struct dra_inventory *ret);
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

struct k8s_client;

/* The daemon's state that the kubelet's calls use. */
struct dra_driver {
	const char *driver, *node_name;
	const char *cdi_dir;   /* CDI specs: k8s.<driver>-claim_<uid>.json */
	const char *state_dir; /* claims/<uid>.json, topology/<uid>.xml */
	struct k8s_client *api;
	struct hw_ctx *ctx;
	/* the model, replaced by the daemon's loop under lock */
	pthread_mutex_t lock;
	struct hw_node *node;
	struct dra_inventory inv;
};

/* One claim, as the kubelet asks (kubelet_dra_ops). Errors go into the answer's error. */
void dra_prepare(struct dra_driver *d, const struct kubelet_dra_claim *c,
		 struct kubelet_dra_result *out);
void dra_unprepare(struct dra_driver *d, const struct kubelet_dra_claim *c, char **error);

/* ---- the slices at the API server ---- */

struct dra_publisher;

/* What the publisher put on the API server (docs/dra.md's figures come from these). */
struct dra_publish_stats {
	unsigned long long requests, bytes_sent, creates, updates, deletes, syncs;
};

int dra_publisher_new(struct k8s_client *api, const char *driver, const char *node_name,
		      struct dra_publisher **ret);
void dra_publisher_free(struct dra_publisher *p);
/* Make the server's slices of this node and driver those of inv: a pool that changed is
 * written at its generation + 1, slices no pool wants deleted. The number of pools written,
 * or -errno with err (-ESTALE: a write lost a race, -EACCES: RBAC; the next call lists
 * again). */
int dra_publisher_sync(struct dra_publisher *p, const struct dra_inventory *inv, char *err,
		       size_t errlen);
/* Delete every slice of this node and driver (uninstall). */
int dra_publisher_delete_all(struct dra_publisher *p, char *err, size_t errlen);
/* Forget what the server has: the next sync lists first. */
void dra_publisher_invalidate(struct dra_publisher *p);
/* The resourceVersion of the last list ("" before one), where a watch starts. */
const char *dra_publisher_list_rv(const struct dra_publisher *p);
/* Whether a slice (a watch event's object) is exactly what this publisher last wrote. */
bool dra_publisher_owns(struct dra_publisher *p, const json_t *slice);
const struct dra_publish_stats *dra_publisher_stats(const struct dra_publisher *p);

/* ---- the claims' device status (KEP-4817 networkData) ---- */

struct dra_status;

int dra_status_new(struct dra_status **ret);
void dra_status_free(struct dra_status *s);
/* One round (status.c): every claim prepared here (its state file) gets, for each of its
 * devices that rdmak-cni attached (a record under cni_dir with what the pod got), an entry of
 * status.devices[] with networkData, written where it differs from the last written. The
 * number of claims written, or -errno with err (the first failure; the other claims are still
 * tried: -ESTALE a write that lost a race, -EACCES RBAC). */
int dra_status_sync(struct dra_status *s, struct dra_driver *d, const char *cni_dir, char *err,
		    size_t errlen);

/* The NCCL topology XML (NCCL_TOPO_FILE) of a claim holding nics and gpus (PCI functions of
 * node), bridges' attributes read through ctx: malloc'd text in *ret. -ENOMEM. */
int dra_nccl_topology(struct hw_ctx *ctx, const struct hw_node *node,
		      const struct hw_rdma_dev *const *nics, size_t n_nics,
		      const struct hw_pci *const *gpus, size_t n_gpus, char **ret, size_t *ret_len);

#endif
