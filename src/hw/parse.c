/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of the strings the kernel writes in sysfs. Each takes a buffer and fills a value;
 * none touches the file system, so each has a fuzz target (tests/fuzz/fuzz_hw_parse.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* "%d: %s" (state, phys_state, node_type). */
static int parse_num_name(const char *s, int *num, char *name, size_t name_len)
{
	unsigned long long v;
	const char *end;
	size_t k;

	/* strtol's number: no str_scan_digits answer means no digit, or a number far past 255 */
	if (!s || !(k = str_scan_digits(s, 10, &v)) || v > 255 || s[k] != ':')
		return -EINVAL;
	end = s + k + 1;
	while (*end == ' ')
		end++;
	if (!*end)
		return -EINVAL;
	if (name && str_copy(name, name_len, end) < 0)
		return -EINVAL;
	*num = (int)v;
	return 0;
}

int hw_parse_state(const char *s, int *num, char *name, size_t name_len)
{
	return parse_num_name(s, num, name, name_len);
}

int hw_parse_node_type(const char *s, int *num, char *name, size_t name_len)
{
	return parse_num_name(s, num, name, name_len);
}

/* isalnum in the C locale */
static bool is_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* p past lit when p starts with it, else NULL (no byte past a NUL of p read) */
static const char *skip_lit(const char *p, const char *lit)
{
	for (; *lit; p++, lit++)
		if (*p != *lit)
			return NULL;
	return p;
}

/* What hw_parse_rate's sscanf reads from the kernel's own shape, "%d%s Gb/sec (%dX%s)" with ""
 * or ".5" and a speed of up to 7 letters and digits, the values it would give (a whole number
 * and a half are exact doubles) without scanf's machinery: a node of VFs has a thousand ports.
 * False for any other string, which the sscanf then reads as it always did. */
static bool rate_kernel_shape(const char *s, double *gbps, unsigned *width, char speed[16])
{
	unsigned long long v, w;
	const char *p;
	size_t k;

	if (!(k = str_scan_digits(s, 10, &v)) || k > 9)
		return false;
	*gbps = (double)v;
	p = s + k;
	if (p[0] == '.' && p[1] == '5') {
		*gbps += 0.5;
		p += 2;
	}
	if (!(p = skip_lit(p, " Gb/sec (")) || !(k = str_scan_digits(p, 10, &w)) || k > 9 ||
	    !(p = skip_lit(p + k, "X ")))
		return false;
	for (k = 0; is_alnum((unsigned char)p[k]); k++)
		if (k == 7)
			return false;
	if (!k || p[k] != ')' || p[k + 1])
		return false;
	memcpy(speed, p, k);
	speed[k] = '\0';
	*width = (unsigned)w;
	return true;
}

/* The kernel prints "%d%s Gb/sec (%dX%s)": rate, ".5" when odd, width, speed name. */
int hw_parse_rate(const char *s, struct hw_rate *ret)
{
	struct hw_rate r = { 0 };
	unsigned width;
	char speed[16], unit[16];
	double gbps;
	int n = 0;

	if (!s || str_copy(r.raw, sizeof(r.raw), s) < 0)
		return -EINVAL;
	if (!rate_kernel_shape(s, &gbps, &width, speed) &&
	    (sscanf(s, "%lf %15s (%uX %15[^)])%n", &gbps, unit, &width, speed, &n) != 4 ||
	     s[n] != '\0' || strcmp(unit, "Gb/sec")))
		return -EINVAL;
	if (gbps < 0 || gbps > 1e6 || width == 0 || width > 32)
		return -EINVAL;
	for (const char *p = speed; *p; p++)
		if (!is_alnum((unsigned char)*p))
			return -EINVAL;
	r.gbps = gbps;
	r.width = width;
	if (str_copy(r.speed, sizeof(r.speed), speed) < 0)
		return -EINVAL;
	*ret = r;
	return 0;
}

int hw_parse_gid(const char *s, uint8_t gid[16])
{
	uint8_t g[16];

	/* the length first: each group's bytes are then read without a test for the end */
	if (!s || strlen(s) != 39)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		const unsigned char *p = (const unsigned char *)s + i * 5;
		/* above 0xffff when one of the four is not a hex digit */
		uint32_t v = str_digit_value[p[0]] << 12 | str_digit_value[p[1]] << 8 |
			     str_digit_value[p[2]] << 4 | str_digit_value[p[3]];

		if (v > 0xffff || (i < 7 && p[4] != ':'))
			return -EINVAL;
		g[2 * i] = (uint8_t)(v >> 8);
		g[2 * i + 1] = (uint8_t)v;
	}
	memcpy(gid, g, 16);
	return 0;
}

