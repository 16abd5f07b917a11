/* SPDX-License-Identifier: Apache-2.0 */
/* pool_health_poll() over a throwaway sysfs tree: port state and carrier changes are seen through
 * the held attributes, an unreadable (empty) carrier is "unknown", and a device that appears
 * only after the first poll is picked up. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool/health.h"
#include "pool/pool.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], cmd[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_poll(void **st)
{
	struct pool_health_input in[3] = {
		{ .kind = POOL_HEALTH_PORT, .name = "mlx5_0", .port = 1, .value = 4, .fd = -1 },
		{ .kind = POOL_HEALTH_CARRIER, .name = "ib0", .value = 1, .fd = -1 },
		{ .kind = POOL_HEALTH_PORT, .name = "mlx5_9", .port = 1, .value = 4, .fd = -1 },
	};
	struct pool_set ps = { .inputs = in, .n_inputs = 3 };
	struct hw_ctx *ctx;
	char cmd[128];
	uint64_t fp1, fp2;

	snprintf(root, sizeof(root), "/tmp/rdmak-health.XXXXXX");
	assert_non_null(mkdtemp(root));
	put("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put("class/net/ib0/carrier", "1\n");
	assert_int_equal(hw_ctx_new(root, NULL, &ctx), 0);

	/* mlx5_9 does not exist: gone */
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_true(in[2].gone);
	assert_false(pool_health_input_ok(&in[2]));
	assert_int_equal(pool_health_poll(&ps, ctx), 0);
	assert_true(in[0].fd >= 0 && in[1].fd >= 0);

	put("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_int_equal(in[0].value, 1);
	assert_false(pool_health_input_ok(&in[0]));

	/* ACTIVE_DEFER passes traffic: healthy, as the doctor's port.state says (issue 11, item
	 * 18) */
	put("class/infiniband/mlx5_0/ports/1/state", "5: ACTIVE_DEFER\n");
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_int_equal(in[0].value, HW_PORT_ACTIVE_DEFER);
	assert_true(pool_health_input_ok(&in[0]));

	put("class/net/ib0/carrier", "0\n");
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_false(pool_health_input_ok(&in[1]));
	put("class/net/ib0/carrier", ""); /* the kernel's EINVAL on an admin-down link */
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_int_equal(in[1].value, -1);
	assert_true(pool_health_input_ok(&in[1]));

	/* the device appears: read and no longer gone */
	assert_int_equal(pool_health_topology_fingerprint(ctx, &fp1), 0);
	put("class/infiniband/mlx5_9/ports/1/state", "4: ACTIVE\n");
	assert_int_equal(pool_health_topology_fingerprint(ctx, &fp2), 0);
	assert_true(fp1 != fp2);
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_false(in[2].gone);
	assert_true(pool_health_input_ok(&in[2]));

	for (int i = 0; i < 3; i++)
		if (in[i].fd >= 0)
			close(in[i].fd);
	hw_ctx_free(ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* The poll reads inside the sysfs root as every other read of it (issue 11, item 19): a device
 * directory that is an absolute link out of the root is taken relative to the root, so the
 * file outside is never read (before, openat() followed it to this machine's file). */
static void test_poll_confined(void **st)
{
	struct pool_health_input in[1] = {
		{ .kind = POOL_HEALTH_PORT, .name = "mlx5_0", .port = 1, .value = 1, .fd = -1 }
	};
	struct pool_set ps = { .inputs = in, .n_inputs = 1 };
	struct hw_ctx *ctx;
	char outside[96], cmd[1024], link[128];

	(void)st;
	snprintf(root, sizeof(root), "/tmp/rdmak-health.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(outside, sizeof(outside), "%s-outside", root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/ports/1' && echo '4: ACTIVE' "
		 ">'%s/ports/1/state' && mkdir -p "
		 "'%s/class/infiniband'",
		 outside, outside, root);
	assert_int_equal(system(cmd), 0);
	snprintf(link, sizeof(link), "%s/class/infiniband/mlx5_0", root);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(hw_ctx_new(root, NULL, &ctx), 0);

	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_true(in[0].gone);	  /* <root><outside>/ports/1/state does not exist */
	assert_int_equal(in[0].value, 1); /* and the ACTIVE outside was not read */

	/* the same target made real under the root is what the link names */
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s%s/ports/1' && echo '4: ACTIVE' >'%s%s/ports/1/state'", root, outside,
		 root, outside);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(pool_health_poll(&ps, ctx), 1);
	assert_false(in[0].gone);
	assert_int_equal(in[0].value, 4);

	if (in[0].fd >= 0)
		close(in[0].fd);
	hw_ctx_free(ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, outside);
	assert_int_equal(system(cmd), 0);
}

static void test_describe(void **st)
{
	struct pool_health_input in = {
		.kind = POOL_HEALTH_PORT, .name = "mlx5_0", .port = 1, .value = 1, .fd = -1
	};
	char buf[128];

	pool_health_input_describe(&in, buf, sizeof(buf));
	assert_string_equal(buf, "mlx5_0 port 1 DOWN");
	in.value = 5;
	pool_health_input_describe(&in, buf, sizeof(buf));
	assert_string_equal(buf, "mlx5_0 port 1 ACTIVE_DEFER");
	in.value = 9;
	pool_health_input_describe(&in, buf, sizeof(buf));
	assert_string_equal(buf, "mlx5_0 port 1 unknown");
	in.gone = true;
	pool_health_input_describe(&in, buf, sizeof(buf));
	assert_string_equal(buf, "mlx5_0 gone");
	in = (struct pool_health_input){
		.kind = POOL_HEALTH_CARRIER, .name = "ib0", .value = 0, .fd = -1
	};
	pool_health_input_describe(&in, buf, sizeof(buf));
	assert_string_equal(buf, "ib0 no carrier");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll),
		cmocka_unit_test(test_poll_confined),
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
