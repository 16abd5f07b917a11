/* SPDX-License-Identifier: Apache-2.0 */
/* The pool model moved to src/pool (pool/pool.h). This header keeps the names the exporter
 * calls until its includes move there; tests/cmd/symbols.sh allows the exporter this one role
 * header, and both go together. */
#ifndef RDMAK_PLUGIN_POOL_COMPAT_H
#define RDMAK_PLUGIN_POOL_COMPAT_H

#include "plugin/pluginconf.h"
#include "pool/pool.h"

static inline int plugin_pool_set_build(const struct plugin_config *cfg, const struct hw_node *node,
					const struct pool_opts *opts, struct pool_set **ret)
{
	return pool_set_build((const struct pool_config *)cfg, node, opts, ret);
}

static inline void plugin_pool_set_free(struct pool_set *ps)
{
	pool_set_free(ps);
}

#endif
