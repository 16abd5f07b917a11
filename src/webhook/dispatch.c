#include "webhook/dispatch.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dispatch_fail(struct jd_ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (!c->errlen)
		return -EINVAL;
	if (path && *path)
		n = snprintf(c->err, c->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= c->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
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

void dispatch_path_key(char *dst, size_t n, const char *base, const char *key)
{
	int l;

	if (plain_key(key))
		l = base && *base ? snprintf(dst, n, "%s.%s", base, key) : snprintf(dst, n, "%s", key);
	else
		l = snprintf(dst, n, "%s[\"%s\"]", base ? base : "", key);
	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
	/* keys come from the request: no control characters into logs and answers */
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

void dispatch_path_idx(char *dst, size_t n, const char *base, size_t i)
{
	int l = snprintf(dst, n, "%s[%zu]", base ? base : "", i);

	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
}

const char *dispatch_type_name(const json_t *v)
{
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
	case JD_BOOL: return "true or false";
	}
	return "a value";
}

static bool type_ok(int type, const json_t *v)
{
	if (type == JD_ANY)
		return true;
	if (type == JD_BOOL)
		return json_is_boolean(v);
	return (int)json_typeof(v) == type;
}

static int store_default(struct jd_ctx *c, const char *path, const struct jd_field *f, json_t *v, void *target)
{
	switch (f->type) {
	case JSON_STRING:
		if (strlen(json_string_value(v)) != json_string_length(v))
			return dispatch_fail(c, path, "contains a NUL byte");
		if ((f->flags & JD_NONEMPTY) && json_string_length(v) == 0)
			return dispatch_fail(c, path, "must not be empty");
		*(const char **)target = json_string_value(v);
		return 0;
	case JD_BOOL:
		*(bool *)target = json_is_true(v);
		return 0;
	case JSON_INTEGER:
		*(json_int_t *)target = json_integer_value(v);
		return 0;
	default:
		*(json_t **)target = v;
		return 0;
	}
}

int dispatch_run(struct jd_ctx *c, const char *path, json_t *obj, const struct jd_field *fields, bool allow_unknown,
		void *base)
{
	const char *key;
	json_t *v;
	size_t n = 0;

	if (!json_is_object(obj))
		return dispatch_fail(c, path, "expected an object, got %s", dispatch_type_name(obj));
	while (fields[n].name)
		n++;
	if (!allow_unknown)
		json_object_foreach(obj, key, v) {
			size_t i;

			for (i = 0; i < n; i++)
				if (!strcmp(key, fields[i].name))
					break;
			if (i == n) {
				char sub[256];

				dispatch_path_key(sub, sizeof(sub), path, key);
				return dispatch_fail(c, sub, "unknown key");
			}
		}
	for (size_t i = 0; i < n; i++) {
		const struct jd_field *f = &fields[i];
		char sub[256];
		int r;

		v = json_object_get(obj, f->name);
		dispatch_path_key(sub, sizeof(sub), path, f->name);
		if (v && json_is_null(v) && (f->flags & JD_NULLABLE))
			v = NULL;
		if (!v) {
			if (f->flags & JD_MANDATORY)
				return dispatch_fail(c, sub, "missing");
			continue;
		}
		if (!type_ok(f->type, v))
			return dispatch_fail(c, sub, "expected %s, got %s", want_name(f->type), dispatch_type_name(v));
		r = f->fn ? f->fn(c, sub, v, (char *)base + f->offset)
			  : store_default(c, sub, f, v, (char *)base + f->offset);
		if (r < 0)
			return r;
	}
	return 0;
}
