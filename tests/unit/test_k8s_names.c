/* SPDX-License-Identifier: Apache-2.0 */
/* src/k8s: Kubernetes' name rules and quantities, against Kubernetes' own cases. The inputs and
 * whether Kubernetes takes them are carried over from the files named above each table (the
 * facts, not the code); the cases marked "rdmak" are ours. The last tests show that the
 * plugin's config and the webhook's config, which both take extended resource names, now agree
 * name for name: the webhook injects exactly the names the plugin advertises. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "k8s/names.h"
#include "pool/config.h"
#include "webhook/webhookconf.h"

struct name_case {
	const char *s;
	bool ok;
};

/* "a" repeated n times, then tail; static buffers, one per call site */
static const char *rep(char *buf, size_t size, char c, size_t n, const char *tail)
{
	assert_true(n + strlen(tail) < size);
	memset(buf, c, n);
	strcpy(buf + n, tail);
	return buf;
}

static void check(bool (*fn)(const char *, const char **), const char *what,
		  const struct name_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		bool got = fn(c[i].s, &why);

		if (got != c[i].ok)
			fail_msg("%s(\"%s\"): got %s, want %s", what, c[i].s,
				 got ? "valid" : "invalid", c[i].ok ? "valid" : "invalid");
		/* a refusal always says why, and nothing is said on success */
		if (!got && (!why || !*why))
			fail_msg("%s(\"%s\"): refused without a reason", what, c[i].s);
		if (got && why)
			fail_msg("%s(\"%s\"): valid but why was set", what, c[i].s);
	}
}

#define CHECK(fn, cases) check(fn, #fn, cases, sizeof(cases) / sizeof(cases[0]))

/* apimachinery pkg/util/validation/validation_test.go, TestIsDNS1123Label */
static void test_dns1123_label(void **st)
{
	char a63[64], a64[65];
	const struct name_case cases[] = {
		{ "a", true },
		{ "ab", true },
		{ "abc", true },
		{ "a1", true },
		{ "a-1", true },
		{ "a--1--2--b", true },
		{ "0", true },
		{ "01", true },
		{ "012", true },
		{ "1a", true },
		{ "1-a", true },
		{ "1--a--b--2", true },
		{ rep(a63, sizeof(a63), 'a', 63, ""), true },
		{ "spiderpool", true }, /* rdmak */
		{ "", false },
		{ "A", false },
		{ "ABC", false },
		{ "aBc", false },
		{ "A1", false },
		{ "A-1", false },
		{ "1-A", false },
		{ "-", false },
		{ "a-", false },
		{ "-a", false },
		{ "1-", false },
		{ "-1", false },
		{ "_", false },
		{ "a_", false },
		{ "_a", false },
		{ "a_b", false },
		{ "1_", false },
		{ "_1", false },
		{ "1_2", false },
		{ ".", false },
		{ "a.", false },
		{ ".a", false },
		{ "a.b", false },
		{ "1.", false },
		{ ".1", false },
		{ "1.2", false },
		{ " ", false },
		{ "a ", false },
		{ " a", false },
		{ "a b", false },
		{ "1 ", false },
		{ " 1", false },
		{ "1 2", false },
		{ rep(a64, sizeof(a64), 'a', 64, ""), false },
	};
	const char *why;

	CHECK(k8s_dns1123_label, cases);
	/* the messages name the rule as Kubernetes does */
	assert_false(k8s_dns1123_label("Kube_System", &why));
	assert_string_equal(why, "a lowercase RFC 1123 label must consist of lower case "
				 "alphanumeric characters or '-', and must start and end with an "
				 "alphanumeric character");
	assert_false(k8s_dns1123_label("a.b", &why));
	assert_string_equal(why, "must not contain dots");
	assert_false(k8s_dns1123_label(a64, &why));
	assert_string_equal(why, "must be no more than 63 characters");
	assert_false(k8s_dns1123_label("", NULL)); /* why may be NULL */
}

