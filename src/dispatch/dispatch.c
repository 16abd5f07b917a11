/* SPDX-License-Identifier: Apache-2.0 */
#include "dispatch/dispatch.h"
#include "util/strv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int vfail(struct dispatch_ctx *c, enum dispatch_error kind, const char *path,
		 const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static int vfail(struct dispatch_ctx *c, enum dispatch_error kind, const char *path,
		 const char *fmt, va_list ap)
{
	int n = 0;

	c->error = kind;
	snprintf(c->path, sizeof(c->path), "%s", path ? path : "");
	c->value = NULL;
	c->why = c->suggest = NULL;
	if (!c->errlen)
		return -EINVAL;
	if (path && *path)
		n = snprintf(c->err, c->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= c->errlen)
		return -EINVAL;
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	return -EINVAL;
}

int dispatch_fail(struct dispatch_ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(c, DISPATCH_ERR_VALUE, path, fmt, ap);
	va_end(ap);
	return r;
}

int dispatch_fail_kind(struct dispatch_ctx *c, enum dispatch_error kind, const char *path,
		       const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(c, kind, path, fmt, ap);
	va_end(ap);
	return r;
}

int dispatch_refuse(struct dispatch_ctx *c, const char *path, const json_t *v, const char *why)
{
	int r = dispatch_fail_kind(c, DISPATCH_ERR_UNKNOWN, path, "%s", why);

	c->value = v;
	c->why = why;
	return r;
}

void dispatch_warn(struct dispatch_ctx *c, const char *path, const char *why)
{
	if (c->warn)
		c->warn(c->userdata, path, why);
}

static bool plain_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_' && *k != '-')
			return false;
	return true;
}

static void sanitize(char *dst, size_t n, int l)
{
	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
	/* keys come from the request: no control characters into logs and answers */
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

void dispatch_path_key(char *dst, size_t n, const char *base, const char *key)
{
	int l;

	if (plain_key(key))
		l = base && *base ? snprintf(dst, n, "%s.%s", base, key)
				  : snprintf(dst, n, "%s", key);
	else
		l = snprintf(dst, n, "%s[\"%s\"]", base ? base : "", key);
	sanitize(dst, n, l);
}

void dispatch_path_idx(char *dst, size_t n, const char *base, size_t i)
{
	int l = snprintf(dst, n, "%s[%zu]", base ? base : "", i);

	sanitize(dst, n, l);
}

const char *dispatch_type_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static const char *want_name(int type)
{
	switch (type) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case DISPATCH_BOOL: return "true or false";
	case DISPATCH_NUMBER: return "a number";
	}
	return "a value";
}

static bool type_ok(int type, const json_t *v)
{
	if (type == DISPATCH_ANY)
		return true;
	if (type == DISPATCH_BOOL)
		return json_is_boolean(v);
	if (type == DISPATCH_NUMBER)
		return json_is_number(v);
	return (int)json_typeof(v) == type;
}

static int store_default(struct dispatch_ctx *c, const char *path, const struct dispatch_field *f,
			 json_t *v, void *target)
{
	switch (f->type) {
	case JSON_STRING:
		return dispatch_string(c, path, v, f->flags & DISPATCH_NONEMPTY,
				       (const char **)target);
	case DISPATCH_BOOL: *(bool *)target = json_is_true(v); return 0;
	case JSON_INTEGER: *(json_int_t *)target = json_integer_value(v); return 0;
	case DISPATCH_NUMBER: *(double *)target = json_number_value(v); return 0;
	default: *(json_t **)target = v; return 0;
	}
}

static const struct dispatch_field *find(const struct dispatch_field *fields, const char *key)
{
	for (const struct dispatch_field *f = fields; f->name; f++)
		if (!strcmp(key, f->name))
			return f;
	for (const struct dispatch_field *f = fields; f->name; f++)
		if ((f->flags & DISPATCH_CASEFOLD) && !strcasecmp(key, f->name))
			return f;
	return NULL;
}

/* The value of f in obj, and the key as the document writes it. */
static json_t *lookup(json_t *obj, const struct dispatch_field *f, const char **written)
{
	const char *key;
	json_t *v = json_object_get(obj, f->name);

	*written = f->name;
	if (v || !(f->flags & DISPATCH_CASEFOLD))
		return v;
	json_object_foreach(obj, key, v) if (!strcasecmp(key, f->name))
	{
		*written = key;
		return v;
	}
	return NULL;
}

/* The edit distance between a and b ignoring ASCII case (a swap of two neighbours counts
 * one), or SIZE_MAX for names too long to be a near miss of a table's key. */
