/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of sysfs strings: the exact strings the kernel prints (sysfs-rdma-abi.md), and
 * the malformed ones a parser must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hw/hw-internal.h"
#include "hw/hw.h"

static void test_state(void **st)
{
	int n;
	char name[32];

	assert_int_equal(hw_parse_state("4: ACTIVE", &n, name, sizeof(name)), 0);
	assert_int_equal(n, 4);
	assert_string_equal(name, "ACTIVE");
	assert_int_equal(hw_parse_state("4: PortConfigurationTraining", &n, name, sizeof(name)), 0);
	assert_string_equal(name, "PortConfigurationTraining");
	assert_int_equal(hw_parse_state("0: <unknown>", &n, name, sizeof(name)), 0);
	assert_int_equal(n, 0);
	assert_true(hw_parse_state("ACTIVE", &n, name, sizeof(name)) < 0);
	assert_true(hw_parse_state("4:", &n, name, sizeof(name)) < 0);
	assert_true(hw_parse_state("", &n, name, sizeof(name)) < 0);
	assert_true(hw_parse_state("-1: DOWN", &n, name, sizeof(name)) < 0);
	assert_true(hw_parse_state("4: ACTIVE", &n, name, 3) <
		    0); /* does not fit: refused, not truncated */
}

static void test_rate(void **st)
{
	struct hw_rate r;

	assert_int_equal(hw_parse_rate("200 Gb/sec (4X HDR)", &r), 0);
	assert_true(r.gbps == 200.0);
	assert_int_equal(r.width, 4);
	assert_string_equal(r.speed, "HDR");
	assert_int_equal(hw_parse_rate("2.5 Gb/sec (1X SDR)", &r), 0);
	assert_true(r.gbps == 2.5);
	assert_int_equal(hw_parse_rate("100 Gb/sec (2X HDR)", &r), 0); /* HDR100 */
	assert_int_equal(r.width, 2);
	assert_int_equal(hw_parse_rate("10 Gb/sec (1X QDR)", &r), 0); /* 10GbE RoCE */
	assert_int_equal(hw_parse_rate("800 Gb/sec (4X XDR)", &r), 0);
	assert_int_equal(hw_parse_rate("40 Gb/sec (4X FDR10)", &r), 0);
	assert_string_equal(r.speed, "FDR10");
	assert_true(hw_parse_rate("200 Gb/sec", &r) < 0);
	assert_true(hw_parse_rate("200 Mb/sec (4X HDR)", &r) < 0);
	assert_true(hw_parse_rate("200 Gb/sec (0X HDR)", &r) < 0);
	assert_true(hw_parse_rate("200 Gb/sec (4X HDR) x", &r) < 0);
	assert_true(hw_parse_rate("", &r) < 0);
}

static void test_gid(void **st)
{
	uint8_t g[16];

	assert_int_equal(hw_parse_gid("fe80:0000:0000:0000:e8eb:d303:0072:1415", g), 0);
	assert_int_equal(g[0], 0xfe);
	assert_int_equal(g[15], 0x15);
	assert_int_equal(hw_parse_gid("0000:0000:0000:0000:0000:ffff:c0a8:04e1", g), 0);
	assert_int_equal(g[12], 0xc0);
	assert_true(hw_parse_gid("fe80::1", g) < 0);
	assert_true(hw_parse_gid("fe80:0000:0000:0000:e8eb:d303:0072:141", g) < 0);
	assert_true(hw_parse_gid("fe80-0000:0000:0000:e8eb:d303:0072:1415", g) < 0);
	assert_true(hw_parse_gid("ge80:0000:0000:0000:e8eb:d303:0072:1415", g) < 0);
}

static void test_misc(void **st)
{
	char name[32];
	int id;
	unsigned ma, mi;
	char bdf[HW_BDF_MAX];

	assert_int_equal(hw_parse_bond_mode("active-backup 1", name, sizeof(name), &id), 0);
	assert_string_equal(name, "active-backup");
	assert_int_equal(id, 1);
	assert_int_equal(hw_parse_bond_mode("802.3ad 4", name, sizeof(name), &id), 0);
	assert_true(hw_parse_bond_mode("802.3ad", name, sizeof(name), &id) < 0);
	assert_int_equal(hw_parse_devnum("231:192", &ma, &mi), 0);
	assert_int_equal(ma, 231);
	assert_int_equal(mi, 192);
	assert_true(hw_parse_devnum("231", &ma, &mi) < 0);
	assert_true(hw_parse_devnum("231:19x", &ma, &mi) < 0);
	assert_true(hw_is_bdf("0000:37:00.0"));
	assert_false(hw_is_bdf("0000:37:00"));
	assert_false(hw_is_bdf("0000:3G:00.0"));
	assert_false(hw_is_bdf("0000:AB:00.0")); /* the kernel names them lower case */
	assert_int_equal(hw_parse_node_type("1: CA", &id, name, sizeof(name)), 0);
	assert_string_equal(name, "CA");
	assert_int_equal(
		hw_path_parent_bdf(
			"../../devices/pci0000:36/0000:36:02.0/0000:37:00.0/infiniband/mlx5_0",
			bdf),
		0);
	assert_string_equal(bdf, "0000:37:00.0");
	assert_int_equal(hw_path_parent_bdf("../0000:37:00.5", bdf), 0);
	assert_string_equal(bdf, "0000:37:00.5");
	assert_true(hw_path_parent_bdf("../../devices/virtual/net/bond0", bdf) < 0);
}

