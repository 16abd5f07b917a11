/* SPDX-License-Identifier: Apache-2.0 */
/* Live health: the inputs a member's health depends on (port states, carriers), re-read by a
 * poll; whether each member is healthy and why not; devices coming and going. */
#ifndef RDMAK_POOL_HEALTH_H
#define RDMAK_POOL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"

struct pool_set;
struct pool_member;

/* One live fact a member's health depends on, shared between members (a PF's carrier is an
 * input of each of its VFs) and re-read by the health poll. */
enum pool_health_kind { POOL_HEALTH_PORT, POOL_HEALTH_CARRIER };
struct pool_health_input {
	enum pool_health_kind kind;
	char name[HW_NAME_MAX]; /* RDMA device or netdev */
	unsigned port;
	int value; /* port state (enum hw_port_state) or carrier (1, 0, -1 unreadable) */
	bool gone; /* the last read said ENOENT */
	int fd;	   /* the poll's held sysfs attribute, -1 when not open */
};
bool pool_health_input_ok(const struct pool_health_input *in);
/* "mlx5_0 port 1 DOWN", "ens1f0 no carrier", "mlx5_3 gone" */
void pool_health_input_describe(const struct pool_health_input *in, char *buf, size_t n);

/* Judge m from its inputs and its static fault: m->healthy, and which input fails it. */
void pool_health_member_judge(const struct pool_set *ps, struct pool_member *m);
/* Why m is not healthy ("mlx5_0 port 1 DOWN"); "" when it is. */
void pool_health_member_reason(const struct pool_set *ps, const struct pool_member *m, char *buf,
			       size_t n);

/* Re-read every input (port state, netdev carrier). Returns how many changed. */
int pool_health_poll(struct pool_set *ps, struct hw_ctx *ctx);

/* A cheap fingerprint of the RDMA devices and netdevs that exist (two directory listings),
 * to notice hot-plug, driver (re)loads and VF creation without re-reading the whole model. */
int pool_health_topology_fingerprint(struct hw_ctx *ctx, uint64_t *ret);

#endif
