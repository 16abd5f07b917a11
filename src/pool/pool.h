/* SPDX-License-Identifier: Apache-2.0 */
/* Resource pools, the device plugin's model: its configuration (config.h) applied to one load of
 * the hardware model: which members each resource has, their char devices and health inputs.
 * The answers the kubelet will ask for are prepared from them by allocate.c at start-up, reload
 * or health change, so that the transport's callbacks only copy prepared data. A floor module:
 * `rdmak plugin` serves the pools, `rdmak doctor` reads the config, the exporter the pools. */
#ifndef RDMAK_POOL_H
#define RDMAK_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"
#include "kubelet/kubelet.h"
#include "pool/config.h"
#include "pool/health.h"

struct pool_member {
	char id[HW_NAME_MAX]; /* shared: the RDMA device; exclusive: the PCI address (the kubelet id) */
	char *rdma;	      /* RDMA devices, comma-separated ("mlx5_3"); never NULL once built */
	char *netdevs;	      /* netdevs, comma-separated; never NULL once built */
	char pf[HW_BDF_MAX]; /* exclusive: the PF (itself for a PF) */
	int vf_index;	     /* exclusive: -1 for a PF */
	int numa;
	bool healthy;
	bool in_pod; /* exclusive netns: its RDMA device is in a pod (pool_select_vf_in_pod) */
	/* Why not healthy: the static fault, else inputs[bad_input]'s state (pool_health_member_reason).
	 * Strings are allocated to size: a 1016-VF pool's members are most of the idle memory. */
	char *static_fault; /* a fault found at load time (no uverbs node): never healthy; NULL none */
	size_t bad_input; /* unhealthy without a static fault: index in m->inputs */
	size_t *inputs;
	size_t n_inputs;
	struct kubelet_device_spec *specs; /* its char devices (and vhost-net/tun); host_path and
				       * container_path are one string, freed once */
	size_t n_specs;
	char *info; /* exclusive: its "<id>":{...} entry of _INFO (compact, keys sorted),
				* prepared at build time so that Allocate builds no JSON */
};

struct pool {
	const struct pool_resource *res;
	char socket_name[128]; /* "rdmak-rdma_rdma_a100.sock" */
	char env_key[160];     /* exclusive: PCIDEVICE_<PREFIX>_<NAME> */
	struct pool_member *m; /* sorted by id */
	size_t n_m;
	struct kubelet_device *devs; /* what ListAndWatch sends */
	size_t n_devs;
	size_t n_healthy_members;
	struct kubelet_container_alloc shared; /* shared pools: the answer for every container */
	bool shared_ok;
	bool cdi; /* answer with cdi_devices instead of device specs */
	char shared_refusal[512];
};

struct pool_opts {
	bool cdi;		     /* answer with cdi_devices instead of device specs */
	const struct pool_set *prev; /* the set this one replaces: in-pod VFs keep their answers */
	int served; /* enum pool_served: whose pools the set keeps (the plugin's) */
	char *err;  /* where a refused split's reason goes (NULL: nowhere) */
	size_t errlen;
};

struct pool_set {
	struct pool *pools;
	size_t n;
	struct pool_health_input *inputs;
	size_t n_inputs;
	struct pool_opts opts;
	bool exclusive_netns; /* RDMA netns mode exclusive: an in-use VF vanishes from the host */
};

/* The name of res's device plugin socket in the kubelet's device-plugins folder,
 * "rdmak-<prefix>_<name>.sock": the plugin listens there, the DRA driver looks for it. The
 * length snprintf gives; -ENAMETOOLONG when it does not fit (buf then holds it cut short). */
int pool_socket_name(const struct pool_resource *res, char *buf, size_t n);

/* Build the pools of cfg over node, and keep those of opts->served. cfg must outlive the set.
 * Every resource is built, in the file's order whoever serves it (a function belongs to the
 * first exclusive resource that selects it), so that both sides see the same split: -EINVAL,
 * with the two resources and the device in opts->err, where an RDMA device is in a pool of the
 * device plugin and in one of the DRA driver. */
int pool_set_build(const struct pool_config *cfg, const struct hw_node *node,
		   const struct pool_opts *opts, struct pool_set **ret);
void pool_set_free(struct pool_set *ps);

/* Judge every member's health from the inputs, then prepare the device lists and answers
 * (pool_allocate_prepare). changed[i] (may be NULL) says whether pool i's device list changed. */
int pool_set_refresh(struct pool_set *ps, bool *changed);

/* The member of p with this id (members are sorted by id), or NULL. */
const struct pool_member *pool_member_find(const struct pool *p, const char *id);

/* Add item to the comma-separated list *list (malloc'd; NULL is empty) unless it is there. */
int pool_list_add(char **list, const char *item);
/* The next item of a comma-separated list such as a member's rdma or netdevs: its start in
 * *item, its length in *len, *s moved past it; false at the end. Empty items are skipped, as
 * strtok does (pool_list_add makes none). Walk a list with
 * `for (const char *s = list; pool_list_next(&s, &item, &len);)`. */
bool pool_list_next(const char **s, const char **item, size_t *len);

#endif
