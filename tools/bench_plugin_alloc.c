/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's own share of an Allocate: pool_allocate_container() + kubelet_container_alloc_clear() on a
 * sample node, without gRPC (tools/bench-plugin.mjs measures the round trip).
 *   cc -O2 -Isrc -Ibuild/gen tools/bench_plugin_alloc.c build/librdmak.a $(pkg-config --libs ...)
 *   bench_plugin_alloc examples/nodes/cx7-rail-1016vf examples/plugin/rail-1016vf.json [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool/allocate.h"
#include "pool/config.h"
#include "pool/pool.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char sys[4096], dev[4096], err[512], *buf;
	struct pool_config *cfg;
	struct hw_ctx *ctx;
	struct hw_node *node;
	struct hw_error herr;
	struct pool_set *ps;
	FILE *f;
	long len;
	int n = argc > 3 ? atoi(argv[3]) : 100000;
	double *t;

	if (argc < 3)
		return 2;
	snprintf(sys, sizeof(sys), "%s/sys", argv[1]);
	snprintf(dev, sizeof(dev), "%s/dev", argv[1]);
	f = fopen(argv[2], "r");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "short read\n");
		return 1;
	}
	fclose(f);
	if (pool_config_parse(buf, (size_t)len, &cfg, err, sizeof(err)) < 0 || hw_ctx_new(sys, dev, &ctx) < 0 ||
	    hw_load(ctx, 0, &node, &herr) < 0 || pool_set_build(cfg, node, NULL, &ps) < 0) {
		fprintf(stderr, "setup failed: %s\n", err);
		return 1;
	}
	t = calloc((size_t)n, sizeof(double));
	for (size_t p = 0; p < ps->n; p++) {
		const struct pool *pool = &ps->pools[p];

		if (!pool->n_devs)
			continue;
		for (int i = 0; i < n; i++) {
			struct kubelet_container_alloc a = { 0 };
			const char *id = pool->devs[(size_t)i % pool->n_devs].id;
			char *msg = NULL;
			struct timespec t0, t1;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			pool_allocate_container(pool, &id, 1, &a, &msg);
			kubelet_container_alloc_clear(&a);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			free(msg);
			t[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
		}
		qsort(t, (size_t)n, sizeof(double), cmp);
		printf("%s (%zu devices): pool_allocate_container of 1 device over %d calls: p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       pool->res->full_name, pool->n_devs, n, t[n / 2], t[n * 99 / 100], t[n - 1]);
	}
	free(t);
	pool_set_free(ps);
	hw_node_free(node);
	hw_ctx_free(ctx);
	pool_config_free(cfg);
	free(buf);
	return 0;
}
