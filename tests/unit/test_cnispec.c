/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI protocol layer: environment and name validation, the envelope, version
 * negotiation, results in every version, the error object, delegation and the plugin main. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cnispec/cnispec.h"

/* ---- environment ---------------------------------------------------------------------- */

static void test_cmd_version(void **state)
{
	enum cnispec_cmd c;
	enum cnispec_version v;

	assert_int_equal(cnispec_cmd_parse("STATUS", &c), 0);
	assert_int_equal(c, CNISPEC_CMD_STATUS);
	assert_int_equal(cnispec_cmd_parse("add", &c), -EINVAL);
	assert_int_equal(cnispec_version_parse("0.3.1", &v), 0);
	assert_int_equal(v, CNISPEC_V0_3_1);
	assert_int_equal(cnispec_version_parse("0.2.0", &v), -ENOTSUP);
	assert_int_equal(cnispec_version_parse("1.1", &v), -ENOTSUP);
	assert_false(cnispec_cmd_allowed(CNISPEC_CMD_CHECK, CNISPEC_V0_3_1));
	assert_true(cnispec_cmd_allowed(CNISPEC_CMD_CHECK, CNISPEC_V0_4_0));
	assert_false(cnispec_cmd_allowed(CNISPEC_CMD_GC, CNISPEC_V1_0_0));
	assert_true(cnispec_cmd_allowed(CNISPEC_CMD_STATUS, CNISPEC_V1_1_0));
	assert_true(cnispec_cmd_allowed(CNISPEC_CMD_ADD, CNISPEC_V0_3_0));
}

static void test_names(void **state)
{
	char longid[300];
	const char *why;

	assert_true(cnispec_container_id_valid("0123abcdef", NULL));
	assert_true(cnispec_container_id_valid("a_b.c-d", NULL));
	assert_false(cnispec_container_id_valid("", &why));
	assert_false(cnispec_container_id_valid("-abc", &why));
	assert_false(cnispec_container_id_valid("abc/../x", &why));
	assert_false(cnispec_container_id_valid("abc def", &why));
	memset(longid, 'a', 239);
	longid[239] = '\0';
	assert_true(cnispec_container_id_valid(longid, NULL));
	longid[239] = 'a';
	longid[240] = '\0';
	assert_false(cnispec_container_id_valid(longid, &why));
	assert_string_equal(why, "is longer than 239 characters");

	assert_true(cnispec_ifname_valid("net1", NULL));
	assert_true(cnispec_ifname_valid("eth0.100", NULL));
	assert_true(cnispec_ifname_valid("123456789012345", NULL));
	assert_false(cnispec_ifname_valid("1234567890123456", &why));
	assert_false(cnispec_ifname_valid("", &why));
	assert_false(cnispec_ifname_valid(".", &why));
	assert_false(cnispec_ifname_valid("..", &why));
	assert_false(cnispec_ifname_valid("a/b", &why));
	assert_false(cnispec_ifname_valid("eth0:1", &why));
	assert_false(cnispec_ifname_valid("net 1", &why));
	assert_false(cnispec_ifname_valid("net\t1", &why));
	assert_false(cnispec_ifname_valid("net%d", &why));
	assert_false(cnispec_ifname_valid("net\x01", &why));

	assert_true(cnispec_network_name_valid("rdma-net.1_a", NULL));
	assert_false(cnispec_network_name_valid("default/rdma", &why));
	assert_false(cnispec_network_name_valid("_x", &why));
	assert_true(cnispec_plugin_type_valid("rdmak-ipam", NULL));
	assert_false(cnispec_plugin_type_valid("../bin/sh", &why));
	assert_false(cnispec_plugin_type_valid("..", &why));
}

static void test_env_add(void **state)
{
	char *envp[] = {
		"PATH=/usr/bin",
		"CNI_COMMAND=ADD",
		"CNI_CONTAINERID=deadbeef",
		"CNI_NETNS=/var/run/netns/blue",
		"CNI_IFNAME=net1",
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=ai;K8S_POD_NAME=vllm-0;"
		"K8S_POD_INFRA_CONTAINER_ID=deadbeef;K8S_POD_UID=6f1c-44aa;",
		"CNI_PATH=/opt/cni/bin:/usr/lib/cni",
		NULL,
	};
	struct cnispec_env env;
	struct cnispec_error err = { 0 };

	assert_int_equal(cnispec_env_parse(envp, &env, &err), 0);
	assert_int_equal(env.cmd, CNISPEC_CMD_ADD);
	assert_string_equal(env.container_id, "deadbeef");
	assert_string_equal(env.netns, "/var/run/netns/blue");
	assert_string_equal(env.ifname, "net1");
	assert_string_equal(env.path, "/opt/cni/bin:/usr/lib/cni");
	assert_int_equal(env.n_arg, 5);
	assert_string_equal(env.pod_namespace, "ai");
	assert_string_equal(env.pod_name, "vllm-0");
	assert_string_equal(env.pod_uid, "6f1c-44aa");
	assert_string_equal(env.pod_infra_container_id, "deadbeef");
	assert_string_equal(cnispec_env_arg(&env, "IgnoreUnknown"), "1");
	assert_null(cnispec_env_arg(&env, "nope"));
	cnispec_env_clear(&env);
}

/* Each invalid environment: code 4, msg naming exactly these variables, details containing frag. */
static void env_bad(char **envp, const char *names, const char *frag)
{
	struct cnispec_env env;
	struct cnispec_error err = { 0 };
	char want[300];

	assert_int_equal(cnispec_env_parse(envp, &env, &err), -EINVAL);
	assert_int_equal(err.code, CNISPEC_E_ENV);
	snprintf(want, sizeof(want), "invalid environment variables: %s", names);
	if (strcmp(err.msg, want))
		fail_msg("msg\n  got:  %s\n  want: %s", err.msg, want);
	if (!strstr(err.details, frag))
		fail_msg("details \"%s\" lack \"%s\"", err.details, frag);
}

