/* SPDX-License-Identifier: Apache-2.0 */
/* Documents out, the one output writer: every role builds its result as JSON (jansson) once,
 * then prints it either as JSON (--json) or as an aligned text table whose columns pick keys of
 * that JSON. So each field is named exactly once, in the code that builds the JSON. A document
 * too large to build as a tree (the node model) is written as it is made, through the same
 * JSON writer (struct doc_writer) that prints the trees. */
#ifndef RDMAK_DOC_H
#define RDMAK_DOC_H

#include <jansson.h>
#include <stdbool.h>
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
/* Pretty-printed JSON with a trailing newline: a tree through the writer below. */
int doc_json(FILE *f, const json_t *doc);

/* The one JSON writer: a document written as it is made, without a tree to build and free,
 * pretty-printed (two spaces) as --json has always printed it. Every call takes the key of the
 * value in the enclosing object, NULL in an array or for the document itself. A failure (no
 * memory; -EINVAL: a key in an array, none in an object, a container left open or closed twice;
 * -EDOM: a real that is NaN or infinite) is kept, later calls do nothing, and doc_writer_print
 * returns it, having printed nothing: a document is printed whole or not at all. */
struct doc_writer;

struct doc_writer *doc_writer_new(void);
void doc_writer_free(struct doc_writer *w);
static inline void doc_writer_freep(struct doc_writer **w)
{
	doc_writer_free(*w);
}
void doc_begin_object(struct doc_writer *w, const char *key);
void doc_end_object(struct doc_writer *w);
void doc_begin_array(struct doc_writer *w, const char *key);
void doc_end_array(struct doc_writer *w);
/* s as a JSON string, bytes that are not UTF-8 as "\xHH" (doc_string's rule); NULL is null. */
void doc_put_string(struct doc_writer *w, const char *key, const char *s);
void doc_put_int(struct doc_writer *w, const char *key, long long v);
void doc_put_real(struct doc_writer *w, const char *key, double v);
void doc_put_bool(struct doc_writer *w, const char *key, bool v);
void doc_put_null(struct doc_writer *w, const char *key);
/* A jansson value and all it holds, objects in their keys' order; NULL fails with -ENOMEM. */
void doc_put_json(struct doc_writer *w, const char *key, const json_t *v);
/* The first failure, or 0. */
int doc_writer_error(const struct doc_writer *w);
/* The whole document and a newline; -EINVAL while a container is open or nothing was written. */
int doc_writer_print(const struct doc_writer *w, FILE *f);
/* The value at a dotted key ("ports.0.state": digits index an array), or NULL when any part
 * names nothing (an empty part, a missing key, an index that is not digits or past the end). */
const json_t *doc_get(const json_t *obj, const char *dotted_key);
/* The cell text doc_table would print for a value (buf of size n). */
const char *doc_cell(const json_t *v, char *buf, size_t n);

#endif
