/* SPDX-License-Identifier: Apache-2.0 */
/* The parsers of a scrape's request headers, which anyone on the pod network sends: the one
 * reader of lists with q-values (http_qlist_next) and its two users, the exporter's Accept
 * (which format) and the HTTP layer's Accept-Encoding (gzip or not), on arbitrary bytes as MHD
 * hands a header's value over (NUL-terminated; the first NUL ends it). No read past the value;
 * every element given lies inside it, names a token (or token/token) and weighs 0 to 1000; and
 * an element that cannot be read changes nothing: one put after a comma leaves both answers as
 * they were, a quote left open by the value included. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/exporter.h"
#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_elements(const char *v)
{
	const char *p = v, *end = v + strlen(v), *was;
	struct http_qlist_elem e;

	for (was = p; http_qlist_next(&p, &e); was = p) {
		if (p <= was || p > end || e.name < was || e.name + e.name_len > p || !e.name_len ||
		    e.q > 1000)
			abort();
		for (size_t i = 0; i < e.name_len; i++) /* RFC 9110 tchar, and the "/" */
			if (!strchr("!#$%&'*+-.^_`|~/", e.name[i]) &&
			    !(e.name[i] >= '0' && e.name[i] <= '9') &&
			    !((e.name[i] | 0x20) >= 'a' && (e.name[i] | 0x20) <= 'z'))
				abort();
	}
	if (p != end)
		abort(); /* false only at the end */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exactly the value and its NUL, so that ASan sees any read past them */
	char *v = malloc(size + 1), *more;
	enum exporter_format f;

	if (!v)
		return 0;
	memcpy(v, data, size);
	v[size] = '\0';
	check_elements(v);
	f = exporter_format_from_accept(v);
	if (f != EXPORTER_TEXT && f != EXPORTER_OPENMETRICS)
		abort();
	if (strlen(v) == size) {
		/* one more element that is none (no name, a q without a value): same answers */
		static const char junk[] = ", @;q=";
		bool gz = http_accept_gzip(v);

		more = malloc(size + sizeof(junk));
		if (!more)
			abort();
		memcpy(more, v, size);
		memcpy(more + size, junk, sizeof(junk));
		check_elements(more);
		if (http_accept_gzip(more) != gz || exporter_format_from_accept(more) != f)
			abort();
		free(more);
	}
	free(v);
	return 0;
}
