/* SPDX-License-Identifier: Apache-2.0 */
/* src/k8s/client.c's kubeconfig reader (the node owner's file, read by a root daemon): the
 * current context's cluster and user; a CA and a token file relative to the kubeconfig's
 * folder; client certificates inline; each refusal names its field: no current context, a
 * context that names no cluster, an http:// server, insecure-skip-tls-verify, an exec plugin, a
 * certificate without its key, -data that is not base64; and outside a pod without one, the
 * sentence that says to give --kubeconfig. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "k8s/client.h"

static char dir[64];

static int setup(void **st)
{
	strcpy(dir, "/tmp/rdmak-k8sc.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* k8s_client_new on a kubeconfig of this text; its error in err. */
static int load(const char *text, struct k8s_client **c, char *err)
{
	char path[128];

	put("config", text);
	snprintf(path, sizeof(path), "%s/config", dir);
	err[0] = '\0';
	return k8s_client_new(path, c, err, 512);
}

#define HEAD                                                                                       \
	"apiVersion: v1\nkind: Config\ncurrent-context: c\n"                                       \
	"contexts:\n- name: c\n  context: {cluster: k, user: u}\n"

static void test_good(void **st)
{
	struct k8s_client *c = NULL;
	char err[512];

	put("ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	put("token", "abc\n");
	assert_int_equal(load(HEAD
			      "clusters:\n- name: k\n  cluster:\n    server: https://[::1]:6443/\n"
			      "    certificate-authority: ca.crt\n"
			      "users:\n- name: u\n  user: {tokenFile: token}\n",
			      &c, err),
			 0);
	assert_string_equal(k8s_client_server(c), "https://[::1]:6443/");
	k8s_client_free(c);
	c = NULL;
	/* inline client certificate ("a" and "b" in base64), the system's CAs */
	assert_int_equal(load(HEAD
			      "clusters:\n- name: k\n  cluster: {server: https://api.example}\n"
			      "users:\n- name: u\n  user: {client-certificate-data: YQ==, "
			      "client-key-data: Yg==}\n",
			      &c, err),
			 0);
	assert_string_equal(k8s_client_server(c), "https://api.example");
	k8s_client_free(c);
}

static void refused(const char *text, int want, const char *why)
{
	struct k8s_client *c = NULL;
	char err[512];

	assert_int_equal(load(text, &c, err), want);
	assert_null(c);
	if (!strstr(err, why))
		fail_msg("error \"%s\" does not say \"%s\"", err, why);
}

static void test_refused(void **st)
{
	refused("apiVersion: v1\nclusters: []\n", -EINVAL, "current-context: missing");
	refused(HEAD "clusters: []\nusers: []\n", -EINVAL, "clusters: no entry named \"k\"");
	refused(HEAD "clusters:\n- name: k\n  cluster: {server: http://a}\nusers:\n- name: u\n  "
		     "user: {token: t}\n",
		-EINVAL, "not an https:// URL");
	refused(HEAD
		"clusters:\n- name: k\n  cluster: {server: https://a, insecure-skip-tls-verify: "
		"true}\nusers:\n- name: u\n  user: {token: t}\n",
		-EINVAL, "insecure-skip-tls-verify");
	refused(HEAD "clusters:\n- name: k\n  cluster: {server: https://a}\nusers:\n- name: u\n  "
		     "user: {exec: {command: aws}}\n",
		-EINVAL, "users[0].user.exec: rdmak runs no credential plugin");
	refused(HEAD "clusters:\n- name: k\n  cluster: {server: https://a}\nusers:\n- name: u\n  "
		     "user: {client-certificate-data: YQ==}\n",
		-EINVAL, "client-certificate and client-key go together");
	refused(HEAD
		"clusters:\n- name: k\n  cluster: {server: https://a, certificate-authority-data: "
		"'!!'}\nusers:\n- name: u\n  user: {token: t}\n",
		-EINVAL, "certificate-authority-data: not base64");
	refused(HEAD "clusters:\n- name: k\n  cluster: {server: https://a, certificate-authority: "
		     "none.crt}\nusers:\n- name: u\n  user: {token: t}\n",
		-ENOENT, "none.crt");
}

static void test_in_cluster(void **st)
{
	struct k8s_client *c = NULL;
	char err[512];

	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(k8s_client_new(NULL, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "give --kubeconfig"));
	assert_null(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_in_cluster),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