static void test_env_bad(void **state)
{
	char *none[] = { "PATH=/usr/bin", NULL };
	char *unknown[] = { "CNI_COMMAND=ATTACH", NULL };
	char *add_missing[] = { "CNI_COMMAND=ADD", "CNI_CONTAINERID=abc", NULL };
	char *bad_id[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=../../etc", "CNI_IFNAME=net1",
			   NULL };
	char *bad_if[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=net/1", NULL };
	char *long_if[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc",
			    "CNI_IFNAME=abcdefghijklmnopq", NULL };
	char *rel_ns[] = { "CNI_COMMAND=CHECK", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			   "CNI_NETNS=netns/x", NULL };
	char *gc[] = { "CNI_COMMAND=GC", NULL };
	char *bad_args[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			     "CNI_ARGS=FOO", NULL };
	char *bad_pod[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			    "CNI_ARGS=K8S_POD_NAMESPACE=Kube_System;K8S_POD_NAME=a..b", NULL };

	env_bad(none, "CNI_COMMAND", "CNI_COMMAND: not set");
	env_bad(unknown, "CNI_COMMAND", "\"ATTACH\" is not ADD");
	env_bad(add_missing, "CNI_IFNAME, CNI_NETNS", "CNI_IFNAME: not set; CNI_NETNS: not set");
	env_bad(bad_id, "CNI_CONTAINERID", "\"../../etc\" must start with a letter or digit");
	env_bad(bad_if, "CNI_IFNAME", "contains '/'");
	env_bad(long_if, "CNI_IFNAME", "longer than 15 bytes");
	env_bad(rel_ns, "CNI_NETNS", "not an absolute path");
	env_bad(gc, "CNI_PATH", "CNI_PATH: not set");
	env_bad(bad_args, "CNI_ARGS", "is not KEY=VALUE");
	env_bad(bad_pod, "CNI_ARGS",
		"K8S_POD_NAMESPACE \"Kube_System\" is not a Kubernetes namespace name: a lowercase "
		"RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
		"must "
		"start and end with an alphanumeric character; CNI_ARGS: K8S_POD_NAME \"a..b\" "
		"is not "
		"a Kubernetes pod name: a lowercase RFC 1123 subdomain");
}

/* Kubernetes takes a pod name of up to 253 characters, dots or not (a subdomain's limit is on
 * the whole), and a namespace of up to 63: the CNI must not refuse a pod the API server made. */
static void test_env_pod_names(void **state)
{
	char name[256], ns[66], args[512];
	char *envp[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=net1", args, NULL };
	struct cnispec_env env;

	memset(name, 'p', 253);
	name[253] = '\0';
	memset(ns, 'n', 63);
	ns[63] = '\0';
	snprintf(args, sizeof(args), "CNI_ARGS=K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s", ns, name);
	assert_int_equal(cnispec_env_parse(envp, &env, NULL), 0);
	assert_string_equal(env.pod_name, name);
	cnispec_env_clear(&env);
	snprintf(args, sizeof(args), "CNI_ARGS=K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%.100s.%.100s", ns,
		 name, name);
	assert_int_equal(cnispec_env_parse(envp, &env, NULL), 0);
	cnispec_env_clear(&env);
	snprintf(args, sizeof(args), "CNI_ARGS=K8S_POD_NAME=%sp", name);
	env_bad(envp, "CNI_ARGS",
		"is not a Kubernetes pod name: must be no more than 253 characters");
	snprintf(args, sizeof(args), "CNI_ARGS=K8S_POD_NAMESPACE=%sn", ns);
	env_bad(envp, "CNI_ARGS",
		"is not a Kubernetes namespace name: must be no more than 63 characters");
	snprintf(args, sizeof(args), "CNI_ARGS=K8S_POD_NAMESPACE=kube.system");
	env_bad(envp, "CNI_ARGS", "is not a Kubernetes namespace name: must not contain dots");
}

static void test_env_optional(void **state)
{
	char *del[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=net1",
			"CNI_NETNS=", NULL };
	char *status[] = { "CNI_COMMAND=STATUS", NULL };
	char *version[] = { "CNI_COMMAND=VERSION", NULL };
	char *libcni_version[] = { "CNI_COMMAND=VERSION",
				   "CNI_CONTAINERID=",
				   "CNI_NETNS=dummy",
				   "CNI_IFNAME=dummy",
				   "CNI_PATH=dummy",
				   "CNI_ARGS=",
				   NULL };
	struct cnispec_env env;

	/* DEL without a netns (the pod's netns is gone) is valid */
	assert_int_equal(cnispec_env_parse(del, &env, NULL), 0);
	assert_null(env.netns);
	cnispec_env_clear(&env);
	assert_int_equal(cnispec_env_parse(status, &env, NULL), 0);
	assert_int_equal(env.cmd, CNISPEC_CMD_STATUS);
	cnispec_env_clear(&env);
	assert_int_equal(cnispec_env_parse(version, &env, NULL), 0);
	cnispec_env_clear(&env);
	/* libcni's GetVersionInfo: the attachment variables set to "dummy" */
	assert_int_equal(cnispec_env_parse(libcni_version, &env, NULL), 0);
	assert_int_equal(env.cmd, CNISPEC_CMD_VERSION);
	cnispec_env_clear(&env);
}

/* CNI_ARGS keys as libcni's LoadArgs takes them: unknown ones refused unless IgnoreUnknown is
 * 1 or true (any case), IP an address. */
static void test_env_args(void **state)
{
	char *unknown[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			    "CNI_ARGS=K8S_POD_NAME=a;FOO=1;ip=10.0.0.1", NULL };
	char *ignore_off[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			       "CNI_ARGS=IgnoreUnknown=false;FOO=1", NULL };
	char *ignore_bad[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			       "CNI_ARGS=IgnoreUnknown=yes", NULL };
	char *ip_bad[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			   "CNI_ARGS=IP=10.0.0.1/24", NULL };
	char *ignored[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
			    "CNI_ARGS=FOO=1;IgnoreUnknown=TRUE;IP=fd00::5", NULL };
	char *ip_empty[] = {
		"CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=n",
		"CNI_ARGS=IP=;K8S_POD_NAMESPACE=ai;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u",
		NULL
	};
	struct cnispec_env env;

	env_bad(unknown, "CNI_ARGS", "unknown keys FOO, ip (known: IP, ");
	env_bad(ignore_off, "CNI_ARGS", "unknown key FOO (");
	env_bad(ignore_bad, "CNI_ARGS", "IgnoreUnknown \"yes\" is not 1, true, 0 or false");
	env_bad(ip_bad, "CNI_ARGS", "IP \"10.0.0.1/24\" is not an IP address");
	assert_int_equal(cnispec_env_parse(ignored, &env, NULL), 0);
	assert_true(env.ignore_unknown);
	assert_string_equal(env.ip, "fd00::5");
	cnispec_env_clear(&env);
	assert_int_equal(cnispec_env_parse(ip_empty, &env, NULL), 0);
	assert_false(env.ignore_unknown);
	assert_null(env.ip);
	cnispec_env_clear(&env);
}

/* ---- addresses ------------------------------------------------------------------------ */

static void test_addresses(void **state)
{
	struct cnispec_prefix p;
	struct cnispec_addr a;
	char buf[CNISPEC_PREFIX_STRLEN];

	assert_int_equal(cnispec_prefix_parse("10.1.0.5/16", &p), 0);
	assert_int_equal(p.addr.family, AF_INET);
	assert_int_equal(p.len, 16);
	assert_string_equal(cnispec_prefix_str(&p, buf), "10.1.0.5/16");
	assert_int_equal(cnispec_prefix_parse("fd00::1:2/64", &p), 0);
	assert_int_equal(p.addr.family, AF_INET6);
	assert_string_equal(cnispec_prefix_str(&p, buf), "fd00::1:2/64");
	assert_int_equal(cnispec_prefix_parse("10.1.0.5/33", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("10.1.0.5/024", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("10.1.0.5/-1", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("10.1.0.5", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("10.1.0/8", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("::/129", &p), -EINVAL);
	assert_int_equal(cnispec_prefix_parse("::/128", &p), 0);
	assert_int_equal(cnispec_addr_parse("010.1.0.5", &a), -EINVAL);
	assert_int_equal(cnispec_addr_parse("256.1.0.5", &a), -EINVAL);
	assert_int_equal(cnispec_addr_parse("::ffff:10.1.0.5", &a), 0);
	assert_int_equal(a.family, AF_INET6);
}

/* ---- results -------------------------------------------------------------------------- */

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

	json_decref(o);
	return s;
}

static struct cnispec_result *sample_result(void)
{
	struct cnispec_result *r = cnispec_result_new();
	struct cnispec_interface i = { .name = "net1",
				       .mac = "02:00:00:00:00:01",
				       .mtu = 4092,
				       .sandbox = "/var/run/netns/blue",
				       .pci_id = "0000:17:00.2" };
	struct cnispec_ip ip = { .interface = 0, .has_gateway = true };
	struct cnispec_route rt = { .set = CNISPEC_ROUTE_TABLE | CNISPEC_ROUTE_MTU,
				    .table = 107,
				    .mtu = 4000 };
	char *ns[] = { "10.56.0.1", NULL };
	struct cnispec_dns dns = { .nameservers = ns, .domain = "cluster.local" };
	size_t idx;

	assert_int_equal(cnispec_result_add_interface(r, &i, &idx), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(cnispec_prefix_parse("10.56.0.5/27", &ip.address), 0);
	assert_int_equal(cnispec_addr_parse("10.56.0.1", &ip.gateway), 0);
	assert_int_equal(cnispec_result_add_ip(r, &ip), 0);
	assert_int_equal(cnispec_prefix_parse("0.0.0.0/0", &rt.dst), 0);
	rt.has_gw = true;
	rt.gw = ip.gateway;
	assert_int_equal(cnispec_result_add_route(r, &rt), 0);
	assert_int_equal(cnispec_result_set_dns(r, &dns), 0);
	return r;
}

static void test_result_versions(void **state)
{
	struct cnispec_result *r = sample_result();
	char *s;

	s = dump(cnispec_result_to_json(r, CNISPEC_V1_1_0));
	assert_string_equal(
		s, "{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"net1\",\"mac\":\"02:00:"
		   "00:00:00:01\","
		   "\"mtu\":4092,\"sandbox\":\"/var/run/netns/blue\",\"pciID\":\"0000:17:00.2\"}],"
		   "\"ips\":[{\"interface\":0,\"address\":\"10.56.0.5/27\",\"gateway\":"
		   "\"10.56.0.1\"}],"
		   "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.56.0.1\",\"mtu\":4000,\"table\":"
		   "107}],"
		   "\"dns\":{\"nameservers\":[\"10.56.0.1\"],\"domain\":\"cluster.local\"}}");
	free(s);
	/* 1.0.0: no interface mtu/pciID, no route attributes */
	s = dump(cnispec_result_to_json(r, CNISPEC_V1_0_0));
	assert_string_equal(
		s, "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"net1\",\"mac\":\"02:00:"
		   "00:00:00:01\","
		   "\"sandbox\":\"/var/run/netns/blue\"}],"
		   "\"ips\":[{\"interface\":0,\"address\":\"10.56.0.5/27\",\"gateway\":"
		   "\"10.56.0.1\"}],"
		   "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.56.0.1\"}],"
		   "\"dns\":{\"nameservers\":[\"10.56.0.1\"],\"domain\":\"cluster.local\"}}");
	free(s);
	/* 0.4.0 and 0.3.x: ips[].version */
	s = dump(cnispec_result_to_json(r, CNISPEC_V0_4_0));
	assert_non_null(strstr(
		s, "\"ips\":[{\"version\":\"4\",\"interface\":0,\"address\":\"10.56.0.5/27\""));
	assert_non_null(strstr(s, "\"cniVersion\":\"0.4.0\""));
	free(s);
	s = dump(cnispec_result_to_json(r, CNISPEC_V0_3_0));
	assert_non_null(strstr(s, "\"version\":\"4\""));
	free(s);
	cnispec_result_free(r);
}

static void test_result_ipam_shape(void **state)
{
	/* an IPAM result: no interfaces, no ips[].interface, dns always an object */
	struct cnispec_result *r = cnispec_result_new();
	struct cnispec_ip ip = { .interface = -1 };
	char *s;

	assert_int_equal(cnispec_prefix_parse("fd00::5/64", &ip.address), 0);
	assert_int_equal(cnispec_result_add_ip(r, &ip), 0);
	s = dump(cnispec_result_to_json(r, CNISPEC_V0_3_1));
	assert_string_equal(
		s, "{\"cniVersion\":\"0.3.1\",\"ips\":[{\"version\":\"6\",\"address\":\"fd00::"
		   "5/64\"}],\"dns\":{}}");
	free(s);
	cnispec_result_free(r);
}

static void test_result_roundtrip(void **state)
{
	struct cnispec_result *r = sample_result(), *back = NULL, *copy = NULL;
	json_t *o = cnispec_result_to_json(r, CNISPEC_V1_1_0);
	char why[256];
	char *a, *b;

	assert_int_equal(
		cnispec_result_from_json(o, CNISPEC_V1_1_0, "prevResult", &back, why, sizeof(why)),
		0);
	assert_int_equal(cnispec_result_dup(back, &copy), 0);
	a = dump(o);
	b = dump(cnispec_result_to_json(copy, CNISPEC_V1_1_0));
	assert_string_equal(a, b);
	free(a);
	free(b);
	cnispec_result_free(r);
	cnispec_result_free(back);
	cnispec_result_free(copy);
}

static void result_bad(const char *text, const char *want)
{
	json_t *o = json_loads(text, 0, NULL);
	struct cnispec_result *r = NULL;
	char why[256];

	assert_non_null(o);
	assert_int_equal(
		cnispec_result_from_json(o, CNISPEC_V0_4_0, "prevResult", &r, why, sizeof(why)),
		-EINVAL);
	assert_null(r);
	if (strcmp(why, want))
		fail_msg("why\n  got:  %s\n  want: %s", why, want);
	json_decref(o);
}

static void test_result_bad(void **state)
{
	result_bad("[]", "prevResult: expected an object, got an array");
	result_bad("{\"ips\":[{\"address\":\"10.0.0.1\"}]}",
		   "prevResult.ips[0].address: \"10.0.0.1\" is not an address in CIDR notation");
	result_bad("{\"ips\":[{\"version\":\"6\",\"address\":\"10.0.0.1/8\"}]}",
		   "prevResult.ips[0].version: does not match the address (expected \"4\")");
	result_bad("{\"ips\":[{\"address\":\"10.0.0.1/8\",\"interface\":0}]}",
		   "prevResult.ips[0].interface: is not the index of an entry of \"interfaces\"");
	result_bad("{\"ips\":[{\"address\":\"10.0.0.1/8\",\"gateway\":\"fd00::1\"}]}",
		   "prevResult.ips[0].gateway: is not of the address's family");
	result_bad("{\"routes\":[{\"dst\":\"0.0.0.0/0\",\"table\":-1}]}",
		   "prevResult.routes[0].table: -1 is out of range (0 to 4294967295)");
	result_bad(
		"{\"routes\":[{\"dst\":\"0.0.0.0/0\",\"mtu\":\"9000\"}]}",
		"prevResult.routes[0].mtu: expected an integer from 0 to 4294967295, got a string");
	result_bad("{\"routes\":[{\"dst\":\"10.0.0.0/8\",\"gw\":\"fd00::1\"}]}",
		   "prevResult.routes[0].gw: is not of the destination's family");
	result_bad("{\"interfaces\":[{\"name\":\"eth0\"}],\"ips\":[{\"address\":\"10.0.0.1/8\","
		   "\"interface\":1}]}",
		   "prevResult.ips[0].interface: is not the index of an entry of \"interfaces\"");
	result_bad("{\"ips\":{}}", "prevResult.ips: expected an array, got an object");
	result_bad("{\"interfaces\":[{\"mac\":\"x\"}]}",
		   "prevResult.interfaces[0]: has no \"name\"");
	result_bad("{\"dns\":{\"nameservers\":[\"dns.google\"]}}",
		   "prevResult.dns.nameservers[0]: \"dns.google\" is not an IP address");
	result_bad("{\"dns\":{\"search\":[\"a\",1]}}",
		   "prevResult.dns.search[1]: expected a string, got an integer");
}

static void test_route_dst_masked(void **state)
{
	json_t *o = json_loads("{\"routes\":[{\"dst\":\"10.1.2.3/8\"}]}", 0, NULL);
	struct cnispec_result *r = NULL;
	char why[256], buf[CNISPEC_PREFIX_STRLEN];

	assert_int_equal(cnispec_result_from_json(o, CNISPEC_V1_1_0, "x", &r, why, sizeof(why)), 0);
	assert_string_equal(cnispec_prefix_str(&r->routes[0].dst, buf), "10.0.0.0/8");
	cnispec_result_free(r);
	json_decref(o);
}

/* null reads as absent, unknown keys are ignored (results come from newer versions), and a
 * route attribute that is given is marked set */
static void test_result_nulls_and_unknown(void **state)
{
	json_t *o = json_loads(
		"{\"interfaces\":[{\"name\":\"eth0\",\"mac\":null,\"future\":1}],"
		"\"ips\":[{\"address\":\"10.0.0.1/8\",\"gateway\":null,\"interface\":0,"
		"\"version\":\"4\"}],"
		"\"routes\":[{\"dst\":\"10.0.0.0/8\",\"table\":7,\"mtu\":null}],\"dns\":null,"
		"\"x\":{}}",
		0, NULL);
	struct cnispec_result *r = NULL;
	char why[256];

	assert_int_equal(cnispec_result_from_json(o, CNISPEC_V1_1_0, "x", &r, why, sizeof(why)), 0);
	assert_int_equal(r->n_interfaces, 1);
	assert_null(r->interfaces[0].mac);
	assert_int_equal(r->ips[0].interface, 0);
	assert_false(r->ips[0].has_gateway);
	assert_int_equal(r->routes[0].set, CNISPEC_ROUTE_TABLE);
	assert_int_equal(r->routes[0].table, 7);
	assert_null(r->dns.nameservers);
	cnispec_result_free(r);
	json_decref(o);
}

/* ---- the request ---------------------------------------------------------------------- */

static const char req_add[] =
	"{\"cniVersion\":\"1.1.0\",\"name\":\"rdma-net\",\"type\":\"rdmak-cni\",\"link\":"
	"\"macvlan\","
	"\"master\":\"ens1f0\",\"ipam\":{\"type\":\"rdmak-ipam\",\"range\":\"10.56.0.0/27\"},"
	"\"dns\":{\"nameservers\":[\"10.56.0.1\"]},\"runtimeConfig\":{\"deviceID\":\"0000:17:"
	"00.2\"},"
	"\"args\":{\"cni\":{\"x\":1}},\"cni.dev/future\":true,\"disableCheck\":true,"
	"\"cniVersions\":[\"1.1.0\"],"
	"\"prevResult\":{\"interfaces\":[{\"name\":\"eth0\"}],\"ips\":[{\"address\":"
	"\"10.0.0.2/24\",\"interface\":0}]}}";

static void test_conf_envelope(void **state)
{
	struct cnispec_conf *c = NULL;
	struct cnispec_error err = { 0 };
	char *keys;

	assert_int_equal(cnispec_conf_parse(req_add, strlen(req_add), CNISPEC_CMD_ADD, &c, &err),
			 0);
	assert_int_equal(c->version, CNISPEC_V1_1_0);
	assert_string_equal(c->name, "rdma-net");
	assert_string_equal(c->type, "rdmak-cni");
	assert_string_equal(c->ipam_type, "rdmak-ipam");
	assert_non_null(c->runtime_config);
	assert_non_null(c->args);
	assert_non_null(c->dns);
	assert_non_null(c->prev_result);
	assert_int_equal(c->prev_result->n_ips, 1);
	assert_int_equal(c->prev_result->ips[0].interface, 0);
	assert_false(c->has_valid_attachments);
	/* only the plugin's own keys, nothing of the protocol's */
	keys = json_dumps(c->plugin, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(keys, "{\"link\":\"macvlan\",\"master\":\"ens1f0\"}");
	free(keys);
	cnispec_conf_free(c);
}

static void conf_bad(const char *text, enum cnispec_cmd cmd, unsigned code, const char *details)
{
	struct cnispec_conf *c = NULL;
	struct cnispec_error err = { 0 };

	assert_true(cnispec_conf_parse(text, strlen(text), cmd, &c, &err) < 0);
	assert_null(c);
	if (err.code != code || strcmp(err.details, details))
		fail_msg("for %s\n  got:  %u %s\n  want: %u %s", text, err.code, err.details, code,
			 details);
}

static void test_conf_bad(void **state)
{
	conf_bad("", CNISPEC_CMD_ADD, 6, "line 1 column 0: '[' or '{' expected near end of file");
	conf_bad("[1]", CNISPEC_CMD_ADD, 6, "expected a JSON object");
	conf_bad("{\"name\":\"n\",\"type\":\"t\"}", CNISPEC_CMD_ADD, 1,
		 "cniVersion: missing, which libcni reads as 0.1.0, older than this plugin "
		 "supports (1.1.0, 1.0.0, "
		 "0.4.0, 0.3.1 and 0.3.0): add \"cniVersion\": \"1.0.0\" (or the newest your "
		 "runtime takes)");
	conf_bad("{\"cniVersion\":\"0.2.0\",\"name\":\"n\",\"type\":\"t\"}", CNISPEC_CMD_ADD, 1,
		 "cniVersion: \"0.2.0\" is not supported; this plugin supports 1.1.0, 1.0.0, "
		 "0.4.0, 0.3.1 and 0.3.0");
	conf_bad("{\"cniVersion\":1,\"name\":\"n\",\"type\":\"t\"}", CNISPEC_CMD_ADD, 7,
		 "cniVersion: expected a string, got an integer");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"type\":\"t\"}", CNISPEC_CMD_ADD, 7, "name: missing");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"a/b\",\"type\":\"t\"}", CNISPEC_CMD_ADD, 7,
		 "name: \"a/b\" may hold only letters, digits, '_', '.' and '-'");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"../t\"}", CNISPEC_CMD_ADD, 7,
		 "type: \"../t\" must be a file name: no '/', '\\', white space or control "
		 "characters");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"ipam\":[]}",
		 CNISPEC_CMD_ADD, 7, "ipam: expected an object, got an array");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"ipam\":{\"type\":\"a "
		 "b\"}}",
		 CNISPEC_CMD_ADD, 7,
		 "ipam.type: \"a b\" must be a file name: no '/', '\\', white space or control "
		 "characters");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"name\":\"m\"}",
		 CNISPEC_CMD_ADD, 6, "line 1 column 50: duplicate object key near '\"name\"'");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"prevResult\":"
		 "{\"ips\":[{}]}}",
		 CNISPEC_CMD_DEL, 7, "prevResult.ips[0].address: missing");
	conf_bad("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
		 "\"cni.dev/valid-attachments\":"
		 "[{\"containerID\":\"a\",\"ifname\":\"x/y\"}]}",
		 CNISPEC_CMD_GC, 7, "cni.dev/valid-attachments[0].ifname: \"x/y\" contains '/'");
	conf_bad("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
		 "\"cni.dev/valid-attachments\":[{\"containerID\":1}]}",
		 CNISPEC_CMD_GC, 7,
		 "cni.dev/valid-attachments[0].containerID: expected a string, got an integer");
	conf_bad("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
		 "\"cni.dev/valid-attachments\":[{\"containerID\":\"a\"}]}",
		 CNISPEC_CMD_GC, 7, "cni.dev/valid-attachments[0].ifname: missing");
	conf_bad("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
		 "\"cni.dev/valid-attachments\":[\"a\"]}",
		 CNISPEC_CMD_GC, 7,
		 "cni.dev/valid-attachments[0]: expected an object, got a string");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"runtimeConfig\":\"x\"}",
		 CNISPEC_CMD_ADD, 7, "runtimeConfig: expected an object, got a string");
	conf_bad("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", CNISPEC_CMD_ADD, 7, "type: missing");
}