/* apimachinery pkg/util/validation/validation_test.go, TestIsDNS1123Subdomain */
static void test_dns1123_subdomain(void **st)
{
	char a253[254], a254[255], long_label[80];
	const struct name_case cases[] = {
		{ "a", true },
		{ "ab", true },
		{ "abc", true },
		{ "a1", true },
		{ "a-1", true },
		{ "a--1--2--b", true },
		{ "0", true },
		{ "01", true },
		{ "012", true },
		{ "1a", true },
		{ "1-a", true },
		{ "1--a--b--2", true },
		{ "a.a", true },
		{ "ab.a", true },
		{ "abc.a", true },
		{ "a1.a", true },
		{ "a-1.a", true },
		{ "a--1--2--b.a", true },
		{ "a.1", true },
		{ "ab.1", true },
		{ "abc.1", true },
		{ "a1.1", true },
		{ "a-1.1", true },
		{ "a--1--2--b.1", true },
		{ "0.a", true },
		{ "01.a", true },
		{ "012.a", true },
		{ "1a.a", true },
		{ "1-a.a", true },
		{ "0.1", true },
		{ "01.1", true },
		{ "012.1", true },
		{ "1a.1", true },
		{ "1-a.1", true },
		{ "1--a--b--2.1", true },
		{ "a.b.c.d.e", true },
		{ "aa.bb.cc.dd.ee", true },
		{ "1.2.3.4.5", true },
		{ "11.22.33.44.55", true },
		/* one label of 253: Kubernetes' expression limits the whole, not each label */
		{ rep(a253, sizeof(a253), 'a', 253, ""), true },
		/* rdmak: a NAD's name; a label over 63 between dots is still a subdomain */
		{ "gpu1-sriov.rail", true },
		{ rep(long_label, sizeof(long_label), 'a', 70, ".rail"), true },
		{ "", false },
		{ "A", false },
		{ "ABC", false },
		{ "aBc", false },
		{ "A1", false },
		{ "A-1", false },
		{ "1-A", false },
		{ "-", false },
		{ "a-", false },
		{ "-a", false },
		{ "1-", false },
		{ "-1", false },
		{ "_", false },
		{ "a_", false },
		{ "_a", false },
		{ "a_b", false },
		{ "1_", false },
		{ "_1", false },
		{ "1_2", false },
		{ ".", false },
		{ "a.", false },
		{ ".a", false },
		{ "a..b", false },
		{ "1.", false },
		{ ".1", false },
		{ "1..2", false },
		{ " ", false },
		{ "a ", false },
		{ " a", false },
		{ "a b", false },
		{ "1 ", false },
		{ " 1", false },
		{ "1 2", false },
		{ "A.a", false },
		{ "aB.a", false },
		{ "ab.A", false },
		{ "A1.a", false },
		{ "a1.A", false },
		{ "A.1", false },
		{ "aB.1", false },
		{ "A1.1", false },
		{ "1A.1", false },
		{ "0.A", false },
		{ "01.A", false },
		{ "012.A", false },
		{ "1A.a", false },
		{ "1a.A", false },
		{ "A.B.C.D.E", false },
		{ "AA.BB.CC.DD.EE", false },
		{ "a.B.c.d.e", false },
		{ "aa.bB.cc.dd.ee", false },
		{ "a@b", false },
		{ "a,b", false },
		{ "a;b", false },
		{ "a:b", false },
		{ "a%b", false },
		{ "a?b", false },
		{ "a$b", false },
		/* rdmak: a dash next to a dot ends or starts a label */
		{ "a-.b", false },
		{ "a.-b", false },
		{ rep(a254, sizeof(a254), 'a', 254, ""), false },
	};
	const char *why;

	CHECK(k8s_dns1123_subdomain, cases);
	assert_false(k8s_dns1123_subdomain("a..b", &why));
	assert_string_equal(why, "a lowercase RFC 1123 subdomain must consist of lower case "
				 "alphanumeric characters, '-' or '.', and must start and end with "
				 "an alphanumeric character");
	assert_false(k8s_dns1123_subdomain(a254, &why));
	assert_string_equal(why, "must be no more than 253 characters");
}

