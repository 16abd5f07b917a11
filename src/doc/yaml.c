/* SPDX-License-Identifier: Apache-2.0 */
/* YAML through libyaml's event parser and emitter, JSON through jansson. The YAML reader keeps
 * its own stack (no recursion: the depth is bounded by DEPTH_MAX, not by the C stack). */
#include "doc/yaml.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/cleanup.h"

#define DEPTH_MAX 128

struct frame {
	json_t *v;
	char *key; /* in a mapping: the key waiting for its value */
};

struct yreader {
	struct frame st[DEPTH_MAX];
	int depth;
	json_t *root;
	json_t *docs; /* doc_parse_all: every document's root, in order (NULL: one document only) */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int yfail(struct yreader *y, const yaml_mark_t *m,
						       const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (m)
		n = snprintf(y->err, y->errlen, "line %zu column %zu: ", m->line + 1,
			     m->column + 1);
	if (n >= 0 && (size_t)n < y->errlen) {
		va_start(ap, fmt);
		vsnprintf(y->err + n, y->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool all_digits(const char *s, const char *set)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr(set, *s))
			return false;
	return true;
}

/* The YAML 1.2 core schema's reading of a plain scalar. */
static json_t *resolve_plain(const char *s)
{
	const char *d = s + (*s == '-' || *s == '+');
	char *end;

	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	    !strcmp(s, "NULL"))
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return json_false();
	if (all_digits(d, "0123456789")) {
		long long v;

		errno = 0;
		v = strtoll(s, &end, 10);
		if (!errno && !*end)
			return json_integer(v);
		return isfinite(strtod(s, NULL)) ? json_real(strtod(s, NULL)) : NULL;
	}
	if (!strncmp(s, "0x", 2) && all_digits(s + 2, "0123456789abcdefABCDEF")) {
		errno = 0;
		unsigned long long v = strtoull(s + 2, &end, 16);

		if (!errno && v <= LLONG_MAX)
			return json_integer((json_int_t)v);
	}
	if (!strncmp(s, "0o", 2) && all_digits(s + 2, "01234567")) {
		errno = 0;
		unsigned long long v = strtoull(s + 2, &end, 8);

		if (!errno && v <= LLONG_MAX)
			return json_integer((json_int_t)v);
	}
	/* [-+]? ( . digits | digits [ . digits? ] ) ( [eE] [-+]? digits )?, with a '.' or an exponent */
	{
		const char *p = d;
		bool mant = false, dot = false, exp = false;

		while (*p >= '0' && *p <= '9')
			p++, mant = true;
		if (*p == '.') {
			p++;
			dot = true;
			while (*p >= '0' && *p <= '9')
				p++, mant = true;
		}
		if (mant && (*p == 'e' || *p == 'E')) {
			p++;
			if (*p == '-' || *p == '+')
				p++;
			exp = *p >= '0' && *p <= '9';
			while (*p >= '0' && *p <= '9')
				p++;
			if (!exp)
				mant = false;
		}
		if (mant && !*p && (dot || exp)) {
			double v = strtod(s, NULL);

			/* JSON has no infinity: 1e999 stays the string it was written as */
			return isfinite(v) ? json_real(v) : NULL;
		}
	}
	return NULL; /* a string */
}

static json_t *scalar_value(const yaml_event_t *e)
{
	const char *s = (const char *)e->data.scalar.value;
	size_t len = e->data.scalar.length;
	const char *tag = (const char *)e->data.scalar.tag;
	json_t *v;

	if (tag && !strcmp(tag, YAML_STR_TAG))
		return json_stringn(s, len);
	if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strlen(s) == len &&
	    (v = resolve_plain(s)))
		return v;
	return json_stringn(s, len);
}

static int attach(struct yreader *y, const yaml_mark_t *m, json_t *v)
{
	struct frame *f;

	if (!v)
		return yfail(y, m, "not valid UTF-8, or out of memory");
	if (y->depth == 0) {
		if (!y->docs) {
			y->root = v;
			return 0;
		}
		/* an empty document ("---" twice, a stream ending in "---") holds nothing to convert */
		if (json_is_null(v))
			return 0;
		return json_array_append_new(y->docs, v) < 0 ? -ENOMEM : 0;
	}
	f = &y->st[y->depth - 1];
	if (json_is_array(f->v))
		return json_array_append_new(f->v, v) < 0 ? -ENOMEM : 0;
	if (json_object_set_new(f->v, f->key, v) < 0)
		return -ENOMEM;
	free(f->key);
	f->key = NULL;
	return 0;
}

