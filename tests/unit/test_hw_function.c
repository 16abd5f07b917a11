/* SPDX-License-Identifier: Apache-2.0 */
/* hw_pci_read_function() and hw_netdev_read_pci() on the sample nodes (examples/nodes, made
 * like real sysfs): a RoCE VF with its netdev, RDMA device, PF and index; a PF; an absent
 * function; a netdev's function; a virtual netdev. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hw/hw.h"

static struct hw_ctx *open_node(const char *node)
{
	char path[512];
	const char *nodes = getenv("NODES");
	struct hw_ctx *ctx;

	snprintf(path, sizeof(path), "%s/%s/sys", nodes ? nodes : "examples/nodes", node);
	assert_int_equal(hw_ctx_new(path, NULL, &ctx), 0);
	return ctx;
}

static void test_vf(void **st)
{
	struct hw_ctx *ctx = open_node("cx5-roce-sriov");
	struct hw_pci_function f;

	assert_int_equal(hw_pci_read_function(ctx, "0000:1b:00.2", &f), 0);
	assert_string_equal(f.driver, "mlx5_core");
	assert_int_equal(f.n_netdevs, 1);
	assert_string_equal(f.netdevs[0], "enp27s0f0v0");
	assert_int_equal(f.n_rdma, 1);
	assert_string_equal(f.rdma[0], "mlx5_2");
	assert_string_equal(f.physfn, "0000:1b:00.0");
	assert_int_equal(f.vf_index, 0);
	assert_int_equal(f.n_pf_netdevs, 1);
	assert_string_equal(f.pf_netdevs[0], "enp27s0f0np0");
	hw_pci_function_clear(&f);
	assert_int_equal(hw_pci_read_function(ctx, "0000:1b:01.3", &f), 0);
	assert_int_equal(f.vf_index, 9);
	hw_pci_function_clear(&f);
	hw_ctx_free(ctx);
}

static void test_pf_absent_invalid(void **st)
{
	struct hw_ctx *ctx = open_node("cx5-roce-sriov");
	struct hw_pci_function f;

	assert_int_equal(hw_pci_read_function(ctx, "0000:1b:00.0", &f), 0);
	assert_string_equal(f.physfn, "");
	assert_int_equal(f.vf_index, -1);
	assert_int_equal(f.n_pf_netdevs, 0);
	assert_string_equal(f.netdevs[0], "enp27s0f0np0");
	hw_pci_function_clear(&f);
	assert_int_equal(hw_pci_read_function(ctx, "0000:ee:00.0", &f), -ENOENT);
	assert_int_equal(hw_pci_read_function(ctx, "../../etc", &f), -EINVAL);
	hw_ctx_free(ctx);
}

static void test_netdev_pci(void **st)
{
	struct hw_ctx *ctx = open_node("cx5-roce-sriov");
	struct hw_ctx *bond = open_node("a100-ib-bond");
	char bdf[HW_BDF_MAX];

	assert_int_equal(hw_netdev_read_pci(ctx, "enp27s0f0v0", bdf), 1);
	assert_string_equal(bdf, "0000:1b:00.2");
	assert_int_equal(hw_netdev_read_pci(ctx, "nothere0", bdf), -ENOENT);
	assert_int_equal(hw_netdev_read_pci(ctx, "../x", bdf), -EINVAL);
	assert_int_equal(hw_netdev_read_pci(bond, "bond0", bdf), 0);
	hw_ctx_free(ctx);
	hw_ctx_free(bond);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vf),
		cmocka_unit_test(test_pf_absent_invalid),
		cmocka_unit_test(test_netdev_pci),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
