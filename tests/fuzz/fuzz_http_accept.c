/* SPDX-License-Identifier: Apache-2.0 */
/* The parsers of a scrape's request headers, which anyone on the pod network sends: the
 * exporter's Accept (which format) and the HTTP layer's Accept-Encoding (gzip or not), on
 * arbitrary bytes as MHD hands a header's value over (NUL-terminated; the first NUL ends it).
 * No read past the value; and an element the parser cannot read changes nothing: one put after
 * a comma leaves the answer as it was. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/exporter.h"
#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exactly the value and its NUL, so that ASan sees any read past them */
	char *v = malloc(size + 1), *more;
	enum exporter_format f;

	if (!v)
		return 0;
	memcpy(v, data, size);
	v[size] = '\0';
	f = exporter_format_from_accept(v);
	if (f != EXPORTER_TEXT && f != EXPORTER_OPENMETRICS)
		abort();
	if (strlen(v) == size && !memchr(v, '"', size)) {
		/* one more element that is none (no coding, a q without a value): same answer */
		static const char junk[] = ", @;q=";
		bool gz = http_accept_gzip(v);

		more = malloc(size + sizeof(junk));
		if (!more)
			abort();
		memcpy(more, v, size);
		memcpy(more + size, junk, sizeof(junk));
		if (http_accept_gzip(more) != gz)
			abort();
		free(more);
	}
	free(v);
	return 0;
}