/* apimachinery pkg/util/validation/validation_test.go, TestIsDNS1035Label */
static void test_dns1035_label(void **st)
{
	char a63[64], a64[65];
	const struct name_case cases[] = {
		{ "a", true },
		{ "ab", true },
		{ "abc", true },
		{ "a1", true },
		{ "a-1", true },
		{ "a--1--2--b", true },
		{ rep(a63, sizeof(a63), 'a', 63, ""), true },
		{ "0", false },
		{ "01", false },
		{ "012", false },
		{ "1a", false },
		{ "1-a", false },
		{ "1--a--b--2", false },
		{ "", false },
		{ "A", false },
		{ "ABC", false },
		{ "aBc", false },
		{ "A1", false },
		{ "A-1", false },
		{ "1-A", false },
		{ "-", false },
		{ "a-", false },
		{ "-a", false },
		{ "1-", false },
		{ "-1", false },
		{ "_", false },
		{ "a_", false },
		{ "_a", false },
		{ "a_b", false },
		{ "1_", false },
		{ "_1", false },
		{ "1_2", false },
		{ ".", false },
		{ "a.", false },
		{ ".a", false },
		{ "a.b", false },
		{ "1.", false },
		{ ".1", false },
		{ "1.2", false },
		{ " ", false },
		{ "a ", false },
		{ " a", false },
		{ "a b", false },
		{ "1 ", false },
		{ " 1", false },
		{ "1 2", false },
		{ rep(a64, sizeof(a64), 'a', 64, ""), false },
	};

	CHECK(k8s_dns1035_label, cases);
}

/* apimachinery pkg/util/validation/validation_test.go, TestIsQualifiedName (the same cases as
 * pkg/api/validate/content/kube_test.go, TestIsLabelKey) */
static void test_qualified_name(void **st)
{
	char a63[64], a64[65], long_ok[330], long_bad[330], b63[64];
	const struct name_case cases[] = {
		{ "simple", true },
		{ "now-with-dashes", true },
		{ "1-starts-with-num", true },
		{ "1234", true },
		{ "simple/simple", true },
		{ "now-with-dashes/simple", true },
		{ "now-with-dashes/now-with-dashes", true },
		{ "now.with.dots/simple", true },
		{ "now-with.dashes-and.dots/simple", true },
		{ "1-num.2-num/3-num", true },
		{ "1234/5678", true },
		{ "1.2.3.4/5678", true },
		{ "Uppercase_Is_OK_123", true },
		{ "example.com/Uppercase_Is_OK_123", true },
		{ "requests.storage-foo", true },
		{ rep(a63, sizeof(a63), 'a', 63, ""), true },
		{ long_ok, true }, /* 253 a, '/', 63 b */
		{ "nospecialchars%^=@", false },
		{ "cantendwithadash-", false },
		{ "-cantstartwithadash-", false },
		{ "only/one/slash", false },
		{ "Example.com/abc", false },
		{ "example_com/abc", false },
		{ "example.com/", false },
		{ "/simple", false },
		{ rep(a64, sizeof(a64), 'a', 64, ""), false },
		{ rep(long_bad, sizeof(long_bad), 'a', 254, "/abc"), false },
	};
	const char *why;

	rep(long_ok, sizeof(long_ok), 'a', 253, "/");
	strcat(long_ok, rep(b63, sizeof(b63), 'b', 63, ""));
	CHECK(k8s_qualified_name, cases);
	assert_false(k8s_qualified_name("example.com/", &why));
	assert_string_equal(why, "name part must be non-empty");
	assert_false(k8s_qualified_name("/simple", &why));
	assert_string_equal(why, "prefix part must be non-empty");
	assert_false(k8s_qualified_name("Example.com/abc", &why));
	assert_string_equal(why, "prefix part a lowercase RFC 1123 subdomain must consist of "
				 "lower case alphanumeric characters, '-' or '.', and must start "
				 "and end with an alphanumeric character");
	assert_false(k8s_qualified_name("cantendwithadash-", &why));
	assert_string_equal(why, "name part must consist of alphanumeric characters, '-', '_' or "
				 "'.', and must start and end with an alphanumeric character");
}

