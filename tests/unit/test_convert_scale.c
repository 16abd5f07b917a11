/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak convert's cost grows with the objects it is given, not with their number squared.
 *
 * No clock is read: the test counts the work. It links with -Wl,--wrap=json_object_get and
 * -Wl,--wrap=json_equal (Makefile), so every lookup and every comparison convert_run makes
 * comes through here first. A run that looks each object up against every other one (a pool
 * searched for by walking the input, a name compared with every object's) makes those counts
 * grow as n²: 8 times the objects then cost ~64 times the lookups. Linear, they cost 8 times.
 * The inputs mix what convert indexes: SpiderIPPools and the SpiderMultusConfigs naming them,
 * SriovNetworkNodePolicies (each on its own PF, one pair on a shared one), and one name given
 * twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "convert/convert.h"

static unsigned long lookups, compares;

json_t *__real_json_object_get(const json_t *object, const char *key);
json_t *__wrap_json_object_get(const json_t *object, const char *key);
int __real_json_equal(const json_t *a, const json_t *b);
int __wrap_json_equal(const json_t *a, const json_t *b);

json_t *__wrap_json_object_get(const json_t *object, const char *key)
{
	lookups++;
	return __real_json_object_get(object, key);
}

int __wrap_json_equal(const json_t *a, const json_t *b)
{
	compares++;
	return __real_json_equal(a, b);
}

static void add(json_t *inputs, json_t *obj)
{
	assert_non_null(obj);
	assert_int_equal(json_array_append_new(
				 inputs, json_pack("{s:s,s:o}", "file", "gen.yaml", "object", obj)),
			 0);
}

/* n objects: n/4 pools, n/4 networks naming them, n/4 policies, n/4 more pools. */
static json_t *inputs(size_t n)
{
	json_t *in = json_array();
	char name[64], net[64], ips[64], pf[32], res[64];

	assert_non_null(in);
	for (size_t i = 0; i < n / 4; i++) {
		unsigned a = (unsigned)(i / 250) % 250, b = (unsigned)(i % 250);

		snprintf(name, sizeof(name), "pool-%zu", i);
		snprintf(net, sizeof(net), "10.%u.%u.0/24", a, b);
		snprintf(ips, sizeof(ips), "10.%u.%u.1-10.%u.%u.200", a, b, a, b);
		add(in, json_pack("{s:s,s:{s:s},s:{s:s,s:[s]}}", "kind", "SpiderIPPool", "metadata",
				  "name", name, "spec", "subnet", net, "ips", ips));
		snprintf(name, sizeof(name), "net-%zu", i);
		snprintf(res, sizeof(res), "spidernet.io/gpu%zusriov", i % 8);
		snprintf(net, sizeof(net), "pool-%zu", i);
		add(in, json_pack("{s:s,s:{s:s,s:s},s:{s:s,s:{s:s,s:{s:[s]}}}}", "kind",
				  "SpiderMultusConfig", "metadata", "name", name, "namespace", "ns",
				  "spec", "cniType", "sriov", "sriov", "resourceName", res,
				  "ippools", "ipv4", net));
		snprintf(name, sizeof(name), "policy-%zu", i);
		snprintf(pf, sizeof(pf), "0000:%02zx:%02zx.0", (i / 32) % 256, i % 32);
		snprintf(res, sizeof(res), "gpu%zusriov", i % 8);
		add(in, json_pack("{s:s,s:{s:s},s:{s:s,s:i,s:{s:s,s:[s]},s:s,s:b}}", "kind",
				  "SriovNetworkNodePolicy", "metadata", "name", name, "spec",
				  "resourceName", res, "numVfs", 8, "nicSelector", "vendor", "15b3",
				  "rootDevices", i == 1 ? "0000:00:00.0" : pf, "deviceType",
				  "netdevice", "isRdma", 1));
		snprintf(name, sizeof(name), "spare-%zu", i);
		snprintf(net, sizeof(net), "10.%u.%u.0/24", 250 - a % 4, b);
		add(in, json_pack("{s:s,s:{s:s},s:{s:s,s:[s]}}", "kind", "SpiderIPPool", "metadata",
				  "name", i == 3 ? "pool-2" : name, "spec", "subnet", net, "ips",
				  "10.0.0.1")); /* pool-2 again, another content: a FIX */
	}
	return in;
}

struct cost {
	unsigned long lookups, compares;
	json_int_t fixes;
};

static struct cost run(size_t n)
{
	json_t *in = inputs(n), *model = NULL;
	struct cost c;

	lookups = compares = 0;
	assert_int_equal(convert_run(in, &model), 0);
	c = (struct cost){ lookups, compares,
			   json_integer_value(__real_json_object_get(model, "fixes")) };
	assert_int_equal(json_array_size(__real_json_object_get(model, "documents")), n);
	json_decref(model);
	json_decref(in);
	return c;
}

static void test_linear(void **state)
{
	struct cost small = run(500), big = run(4000);

	(void)state;
	print_message("# 500 objects: %lu lookups, %lu compares; 4000: %lu, %lu\n", small.lookups,
		      small.compares, big.lookups, big.compares);
	/* the input's own FIX notes (a PF in two policies, a name given twice) are there at
	 * both sizes: the indexes find what the walks found */
	assert_true(small.fixes >= 3);
	assert_int_equal(big.fixes, small.fixes);
	/* 8 times the objects: at most 10 times the work (8 is linear; n² would be 64) */
	assert_true(big.lookups <= 10 * small.lookups);
	assert_true(big.compares <= 10 * small.compares + 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