static int on_event(struct yreader *y, const yaml_event_t *e, int *docs)
{
	const yaml_mark_t *m = &e->start_mark;
	struct frame *top = y->depth ? &y->st[y->depth - 1] : NULL;
	bool want_key = top && json_is_object(top->v) && !top->key;

	switch (e->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1 && !y->docs)
			return yfail(y, m, "more than one YAML document; give one");
		return 0;
	case YAML_ALIAS_EVENT:
		return yfail(y, m, "YAML aliases (*%s) are not supported",
			     (const char *)e->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		if (want_key) {
			const char *s = (const char *)e->data.scalar.value;

			if (strlen(s) != e->data.scalar.length)
				return yfail(y, m, "a key contains a NUL byte");
			if (json_object_get(top->v, s))
				return yfail(y, m, "key \"%s\" given twice", s);
			top->key = strdup(s);
			return top->key ? 0 : -ENOMEM;
		}
		return attach(y, m, scalar_value(e));
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (want_key)
			return yfail(y, m, "a key must be a string, not a %s",
				     e->type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence");
		if (y->depth == DEPTH_MAX)
			return yfail(y, m, "nested deeper than %d levels", DEPTH_MAX);
		y->st[y->depth].v =
			e->type == YAML_MAPPING_START_EVENT ? json_object() : json_array();
		y->st[y->depth].key = NULL;
		if (!y->st[y->depth].v)
			return -ENOMEM;
		y->depth++;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		json_t *v = y->st[--y->depth].v;

		free(y->st[y->depth].key);
		y->st[y->depth].key = NULL;
		return attach(y, m, v);
	}
	default: return 0;
	}
}

static int yaml_read(const char *buf, size_t len, json_t *docs, json_t **ret, char *err,
		     size_t errlen)
{
	struct yreader y = { .err = err, .errlen = errlen, .docs = docs };
	yaml_parser_t parser;
	int ndocs = 0, r = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && r == 0) {
		yaml_event_t e;

		if (!yaml_parser_parse(&parser, &e)) {
			r = yfail(&y, &parser.problem_mark, "%s%s%s",
				  parser.problem ? parser.problem : "invalid YAML",
				  parser.context ? " " : "", parser.context ? parser.context : "");
			break;
		}
		done = e.type == YAML_STREAM_END_EVENT;
		r = on_event(&y, &e, &ndocs);
		yaml_event_delete(&e);
	}
	yaml_parser_delete(&parser);
	while (y.depth > 0) {
		y.depth--;
		json_decref(y.st[y.depth].v);
		free(y.st[y.depth].key);
	}
	if (r == 0 && !y.root && !docs)
		r = yfail(&y, NULL, "empty document");
	if (r < 0) {
		json_decref(y.root);
		return r;
	}
	if (!docs)
		*ret = y.root;
	return 0;
}

int doc_parse(const char *buf, size_t len, json_t **ret, enum doc_format *format, char *err,
	      size_t errlen)
{
	size_t i = 0;

	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i < len && (buf[i] == '{' || buf[i] == '[')) {
		json_error_t je;
		json_t *v = json_loadb(buf + i, len - i, JSON_REJECT_DUPLICATES, &je);

		if (v) {
			if (format)
				*format = DOC_JSON;
			*ret = v;
			return 0;
		}
		/* a YAML flow mapping also starts with '{': give YAML a chance, report JSON's error */
		if (yaml_read(buf, len, NULL, &v, err, errlen) == 0) {
			if (format)
				*format = DOC_YAML;
			*ret = v;
			return 0;
		}
		snprintf(err, errlen, "line %d column %d: %s", je.line, je.column, je.text);
		return -EINVAL;
	}
	if (format)
		*format = DOC_YAML;
	return yaml_read(buf, len, NULL, ret, err, errlen);
}

int doc_parse_all(const char *buf, size_t len, json_t **ret, char *err, size_t errlen)
{
	json_t *docs = json_array();
	int r;

	if (!docs)
		return -ENOMEM;
	r = yaml_read(buf, len, docs, NULL, err, errlen);
	if (r < 0) {
		json_decref(docs);
		return r;
	}
	*ret = docs;
	return 0;
}

/* ---- YAML out ------------------------------------------------------------------------------ */

static int emit_value(yaml_emitter_t *em, const json_t *v);

static int emit_scalar(yaml_emitter_t *em, const char *s, size_t len, yaml_scalar_style_t style)
{
	yaml_event_t e;

	if (!yaml_scalar_event_initialize(&e, NULL, NULL, (yaml_char_t *)s, (int)len, 1, 1, style))
		return -ENOMEM;
	return yaml_emitter_emit(em, &e) ? 0 : -EIO;
}

/* What a YAML 1.1 reader takes for something else than a string, although the 1.2 core schema
 * (ours) reads a string: go-yaml v2, behind kubectl's and Helm's sigs.k8s.io/yaml, reads y, yes,
 * on... as booleans, and 1.1 readers read 1:30 or 0000:18:00.0 (a PCI address) as base-60
 * numbers. The documents rdmak writes go to those readers. */
