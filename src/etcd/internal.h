/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of the etcd client: shared by client.c (endpoints, TLS, one unary call with failover)
 * and kv.c (the KV and Maintenance messages). Nobody outside src/etcd/ includes this. */
#ifndef RDMAK_ETCD_INTERNAL_H
#define RDMAK_ETCD_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "etcd/etcd.h"

enum etcd_method {
	ETCD_M_RANGE,
	ETCD_M_PUT,
	ETCD_M_DELETE_RANGE,
	ETCD_M_TXN,
	ETCD_M_STATUS,
	ETCD_M_LEASE_GRANT,
	ETCD_M_LEASE_TTL,
	ETCD_M__MAX,
};

/* The reply's bytes, malloc'd (NULL with len 0 for an empty message). */
struct etcd_reply {
	uint8_t *data;
	size_t len;
};
void etcd_reply_clear(struct etcd_reply *r);

/* One unary call with failover (see etcd.h). On success *ret holds the reply message; on
 * failure the client's error message says what happened. */
int etcd_call(struct etcd_client *c, enum etcd_method m, const ProtobufCMessage *req,
	      struct etcd_reply *ret);
/* The same on endpoint i only. */
int etcd_call_at(struct etcd_client *c, size_t i, enum etcd_method m, const ProtobufCMessage *req,
		 struct etcd_reply *ret);
/* Record a failure that is not a transport one (a reply we cannot decode). Returns r. */
int etcd_fail(struct etcd_client *c, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