/* apimachinery pkg/util/validation/validation_test.go, TestIsValidLabelValue */
static void test_label_value(void **st)
{
	char a63[64], a64[65];
	const struct name_case cases[] = {
		{ "simple", true },
		{ "now-with-dashes", true },
		{ "1-starts-with-num", true },
		{ "end-with-num-1", true },
		{ "1234", true },
		{ rep(a63, sizeof(a63), 'a', 63, ""), true },
		{ "", true },
		{ "nospecialchars%^=@", false },
		{ "Tama-nui-te-r\xc4\x81.is.M\xc4\x81ori.sun", false },
		{ "\\backslashes\\are\\bad", false },
		{ "-starts-with-dash", false },
		{ "ends-with-dash-", false },
		{ ".starts.with.dot", false },
		{ "ends.with.dot.", false },
		{ rep(a64, sizeof(a64), 'a', 64, ""), false },
	};

	CHECK(k8s_label_value, cases);
}

/* kubernetes pkg/apis/core/v1/helper and component-helpers scheduling/corev1
 * resource_names_test.go TestIsExtendedResourceName, kube-state-metrics internal/store
 * utils_test.go TestIsExtendedResourceName; rdmak's own cases below them. (Kubernetes'
 * resource_names_test.go also lists "a/b" as not extended, against its own implementation
 * and the other tables, which take it: IsExtendedResourceName checks "requests.a/b", a
 * qualified name. The implementation is what the kubelet runs; we follow it.) */
static void test_extended_resource_name(void **st)
{
	char d244[300], d245[300], n63[80], n64[80];
	const struct name_case cases[] = {
		{ "pod.alpha.kubernetes.io/opaque-int-resource-foo", false },
		{ "kubernetes.io/resource-foo", false },
		{ "foo", false },
		{ "", false },
		{ "a/b", true },
		{ "requests.foobar", false },
		{ "c/d/", false },
		{ "example.com/foo", true },
		{ "requests.nvidia.com/gpu", false },
		{ "nvidia.com/gpu", true },
		{ "example.com/gpu", true },
		{ "custom-resource", false },
		{ "hugepages-2Mi", false },
		{ "cpu", false },
		/* rdmak: the names the plugin advertises and the webhook injects */
		{ "rdma/hca_shared_devices_a", true },
		{ "nvidia.com/hca", true },
		{ "spidernet.io/gpu1sriov", true },
		{ "rdma/rdma_shared_device_a", true },
		{ "openshift.io/mlnx_sriov_rdma", true },
		{ "rdma/_x", false },
		{ "rdma/x_", false },
		{ "rdma/a.b-C_d", true },
		{ "Mellanox.com/a", false },
		{ "a..b/a", false },
		{ "-a/x", false },
		{ "/a", false },
		{ "rdma/", false },
		{ "rdma//a", false },
		{ "a/b/c", false },
		/* quota's prefix: only "requests." starts it; "requests/hca" is quota's
		 * requests.requests/hca, a qualified name, so Kubernetes takes it */
		{ "requests.example.com/hca", false },
		{ "requests/hca", true },
		{ "requestsx.io/hca", true },
		/* "kubernetes.io/" anywhere is native, so these are too */
		{ "sub.kubernetes.io/a", false },
		{ "mykubernetes.io/hca", false },
		{ "kubernetes.io.example.com/a", true },
		/* the domain leaves room for "requests.": 244 and no more */
		{ rep(d244, sizeof(d244), 'a', 244, "/x"), true },
		{ rep(d245, sizeof(d245), 'a', 245, "/x"), false },
		/* the name part: 63 and no more */
		{ n63, true },
		{ n64, false },
	};
	const char *why;

	strcpy(n63, "r/");
	strcat(n63, rep(n64, sizeof(n64), 'n', 63, ""));
	strcpy(n64, n63);
	strcat(n64, "n");
	CHECK(k8s_extended_resource_name, cases);

	assert_false(k8s_extended_resource_name(n64, &why));
	assert_string_equal(why, "name part must be no more than 63 characters");
	assert_false(k8s_extended_resource_name("requests.example.com/hca", &why));
	assert_string_equal(why, "the requests. prefix is reserved (a resource quota names "
				 "requests.<resource>)");
	assert_false(k8s_extended_resource_name("foo.kubernetes.io/x", &why));
	assert_string_equal(why,
			    "the kubernetes.io domain is reserved for native Kubernetes resources");
	assert_false(k8s_extended_resource_name("gpu1sriov", &why));
	assert_string_equal(why, "must be domain/name, such as example.com/hca (a name without a "
				 "domain is a native Kubernetes resource)");
	assert_false(k8s_extended_resource_name(d245, &why));
	assert_string_equal(why, "the domain must be no more than 244 characters "
				 "(requests.<domain> is a DNS subdomain of at most 253)");
}