static void test_conf_gc_and_version(void **state)
{
	static const char gc[] =
		"{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
		"\"cni.dev/valid-attachments\":"
		"[{\"containerID\":\"a\",\"ifname\":\"net1\"},{\"containerID\":\"b\",\"ifname\":"
		"\"net2\"}]}";
	struct cnispec_conf *c = NULL;

	assert_int_equal(cnispec_conf_parse(gc, strlen(gc), CNISPEC_CMD_GC, &c, NULL), 0);
	assert_true(c->has_valid_attachments);
	assert_int_equal(c->n_valid_attachments, 2);
	assert_true(cnispec_conf_attachment_valid(c, "b", "net2"));
	assert_false(cnispec_conf_attachment_valid(c, "b", "net1"));
	cnispec_conf_free(c);
	/* VERSION answers any cniVersion and needs no name */
	assert_int_equal(
		cnispec_conf_parse("{\"cniVersion\":\"0.1.0\"}", 22, CNISPEC_CMD_VERSION, &c, NULL),
		0);
	assert_string_equal(c->cni_version, "0.1.0");
	cnispec_conf_free(c);
}

static void test_unsupported(void **state)
{
	struct cnispec_error err = { 0 };
	json_t *v = json_string("kubernetes");

	assert_int_equal(
		cnispec_fail_unsupported(&err, "ipam.datastore", v, "use \"store\": \"etcd\""),
		-EINVAL);
	assert_int_equal(err.code, 2);
	assert_string_equal(err.msg, "unsupported field ipam.datastore");
	assert_string_equal(
		err.details,
		"ipam.datastore: unsupported key (value: \"kubernetes\"); use \"store\": \"etcd\"");
	json_decref(v);
}

