/* Live health: re-read the inputs of a pool set, and notice devices coming and going. */
#ifndef RDMAK_PLUGIN_HEALTH_H
#define RDMAK_PLUGIN_HEALTH_H

#include <stdint.h>

#include "hw/hw.h"
#include "plugin/pool.h"

/* Re-read every input (port state, netdev carrier). Returns how many changed. */
int health_poll(struct pool_set *ps, struct hw_ctx *ctx);

/* A cheap fingerprint of the RDMA devices and netdevs that exist (two directory listings),
 * to notice hot-plug, driver (re)loads and VF creation without re-reading the whole model. */
int health_topology_fingerprint(struct hw_ctx *ctx, uint64_t *ret);

#endif
