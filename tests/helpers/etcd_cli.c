/* SPDX-License-Identifier: Apache-2.0 */
/* A command-line face on src/etcd, so that tests/cmd/etcd_client.sh can drive the client
 * against a real etcd cluster and check what it did with etcdctl.
 *
 *   etcd_cli --endpoints A[,B...] [--ca F] [--cert F] [--key F] [--timeout-ms N] CMD [ARGS] ...
 *
 * Commands (several may follow each other, each with its arguments; all run on one client):
 *   put KEY VALUE        prints "rev N"
 *   get KEY              prints "KEY=VALUE create=N mod=N version=N", or "absent" (exit 0)
 *   range KEY            prefix range: one "KEY=VALUE" line per key, then "count N more B"
 *   range-all PREFIX     etcd_range_prefix_all: the same lines, then "count N rev N"
 *   keys PREFIX          the same, keys only
 *   del KEY / delp PREFIX  prints "deleted N"
 *   create KEY VALUE     Txn: put only if KEY does not exist (create_revision == 0), else read it;
 *                        prints "created rev N" or "exists VALUE"
 *   swap KEY OLD NEW     Txn: put NEW only if the value is OLD; prints "swapped" or "differs"
 *   status I             Maintenance.Status of endpoint I: "version V leader B member N"
 *   sleep MS             (for tests that kill a member between two calls)
 *   current              prints the endpoint calls go to now
 * A failing command prints "error: <errno name>: <client error>" on stderr and exits 1;
 * etcd_client_new failing exits 2 with its message.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd/etcd.h"
#include "util/cleanup.h"

static int fail(struct etcd_client *c, const char *cmd, int r)
{
	fprintf(stderr, "error: %s: %s: %s\n", cmd, strerrorname_np(-r) ? strerrorname_np(-r) : "?",
		etcd_client_error(c));
	return 1;
}

static void print_kvs(const struct etcd_kvs *r)
{
	for (size_t i = 0; i < r->n; i++)
		printf("%s=%s\n", r->kvs[i].key, r->kvs[i].value);
}

static int cmd_create(struct etcd_client *c, const char *key, const char *value)
{
	struct etcd_compare cmp = {
		.key = key, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .number = 0
	};
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = key, .value = value, .value_len = strlen(value)
	};
	struct etcd_op get = { .type = ETCD_OP_RANGE, .key = key };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(c, &cmp, 1, &put, 1, &get, 1, &res);

	if (r < 0)
		return fail(c, "create", r);
	if (r == 1)
		printf("created rev %" PRId64 "\n", res.revision);
	else if (res.n_ops == 1 && res.ops[0].type == ETCD_OP_RANGE && res.ops[0].range.n == 1)
		printf("exists %s\n", res.ops[0].range.kvs[0].value);
	else
		printf("exists (unreadable)\n");
	etcd_txn_result_clear(&res);
	return 0;
}

static int cmd_swap(struct etcd_client *c, const char *key, const char *old, const char *new)
{
	struct etcd_compare cmp = { .key = key,
				    .target = ETCD_CMP_VALUE,
				    .result = ETCD_CMP_EQUAL,
				    .value = old,
				    .value_len = strlen(old) };
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = key, .value = new, .value_len = strlen(new)
	};
	int r = etcd_txn(c, &cmp, 1, &put, 1, NULL, 0, NULL);

	if (r < 0)
		return fail(c, "swap", r);
	puts(r ? "swapped" : "differs");
	return 0;
}

/* Runs the command at argv[0]; returns how many arguments it used, or -1 after a failure. */
static int run_cmd(struct etcd_client *c, int argc, char **argv, int *rc)
{
	const char *cmd = argv[0];
	int r;

#define NEED(n)                                                                                    \
	do {                                                                                       \
		if (argc < (n) + 1) {                                                              \
			fprintf(stderr, "%s needs %d argument(s)\n", cmd, (n));                    \
			*rc = 2;                                                                   \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

	if (strcmp(cmd, "put") == 0) {
		int64_t rev = 0;

		NEED(2);
		r = etcd_put(c, argv[1], argv[2], strlen(argv[2]), &rev);
		if (r < 0)
			goto failed;
		printf("rev %" PRId64 "\n", rev);
		return 3;
	}
	if (strcmp(cmd, "get") == 0) {
		struct etcd_kv kv = { 0 };

		NEED(1);
		r = etcd_get(c, argv[1], &kv);
		if (r < 0)
			goto failed;
		if (r == 0)
			puts("absent");
		else
			printf("%s=%s create=%" PRId64 " mod=%" PRId64 " version=%" PRId64 "\n",
			       kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version);
		etcd_kv_clear(&kv);
		return 2;
	}
	if (strcmp(cmd, "range") == 0) {
		struct etcd_kvs res = { 0 };

		NEED(1);
		r = etcd_range(c, argv[1], &(struct etcd_range_opts){ .prefix = true }, &res);
		if (r < 0)
			goto failed;
		print_kvs(&res);
		printf("count %" PRId64 " more %d\n", res.count, res.more);
		etcd_kvs_clear(&res);
		return 2;
	}
	if (strcmp(cmd, "range-all") == 0 || strcmp(cmd, "keys") == 0) {
		struct etcd_kvs res = { 0 };
		bool keys = strcmp(cmd, "keys") == 0;

		NEED(1);
		r = etcd_range_prefix_all(c, argv[1], keys, &res);
		if (r < 0)
			goto failed;
		for (size_t i = 0; i < res.n; i++)
			keys ? printf("%s\n", res.kvs[i].key)
			     : printf("%s=%s\n", res.kvs[i].key, res.kvs[i].value);
		printf("count %" PRId64 " rev %" PRId64 "\n", res.count, res.revision);
		etcd_kvs_clear(&res);
		return 2;
	}
	if (strcmp(cmd, "del") == 0 || strcmp(cmd, "delp") == 0) {
		int64_t n = 0;

		NEED(1);
		r = etcd_delete(c, argv[1], strcmp(cmd, "delp") == 0, &n);
		if (r < 0)
			goto failed;
		printf("deleted %" PRId64 "\n", n);
		return 2;
	}
	if (strcmp(cmd, "create") == 0) {
		NEED(2);
		if (cmd_create(c, argv[1], argv[2]))
			goto failed_reported;
		return 3;
	}
	if (strcmp(cmd, "swap") == 0) {
		NEED(3);
		if (cmd_swap(c, argv[1], argv[2], argv[3]))
			goto failed_reported;
		return 4;
	}
	if (strcmp(cmd, "status") == 0) {
		struct etcd_member_status st;

		NEED(1);
		r = etcd_member_status(c, strtoul(argv[1], NULL, 10), &st);
		if (r < 0)
			goto failed;
		printf("version %s leader %d member %016" PRIx64 "\n", st.version, st.leader != 0,
		       st.member_id);
		return 2;
	}
	if (strcmp(cmd, "sleep") == 0) {
		unsigned long ms;

		NEED(1);
		ms = strtoul(argv[1], NULL, 10);
		nanosleep(&(struct timespec){ .tv_sec = (time_t)(ms / 1000),
					      .tv_nsec = (long)(ms % 1000) * 1000000 },
			  NULL);
		return 2;
	}
	if (strcmp(cmd, "current") == 0) {
		puts(etcd_client_endpoint(c, etcd_client_current(c)));
		return 1;
	}
	fprintf(stderr, "unknown command %s\n", cmd);
	*rc = 2;
	return -1;
failed:
	fail(c, cmd, r);
failed_reported:
	*rc = 1;
	return -1;
#undef NEED
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "endpoints", required_argument, NULL, 'e' },
		{ "ca", required_argument, NULL, 'a' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ 0 },
	};
	struct etcd_config cfg = { 0 };
	_cleanup_free_ char *eps = NULL, *err = NULL;
	_cleanup_free_ const char **list = NULL;
	struct etcd_client *c = NULL;
	int o, r, rc = 0;

	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (o) {
		case 'e':
			free(eps);
			eps = strdup(optarg);
			break;
		case 'a': cfg.ca_file = optarg; break;
		case 'c': cfg.cert_file = optarg; break;
		case 'k': cfg.key_file = optarg; break;
		case 't': cfg.timeout_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!eps) {
		fprintf(stderr, "--endpoints is required\n");
		return 2;
	}
	list = calloc(strlen(eps) + 1, sizeof(*list));
	if (!list)
		return 2;
	for (char *s = eps, *tok; (tok = strsep(&s, ","));)
		list[cfg.n_endpoints++] = tok;
	cfg.endpoints = list;
	r = etcd_client_new(&cfg, &c, &err);
	if (r < 0) {
		fprintf(stderr, "error: %s: %s\n", strerrorname_np(-r), err ? err : strerror(-r));
		return 2;
	}
	for (int i = optind; i < argc && rc == 0;) {
		int used = run_cmd(c, argc - i, argv + i, &rc);

		if (used < 0)
			break;
		i += used;
		fflush(stdout);
	}
	etcd_client_free(c);
	return rc;
}