/* ---- printing ------------------------------------------------------------------------- */

static char *capture(int (*fn)(FILE *f, const void *arg), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, arg), 0);
	fclose(f);
	return buf;
}

static int print_err(FILE *f, const void *arg)
{
	return cnispec_error_print(f, "0.4.0", arg);
}

static int print_version(FILE *f, const void *arg)
{
	return cnispec_version_print(f, arg);
}

static void test_print(void **state)
{
	struct cnispec_error err = { 0 };
	char *s;

	cnispec_fail(&err, -EINVAL, 7, "invalid network configuration",
		     "ipam.range: \"%s\" is not a CIDR", "10.0.0.0");
	s = capture(print_err, &err);
	assert_string_equal(
		s, "{\"cniVersion\":\"0.4.0\",\"code\":7,\"msg\":\"invalid network configuration\","
		   "\"details\":\"ipam.range: \\\"10.0.0.0\\\" is not a CIDR\"}\n");
	free(s);
	s = capture(print_version, "1.0.0");
	assert_string_equal(s, "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":"
			       "[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n");
	free(s);
}

/* ---- delegation ----------------------------------------------------------------------- */

static char tmpdir[64];

static void write_script(const char *name, const char *body)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static int delegate_setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cnispec-test.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	/* echoes what it saw: the command, an env var and its stdin, so the test can check them */
	write_script("ok-ipam",
		     "cat >\"$(dirname \"$0\")/stdin.$CNI_COMMAND\"\n"
		     "echo \"$CNI_COMMAND $CNI_IFNAME\" >\"$(dirname \"$0\")/env.$CNI_COMMAND\"\n"
		     "[ \"$CNI_COMMAND\" = ADD ] && echo "
		     "'{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.9.0.7/24\","
		     "\"gateway\":\"10.9.0.1\"}],\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":"
		     "{}}'\nexit 0\n");
	write_script(
		"full-ipam",
		"cat >/dev/null\necho '{\"cniVersion\":\"1.0.0\",\"code\":110,\"msg\":\"no free "
		"address\","
		"\"details\":\"10.9.0.0/30: all 1 addresses in use\"}'\nexit 1\n");
	write_script("mute-ipam", "cat >/dev/null\necho oops >&2\nexit 3\n");
	write_script("junk-ipam", "cat >/dev/null\necho '{\"ips\": 5}'\n");
	write_script("noexec", "exit 0\n");
	/* 5 MiB on stdout, more than a result may be: read and dropped past 4 MiB, so that it
	 * never blocks on a full pipe; exits 1 on CHECK */
	write_script("loud-ipam", "cat >/dev/null\nyes x | head -c 5242880\n"
				  "[ \"$CNI_COMMAND\" = CHECK ] && exit 1\nexit 0\n");
	{
		char p[128];

		snprintf(p, sizeof(p), "%s/noexec", tmpdir);
		chmod(p, 0644);
	}
	return 0;
}

