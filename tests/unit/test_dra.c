/* SPDX-License-Identifier: Apache-2.0 */
/* src/dra's pieces that need no node: a pool of more devices than a slice holds splits into
 * slices of at most 128 with the pool's count and generation in each, names too long for the
 * API are hashed into valid ones, and names that make no valid object are refused by name. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dra/dra.h"
#include "k8s/names.h"

/* n devices in pool "pci-0000-18-00-0", then two in "pci-0000-29-00-0". */
static void fake(struct dra_inventory *inv, size_t n)
{
	inv->v = calloc(n + 2, sizeof(*inv->v));
	assert_non_null(inv->v);
	for (size_t i = 0; i < n + 2; i++) {
		struct dra_device *d = &inv->v[i];

		snprintf(d->name, sizeof(d->name), "dev-%04zu", i);
		snprintf(d->pool, sizeof(d->pool), i < n ? "pci-0000-18-00-0" : "pci-0000-29-00-0");
		d->attrs = json_pack("{s:{s:I}}", "index", "int", (json_int_t)i);
	}
	inv->n = n + 2;
}

static int64_t gen7(void *ud, const char *pool)
{
	return strstr(pool, "18-00") ? 7 : 3;
}

static void test_split(void **st)
{
	struct dra_inventory inv = { 0 };
	struct dra_slice_meta m = { .driver = "rdma.rdmak.io",
				    .node_name = "n1",
				    .node_uid = "u-1" };
	json_t *pools = NULL;
	char err[256];
	size_t seen = 0;

	fake(&inv, 300);
	assert_int_equal(dra_slices_build(&inv, &m, gen7, NULL, &pools, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(pools), 2);
	json_t *big = json_object_get(json_array_get(pools, 0), "slices");
	assert_string_equal(json_string_value(json_object_get(json_array_get(pools, 0), "pool")),
			    "n1/pci-0000-18-00-0");
	assert_int_equal(json_array_size(big), 3);
	for (size_t k = 0; k < 3; k++) {
		json_t *spec = json_object_get(json_array_get(big, k), "spec");
		json_t *devs = json_object_get(spec, "devices");
		json_t *pool = json_object_get(spec, "pool");

		assert_int_equal(json_array_size(devs), k < 2 ? 128 : 44);
		assert_int_equal(json_integer_value(json_object_get(pool, "resourceSliceCount")),
				 3);
		assert_int_equal(json_integer_value(json_object_get(pool, "generation")), 7);
		/* devices in order, none twice */
		for (size_t i = 0; i < json_array_size(devs); i++) {
			char want[16];

			snprintf(want, sizeof(want), "dev-%04zu", seen++);
			assert_string_equal(
				json_string_value(json_object_get(json_array_get(devs, i), "name")),
				want);
		}
	}
	json_t *small = json_object_get(json_array_get(pools, 1), "slices");
	assert_int_equal(json_array_size(small), 1);
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(json_array_get(small, 0), "spec"), "pool"),
			"generation")),
		3);
	/* owned by the Node */
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(json_object_get(json_array_get(small, 0),
								       "metadata"),
						       "ownerReferences"),
				       0),
			"uid")),
		"u-1");
	json_decref(pools);
	dra_inventory_clear(&inv);
}

static void test_names(void **st)
{
	struct dra_inventory inv = { 0 };
	char node[240], err[256];
	struct dra_slice_meta m = { .driver = "rdma.rdmak.io", .node_name = node };
	json_t *pools = NULL;
	const char *name;

	/* a 230-character node name: "<node>-<driver>-<pool>-0" would pass 253 */
	memset(node, 'a', 230);
	node[230] = '\0';
	for (int i = 50; i < 230; i += 50)
		node[i] = '.';
	fake(&inv, 1);
	assert_int_equal(dra_slices_build(&inv, &m, NULL, NULL, &pools, err, sizeof(err)), 0);
	name = json_string_value(json_object_get(
		json_object_get(
			json_array_get(json_object_get(json_array_get(pools, 0), "slices"), 0),
			"metadata"),
		"name"));
	assert_true(strlen(name) <= K8S_DNS1123_SUBDOMAIN_MAX);
	assert_true(k8s_dns1123_subdomain(name, NULL));
	json_decref(pools);
	pools = NULL;

	m.node_name = "Node_1";
	assert_int_equal(dra_slices_build(&inv, &m, NULL, NULL, &pools, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "node name Node_1"));
	m.node_name = "n1";
	m.driver = "rdma_rdmak.io";
	assert_int_equal(dra_slices_build(&inv, &m, NULL, NULL, &pools, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "driver name rdma_rdmak.io"));
	assert_null(pools);
	dra_inventory_clear(&inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
