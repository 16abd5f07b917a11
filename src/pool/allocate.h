/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's questions answered from a pool set: the answers prepared at each refresh (the
 * device list ListAndWatch sends, a shared pool's one Allocate answer), Allocate itself and
 * GetPreferredAllocation. The transport's callbacks end here: no I/O, no sysfs, no JSON. */
#ifndef RDMAK_POOL_ALLOCATE_H
#define RDMAK_POOL_ALLOCATE_H

#include <stdbool.h>
#include <stddef.h>

#include "kubelet/kubelet.h"
#include "pool/pool.h"

/* Prepare p's device list and, for a shared pool, its answer, from its members' health.
 * *changed (may be NULL): whether the device list changed. */
int pool_allocate_prepare(const struct pool_set *ps, struct pool *p, bool *changed);

/* Fill *out for one container that asked for ids[0..n). -errno with *msg (malloc'd, may be
 * NULL) refuses the call: -ENOENT an unknown id, -ENODEV a shared pool with no healthy HCA. */
int pool_allocate_container(const struct pool *p, const char *const *ids, size_t n,
			    struct kubelet_container_alloc *out, char **msg);

/* GetPreferredAllocation: `size` ids of available, every must_include first (docs/plugin.md
 * says the order). *out is a strv. O(n log n) in the ids offered. */
int pool_allocate_preferred(const struct pool *p, const char *const *available, size_t n_available,
			    const char *const *must_include, size_t n_must, size_t size,
			    char ***out, size_t *n_out);

#endif