struct quantity_case {
	const char *s;
	int64_t value; /* rounded up away from 0, as Quantity.Value() */
};

/* apimachinery pkg/api/resource/quantity_test.go, TestQuantityParse: its table of inputs, each
 * also with a '-' and a '+' in front as that test does; the values are the table's expected
 * quantities as whole numbers (rounded up: "3m" is 1, "0.05Gi" 53687091.2 is 53687092) */
static void test_quantity_values(void **st)
{
	static const struct quantity_case cases[] = {
		{ "0", 0 },
		{ "0n", 0 },
		{ "0u", 0 },
		{ "0m", 0 },
		{ "0Ki", 0 },
		{ "0k", 0 },
		{ "0Mi", 0 },
		{ "0M", 0 },
		{ "0Gi", 0 },
		{ "0G", 0 },
		{ "0Ti", 0 },
		{ "0T", 0 },
		{ "1", 1 },
		{ "1Ki", 1024 },
		{ "8Ki", 8 * 1024 },
		{ "7Mi", 7 * 1024 * 1024 },
		{ "6Gi", 6LL << 30 },
		{ "5Ti", 5LL << 40 },
		{ "4Pi", 4LL << 50 },
		{ "3Ei", 3LL << 60 },
		{ "10Ti", 10LL << 40 },
		{ "100Ti", 100LL << 40 },
		{ "5n", 1 },
		{ "4u", 1 },
		{ "3m", 1 },
		{ "9", 9 },
		{ "8k", 8000 },
		{ "50k", 50000 },
		{ "7M", 7000000 },
		{ "6G", 6000000000LL },
		{ "5T", 5000000000000LL },
		{ "40T", 40000000000000LL },
		{ "300T", 300000000000000LL },
		{ "2P", 2000000000000000LL },
		{ "1E", 1000000000000000000LL },
		{ "1E-3", 1 },
		{ "1e3", 1000 },
		{ "1E6", 1000000 },
		{ "1e9", 1000000000 },
		{ "1E12", 1000000000000LL },
		{ "1e15", 1000000000000000LL },
		{ "1E18", 1000000000000000000LL },
		{ "1e14", 100000000000000LL },
		{ "1e13", 10000000000000LL },
		{ "100.035k", 100035 },
		{ "0.001", 1 },
		{ "0.0005k", 1 },
		{ "0.005", 1 },
		{ "0.05", 1 },
		{ "0.5", 1 },
		{ "0.00050k", 1 },
		{ "0.00500", 1 },
		{ "0.05000", 1 },
		{ "0.50000", 1 },
		{ "0.5e0", 1 },
		{ "0.5e-1", 1 },
		{ "0.5e-2", 1 },
		{ "10.035M", 10035000 },
		{ "1.2e3", 1200 },
		{ "1.3E+6", 1300000 },
		{ "1.40e9", 1400000000 },
		{ "1.53E12", 1530000000000LL },
		{ "1.6e15", 1600000000000000LL },
		{ "1.7E18", 1700000000000000000LL },
		{ "9.01", 10 },
		{ "8.1k", 8100 },
		{ "7.123456M", 7123456 },
		{ "6.987654321G", 6987654321LL },
		{ "5.444T", 5444000000000LL },
		{ "40.1T", 40100000000000LL },
		{ "300.2T", 300200000000000LL },
		{ "2.5P", 2500000000000000LL },
		{ "1.01E", 1010000000000000000LL },
		{ "3.001n", 1 },
		{ "1.1E-9", 1 },
		{ "0.0000000001", 1 },
		{ "0.0000000005", 1 },
		{ "0.00000000050", 1 },
		{ "0.5e-9", 1 },
		{ "0.9n", 1 },
		{ "0.00000012345", 1 },
		{ "0.00000012354", 1 },
		{ "100.035Ki", 102436 }, /* 102435.84 */
		{ "0.5Mi", 524288 },
		{ "0.05Gi", 53687092 },	      /* 53687091.2 */
		{ "0.025Ti", 27487790695LL }, /* 27487790694.4 */
		{ "0.000000000001Ki", 1 },
		{ ".001", 1 },
		{ ".0001k", 1 },
		{ "1.", 1 },
		{ "1.G", 1000000000 },
		/* rdmak: the webhook's shmSizeLimit, exact values, and the edges of int64 */
		{ "64Gi", 64LL << 30 },
		{ "8Gi", 8LL << 30 },
		{ "1.5Gi", 1610612736LL },
		{ "1.5", 2 },
		{ "500m", 1 },
		{ "0.5Ki", 512 },
		{ "9223372036854775807", INT64_MAX },
		{ "9223372036854775.807k", INT64_MAX },
		/* 2^63 - 1.0003: rounds up to 2^63 - 1 */
		{ "7.99999999999999999913Ei", INT64_MAX },
		{ "0.000000000000000000000000000000000000000000000000000000000000000001Ei", 1 },
		{ "1e-2147483647", 1 },
		{ "0e2147483647", 0 },
		{ "00000000000000000000000000000000000000000000001Ki", 1024 },
		{ "1000000000000000000000000000000e-30", 1 },
		{ "1000000000000000000000000000001e-30", 2 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static const char *const signs[] = { "", "-", "+" };

		for (size_t k = 0; k < 3; k++) {
			char buf[128];
			const char *why = NULL;
			int64_t v = 42;
			int64_t want = k == 1 ? -cases[i].value : cases[i].value;
			int r;

			snprintf(buf, sizeof(buf), "%s%s", signs[k], cases[i].s);
			r = k8s_quantity_parse(buf, &v, &why);
			if (r != 0)
				fail_msg("\"%s\": r=%d (%s)", buf, r, why ? why : "no reason");
			if (v != want)
				fail_msg("\"%s\": got %lld, want %lld", buf, (long long)v,
					 (long long)want);
		}
	}
}

/* apimachinery pkg/api/resource/quantity_test.go, TestQuantityParse's invalid list (and its
 * ParseQuantity("") case); rdmak's below them */
static void test_quantity_invalid(void **st)
{
	static const char *const invalid[] = {
		"",
		"1.1.M",
		"1+1.0M",
		"0.1mi",
		"0.1am",
		"aoeu",
		".5i",
		"1i",
		"-3.01i",
		"-3.01e-",
		"1e4294967297",
		" 1",
		"1 ",
		"Non-Numeric",
		/* rdmak: suffixes in the wrong case or unknown, a bare exponent mark, no number */
		"1GB",
		"Gi",
		"1gi",
		"1K",
		"1KI",
		"1e",
		"1E+",
		"1e3.5",
		"1Ki5",
		"1e3e3",
		"1ki",
		"--1",
		"+-1",
		"1.5.",
		".",
		"+",
		"-",
		"-.",
		"1e2147483648",
		"1e-2147483648",
		"0x10",
		"1_000",
	};
	/* valid quantities beyond int64, which Kubernetes caps and we refuse */
	static const char *const too_large[] = {
		"9Ei",
		"9223372036854775807Ki",
		"12E",
		"9223372036854775808",
		"8Ei",
		"1e19",
		"1e2147483647",
		"-9223372036854775808",
		"7.99999999999999999999Ei",
	};

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		const char *why = NULL;
		int64_t v = 42;

		if (k8s_quantity_parse(invalid[i], &v, &why) != -EINVAL)
			fail_msg("\"%s\": not refused as invalid", invalid[i]);
		assert_int_equal(v, 42); /* written only on success */
		assert_non_null(why);
	}
	for (size_t i = 0; i < sizeof(too_large) / sizeof(too_large[0]); i++) {
		const char *why = NULL;
		int64_t v = 42;

		if (k8s_quantity_parse(too_large[i], &v, &why) != -ERANGE)
			fail_msg("\"%s\": not refused as too large", too_large[i]);
		assert_int_equal(v, 42);
		assert_string_equal(why, "the value does not fit in 64 bits (at most "
					 "9223372036854775807, 8Ei - 1)");
	}
}

