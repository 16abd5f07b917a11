/* SPDX-License-Identifier: Apache-2.0 */
#include "webhook/networks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One comma-form element, "ns/name@if" with blanks around it already trimmed. */
static int parse_item(const char *s, size_t len, json_t *out, char *err, size_t errlen)
{
	_cleanup_free_ char *item = strndup(s, len);
	char *name, *slash, *at;
	json_t *o;

	if (!item)
		return -ENOMEM;
	name = item;
	slash = strchr(item, '/');
	at = strchr(item, '@');
	if (slash && (strchr(slash + 1, '/') || (at && at < slash))) {
		snprintf(err, errlen, "\"%s\": expected [namespace/]name[@interface]", item);
		return -EINVAL;
	}
	if (at && strchr(at + 1, '@')) {
		snprintf(err, errlen, "\"%s\": more than one '@'", item);
		return -EINVAL;
	}
	if (at)
		*at = '\0';
	if (slash) {
		*slash = '\0';
		name = slash + 1;
	}
	if (!*name || (slash && !*item) || (at && !at[1])) {
		snprintf(err, errlen, "\"%s\": empty namespace, name or interface", s);
		return -EINVAL;
	}
	o = json_object();
	if (!o)
		return -ENOMEM;
	/* json_string() refuses invalid UTF-8 */
	if (json_object_set_new(o, "name", json_string(name)) < 0 ||
	    (slash && json_object_set_new(o, "namespace", json_string(item)) < 0) ||
	    (at && json_object_set_new(o, "interface", json_string(at + 1)) < 0)) {
		json_decref(o);
		snprintf(err, errlen, "\"%.*s\": not valid UTF-8", (int)len, s);
		return -EINVAL;
	}
	return json_array_append_new(out, o) < 0 ? -ENOMEM : 0; /* _new: o is freed on failure too */
}

static int parse_comma(const char *value, json_t *out, char *err, size_t errlen)
{
	const char *p = value;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len;
		int r;

		if (!end)
			end = p + strlen(p);
		while (p < end && blank(*p))
			p++;
		len = (size_t)(end - p);
		while (len && blank(p[len - 1]))
			len--;
		/* "a,,b" and a trailing comma: Multus splits and skips nothing, but an empty
		 * element names no network; drop it rather than fail the pod */
		if (len) {
			if (json_array_size(out) >= NETWORKS_MAX) {
				snprintf(err, errlen, "more than %d networks", NETWORKS_MAX);
				return -EINVAL;
			}
			r = parse_item(p, len, out, err, errlen);
			if (r < 0)
				return r;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int check_json_item(const json_t *o, size_t i, char *err, size_t errlen)
{
	static const char *const strings[] = { "name", "namespace", "interface" };

	if (!json_is_object(o)) {
		snprintf(err, errlen, "element %zu is not an object", i);
		return -EINVAL;
	}
	for (size_t k = 0; k < sizeof(strings) / sizeof(strings[0]); k++) {
		const json_t *v = json_object_get(o, strings[k]);

		if (!v && k > 0)
			continue;
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen, "element %zu: \"%s\" %s", i, strings[k],
				 v ? "must be a non-empty string" : "is missing");
			return -EINVAL;
		}
	}
	return 0;
}

int webhook_networks_parse(const char *value, json_t **ret, char *err, size_t errlen)
{
	const char *p = value;
	json_t *list;
	int r;

	while (blank(*p))
		p++;
	if (*p == '[') {
		json_error_t je;
		size_t i;
		json_t *o;

		list = json_loads(p, JSON_REJECT_DUPLICATES, &je);
		if (!list) {
			snprintf(err, errlen, "not a JSON list: %s", je.text);
			return -EINVAL;
		}
		if (!json_is_array(list)) {
			json_decref(list);
			snprintf(err, errlen, "not a JSON list");
			return -EINVAL;
		}
		if (json_array_size(list) > NETWORKS_MAX) {
			json_decref(list);
			snprintf(err, errlen, "more than %d networks", NETWORKS_MAX);
			return -EINVAL;
		}
		json_array_foreach(list, i, o) {
			r = check_json_item(o, i, err, errlen);
			if (r < 0) {
				json_decref(list);
				return r;
			}
		}
		*ret = list;
		return 0;
	}
	list = json_array();
	if (!list)
		return -ENOMEM;
	r = parse_comma(p, list, err, errlen);
	if (r < 0) {
		json_decref(list);
		return r;
	}
	*ret = list;
	return 0;
}

bool webhook_networks_contains(const json_t *list, const char *pod_ns, const char *ns, const char *name)
{
	const char *want_ns = ns && *ns ? ns : pod_ns;
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o) {
		const char *n = json_string_value(json_object_get(o, "name"));
		const char *s = json_string_value(json_object_get(o, "namespace"));

		if (!s || !*s)
			s = pod_ns;
		if (n && !strcmp(n, name) && s && want_ns && !strcmp(s, want_ns))
			return true;
	}
	return false;
}

int webhook_networks_append(json_t *list, const char *ns, const char *name, const char *interface)
{
	json_t *o = json_object();

	if (!o)
		return -ENOMEM;
	if (json_object_set_new(o, "name", json_string(name)) < 0 ||
	    (ns && *ns && json_object_set_new(o, "namespace", json_string(ns)) < 0) ||
	    (interface && json_object_set_new(o, "interface", json_string(interface)) < 0)) {
		json_decref(o);
		return -ENOMEM;
	}
	return json_array_append_new(list, o) < 0 ? -ENOMEM : 0;
}

char *webhook_networks_format(const json_t *list)
{
	return json_dumps(list, JSON_COMPACT);
}
