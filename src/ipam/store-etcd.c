/* Placeholder until the etcd module lands its store (src/ipam/store-etcd.c belongs to it):
 * a config that names the etcd store is refused with this message. */
#include <errno.h>
#include <stdio.h>

#include "ipam/store.h"

static int etcd_open(struct ipam_store *s, const struct ipam_store_config *cfg)
{
	snprintf(s->error, sizeof(s->error), "this build of rdmak has no etcd store yet");
	return -EOPNOTSUPP;
}

const struct ipam_store_driver ipam_store_etcd_driver = {
	.name = "etcd",
	.open = etcd_open,
	.ops = &(const struct ipam_store_ops){ 0 },
};
