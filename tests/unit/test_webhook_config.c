/* SPDX-License-Identifier: Apache-2.0 */
/* The webhook's config parser (JSON and YAML), the YAML reader and writer under it, and the
 * Kubernetes name rules it applies: the fixed shape of issue 9 read as written, defaults, and
 * every bad input refused with the path of the field. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/fileio.h"
#include "webhook/webhookconf.h"
#include "doc/yaml.h"

static struct webhook_config *parse_ok(const char *text)
{
	struct webhook_config *cfg = NULL;
	char err[512];
	int r = webhook_config_parse(text, strlen(text), &cfg, err, sizeof(err));

	if (r < 0)
		fail_msg("refused: %s\n%s", err, text);
	return cfg;
}

static void parse_bad(const char *text, const char *want)
{
	struct webhook_config *cfg = NULL;
	char err[512] = "";
	int r = webhook_config_parse(text, strlen(text), &cfg, err, sizeof(err));

	if (r != -EINVAL)
		fail_msg("accepted (r=%d): %s", r, text);
	assert_null(cfg);
	if (strcmp(err, want))
		fail_msg("message\n  got:  %s\n  want: %s", err, want);
}

/* issue 9's fixed shape, in JSON, exactly as the issue writes it */
static void test_issue_shape_json(void **state)
{
	struct webhook_config *cfg =
		parse_ok("{\"groups\": {\"gpu-sriov\": {\"networks\": "
			 "[{\"namespace\": \"spiderpool\", \"name\": "
			 "\"gpu1-sriov\", "
			 "\"resource\": \"spidernet.io/gpu1sriov\", "
			 "\"count\": 1}, {\"namespace\": \"spiderpool\", "
			 "\"name\": "
			 "\"gpu2-sriov\", \"resource\": \"spidernet.io/gpu2sriov\"}]}}}");
	const struct webhook_group *g = webhook_config_group(cfg, "gpu-sriov");

	assert_non_null(g);
	assert_int_equal(cfg->n_groups, 1);
	assert_int_equal(g->n_networks, 2);
	assert_string_equal(g->networks[0].namespace, "spiderpool");
	assert_string_equal(g->networks[1].name, "gpu2-sriov");
	assert_string_equal(g->networks[1].resource, "spidernet.io/gpu2sriov");
	assert_int_equal(g->networks[1].count, 1); /* count defaults to 1 */
	assert_null(g->networks[0].interface);
	/* group options are on by default, errors deny */
	assert_true(g->ipc_lock && g->shm && g->memory_warning);
	assert_null(g->shm_size_limit);
	assert_int_equal(g->on_error, WEBHOOK_ON_ERROR_UNSET);
	assert_int_equal(cfg->on_error, WEBHOOK_ON_ERROR_DENY);
	assert_true(webhook_config_is_gpu(cfg, "nvidia.com/gpu"));
	assert_false(webhook_config_is_gpu(cfg, "nvidia.com/hostdev"));
	assert_null(webhook_config_group(cfg, "gpu"));
	webhook_config_free(cfg);
}

/* the test fixture (and what the chart's ConfigMap holds) is YAML: flow mappings, comments,
 * options */
