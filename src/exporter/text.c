/* SPDX-License-Identifier: Apache-2.0 */
/* The format a scrape asks for, and the writer of its answer: one buffer, grown by doubling (sized from the previous
 * scrape, so it rarely grows), and appends that are copies, never a printf per sample. A node
 * with 8 PFs and 1016 VFs has ~46000 samples: formatting them with stdio (a locked fputc per
 * label character, a printf per value, an open_memstream that grows by copying) cost ~20% of a
 * scrape. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/internal.h"
#include "http/http.h"
#include "util/strutil.h"

/* ---- the format (the scrape's Accept header: anyone's) --------------------------------------- */

enum exporter_format exporter_format_from_accept(const char *accept)
{
	struct http_qlist_elem e;
	const char *p = accept;

	/* "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,..." as
	 * Prometheus sends it: a media range that is OpenMetrics, unless its q is 0 */
	while (p && http_qlist_next(&p, &e))
		if (e.q > 0 && http_qlist_is(&e, "application/openmetrics-text"))
			return EXPORTER_OPENMETRICS;
	return EXPORTER_TEXT;
}

const char *exporter_content_type(enum exporter_format f)
{
	return f == EXPORTER_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- the buffer ------------------------------------------------------------------------------ */

int exporter_buf_init(struct exporter_buf *b, size_t cap)
{
	*b = (struct exporter_buf){ 0 };
	b->cap = cap > 4096 ? cap : 4096;
	b->p = malloc(b->cap);
	if (!b->p) {
		b->cap = 0;
		b->oom = true;
		return -ENOMEM;
	}
	return 0;
}

void exporter_buf_free(struct exporter_buf *b)
{
	free(b->p);
	*b = (struct exporter_buf){ 0 };
}

bool exporter_buf_grow(struct exporter_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return false;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p)
		goto fail;
	b->p = p;
	b->cap = cap;
	return true;
fail:
	b->oom = true;
	return false;
}

void exporter_buf_u64(struct exporter_buf *b, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	exporter_buf_put(b, tmp + i, sizeof(tmp) - i);
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/* A label value: backslash, double quote and newline escaped (both formats); the runs between
 * them copied whole. Both formats want UTF-8, and Prometheus refuses a whole scrape for one
 * label that is not: a byte that is not part of a UTF-8 sequence (a netdev's name is bytes, and
 * Linux takes any but '/', ':' and whitespace) is written \xHH as `rdmak list` writes it
 * (str_utf8_escape), its backslash then escaped as any other. */
static void put_value(struct exporter_buf *b, const char *s)
{
	if (!is_ascii(s) && !str_is_utf8(s)) {
		char *e = str_utf8_escape(s);

		if (!e) {
			b->oom = true;
			return;
		}
		put_value(b, e);
		free(e);
		return;
	}
	for (;;) {
		size_t n = strcspn(s, "\\\"\n");

		exporter_buf_put(b, s, n);
		s += n;
		if (!*s)
			return;
		exporter_buf_put(b, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
		s++;
	}
}

void exporter_buf_labels(struct exporter_buf *b, const char *const *labels)
{
	for (size_t i = 0; labels[i]; i += 2) {
		exporter_buf_putc(b, i ? ',' : '{');
		exporter_buf_puts(b, labels[i]);
		exporter_buf_put(b, "=\"", 2);
		put_value(b, labels[i + 1]);
		exporter_buf_putc(b, '"');
	}
	if (labels[0])
		exporter_buf_putc(b, '}');
}

/* The family's header. OpenMetrics names a counter's family without its _total. */
void exporter_out_family(struct exporter_buf *b, enum exporter_format fmt, const char *name,
			 enum exp_type type, const char *help)
{
	size_t n = strlen(name);

	if (fmt == EXPORTER_OPENMETRICS && type == EXP_COUNTER && n > 6 &&
	    !strcmp(name + n - 6, "_total"))
		n -= 6;
	exporter_buf_put(b, "# HELP ", 7);
	exporter_buf_put(b, name, n);
	exporter_buf_putc(b, ' ');
	exporter_buf_puts(b, help);
	exporter_buf_put(b, "\n# TYPE ", 8);
	exporter_buf_put(b, name, n);
	exporter_buf_puts(b, type == EXP_COUNTER ? " counter\n" : " gauge\n");
}

void exporter_out_sample(struct exporter_buf *b, const char *name, const char *const *labels,
			 uint64_t v)
{
	exporter_buf_puts(b, name);
	exporter_buf_labels(b, labels);
	exporter_buf_putc(b, ' ');
	exporter_buf_u64(b, v);
	exporter_buf_putc(b, '\n');
}

void exporter_out_sample_pre(struct exporter_buf *b, const char *name, size_t name_len,
			     const char *labels, size_t labels_len, uint64_t v)
{
	/* one check for the whole line: name, labels, a space, 20 digits and a newline */
	if (b->cap - b->len < name_len + labels_len + 22 &&
	    !exporter_buf_grow(b, name_len + labels_len + 22))
		return;
	memcpy(b->p + b->len, name, name_len);
	memcpy(b->p + b->len + name_len, labels, labels_len);
	b->len += name_len + labels_len;
	b->p[b->len++] = ' ';
	exporter_buf_u64(b, v);
	b->p[b->len++] = '\n';
}