static void test_link_speed(void **st)
{
	double g = 0;

	assert_int_equal(hw_parse_link_speed("16.0 GT/s PCIe", &g), 0);
	assert_true(g == 16.0);
	assert_int_equal(hw_parse_link_speed("2.5 GT/s PCIe", &g), 0);
	assert_true(g == 2.5);
	assert_int_equal(hw_parse_link_speed("8 GT/s", &g), 0); /* kernels before 4.17 */
	assert_true(g == 8.0);
	assert_true(hw_parse_link_speed("Unknown", &g) < 0);
	assert_true(hw_parse_link_speed("Unknown speed", &g) < 0);
	assert_true(hw_parse_link_speed("16.0 GT/s PCIe x", &g) < 0);
	assert_true(hw_parse_link_speed("16.0 Gb/s", &g) < 0);
	assert_true(hw_parse_link_speed("nan GT/s", &g) < 0);
	assert_true(hw_parse_link_speed("", &g) < 0);
}

static struct hw_pci mkpci(const char *root, const char *const *path, size_t n, int numa)
{
	static char storage[8][8][HW_BDF_MAX];
	static int used;
	struct hw_pci p = { .numa_node = numa };

	strcpy(p.root, root);
	p.path = storage[used++ % 8];
	for (size_t i = 0; i < n; i++)
		strcpy(p.path[i], path[i]);
	p.path_len = n;
	return p;
}

static void test_topology(void **st)
{
	/* DGX-A100-like: root port -> switch 1 -> (switch 2a -> GPU0, NIC0), (switch 2b -> GPU1) */
	const char *gpu0[] = { "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0",
			       "0000:04:00.0" };
	const char *nic0[] = { "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0",
			       "0000:04:08.0" };
	const char *gpu1[] = { "0000:00:01.0", "0000:01:00.0", "0000:02:04.0", "0000:07:00.0",
			       "0000:08:00.0" };
	const char *other_rp[] = { "0000:00:03.0" };
	struct hw_pci g0 = mkpci("pci0000:00", gpu0, 5, 0), n0 = mkpci("pci0000:00", nic0, 5, 0),
		      g1 = mkpci("pci0000:00", gpu1, 5, 0),
		      g2 = mkpci("pci0000:00", other_rp, 1, 0),
		      g3 = mkpci("pci0000:40", other_rp, 1, 0),
		      g4 = mkpci("pci0000:80", other_rp, 1, 1);

	assert_int_equal(hw_topo_relation(&g0, &n0), HW_TOPO_PIX);
	assert_int_equal(hw_topo_relation(&g1, &n0), HW_TOPO_PXB);
	assert_int_equal(hw_topo_relation(&g2, &n0), HW_TOPO_PHB);
	assert_int_equal(hw_topo_relation(&g3, &n0), HW_TOPO_NODE);
	assert_int_equal(hw_topo_relation(&g4, &n0), HW_TOPO_SYS);
	assert_string_equal(hw_topo_name(HW_TOPO_PXB), "PXB");
}

static void test_port_state_names(void **st)
{
	assert_true(hw_port_state_is_active(HW_PORT_ACTIVE));
	assert_true(hw_port_state_is_active(HW_PORT_ACTIVE_DEFER));
	assert_false(hw_port_state_is_active(HW_PORT_ARMED));
	assert_false(hw_port_state_is_active(HW_PORT_STATE_UNKNOWN));
	assert_false(hw_port_state_is_active((enum hw_port_state)6));
	assert_string_equal(hw_port_state_name(HW_PORT_NOP), "NOP");
	assert_string_equal(hw_port_state_name(HW_PORT_ACTIVE_DEFER), "ACTIVE_DEFER");
	assert_string_equal(hw_port_state_name(HW_PORT_STATE_UNKNOWN), "UNKNOWN");
	assert_string_equal(hw_port_state_name((enum hw_port_state)6), "UNKNOWN");
	assert_string_equal(hw_phys_state_name(HW_PHYS_LINK_UP), "LinkUp");
	assert_string_equal(hw_phys_state_name(HW_PHYS_PHY_TEST), "Phy Test");
	assert_string_equal(hw_phys_state_name(HW_PHYS_UNKNOWN), "<unknown>");
}

