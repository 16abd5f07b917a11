/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin's config moved to src/pool (pool/config.h). This header keeps the names the
 * exporter calls until its includes move there; tests/cmd/symbols.sh allows the exporter this
 * one role header, and both go together. struct plugin_config is only ever a pointer to a
 * struct pool_config. */
#ifndef RDMAK_PLUGIN_PLUGINCONF_COMPAT_H
#define RDMAK_PLUGIN_PLUGINCONF_COMPAT_H

#include "pool/config.h"

#define PLUGIN_SHARED	 POOL_SHARED
#define PLUGIN_EXCLUSIVE POOL_EXCLUSIVE

struct plugin_config;

static inline int plugin_config_parse(const char *buf, size_t len, struct plugin_config **ret,
				      char *err, size_t errlen)
{
	return pool_config_parse(buf, len, (struct pool_config **)ret, err, errlen);
}

static inline void plugin_config_free(struct plugin_config *cfg)
{
	pool_config_free((struct pool_config *)cfg);
}

#endif