static bool yaml11_not_string(const char *s)
{
	static const char *const words[] = { "y",  "Y",	 "yes", "Yes", "YES", "n",   "N",   "no",
					     "No", "NO", "on",	"On",  "ON",  "off", "Off", "OFF" };
	const char *d = s + (*s == '-' || *s == '+');

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i]))
			return true;
	return *d >= '0' && *d <= '9' && strchr(d, ':') && strspn(d, "0123456789_:.") == strlen(d);
}

static int emit_string(yaml_emitter_t *em, const char *s, size_t len)
{
	json_t *as_plain = strlen(s) == len ? resolve_plain(s) : NULL;
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;

	if (as_plain || (strlen(s) == len && yaml11_not_string(s))) {
		/* "1", "true", "" would read back as a number, a boolean, null; "yes", "0000:18:00.0"
		 * would to a YAML 1.1 reader */
		json_decref(as_plain);
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	} else if (memchr(s, '\n', len)) {
		style = YAML_LITERAL_SCALAR_STYLE; /* libyaml falls back when a literal cannot hold it */
	}
	return emit_scalar(em, s, len, style);
}

static int emit_value(yaml_emitter_t *em, const json_t *v)
{
	yaml_event_t e;
	char num[64];
	int n;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *x;

		if (!yaml_mapping_start_event_initialize(&e, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &e))
			return -EIO;
		json_object_foreach((json_t *)v, k, x)
		{
			int r = emit_string(em, k, strlen(k));

			if (r < 0 || (r = emit_value(em, x)) < 0)
				return r;
		}
		if (!yaml_mapping_end_event_initialize(&e) || !yaml_emitter_emit(em, &e))
			return -EIO;
		return 0;
	}
	case JSON_ARRAY: {
		size_t i;
		json_t *x;

		if (!yaml_sequence_start_event_initialize(&e, NULL, NULL, 1,
							  YAML_BLOCK_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &e))
			return -EIO;
		json_array_foreach(v, i, x)
		{
			int r = emit_value(em, x);

			if (r < 0)
				return r;
		}
		if (!yaml_sequence_end_event_initialize(&e) || !yaml_emitter_emit(em, &e))
			return -EIO;
		return 0;
	}
	case JSON_STRING: return emit_string(em, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return emit_scalar(em, num, (size_t)n, YAML_PLAIN_SCALAR_STYLE);
	case JSON_REAL:
		n = snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		/* 1.0 printed as "1" would read back as an integer */
		if (!strpbrk(num, ".eEn"))
			n += snprintf(num + n, sizeof(num) - (size_t)n, ".0");
		return emit_scalar(em, num, (size_t)n, YAML_PLAIN_SCALAR_STYLE);
	case JSON_TRUE: return emit_scalar(em, "true", 4, YAML_PLAIN_SCALAR_STYLE);
	case JSON_FALSE: return emit_scalar(em, "false", 5, YAML_PLAIN_SCALAR_STYLE);
	case JSON_NULL: return emit_scalar(em, "null", 4, YAML_PLAIN_SCALAR_STYLE);
	}
	return -EINVAL;
}

int doc_write_yaml(FILE *f, const json_t *v)
{
	yaml_emitter_t em;
	yaml_event_t e;
	int r = -EIO;

	if (!yaml_emitter_initialize(&em))
		return -ENOMEM;
	yaml_emitter_set_output_file(&em, f);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	if (!yaml_stream_start_event_initialize(&e, YAML_UTF8_ENCODING) ||
	    !yaml_emitter_emit(&em, &e))
		goto out;
	if (!yaml_document_start_event_initialize(&e, NULL, NULL, NULL, 1) ||
	    !yaml_emitter_emit(&em, &e))
		goto out;
	if ((r = emit_value(&em, v)) < 0)
		goto out;
	r = -EIO;
	if (!yaml_document_end_event_initialize(&e, 1) || !yaml_emitter_emit(&em, &e))
		goto out;
	if (!yaml_stream_end_event_initialize(&e) || !yaml_emitter_emit(&em, &e))
		goto out;
	r = yaml_emitter_flush(&em) ? 0 : -EIO;
out:
	yaml_emitter_delete(&em);
	return r;
}

int doc_write_yaml_comment(FILE *f, const char *text)
{
	const char *p = text;

	/* every line of text behind "# ", so that no newline in a note ends the comment */
	do {
		size_t n = strcspn(p, "\n");

		if (fprintf(f, n ? "# %.*s\n" : "#\n", (int)n, p) < 0)
			return -EIO;
		p += n;
	} while (*p && *++p);
	return 0;
}
