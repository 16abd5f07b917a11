/* SPDX-License-Identifier: Apache-2.0 */
#include "webhook/patch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

char *webhook_patch_pointer_escape(const char *key)
{
	size_t n = 0;
	char *out, *o;

	for (const char *p = key; *p; p++)
		n += (*p == '~' || *p == '/') ? 2 : 1;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	o = out;
	for (const char *p = key; *p; p++) {
		if (*p == '~') {
			*o++ = '~';
			*o++ = '0';
		} else if (*p == '/') {
			*o++ = '~';
			*o++ = '1';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

static int op(json_t *ops, const char *what, const char *path, const json_t *value)
{
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "op", json_string(what)) < 0 ||
	    json_object_set_new(o, "path", json_string(path)) < 0 ||
	    (value && json_object_set_new(o, "value", json_deep_copy(value)) < 0) ||
	    json_array_append_new(ops, o) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	return 0;
}

static char *child_key(const char *path, const char *key)
{
	_cleanup_free_ char *esc = webhook_patch_pointer_escape(key);
	char *s;

	if (!esc || asprintf(&s, "%s/%s", path, esc) < 0)
		return NULL;
	return s;
}

static char *child_idx(const char *path, size_t i)
{
	char *s;

	return asprintf(&s, "%s/%zu", path, i) < 0 ? NULL : s;
}

static int diff(json_t *ops, const char *path, const json_t *a, const json_t *b)
{
	if (json_equal((json_t *)a, (json_t *)b))
		return 0;
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *va, *vb;

		json_object_foreach((json_t *)a, k, va) if (!json_object_get(b, k))
		{
			_cleanup_free_ char *p = child_key(path, k);

			if (!p || op(ops, "remove", p, NULL) < 0)
				return -ENOMEM;
		}
		json_object_foreach((json_t *)b, k, vb)
		{
			_cleanup_free_ char *p = child_key(path, k);
			int r;

			if (!p)
				return -ENOMEM;
			va = json_object_get(a, k);
			r = va ? diff(ops, p, va, vb) : op(ops, "add", p, vb);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (json_is_array(a) && json_is_array(b)) {
		size_t na = json_array_size(a), nb = json_array_size(b);

		for (size_t i = 0; i < na && i < nb; i++) {
			_cleanup_free_ char *p = child_idx(path, i);

			if (!p || diff(ops, p, json_array_get(a, i), json_array_get(b, i)) < 0)
				return -ENOMEM;
		}
		for (size_t i = na; i < nb; i++) {
			_cleanup_free_ char *p = child_idx(path, i);

			if (!p || op(ops, "add", p, json_array_get(b, i)) < 0)
				return -ENOMEM;
		}
		for (size_t i = na; i > nb; i--) {
			_cleanup_free_ char *p = child_idx(path, i - 1);

			if (!p || op(ops, "remove", p, NULL) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	return op(ops, "replace", path, b);
}

json_t *webhook_patch_diff(const json_t *a, const json_t *b)
{
	json_t *ops = json_array();

	if (!ops)
		return NULL;
	if (diff(ops, "", a, b) < 0) {
		json_decref(ops);
		return NULL;
	}
	return ops;
}