/* ---- the plugin and the webhook agree ---------------------------------------------------- */

/* whether the plugin's config takes prefix/name as a resource it would advertise */
static bool plugin_takes(const char *prefix, const char *name)
{
	struct pool_config *cfg = NULL;
	char buf[1024], err[512];
	int r;

	snprintf(buf, sizeof(buf),
		 "{\"configList\":[{\"resourceName\":\"%s\",\"resourcePrefix\":\"%s\","
		 "\"rdmaHcaMax\":1,\"devices\":[]}]}",
		 name, prefix);
	r = pool_config_parse(buf, strlen(buf), &cfg, err, sizeof(err));
	pool_config_free(cfg);
	assert_true(r == 0 || r == -EINVAL);
	return r == 0;
}

/* whether the webhook's config takes s, as a network's resource and as a group's resource */
static bool webhook_takes(const char *s)
{
	struct webhook_config *cfg = NULL;
	char buf[1024], err[512];
	int r1, r2;

	snprintf(buf, sizeof(buf),
		 "{\"groups\":{\"a\":{\"networks\":[{\"name\":\"n\",\"resource\":\"%s\"}]}}}", s);
	r1 = webhook_config_parse(buf, strlen(buf), &cfg, err, sizeof(err));
	webhook_config_free(cfg);
	cfg = NULL;
	snprintf(buf, sizeof(buf), "{\"groups\":{\"a\":{\"resources\":{\"%s\":1}}}}", s);
	r2 = webhook_config_parse(buf, strlen(buf), &cfg, err, sizeof(err));
	webhook_config_free(cfg);
	assert_true(r1 == 0 || r1 == -EINVAL);
	assert_int_equal(r1, r2);
	return r1 == 0;
}

