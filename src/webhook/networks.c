/* SPDX-License-Identifier: Apache-2.0 */
#include "webhook/networks.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "k8s/names.h"
#include "util/cleanup.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* s[0..len) without the blanks around it (Go's strings.TrimSpace, ASCII part), malloc'd. */
static char *trimmed(const char *s, size_t len)
{
	while (len && blank(*s))
		s++, len--;
	while (len && blank(s[len - 1]))
		len--;
	return strndup(s, len);
}

/* An interface name as Multus checks it in the comma form (parsePodNetworkObjectName: at most
 * IFNAMSIZ-1 bytes, no '/' and no blank) and as the kernel's dev_valid_name() checks it in
 * either form (not "." or "..", no ':'), with what rdmak-cni refuses at ADD besides ('%',
 * control bytes): cnispec_ifname_valid. NULL when valid, else why. */
static const char *ifname_why(const char *s)
{
	const char *why;

	return cnispec_ifname_valid(s, &why) ? NULL : why;
}

/* One comma-form element, "[namespace/]name[@interface]", as Multus reads it: split at '/'
 * (at most one), then at '@' (at most one), each part trimmed; namespace and name, when
 * given, DNS-1123 labels (Multus checks them so: "must consist of lower case alphanumeric
 * characters"). The object written keeps exactly what Multus reads: the trimmed parts, an
 * empty namespace or interface left out. */
static int parse_item(const char *s, size_t len, size_t idx, json_t *out, char *err, size_t errlen)
{
	_cleanup_free_ char *item = strndup(s, len), *ns = NULL, *name = NULL, *ifn = NULL;
	const char *rest, *slash, *at, *why = NULL;
	json_t *o;

	if (!item)
		return -ENOMEM;
	if (!len) {
		snprintf(err, errlen,
			 "element %zu is empty: Multus would look up a network with no name", idx);
		return -EINVAL;
	}
	slash = strchr(item, '/');
	if (slash && strchr(slash + 1, '/')) {
		snprintf(err, errlen,
			 "\"%s\": more than one '/': expected [namespace/]name[@interface]", item);
		return -EINVAL;
	}
	rest = slash ? slash + 1 : item;
	at = strchr(rest, '@');
	if (at && strchr(at + 1, '@')) {
		snprintf(err, errlen, "\"%s\": more than one '@'", item);
		return -EINVAL;
	}
	ns = slash ? trimmed(item, (size_t)(slash - item)) : strdup("");
	name = trimmed(rest, at ? (size_t)(at - rest) : strlen(rest));
	ifn = at ? trimmed(at + 1, strlen(at + 1)) : strdup("");
	if (!ns || !name || !ifn)
		return -ENOMEM;
	if (!*name) {
		snprintf(err, errlen, "\"%s\": no network name", item);
		return -EINVAL;
	}
	if ((*ns && !k8s_dns1123_label(ns, &why)) || !k8s_dns1123_label(name, &why)) {
		snprintf(err, errlen,
			 "\"%s\": \"%s\" is not a namespace or network name Multus reads: %s", item,
			 *ns && !k8s_dns1123_label(ns, NULL) ? ns : name, why);
		return -EINVAL;
	}
	if (*ifn && (why = ifname_why(ifn))) {
		snprintf(err, errlen, "\"%s\": interface name \"%s\" %s", item, ifn, why);
		return -EINVAL;
	}
	o = json_object();
	if (!o)
		return -ENOMEM;
	/* json_string() refuses invalid UTF-8; labels are ASCII, the interface may not be */
	if (json_object_set_new(o, "name", json_string(name)) < 0 ||
	    (*ns && json_object_set_new(o, "namespace", json_string(ns)) < 0) ||
	    (*ifn && json_object_set_new(o, "interface", json_string(ifn)) < 0)) {
		json_decref(o);
		snprintf(err, errlen, "\"%.*s\": not valid UTF-8", (int)len, s);
		return -EINVAL;
	}
	return json_array_append_new(out, o) < 0 ? -ENOMEM
						 : 0; /* _new: o is freed on failure too */
}

