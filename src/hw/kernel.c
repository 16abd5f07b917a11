/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel state that decides whether RDMA works: modules and the RDMA netns mode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"

/* The modules an RDMA/GPU node's answers depend on. */
static const char *const tracked[] = {
	"ib_core", "ib_uverbs", "ib_umad",	  "ib_ipoib",	 "rdma_cm", "rdma_ucm", "mlx5_core",
	"mlx5_ib", "mlx4_core", "mlx4_ib",	  "bnxt_re",	 "irdma",   "rdma_rxe", "siw",
	"bonding", "nvidia",	"nvidia_peermem", "nv_peer_mem", "gdrdrv",
};

int hw_load_kernel(struct hw_build *b)
{
	struct hw_kernel *k = &b->node->kernel;
	char path[96], buf[16];

	k->modules = calloc(ELEMENTSOF(tracked), sizeof(*k->modules));
	if (!k->modules)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(tracked); i++) {
		struct hw_module *m = &k->modules[k->n_modules++];

		m->name = tracked[i];
		/* A loadable module has initstate ("live"); a built-in one has a directory only
		 * when it has parameters, and no initstate. */
		snprintf(path, sizeof(path), "module/%s/initstate", tracked[i]);
		if (hw_dir_read(b->ctx, NULL, path, buf, sizeof(buf)) >= 0)
			m->state = strcmp(buf, "live") == 0 ? HW_MOD_LOADED : HW_MOD_ABSENT;
		else {
			snprintf(path, sizeof(path), "module/%s", tracked[i]);
			m->state =
				hw_dir_exists(b->ctx, NULL, path) ? HW_MOD_BUILTIN : HW_MOD_ABSENT;
		}
	}
	/* ib_core's netns_mode is the same switch `rdma system set netns` flips */
	k->netns_mode = -1;
	if (hw_dir_read(b->ctx, NULL, "module/ib_core/parameters/netns_mode", buf, sizeof(buf)) >=
	    0)
		k->netns_mode = buf[0] == 'Y' || buf[0] == '1'	 ? 1
				: buf[0] == 'N' || buf[0] == '0' ? 0
								 : -1;
	return 0;
}

const struct hw_module *hw_node_module(const struct hw_node *node, const char *name)
{
	for (size_t i = 0; i < node->kernel.n_modules; i++)
		if (!strcmp(node->kernel.modules[i].name, name))
			return &node->kernel.modules[i];
	return NULL;
}
