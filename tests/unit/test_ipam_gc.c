/* SPDX-License-Identifier: Apache-2.0 */
/* GC over the file store: records and orphan claims collected, and a claim that a record
 * names kept when the record pass fails. */
#include "ipam_fixture.h"

static bool only_k1(void *ud, const char *cid, const char *ifname)
{
	return !strcmp(cid, "k1") && !strcmp(ifname, "net1");
}

static int records_unreadable(struct ipam_store *s, const char *network, ipam_store_each_fn fn,
			      void *ud)
{
	snprintf(s->error, sizeof(s->error), "networks/%s: Input/output error", network);
	return -EIO;
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
	assert_int_equal(
		f->s->ops.claim(
			f->s, "10.56.0.0_24", "10.56.0.100",
			"{\"network\":\"rdma-net\",\"containerID\":\"k1\",\"ifname\":\"net1\"}"),
		1);
	/* another network's claim in the same pool is not this network's to collect */
	assert_int_equal(
		f->s->ops.claim(
			f->s, "10.56.0.0_24", "10.56.0.101",
			"{\"network\":\"other\",\"containerID\":\"z\",\"ifname\":\"net1\"}"),
		1);
	assert_int_equal(ipam_gc(f->s, f->c, only_k1, NULL, &st, &err), 0);
	assert_int_equal(st.kept, 1);
	assert_int_equal(st.released, 3); /* k2, k3, k4 (its pending record) */
	assert_int_equal(st.orphans, 1);  /* .100 */
	assert_int_equal(used(f), 2);	  /* k1's and the other network's */
	assert_string_equal(add(f, "k1"), "10.56.0.1/24");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc_keeps_named_claims, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
