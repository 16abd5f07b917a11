/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator over the file store: order after the cursor, idempotent ADD, the full-pool
 * message, DEL, CHECK, GC of records and orphan claims, recovery of an interrupted ADD, dual
 * stack, host-local range sets, STATUS, and a store that cannot be reached. */
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

static struct ipamconf *config(const char *ipam)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	char full[2048];
	json_t *o;

	snprintf(full, sizeof(full), "%.*s,\"dataDir\":\"%s/data\"}", (int)strlen(ipam) - 1, ipam, dir);
	o = json_loads(full, 0, NULL);
	assert_non_null(o);
	if (ipamconf_parse(o, "rdma-net", &c, &err) < 0)
		fail_msg("%s: %s", err.msg, err.details);
	json_decref(o);
	return c;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(dir, sizeof(dir), "/tmp/ipam-alloc-test.XXXXXX");
	if (!f || !mkdtemp(dir))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	ipam_store_close(f->s);
	ipamconf_free(f->c);
	free(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void use(struct fx *f, const char *ipam)
{
	char why[256];

	ipam_store_close(f->s);
	ipamconf_free(f->c);
	f->c = config(ipam);
	assert_int_equal(ipam_store_open(&f->c->store, &f->s, why, sizeof(why)), 0);
}

/* ADD for container cid, net1; returns the first address as text (static). */
static const char *add(struct fx *f, const char *cid)
{
	static char buf[8][64];
	static int i;
	struct ipam_owner o = { .container_id = cid, .ifname = "net1", .pod_namespace = "ai", .pod_name = cid };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	if (ipam_add(f->s, f->c, &o, &r, &err) < 0)
		fail_msg("ADD %s: %u %s: %s", cid, err.code, err.msg, err.details);
	i = (i + 1) % 8;
	buf[i][0] = '\0';
	for (size_t k = 0; k < r->n_ips; k++) {
		char a[CNISPEC_PREFIX_STRLEN];
		size_t l = strlen(buf[i]);

		snprintf(buf[i] + l, sizeof(buf[i]) - l, "%s%s", k ? " " : "", cnispec_prefix_str(&r->ips[k].address, a));
	}
	cnispec_result_free(r);
	return buf[i];
}

static void add_fails(struct fx *f, const char *cid, unsigned code, const char *details)
{
	struct ipam_owner o = { .container_id = cid, .ifname = "net1" };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	assert_true(ipam_add(f->s, f->c, &o, &r, &err) < 0);
	assert_null(r);
	if (err.code != code || strcmp(err.details, details))
		fail_msg("ADD %s\n  got:  %u %s\n  want: %u %s", cid, err.code, err.details, code, details);
}

static void del(struct fx *f, const char *cid)
{
	struct cnispec_error err = { 0 };

	if (ipam_del(f->s, f->c, cid, "net1", &err) < 0)
		fail_msg("DEL %s: %s", cid, err.details);
}

static size_t used(struct fx *f)
{
	size_t n = 0;

	assert_int_equal(f->s->ops.count(f->s, f->c->sets[0].r[0].pool, &n), 0);
	return n;
}

static void test_order_and_reuse(void **state)
{
	struct fx *f = *state;

	use(f, "{\"range\":\"10.56.0.0/29\",\"gateway\":\"10.56.0.1\"}");
	assert_string_equal(add(f, "c1"), "10.56.0.2/29");
	assert_string_equal(add(f, "c2"), "10.56.0.3/29");
	assert_string_equal(add(f, "c3"), "10.56.0.4/29");
	/* idempotent: the same attachment gets the same address, nothing new is claimed */
	assert_string_equal(add(f, "c2"), "10.56.0.3/29");
	assert_int_equal(used(f), 3);
	/* a freed address is not the next one handed out (whereabouts #288) */
	del(f, "c1");
	assert_string_equal(add(f, "c4"), "10.56.0.5/29");
	assert_string_equal(add(f, "c5"), "10.56.0.6/29");
	/* the end of the range: wrap to the start, where .2 is free again */
	assert_string_equal(add(f, "c6"), "10.56.0.2/29");
	add_fails(f, "c7", 110, "10.56.0.0/29: all 5 addresses in use");
	/* a failed ADD leaves nothing behind */
	assert_int_equal(used(f), 5);
	{
		char *v = NULL;

		assert_int_equal(f->s->ops.record_get(f->s, "rdma-net", "c7:net1", &v), 0);
	}
	del(f, "c4");
	assert_string_equal(add(f, "c7"), "10.56.0.5/29");
	/* DEL of what does not exist, twice: success */
	del(f, "c99");
	del(f, "c4");
}

/* issue 17 §2: two networks whose subnets overlap (192.168.22.0/24, then 192.168.22.0/28) have
 * two pools; an address is unique across both, as whereabouts' enable_overlapping_ranges has it
 * (.1, then .2), in IPv6 too, for IP= as well; another network_name is another tenant. */
static void test_overlapping_pools(void **state)
{
	struct fx *f = *state;

	use(f, "{\"range\":\"192.168.22.0/24\"}");
	assert_string_equal(add(f, "a1"), "192.168.22.1/24");
	use(f, "{\"range\":\"192.168.22.0/28\"}");
	assert_string_equal(add(f, "b1"), "192.168.22.2/28");
	/* back in the /24, whose cursor is at .1: .2 is lost to the /28's claim, and the search
	 * gallops on from there (the order after a lost claim is the allocator's, not .3) */
	use(f, "{\"range\":\"192.168.22.0/24\"}");
	{
		const char *a2 = add(f, "a2");

		assert_string_not_equal(a2, "192.168.22.1/24");
		assert_string_not_equal(a2, "192.168.22.2/24");
	}
	/* a pool that does not hold the address is no rival */
	use(f, "{\"range\":\"192.168.23.0/28\"}");
	assert_string_equal(add(f, "c1"), "192.168.23.1/28");
	/* IP= of an address the other pool holds names its owner */
	use(f, "{\"range\":\"192.168.22.0/28\"}");
	{
		struct cnispec_addr want;
		struct ipam_owner o = { .container_id = "b2", .ifname = "net1", .requested = &want };
		struct cnispec_result *r = NULL;
		struct cnispec_error err = { 0 };

		assert_int_equal(cnispec_addr_parse("192.168.22.1", &want), 0);
		assert_true(ipam_add(f->s, f->c, &o, &r, &err) < 0);
		assert_int_equal(err.code, 112);
		assert_string_equal(err.details, "IP=192.168.22.1 in CNI_ARGS: claimed by a1:net1");
	}
	/* a released address is free in every pool again */
	del(f, "a1");
	use(f, "{\"range\":\"192.168.22.0/28\",\"range_start\":\"192.168.22.1\",\"range_end\":\"192.168.22.1\"}");
	assert_string_equal(add(f, "b3"), "192.168.22.1/28");
	/* another network_name keeps its own addresses, as in whereabouts */
	use(f, "{\"range\":\"192.168.22.0/28\",\"network_name\":\"tenant2\"}");
	assert_string_equal(add(f, "t1"), "192.168.22.1/28");

	use(f, "{\"range\":\"fd00:22::/64\"}");
	assert_string_equal(add(f, "a6"), "fd00:22::1/64");
	use(f, "{\"range\":\"fd00:22::/124\"}");
	assert_string_equal(add(f, "b6"), "fd00:22::2/124");
	/* one attachment over two overlapping sets gets two addresses */
	use(f, "{\"ipRanges\":[{\"range\":\"10.9.0.0/24\"},{\"range\":\"10.9.0.0/28\"}]}");
	assert_string_equal(add(f, "d1"), "10.9.0.1/24 10.9.0.2/28");
}

static void test_full_message(void **state)
{
	struct fx *f = *state;
	char cid[16];

	/* the example: a /27 with its gateway holds 29 */
	use(f, "{\"ranges\":[[{\"subnet\":\"10.56.0.0/27\"}]]}");
	for (int i = 0; i < 29; i++) {
		snprintf(cid, sizeof(cid), "p%d", i);
		add(f, cid);
	}
	add_fails(f, "p29", 110, "10.56.0.0/27: all 29 addresses in use");
	{
		struct cnispec_error err = { 0 };

		assert_int_equal(ipam_status(f->s, f->c, &err), -ENOSPC);
		assert_int_equal(err.code, 50);
		assert_string_equal(err.details, "rdma-net: every address of 10.56.0.0/27 is in use");
	}
	/* ranges that hold nothing at all say so */
	use(f, "{\"range\":\"10.9.0.0/30\",\"exclude\":[\"10.9.0.0/30\"]}");
	add_fails(f, "x", 110, "10.9.0.0/30: no address to hand out (all excluded)");
}

static void test_range_set_and_dual_stack(void **state)
{
	struct fx *f = *state;

	/* host-local: the first range of a set with room; one address per set */
	use(f, "{\"ranges\":[[{\"subnet\":\"10.1.0.0/30\",\"gateway\":\"10.1.0.1\"},{\"subnet\":\"10.2.0.0/24\","
	       "\"rangeStart\":\"10.2.0.50\"}],[{\"subnet\":\"fd00:1::/64\"}]]}");
	assert_string_equal(add(f, "a"), "10.1.0.2/30 fd00:1::2/64");
	assert_string_equal(add(f, "b"), "10.2.0.50/24 fd00:1::3/64");
	assert_string_equal(add(f, "a"), "10.1.0.2/30 fd00:1::2/64");
	del(f, "a");
	del(f, "b");
	assert_int_equal(used(f), 0);
}

static void test_many_small(void **state)
{
	struct fx *f = *state;

	/* /31, /32, /127, /128 ranges hand out exactly their addresses */
	use(f, "{\"ipRanges\":[{\"range\":\"10.9.0.4/31\"},{\"range\":\"fd00::a/127\"}]}");
	assert_string_equal(add(f, "a"), "10.9.0.4/31 fd00::a/127");
	assert_string_equal(add(f, "b"), "10.9.0.5/31 fd00::b/127");
	add_fails(f, "c", 110, "10.9.0.4/31: all 2 addresses in use");
	use(f, "{\"ipRanges\":[{\"range\":\"10.9.0.7/32\"},{\"range\":\"fd00::1:1/128\"}]}");
	assert_string_equal(add(f, "a"), "10.9.0.7/32 fd00::1:1/128");
	add_fails(f, "b", 110, "10.9.0.7/32: all 1 addresses in use");
}

static void test_check(void **state)
{
	struct fx *f = *state;
	struct cnispec_error err = { 0 };
	struct cnispec_result *prev = cnispec_result_new();
	struct cnispec_ip ip = { .interface = -1 };

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	assert_string_equal(add(f, "c1"), "10.56.0.1/24");
	assert_int_equal(ipam_check(f->s, f->c, "c1", "net1", NULL, &err), 0);
	cnispec_prefix_parse("10.56.0.1/24", &ip.address);
	cnispec_result_add_ip(prev, &ip);
	assert_int_equal(ipam_check(f->s, f->c, "c1", "net1", prev, &err), 0);
	prev->ips[0].address.addr.a[3] = 9;
	assert_true(ipam_check(f->s, f->c, "c1", "net1", prev, &err) < 0);
	assert_int_equal(err.code, 111);
	assert_string_equal(err.details, "rdma-net: 10.56.0.1/24 is reserved for container c1 interface net1 but "
					 "prevResult does not hold it");
	assert_true(ipam_check(f->s, f->c, "c2", "net1", NULL, &err) < 0);
	assert_string_equal(err.details, "rdma-net: no address is reserved for container c2 interface net1");
	/* an operator released the claim behind the plugin's back: CHECK sees it */
	{
		char *v = NULL;

		assert_int_equal(f->s->ops.get(f->s, "10.56.0.0_24", "10.56.0.1", &v), 1);
		assert_int_equal(f->s->ops.release(f->s, "10.56.0.0_24", "10.56.0.1", v), 1);
		free(v);
	}
	assert_true(ipam_check(f->s, f->c, "c1", "net1", NULL, &err) < 0);
	assert_string_equal(err.details, "rdma-net: container c1 interface net1 holds no address of 10.56.0.0/24");
	cnispec_result_free(prev);
}

/* What a process killed between its claim and its "complete" record leaves. */
static void interrupted_add(struct fx *f, const char *cid, const char *addr)
{
	char value[256];

	snprintf(value, sizeof(value), "{\"network\":\"rdma-net\",\"containerID\":\"%s\",\"ifname\":\"net1\"}", cid);
	{
		char key[64];

		snprintf(key, sizeof(key), "%s:net1", cid);
		assert_int_equal(f->s->ops.record_put(f->s, "rdma-net", key, "{\"state\":\"pending\"}"), 0);
	}
	assert_int_equal(f->s->ops.claim(f->s, f->c->sets[0].r[0].pool, addr, value), 1);
}

static void test_recovery(void **state)
{
	struct fx *f = *state;
	struct cnispec_error err = { 0 };

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	/* the retried ADD adopts the claim it made before it was killed */
	interrupted_add(f, "k1", "10.56.0.77");
	assert_string_equal(add(f, "k1"), "10.56.0.77/24");
	assert_int_equal(used(f), 1);
	assert_int_equal(ipam_check(f->s, f->c, "k1", "net1", NULL, &err), 0);
	/* DEL of an interrupted ADD releases what it claimed */
	interrupted_add(f, "k2", "10.56.0.78");
	del(f, "k2");
	assert_int_equal(used(f), 1);
}

static bool only_k1(void *ud, const char *cid, const char *ifname)
{
	return !strcmp(cid, "k1") && !strcmp(ifname, "net1");
}

static void test_gc(void **state)
{
	struct fx *f = *state;
	struct cnispec_error err = { 0 };
	struct ipam_gc_stats st = { 0 };

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	add(f, "k1");
	add(f, "k2");
	add(f, "k3");
	interrupted_add(f, "k4", "10.56.0.99");
	/* a claim in k1's name that its record does not list: left by a killed ADD of k1 */
	assert_int_equal(f->s->ops.claim(f->s, "10.56.0.0_24", "10.56.0.100",
					 "{\"network\":\"rdma-net\",\"containerID\":\"k1\",\"ifname\":\"net1\"}"), 1);
	/* another network's claim in the same pool is not this network's to collect */
	assert_int_equal(f->s->ops.claim(f->s, "10.56.0.0_24", "10.56.0.101",
					 "{\"network\":\"other\",\"containerID\":\"z\",\"ifname\":\"net1\"}"), 1);
	assert_int_equal(ipam_gc(f->s, f->c, only_k1, NULL, &st, &err), 0);
	assert_int_equal(st.kept, 1);
	assert_int_equal(st.released, 3); /* k2, k3, k4 (its pending record) */
	assert_int_equal(st.orphans, 1);  /* .100 */
	assert_int_equal(used(f), 2);     /* k1's and the other network's */
	assert_string_equal(add(f, "k1"), "10.56.0.1/24");
}

static int records_unreadable(struct ipam_store *s, const char *network, ipam_store_each_fn fn, void *ud)
{
	snprintf(s->error, sizeof(s->error), "networks/%s: Input/output error", network);
	return -EIO;
}

/* issue 16 §2.5: the orphan pass freed the claims of records the record pass had not reached,
 * leaving records that named freed addresses. A claim a record names stays; GC reports the
 * record pass's failure, by its own words. */
static void test_gc_keeps_named_claims(void **state)
{
	struct fx *f = *state;
	struct cnispec_error err = { 0 };
	struct ipam_gc_stats st = { 0 };

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	add(f, "k1");
	add(f, "k2");
	f->s->ops.record_list = records_unreadable;
	assert_true(ipam_gc(f->s, f->c, only_k1, NULL, &st, &err) < 0);
	assert_string_equal(err.details, "file store: networks/rdma-net: Input/output error");
	assert_int_equal(st.orphans, 0);
	assert_int_equal(st.errors, 1);
	assert_int_equal(used(f), 2); /* k2's record still names 10.56.0.2: it stays claimed */
}

/* ---- a store that does not answer -------------------------------------------------------- */

static int down(struct ipam_store *s)
{
	snprintf(s->error, sizeof(s->error), "etcd: 127.0.0.1:1: connection refused");
	return -EHOSTUNREACH;
}

static int down_get(struct ipam_store *s, const char *n, const char *k, char **ret)
{
	return down(s);
}

static int down_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	return 0;
}

static const struct ipam_store_ops down_ops = { .ping = down, .record_get = down_get };
static const struct ipam_store_driver down_driver = { .name = "etcd", .open = down_open, .ops = &down_ops };

static void test_unreachable(void **state)
{
	struct fx *f = *state;
	struct ipam_owner o = { .container_id = "c1", .ifname = "net1" };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };
	char why[128];

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	ipam_store_close(f->s);
	assert_int_equal(ipam_store_open_driver(&down_driver, &f->c->store, &f->s, why, sizeof(why)), 0);
	assert_int_equal(ipam_status(f->s, f->c, &err), -EHOSTUNREACH);
	assert_int_equal(err.code, 50);
	assert_string_equal(err.details, "etcd store: etcd: 127.0.0.1:1: connection refused");
	assert_int_equal(ipam_add(f->s, f->c, &o, &r, &err), -EHOSTUNREACH);
	assert_int_equal(err.code, 11);
	assert_int_equal(ipam_del(f->s, f->c, "c1", "net1", &err), -EHOSTUNREACH);
	assert_int_equal(err.code, 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range_set_and_dual_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc_keeps_named_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
