/* SPDX-License-Identifier: Apache-2.0 */
/* Accept-Encoding (RFC 9110 12.5.3): whether a client takes a gzip'd answer. The list is read by
 * http_qlist_next (qlist.c), as the exporter reads Accept; an element it cannot read is ignored
 * as if absent (a client that garbles its header gets the answer uncompressed, which every
 * client takes). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "http/http.h"

static void best(int *q, const struct http_qlist_elem *e)
{
	if ((int)e->q > *q)
		*q = (int)e->q;
}

bool http_accept_gzip(const char *value)
{
	int gzip = -1, identity = -1, star = -1;
	struct http_qlist_elem e;
	const char *p = value;

	if (!value)
		return false; /* no header: the identity coding, as node_exporter answers too */
	while (http_qlist_next(&p, &e)) {
		if (http_qlist_is(&e, "gzip") || http_qlist_is(&e, "x-gzip"))
			best(&gzip, &e);
		else if (http_qlist_is(&e, "identity"))
			best(&identity, &e);
		else if (http_qlist_is(&e, "*"))
			best(&star, &e);
	}
	if (gzip < 0)
		gzip = star; /* "*" stands for every coding the header does not name */
	/* gzip taken, and not put below an identity the client named */
	return gzip > 0 && (identity < 0 || gzip >= identity);
}
