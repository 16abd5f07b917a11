/* SPDX-License-Identifier: Apache-2.0 */
/* The store's ops table: the driver's functions, and "not supported" where it has none,
 * as rdma-core's verbs_set_ops() does over its dummy ops. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/ipam.h"
#include "ipam/store.h"
#include "util/cleanup.h"

static int no_ping(struct ipam_store *s)
{
	return -EOPNOTSUPP;
}
static int no_claim(struct ipam_store *s, const char *p, const char *a, const char *v)
{
	return -EOPNOTSUPP;
}
static int no_get(struct ipam_store *s, const char *p, const char *a, char **ret)
{
	return -EOPNOTSUPP;
}
static int no_release(struct ipam_store *s, const char *p, const char *a, const char *e)
{
	return -EOPNOTSUPP;
}
static int no_list(struct ipam_store *s, const char *p, ipam_store_each_fn fn, void *ud)
{
	return -EOPNOTSUPP;
}
static int no_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud)
{
	return -EOPNOTSUPP;
}
static int no_record_get(struct ipam_store *s, const char *n, const char *k, char **ret)
{
	return -EOPNOTSUPP;
}
static int no_record_put(struct ipam_store *s, const char *n, const char *k, const char *v)
{
	return -EOPNOTSUPP;
}
static int no_record_del(struct ipam_store *s, const char *n, const char *k)
{
	return -EOPNOTSUPP;
}
static int no_record_list(struct ipam_store *s, const char *n, ipam_store_each_fn fn, void *ud)
{
	return -EOPNOTSUPP;
}
static int pending_by_put(struct ipam_store *s, const char *n, const char *k)
{
	return s->ops.record_put(s, n, k, IPAM_RECORD_PENDING);
}
static int no_claim_commit(struct ipam_store *s, const char *p, const char *a, const char *v,
			   const char *n, const char *k, const char *rec, ipam_store_each_fn look,
			   void *ud)
{
	return -EOPNOTSUPP;
}
static int no_block_list(struct ipam_store *s, const char *p, ipam_store_each_fn fn, void *ud)
{
	return -EOPNOTSUPP;
}
static int no_block_claim(struct ipam_store *s, const char *p, const char *f, const char *v,
			  unsigned size)
{
	return -EOPNOTSUPP;
}
static int no_block_release(struct ipam_store *s, const char *p, const char *f, const char *e,
			    const char *node)
{
	return -EOPNOTSUPP;
}
static int no_block_size(struct ipam_store *s, const char *p, unsigned *ret)
{
	return -EOPNOTSUPP;
}
static int no_lease_renew(struct ipam_store *s, const char *n, const char *v, unsigned ttl,
			  long long *ret)
{
	return -EOPNOTSUPP;
}
static int no_lease_read(struct ipam_store *s, const char *n, char **live, long long *left,
			 char **last)
{
	return -EOPNOTSUPP;
}
static int no_cursor_get(struct ipam_store *s, const char *p, char **ret)
{
	return -EOPNOTSUPP;
}
static int no_cursor_put(struct ipam_store *s, const char *p, const char *a)
{
	return -EOPNOTSUPP;
}
static int nothing_to_tidy(struct ipam_store *s, size_t *ret)
{
	if (ret)
		*ret = 0;
	return 0;
}
static void nothing_to_close(struct ipam_store *s)
{
}

static int count_one(void *ud, const char *name, const char *value)
{
	(*(size_t *)ud)++;
	return 0;
}

/* A store without its own count counts its listing. */
static int count_by_list(struct ipam_store *s, const char *pool, size_t *ret)
{
	size_t n = 0;
	int r = s->ops.list(s, pool, count_one, &n);

	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

static const struct ipam_store_ops defaults = {
	.ping = no_ping,
	.claim = no_claim,
	.get = no_get,
	.release = no_release,
	.list = no_list,
	.count = count_by_list,
	.pools = no_pools,
	.record_get = no_record_get,
	.record_put = no_record_put,
	.record_del = no_record_del,
	.record_list = no_record_list,
	.record_pending = pending_by_put,
	.claim_commit = no_claim_commit,
	.block_list = no_block_list,
	.block_claim = no_block_claim,
	.block_release = no_block_release,
	.block_size = no_block_size,
	.lease_renew = no_lease_renew,
	.lease_read = no_lease_read,
	.cursor_get = no_cursor_get,
	.cursor_put = no_cursor_put,
	.tidy = nothing_to_tidy,
	.close = nothing_to_close,
};

#define SET(slot) ops->slot = drv->slot ? drv->slot : defaults.slot
static void set_ops(struct ipam_store_ops *ops, const struct ipam_store_ops *drv)
{
	SET(ping);
	SET(claim);
	SET(get);
	SET(release);
	SET(list);
	SET(count);
	SET(pools);
	SET(record_get);
	SET(record_put);
	SET(record_del);
	SET(record_list);
	SET(record_pending);
	SET(claim_commit);
	SET(block_list);
	SET(block_claim);
	SET(block_release);
	SET(block_size);
	SET(lease_renew);
	SET(lease_read);
	SET(cursor_get);
	SET(cursor_put);
	SET(tidy);
	SET(close);
}
#undef SET

/* Weak, so that a program linked without the etcd module (the per-pod binary, src/pod.c: no
 * gRPC, no C++ runtime, no OpenSSL) links without it and sees its address as NULL; every other
 * program pulls it in with -Wl,--undefined (Makefile ETCD_LINK). */
extern const struct ipam_store_driver ipam_store_etcd_driver __attribute__((weak));

bool ipam_store_etcd_linked(void)
{
	return &ipam_store_etcd_driver != NULL;
}

int ipam_store_open(const struct ipamconf_store *cfg, struct ipam_store **ret, char *why,
		    size_t whylen)
{
	/* with blocks, the etcd module is needed only when the node takes a new block */
	if (cfg->kind == IPAMCONF_STORE_ETCD && !cfg->block_size && !ipam_store_etcd_linked()) {
		if (whylen)
			snprintf(why, whylen,
				 "etcd store: not in this binary (run the full rdmak)");
		return -ENOPKG;
	}
	return ipam_store_open_driver(cfg->kind == IPAMCONF_STORE_FILE ? &ipam_store_file_driver
				      : cfg->block_size		       ? &ipam_store_blocks_driver
								       : &ipam_store_etcd_driver,
				      cfg, ret, why, whylen);
}

int ipam_store_open_driver(const struct ipam_store_driver *drv, const struct ipamconf_store *cfg,
			   struct ipam_store **ret, char *why, size_t whylen)
{
	struct ipam_store *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->driver = drv;
	set_ops(&s->ops, drv->ops);
	r = drv->open(s, cfg);
	if (r < 0) {
		if (whylen)
			snprintf(why, whylen, "%s store: %s", drv->name,
				 s->error[0] ? s->error : strerror(-r));
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void ipam_store_close(struct ipam_store *s)
{
	if (!s)
		return;
	s->ops.close(s);
	free(s);
}

bool ipam_store_commits(const struct ipam_store *s)
{
	return s->driver->ops->claim_commit != NULL;
}

bool ipam_store_unreachable(int r)
{
	return r == -EHOSTUNREACH || r == -ETIMEDOUT || r == -ECONNREFUSED || r == -ENOTCONN;
}

int ipam_store_error(struct ipam_store *s, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	return r;
}

int ipam_store_fail(struct ipam_store *s, int r, bool for_status, struct cnispec_error *err)
{
	if (ipam_store_unreachable(r))
		return cnispec_fail(err, r,
				    for_status ? CNISPEC_E_UNAVAILABLE : CNISPEC_E_TRY_AGAIN,
				    "the IPAM store cannot be reached", "%s store: %s",
				    s->driver->name, s->error[0] ? s->error : strerror(-r));
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	/* the pool's way (single addresses, or blocks of a size) is not this configuration's */
	if (r == -EXDEV)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid IPAM configuration", "%s",
				    s->error);
	return cnispec_fail(err, r, CNISPEC_E_IO, "IPAM store failure", "%s store: %s",
			    s->driver->name, s->error[0] ? s->error : strerror(-r));
}
