/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator over the file store: order after the cursor, the full-pool message, pools
 * whose subnets overlap, dual stack and host-local range sets, many small ranges. */
#include "ipam_fixture.h"

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
		struct ipam_owner o = { .container_id = "b2",
					.ifname = "net1",
					.requested = &want };
		struct cnispec_result *r = NULL;
		struct cnispec_error err = { 0 };

		assert_int_equal(cnispec_addr_parse("192.168.22.1", &want), 0);
		assert_true(ipam_add(f->s, f->c, &o, &r, &err) < 0);
		assert_int_equal(err.code, 112);
		assert_string_equal(err.details, "IP=192.168.22.1 in CNI_ARGS: claimed by a1:net1");
	}
	/* a released address is free in every pool again */
	del(f, "a1");
	use(f, "{\"range\":\"192.168.22.0/28\",\"range_start\":\"192.168.22.1\","
	       "\"range_end\":\"192.168.22.1\"}");
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
		assert_string_equal(err.details,
				    "rdma-net: every address of 10.56.0.0/27 is in use");
	}
	/* ranges that hold nothing at all say so */
	use(f, "{\"range\":\"10.9.0.0/30\",\"exclude\":[\"10.9.0.0/30\"]}");
	add_fails(f, "x", 110, "10.9.0.0/30: no address to hand out (all excluded)");
}

static void test_range_set_and_dual_stack(void **state)
{
	struct fx *f = *state;

	/* host-local: the first range of a set with room; one address per set */
	use(f, "{\"ranges\":[[{\"subnet\":\"10.1.0.0/30\",\"gateway\":\"10.1.0.1\"},"
	       "{\"subnet\":\"10.2.0.0/24\",\"rangeStart\":\"10.2.0.50\"}],"
	       "[{\"subnet\":\"fd00:1::/64\"}]]}");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range_set_and_dual_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_small, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
