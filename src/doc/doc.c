/* SPDX-License-Identifier: Apache-2.0 */
#include "doc/doc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/strutil.h"

json_t *doc_string(const char *s)
{
	_cleanup_free_ char *e = NULL;

	if (!s)
		return NULL;
	if (str_is_utf8(s))
		return json_string(s);
	e = str_utf8_escape(s);
	return e ? json_string(e) : NULL;
}

int doc_append(json_t *a, json_t *v)
{
	if (!v)
		return -ENOMEM;
	return json_array_append_new(a, v) < 0 ? -ENOMEM : 0;
}

const json_t *doc_get(const json_t *obj, const char *dotted_key)
{
	char part[128];
	const char *p = dotted_key;

	if (!*p)
		return NULL;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (l == 0 || l >= sizeof(part))
			return NULL;
		memcpy(part, p, l);
		part[l] = '\0';
		if (json_is_array(obj))
			/* an index is digits: strtoul would read "x" or " 1" as some index */
			obj = strspn(part, "0123456789") == l
				      ? json_array_get(obj, strtoul(part, NULL, 10))
				      : NULL;
		else
			obj = json_object_get(obj, part);
		if (!obj || !dot)
			return obj;
		p = dot + 1;
	}
}

const char *doc_cell(const json_t *v, char *buf, size_t n)
{
	if (!v || json_is_null(v))
		return "-";
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.10g", json_real_value(v));
	else if (json_is_boolean(v))
		return json_is_true(v) ? "yes" : "no";
	else
		snprintf(buf, n, "%s", json_is_array(v) ? "[...]" : "{...}");
	return buf;
}

int doc_table(FILE *f, const json_t *rows, const struct doc_column *cols, size_t n_cols)
{
	_cleanup_free_ size_t *width = calloc(n_cols, sizeof(*width));
	size_t i, c;
	const json_t *row;
	char buf[64];

	if (!width)
		return -ENOMEM;
	for (c = 0; c < n_cols; c++)
		width[c] = strlen(cols[c].header);
	json_array_foreach(rows, i, row) for (c = 0; c < n_cols; c++)
	{
		size_t l = strlen(doc_cell(doc_get(row, cols[c].key), buf, sizeof(buf)));
		if (l > width[c])
			width[c] = l;
	}
	for (c = 0; c < n_cols; c++)
		fprintf(f, "%-*s%s", c + 1 < n_cols ? (int)width[c] : 0, cols[c].header,
			c + 1 < n_cols ? "  " : "\n");
	json_array_foreach(rows, i, row) for (c = 0; c < n_cols; c++)
		fprintf(f, "%-*s%s", c + 1 < n_cols ? (int)width[c] : 0,
			doc_cell(doc_get(row, cols[c].key), buf, sizeof(buf)),
			c + 1 < n_cols ? "  " : "\n");
	return ferror(f) ? -EIO : 0;
}

int doc_json(FILE *f, const json_t *doc)
{
	_cleanup_(doc_writer_freep) struct doc_writer *w = doc_writer_new();

	if (!w)
		return -ENOMEM;
	doc_put_json(w, NULL, doc);
	return doc_writer_print(w, f);
}