static void test_fixture_yaml(void **state)
{
	struct webhook_config *cfg;
	const struct webhook_group *g;
	char *buf = NULL, err[512];
	size_t len;

	assert_int_equal(
		fileio_read_at(AT_FDCWD, "tests/fixtures/webhook/config.yaml", 1 << 20, &buf, &len),
		0);
	if (webhook_config_parse(buf, len, &cfg, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	free(buf);
	assert_int_equal(cfg->n_groups, 4);
	g = webhook_config_group(cfg, "gpu-sriov");
	assert_int_equal(g->n_networks, 8);
	assert_string_equal(g->networks[7].name, "gpu8-sriov");
	assert_string_equal(g->networks[7].resource, "spidernet.io/gpu8sriov");
	g = webhook_config_group(cfg, "shared-a");
	assert_int_equal(g->n_networks, 0);
	assert_int_equal(g->n_resources, 1);
	assert_string_equal(g->resources[0].name, "rdma/rdma_shared_device_a");
	assert_string_equal(g->shm_size_limit, "8Gi");
	g = webhook_config_group(cfg, "hostdev");
	assert_string_equal(g->networks[0].namespace, ""); /* the pod's */
	assert_false(g->ipc_lock);
	assert_int_equal(g->on_error, WEBHOOK_ON_ERROR_ALLOW);
	assert_true(webhook_config_is_gpu(cfg, "nvidia.com/v100"));
	assert_true(webhook_config_is_gpu(cfg, "nvidia.com/gpu")); /* kept with the config's own */
	webhook_config_free(cfg);
}

static void test_refusals(void **state)
{
	parse_bad("", "empty document");
	parse_bad("{\"groups\": {}}", "groups: no groups");
	parse_bad("{}", "groups: missing");
	parse_bad("{\"groups\": {\"a\": {}}}", "groups.a: a group needs networks or resources");
	parse_bad("{\"groupz\": {}}", "groupz: unknown key");
	parse_bad(
		"{\"groups\": {\"a\": {\"networks\": [{\"name\": \"n\", \"resourse\": \"x/y\"}]}}}",
		"groups.a.networks[0].resourse: unknown key");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"namespace\": \"ns\"}]}}}",
		  "groups.a.networks[0].name: missing");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"name\": \"n\", \"count\": 0}]}}}",
		  "groups.a.networks[0].count: expected 1 to 1024, got 0");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"name\": \"n\", \"count\": \"1\"}]}}}",
		  "groups.a.networks[0].count: expected an integer, got a string");
	parse_bad("{\"groups\": {\"a\": {\"networks\": "
		  "[{\"name\": \"n\", \"resource\": "
		  "\"gpu1sriov\"}]}}}",
		  "groups.a.networks[0].resource: \"gpu1sriov\": must be "
		  "domain/name, such as example.com/hca (a name without a "
		  "domain is a native Kubernetes resource)");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"name\":"
		  " \"n\", \"resource\": \"kubernetes.io/x\"}]}}}",
		  "groups.a.networks[0].resource: \"kubernetes.io/x\": the "
		  "kubernetes.io domain is reserved for native Kubernetes "
		  "resources");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"name\": \"N_1\"}]}}}",
		  "groups.a.networks[0].name: \"N_1\" is not a "
		  "NetworkAttachmentDefinition name: a lowercase RFC 1123 "
		  "subdomain "
		  "must consist of lower case alphanumeric characters, "
		  "'-' or '.', and must start and end with an "
		  "alphanumeric "
		  "character");
	parse_bad("{\"groups\": {\"a\": {\"networks\": "
		  "[{\"namespace\": \"Spider\", \"name\": "
		  "\"n\"}]}}}",
		  "groups.a.networks[0].namespace: \"Spider\" is not a "
		  "namespace name: a lowercase RFC 1123 label must consist "
		  "of "
		  "lower case alphanumeric characters or '-', and "
		  "must start and end with an alphanumeric "
		  "character");
	parse_bad("{\"groups\": {\"a\": {\"networks\": "
		  "[{\"name\": \"n\", \"interface\": "
		  "\"a/b\"}]}}}",
		  "groups.a.networks[0].interface: \"a/b\" is not an "
		  "interface name: contains '/'");
	parse_bad("{\"groups\": {\"a\": {\"networks\": [{\"namespace\": \"x\", "
		  "\"name\": \"n\"}, {\"namespace\": \"x\", \"name\": "
		  "\"n\"}]}}}",
		  "groups.a.networks[1]: x/n is listed twice in this group");
	parse_bad("{\"groups\": {\"a\": {\"resources\": {\"rdma/x\": true}}}}",
		  "groups.a.resources[\"rdma/x\"]: expected a count (an integer), got a boolean");
	parse_bad("{\"groups\": {\"a\": {\"resources\": "
		  "{\"rdma/x\": 1}, \"shmSizeLimit\": "
		  "\"lots\"}}}",
		  "groups.a.shmSizeLimit: \"lots\" is not a quantity (for "
		  "example 64Gi): a quantity starts with a number, such as "
		  "64Gi, 1.5 or 500m");
	parse_bad(
		"{\"groups\": {\"a\": {\"resources\": {\"rdma/x\": 1}, \"onError\": \"ignore\"}}}",
		"groups.a.onError: expected \"deny\" or \"allow\", got \"ignore\"");
	parse_bad("{\"groups\": {\"a\": {\"resources\": {\"rdma/x\": 1}, \"ipcLock\": \"yes\"}}}",
		  "groups.a.ipcLock: expected true or false, got a string");
	parse_bad("{\"groups\": {\"a,b\": {\"resources\": {\"rdma/x\": 1}}}}",
		  "groups[\"a,b\"]: a group name is 1 to 63 characters without commas or blanks");
	parse_bad("{\"gpuResources\": [\"rdma/x\"], \"groups\":"
		  " {\"a\": {\"resources\": {\"rdma/x\": 1}}}}",
		  "groups.a: resources: rdma/x is named in gpuResources as a GPU");
	/* JSON errors say where */
	parse_bad("{\"groups\": {\"a\": }", "line 1 column 18: unexpected token near '}'");
	parse_bad("{\"groups\": {}, \"groups\": {}}",
		  "line 1 column 23: duplicate object key near '\"groups\"'");
}

