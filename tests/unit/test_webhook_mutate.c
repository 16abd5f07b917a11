/* SPDX-License-Identifier: Apache-2.0 */
/* The merge rules (webhook/mutate.c), the networks annotation in both of Multus' forms, the JSON
 * Patch diff and the AdmissionReview handler. Pods come from the seeds' fixtures
 * (tests/fixtures/webhook) or are written here as small JSON. */
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
#include "webhook/mutate.h"
#include "webhook/networks.h"
#include "webhook/patch.h"
#include "webhook/review.h"

static struct webhook_config *cfg;

static int setup(void **state)
{
	char *buf = NULL, err[512];
	size_t len;

	if (fileio_read_at(AT_FDCWD, "tests/fixtures/webhook/config.yaml", 1 << 20, &buf, &len) < 0)
		return -1;
	if (webhook_config_parse(buf, len, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

static int teardown(void **state)
{
	webhook_config_free(cfg);
	return 0;
}

static json_t *parse(const char *text)
{
	json_t *v = NULL;
	char err[256];

	if (doc_parse(text, strlen(text), &v, NULL, err, sizeof(err)) < 0)
		fail_msg("%s in %s", err, text);
	return v;
}

static json_t *fixture(const char *name)
{
	char path[256], *buf = NULL, err[256];
	size_t len;
	json_t *v = NULL;

	snprintf(path, sizeof(path), "tests/fixtures/webhook/%s", name);
	assert_int_equal(fileio_read_at(AT_FDCWD, path, 1 << 20, &buf, &len), 0);
	if (doc_parse(buf, len, &v, NULL, err, sizeof(err)) < 0)
		fail_msg("%s: %s", path, err);
	free(buf);
	return v;
}

/* the value at a dotted path with [i] for arrays and "quoted" keys: at(pod, "metadata",
 * "annotations", KEY) */
static json_t *at(json_t *v, ...)
{
	va_list ap;
	const char *k;

	va_start(ap, v);
	while (v && (k = va_arg(ap, const char *))) {
		if (json_is_array(v))
			v = json_array_get(v, (size_t)atoi(k));
		else
			v = json_object_get(v, k);
	}
	va_end(ap);
	return v;
}

static const char *str_at(json_t *v, const char *a, const char *b, const char *c, const char *d,
			  const char *e, const char *f)
{
	json_t *x = at(v, a, b, c, d, e, f, NULL);

	return json_is_string(x) ? json_string_value(x) : NULL;
}

static void set_annotation(json_t *pod, const char *key, const char *value)
{
	json_t *meta = json_object_get(pod, "metadata"), *ann;

	if (!meta)
		json_object_set_new(pod, "metadata", meta = json_object());
	ann = json_object_get(meta, "annotations");
	if (!ann)
		json_object_set_new(meta, "annotations", ann = json_object());
	json_object_set_new(ann, key, json_string(value));
}

static void mutate_ok(const json_t *pod, const char *ns, struct webhook_mutate_result *mr)
{
	assert_int_equal(webhook_mutate_pod(cfg, pod, ns, mr), 0);
	if (mr->denied)
		fail_msg("denied: %s", mr->denied);
}

/* The second pass over the first's output changes nothing (reinvocationPolicy: IfNeeded). */
static void assert_idempotent(const json_t *mutated, const char *ns)
{
	struct webhook_mutate_result again;
	json_t *patch;

	mutate_ok(mutated, ns, &again);
	patch = webhook_patch_diff(mutated, again.pod);
	if (json_array_size(patch) != 0 || again.n_changes != 0) {
		char *p = json_dumps(patch, 0);

		fail_msg("second pass changed: %s (%s)", p,
			 again.n_changes ? again.changes[0] : "");
	}
	json_decref(patch);
	webhook_mutate_result_clear(&again);
}

/* ---- seed pods ------------------------------------------------------------------------------ */

/* seed 004: the rdma-tools pod with Spiderpool's annotation gets the seed's eight networks and
 * eight resources, plus IPC_LOCK; its own /dev/shm is kept */
static void test_seed004_rdma_tools(void **state)
{
	json_t *pod = fixture("seed004-rdma-tools-pod.yaml"), *c, *want,
	       *expected = fixture("seed004-expected.yaml"), *got;
	struct webhook_mutate_result mr;
	const char *nets;

	mutate_ok(pod, "default", &mr);
	assert_string_equal(mr.groups, "gpu-sriov");
	assert_string_equal(mr.container, "rdma-test");
	/* the seed's own expected annotation, as a JSON list, same order */
	want = json_loads(json_string_value(at(expected, "extraAnnotations",
					       "k8s.v1.cni.cncf.io/networks", NULL)),
			  0, NULL);
	nets = str_at(mr.pod, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks", NULL, NULL,
		      NULL);
	assert_non_null(nets);
	got = json_loads(nets, 0, NULL);
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(expected);
	c = at(mr.pod, "spec", "containers", "0", NULL);
	for (int i = 1; i <= 8; i++) {
		char res[64];

		snprintf(res, sizeof(res), "spidernet.io/gpu%dsriov", i);
		assert_string_equal(json_string_value(at(c, "resources", "limits", res, NULL)),
				    "1");
		assert_string_equal(json_string_value(at(c, "resources", "requests", res, NULL)),
				    "1");
	}
	/* the user's requests stay */
	assert_string_equal(json_string_value(at(c, "resources", "requests", "cpu", NULL)), "200m");
	assert_string_equal(
		json_string_value(at(c, "securityContext", "capabilities", "add", "0", NULL)),
		"IPC_LOCK");
	/* its chart mounts a Memory emptyDir at /dev/shm: no second one */
	assert_int_equal(json_array_size(at(mr.pod, "spec", "volumes", NULL)), 1);
	assert_int_equal(json_array_size(at(c, "volumeMounts", NULL)), 1);
	assert_int_equal(mr.n_warnings, 0);
	assert_idempotent(mr.pod, "default");
	json_decref(want);
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* seed 002: the test pod without its hand-written resource and capability; shared-a brings both,
 * and a /dev/shm with the group's sizeLimit */
static void test_seed002_shared(void **state)
{
	json_t *pod = fixture("seed002-rdma-test-pod-1.yaml"), *c, *vol;
	struct webhook_mutate_result mr;

	c = at(pod, "spec", "containers", "0", NULL);
	json_object_del(c, "securityContext");
	json_object_del(c, "resources");
	set_annotation(pod, "rdmak.io/rdma-networks", "shared-a");
	mutate_ok(pod, "default", &mr);
	c = at(mr.pod, "spec", "containers", "0", NULL);
	assert_string_equal(
		json_string_value(at(c, "resources", "limits", "rdma/rdma_shared_device_a", NULL)),
		"1");
	assert_string_equal(json_string_value(at(c, "resources", "requests",
						 "rdma/rdma_shared_device_a", NULL)),
			    "1");
	assert_string_equal(
		json_string_value(at(c, "securityContext", "capabilities", "add", "0", NULL)),
		"IPC_LOCK");
	vol = at(mr.pod, "spec", "volumes", "0", NULL);
	assert_string_equal(json_string_value(at(vol, "name", NULL)), "rdmak-shm");
	assert_string_equal(json_string_value(at(vol, "emptyDir", "medium", NULL)), "Memory");
	assert_string_equal(json_string_value(at(vol, "emptyDir", "sizeLimit", NULL)), "8Gi");
	assert_string_equal(json_string_value(at(c, "volumeMounts", "0", "mountPath", NULL)),
			    "/dev/shm");
	/* no networks in this group: the annotation is not invented */
	assert_null(at(mr.pod, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks", NULL));
	assert_idempotent(mr.pod, "default");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* seed 002 verbatim (resource and IPC_LOCK written by hand, limits as an integer): nothing to add
 * but /dev/shm, and the integer 1 is not rewritten as "1" */
static void test_seed002_as_written(void **state)
{
	json_t *pod = fixture("seed002-rdma-gpu-test-pod-1.yaml");
	struct webhook_mutate_result mr;

	set_annotation(pod, "rdmak.io/rdma-networks", "shared-a");
	mutate_ok(pod, "default", &mr);
	assert_true(json_is_integer(at(mr.pod, "spec", "containers", "0", "resources", "limits",
				       "rdma/rdma_shared_device_a", NULL)));
	/* requests equal to the limits are added */
	assert_string_equal(json_string_value(at(mr.pod, "spec", "containers", "0", "resources",
						 "requests", "rdma/rdma_shared_device_a", NULL)),
			    "1");
	assert_int_equal(json_array_size(at(mr.pod, "spec", "containers", "0", "securityContext",
					    "capabilities", "add", NULL)),
			 1);
	assert_idempotent(mr.pod, "default");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* seed 003: the Volcano job's master pod (its template), renamed GPUs, IPC_LOCK and /dev/shm in
 * place already; v100 adds nothing, shared-a adds the shared HCA to the GPU container */
static void test_seed003_vllm(void **state)
{
	json_t *job = fixture("seed003-vllm-volcano-job.yaml");
	json_t *tpl = at(job, "spec", "tasks", "0", "template", NULL);
	json_t *pod =
		json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", "v1", "kind", "Pod", "metadata",
			  "name", "vllm-rdma-test-master-0", "spec", json_object_get(tpl, "spec"));
	struct webhook_mutate_result mr;

	set_annotation(pod, "rdmak.io/rdma-networks", "v100");
	mutate_ok(pod, "crater-workspace", &mr);
	assert_int_equal(mr.n_changes, 0);
	json_t *patch = webhook_patch_diff(pod, mr.pod);
	assert_int_equal(json_array_size(patch), 0);
	json_decref(patch);
	webhook_mutate_result_clear(&mr);

	set_annotation(pod, "rdmak.io/rdma-networks", "v100, shared-a");
	mutate_ok(pod, "crater-workspace", &mr);
	assert_string_equal(mr.container, "master");
	assert_int_equal(mr.n_changes, 1);
	assert_string_equal(mr.changes[0], "resource rdma/rdma_shared_device_a: 1");
	assert_idempotent(mr.pod, "crater-workspace");
	json_decref(pod);
	json_decref(job);
	webhook_mutate_result_clear(&mr);
}

/* seed 003's hostdev pod: its comma-form networks annotation is kept, the group's network (the
 * same NAD, no namespace = the pod's) is not added twice; resources already there */
static void test_seed003_comma_form_same_network(void **state)
{
	json_t *pod = fixture("seed003-testpod1.yaml");
	struct webhook_mutate_result mr;

	set_annotation(pod, "rdmak.io/rdma-networks", "hostdev");
	mutate_ok(pod, "crater-workspace", &mr);
	assert_string_equal(str_at(mr.pod, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks",
				   NULL, NULL, NULL),
			    "hostdevice-net");
	assert_int_equal(mr.n_changes, 1); /* only /dev/shm; the group turns IPC_LOCK off */
	assert_string_equal(mr.changes[0], "/dev/shm: emptyDir medium Memory (volume rdmak-shm)");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* ---- merge cases
 * ------------------------------------------------------------------------------ */

static const char gpu_pod[] =
	"{\"apiVersion\": \"v1\", \"kind\": \"Pod\", "
	"\"metadata\": {\"name\": \"p\", "
	"\"annotations\": "
	"{\"rdmak.io/rdma-networks\": \"gpu-sriov\"}}, \"spec\": {\"containers\": ["
	"{\"name\": \"sidecar\", \"image\": \"s\"},"
	"{\"name\": \"trainer\", \"image\": \"t\", "
	"\"resources\": {\"limits\": {\"nvidia.com/gpu\": "
	"\"8\", "
	"\"memory\": \"64Gi\", \"spidernet.io/gpu1sriov\": \"2\"}}}]}}";

/* the GPU container gets the resources; a higher count the user set stays; the memory limit
 * warns */
static void test_gpu_container_and_never_lower(void **state)
{
	json_t *pod = parse(gpu_pod), *c;
	struct webhook_mutate_result mr;

	mutate_ok(pod, "ns1", &mr);
	assert_string_equal(mr.container, "trainer");
	c = at(mr.pod, "spec", "containers", "1", NULL);
	assert_string_equal(
		json_string_value(at(c, "resources", "limits", "spidernet.io/gpu1sriov", NULL)),
		"2");
	assert_string_equal(
		json_string_value(at(c, "resources", "requests", "spidernet.io/gpu1sriov", NULL)),
		"2");
	assert_string_equal(
		json_string_value(at(c, "resources", "limits", "spidernet.io/gpu8sriov", NULL)),
		"1");
	assert_null(at(mr.pod, "spec", "containers", "0", "resources", NULL));
	assert_int_equal(mr.n_warnings, 1);
	assert_non_null(strstr(mr.warnings[0], "memory limit 64Gi"));
	assert_non_null(strstr(mr.warnings[0], "Couldn't allocate MR"));
	assert_true(strlen(mr.warnings[0]) <= 120);
	assert_idempotent(mr.pod, "ns1");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* rdmak.io/rdma-container picks another container; a name that is not there is refused */
static void test_container_annotation(void **state)
{
	json_t *pod = parse(gpu_pod);
	struct webhook_mutate_result mr;

	set_annotation(pod, "rdmak.io/rdma-container", "sidecar");
	mutate_ok(pod, "ns1", &mr);
	assert_string_equal(mr.container, "sidecar");
	assert_string_equal(json_string_value(at(mr.pod, "spec", "containers", "0", "resources",
						 "limits", "spidernet.io/gpu2sriov", NULL)),
			    "1");
	/* gpu1sriov is already the trainer's: a second device would be taken, so it is left
	 * there */
	assert_null(at(mr.pod, "spec", "containers", "0", "resources", "limits",
		       "spidernet.io/gpu1sriov", NULL));
	webhook_mutate_result_clear(&mr);

	set_annotation(pod, "rdmak.io/rdma-container", "nope");
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(
		mr.denied,
		"annotation rdmak.io/rdma-container: no container named \"nope\" (the pod has: "
		"sidecar, trainer)");
	assert_false(mr.allow_anyway);
	assert_true(json_equal(mr.pod, pod)); /* nothing half-done */
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* two GPU containers: the first gets it, and a warning says how to choose */
static void test_two_gpu_containers(void **state)
{
	json_t *pod =
		parse("{\"metadata\": {\"annotations\": "
		      "{\"rdmak.io/rdma-networks\": \"v100\"}}, "
		      "\"spec\": "
		      "{\"containers\": [{\"name\": \"a\", "
		      "\"resources\": {\"requests\": "
		      "{\"nvidia.com/v100\": 1}}},"
		      "{\"name\": \"b\", \"resources\": {\"limits\": {\"nvidia.com/gpu\": 1}}}]}}");
	struct webhook_mutate_result mr;

	mutate_ok(pod, "x", &mr);
	assert_string_equal(mr.container, "a");
	assert_int_equal(mr.n_warnings, 1);
	assert_string_equal(mr.warnings[0],
			    "containers a, b all ask for GPUs; RDMA went to \"a\" (set "
			    "rdmak.io/rdma-container to choose)");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* user networks in the JSON form are kept with their extra fields; ours come after, once */
static void test_networks_json_form_kept(void **state)
{
	json_t *pod = parse(gpu_pod), *list;
	struct webhook_mutate_result mr;
	const char *v;

	set_annotation(
		pod, "k8s.v1.cni.cncf.io/networks",
		"[{\"name\": \"storage\", \"ips\": [\"10.0.0.5/24\"]}, {\"name\": \"gpu3-sriov\", "
		"\"namespace\": \"spiderpool\", \"interface\": \"rail3\"}]");
	mutate_ok(pod, "ns1", &mr);
	v = str_at(mr.pod, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks", NULL, NULL,
		   NULL);
	list = json_loads(v, 0, NULL);
	assert_int_equal(json_array_size(list), 9);
	assert_string_equal(json_string_value(at(list, "0", "ips", "0", NULL)), "10.0.0.5/24");
	assert_string_equal(json_string_value(at(list, "1", "interface", NULL)), "rail3");
	assert_string_equal(json_string_value(at(list, "2", "name", NULL)), "gpu1-sriov");
	assert_string_equal(json_string_value(at(list, "3", "name", NULL)), "gpu2-sriov");
	assert_string_equal(json_string_value(at(list, "4", "name", NULL)), "gpu4-sriov");
	/* the written form is compact JSON */
	assert_int_equal(strncmp(v, "[{\"name\":\"storage\",\"ips\":[\"10.0.0.5/24\"]}", 40), 0);
	assert_idempotent(mr.pod, "ns1");
	json_decref(list);
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* the comma form: "[ns/]name[@if]", blanks and empty items tolerated, rewritten as JSON when we
 * add */
static void test_networks_comma_form(void **state)
{
	json_t *pod = parse(gpu_pod), *list;
	struct webhook_mutate_result mr;

	/* gpu1-sriov without a namespace in a pod of namespace spiderpool is the same network */
	set_annotation(pod, "k8s.v1.cni.cncf.io/networks",
		       " gpu1-sriov , other/gpu2-sriov@eth9, spiderpool/gpu5-sriov");
	mutate_ok(pod, "spiderpool", &mr);
	list = json_loads(str_at(mr.pod, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks",
				 NULL, NULL, NULL),
			  0, NULL);
	json_t *w0 = parse("{\"name\": \"gpu1-sriov\"}");
	json_t *w1 = parse(
		"{\"name\": \"gpu2-sriov\", \"namespace\": \"other\", \"interface\": \"eth9\"}");

	assert_int_equal(json_array_size(list), 3 + 6);
	assert_true(json_equal(json_array_get(list, 0), w0));
	assert_true(json_equal(json_array_get(list, 1), w1));
	json_decref(w0);
	json_decref(w1);
	assert_string_equal(json_string_value(at(list, "3", "name", NULL)), "gpu2-sriov");
	assert_string_equal(json_string_value(at(list, "3", "namespace", NULL)), "spiderpool");
	assert_string_equal(json_string_value(at(list, "4", "name", NULL)), "gpu3-sriov");
	json_decref(list);
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

#define LABEL_WHY                                                                                  \
	"a lowercase RFC 1123 label must consist of lower "                                        \
	"case alphanumeric characters or '-', and must "                                           \
	"start "                                                                                   \
	"and end with an alphanumeric character"

static void test_networks_parse(void **state)
{
	static const struct {
		const char *in, *err;
	} bad[] = {
		{ "ns/", "\"ns/\": no network name" },
		{ "a/b/c", "\"a/b/c\": more than one '/': expected [namespace/]name[@interface]" },
		{ "a@x/b", "\"a@x/b\": \"a@x\" is not a "
			   "namespace or network name Multus "
			   "reads: " LABEL_WHY },
		{ "a@b@c", "\"a@b@c\": more than one '@'" },
		/* issue 17 §3: what Multus's parsePodNetworkObjectName refuses */
		{ "default/net1@myIfc Name",
		  "\"default/net1@myIfc Name\": interface name \"myIfc Name\" contains a blank" },
		{ "net1@very_long_interface_name",
		  "\"net1@very_long_interface_name\": interface name "
		  "\"very_long_interface_name\" is longer than 15 "
		  "bytes "
		  "(IFNAMSIZ - 1)" },
		{ "net1@.", "\"net1@.\": interface name \".\" is \".\" or \"..\"" },
		{ "net1@..", "\"net1@..\": interface name \"..\" is \".\" or \"..\"" },
		/* what rdmak-cni refuses at ADD, refused at admission too */
		{ "net1@eth%d", "\"net1@eth%d\": interface name \"eth%d\" contains '%' (the kernel "
				"would pick another name for \"%d\")" },
		{ "[{\"name\": \"a\", \"interface\": \"if\\u0001\"}]",
		  "element 0 (\"a\"): interface: \"if\001\" contains a control character" },
		{ "Net1", "\"Net1\": \"Net1\" is not a "
			  "namespace or network name Multus "
			  "reads: " LABEL_WHY },
		{ "a,,b", "element 1 is empty: Multus would look up a network with no name" },
		{ "a,", "element 1 is empty: Multus would look up a network with no name" },
		/* the JSON form: what parsePodNetworkAnnotation checks, and the kernel's names */
		{ "[{\"name\": \"a\", \"mac\": \"02:00:00:00:00\"}]",
		  "element 0 (\"a\"): mac: \"02:00:00:00:00\" is not a "
		  "MAC address (6, 8 or 20 octets, as Go's net.ParseMAC "
		  "reads them)" },
		{ "[{\"name\": \"a\", \"ips\": [\"10.0.0.1/24\", \"10.0.0.300\"]}]",
		  "element 0 (\"a\"): ips: \"10.0.0.300\" is not an IP address or a CIDR" },
		{ "[{\"name\": \"a\", \"ips\": [\"10.0.0.1/33\"]}]",
		  "element 0 (\"a\"): ips: \"10.0.0.1/33\" is not an IP address or a CIDR" },
		{ "[{\"name\": \"a\", \"ips\": \"10.0.0.1\"}]",
		  "element 0: \"ips\" must be a list of strings" },
		{ "[{\"name\": \"a\", \"interface\": \"my if\"}]",
		  "element 0 (\"a\"): interface: \"my if\" contains a blank" },
		{ "[{\"name\": \"a\", \"infiniband-guid\": \"xx\"}]",
		  "element 0 (\"a\"): infiniband-guid: \"xx\" is "
		  "not a MAC address (6, 8 or 20 octets, as Go's "
		  "net.ParseMAC reads them)" },
		/* Multus reads the JSON form whenever the value holds [ { or " */
		{ "{\"name\": \"a\"}", "not a JSON list" },
		{ "[{\"namespace\": \"x\"}]", "element 0: \"name\" is missing" },
		{ "[{\"name\": 3}]", "element 0: \"name\" must be a non-empty string" },
		{ "[\"a\"]", "element 0 is not an object" },
		{ "[{\"name\": \"a\"}", "not a JSON list: ']' expected near end of file" },
	};
	char err[256];
	json_t *l;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		l = NULL;
		if (webhook_networks_parse(bad[i].in, &l, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted %s", bad[i].in);
		assert_null(l);
		if (strcmp(err, bad[i].err))
			fail_msg("%s:\n  got:  %s\n  want: %s", bad[i].in, err, bad[i].err);
	}
	/* found by fuzz_webhook_review: an item that is not UTF-8 was refused but leaked */
	assert_int_equal(webhook_networks_parse("ok,n@e\xe7x", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "\"n@e\xe7x\": not valid UTF-8");
	assert_int_equal(webhook_networks_parse("", &l, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	/* what Multus reads from the comma form, and the JSON form written back says the same:
	 * each part trimmed, an empty namespace or interface left out */
	{
		static const struct {
			const char *in, *json;
		} good[] = {
			{ " default / net1 @ eth1 ", "[{\"name\":\"net1\",\"namespace\":"
						     "\"default\",\"interface\":"
						     "\"eth1\"}]" },
			{ "/b", "[{\"name\":\"b\"}]" },
			{ "a@", "[{\"name\":\"a\"}]" },
			{ "net1@myIfcName15",
			  "[{\"name\":\"net1\",\"interface\":\"myIfcName15\"}]" },
			{ "[{\"name\":\"a\",\"mac\":"
			  "\"02-00-00-00-00-01\",\"ips\":"
			  "[\"10.0.0.1/24\",\"fd00::1\"],"
			  "\"infiniband-guid\":"
			  "\"0000.0000.fe80.0000.0000.0000.0200.5"
			  "e10.0000.0001\"}]",
			  "[{\"name\":\"a\",\"mac\":"
			  "\"02-00-00-00-00-01\",\"ips\":"
			  "[\"10.0.0.1/24\",\"fd00::1\"],"
			  "\"infiniband-guid\":"
			  "\"0000.0000.fe80.0000.0000.0000.0200.5"
			  "e10.0000.0001\"}]" },
		};

		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			char *text;

			if (webhook_networks_parse(good[i].in, &l, err, sizeof(err)) != 0)
				fail_msg("refused %s: %s", good[i].in, err);
			text = webhook_networks_format(l);
			if (strcmp(text, good[i].json))
				fail_msg("%s:\n  got:  %s\n  want: %s", good[i].in, text,
					 good[i].json);
			free(text);
			json_decref(l);
		}
	}
	assert_int_equal(webhook_networks_parse("a,b", &l, err, sizeof(err)), 0);
	assert_true(webhook_networks_contains(l, "ns", "ns", "a"));
	assert_true(webhook_networks_contains(l, "ns", "", "b"));
	assert_false(webhook_networks_contains(l, "ns", "other", "a"));
	json_decref(l);
}

/* a malformed networks annotation or resource value is refused, naming it */
static void test_refusals(void **state)
{
	json_t *pod = parse(gpu_pod);
	struct webhook_mutate_result mr;

	set_annotation(pod, "k8s.v1.cni.cncf.io/networks", "[{\"name\": ");
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(
		mr.denied,
		"annotation k8s.v1.cni.cncf.io/networks: not a JSON list: unexpected token "
		"near end of file");
	webhook_mutate_result_clear(&mr);
	json_object_del(at(pod, "metadata", "annotations", NULL), "k8s.v1.cni.cncf.io/networks");

	json_object_set_new(at(pod, "spec", "containers", "1", "resources", "limits", NULL),
			    "spidernet.io/gpu3sriov", json_string("500m"));
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(
		mr.denied,
		"spec.containers[1].resources.limits[\"spidernet.io/gpu3sriov\"]: not a whole "
		"number of devices");
	assert_int_equal(mr.n_changes, 0);
	webhook_mutate_result_clear(&mr);

	set_annotation(pod, "rdmak.io/rdma-networks", "gpu-sriov,nope");
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(
		mr.denied,
		"annotation rdmak.io/rdma-networks: no group \"nope\" in the webhook's config (it "
		"has: gpu-sriov, shared-a, v100, hostdev)");
	webhook_mutate_result_clear(&mr);

	set_annotation(pod, "cni.spidernet.io/rdma-resource-inject", "v100");
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(
		mr.denied,
		"annotations rdmak.io/rdma-networks (\"gpu-sriov,nope\") and "
		"cni.spidernet.io/rdma-resource-inject (\"v100\") name different groups; keep one");
	webhook_mutate_result_clear(&mr);
	json_decref(pod);

	pod = parse("{\"metadata\": {\"annotations\": "
		    "{\"rdmak.io/rdma-networks\": \"v100\"}}, "
		    "\"spec\": {}}");
	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_string_equal(mr.denied, "spec.containers: missing");
	webhook_mutate_result_clear(&mr);
	json_decref(pod);
}

/* onError: allow admits the pod unchanged and says why */
static void test_on_error_allow(void **state)
{
	json_t *pod =
		parse("{\"metadata\": {\"annotations\": {\"rdmak.io/rdma-networks\": \"hostdev\", "
		      "\"rdmak.io/rdma-container\": \"x\"}}, "
		      "\"spec\": {\"containers\": [{\"name\": "
		      "\"a\"}]}}");
	struct webhook_mutate_result mr;

	assert_int_equal(webhook_mutate_pod(cfg, pod, "ns1", &mr), 0);
	assert_non_null(mr.denied);
	assert_true(mr.allow_anyway);
	assert_true(json_equal(mr.pod, pod));
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* existing capabilities and /dev/shm in their many spellings */
static void test_capabilities_and_shm(void **state)
{
	struct webhook_mutate_result mr;
	json_t *pod;

	/* CAP_ prefix and lower case are the same capability */
	pod = parse("{\"metadata\": {\"annotations\": "
		    "{\"rdmak.io/rdma-networks\": \"v100\"}}, \"spec\": "
		    "{\"containers\": "
		    "[{\"name\": \"a\", \"securityContext\": "
		    "{\"capabilities\": {\"add\": "
		    "[\"cap_ipc_lock\"]}}, "
		    "\"volumeMounts\": [{\"name\": \"s\", \"mountPath\": "
		    "\"/dev/shm/\"}]}], \"volumes\": [{\"name\": \"s\", "
		    "\"emptyDir\": {}}]}}");
	mutate_ok(pod, "x", &mr);
	assert_int_equal(json_array_size(at(mr.pod, "spec", "containers", "0", "securityContext",
					    "capabilities", "add", NULL)),
			 1);
	assert_int_equal(mr.n_warnings, 1);
	assert_non_null(strstr(mr.warnings[0], "/dev/shm is a disk-backed emptyDir"));
	json_decref(pod);
	webhook_mutate_result_clear(&mr);

	/* a dropped IPC_LOCK is the user's choice: warned, not overridden */
	pod = parse("{\"metadata\": {\"annotations\": "
		    "{\"rdmak.io/rdma-networks\": \"v100\"}}, \"spec\": "
		    "{\"containers\": "
		    "[{\"name\": \"a\", \"securityContext\": "
		    "{\"capabilities\": {\"drop\": "
		    "[\"IPC_LOCK\"]}}}]}}");
	mutate_ok(pod, "x", &mr);
	assert_null(at(mr.pod, "spec", "containers", "0", "securityContext", "capabilities", "add",
		       NULL));
	assert_non_null(strstr(mr.warnings[0], "drops IPC_LOCK"));
	json_decref(pod);
	webhook_mutate_result_clear(&mr);

	/* privileged has every capability; a user volume named like ours is not ours */
	pod = parse("{\"metadata\": {\"annotations\": "
		    "{\"rdmak.io/rdma-networks\": \"v100\"}}, \"spec\": "
		    "{\"containers\": "
		    "[{\"name\": \"a\", \"securityContext\": "
		    "{\"privileged\": true}}], \"volumes\": [{\"name\": "
		    "\"rdmak-shm\", "
		    "\"hostPath\": {\"path\": \"/x\"}}]}}");
	mutate_ok(pod, "x", &mr);
	assert_null(at(mr.pod, "spec", "containers", "0", "securityContext", "capabilities", NULL));
	assert_string_equal(json_string_value(at(mr.pod, "spec", "volumes", "1", "name", NULL)),
			    "rdmak-shm-1");
	assert_string_equal(json_string_value(at(mr.pod, "spec", "containers", "0", "volumeMounts",
						 "0", "name", NULL)),
			    "rdmak-shm-1");
	assert_idempotent(mr.pod, "x");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);

	/* keys left empty in YAML are null, which Kubernetes reads as absent (--explain's input) */
	pod = parse("metadata:\n  annotations:\n    "
		    "rdmak.io/rdma-networks: v100\nspec:\n  volumes:\n"
		    "  containers:\n"
		    "  - name: a\n    resources:\n    securityContext:\n  "
		    "    capabilities:\n        add:\n    volumeMounts:\n");
	mutate_ok(pod, "x", &mr);
	assert_string_equal(
		json_string_value(at(mr.pod, "spec", "containers", "0", "securityContext",
				     "capabilities", "add", "0", NULL)),
		"IPC_LOCK");
	assert_string_equal(json_string_value(at(mr.pod, "spec", "containers", "0", "volumeMounts",
						 "0", "mountPath", NULL)),
			    "/dev/shm");
	assert_string_equal(json_string_value(at(mr.pod, "spec", "volumes", "0", "name", NULL)),
			    "rdmak-shm");
	assert_string_equal(
		str_at(mr.pod, "spec", "containers", "0", "resources", "limits", "rdma/rdma_v100"),
		"1");
	assert_idempotent(mr.pod, "x");
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

/* no annotation: not ours, byte for byte */
static void test_not_opted_in(void **state)
{
	json_t *pod = fixture("seed002-rdma-test-pod-1.yaml");
	struct webhook_mutate_result mr;

	mutate_ok(pod, "default", &mr);
	assert_null(mr.groups);
	assert_true(json_equal(mr.pod, pod));
	json_decref(pod);
	webhook_mutate_result_clear(&mr);
}

static void test_quantity_count(void **state)
{
	unsigned long long v;
	json_t *x;

	assert_int_equal(webhook_mutate_quantity_count(x = json_string("2k"), &v), 0);
	assert_int_equal(v, 2000);
	json_decref(x);
	assert_int_equal(webhook_mutate_quantity_count(x = json_string("1Ki"), &v), 0);
	assert_int_equal(v, 1024);
	json_decref(x);
	assert_int_equal(webhook_mutate_quantity_count(x = json_integer(3), &v), 0);
	assert_int_equal(v, 3);
	json_decref(x);
	assert_int_equal(webhook_mutate_quantity_count(x = json_string("1.5"), &v), -EINVAL);
	json_decref(x);
	assert_int_equal(webhook_mutate_quantity_count(x = json_integer(-1), &v), -EINVAL);
	json_decref(x);
	assert_int_equal(webhook_mutate_quantity_count(x = json_string("99999999999999999999"), &v),
			 -EINVAL);
	json_decref(x);
}

/* ---- patch ----------------------------------------------------------------------------------- */

static void test_patch_diff(void **state)
{
	json_t *a =
		parse("{\"a\": {\"b/c\": 1, \"d~e\": [1, 2], \"gone\": true}, \"arr\": [1, 2, 3]}");
	json_t *b = parse(
		"{\"a\": {\"b/c\": 2, \"d~e\": [1, 2, {\"x\": 1}]}, \"arr\": [1], \"new\": null}");
	json_t *want = parse("[{\"op\": \"remove\", \"path\": \"/a/gone\"},"
			     "{\"op\": \"replace\", \"path\": \"/a/b~1c\", \"value\": 2},"
			     "{\"op\": \"add\", \"path\": \"/a/d~0e/2\", \"value\": {\"x\": 1}},"
			     "{\"op\": \"remove\", \"path\": \"/arr/2\"},"
			     "{\"op\": \"remove\", \"path\": \"/arr/1\"},"
			     "{\"op\": \"add\", \"path\": \"/new\", \"value\": null}]");
	json_t *got = webhook_patch_diff(a, b);

	if (!json_equal(got, want))
		fail_msg("got %s", json_dumps(got, 0));
	json_decref(got);
	got = webhook_patch_diff(a, a);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	json_decref(a);
	json_decref(b);
	json_decref(want);
}

/* ---- AdmissionReview ------------------------------------------------------------------------- */

static char *review_of(const json_t *pod, const char *api_version, const char *op, const char *kind)
{
	json_t *rv = json_pack(
		"{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:O}}",
		"apiVersion", api_version, "kind", "AdmissionReview", "request", "uid",
		"705ab4f5-6393-11e8-b7cc-42010a800002", "kind", "group", "", "version", "v1",
		"kind", kind, "resource", "group", "", "version", "v1", "resource", "pods",
		"operation", op, "namespace", "default", "object", pod);
	char *s = json_dumps(rv, JSON_COMPACT);

	json_decref(rv);
	return s;
}

static json_t *answer(const char *body, unsigned want_status, struct webhook_review_answer *a)
{
	json_t *doc;

	assert_int_equal(webhook_review_handle(cfg, body, strlen(body), a), 0);
	if (a->http_status != want_status)
		fail_msg("status %u, want %u: %s", a->http_status, want_status, a->body);
	if (want_status != 200)
		return NULL;
	doc = json_loads(a->body, 0, NULL);
	assert_non_null(doc);
	return doc;
}

static void test_review(void **state)
{
	json_t *pod = fixture("seed004-rdma-tools-pod.yaml"), *doc, *resp;
	struct webhook_review_answer a;
	char *body;

	body = review_of(pod, "admission.k8s.io/v1", "CREATE", "Pod");
	doc = answer(body, 200, &a);
	resp = json_object_get(doc, "response");
	assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")),
			    "admission.k8s.io/v1");
	assert_string_equal(json_string_value(json_object_get(resp, "uid")),
			    "705ab4f5-6393-11e8-b7cc-42010a800002");
	assert_true(json_is_true(json_object_get(resp, "allowed")));
	assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
	assert_non_null(json_string_value(json_object_get(resp, "patch")));
	assert_int_equal(a.level, WEBHOOK_REVIEW_LOG_INFO);
	assert_non_null(strstr(a.summary,
			       "default/rdma-test-*: groups gpu-sriov, container \"rdma-test\""));
	json_decref(doc);
	webhook_review_answer_clear(&a);
	free(body);

	/* v1beta1 is answered as v1beta1; UPDATE is left alone */
	body = review_of(pod, "admission.k8s.io/v1beta1", "UPDATE", "Pod");
	doc = answer(body, 200, &a);
	resp = json_object_get(doc, "response");
	assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")),
			    "admission.k8s.io/v1beta1");
	assert_null(json_object_get(resp, "patch"));
	assert_true(json_is_true(json_object_get(resp, "allowed")));
	json_decref(doc);
	webhook_review_answer_clear(&a);
	free(body);

	/* another kind: allowed unchanged, with a warning about the webhook's rules */
	body = review_of(pod, "admission.k8s.io/v1", "CREATE", "Deployment");
	doc = answer(body, 200, &a);
	resp = json_object_get(doc, "response");
	assert_null(json_object_get(resp, "patch"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(resp, "warnings"), 0)),
			    "rdmak webhook mutates v1 Pods only, not v1 "
			    "Deployment: check its "
			    "MutatingWebhookConfiguration rules");
	json_decref(doc);
	webhook_review_answer_clear(&a);
	free(body);

	/* a refused pod: allowed false, 403 with the reason */
	set_annotation(pod, "cni.spidernet.io/rdma-resource-inject", "gpu-nothing");
	body = review_of(pod, "admission.k8s.io/v1", "CREATE", "Pod");
	doc = answer(body, 200, &a);
	resp = json_object_get(doc, "response");
	assert_true(json_is_false(json_object_get(resp, "allowed")));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(resp, "status"), "code")), 403);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(resp, "status"), "message")),
		"rdmak webhook: annotation "
		"cni.spidernet.io/rdma-resource-inject: no "
		"group \"gpu-nothing\" in "
		"the webhook's config (it has: gpu-sriov, shared-a, v100, hostdev)");
	assert_null(json_object_get(resp, "patch"));
	json_decref(doc);
	webhook_review_answer_clear(&a);
	free(body);
	json_decref(pod);
}

/* Issue 16 §2.1: a refusal decided before the groups are read (the two annotations disagree,
 * metadata or annotations of the wrong type, an annotation value that is not a string) was
 * admitted as "no annotation, unchanged", unlogged. It is refused and logged at warning level;
 * with onError: allow it is admitted with the reason as a warning, logged at info. */
static void test_review_refused_before_groups(void **state)
{
	static const struct {
		const char *pod, *why;
	} cases[] = {
		{ "{\"metadata\": {\"name\": \"p\", "
		  "\"annotations\": {\"rdmak.io/rdma-networks\": "
		  "\"shared-a\", "
		  "\"cni.spidernet.io/rdma-resource-inject\": "
		  "\"gpu-sriov\"}}, \"spec\": {\"containers\": [{\"name\":"
		  " \"a\"}]}}",
		  "annotations rdmak.io/rdma-networks (\"shared-a\") and "
		  "cni.spidernet.io/rdma-resource-inject (\"gpu-sriov\") "
		  "name different groups; keep one" },
		{ "{\"metadata\": \"rdmak.io/rdma-networks=shared-a\","
		  " \"spec\": {\"containers\": [{\"name\": \"a\"}]}}",
		  "metadata: expected an object, got a string" },
		{ "{\"metadata\": {\"name\": \"p\", "
		  "\"annotations\": [\"rdmak.io/rdma-networks\", "
		  "\"shared-a\"]}, "
		  "\"spec\": {\"containers\": [{\"name\": \"a\"}]}}",
		  "metadata.annotations: expected an object, got an array" },
		{ "{\"metadata\": {\"name\": \"p\", \"annotations\":"
		  " {\"rdmak.io/rdma-networks\": [\"shared-a\"]}}, "
		  "\"spec\": {\"containers\": [{\"name\": \"a\"}]}}",
		  "metadata.annotations[\"rdmak.io/rdma-netw"
		  "orks\"]: expected a string, got an array" },
	};
	static const char allow_cfg[] =
		"{\"onError\": \"allow\", \"groups\": {\"shared-a\": {\"resources\": "
		"{\"rdma/shared_a\": 1}}, \"gpu-sriov\": {\"resources\": {\"rdma/vf\": 1}}}}";
	struct webhook_config *allow = NULL;
	char err[256], msg[512];

	assert_int_equal(
		webhook_config_parse(allow_cfg, strlen(allow_cfg), &allow, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *pod = parse(cases[i].pod), *doc, *resp;
		char *body = review_of(pod, "admission.k8s.io/v1", "CREATE", "Pod");
		struct webhook_review_answer a;

		doc = answer(body, 200, &a);
		resp = json_object_get(doc, "response");
		if (!json_is_false(json_object_get(resp, "allowed")))
			fail_msg("case %zu admitted: %s (log: %s)", i, a.body, a.summary);
		snprintf(msg, sizeof(msg), "rdmak webhook: %s", cases[i].why);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(resp, "status"), "message")),
				    msg);
		assert_null(json_object_get(resp, "patch"));
		assert_int_equal(a.level, WEBHOOK_REVIEW_LOG_WARNING);
		snprintf(msg, sizeof(msg), ": refused: %s", cases[i].why);
		if (!strstr(a.summary, msg))
			fail_msg("case %zu: log line \"%s\" lacks \"%s\"", i, a.summary, msg);
		json_decref(doc);
		webhook_review_answer_clear(&a);

		/* onError: allow (the top level's: no group was read) admits it unchanged,
		 * saying why */
		assert_int_equal(webhook_review_handle(allow, body, strlen(body), &a), 0);
		doc = json_loads(a.body, 0, NULL);
		resp = json_object_get(doc, "response");
		assert_true(json_is_true(json_object_get(resp, "allowed")));
		assert_null(json_object_get(resp, "patch"));
		snprintf(msg, sizeof(msg), "rdmak webhook: %s; admitted unchanged (onError: allow)",
			 cases[i].why);
		assert_string_equal(
			json_string_value(json_array_get(json_object_get(resp, "warnings"), 0)),
			msg);
		assert_int_equal(a.level, WEBHOOK_REVIEW_LOG_INFO);
		snprintf(msg, sizeof(msg), ": admitted unchanged (onError allow): %s",
			 cases[i].why);
		if (!strstr(a.summary, msg))
			fail_msg("case %zu: log line \"%s\" lacks \"%s\"", i, a.summary, msg);
		json_decref(doc);
		webhook_review_answer_clear(&a);
		free(body);
		json_decref(pod);
	}
	webhook_config_free(allow);
}

static void test_review_bad(void **state)
{
	static const struct {
		const char *body, *msg;
	} bad[] = {
		{ "", "bad AdmissionReview: not JSON: line 1 "
		      "column 0: '[' or '{' expected near end of "
		      "file\n" },
		{ "[]", "bad AdmissionReview: expected an object, got an array\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\"}",
		  "bad AdmissionReview: request: missing\n" },
		{ "{\"apiVersion\": \"v1\", \"kind\": \"AdmissionReview\", \"request\": {}}",
		  "bad AdmissionReview: apiVersion: expected admission.k8s.io/v1, got \"v1\"\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"Pod\", \"request\": {}}",
		  "bad AdmissionReview: kind: expected AdmissionReview, got \"Pod\"\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": "
		  "\"AdmissionReview\", \"request\": {\"uid\": \"u\"}}",
		  "bad AdmissionReview: request.kind: missing\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": "
		  "\"AdmissionReview\", \"request\": {\"uid\": \"a b\", "
		  "\"kind\": {\"version\": \"v1\", \"kind\": \"Pod\"}, \"operation\": \"CREATE\"}}",
		  "bad AdmissionReview: request.uid: contains a control character or blank\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": "
		  "\"AdmissionReview\", \"request\": {\"uid\": \"u\", "
		  "\"kind\": {\"version\": \"v1\", \"kind\": \"Pod\"}, \"operation\": \"CREATE\"}}",
		  "bad AdmissionReview: request.object: missing for a CREATE\n" },
		{ "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": "
		  "\"AdmissionReview\", \"request\": {\"uid\": \"u\", "
		  "\"kind\": {\"version\": \"v1\", \"kind\": "
		  "\"Pod\"}, \"operation\": \"CREATE\", \"object\":"
		  " []}}",
		  "bad AdmissionReview: request.object: expected an object, got an array\n" },
	};
	struct webhook_review_answer a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		answer(bad[i].body, 400, &a);
		if (strcmp(a.body, bad[i].msg))
			fail_msg("%s\n  got:  %s  want: %s", bad[i].body, a.body, bad[i].msg);
		webhook_review_answer_clear(&a);
	}
}

static void test_base64(void **state)
{
	char *s;

	assert_string_equal(s = webhook_review_base64_encode("", 0), "");
	free(s);
	assert_string_equal(s = webhook_review_base64_encode("f", 1), "Zg==");
	free(s);
	assert_string_equal(s = webhook_review_base64_encode("fo", 2), "Zm8=");
	free(s);
	assert_string_equal(s = webhook_review_base64_encode("foobar", 6), "Zm9vYmFy");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed004_rdma_tools),
		cmocka_unit_test(test_seed002_shared),
		cmocka_unit_test(test_seed002_as_written),
		cmocka_unit_test(test_seed003_vllm),
		cmocka_unit_test(test_seed003_comma_form_same_network),
		cmocka_unit_test(test_gpu_container_and_never_lower),
		cmocka_unit_test(test_container_annotation),
		cmocka_unit_test(test_two_gpu_containers),
		cmocka_unit_test(test_networks_json_form_kept),
		cmocka_unit_test(test_networks_comma_form),
		cmocka_unit_test(test_networks_parse),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_on_error_allow),
		cmocka_unit_test(test_capabilities_and_shm),
		cmocka_unit_test(test_not_opted_in),
		cmocka_unit_test(test_quantity_count),
		cmocka_unit_test(test_patch_diff),
		cmocka_unit_test(test_review),
		cmocka_unit_test(test_review_refused_before_groups),
		cmocka_unit_test(test_review_bad),
		cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
