/* SPDX-License-Identifier: Apache-2.0 */
/* src/exporter: the format an Accept header asks for (Prometheus sends OpenMetrics first with
 * text as a fallback; a q of 0 refuses a type), and the concurrency bound: a scrape past
 * max_scrapes is -EBUSY, not queued. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "exporter/exporter.h"
#include "exporter/internal.h"

static void test_accept(void **st)
{
	assert_int_equal(exporter_format_from_accept(NULL), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept(""), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("*/*"), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("text/plain;version=0.0.4"), EXPORTER_TEXT);
	/* Prometheus 2.x's scrape Accept header */
	assert_int_equal(exporter_format_from_accept(
				 "application/openmetrics-text;version=1.0.0,application/"
				 "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
				 "q=0.5,*/*;q=0.1"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept("text/plain, Application/OpenMetrics-Text"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;q=0,text/plain"),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics"), EXPORTER_TEXT);
	assert_string_equal(exporter_content_type(EXPORTER_TEXT),
			    "text/plain; version=0.0.4; charset=utf-8");
}

/* An empty sysfs root: no device, a scrape still answers; with max_scrapes of them in flight,
 * one more is refused. */
static void test_busy(void **st)
{
	char dir[] = "/tmp/rdmak-exp.XXXXXX";
	char sys[64];
	struct hw_ctx *ctx = NULL;
	struct exporter *e = NULL;
	struct hw_error err;
	char *buf = NULL;
	size_t len = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	assert_int_equal(mkdir(sys, 0755), 0);
	assert_int_equal(hw_ctx_new(sys, NULL, &ctx), 0);
	assert_int_equal(exporter_new(ctx, 1, &e, &err), 0);
	assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), 0);
	assert_non_null(strstr(buf, "rdmak_exporter_topology_loads_total 1\n"));
	assert_null(strstr(buf, "node_infiniband_state_id{"));
	free(buf);
	atomic_store(&e->inflight, 1); /* one scrape in flight */
	assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), -EBUSY);
	atomic_store(&e->inflight, 0);
	assert_int_equal(exporter_scrape(e, EXPORTER_OPENMETRICS, &buf, &len), 0);
	assert_int_equal(len >= 6 && !strcmp(buf + len - 6, "# EOF\n"), 1);
	free(buf);
	exporter_free(e);
	hw_ctx_free(ctx);
	rmdir(sys);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept),
		cmocka_unit_test(test_busy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
