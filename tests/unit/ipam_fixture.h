/* SPDX-License-Identifier: Apache-2.0 */
/* The IPAM allocator tests' fixture (test_ipam_alloc.c, test_ipam_add.c, test_ipam_gc.c): a
 * file store in a temporary folder, a configuration per test, and ADD/DEL as one call each. */
#ifndef RDMAK_TESTS_IPAM_FIXTURE_H
#define RDMAK_TESTS_IPAM_FIXTURE_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ipam/ipam.h"

static char dir[64];

struct fx {
	struct ipam_store *s;
	struct ipamconf *c;
};

static inline struct ipamconf *config(const char *ipam)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	char full[2048];
	json_t *o;

	snprintf(full, sizeof(full), "%.*s,\"dataDir\":\"%s/data\"}", (int)strlen(ipam) - 1, ipam,
		 dir);
	o = json_loads(full, 0, NULL);
	assert_non_null(o);
	if (ipamconf_parse(o, "rdma-net", &c, &err) < 0)
		fail_msg("%s: %s", err.msg, err.details);
	json_decref(o);
	return c;
}

static inline int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(dir, sizeof(dir), "/tmp/ipam-alloc-test.XXXXXX");
	if (!f || !mkdtemp(dir))
		return -1;
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	ipam_store_close(f->s);
	ipamconf_free(f->c);
	free(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static inline void use(struct fx *f, const char *ipam)
{
	char why[256];

	ipam_store_close(f->s);
	ipamconf_free(f->c);
	f->c = config(ipam);
	assert_int_equal(ipam_store_open(&f->c->store, &f->s, why, sizeof(why)), 0);
}

/* ADD for container cid, net1; returns the first address as text (static). */
static inline const char *add(struct fx *f, const char *cid)
{
	static char buf[8][64];
	static int i;
	struct ipam_owner o = {
		.container_id = cid, .ifname = "net1", .pod_namespace = "ai", .pod_name = cid
	};
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	if (ipam_add(f->s, f->c, &o, &r, &err) < 0)
		fail_msg("ADD %s: %u %s: %s", cid, err.code, err.msg, err.details);
	i = (i + 1) % 8;
	buf[i][0] = '\0';
	for (size_t k = 0; k < r->n_ips; k++) {
		char a[CNISPEC_PREFIX_STRLEN];
		size_t l = strlen(buf[i]);

		snprintf(buf[i] + l, sizeof(buf[i]) - l, "%s%s", k ? " " : "",
			 cnispec_prefix_str(&r->ips[k].address, a));
	}
	cnispec_result_free(r);
	return buf[i];
}

static inline void add_fails(struct fx *f, const char *cid, unsigned code, const char *details)
{
	struct ipam_owner o = { .container_id = cid, .ifname = "net1" };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	assert_true(ipam_add(f->s, f->c, &o, &r, &err) < 0);
	assert_null(r);
	if (err.code != code || strcmp(err.details, details))
		fail_msg("ADD %s\n  got:  %u %s\n  want: %u %s", cid, err.code, err.details, code,
			 details);
}

static inline void del(struct fx *f, const char *cid)
{
	struct cnispec_error err = { 0 };

	if (ipam_del(f->s, f->c, cid, "net1", &err) < 0)
		fail_msg("DEL %s: %s", cid, err.details);
}

static inline size_t used(struct fx *f)
{
	size_t n = 0;

	assert_int_equal(f->s->ops.count(f->s, f->c->sets[0].r[0].pool, &n), 0);
	return n;
}

/* What a process killed between its claim and its "complete" record leaves. */
static inline void interrupted_add(struct fx *f, const char *cid, const char *addr)
{
	char value[256];

	snprintf(value, sizeof(value),
		 "{\"network\":\"rdma-net\",\"containerID\":\"%s\",\"ifname\":\"net1\"}", cid);
	{
		char key[64];

		snprintf(key, sizeof(key), "%s:net1", cid);
		assert_int_equal(
			f->s->ops.record_put(f->s, "rdma-net", key, "{\"state\":\"pending\"}"), 0);
	}
	assert_int_equal(f->s->ops.claim(f->s, f->c->sets[0].r[0].pool, addr, value), 1);
}

#endif
