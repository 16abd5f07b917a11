/* SPDX-License-Identifier: Apache-2.0 */
/* ADD, DEL and CHECK over the file store: CHECK, recovery of an interrupted ADD, and a store
 * that cannot be reached (ADD, DEL, STATUS). */
#include "ipam_fixture.h"

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

static const struct ipam_store_driver down_driver = { .name = "etcd",
						      .open = down_open,
						      .ops = &down_ops };

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
	assert_string_equal(
		err.details,
		"rdma-net: 10.56.0.1/24 is reserved for container c1 interface net1 but "
		"prevResult does not hold it");
	assert_true(ipam_check(f->s, f->c, "c2", "net1", NULL, &err) < 0);
	assert_string_equal(err.details,
			    "rdma-net: no address is reserved for container c2 interface net1");
	/* an operator released the claim behind the plugin's back: CHECK sees it */
	{
		char *v = NULL;

		json_t *o;
		const char *created;

		assert_int_equal(f->s->ops.get(f->s, "10.56.0.0_24", "10.56.0.1", &v), 1);
		/* the claim's owner, and when: an RFC 3339 UTC stamp */
		o = json_loads(v, 0, NULL);
		assert_non_null(o);
		assert_string_equal(json_string_value(json_object_get(o, "containerID")), "c1");
		created = json_string_value(json_object_get(o, "created"));
		assert_non_null(created);
		assert_int_equal(strlen(created), 20);
		assert_int_equal(created[4], '-');
		assert_int_equal(created[10], 'T');
		assert_int_equal(created[19], 'Z');
		json_decref(o);
		assert_int_equal(f->s->ops.release(f->s, "10.56.0.0_24", "10.56.0.1", v), 1);
		free(v);
	}
	assert_true(ipam_check(f->s, f->c, "c1", "net1", NULL, &err) < 0);
	assert_string_equal(
		err.details,
		"rdma-net: container c1 interface net1 holds no address of 10.56.0.0/24");
	cnispec_result_free(prev);
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

static void test_unreachable(void **state)
{
	struct fx *f = *state;
	struct ipam_owner o = { .container_id = "c1", .ifname = "net1" };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };
	char why[128];

	use(f, "{\"range\":\"10.56.0.0/24\"}");
	ipam_store_close(f->s);
	assert_int_equal(
		ipam_store_open_driver(&down_driver, &f->c->store, &f->s, why, sizeof(why)), 0);
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
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
