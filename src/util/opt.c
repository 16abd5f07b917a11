/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/opt.h"

int opt_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		   unsigned long long *ret)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (~0ULL - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*p)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int opt_uint(const char *role, const char *opt, const char *s, unsigned long long min,
	     unsigned long long max, const char *unit, unsigned long long *ret)
{
	int r = opt_parse_uint(s, min, max, ret);

	if (r < 0)
		fprintf(stderr, "rdmak %s: %s: expected %llu to %llu%s%s, got '%s'\n", role, opt,
			min, max, *unit ? " " : "", unit, s);
	return r;
}

static unsigned long long pow10u(unsigned n)
{
	unsigned long long p = 1;

	while (n--)
		p *= 10;
	return p;
}

int opt_parse_decimal(const char *s, unsigned decimals, unsigned long long min,
		      unsigned long long max, unsigned long long *ret)
{
	unsigned long long v = 0, scale;
	const char *p = s;
	unsigned frac = 0;

	if (!s || decimals > 9 || !(*s >= '0' && *s <= '9'))
		return -EINVAL;
	scale = pow10u(decimals);
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (~0ULL / scale - (unsigned)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned)(*p - '0');
	}
	v *= scale;
	if (*p == '.') {
		if (!(p[1] >= '0' && p[1] <= '9'))
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++, frac++) {
			if (frac == decimals)
				return -EINVAL;
			v += (unsigned long long)(*p - '0') * pow10u(decimals - frac - 1);
		}
	}
	if (*p)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* v / 10^decimals as the user would write it: "600", "0.1", "0.001". */
static const char *fixed(char *buf, size_t n, unsigned long long v, unsigned decimals)
{
	unsigned long long scale = pow10u(decimals);
	int w = snprintf(buf, n, "%llu", v / scale);

	if (v % scale && w > 0 && (size_t)w < n) {
		char *end;

		snprintf(buf + w, n - (size_t)w, ".%0*llu", (int)decimals, v % scale);
		end = buf + strlen(buf);
		while (end[-1] == '0')
			*--end = '\0';
	}
	return buf;
}

int opt_decimal(const char *role, const char *opt, const char *s, unsigned decimals,
		unsigned long long min, unsigned long long max, const char *unit,
		unsigned long long *ret)
{
	char lo[32], hi[32];
	int r = opt_parse_decimal(s, decimals, min, max, ret);

	if (r < 0)
		fprintf(stderr,
			"rdmak %s: %s: expected %s to %s%s%s (up to %u decimal%s), got '%s'\n",
			role, opt, fixed(lo, sizeof(lo), min, decimals),
			fixed(hi, sizeof(hi), max, decimals), *unit ? " " : "", unit, decimals,
			decimals == 1 ? "" : "s", s);
	return r;
}
