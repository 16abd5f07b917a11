/* SPDX-License-Identifier: Apache-2.0 */
/* The node's CNI settings (src/nodeconf): every key, its default, each refusal by its path, and
 * the file read as only the node's owner can have written it. */
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
#include <unistd.h>
#include <cmocka.h>

#include "nodeconf/nodeconf.h"

static char dir[64];

static int setup(void **st)
{
	(void)st;
	strcpy(dir, "/tmp/rdmak-nodeconf.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	(void)st;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_parse(void **st)
{
	static const char text[] =
		"{\"sysfs\": \"/host/sys\", \"stateDir\": \"/var/lib/rdmak/cni\", \"logDir\": "
		"\"/var/log/x\","
		" \"dataDirs\": [\"/var/lib/rdmak/ipam\"],"
		" \"etcd\": {\"cluster\": {\"endpoints\": [\"https://10.0.0.1:2379\", "
		"\"10.0.0.2:2379\"],"
		" \"prefix\": \"/x\", \"tls\": {\"ca\": \"/etc/rdmak/etcd/cluster/ca.crt\","
		" \"cert\": \"/etc/rdmak/etcd/cluster/tls.crt\", \"key\": "
		"\"/etc/rdmak/etcd/cluster/tls.key\"}},"
		" \"plain\": {\"endpoints\": [\"http://127.0.0.1:2379\"]}}}";
	const char *const eps[] = { "10.0.0.2:2379", "https://10.0.0.1:2379" };
	struct nodeconf n = { 0 };
	const struct nodeconf_etcd *e;
	char err[512], names[64];

	(void)st;
	assert_int_equal(nodeconf_parse(text, strlen(text), &n, err, sizeof(err)), 0);
	assert_string_equal(n.sysfs, "/host/sys");
	assert_string_equal(n.state_dir, "/var/lib/rdmak/cni");
	assert_string_equal(n.log_dir, "/var/log/x");
	assert_int_equal(n.n_data_dirs, 1);
	assert_int_equal(n.n_etcd, 2);
	assert_non_null(e = nodeconf_etcd_find(&n, "cluster"));
	assert_string_equal(e->prefix, "/x");
	assert_string_equal(e->tls_key, "/etc/rdmak/etcd/cluster/tls.key");
	assert_non_null(e = nodeconf_etcd_find(&n, "plain"));
	assert_string_equal(e->prefix, NODECONF_PREFIX);
	assert_null(e->tls_ca);
	assert_null(nodeconf_etcd_find(&n, "none"));
	/* by endpoints in any order and prefix: a config of the shape before finds its store */
	assert_ptr_equal(nodeconf_etcd_find_endpoints(&n, eps, 2, "/x"),
			 nodeconf_etcd_find(&n, "cluster"));
	assert_null(nodeconf_etcd_find_endpoints(&n, eps, 2, NULL));
	assert_null(nodeconf_etcd_find_endpoints(&n, eps, 1, "/x"));
	nodeconf_etcd_names(&n, names, sizeof(names));
	assert_string_equal(names, "cluster, plain");
	nodeconf_clear(&n);

	/* nothing said: the defaults, as a node without the file */
	assert_int_equal(nodeconf_parse("{}", 2, &n, err, sizeof(err)), 0);
	assert_string_equal(n.sysfs, "/sys");
	assert_string_equal(n.state_dir, "/var/lib/cni/rdmak-cni");
	assert_string_equal(n.log_dir, "/var/log/rdmak");
	assert_int_equal(n.n_data_dirs, 2);
	assert_string_equal(n.data_dirs[0], "/var/lib/cni/rdmak-ipam");
	assert_string_equal(n.data_dirs[1], "/var/lib/cni/networks");
	assert_int_equal(n.n_etcd, 0);
	nodeconf_etcd_names(&n, names, sizeof(names));
	assert_string_equal(names, "none");
	nodeconf_clear(&n);
}

static void test_refusals(void **st)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "[]", "not a JSON object" },
		{ "{\"statedir\": \"/x\"}", "statedir: unknown key" },
		{ "{\"stateDir\": \"var/lib\"}",
		  "stateDir: \"var/lib\" is not an absolute path without \"..\"" },
		{ "{\"logDir\": \"/var/log/../../etc\"}",
		  "logDir: \"/var/log/../../etc\" is not an absolute path" },
		{ "{\"sysfs\": \"\"}", "sysfs: " },
		{ "{\"dataDirs\": []}", "dataDirs: expected 1 to 16 folders" },
		{ "{\"dataDirs\": [\"/a\", \"b\"]}", "dataDirs[1]: \"b\" is not an absolute path" },
		{ "{\"etcd\": {\"Cluster\": {\"endpoints\": [\"a:1\"]}}}",
		  "etcd.Cluster: not a store name" },
		{ "{\"etcd\": {\"c\": {}}}", "etcd.c.endpoints: missing (the members' addresses)" },
		{ "{\"etcd\": {\"c\": {\"endpoints\": [\"a:1,b:2\"]}}}",
		  "etcd.c.endpoints[0]: \"a:1,b:2\" is not one endpoint" },
		{ "{\"etcd\": {\"c\": {\"endpoints\": [\"a:1\"], \"prefix\": \"x\"}}}",
		  "etcd.c.prefix: \"x\" does not start with '/'" },
		{ "{\"etcd\": {\"c\": {\"endpoints\": [\"a:1\"], \"tls\": {\"cert\": \"/c\"}}}}",
		  "etcd.c.tls: \"cert\" and \"key\" go together" },
		{ "{\"etcd\": {\"c\": {\"endpoints\": [\"a:1\"], \"tls\": {\"key\": \"k\", "
		  "\"cert\": \"/c\"}}}}",
		  "etcd.c.tls.key: \"k\" is not an absolute path" },
		{ "{\"etcd\": {\"c\": {\"endpoints\": [\"a:1\"], \"user\": \"x\"}}}",
		  "etcd.c.user: unknown key" },
	};
	char err[512];

	(void)st;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nodeconf n = { 0 };

		err[0] = '\0';
		assert_int_equal(
			nodeconf_parse(bad[i].text, strlen(bad[i].text), &n, err, sizeof(err)),
			-EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].text, err, bad[i].err);
	}
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_load(void **st)
{
	struct nodeconf n = { 0 };
	char p[128], link[128], err[512];

	(void)st;
	snprintf(p, sizeof(p), "%s/cni.json", dir);
	write_file(p, "{\"logDir\": \"/var/log/y\"}", 0644);
	assert_int_equal(nodeconf_load(p, &n, err, sizeof(err)), 0);
	assert_true(n.found);
	assert_string_equal(n.path, p);
	assert_string_equal(n.log_dir, "/var/log/y");
	nodeconf_clear(&n);
	/* the variable names the file for the plugins, as the runtime's environment holds it */
	setenv(NODECONF_ENV, p, 1);
	assert_string_equal(nodeconf_default_path(), p);
	assert_int_equal(nodeconf_load(NULL, &n, err, sizeof(err)), 0);
	assert_string_equal(n.log_dir, "/var/log/y");
	nodeconf_clear(&n);
	/* a file the owner named that is not there is an error, not the defaults */
	snprintf(link, sizeof(link), "%s/none.json", dir);
	setenv(NODECONF_ENV, link, 1);
	assert_int_equal(nodeconf_load(NULL, &n, err, sizeof(err)), -ENOENT);
	assert_int_equal(nodeconf_load(link, &n, err, sizeof(err)), -ENOENT);
	unsetenv(NODECONF_ENV);
	assert_string_equal(nodeconf_default_path(), NODECONF_FILE);
	/* writable by others: anyone could name their own folders and etcd */
	write_file(p, "{}", 0666);
	assert_int_equal(nodeconf_load(p, &n, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "with mode 0666: refused"));
	/* a symbolic link, even to a good file */
	write_file(p, "{}", 0644);
	snprintf(link, sizeof(link), "%s/link.json", dir);
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(nodeconf_load(link, &n, err, sizeof(err)), -ELOOP);
	/* a bad key: the file and the path */
	write_file(p, "{\"stateDir\": 1}", 0644);
	assert_int_equal(nodeconf_load(p, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/cni.json: stateDir: "));
	/* the defaults */
	assert_int_equal(nodeconf_defaults(&n), 0);
	assert_false(n.found);
	assert_string_equal(n.path, NODECONF_FILE);
	assert_string_equal(n.sysfs, NODECONF_SYSFS);
	nodeconf_clear(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