int hw_parse_bond_mode(const char *s, char *name, size_t name_len, int *id)
{
	char buf[32];
	int n = 0, v;

	if (!s || sscanf(s, "%31s %d%n", buf, &v, &n) != 2 || s[n] != '\0' || v < 0 || v > 6)
		return -EINVAL;
	if (str_copy(name, name_len, buf) < 0)
		return -EINVAL;
	*id = v;
	return 0;
}

int hw_parse_devnum(const char *s, unsigned *major, unsigned *minor)
{
	char *colon, *end;
	unsigned long ma, mi;
	unsigned long long a, b;
	size_t k, l;

	/* the kernel's "%u:%u" digit by digit: three thousand char devices on a node with a
	 * thousand VFs */
	if (s && (k = str_scan_digits(s, 10, &a)) && s[k] == ':' &&
	    (l = str_scan_digits(s + k + 1, 10, &b)) && !s[k + 1 + l]) {
		*major = (unsigned)a;
		*minor = (unsigned)b;
		return 0;
	}
	/* anything else as sscanf("%u:%u") answers (blanks and a sign allowed before the minor,
	 * as there, and strtoul's overflow), without scanf's machinery */
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

int hw_parse_link_speed(const char *s, double *gts)
{
	char unit[8], bus[8];
	double v;
	int n = 0, k;

	/* pci_speed_string(): "%s GT/s PCIe" since 4.17; "2.5 GT/s", "5 GT/s", "8 GT/s" before */
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	k = sscanf(s, "%lf %7s%n %7s%n", &v, unit, &n, bus, &n);
	if (k < 2 || s[n] != '\0' || strcmp(unit, "GT/s") || (k == 3 && strcmp(bus, "PCIe")))
		return -EINVAL;
	if (!(v > 0 && v <= 256))
		return -EINVAL;
	*gts = v;
	return 0;
}

int hw_parse_attr_num(const char *s)
{
	char *end;
	long v;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || v < 0 || v > 255 ? -1 : (int)v;
}

bool hw_is_bdf(const char *s)
{
	/* dddd:bb:dd.f, all lower-case hex as the kernel names PCI devices; a NUL fails every
	 * byte's test, so none past the end is read */
	static const char shape[] = "xxxx:xx:xx.x";

	if (!s)
		return false;
#pragma GCC unroll 12
	for (size_t i = 0; shape[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (shape[i] == 'x' ? !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
				    : c != shape[i])
			return false;
	}
	return s[sizeof(shape) - 1] == '\0';
}

const char *hw_link_layer_name(enum hw_link_layer ll)
{
	switch (ll) {
	case HW_LINK_IB: return "InfiniBand";
	case HW_LINK_ETH: return "Ethernet";
	default: return "Unknown";
	}
}

bool hw_port_state_is_active(enum hw_port_state s)
{
	return s == HW_PORT_ACTIVE || s == HW_PORT_ACTIVE_DEFER;
}

const char *hw_port_state_name(enum hw_port_state s)
{
	/* the kernel's state_show() names, which `rdma link` prints too */
	static const char *const names[] = { "NOP",   "DOWN",	"INIT",
					     "ARMED", "ACTIVE", "ACTIVE_DEFER" };
	return (unsigned)s < ELEMENTSOF(names) ? names[s] : "UNKNOWN";
}

const char *hw_phys_state_name(enum hw_phys_state s)
{
	/* the kernel's phys_state_show() names */
	static const char *const names[] = { "<unknown>",
					     "Sleep",
					     "Polling",
					     "Disabled",
					     "PortConfigurationTraining",
					     "LinkUp",
					     "LinkErrorRecovery",
					     "Phy Test" };
	return (unsigned)s < ELEMENTSOF(names) ? names[s] : "<unknown>";
}

const char *hw_topo_name(enum hw_topo t)
{
	static const char *const names[] = { "?", "PIX", "PXB", "PHB", "NODE", "SYS" };
	return (unsigned)t < ELEMENTSOF(names) ? names[t] : "?";
}

const char *hw_chardev_kind_name(enum hw_chardev_kind k)
{
	static const char *const names[] = { "uverbs", "umad", "issm", "rdma_cm" };
	return (unsigned)k < ELEMENTSOF(names) ? names[k] : "?";
}

const char *hw_netdev_kind_name(enum hw_netdev_kind k)
{
	static const char *const names[] = { "other", "ether", "ipoib", "bond" };
	return (unsigned)k < ELEMENTSOF(names) ? names[k] : "other";
}

const char *hw_ndev_via_name(enum hw_ndev_via v)
{
	static const char *const names[] = { "none", "ipoib-guid", "gid-ndev", "pci-function" };
	return (unsigned)v < ELEMENTSOF(names) ? names[v] : "none";
}

const char *hw_module_state_name(enum hw_module_state s)
{
	static const char *const names[] = { "absent", "loaded", "builtin" };
	return (unsigned)s < ELEMENTSOF(names) ? names[s] : "absent";
}