static void test_yaml_refusals(void **state)
{
	parse_bad("groups:\n  a:\n    resources: {rdma/x: 1}\n  a:\n    resources: {rdma/y: 1}\n",
		  "line 4 column 3: key \"a\" given twice");
	parse_bad("x: &anchor {rdma/x: 1}\ngroups:\n  a:\n    resources: *anchor\n",
		  "line 4 column 16: YAML aliases (*anchor) are not supported");
	parse_bad("groups:\n  a:\n    resources: {rdma/x: 1}\n---\ngroups: {}\n",
		  "line 4 column 1: more than one YAML document; give one");
	parse_bad("groups:\n  a: [\n",
		  "line 3 column 1: did not find expected node content while parsing a flow node");
	parse_bad("groups:\n  ? [a]\n  : 1\n",
		  "line 2 column 5: a key must be a string, not a sequence");
	/* YAML 1.2 core schema: yes is a string, so not a boolean */
	parse_bad("groups:\n  a:\n    resources: {rdma/x: 1}\n    shm: yes\n",
		  "groups.a.shm: expected true or false, got a string");
}

static json_t *yaml(const char *text);

/* v written as YAML reads back as v; the text, for messages */
static void assert_roundtrip(const json_t *v, const char *what)
{
	char *text = NULL, err[256];
	size_t n = 0;
	json_t *back = NULL;
	FILE *f = open_memstream(&text, &n);

	assert_int_equal(doc_write_yaml(f, v), 0);
	fclose(f);
	if (doc_parse(text, n, &back, NULL, err, sizeof(err)) < 0)
		fail_msg("%s written back: %s\n%s", what, err, text);
	if (!json_equal(v, back))
		fail_msg("%s did not read back the same:\n%s", what, text);
	json_decref(back);
	free(text);
}

static json_t *yaml(const char *text)
{
	json_t *v = NULL;
	char err[256];

	if (doc_parse(text, strlen(text), &v, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	return v;
}

/* scalars read as Kubernetes YAML means them; the writer quotes what would read back otherwise */
static void test_yaml_scalars(void **state)
{
	json_t *v = yaml("a: 1\nb: '1'\nc: true\nd: yes\ne: ~\nf: 1.5\n"
			 "g: 0x10\nh: 64Gi\ni: \"\"\nj: |\n  x\n  y\n");
	char *text = NULL;
	size_t n = 0;
	FILE *f;

	assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
	assert_string_equal(json_string_value(json_object_get(v, "b")), "1");
	assert_true(json_is_true(json_object_get(v, "c")));
	assert_string_equal(json_string_value(json_object_get(v, "d")), "yes");
	assert_true(json_is_null(json_object_get(v, "e")));
	assert_true(json_is_real(json_object_get(v, "f")));
	assert_int_equal(json_integer_value(json_object_get(v, "g")), 16);
	assert_string_equal(json_string_value(json_object_get(v, "h")), "64Gi");
	assert_string_equal(json_string_value(json_object_get(v, "i")), "");
	assert_string_equal(json_string_value(json_object_get(v, "j")), "x\ny\n");
	assert_roundtrip(v, "scalars");
	/* and "1" is quoted so that it stays a string */
	f = open_memstream(&text, &n);
	assert_int_equal(doc_write_yaml(f, v), 0);
	fclose(f);
	assert_non_null(strstr(text, "b: \"1\"\n"));
	json_decref(v);
	free(text);
}

/* every pod fixture survives YAML -> JSON -> YAML -> JSON */
/* found by fuzz_webhook_config: 1. is a real and must be written back as one; 1e999 is no JSON
 * number and stays the string it was */
static void test_yaml_reals(void **state)
{
	json_t *v = yaml("a: 1.\nb: 1e999\nc: -2.0\n");

	assert_true(json_is_real(json_object_get(v, "a")));
	assert_string_equal(json_string_value(json_object_get(v, "b")), "1e999");
	assert_roundtrip(v, "reals");
	json_decref(v);
}

static void test_yaml_roundtrip_fixtures(void **state)
{
	static const char *const files[] = {
		"seed002-rdma-test-pod-1.yaml",
		"seed003-vllm-volcano-job.yaml",
		"seed004-rdma-tools-pod.yaml",
		"config.yaml",
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256], *buf = NULL, err[256];
		size_t len;
		json_t *a = NULL;

		snprintf(path, sizeof(path), "tests/fixtures/webhook/%s", files[i]);
		assert_int_equal(fileio_read_at(AT_FDCWD, path, 1 << 20, &buf, &len), 0);
		if (doc_parse(buf, len, &a, NULL, err, sizeof(err)) < 0)
			fail_msg("%s: %s", path, err);
		assert_roundtrip(a, path);
		json_decref(a);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issue_shape_json),
		cmocka_unit_test(test_fixture_yaml),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_yaml_refusals),
		cmocka_unit_test(test_yaml_scalars),
		cmocka_unit_test(test_yaml_reals),
		cmocka_unit_test(test_yaml_roundtrip_fixtures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