static void test_port_iterator(void **st)
{
	struct hw_port p0[2], p2[1];
	struct hw_rdma_dev devs[4] = {
		[0] = { .ports = p0, .n_ports = 2 }, [2] = { .ports = p2, .n_ports = 1 }
	};
	struct hw_node node = { .rdma = devs, .n_rdma = 4 }, empty = { .n_rdma = 0 };
	const struct hw_port *want[] = { &p0[0], &p0[1], &p2[0] };
	size_t n = 0;

	p0[0].dev = p0[1].dev = &devs[0];
	p2[0].dev = &devs[2];
	/* devices without ports (devs[1], devs[3]) are stepped over, also at the end */
	HW_NODE_FOREACH_PORT(&node, p)
	{
		assert_true(n < 3);
		assert_ptr_equal(p, want[n++]);
	}
	assert_int_equal(n, 3);
	HW_NODE_FOREACH_PORT(&empty, p)
	fail();
	n = 0;
	HW_DEV_FOREACH_PORT(&devs[0], p)
	n++;
	HW_DEV_FOREACH_PORT(&devs[1], p)
	fail();
	assert_int_equal(n, 2);
}

/* A config space dump with the extended capabilities given as (id, offset), chained in order. */
static void put_caps(uint8_t *cfg, const unsigned (*caps)[2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned next = i + 1 < n ? caps[i + 1][1] : 0;
		uint32_t hdr = caps[i][0] | 1u << 16 | next << 20;

		memcpy(cfg + caps[i][1], &hdr, 4); /* little-endian host, as the file is */
	}
}

static void test_pci_acs(void **st)
{
	static uint8_t cfg[4096];
	static const unsigned chain[][2] = { { 0x0001, 0x100 },
					     { 0x0019, 0x148 },
					     { 0x000d, 0x180 } };
	static const unsigned loop[][2] = { { 0x0001, 0x100 },
					    { 0x0002, 0x140 },
					    { 0x0001, 0x100 } };

	assert_int_equal(hw_pci_acs_control(cfg, 64), -2); /* a non-root read: 64 bytes */
	assert_int_equal(hw_pci_acs_control(cfg, 0x103), -2);
	assert_int_equal(hw_pci_acs_control(cfg, sizeof(cfg)), -1); /* no capability at 0x100 */
	put_caps(cfg, chain, 3);
	cfg[0x186] = 0x1d; /* SV, RR, CR, UF */
	assert_int_equal(hw_pci_acs_control(cfg, sizeof(cfg)), 0x1d);
	assert_true(hw_pci_acs_control(cfg, sizeof(cfg)) & HW_PCI_ACS_P2P_REQUEST_REDIRECT);
	assert_int_equal(hw_pci_acs_control(cfg, 0x184), -1); /* cut before the ACS header ends */
	memset(cfg, 0, sizeof(cfg));
	put_caps(cfg, loop, 2);					    /* 0x100 -> 0x140 */
	put_caps(cfg, loop + 1, 2);				    /* 0x140 -> 0x100: a loop */
	assert_int_equal(hw_pci_acs_control(cfg, sizeof(cfg)), -1); /* ends, does not spin */
}

static void test_attr_num(void **st)
{
	assert_int_equal(hw_parse_attr_num("4: ACTIVE"), 4);
	assert_int_equal(hw_parse_attr_num("1"), 1);
	assert_int_equal(hw_parse_attr_num("0\n"), 0);
	assert_int_equal(hw_parse_attr_num(""),
			 -1); /* an admin-down netdev's carrier in a fixture */
	assert_int_equal(hw_parse_attr_num("xyz"), -1);
	assert_int_equal(hw_parse_attr_num("-1"), -1);
	assert_int_equal(hw_parse_attr_num("256"), -1);
	assert_int_equal(hw_parse_attr_num("99999999999999999999"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_gid),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_link_speed),
		cmocka_unit_test(test_port_state_names),
		cmocka_unit_test(test_port_iterator),
		cmocka_unit_test(test_pci_acs),
		cmocka_unit_test(test_attr_num),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