static int delegate_teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd);
}

static void test_find_plugin(void **state)
{
	char path[256], *found = NULL;

	snprintf(path, sizeof(path), "/nonexistent::relative:%s", tmpdir);
	assert_int_equal(cnispec_find_plugin(path, "ok-ipam", &found), 1);
	assert_non_null(strstr(found, "/ok-ipam"));
	free(found);
	assert_int_equal(cnispec_find_plugin(path, "noexec", &found), 0);
	assert_int_equal(cnispec_find_plugin(path, "absent", &found), 0);
	assert_int_equal(cnispec_find_plugin(path, "../ok-ipam", &found), -EINVAL);
}

static void test_delegate(void **state)
{
	char *envp[] = { "CNI_COMMAND=ADD", "CNI_IFNAME=net7", "PATH=/usr/bin:/bin", NULL };
	static const char conf[] =
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"x\",\"ipam\":{\"type\":"
		"\"ok-ipam\"}}";
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };
	char path[128], buf[256];
	FILE *f;

	assert_int_equal(cnispec_delegate("ok-ipam", CNISPEC_CMD_ADD, tmpdir, envp, conf,
					  strlen(conf), CNISPEC_V1_0_0, &r, &err),
			 0);
	assert_non_null(r);
	assert_int_equal(r->n_ips, 1);
	assert_true(r->ips[0].has_gateway);
	assert_int_equal(r->n_routes, 1);
	cnispec_result_free(r);
	/* the stdin it got is ours, byte for byte */
	snprintf(path, sizeof(path), "%s/stdin.ADD", tmpdir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, conf);
	/* DEL on rollback: CNI_COMMAND replaced, the rest passed through */
	assert_int_equal(cnispec_delegate("ok-ipam", CNISPEC_CMD_DEL, tmpdir, envp, conf,
					  strlen(conf), CNISPEC_V1_0_0, NULL, &err),
			 0);
	snprintf(path, sizeof(path), "%s/env.DEL", tmpdir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "DEL net7\n");
}

