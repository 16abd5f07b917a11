/* SPDX-License-Identifier: Apache-2.0 */
/* Documents out, the one output writer: every role builds its result as JSON (jansson) once,
 * then prints it either as JSON (--json) or as an aligned text table whose columns pick keys of
 * that JSON. So each field is named exactly once, in the code that builds the JSON. */
#ifndef RDMAK_DOC_H
#define RDMAK_DOC_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

struct doc_column {
	const char *header; /* "IBDEV" */
	const char *key;    /* key in each row object; "a.b" descends into nested objects */
};

/* Print rows (a JSON array of objects) as a table: strings as is, integers in decimal,
 * reals with up to one decimal, true/false as yes/no, null or missing as "-". */
int doc_table(FILE *f, const json_t *rows, const struct doc_column *cols, size_t n_cols);
/* A JSON string of s, NULL when out of memory. Text read from the system is bytes, not UTF-8 (a
 * netdev name may hold any byte but '/', ':' and whitespace), and jansson refuses invalid UTF-8:
 * such a string comes out with each invalid byte as "\xHH" (str_utf8_escape) rather than making
 * the whole object vanish. Use it for every string that comes from outside. */
json_t *doc_string(const char *s);
/* Append v to array a (stealing v). A NULL v (a failed construction) or a failed append is
 * -ENOMEM, never silently nothing. */
int doc_append(json_t *a, json_t *v);
/* Pretty-printed JSON with a trailing newline. */
int doc_json(FILE *f, const json_t *doc);
/* The value at a dotted key ("ports.0.state": digits index an array), or NULL when any part
 * names nothing (an empty part, a missing key, an index that is not digits or past the end). */
const json_t *doc_get(const json_t *obj, const char *dotted_key);
/* The cell text doc_table would print for a value (buf of size n). */
const char *doc_cell(const json_t *v, char *buf, size_t n);

#endif
