/* SPDX-License-Identifier: Apache-2.0 */
/* src/http/encoding.c: whether an Accept-Encoding header takes gzip, on what clients send
 * (Prometheus, Go's transport, curl --compressed, browsers) and on RFC 9110's q-values,
 * identity, "*" and headers that cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http/http.h"

static void test_clients(void **st)
{
	assert_false(http_accept_gzip(NULL)); /* no header: identity */
	assert_false(http_accept_gzip(""));
	assert_true(http_accept_gzip("gzip")); /* Prometheus, Go's http.Transport */
	assert_true(http_accept_gzip("deflate, gzip, br, zstd")); /* curl --compressed */
	assert_true(http_accept_gzip("gzip, deflate, br"));
	assert_true(http_accept_gzip("GZip"));
	assert_true(http_accept_gzip("x-gzip"));
	assert_false(http_accept_gzip("identity"));
	assert_false(http_accept_gzip("deflate, br"));
	assert_false(http_accept_gzip("gzipped"));
	assert_false(http_accept_gzip("gzi"));
}

static void test_qvalues(void **st)
{
	assert_false(http_accept_gzip("gzip;q=0"));
	assert_false(http_accept_gzip("gzip; q=0.000"));
	assert_true(http_accept_gzip("gzip;q=0.001"));
	assert_true(http_accept_gzip("gzip ; Q=1.000"));
	assert_true(http_accept_gzip("gzip;q=0.5, identity;q=0.5"));
	/* the client prefers it plain */
	assert_false(http_accept_gzip("gzip;q=0.5, identity"));
	assert_false(http_accept_gzip("identity;q=1, gzip;q=0.9"));
	assert_true(http_accept_gzip("identity;q=0.1, gzip"));
	/* a q that is no qvalue: the element is ignored */
	assert_false(http_accept_gzip("gzip;q=2"));
	assert_false(http_accept_gzip("gzip;q=1.5"));
	assert_false(http_accept_gzip("gzip;q=0.5000"));
	assert_false(http_accept_gzip("gzip;q=.5"));
	assert_false(http_accept_gzip("gzip;q="));
	assert_false(http_accept_gzip("gzip;q=-1"));
	assert_true(http_accept_gzip("gzip;q=abc, gzip"));
	/* the weight's grammar is "q=" qvalue: not quoted, no space around "=", given once */
	assert_false(http_accept_gzip("gzip;q=\"1\""));
	assert_false(http_accept_gzip("gzip;q= 1"));
	assert_false(http_accept_gzip("gzip;q =1"));
	assert_false(http_accept_gzip("gzip;q=0;q=1"));
	assert_false(http_accept_gzip("gzip;q=1;Q=1"));
	/* a parameter whose name ends in q is not the weight */
	assert_true(http_accept_gzip("gzip;seq=0"));
	assert_false(http_accept_gzip("gzip;seq=1;q=0"));
	/* other parameters are nobody's business here */
	assert_true(http_accept_gzip("gzip;level=9"));
	assert_true(http_accept_gzip("gzip;x=\"a;q=0\";q=1"));
	assert_false(http_accept_gzip("gzip;x=\"a,gzip\";q=0"));
}

static void test_star(void **st)
{
	assert_true(http_accept_gzip("*"));
	assert_true(http_accept_gzip("br, *;q=0.1"));
	assert_false(http_accept_gzip("*;q=0"));
	/* a coding the header names wins over "*" */
	assert_false(http_accept_gzip("gzip;q=0, *"));
	assert_true(http_accept_gzip("*;q=0, gzip"));
}

static void test_garbled(void **st)
{
	assert_false(http_accept_gzip(",,,"));
	assert_false(http_accept_gzip(" \t "));
	assert_false(http_accept_gzip("gzip junk"));
	assert_false(http_accept_gzip("gzip;"));
	assert_false(http_accept_gzip("gzip;=1"));
	assert_false(http_accept_gzip("gzip;q=\"1"));
	assert_false(http_accept_gzip("@gzip"));
	assert_true(http_accept_gzip("@@, gzip"));
	assert_true(http_accept_gzip(" , gzip ,"));
	assert_true(http_accept_gzip("gzip;x=\"unterminated\\\"\", gzip"));
	assert_false(http_accept_gzip("gzip;x="));
	/* an element that cannot be read ends at its comma, not at one inside a quoted value */
	assert_false(http_accept_gzip("@;x=\"a, gzip;y=\"\""));
	assert_true(http_accept_gzip("@;x=\"a, br\", gzip"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clients),
		cmocka_unit_test(test_qvalues),
		cmocka_unit_test(test_star),
		cmocka_unit_test(test_garbled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