static void test_delegate_errors(void **state)
{
	char *envp[] = { "CNI_COMMAND=ADD", NULL };
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	/* its error object passes through unchanged */
	assert_int_equal(cnispec_delegate("full-ipam", CNISPEC_CMD_ADD, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, &r, &err),
			 -EPROTO);
	assert_int_equal(err.code, 110);
	assert_string_equal(err.msg, "no free address");
	assert_string_equal(err.details, "10.9.0.0/30: all 1 addresses in use");
	/* no error object: its exit status is named */
	assert_int_equal(cnispec_delegate("mute-ipam", CNISPEC_CMD_DEL, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, NULL, &err),
			 -EPROTO);
	assert_int_equal(err.code, 999);
	assert_non_null(
		strstr(err.details, "mute-ipam exited with status 3 and printed no error object"));
	/* more output than a result may be: refused for ADD, read to its end either way */
	assert_int_equal(cnispec_delegate("loud-ipam", CNISPEC_CMD_ADD, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, &r, &err),
			 -EBADMSG);
	assert_string_equal(err.details, "loud-ipam printed more than 4194304 bytes");
	assert_int_equal(cnispec_delegate("loud-ipam", CNISPEC_CMD_DEL, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, NULL, &err),
			 0);
	assert_int_equal(cnispec_delegate("loud-ipam", CNISPEC_CMD_CHECK, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, NULL, &err),
			 -EPROTO);
	assert_string_equal(err.details,
			    "loud-ipam exited with status 1 and printed more than 4194304 bytes");
	/* a result that is not one */
	assert_int_equal(cnispec_delegate("junk-ipam", CNISPEC_CMD_ADD, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, &r, &err),
			 -EBADMSG);
	assert_int_equal(err.code, 6);
	assert_string_equal(err.details,
			    "junk-ipam: result.ips: expected an array, got an integer");
	/* not on CNI_PATH */
	assert_int_equal(cnispec_delegate("host-local", CNISPEC_CMD_ADD, tmpdir, envp, "{}", 2,
					  CNISPEC_V1_0_0, &r, &err),
			 -ENOENT);
	assert_int_equal(err.code, 7);
	assert_non_null(strstr(err.details, "ipam.type: no executable \"host-local\" in CNI_PATH"));
	assert_int_equal(cnispec_delegate("x", CNISPEC_CMD_ADD, NULL, envp, "{}", 2, CNISPEC_V1_0_0,
					  &r, &err),
			 -EINVAL);
	assert_int_equal(err.code, 4);
	assert_null(r);
}

