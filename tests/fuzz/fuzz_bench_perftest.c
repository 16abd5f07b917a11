/* SPDX-License-Identifier: Apache-2.0 */
/* The perftest output parser on arbitrary bytes: no crash, no overflow, no leak, and what it
 * returns holds together (rows have a size, events name a line of the input, the judged row is
 * one of the rows). Corpus: tests/fuzz/corpus/bench_perftest (real outputs, seeds 002/003). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bench_perftest_out o;
	const struct bench_perftest_row *r;
	bool small;

	if (bench_perftest_parse((const char *)data, size, &o) < 0)
		return 0;
	for (size_t i = 0; i < o.n_rows; i++)
		if (o.rows[i].bytes == 0 || o.rows[i].line == 0 || o.rows[i].line > o.n_lines)
			abort();
	for (size_t i = 0; i < o.n_events; i++)
		if (o.events[i].line == 0 || o.events[i].line > o.n_lines ||
		    strlen(o.events[i].text) >= sizeof(o.events[i].text) ||
		    strlen(o.events[i].what) >= sizeof(o.events[i].what) ||
		    (unsigned)o.events[i].kind >= BENCH_PT_EV__MAX)
			abort();
	r = bench_perftest_judged_row(&o, &small);
	if (r && (r < o.rows || r >= o.rows + o.n_rows))
		abort();
	if (strlen(o.device) >= sizeof(o.device) || strlen(o.title) >= sizeof(o.title) ||
	    strlen(o.verb) >= sizeof(o.verb))
		abort();
	if (r && o.kind == BENCH_PT_KIND_BW && isinf(bench_perftest_gbps(r, r->avg)))
		abort();
	bench_perftest_out_free(&o);
	return 0;
}
