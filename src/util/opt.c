/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>

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
