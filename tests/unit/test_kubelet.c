/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet transport's own checks, without a kubelet: argument validation, the socket's
 * life (mode 0600, stale file replaced, removed at stop), and clean start/stop/free cycles
 * (run under LeakSanitizer by `make check`). The wire side is tested by
 * tests/js/transport.test.mjs against a stand-in kubelet. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "kubelet/kubelet.h"

static int nop_allocate(void *ud, const char *const *ids, size_t n,
			struct kubelet_container_alloc *out, char **msg)
{
	return 0;
}

static const struct kubelet_ops ops = { .allocate = nop_allocate };

struct fixture {
	char root[64];
	char dir[96];
	char sock[160];
	struct kubelet *k;
};

static int setup(void **st)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->root, "/tmp/rdmak-kl-unit.XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/device-plugins", f->root);
	snprintf(f->sock, sizeof(f->sock), "%s/t.sock", f->dir);
	if (mkdir(f->dir, 0755) < 0)
		return -1;
	if (kubelet_new(f->root, NULL, NULL, &f->k) < 0)
		return -1;
	*st = f;
	return 0;
}

static int teardown(void **st)
{
	struct fixture *f = *st;

	kubelet_free(f->k);
	unlink(f->sock);
	rmdir(f->dir);
	rmdir(f->root);
	free(f);
	return 0;
}

static struct kubelet_server_config config(struct fixture *f)
{
	return (struct kubelet_server_config){
		.resource_name = "rdmak.io/unit",
		.socket_name = "t.sock",
		.ops = &ops,
	};
}

static void test_new_validates(void **st)
{
	struct fixture *f = *st;
	struct kubelet_server_config c;
	struct kubelet_server *srv = NULL;
	static const char *const bad_names[] = { "", "a/b", ".", "..", "kubelet.sock" };
	struct kubelet *k = NULL;
	char long_dir[200], long_name[120];

	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		c = config(f);
		c.socket_name = bad_names[i];
		assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), -EINVAL);
	}
	c = config(f);
	c.socket_name = NULL;
	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), -EINVAL);
	c = config(f);
	c.resource_name = "";
	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), -EINVAL);
	c = config(f);
	c.ops = NULL;
	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), -EINVAL);
	assert_int_equal(kubelet_server_new(NULL, &c, NULL, NULL, &srv), -EINVAL);
	/* sun_path holds 108 bytes */
	memset(long_dir, 'x', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	long_dir[sizeof(long_dir) - 1] = 0;
	assert_int_equal(kubelet_new(long_dir, NULL, NULL, &k), -ENAMETOOLONG);
	assert_null(k);
	c = config(f);
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	c.socket_name = long_name; /* short enough for a name, too long for sun_path */
	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), -ENAMETOOLONG);
	assert_null(srv);
}

static void test_start_without_folder(void **st)
{
	struct fixture *f = *st;
	struct kubelet_server_config c = config(f);
	struct kubelet_server *srv = NULL;
	struct kubelet *k = NULL;
	char missing[128];

	snprintf(missing, sizeof(missing), "%s/nowhere", f->root);
	assert_int_equal(kubelet_new(missing, NULL, NULL, &k), 0); /* the folder may come later */
	assert_int_equal(kubelet_server_new(k, &c, NULL, NULL, &srv), 0);
	assert_int_equal(kubelet_server_start(srv), -ENOENT);
	kubelet_server_stop(srv); /* harmless after a failed start */
	kubelet_server_free(srv);
	kubelet_free(k);
}

static void test_socket_life(void **st)
{
	struct fixture *f = *st;
	struct kubelet_server_config c = config(f);
	struct kubelet_server *srv = NULL;
	struct stat s;
	FILE *stale;

	/* A stale file where the socket goes is replaced. */
	stale = fopen(f->sock, "w");
	assert_non_null(stale);
	fclose(stale);
	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), 0);
	assert_int_equal(kubelet_server_start(srv), 0);
	assert_int_equal(kubelet_server_start(srv), -EALREADY);
	assert_int_equal(lstat(f->sock, &s), 0);
	assert_true(S_ISSOCK(s.st_mode));
	assert_int_equal(s.st_mode & 0777, 0600);
	assert_int_equal(kubelet_server_registrations(srv), 0); /* no kubelet.sock: waiting */
	kubelet_server_stop(srv);
	assert_int_equal(lstat(f->sock, &s), -1);
	assert_int_equal(errno, ENOENT);
	kubelet_server_stop(srv); /* twice is fine */
	kubelet_server_free(srv);
	kubelet_server_free(NULL);
}

static void test_set_devices(void **st)
{
	struct fixture *f = *st;
	struct kubelet_server_config c = config(f);
	struct kubelet_server *srv = NULL;
	struct kubelet_device d[2] = { { .id = "mlx5_0", .healthy = true, .numa_node = 0 },
				       { .id = "mlx5_1", .numa_node = -1 } };

	assert_int_equal(kubelet_server_new(f->k, &c, NULL, NULL, &srv), 0);
	assert_int_equal(kubelet_server_set_devices(srv, d, 2),
			 0); /* before start: kept for later */
	assert_int_equal(kubelet_server_start(srv), 0);
	assert_int_equal(kubelet_server_set_devices(srv, d, 1), 0);
	assert_int_equal(kubelet_server_set_devices(srv, NULL, 0), 0);
	memset(d[1].id, 'a', sizeof(d[1].id)); /* no terminating NUL */
	assert_int_equal(kubelet_server_set_devices(srv, d, 2), -EINVAL);
	d[1].id[0] = 0;
	assert_int_equal(kubelet_server_set_devices(srv, d, 2), -EINVAL);
	kubelet_server_free(srv); /* free stops a running server */
}

static void count_log(int level, const char *msg, void *ud)
{
	(*(unsigned *)ud)++;
}

static void test_two_servers(void **st)
{
	struct fixture *f = *st;
	struct kubelet_server_config c1 = config(f), c2 = config(f);
	struct kubelet_server *a = NULL, *b = NULL;
	unsigned logged = 0;

	c2.socket_name = "t2.sock";
	c2.resource_name = "rdmak.io/unit2";
	assert_int_equal(kubelet_server_new(f->k, &c1, count_log, &logged, &a), 0);
	assert_int_equal(kubelet_server_new(f->k, &c2, count_log, &logged, &b), 0);
	assert_int_equal(kubelet_server_start(a), 0);
	assert_int_equal(kubelet_server_start(b), 0);
	kubelet_server_free(a);
	kubelet_server_free(b);
	assert_true(logged > 0);
	assert_int_equal(access(f->sock, F_OK), -1);
}

static void test_alloc_clear(void **st)
{
	struct kubelet_container_alloc a = { 0 };

	a.envs = calloc(1, sizeof(*a.envs));
	a.envs[0].key = strdup("K");
	a.envs[0].value = strdup("V");
	a.n_envs = 1;
	a.cdi_devices = calloc(2, sizeof(*a.cdi_devices));
	a.cdi_devices[0] = strdup("rdmak.io/rdma=mlx5_0");
	a.n_cdi_devices = 1;
	kubelet_container_alloc_clear(&a);
	assert_null(a.envs);
	assert_int_equal(a.n_envs, 0);
	kubelet_container_alloc_clear(&a);
	kubelet_container_alloc_clear(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_validates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_without_folder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_life, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_servers, setup, teardown),
		cmocka_unit_test(test_alloc_clear),
	};

	return cmocka_run_group_tests_name("kubelet", tests, NULL, NULL);
}
