/* SPDX-License-Identifier: Apache-2.0 */
/* The store ops table and the file store: claim-if-absent, compare-and-release, listings,
 * records, cursors, tidy, and the "not supported" defaults of a driver that fills no slot. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ipam/store.h"

static char dir[64];

static int setup(void **state)
{
	struct ipamconf_store cfg = { .kind = IPAMCONF_STORE_FILE };
	struct ipam_store *s = NULL;
	char why[256], sub[128];

	snprintf(dir, sizeof(dir), "/tmp/ipam-store-test.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sub, sizeof(sub), "%s/data/dir", dir); /* created with its parents */
	cfg.data_dir = sub;
	if (ipam_store_open(&cfg, &s, why, sizeof(why)) < 0)
		return -1;
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	ipam_store_close(*state);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

struct seen {
	char names[16][64];
	char values[16][128];
	size_t n;
};

static int collect(void *ud, const char *name, const char *value)
{
	struct seen *s = ud;

	if (s->n < 16) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		snprintf(s->values[s->n], sizeof(s->values[0]), "%s", value ? value : "(null)");
		s->n++;
	}
	return 0;
}

static void test_claims(void **state)
{
	struct ipam_store *s = *state;
	struct seen seen = { .n = 0 };
	char *v = NULL;
	size_t n = 99;

	assert_int_equal(s->ops.count(s, "10.56.0.0_27", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(s->ops.get(s, "10.56.0.0_27", "10.56.0.2", &v), 0);
	assert_int_equal(s->ops.claim(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"a\"}"), 1);
	/* claimed by another: 0; the same value again (a retried write): 1 */
	assert_int_equal(s->ops.claim(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"b\"}"), 0);
	assert_int_equal(s->ops.claim(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"a\"}"), 1);
	assert_int_equal(s->ops.get(s, "10.56.0.0_27", "10.56.0.2", &v), 1);
	assert_string_equal(v, "{\"id\":\"a\"}");
	free(v);
	assert_int_equal(s->ops.claim(s, "10.56.0.0_27", "10.56.0.3", "{\"id\":\"c\"}"), 1);
	assert_int_equal(s->ops.claim(s, "fd00::_64", "fd00::5", "{\"id\":\"c\"}"), 1);
	assert_int_equal(s->ops.count(s, "10.56.0.0_27", &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(s->ops.list(s, "10.56.0.0_27", collect, &seen), 0);
	assert_int_equal(seen.n, 2);
	seen.n = 0;
	assert_int_equal(s->ops.pools(s, collect, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.values[0], "(null)");
	/* and again, on the same open store (the allocator lists pools after each claim) */
	seen.n = 0;
	assert_int_equal(s->ops.pools(s, collect, &seen), 0);
	assert_int_equal(seen.n, 2);
	/* release compares the whole value */
	assert_int_equal(s->ops.release(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"b\"}"), 0);
	assert_int_equal(s->ops.release(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"a\"}"), 1);
	assert_int_equal(s->ops.release(s, "10.56.0.0_27", "10.56.0.2", "{\"id\":\"a\"}"), 0);
	assert_int_equal(s->ops.release(s, "10.99.0.0_24", "10.99.0.2", "{\"id\":\"a\"}"), 0);
	assert_int_equal(s->ops.count(s, "10.56.0.0_27", &n), 0);
	assert_int_equal(n, 1);
	/* names that could escape or collide with ours are refused */
	assert_int_equal(s->ops.claim(s, "../x", "10.0.0.1", "v"), -EINVAL);
	assert_int_equal(s->ops.claim(s, "p", ".cursor", "v"), -EINVAL);
	assert_int_equal(s->ops.claim(s, "p", "a/b", "v"), -EINVAL);
	assert_int_equal(s->ops.claim(s, "p", "10.0.0.1", ""), -EINVAL);
}

static void test_records_cursor(void **state)
{
	struct ipam_store *s = *state;
	struct seen seen = { .n = 0 };
	char *v = NULL;
	char big[IPAM_STORE_VALUE_MAX + 2];

	assert_int_equal(s->ops.record_get(s, "net-a", "c1:net1", &v), 0);
	assert_int_equal(s->ops.record_put(s, "net-a", "c1:net1", "{\"state\":\"pending\"}"), 0);
	assert_int_equal(s->ops.record_put(s, "net-a", "c1:net1", "{\"ips\":[]}"), 0);
	assert_int_equal(s->ops.record_put(s, "net-b", "c1:net1", "{\"other\":1}"), 0);
	assert_int_equal(s->ops.record_get(s, "net-a", "c1:net1", &v), 1);
	assert_string_equal(v, "{\"ips\":[]}");
	free(v);
	assert_int_equal(s->ops.record_list(s, "net-a", collect, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.names[0], "c1:net1");
	assert_int_equal(s->ops.record_del(s, "net-a", "c1:net1"), 1);
	assert_int_equal(s->ops.record_del(s, "net-a", "c1:net1"), 0);
	assert_int_equal(s->ops.record_get(s, "net-b", "c1:net1", &v), 1);
	free(v);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(s->ops.record_put(s, "net-a", "c2:net1", big), -EINVAL);

	assert_int_equal(s->ops.cursor_get(s, "10.56.0.0_27", &v), 0);
	assert_int_equal(s->ops.cursor_put(s, "10.56.0.0_27", "10.56.0.9"), 0);
	assert_int_equal(s->ops.cursor_put(s, "10.56.0.0_27", "10.56.0.10"), 0);
	assert_int_equal(s->ops.cursor_get(s, "10.56.0.0_27", &v), 1);
	assert_string_equal(v, "10.56.0.10");
	free(v);
	/* the cursor is not a claim */
	seen.n = 0;
	assert_int_equal(s->ops.list(s, "10.56.0.0_27", collect, &seen), 0);
	assert_int_equal(seen.n, 0);
	assert_int_equal(s->ops.ping(s), 0);
}

struct junk_seen {
	char buf[600];
};

static void junk_seen(void *ud, const char *path, const char *what, int removed)
{
	struct junk_seen *j = ud;

	snprintf(j->buf, sizeof(j->buf), "%s: %s (%d)", path, what, removed);
}

static void test_tidy_and_foreign(void **state)
{
	struct ipam_store *s = *state;
	struct junk_seen j = { "" };
	struct seen seen = { 0 };
	char want[700];
	struct timeval old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
	char path[256], *v = NULL;
	size_t removed = 9;
	FILE *f;

	/* what a writer killed between symlink and rename leaves: removed once it is old */
	assert_int_equal(s->ops.claim(s, "10.1.0.0_24", "10.1.0.2", "v"), 1);
	snprintf(path, sizeof(path), "%s/data/dir/pools/10.1.0.0_24/.tmp.123.0.0", dir);
	assert_int_equal(symlink("10.1.0.2", path), 0);
	snprintf(path, sizeof(path), "%s/data/dir/pools/10.1.0.0_24/.tmp.124.0.0", dir);
	assert_int_equal(symlink("10.1.0.3", path), 0);
	assert_int_equal(lutimes(path, old), 0);
	assert_int_equal(s->ops.tidy(s, &removed), 0);
	assert_int_equal(removed, 1);
	/* a regular file where a claim should be is reported, not trusted */
	snprintf(path, sizeof(path), "%s/data/dir/pools/10.1.0.0_24/10.1.0.9", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(s->ops.get(s, "10.1.0.0_24", "10.1.0.9", &v), -EBADMSG);
	/* naming the pool, the path and the repair (issue 16 §2.9) */
	snprintf(want, sizeof(want),
		 "pool 10.1.0.0_24: %s is a regular file where a claim should be, not written by "
		 "rdmak-ipam; `rdmak ipam gc --repair` removes it",
		 path);
	assert_string_equal(s->error, want);
	assert_int_equal(s->ops.claim(s, "10.1.0.0_24", "10.1.0.9", "v"), -EBADMSG);
	assert_string_equal(s->error, want);
	/* a listing skips it and names it (issue 16 §2.5); with repair it removes it */
	s->junk = junk_seen;
	s->junk_ud = &j;
	assert_int_equal(s->ops.list(s, "10.1.0.0_24", collect, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.names[0], "10.1.0.2");
	snprintf(want, sizeof(want), "%s: a regular file (0)", path);
	assert_string_equal(j.buf, want);
	s->repair = true;
	assert_int_equal(s->ops.list(s, "10.1.0.0_24", collect, &seen), 0);
	snprintf(want, sizeof(want), "%s: a regular file (1)", path);
	assert_string_equal(j.buf, want);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(s->ops.claim(s, "10.1.0.0_24", "10.1.0.9", "v"), 1);
	s->junk = NULL;
	s->repair = false;
}

static const struct ipam_store_ops empty_ops = { 0 };

static int empty_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	return 0;
}

static void test_defaults(void **state)
{
	/* a driver that fills no slot: every op answers "not supported", none crashes */
	struct ipam_store_driver drv = { .name = "empty", .open = empty_open, .ops = &empty_ops };
	struct ipamconf_store cfg = { .kind = IPAMCONF_STORE_FILE };
	struct ipam_store *s = NULL;
	char why[128], *v = NULL;
	size_t n = 7, removed = 7;

	assert_int_equal(ipam_store_open_driver(&drv, &cfg, &s, why, sizeof(why)), 0);
	assert_int_equal(s->ops.ping(s), -EOPNOTSUPP);
	assert_int_equal(s->ops.claim(s, "p", "a", "v"), -EOPNOTSUPP);
	assert_int_equal(s->ops.get(s, "p", "a", &v), -EOPNOTSUPP);
	assert_int_equal(s->ops.release(s, "p", "a", "v"), -EOPNOTSUPP);
	assert_int_equal(s->ops.list(s, "p", NULL, NULL), -EOPNOTSUPP);
	assert_int_equal(s->ops.count(s, "p", &n), -EOPNOTSUPP); /* counted by listing */
	assert_int_equal(n, 7);
	assert_int_equal(s->ops.pools(s, NULL, NULL), -EOPNOTSUPP);
	assert_int_equal(s->ops.record_get(s, "n", "k", &v), -EOPNOTSUPP);
	assert_int_equal(s->ops.record_put(s, "n", "k", "v"), -EOPNOTSUPP);
	assert_int_equal(s->ops.record_del(s, "n", "k"), -EOPNOTSUPP);
	assert_int_equal(s->ops.record_list(s, "n", NULL, NULL), -EOPNOTSUPP);
	assert_int_equal(s->ops.cursor_get(s, "p", &v), -EOPNOTSUPP);
	assert_int_equal(s->ops.cursor_put(s, "p", "a"), -EOPNOTSUPP);
	assert_int_equal(s->ops.tidy(s, &removed), 0);
	assert_int_equal(removed, 0);
	assert_null(v);
	ipam_store_close(s);
	assert_true(ipam_store_unreachable(-EHOSTUNREACH));
	assert_false(ipam_store_unreachable(-EIO));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_cursor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tidy_and_foreign, setup, teardown),
		cmocka_unit_test(test_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