static size_t distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d[MAX + 1][MAX + 1]; /* distances stay <= MAX */

	if (la > MAX || lb > MAX)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned char)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned char)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned m = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1u < m)
				m = d[i - 1][j] + 1u;
			if (d[i][j - 1] + 1u < m)
				m = d[i][j - 1] + 1u;
			if (i > 1 && j > 1 &&
			    tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
			    d[i - 2][j - 2] + 1u < m)
				m = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)m;
		}
	return d[la][lb];
}

/* The DISPATCH_TYPO_GUARD row that key is a near miss of: one letter off for short names,
 * two for names of five letters or more. */
static const struct dispatch_field *near_guarded(const struct dispatch_field *fields,
						 const char *key)
{
	for (const struct dispatch_field *f = fields; f->name; f++)
		if ((f->flags & DISPATCH_TYPO_GUARD) &&
		    distance(key, f->name) <= (strlen(f->name) > 4 ? 2u : 1u))
			return f;
	return NULL;
}

/* The row key differs from only in ASCII case; a refused row is no suggestion. */
static const char *other_case(const struct dispatch_field *fields, const char *key)
{
	for (const struct dispatch_field *f = fields; f->name; f++)
		if (!(f->flags & DISPATCH_REFUSED) && !strcasecmp(key, f->name))
			return f->name;
	return NULL;
}

/* A key for a DISPATCH_CASEFOLD row that an earlier key of obj already took. */
static const char *earlier_same_row(json_t *obj, const struct dispatch_field *fields,
				    const char *key, const struct dispatch_field *f)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		if (k == key || !strcmp(k, key))
			break;
		if (find(fields, k) == f)
			return k;
	}
	return NULL;
}

int dispatch_run(struct dispatch_ctx *c, const char *path, json_t *obj,
		 const struct dispatch_field *fields, enum dispatch_unknown unknown, void *base)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return dispatch_fail(c, path, "expected an object, got %s",
				     dispatch_type_name(obj));
	json_object_foreach(obj, key, v)
	{
		const struct dispatch_field *f = find(fields, key);
		const char *other;
		char sub[DISPATCH_PATH_MAX];
		int r;

		if (f && (f->flags & DISPATCH_CASEFOLD) &&
		    (other = earlier_same_row(obj, fields, key, f))) {
			dispatch_path_key(sub, sizeof(sub), path, key);
			return dispatch_fail(c, sub, "duplicate of key \"%s\"", other);
		}
		if (f && !(f->flags & (DISPATCH_IGNORED | DISPATCH_REFUSED)))
			continue;
		dispatch_path_key(sub, sizeof(sub), path, key);
		if (f && (f->flags & DISPATCH_IGNORED)) {
			dispatch_warn(c, sub, f->why ? f->why : "accepted and ignored");
			continue;
		}
		if (f || unknown == DISPATCH_UNKNOWN_REFUSE) {
			r = dispatch_fail_kind(c, DISPATCH_ERR_UNKNOWN, sub, "%s",
					       f && f->why ? f->why : "unknown key");
			c->value = v;
			c->why = f ? f->why : NULL;
			c->suggest = f ? NULL : other_case(fields, key);
			return r;
		}
		if (unknown != DISPATCH_UNKNOWN_WARN)
			continue;
		f = near_guarded(fields, key);
		if (f) {
			r = dispatch_fail_kind(c, DISPATCH_ERR_UNKNOWN, sub,
					       "unknown key (did you mean \"%s\"?)", f->name);
			c->value = v;
			return r;
		}
		dispatch_warn(c, sub, "unknown key, ignored");
	}
	for (const struct dispatch_field *f = fields; f->name; f++) {
		const char *written;
		char sub[DISPATCH_PATH_MAX];
		int r;

		if (f->flags & (DISPATCH_IGNORED | DISPATCH_REFUSED))
			continue;
		v = lookup(obj, f, &written);
		dispatch_path_key(sub, sizeof(sub), path, written);
		if (v && json_is_null(v) && (f->flags & DISPATCH_NULLABLE))
			v = NULL;
		if (!v) {
			if ((f->flags & DISPATCH_MANDATORY) && f->why)
				return dispatch_fail_kind(c, DISPATCH_ERR_MISSING, sub,
							  "missing (%s)", f->why);
			if (f->flags & DISPATCH_MANDATORY)
				return dispatch_fail_kind(c, DISPATCH_ERR_MISSING, sub, "missing");
			continue;
		}
		if (!type_ok(f->type, v))
			return dispatch_fail(c, sub, "expected %s, got %s", want_name(f->type),
					     dispatch_type_name(v));
		r = f->fn ? f->fn(c, sub, v, (char *)base + f->offset)
			  : store_default(c, sub, f, v, (char *)base + f->offset);
		if (r < 0)
			return r;
	}
	return 0;
}

