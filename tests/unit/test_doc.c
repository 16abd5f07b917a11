/* SPDX-License-Identifier: Apache-2.0 */
/* doc/: strings from the system that are not UTF-8 become escaped JSON strings, never NULL; the
 * JSON writer prints byte for byte what jansson's json_dumps prints for the same values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "doc/yaml.h"
#include "util/cleanup.h"
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
	/* a sequence counts only whole within its bound (a log line cut in the middle of one) */
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 3), 0);
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"a", 1), 1);
	assert_int_equal(str_utf8_seq_len((const unsigned char *)"\xc3", SIZE_MAX), 0);
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

/* ---- the JSON writer, with jansson's json_dumps as the oracle ------------------------- */

#define DUMP_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)

/* What the writer printed, without its newline; NULL when doc_writer_print failed. */
static char *writer_text(struct doc_writer *w)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	assert_non_null(f);
	r = doc_writer_print(w, f);
	fclose(f);
	doc_writer_free(w);
	if (r < 0) {
		assert_int_equal(len, 0); /* a failed document prints nothing */
		free(buf);
		return NULL;
	}
	assert_true(len > 0 && buf[len - 1] == '\n');
	buf[len - 1] = '\0';
	return buf;
}

/* The writer fed the tree equals json_dumps of the tree. Steals v. */
static void check_tree(json_t *v)
{
	struct doc_writer *w = doc_writer_new();
	char *want, *got;

	assert_non_null(v);
	want = json_dumps(v, DUMP_FLAGS);
	assert_non_null(want);
	doc_put_json(w, NULL, v);
	got = writer_text(w);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	free(want);
	json_decref(v);
}

/* Bytes from the system written by the writer equal doc_string's value dumped by jansson, as
 * a value and as a key (a key that is not UTF-8 was escaped with str_utf8_escape). */
static void check_bytes(const char *s)
{
	struct doc_writer *w = doc_writer_new();
	char *esc = str_utf8_escape(s), *want, *got;
	json_t *o = json_object();

	assert_non_null(esc);
	assert_int_equal(json_object_set_new(o, esc, doc_string(s)), 0);
	want = json_dumps(o, DUMP_FLAGS);
	doc_begin_object(w, NULL);
	doc_put_string(w, s, s);
	doc_end_object(w);
	got = writer_text(w);
	assert_non_null(got);
	if (strcmp(got, want))
		fail_msg("writer %s, jansson %s", got, want);
	free(got);
	free(want);
	free(esc);
	json_decref(o);
}

static void test_writer_strings(void **state)
{
	static const char *const bytes[] = {
		"",
		"eth0",
		"ib\xff"
		"0",
		"\xc3\xa9t\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"a\xc3",
		"\xc0\xaf",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xe2\x82"
		"x",
		"\x80",
		"\xf5\x80\x80\x80",
		"\xff\xfe",
		"quote\"back\\slash/",
		"\x7f",
		"\xef\xbf\xbf",
		"\xf4\x8f\xbf\xbf",
		"\xe2\x80\xa8",
		"bad\xff\n\x01\"",
	};
	char ctl[40];
	size_t n = 0;

	(void)state;
	/* every control byte, each escaped as jansson does (\b \f \n \r \t by name, \u00XX) */
	for (int c = 1; c < 0x20; c++)
		ctl[n++] = (char)c;
	ctl[n] = '\0';
	check_bytes(ctl);
	check_tree(json_string(ctl));
	for (size_t i = 0; i < ELEMENTSOF(bytes); i++)
		check_bytes(bytes[i]);
	/* one byte that is not plain (or just is: ' ', DEL) at every place of strings of every
	 * length up to five words: the writer checks a word, or two overlapping halves, at once */
	for (size_t len = 0; len <= 40; len++) {
		static const char odd[] = { '"',  '\\',	      0x01,	  0x1f,	     ' ',
					    0x7f, (char)0x80, (char)0xc3, (char)0xff };
		char s[41];

		memset(s, 'a', len);
		s[len] = '\0';
		check_bytes(s);
		for (size_t at = 0; at < len; at++)
			for (size_t k = 0; k < ELEMENTSOF(odd); k++) {
				s[at] = odd[k];
				check_bytes(s);
				s[at] = 'a';
			}
	}
	check_tree(json_stringn("a\0b", 3)); /* NUL inside a jansson string: \u0000 */
	check_tree(json_pack("{s:s}", "k\"\\\n\x1f", "\xe2\x82\xac\t"));
}

static void test_writer_numbers(void **state)
{
	static const long long ints[] = { 0,	   1,	      -1,	 9,
					  10,	   -10,	      4096,	 INT_MAX,
					  INT_MIN, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1 };
	static const double reals[] = {
		0.0,
		-0.0,
		1.0,
		-1.0,
		2.5,
		0.1,
		100.0,
		400.0,
		1e16,
		1e17,
		1e20,
		1e-5,
		1.5e-7,
		-1e300,
		5e-324,
		1.7976931348623157e308,
		123456789012345678.0,
		0.5,
		1.0 / 3,
		53.125,
	};
	struct doc_writer *w;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ints); i++)
		check_tree(json_integer(ints[i]));
	for (size_t i = 0; i < ELEMENTSOF(reals); i++)
		check_tree(json_real(reals[i]));
	/* JSON has no NaN or infinity: the document fails instead of printing one */
	w = doc_writer_new();
	doc_begin_array(w, NULL);
	doc_put_real(w, NULL, NAN);
	doc_end_array(w);
	assert_int_equal(doc_writer_error(w), -EDOM);
	assert_null(writer_text(w));
	w = doc_writer_new();
	doc_put_real(w, NULL, INFINITY);
	assert_null(writer_text(w));
}