/* ---- the plugin main ------------------------------------------------------------------ */

/* The test plugin's context: made by setup for one request, checked by every operation,
 * freed by done. */
struct test_call {
	const struct cnispec_request *req; /* the request setup made it for */
	int ops;			   /* operations run on it: one per request */
};

static int calls, setups, dones;

static int op_setup(const struct cnispec_request *req, void **ret_ctx, struct cnispec_error *err)
{
	const json_t *bad = json_object_get(req->conf->plugin, "bogus");
	struct test_call *t;

	if (bad)
		return cnispec_fail_unsupported(err, "bogus", bad, NULL);
	t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->req = req;
	setups++;
	*ret_ctx = t;
	return 0;
}

static void op_done(void *ctx)
{
	struct test_call *t = ctx;

	assert_non_null(t);
	assert_int_equal(t->ops, 1);
	dones++;
	free(t);
}

/* The context setup made for this very request. */
static struct test_call *call_of(void *ctx, const struct cnispec_request *req)
{
	struct test_call *t = ctx;

	assert_non_null(t);
	assert_ptr_equal(t->req, req);
	t->ops++;
	calls++;
	return t;
}

static int op_add(void *ctx, const struct cnispec_request *req, struct cnispec_result **ret,
		  struct cnispec_error *err)
{
	struct cnispec_result *r = cnispec_result_new();
	struct cnispec_ip ip = { .interface = -1 };

	call_of(ctx, req);
	cnispec_prefix_parse("10.0.0.9/24", &ip.address);
	cnispec_result_add_ip(r, &ip);
	*ret = r;
	return 0;
}

static int op_del(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	call_of(ctx, req);
	return cnispec_fail(err, -EIO, CNISPEC_E_TRY_AGAIN, "store unreachable",
			    "etcd: no endpoint answered");
}

static int op_other(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	call_of(ctx, req);
	return 0;
}

static int op_errno(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	call_of(ctx, req);
	return -ENOSPC;
}

static const struct cnispec_plugin_ops test_ops = {
	.name = "test-plugin",
	.setup = op_setup,
	.add = op_add,
	.del = op_del,
	.check = op_other,
	.gc = op_other,
	.status = op_errno,
	.done = op_done,
};

/* A plugin whose ADD runs test_ops in its own process, as rdmak-cni runs rdmak-ipam: the inner
 * plugin's context comes and goes while the outer one's stays its own. */
static int outer_add(void *ctx, const struct cnispec_request *req, struct cnispec_result **ret,
		     struct cnispec_error *err)
{
	struct test_call *t = call_of(ctx, req);
	int before = setups, r;

	r = cnispec_delegate_in_process(&test_ops, req, CNISPEC_CMD_ADD, ret, err);
	assert_int_equal(setups, before + 1);
	assert_int_equal(dones, before); /* the inner one's; ours is still open */
	assert_ptr_equal(t->req, req);
	assert_int_equal(t->ops, 1);
	return r;
}

static const struct cnispec_plugin_ops outer_ops = {
	.name = "outer-plugin",
	.setup = op_setup,
	.add = outer_add,
	.del = op_del,
	.check = op_other,
	.gc = op_other,
	.status = op_errno,
	.done = op_done,
};

/* Run the main of ops with cmd and stdin text; returns its exit code, *out its stdout. */
static int run_ops(const struct cnispec_plugin_ops *ops, const char *cmd, const char *in,
		   char **out)
{
	char cmdvar[64];
	char *envp[] = { cmdvar,
			 "CNI_CONTAINERID=c1",
			 "CNI_IFNAME=net1",
			 "CNI_NETNS=/proc/self/ns/net",
			 "CNI_PATH=/opt/cni/bin",
			 NULL };
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int p[2], rc;

	snprintf(cmdvar, sizeof(cmdvar), "CNI_COMMAND=%s", cmd);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], in, strlen(in)), (ssize_t)strlen(in));
	close(p[1]);
	rc = cnispec_plugin_main(ops, envp, p[0], f);
	close(p[0]);
	fclose(f);
	return rc;
}

static int run_main(const char *cmd, const char *in, char **out)
{
	return run_ops(&test_ops, cmd, in, out);
}

/* stdin past 4 MiB: code 5 naming the limit, the operation never runs */
static void test_plugin_main_stdin_max(void **state)
{
	char *envp[] = { "CNI_COMMAND=ADD",	  "CNI_CONTAINERID=c1",
			 "CNI_IFNAME=net1",	  "CNI_NETNS=/proc/self/ns/net",
			 "CNI_PATH=/opt/cni/bin", NULL };
	FILE *in = tmpfile();
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(in);
	for (int i = 0; i < (4 << 20) + 1; i++)
		fputc(' ', in);
	fflush(in);
	rewind(in);
	calls = 0;
	assert_int_equal(cnispec_plugin_main(&test_ops, envp, fileno(in), f), 1);
	fclose(f);
	fclose(in);
	assert_non_null(strstr(out, "\"code\":5,"));
	assert_non_null(strstr(out, "stdin holds more than 4194304 bytes"));
	assert_int_equal(calls, 0);
	free(out);
}