int dispatch_string(struct dispatch_ctx *c, const char *path, const json_t *v, bool nonempty,
		    const char **ret)
{
	/* -EINVAL written out, not dispatch_fail's value (always -EINVAL): an analyzer does not
	 * follow a variadic call, and would take *ret as set after a refusal */
	if (!json_is_string(v)) {
		dispatch_fail(c, path, "expected a string, got %s", dispatch_type_name(v));
		return -EINVAL;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		dispatch_fail(c, path, "contains a NUL byte");
		return -EINVAL;
	}
	if (nonempty && json_string_length(v) == 0) {
		dispatch_fail(c, path, "must not be empty");
		return -EINVAL;
	}
	*ret = json_string_value(v);
	return 0;
}

int dispatch_strdup(struct dispatch_ctx *c, const char *path, const json_t *v, bool nonempty,
		    char **ret)
{
	const char *s;
	char *d;
	int r = dispatch_string(c, path, v, nonempty, &s);

	if (r < 0)
		return r;
	d = strdup(s);
	if (!d)
		return -ENOMEM;
	free(*ret);
	*ret = d;
	return 0;
}

int dispatch_int_range(struct dispatch_ctx *c, const char *path, const json_t *v, long long lo,
		       long long hi, long long *ret)
{
	json_int_t i;

	if (!json_is_integer(v))
		return dispatch_fail(c, path, "expected an integer from %lld to %lld, got %s", lo,
				     hi, dispatch_type_name(v));
	i = json_integer_value(v);
	if (i < lo || i > hi)
		return dispatch_fail(c, path, "%lld is out of range (%lld to %lld)", (long long)i,
				     lo, hi);
	*ret = i;
	return 0;
}

int dispatch_bool(struct dispatch_ctx *c, const char *path, const json_t *v, bool *ret)
{
	if (!json_is_boolean(v))
		return dispatch_fail(c, path, "expected true or false, got %s",
				     dispatch_type_name(v));
	*ret = json_is_true(v);
	return 0;
}

int dispatch_enum(struct dispatch_ctx *c, const char *path, const json_t *v,
		  const char *const *names, int *ret)
{
	char list[256];
	size_t off = 0;
	const char *s;
	int r = dispatch_string(c, path, v, false, &s);

	if (r < 0)
		return r;
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i])) {
			*ret = i;
			return 0;
		}
	list[0] = '\0';
	for (int i = 0; names[i] && off < sizeof(list); i++) {
		int l = snprintf(list + off, sizeof(list) - off, "%s\"%s\"", i ? ", " : "",
				 names[i]);
		if (l < 0)
			break;
		off += (size_t)l;
	}
	return dispatch_fail(c, path, "\"%.64s\" is not one of %s", s, list);
}

struct strv_fill {
	char **strv;
	bool nonempty;
};

static int strv_elem(struct dispatch_ctx *c, const char *path, json_t *e, size_t i, void *userdata)
{
	struct strv_fill *f = userdata;
	const char *s;
	int r = dispatch_string(c, path, e, f->nonempty, &s);

	if (r < 0)
		return r;
	f->strv[i] = strdup(s);
	return f->strv[i] ? 0 : -ENOMEM;
}

int dispatch_strv(struct dispatch_ctx *c, const char *path, const json_t *v, size_t max,
		  bool nonempty, char ***ret)
{
	struct strv_fill f = { .nonempty = nonempty };
	int r;

	if (!json_is_array(v))
		return dispatch_fail(c, path, "expected an array, got %s", dispatch_type_name(v));
	if (max && json_array_size(v) > max)
		return dispatch_fail(c, path, "more than %zu entries", max);
	f.strv = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!f.strv)
		return -ENOMEM;
	r = dispatch_array(c, path, v, max, strv_elem, &f);
	if (r < 0) {
		strv_free(f.strv);
		return r;
	}
	*ret = f.strv;
	return 0;
}

int dispatch_array(struct dispatch_ctx *c, const char *path, const json_t *v, size_t max,
		   int (*fn)(struct dispatch_ctx *c, const char *path, json_t *elem, size_t i,
			     void *userdata),
		   void *userdata)
{
	json_t *e;
	size_t i;

	if (!json_is_array(v))
		return dispatch_fail(c, path, "expected an array, got %s", dispatch_type_name(v));
	if (max && json_array_size(v) > max)
		return dispatch_fail(c, path, "more than %zu entries", max);
	json_array_foreach(v, i, e)
	{
		char sub[DISPATCH_PATH_MAX];
		int r;

		dispatch_path_idx(sub, sizeof(sub), path, i);
		r = fn(c, sub, e, i, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}
