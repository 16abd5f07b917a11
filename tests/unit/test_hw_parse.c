/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of sysfs strings: the exact strings the kernel prints (sysfs-rdma-abi.md), and
 * the malformed ones a parser must refuse. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hw/hw-internal.h"
#include "hw/hw.h"
#include "util/cleanup.h"

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

/* ---- the parsers as they were before their digit-by-digit paths (sscanf, strtol, isxdigit):
 * the reference every answer below is compared with, byte for byte ---------------------- */

static int ref_num_name(const char *s, int *num, char *name, size_t name_len)
{
	char *end;
	long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || v < 0 || v > 255 || *end != ':')
		return -EINVAL;
	end++;
	while (*end == ' ')
		end++;
	if (!*end)
		return -EINVAL;
	if (name && (strlen(end) >= name_len || !name_len))
		return -EINVAL;
	if (name)
		strcpy(name, end);
	*num = (int)v;
	return 0;
}

static int ref_rate(const char *s, struct hw_rate *ret)
{
	struct hw_rate r = { 0 };
	unsigned width;
	char speed[16], unit[16];
	double gbps;
	int n = 0;

	if (!s || strlen(s) >= sizeof(r.raw))
		return -EINVAL;
	strcpy(r.raw, s);
	if (sscanf(s, "%lf %15s (%uX %15[^)])%n", &gbps, unit, &width, speed, &n) != 4 ||
	    s[n] != '\0')
		return -EINVAL;
	if (strcmp(unit, "Gb/sec") || gbps < 0 || gbps > 1e6 || width == 0 || width > 32)
		return -EINVAL;
	for (const char *p = speed; *p; p++)
		if (!isalnum((unsigned char)*p))
			return -EINVAL;
	r.gbps = gbps;
	r.width = width;
	if (strlen(speed) >= sizeof(r.speed))
		return -EINVAL;
	strcpy(r.speed, speed);
	*ret = r;
	return 0;
}

static int ref_gid(const char *s, uint8_t gid[16])
{
	uint8_t g[16];

	if (!s || strlen(s) != 39)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		const char *p = s + i * 5;
		unsigned v = 0;

		for (int k = 0; k < 4; k++) {
			if (!isxdigit((unsigned char)p[k]))
				return -EINVAL;
			v = v * 16 + (unsigned)(isdigit((unsigned char)p[k])
							? p[k] - '0'
							: tolower((unsigned char)p[k]) - 'a' + 10);
		}
		if (i < 7 && p[4] != ':')
			return -EINVAL;
		g[2 * i] = (uint8_t)(v >> 8);
		g[2 * i + 1] = (uint8_t)v;
	}
	memcpy(gid, g, 16);
	return 0;
}

static int ref_devnum(const char *s, unsigned *major, unsigned *minor)
{
	char *colon, *end;
	unsigned long ma, mi;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	ma = strtoul(s, &colon, 10);
	if (*colon != ':')
		return -EINVAL;
	mi = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || *end)
		return -EINVAL;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

static bool ref_is_bdf(const char *s)
{
	static const char shape[] = "xxxx:xx:xx.x";

	if (!s || strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i]; i++) {
		if (shape[i] == 'x' ? !isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])
				    : s[i] != shape[i])
			return false;
	}
	return true;
}

