/* SPDX-License-Identifier: Apache-2.0 */
/* The clock and the median of the floor programs of make bench (tools/netns_floor.c,
 * tests/helpers/nl_floor.c): C library only, as the floors must be. */
#ifndef RDMAK_FLOOR_TIME_H
#define RDMAK_FLOOR_TIME_H

#include <stdlib.h>
#include <time.h>

static inline double floor_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline int floor_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place). */
static inline double floor_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), floor_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