static void test_plugin_and_webhook_agree(void **st)
{
	/* prefix, name (both pass the plugin's own [A-Za-z0-9_] pattern), whether Kubernetes
	 * takes prefix/name as an extended resource */
	static const struct {
		const char *prefix, *name;
		bool ok;
	} cases[] = {
		{ "rdma", "hca_shared_devices_a", true },
		{ "nvidia.com", "hca", true },
		{ "nvidia.com", "hostdev", true },
		{ "requests", "hca", true },
		{ "requests.example.com", "hca", false },
		{ "kubernetes.io", "hca", false },
		{ "sub.kubernetes.io", "hca", false },
		{ "mykubernetes.io", "hca", false },
		{ "Mellanox.com", "hca", false },
		{ "a..b", "hca", false },
		{ "rdma", "_hca", false },
		{ "rdma", "hca_", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char full[300];
		bool p = plugin_takes(cases[i].prefix, cases[i].name), w;

		snprintf(full, sizeof(full), "%s/%s", cases[i].prefix, cases[i].name);
		w = webhook_takes(full);
		if (p != cases[i].ok || w != cases[i].ok)
			fail_msg("%s: plugin %s, webhook %s, Kubernetes %s", full,
				 p ? "takes" : "refuses", w ? "takes" : "refuses",
				 cases[i].ok ? "takes" : "refuses");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dns1123_label),
		cmocka_unit_test(test_dns1123_subdomain),
		cmocka_unit_test(test_dns1035_label),
		cmocka_unit_test(test_qualified_name),
		cmocka_unit_test(test_label_value),
		cmocka_unit_test(test_extended_resource_name),
		cmocka_unit_test(test_quantity_values),
		cmocka_unit_test(test_quantity_invalid),
		cmocka_unit_test(test_plugin_and_webhook_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