/* a fixed sequence (xorshift64), so that every run tries the same strings */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rng(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* bytes a parser must treat as the old one did: blanks, signs, both cases of hex, separators,
 * bytes past ASCII (which isalnum and isspace refuse in the C locale) */
static const char odd_bytes[] = " \t\n+-.:()xX0159afAFgGz\x80\xa0\xff";

/* s with a few of its bytes replaced, dropped or doubled (into out, NUL-terminated) */
static void mutate(const char *s, char *out, size_t out_len)
{
	size_t n = strlen(s);

	memcpy(out, s, n + 1);
	for (unsigned k = rng(4); k > 0 && n > 0; k--) {
		size_t at = rng((unsigned)n);

		switch (rng(3)) {
		case 0: out[at] = odd_bytes[rng(sizeof(odd_bytes) - 1)]; break;
		case 1: memmove(out + at, out + at + 1, n - at), n--; break;
		default:
			if (n + 2 < out_len) {
				memmove(out + at + 1, out + at, n - at + 1);
				n++;
			}
		}
	}
}

static void check_rate(const char *s)
{
	struct hw_rate got, want;
	int r = hw_parse_rate(s, &got), w = ref_rate(s, &want);

	if (r != w)
		fail_msg("hw_parse_rate(\"%s\") = %d, was %d", s, r, w);
	if (r == 0 && (strcmp(got.raw, want.raw) || memcmp(&got.gbps, &want.gbps, sizeof(double)) ||
		       got.width != want.width || strcmp(got.speed, want.speed)))
		fail_msg("hw_parse_rate(\"%s\"): %g %uX %s, was %g %uX %s", s, got.gbps, got.width,
			 got.speed, want.gbps, want.width, want.speed);
}

/* The old sscanf's answers for the kernel's shape and around it: what "%lf" takes (exponents,
 * hex, inf, nan, signs, blanks), the blanks scanf skips or requires, every length limit. */
static void test_rate_edges(void **st)
{
	static const struct {
		const char *s;
		int r;
		double gbps;
		unsigned width;
		const char *speed;
	} t[] = {
		{ "200 Gb/sec (4X HDR)", 0, 200, 4, "HDR" },
		{ "2.5 Gb/sec (1X SDR)", 0, 2.5, 1, "SDR" },
		{ "0 Gb/sec (1X SDR)", 0, 0, 1, "SDR" },
		{ "007 Gb/sec (4X HDR)", 0, 7, 4, "HDR" },
		{ "1000000 Gb/sec (4X HDR)", 0, 1e6, 4, "HDR" },
		{ "1000000.5 Gb/sec (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "1000001 Gb/sec (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "999999999 Gb/sec (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "2.50 Gb/sec (1X SDR)", 0, 2.5, 1, "SDR" },
		{ "14.0625 Gb/sec (1X FDR)", 0, 14.0625, 1, "FDR" },
		{ "2. Gb/sec (1X SDR)", 0, 2, 1, "SDR" },
		{ ".5 Gb/sec (1X SDR)", 0, 0.5, 1, "SDR" },
		{ "1e2 Gb/sec (4X HDR)", 0, 100, 4, "HDR" },
		{ "0x10 Gb/sec (4X HDR)", 0, 16, 4, "HDR" },
		{ "inf Gb/sec (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "-1 Gb/sec (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "+200 Gb/sec (4X HDR)", 0, 200, 4, "HDR" },
		{ " 200 Gb/sec (4X HDR)", 0, 200, 4, "HDR" },
		{ "\t200 Gb/sec (4X HDR)", 0, 200, 4, "HDR" },
		{ "200Gb/sec (4X HDR)", 0, 200, 4, "HDR" },
		{ "200  Gb/sec\t(4X HDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec(4X HDR)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec ( 4X HDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec (+4X HDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec (-4X HDR)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (04X HDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec (32X HDR)", 0, 200, 32, "HDR" },
		{ "200 Gb/sec (33X HDR)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4XHDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec (4X  HDR)", 0, 200, 4, "HDR" },
		{ "200 Gb/sec (4x HDR)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X HDR )", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X H\x80R)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X ABCDEFG)", 0, 200, 4, "ABCDEFG" },
		{ "200 Gb/sec (4X ABCDEFGH)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X 0123456789abcdef)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X )", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X HDR)\n", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X HDR", -EINVAL, 0, 0, NULL },
		{ "200 Gb/secs (4X HDR)", -EINVAL, 0, 0, NULL },
		{ "200 Gb/sec (4X HDR)))))))))))))))))))))))))))))", -EINVAL, 0, 0, NULL },
	};
	struct hw_rate r;

	(void)st;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		int got = hw_parse_rate(t[i].s, &r);

		if (got != t[i].r)
			fail_msg("hw_parse_rate(\"%s\") = %d, want %d", t[i].s, got, t[i].r);
		if (got == 0) {
			assert_true(r.gbps == t[i].gbps);
			assert_int_equal(r.width, t[i].width);
			assert_string_equal(r.speed, t[i].speed);
			assert_string_equal(r.raw, t[i].s);
		}
		check_rate(t[i].s);
	}
	/* the answers "%lf" gives that compare equal to nothing above: NaN and a negative zero */
	assert_int_equal(hw_parse_rate("nan Gb/sec (4X HDR)", &r), 0);
	assert_true(isnan(r.gbps));
	assert_int_equal(hw_parse_rate("-0 Gb/sec (4X HDR)", &r), 0);
	assert_true(r.gbps == 0 && signbit(r.gbps));
	check_rate("nan Gb/sec (4X HDR)");
	check_rate("-0 Gb/sec (4X HDR)");
	assert_true(hw_parse_rate(NULL, &r) < 0);
}

/* Strings built from the pieces of the kernel's shape and their odd neighbours, and the
 * kernel's own strings with bytes changed: every answer as the sscanf's. */
static void test_rate_same_as_sscanf(void **st)
{
	static const char *const num[] = {
		"200",	   "2.5",     "2.50",	     "0",	  "007", "1e2", "0x10", "inf",
		"nan",	   "-0",      " 200",	     "+200",	  "-1",	 "2.",	".5",	"999999999",
		"1000000", "1000001", "12345678901", "1000000.5", "3.5", ""
	};
	static const char *const blank[] = { " ", "", "  ", "\t" };
	static const char *const unit[] = { "Gb/sec", "Mb/sec", "Gb/sec(", "Gb/secs", "" };
	static const char *const open[] = { "(", "", "[", "( " };
	static const char *const width[] = { "4",  "1",	 "0",  "32", "33",	    "04",
					     "-4", "+4", " 4", "12", "99999999999", "" };
	static const char *const x[] = { "X", "x", "", "X " };
	static const char *const speed[] = { "HDR",	 "SDR", "FDR10",	   "ABCDEFG",
					     "ABCDEFGH", "H R", "H\x80R",	   "",
					     "HDR ",	 "h-r", "0123456789abcdef" };
	static const char *const close[] = { ")", "", "))", ") ", ")\n", ")x" };
	static const char *const kernel[] = { "200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)",
					      "40 Gb/sec (4X FDR10)", "800 Gb/sec (4X XDR)" };
	char s[256], m[256];

	(void)st;
	for (int i = 0; i < 20000; i++) {
		snprintf(s, sizeof(s), "%s%s%s%s%s%s%s%s%s%s", num[rng(ELEMENTSOF(num))],
			 blank[rng(ELEMENTSOF(blank))], unit[rng(ELEMENTSOF(unit))],
			 blank[rng(ELEMENTSOF(blank))], open[rng(ELEMENTSOF(open))],
			 width[rng(ELEMENTSOF(width))], x[rng(ELEMENTSOF(x))],
			 blank[rng(ELEMENTSOF(blank))], speed[rng(ELEMENTSOF(speed))],
			 close[rng(ELEMENTSOF(close))]);
		check_rate(s);
		mutate(kernel[rng(ELEMENTSOF(kernel))], m, sizeof(m));
		check_rate(m);
	}
}

/* GIDs with digits of either case and bytes changed, numbers and names around "%d: %s",
 * "%u:%u" with blanks, signs and overflow, BDFs: the old answers each time. */
static void test_parsers_same_as_before(void **st)
{
	static const char xdigits[] = "0123456789abcdefABCDEF";
	static const char *const num[] = { "4",
					   "0",
					   "255",
					   "256",
					   "-1",
					   "+4",
					   " 4",
					   "0004",
					   "000000000000000000000000000000004",
					   "99999999999999999999",
					   "18446744073709551616",
					   "" };
	static const char *const sep[] = { ":", ": ", ":  ", " :", "", ":\t" };
	static const char *const name[] = { "ACTIVE",	"",
					    " ",	"LinkUp",
					    "Phy Test", "PortConfigurationTrainingAndMoreThan32" };
	static const char *const dev[] = { "231",
					   "0",
					   "4294967295",
					   "4294967296",
					   "18446744073709551615",
					   "18446744073709551616",
					   "-1",
					   "+5",
					   " 7",
					   "0x10",
					   "",
					   "192\n",
					   "007" };
	char s[128], m[128];

	(void)st;
	for (int i = 0; i < 20000; i++) {
		uint8_t g1[16], g2[16];
		unsigned a1 = 0, b1 = 0, a2 = 0, b2 = 0;
		char n1[32], n2[32];
		int v1 = -1, v2 = -1, r1, r2;
		size_t nl = rng(3) ? sizeof(n1) : 3;

		for (int k = 0; k < 39; k++)
			s[k] = k % 5 == 4 ? ':' : xdigits[rng(sizeof(xdigits) - 1)];
		s[39] = '\0';
		if (rng(2))
			mutate(s, m, sizeof(m));
		else
			strcpy(m, s);
		r1 = hw_parse_gid(m, g1);
		r2 = ref_gid(m, g2);
		assert_int_equal(r1, r2);
		if (r1 == 0)
			assert_memory_equal(g1, g2, 16);

		snprintf(s, sizeof(s), "%s%s%s", num[rng(ELEMENTSOF(num))],
			 sep[rng(ELEMENTSOF(sep))], name[rng(ELEMENTSOF(name))]);
		mutate(s, m, sizeof(m));
		for (const char *t = s; t; t = t == s ? m : NULL) {
			r1 = hw_parse_state(t, &v1, n1, nl);
			r2 = ref_num_name(t, &v2, n2, nl);
			if (r1 != r2)
				fail_msg("hw_parse_state(\"%s\") = %d, was %d", t, r1, r2);
			if (r1 == 0) {
				assert_int_equal(v1, v2);
				assert_string_equal(n1, n2);
			}
			assert_int_equal(hw_parse_node_type(t, &v1, NULL, 0),
					 ref_num_name(t, &v2, NULL, 0));
		}

		snprintf(s, sizeof(s), "%s%s%s", dev[rng(ELEMENTSOF(dev))], rng(8) ? ":" : "",
			 dev[rng(ELEMENTSOF(dev))]);
		mutate(s, m, sizeof(m));
		for (const char *t = s; t; t = t == s ? m : NULL) {
			r1 = hw_parse_devnum(t, &a1, &b1);
			r2 = ref_devnum(t, &a2, &b2);
			if (r1 != r2 || (r1 == 0 && (a1 != a2 || b1 != b2)))
				fail_msg("hw_parse_devnum(\"%s\") = %d %u:%u, was %d %u:%u", t, r1,
					 a1, b1, r2, a2, b2);
		}

		snprintf(s, sizeof(s), "%04x:%02x:%02x.%x", rng(0x10000), rng(0x100), rng(0x20),
			 rng(8));
		mutate(s, m, sizeof(m));
		assert_int_equal(hw_is_bdf(s), ref_is_bdf(s));
		assert_int_equal(hw_is_bdf(m), ref_is_bdf(m));
	}
	assert_true(hw_parse_gid("FE80:0000:0000:0000:E8EB:D303:0072:1415", (uint8_t[16]){ 0 }) ==
		    0);
	assert_int_equal(
		hw_parse_gid("fe80:0000:0000:0000:e8eb:d303:0072:141\x80", (uint8_t[16]){ 0 }),
		-EINVAL);
	assert_int_equal(
		hw_parse_gid("fe80:0000:0000:0000:e8eb:d303:0072:1415:", (uint8_t[16]){ 0 }),
		-EINVAL);
	assert_false(hw_is_bdf("0000:37:00.0\n"));
	assert_false(hw_is_bdf("0000:37:00.\xe0"));
	assert_false(hw_is_bdf(""));
	assert_false(hw_is_bdf(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_rate_edges),
		cmocka_unit_test(test_rate_same_as_sscanf),
		cmocka_unit_test(test_parsers_same_as_before),
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