static void test_plugin_main(void **state)
{
	static const char c040[] =
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"type\":\"test-plugin\"}";
	static const char c031[] =
		"{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"test-plugin\"}";
	static const char c110[] =
		"{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"test-plugin\"}";
	static const char cbad[] =
		"{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"test-plugin\",\"bogus\":[1]}";
	char *out = NULL;

	calls = setups = dones = 0;
	assert_int_equal(run_main("ADD", c040, &out), 0);
	assert_string_equal(
		out,
		"{\n  \"cniVersion\": \"0.4.0\",\n  \"ips\": [\n    {\n      \"version\": \"4\",\n"
		"      \"address\": \"10.0.0.9/24\"\n    }\n  ],\n  \"dns\": {}\n}\n");
	free(out);
	assert_int_equal(run_main("DEL", c040, &out), 1);
	assert_string_equal(out,
			    "{\"cniVersion\":\"0.4.0\",\"code\":11,\"msg\":\"store unreachable\","
			    "\"details\":\"etcd: no endpoint answered\"}\n");
	free(out);
	assert_int_equal(run_main("CHECK", c040, &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(calls, 3);
	/* CHECK before 0.4.0, GC and STATUS before 1.1.0: code 1, the operation never runs */
	assert_int_equal(run_main("CHECK", c031, &out), 1);
	assert_non_null(strstr(out, "\"code\":1,"));
	assert_non_null(
		strstr(out, "CHECK needs cniVersion 0.4.0 or later; the configuration says 0.3.1"));
	free(out);
	assert_int_equal(run_main("GC", c040, &out), 1);
	assert_non_null(strstr(out, "GC needs cniVersion 1.1.0 or later"));
	free(out);
	assert_int_equal(calls, 3);
	/* an operation that returns a bare errno: code 999 with the reason */
	assert_int_equal(run_main("STATUS", c110, &out), 1);
	assert_non_null(strstr(out, "\"code\":999,"));
	assert_non_null(strstr(out, "No space left on device"));
	free(out);
	/* setup refuses the plugin's unknown key before the operation */
	assert_int_equal(run_main("ADD", cbad, &out), 1);
	assert_non_null(strstr(out, "\"code\":2,\"msg\":\"unsupported field bogus\""));
	free(out);
	assert_int_equal(calls, 4);
	/* one context per operation, each released whatever the operation returned; none for a
	 * refused version or a failed setup */
	assert_int_equal(setups, 4);
	assert_int_equal(dones, 4);
	/* VERSION, with and without stdin */
	assert_int_equal(run_main("VERSION", "{\"cniVersion\":\"0.3.0\"}", &out), 0);
	assert_non_null(strstr(out, "{\"cniVersion\":\"0.3.0\",\"supportedVersions\":"));
	free(out);
	assert_int_equal(run_main("VERSION", "", &out), 0);
	assert_non_null(strstr(out, "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":"));
	free(out);
	/* bad JSON: code 6, latest version in the error */
	assert_int_equal(run_main("ADD", "{", &out), 1);
	assert_non_null(strstr(out, "{\"cniVersion\":\"1.1.0\",\"code\":6,"));
	free(out);
	/* a bad environment: code 4 naming the variable */
	assert_int_equal(run_main("DESTROY", c040, &out), 1);
	assert_non_null(
		strstr(out, "\"code\":4,\"msg\":\"invalid environment variables: CNI_COMMAND\""));
	free(out);
}

/* Two plugins in one process, the inner one run from the outer one's operation: each gets its
 * own context, the inner one's released before the outer one goes on. */
static void test_plugin_context_nested(void **state)
{
	static const char c100[] =
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"outer-plugin\"}";
	char *out = NULL;

	calls = setups = dones = 0;
	assert_int_equal(run_ops(&outer_ops, "ADD", c100, &out), 0);
	assert_non_null(strstr(out, "\"address\": \"10.0.0.9/24\""));
	free(out);
	assert_int_equal(calls, 2);
	assert_int_equal(setups, 2);
	assert_int_equal(dones, 2);
}

/* A plugin without state: setup makes a NULL context, done is the default. */
static int bare_setup(const struct cnispec_request *req, void **ret_ctx, struct cnispec_error *err)
{
	setups++;
	*ret_ctx = NULL;
	return 0;
}

static int bare_op(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	assert_null(ctx);
	calls++;
	return 0;
}

static const struct cnispec_plugin_ops bare_ops = {
	.name = "bare-plugin",
	.setup = bare_setup,
	.add = op_add,
	.del = bare_op,
	.check = bare_op,
	.gc = bare_op,
	.status = bare_op,
	.done = cnispec_plugin_done_none,
};

static void test_plugin_context_none(void **state)
{
	static const char c110[] =
		"{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"bare-plugin\"}";
	char *out = NULL;

	calls = setups = dones = 0;
	assert_int_equal(run_ops(&bare_ops, "DEL", c110, &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(run_ops(&bare_ops, "STATUS", c110, &out), 0);
	free(out);
	assert_int_equal(calls, 2);
	assert_int_equal(setups, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmd_version),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_env_add),
		cmocka_unit_test(test_env_bad),
		cmocka_unit_test(test_env_pod_names),
		cmocka_unit_test(test_env_optional),
		cmocka_unit_test(test_env_args),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_result_versions),
		cmocka_unit_test(test_result_ipam_shape),
		cmocka_unit_test(test_result_roundtrip),
		cmocka_unit_test(test_result_bad),
		cmocka_unit_test(test_route_dst_masked),
		cmocka_unit_test(test_result_nulls_and_unknown),
		cmocka_unit_test(test_conf_envelope),
		cmocka_unit_test(test_conf_bad),
		cmocka_unit_test(test_conf_gc_and_version),
		cmocka_unit_test(test_unsupported),
		cmocka_unit_test(test_print),
		cmocka_unit_test_setup_teardown(test_find_plugin, delegate_setup,
						delegate_teardown),
		cmocka_unit_test_setup_teardown(test_delegate, delegate_setup, delegate_teardown),
		cmocka_unit_test_setup_teardown(test_delegate_errors, delegate_setup,
						delegate_teardown),
		cmocka_unit_test(test_plugin_main),
		cmocka_unit_test(test_plugin_main_stdin_max),
		cmocka_unit_test(test_plugin_context_nested),
		cmocka_unit_test(test_plugin_context_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
