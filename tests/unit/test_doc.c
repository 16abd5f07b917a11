/* SPDX-License-Identifier: Apache-2.0 */
/* doc/: strings from the system that are not UTF-8 become escaped JSON strings, never NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "doc/yaml.h"
#include "util/strutil.h"

static void check_escape(const char *in, const char *want)
{
	char *got = str_utf8_escape(in);
	json_t *j = doc_string(in);

	assert_non_null(got);
	assert_string_equal(got, want);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), want);
	json_decref(j);
	free(got);
}

static void test_utf8_escape(void **st)
{
	check_escape("eth0", "eth0");
	check_escape("", "");
	check_escape("ib\xff"
		     "0",
		     "ib\\xff0");
	check_escape("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");	  /* valid 2-byte sequences kept */
	check_escape("\xe2\x82\xac", "\xe2\x82\xac");		  /* valid 3-byte */
	check_escape("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");	  /* valid 4-byte */
	check_escape("a\xc3", "a\\xc3");			  /* truncated at the end */
	check_escape("\xc0\xaf", "\\xc0\\xaf");			  /* overlong '/' */
	check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80");	  /* UTF-16 surrogate */
	check_escape("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	check_escape("\xe2\x82"
		     "x",
		     "\\xe2\\x82x"); /* short sequence then ASCII */
	assert_true(str_is_utf8("mlx5_0"));
	assert_false(str_is_utf8("ib\xff"));
	assert_null(doc_string(NULL));
}

/* A dotted key names one value or none: a miss is NULL, never another value. */
static void test_get(void **st)
{
	json_t *d = json_pack("{s:[{s:s},{s:s}],s:{s:i}}", "ports", "state", "ACTIVE", "state",
			      "DOWN", "dev", "mtu", 4096);

	(void)st;
	assert_string_equal(json_string_value(doc_get(d, "ports.1.state")), "DOWN");
	assert_string_equal(json_string_value(doc_get(d, "ports.0.state")), "ACTIVE");
	assert_int_equal(json_integer_value(doc_get(d, "dev.mtu")), 4096);
	assert_null(doc_get(d, "ports.2.state"));
	assert_null(doc_get(d, "ports.x.state")); /* was ports[0]: strtoul("x") is 0 */
	assert_null(doc_get(d, "ports.-1.state"));
	assert_null(doc_get(d, "ports. 1.state"));
	assert_null(doc_get(d, "ports..state"));
	assert_null(doc_get(d, "dev.mtu.x"));
	assert_null(doc_get(d, ""));
	json_decref(d);
}

static void test_append(void **st)
{
	json_t *a = json_array();

	assert_int_equal(doc_append(a, json_string("x")), 0);
	assert_int_equal(doc_append(a, NULL),
			 -ENOMEM); /* a failed construction is an error, not nothing */
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
}

/* doc_parse_all: every document of a stream, empty ones left out; doc_parse still takes one */
static void test_parse_all(void **state)
{
	static const char two[] = "---\na: 1\n---\n---\n- x\n...\n";
	json_t *v = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(doc_parse_all(two, strlen(two), &v, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 0), "a")), 1);
	assert_string_equal(json_string_value(json_array_get(json_array_get(v, 1), 0)), "x");
	json_decref(v);
	v = NULL;
	assert_int_equal(doc_parse(two, strlen(two), &v, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than one YAML document"));
	assert_int_equal(doc_parse_all("", 0, &v, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(v), 0);
	json_decref(v);
	v = (json_t *)1;
	assert_int_equal(doc_parse_all("a: [\n", 6, &v, err, sizeof(err)), -EINVAL);
	assert_ptr_equal(v, (json_t *)1); /* written only on success */
	assert_non_null(strstr(err, "line "));
}

/* doc_write_yaml_comment: each line of a note behind "# ", so no line of it escapes the comment */
static void test_comment(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(doc_write_yaml_comment(f, "one\nkey: value\n\nthree"), 0);
	assert_int_equal(doc_write_yaml_comment(f, ""), 0);
	fclose(f);
	assert_string_equal(buf, "# one\n# key: value\n#\n# three\n#\n");
	free(buf);
}

/* the writer quotes what a YAML 1.1 reader (go-yaml v2: kubectl, Helm) would not read as a
 * string: its booleans and base-60 numbers (a PCI address); other strings stay plain */
static void test_write_yaml11(void **state)
{
	static const char *const quoted[] = {
		"yes", "on", "Off", "y", "N", "0000:18:00.0", "1:30"
	};
	static const char *const plain[] = { "yesno", "0000:86:00.0x", "ens1f0", "mlx5_0", "a:1" };
	json_t *v = json_object();
	char *buf = NULL, want[64];
	size_t len = 0;
	FILE *f;

	(void)state;
	for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++)
		json_object_set_new(v, quoted[i], json_string(quoted[i]));
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		json_object_set_new(v, plain[i], json_string(plain[i]));
	f = open_memstream(&buf, &len);
	assert_int_equal(doc_write_yaml(f, v), 0);
	fclose(f);
	for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++) {
		snprintf(want, sizeof(want), "\"%s\": \"%s\"\n", quoted[i], quoted[i]);
		if (!strstr(buf, want))
			fail_msg("%s not quoted in:\n%s", quoted[i], buf);
	}
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		snprintf(want, sizeof(want), "\n%s: %s\n", plain[i], plain[i]);
		if (!strstr(buf, want) && strncmp(buf, want + 1, strlen(want + 1)))
			fail_msg("%s quoted in:\n%s", plain[i], buf);
	}
	json_decref(v);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_escape), cmocka_unit_test(test_get),
		cmocka_unit_test(test_append),	    cmocka_unit_test(test_parse_all),
		cmocka_unit_test(test_comment),	    cmocka_unit_test(test_write_yaml11),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
