/* SPDX-License-Identifier: Apache-2.0 */
/* src/http/dl.c: libmicrohttpd and GnuTLS loaded when the HTTPS server starts, GnuTLS alone for
 * the fabric manager's client. A missing library or function is named, with the Debian package
 * for the real names, and leaves nothing loaded; GnuTLS then loads alone, then both, every
 * function resolved; a second load is a no-op. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define HTTP_DL_IMPL /* the table itself, not the call macros */
#include "http/dl.h"

static void test_missing(void **st)
{
	char err[512] = "";

	(void)st;
	assert_int_equal(
		http_dl_load_from("libnosuch-rdmak.so.1", HTTP_DL_GNUTLS, err, sizeof(err)),
		-ENOENT);
	assert_non_null(strstr(err, "cannot load libnosuch-rdmak.so.1: "));
	assert_null(http_dl.MHD_start_daemon);

	err[0] = '\0';
	assert_int_equal(http_dl_load_from(HTTP_DL_MHD, "libnosuch-rdmak.so.2", err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot load libnosuch-rdmak.so.2: "));
	assert_null(http_dl.MHD_start_daemon);

	/* a library that loads but is not the one: the first function it lacks is named */
	err[0] = '\0';
	assert_int_equal(http_dl_load_from("libz.so.1", HTTP_DL_GNUTLS, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "libz.so.1 has no MHD_add_response_header "
				 "(a version older than rdmak was built "
				 "for?)");
	err[0] = '\0';
	assert_int_equal(http_dl_load_from(HTTP_DL_MHD, "libz.so.1", err, sizeof(err)), -ENOENT);
	assert_string_equal(
		err,
		"libz.so.1 has no gnutls_pcert_deinit (a version older than rdmak was built for?)");
	assert_null(http_dl.gnutls_strerror);
}

/* The TLS client (src/ufm) loads GnuTLS alone: libmicrohttpd stays out of rdmak-cni. */
static void test_gnutls_alone(void **st)
{
	char err[512] = "";

	(void)st;
	assert_int_equal(http_dl_load_gnutls_from("libnosuch-rdmak.so.2", err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot load libnosuch-rdmak.so.2: "));
	assert_null(http_dl.gnutls_init);
	err[0] = '\0';
	assert_int_equal(http_dl_load_gnutls(err, sizeof(err)), 0);
	assert_string_equal(err, "");
#define CHECK_GNUTLS(f) assert_non_null(http_dl.f);
	HTTP_DL_GNUTLS_FUNCS(CHECK_GNUTLS)
	assert_null(http_dl.MHD_start_daemon);
	assert_null(http_dl.MHD_add_response_header);
}

static void test_load(void **st)
{
	char err[512] = "";

	(void)st;
	assert_int_equal(http_dl_load(err, sizeof(err)), 0);
	assert_string_equal(err, "");
#define CHECK_LOADED(f) assert_non_null(http_dl.f);
	HTTP_DL_MHD_FUNCS(CHECK_LOADED)
	HTTP_DL_GNUTLS_FUNCS(CHECK_LOADED)
	assert_non_null(http_dl.gnutls_free);
	assert_non_null(*http_dl.gnutls_free);
	/* the real function: GnuTLS's words for one of its codes */
	assert_non_null(strstr(http_dl.gnutls_strerror(GNUTLS_E_MEMORY_ERROR), "memory"));
	/* loaded once: a later call with bad names changes nothing */
	assert_int_equal(
		http_dl_load_from("libnosuch-rdmak.so.1", "libnosuch-rdmak.so.2", err, sizeof(err)),
		0);
	assert_non_null(http_dl.MHD_start_daemon);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_gnutls_alone),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
