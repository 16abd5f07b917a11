/* SPDX-License-Identifier: Apache-2.0 */
/* src/http/qlist.c: the elements of a header list with quality values (RFC 9110 12.4.2) as
 * http_qlist_next gives them, on Accept and Accept-Encoding values: names and media ranges,
 * weights, parameters that are not the weight, empty elements, whitespace, quoted values and
 * elements that cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http/http.h"

/* The elements read from value, as "name/q name/q ..." (q in thousandths). */
static const char *elems(const char *value)
{
	static char out[512];
	struct http_qlist_elem e;
	const char *p = value;
	size_t n = 0;

	out[0] = '\0';
	while (http_qlist_next(&p, &e)) {
		assert_true(e.name >= value && e.name + e.name_len <= value + strlen(value));
		assert_true(e.q <= 1000);
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%.*s/%u", n ? " " : "",
				      (int)e.name_len, e.name, e.q);
		assert_true(n < sizeof(out));
	}
	assert_int_equal(*p, '\0'); /* read to the end */
	return out;
}

static void test_names(void **st)
{
	assert_string_equal(elems(""), "");
	assert_string_equal(elems("gzip"), "gzip/1000");
	assert_string_equal(elems("deflate, gzip, br, zstd"),
			    "deflate/1000 gzip/1000 br/1000 zstd/1000");
	assert_string_equal(elems("*"), "*/1000");
	assert_string_equal(elems("*/*;q=0.1"), "*/*/100");
	assert_string_equal(elems("application/openmetrics-text;version=1.0.0,application/"
				  "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
				  "q=0.5,*/*;q=0.1"),
			    "application/openmetrics-text/1000 application/openmetrics-text/750 "
			    "text/plain/500 */*/100");
	/* a media range is token "/" token, nothing else */
	assert_string_equal(elems("text/, /plain, text/plain/x, text /plain, ok"), "ok/1000");
}

static void test_weights(void **st)
{
	assert_string_equal(elems("a;q=0, b;q=0., c;q=0.5, d;q=0.05, e;q=0.001, f;q=1.000, g;q=1."),
			    "a/0 b/0 c/500 d/50 e/1 f/1000 g/1000");
	/* names are case-insensitive; the weight may stand anywhere among the parameters */
	assert_string_equal(elems("a;Q=0.2, b;q=0.3;level=1"), "a/200 b/300");
	/* OWS around ";" */
	assert_string_equal(elems("a ; q=0.2\t;\tx=y , b\t;q=0"), "a/200 b/0");
	/* not the weight: a name ending in q, a "q=" inside a quoted value */
	assert_string_equal(elems("a;seq=0, b;foq=0.0, c;x=\"q=0\", d;x=\"a;q=0,b\";q=0.5"),
			    "a/1000 b/1000 c/1000 d/500");
	/* a weight that is no qvalue: the element is skipped */
	assert_string_equal(elems("a;q=2, b;q=1.5, c;q=1.001, d;q=0.5000, e;q=.5, f;q=, g;q=-1, "
				  "h;q=abc, i;q=\"1\", j;q= 1, k;q =1, l;q=0;q=1, m;Q=1;q=1, ok"),
			    "ok/1000");
}

static void test_garbled(void **st)
{
	/* empty elements are nothing (RFC 9110 5.6.1) */
	assert_string_equal(elems(",,,"), "");
	assert_string_equal(elems(" \t "), "");
	assert_string_equal(elems(" , a ,\t,b,"), "a/1000 b/1000");
	/* no name, something after it, an empty or valueless parameter */
	assert_string_equal(elems("@a, a junk, a;, a;;q=1, a;=1, a;x=, a;x, b"), "b/1000");
	/* an empty quoted value is a value */
	assert_string_equal(elems("a;x=\"\""), "a/1000");
	/* a quoted value with escapes, and a comma in it, is one value */
	assert_string_equal(elems("a;x=\"\\\",b\";q=0.3, c"), "a/300 c/1000");
	/* an element skipped ends at its own comma, not one inside a quoted value */
	assert_string_equal(elems("@;x=\"a, b\", c"), "c/1000");
	/* an unclosed quote runs to the end */
	assert_string_equal(elems("a, b;x=\"c, d"), "a/1000");
	assert_string_equal(elems("a, b;x=\"c\\"), "a/1000");
	assert_string_equal(elems("a, @;x=\"c, d"), "a/1000");
}

/* A name compared whole and without case, as RFC 9110 compares codings and media types */
static void test_is(void **st)
{
	const char *p = "GZip, application/OpenMetrics-Text;q=0.5, gzi";
	struct http_qlist_elem e;

	assert_true(http_qlist_next(&p, &e));
	assert_true(http_qlist_is(&e, "gzip"));
	assert_false(http_qlist_is(&e, "gzipx"));
	assert_false(http_qlist_is(&e, "gzi"));
	assert_true(http_qlist_next(&p, &e));
	assert_true(http_qlist_is(&e, "application/openmetrics-text"));
	assert_false(http_qlist_is(&e, "application/openmetrics"));
	assert_true(http_qlist_next(&p, &e));
	assert_false(http_qlist_is(&e, "gzip"));
	assert_false(http_qlist_next(&p, &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_garbled),
		cmocka_unit_test(test_is),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