static void test_writer_nesting(void **state)
{
	json_t *deep = json_array(), *in = deep;

	(void)state;
	check_tree(json_object());
	check_tree(json_array());
	check_tree(
		json_pack("{s:[], s:{}, s:[[], {}, [[]]], s:{s:{}}}", "a", "o", "nest", "x", "y"));
	check_tree(
		json_pack("[n, b, b, i, f, s, [i, [s, {s:n}]]]", 1, 0, 7, 0.25, "s", 8, "t", "k"));
	check_tree(json_pack("{s:i, s:s, s:i, s:n}", "z", 1, "a", "b", "m", 2, "b"));
	for (int i = 0; i < 20; i++) { /* 61 levels: within the writer's 64 */
		json_t *next = json_object();
		json_array_append_new(in, json_pack("{s:i, s:o}", "depth", i, "in", next));
		json_object_set_new(next, "a", json_array());
		in = json_object_get(next, "a");
	}
	check_tree(deep);
	check_tree(json_string("top"));
	check_tree(json_true());
	check_tree(json_null());
}

/* A random tree (a fixed seed: the same every run) of every kind of value, written both ways. */
static json_t *random_value(unsigned *seed, int depth)
{
	static const char *const words[] = {
		"",   "mlx5_0", "a b",	"\xc3\xa9",	    "\"q\"",
		"\\", "tab\t",	"\x01", "\xf0\x9f\x98\x80", "0000:18:00.0"
	};
	unsigned k = (unsigned)rand_r(seed) % (depth > 5 ? 6 : 8);
	json_t *v;

	switch (k) {
	case 0: return json_null();
	case 1: return json_boolean(rand_r(seed) & 1);
	case 2: return json_integer((json_int_t)rand_r(seed) * rand_r(seed) - RAND_MAX);
	case 3: return json_real((double)rand_r(seed) / ((rand_r(seed) % 1000) + 1));
	case 4:
	case 5: return json_string(words[(unsigned)rand_r(seed) % ELEMENTSOF(words)]);
	case 6:
		v = json_array();
		for (int i = rand_r(seed) % 4; i > 0; i--)
			json_array_append_new(v, random_value(seed, depth + 1));
		return v;
	default:
		v = json_object();
		for (int i = rand_r(seed) % 4; i > 0; i--)
			json_object_set_new(v, words[(unsigned)rand_r(seed) % ELEMENTSOF(words)],
					    random_value(seed, depth + 1));
		return v;
	}
}

static void test_writer_random(void **state)
{
	unsigned seed = 32;

	(void)state;
	for (int i = 0; i < 500; i++)
		check_tree(random_value(&seed, 0));
}

/* Misuse is an error of the whole document, never a malformed one printed. */
static void test_writer_misuse(void **state)
{
	struct doc_writer *w;

	(void)state;
	w = doc_writer_new(); /* a key in an array */
	doc_begin_array(w, NULL);
	doc_put_int(w, "k", 1);
	doc_end_array(w);
	assert_int_equal(doc_writer_error(w), -EINVAL);
	assert_null(writer_text(w));
	w = doc_writer_new(); /* no key in an object */
	doc_begin_object(w, NULL);
	doc_put_int(w, NULL, 1);
	doc_end_object(w);
	assert_null(writer_text(w));
	w = doc_writer_new(); /* left open */
	doc_begin_object(w, NULL);
	assert_int_equal(doc_writer_error(w), 0);
	assert_null(writer_text(w));
	w = doc_writer_new(); /* closed as the other kind */
	doc_begin_object(w, NULL);
	doc_end_array(w);
	assert_null(writer_text(w));
	w = doc_writer_new(); /* two documents */
	doc_put_null(w, NULL);
	doc_put_null(w, NULL);
	assert_null(writer_text(w));
	assert_null(writer_text(doc_writer_new())); /* nothing */
	w = doc_writer_new();			    /* a tree that failed to build */
	doc_put_json(w, NULL, NULL);
	assert_int_equal(doc_writer_error(w), -ENOMEM);
	assert_null(writer_text(w));
	w = doc_writer_new(); /* deeper than the writer holds */
	for (int i = 0; i < 65; i++)
		doc_begin_array(w, NULL);
	assert_int_equal(doc_writer_error(w), -E2BIG);
	assert_null(writer_text(w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_escape),    cmocka_unit_test(test_get),
		cmocka_unit_test(test_append),	       cmocka_unit_test(test_parse_all),
		cmocka_unit_test(test_comment),	       cmocka_unit_test(test_write_yaml11),
		cmocka_unit_test(test_writer_strings), cmocka_unit_test(test_writer_numbers),
		cmocka_unit_test(test_writer_nesting), cmocka_unit_test(test_writer_random),
		cmocka_unit_test(test_writer_misuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