static int parse_comma(const char *value, json_t *out, char *err, size_t errlen)
{
	const char *p = value;
	size_t idx = 0;

	/* Multus splits at every ',' and trims each element; an empty one ("a,,b", "a,")
	 * names a network without a name, which Multus fails the pod on: refused here */
	for (;;) {
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
		if (json_array_size(out) >= NETWORKS_MAX) {
			snprintf(err, errlen, "more than %d networks", NETWORKS_MAX);
			return -EINVAL;
		}
		r = parse_item(p, len, idx++, out, err, errlen);
		if (r < 0)
			return r;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* Go's net.ParseMAC: 6, 8 or 20 octets as hex pairs separated by ':' or '-', or as groups of
 * four hex digits separated by '.'. */
static bool mac_ok(const char *s)
{
	size_t n = strlen(s), groups;
	char sep;

	if (n < 14)
		return false;
	sep = s[2] == ':' || s[2] == '-' ? s[2] : s[4] == '.' ? '.' : 0;
	if (!sep)
		return false;
	if (sep == '.') {
		if ((n + 1) % 5)
			return false;
		groups = (n + 1) / 5; /* 4 hex digits each: 2 octets */
		for (size_t i = 0; i < n; i++)
			if (i % 5 == 4 ? s[i] != '.' : !isxdigit((unsigned char)s[i]))
				return false;
		groups *= 2;
	} else {
		if ((n + 1) % 3)
			return false;
		groups = (n + 1) / 3;
		for (size_t i = 0; i < n; i++)
			if (i % 3 == 2 ? s[i] != sep : !isxdigit((unsigned char)s[i]))
				return false;
	}
	return groups == 6 || groups == 8 || groups == 20;
}

/* An IP address, or a CIDR when it holds '/' (Multus: net.ParseCIDR, else net.ParseIP). */
static bool ip_ok(const char *s)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	unsigned char a[16];
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	char *end;
	long len;

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, a) != 1 && inet_pton(AF_INET6, buf, a) != 1)
		return false;
	if (!slash)
		return true;
	if (!isdigit((unsigned char)slash[1]))
		return false;
	len = strtol(slash + 1, &end, 10);
	return !*end && len <= (strchr(buf, ':') ? 128 : 32) && strlen(slash + 1) <= 3;
}

static int item_fail(char *err, size_t errlen, size_t i, const json_t *o, const char *key,
		     const char *val, const char *why)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	char head[128];

	if (name)
		snprintf(head, sizeof(head), "element %zu (\"%s\")", i, name);
	else
		snprintf(head, sizeof(head), "element %zu", i);
	snprintf(err, errlen, "%s: %s: \"%s\" %s", head, key, val, why);
	return -EINVAL;
}

/* A JSON-form element: what Multus reads from it (parsePodNetworkAnnotation) and refuses the
 * pod over: "mac" and "infiniband-guid" that net.ParseMAC refuses, "ips" that are not
 * addresses or CIDRs; and an interface name the kernel refuses. */
static int check_json_item(const json_t *o, size_t i, char *err, size_t errlen)
{
	static const char *const strings[] = { "name",	    "namespace",
					       "interface", "interfaceRequest",
					       "mac",	    "infiniband-guid" };
	const json_t *ips, *it;
	const char *why;
	size_t k;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "element %zu is not an object", i);
		return -EINVAL;
	}
	for (k = 0; k < sizeof(strings) / sizeof(strings[0]); k++) {
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
	for (k = 2; k <= 3; k++) {
		const char *ifn = json_string_value(json_object_get(o, strings[k]));

		if (ifn && (why = ifname_why(ifn)))
			return item_fail(err, errlen, i, o, strings[k], ifn, why);
	}
	for (k = 4; k <= 5; k++) {
		const char *mac = json_string_value(json_object_get(o, strings[k]));

		if (mac && !mac_ok(mac))
			return item_fail(
				err, errlen, i, o, strings[k], mac,
				"is not a MAC address (6, 8 or 20 octets, as Go's net.ParseMAC reads them)");
	}
	ips = json_object_get(o, "ips");
	if (ips && !json_is_array(ips)) {
		snprintf(err, errlen, "element %zu: \"ips\" must be a list of strings", i);
		return -EINVAL;
	}
	json_array_foreach(ips, k, it)
	{
		if (!json_is_string(it)) {
			snprintf(err, errlen, "element %zu: \"ips\" must be a list of strings", i);
			return -EINVAL;
		}
		if (!ip_ok(json_string_value(it)))
			return item_fail(err, errlen, i, o, "ips", json_string_value(it),
					 "is not an IP address or a CIDR");
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
	if (!*p) {
		/* nothing the user asked for: the webhook adds its own */
		list = json_array();
		*ret = list;
		return list ? 0 : -ENOMEM;
	}
	/* Multus reads the JSON form whenever the value holds any of [ { " */
	if (strpbrk(p, "[{\"")) {
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
		json_array_foreach(list, i, o)
		{
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

bool webhook_networks_contains(const json_t *list, const char *pod_ns, const char *ns,
			       const char *name)
{
	const char *want_ns = ns && *ns ? ns : pod_ns;
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o)
	{
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
