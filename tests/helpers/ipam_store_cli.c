/* SPDX-License-Identifier: Apache-2.0 */
/* A command-line face on one IPAM store's ops table (src/ipam/store.h), so that the shell
 * tests can hold the etcd store (and the file store, for comparison) to the same contract.
 *
 *   ipam_store_cli (--endpoints A[,B..] [--prefix P] [--ca F --cert F --key F] | --data-dir D)
 *                  CMD ...
 *
 * Commands, several per run, all on one opened store:
 *   ping                       "ok"
 *   claim POOL ADDR VALUE      the op's answer: 1 or 0
 *   get POOL ADDR              the value, or "absent"
 *   release POOL ADDR EXPECT   1 or 0
 *   list POOL                  "ADDR VALUE" lines, sorted, then "end"
 *   count POOL                 the count
 *   pools                      the pool names, sorted, then "end"
 *   rget NET KEY / rput NET KEY VALUE / rdel NET KEY / rlist NET    records, as above
 *   cget POOL / cput POOL ADDR                                       cursors
 *   race POOL N ID             claim 10.<a>.<b>.<c> for the N first addresses of 10.0.0.0/8,
 *                              in a random order, with value ID; print "won ADDR" for each
 *                              address this process got and "won N" at the end
 * A failing op prints "error: ERRNO-NAME unreachable=B: <s->error>" on stderr and exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipam/store.h"
#include "util/cleanup.h"

static int fail(struct ipam_store *s, int r)
{
	fprintf(stderr, "error: %s unreachable=%d: %s\n",
		strerrorname_np(-r) ? strerrorname_np(-r) : "?", ipam_store_unreachable(r),
		s->error);
	return 1;
}

struct lines {
	char **v;
	size_t n;
};

static int collect(void *ud, const char *name, const char *value)
{
	struct lines *l = ud;
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	if (asprintf(&l->v[l->n], "%s%s%s", name, value ? " " : "", value ? value : "") < 0)
		return -ENOMEM;
	l->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_lines(struct lines *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_str);
	for (size_t i = 0; i < l->n; i++) {
		puts(l->v[i]);
		free(l->v[i]);
	}
	free(l->v);
	puts("end");
}

static int race(struct ipam_store *s, const char *pool, unsigned n, const char *id)
{
	_cleanup_free_ unsigned *order = calloc(n ? n : 1, sizeof(*order));
	unsigned won = 0;

	if (!order)
		return -ENOMEM;
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	for (unsigned i = n; i > 1; i--) {
		unsigned j = (unsigned)random() % i, t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned a = order[i] + 1;
		char addr[32];
		int r;

		snprintf(addr, sizeof(addr), "10.%u.%u.%u", (a >> 16) & 255, (a >> 8) & 255,
			 a & 255);
		r = s->ops.claim(s, pool, addr, id);
		if (r < 0)
			return r;
		if (r == 1) {
			printf("won %s\n", addr);
			won++;
		}
	}
	printf("won %u\n", won);
	return 0;
}

#define NEED(k)                                                                                    \
	do {                                                                                       \
		if (argc < (k) + 1) {                                                              \
			fprintf(stderr, "%s needs %d argument(s)\n", argv[0], (k));                \
			return -EINVAL;                                                            \
		}                                                                                  \
	} while (0)

/* Runs argv[0]; returns the arguments used (> 0) or -errno. */
static int run_cmd(struct ipam_store *s, int argc, char **argv)
{
	const char *c = argv[0];
	_cleanup_free_ char *v = NULL;
	struct lines l = { 0 };
	size_t n;
	int r;

	if (strcmp(c, "ping") == 0) {
		if ((r = s->ops.ping(s)) < 0)
			return r;
		puts("ok");
		return 1;
	}
	if (strcmp(c, "claim") == 0 || strcmp(c, "release") == 0 || strcmp(c, "rput") == 0) {
		NEED(3);
		r = c[0] == 'c'			 ? s->ops.claim(s, argv[1], argv[2], argv[3])
		    : c[0] == 'r' && c[1] == 'e' ? s->ops.release(s, argv[1], argv[2], argv[3])
						 : s->ops.record_put(s, argv[1], argv[2], argv[3]);
		if (r < 0)
			return r;
		printf("%d\n", r);
		return 4;
	}
	if (strcmp(c, "get") == 0 || strcmp(c, "rget") == 0) {
		NEED(2);
		r = c[0] == 'g' ? s->ops.get(s, argv[1], argv[2], &v)
				: s->ops.record_get(s, argv[1], argv[2], &v);
		if (r < 0)
			return r;
		puts(r ? v : "absent");
		return 3;
	}
	if (strcmp(c, "rdel") == 0 || strcmp(c, "cput") == 0) {
		NEED(2);
		r = c[0] == 'r' ? s->ops.record_del(s, argv[1], argv[2])
				: s->ops.cursor_put(s, argv[1], argv[2]);
		if (r < 0)
			return r;
		printf("%d\n", r);
		return 3;
	}
	if (strcmp(c, "cget") == 0) {
		NEED(1);
		if ((r = s->ops.cursor_get(s, argv[1], &v)) < 0)
			return r;
		puts(r ? v : "absent");
		return 2;
	}
	if (strcmp(c, "list") == 0 || strcmp(c, "rlist") == 0) {
		NEED(1);
		r = c[0] == 'l' ? s->ops.list(s, argv[1], collect, &l)
				: s->ops.record_list(s, argv[1], collect, &l);
		if (r < 0)
			return r;
		print_lines(&l);
		return 2;
	}
	if (strcmp(c, "pools") == 0) {
		if ((r = s->ops.pools(s, collect, &l)) < 0)
			return r;
		print_lines(&l);
		return 1;
	}
	if (strcmp(c, "count") == 0) {
		NEED(1);
		if ((r = s->ops.count(s, argv[1], &n)) < 0)
			return r;
		printf("%zu\n", n);
		return 2;
	}
	if (strcmp(c, "race") == 0) {
		NEED(3);
		if ((r = race(s, argv[1], (unsigned)strtoul(argv[2], NULL, 10), argv[3])) < 0)
			return r;
		return 4;
	}
	fprintf(stderr, "unknown command %s\n", c);
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "endpoints", required_argument, NULL, 'e' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "ca", required_argument, NULL, 'a' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ 0 },
	};
	struct ipamconf_store cfg = { .kind = IPAMCONF_STORE_FILE };
	struct ipam_store *s = NULL;
	char why[600];
	int o, r, rc = 0;

	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (o) {
		case 'e': {
			_cleanup_free_ char *list = strdup(optarg);

			cfg.kind = IPAMCONF_STORE_ETCD;
			cfg.endpoints = calloc(strlen(optarg) + 1, sizeof(*cfg.endpoints));
			if (!list || !cfg.endpoints)
				return 2;
			for (char *p = list, *tok; (tok = strsep(&p, ","));)
				cfg.endpoints[cfg.n_endpoints++] = strdup(tok);
			break;
		}
		case 'p': cfg.prefix = strdup(optarg); break;
		case 'a': cfg.tls_ca = strdup(optarg); break;
		case 'c': cfg.tls_cert = strdup(optarg); break;
		case 'k': cfg.tls_key = strdup(optarg); break;
		case 'd': cfg.data_dir = strdup(optarg); break;
		default: return 2;
		}
	}
	r = ipam_store_open(&cfg, &s, why, sizeof(why));
	ipamconf_store_clear(&cfg);
	if (r < 0) {
		fprintf(stderr, "error: open: %s\n", why);
		return 2;
	}
	for (int i = optind; i < argc;) {
		int used = run_cmd(s, argc - i, argv + i);

		fflush(stdout);
		if (used < 0) {
			rc = fail(s, used);
			break;
		}
		i += used;
	}
	ipam_store_close(s);
	return rc;
}
