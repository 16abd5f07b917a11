/* The result model and its JSON in each version. What changes between versions (spec
 * history, SPEC.md "Released versions" and the 1.1.0 result type):
 *   0.3.0, 0.3.1, 0.4.0: ips[] carry "version" ("4" or "6");
 *   1.0.0: "version" removed;
 *   1.1.0: interfaces gain mtu, socketPath, pciID; routes gain mtu, advmss, priority, table,
 *          scope.
 * Older versions get what they can hold; the attributes they cannot are left out. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cnispec/cnispec.h"
#include "util/cleanup.h"

#define RESULT_MAX_ITEMS 1024 /* per array: a result is a handful of entries, not a dump */

/* The route attributes of 1.1.0, each an optional uint32 member. */
static const struct {
	unsigned bit;
	const char *key;
	size_t off;
} route_attrs[] = {
	{ CNISPEC_ROUTE_MTU, "mtu", offsetof(struct cnispec_route, mtu) },
	{ CNISPEC_ROUTE_ADVMSS, "advmss", offsetof(struct cnispec_route, advmss) },
	{ CNISPEC_ROUTE_PRIORITY, "priority", offsetof(struct cnispec_route, priority) },
	{ CNISPEC_ROUTE_TABLE, "table", offsetof(struct cnispec_route, table) },
	{ CNISPEC_ROUTE_SCOPE, "scope", offsetof(struct cnispec_route, scope) },
};

struct cnispec_result *cnispec_result_new(void)
{
	return calloc(1, sizeof(struct cnispec_result));
}

static void strv_free0(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void cnispec_dns_clear(struct cnispec_dns *d)
{
	strv_free0(d->nameservers);
	strv_free0(d->search);
	strv_free0(d->options);
	free(d->domain);
	memset(d, 0, sizeof(*d));
}

static void iface_clear(struct cnispec_interface *i)
{
	free(i->name);
	free(i->mac);
	free(i->sandbox);
	free(i->socket_path);
	free(i->pci_id);
}

void cnispec_result_free(struct cnispec_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_interfaces; i++)
		iface_clear(&r->interfaces[i]);
	free(r->interfaces);
	free(r->ips);
	free(r->routes);
	cnispec_dns_clear(&r->dns);
	free(r);
}

static int dup_opt(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int grow(void **arr, size_t n, size_t size)
{
	void *p;

	if (n >= RESULT_MAX_ITEMS)
		return -E2BIG;
	p = realloc(*arr, (n + 1) * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

int cnispec_result_add_interface(struct cnispec_result *r, const struct cnispec_interface *i, size_t *ret_index)
{
	struct cnispec_interface c = { .mtu = i->mtu };
	int e;

	if (!i->name)
		return -EINVAL;
	if ((e = grow((void **)&r->interfaces, r->n_interfaces, sizeof(*r->interfaces))) < 0)
		return e;
	if (dup_opt(i->name, &c.name) < 0 || dup_opt(i->mac, &c.mac) < 0 || dup_opt(i->sandbox, &c.sandbox) < 0 ||
	    dup_opt(i->socket_path, &c.socket_path) < 0 || dup_opt(i->pci_id, &c.pci_id) < 0) {
		iface_clear(&c);
		return -ENOMEM;
	}
	r->interfaces[r->n_interfaces] = c;
	if (ret_index)
		*ret_index = r->n_interfaces;
	r->n_interfaces++;
	return 0;
}

int cnispec_result_add_ip(struct cnispec_result *r, const struct cnispec_ip *ip)
{
	int e = grow((void **)&r->ips, r->n_ips, sizeof(*r->ips));

	if (e < 0)
		return e;
	r->ips[r->n_ips++] = *ip;
	return 0;
}

int cnispec_result_add_route(struct cnispec_result *r, const struct cnispec_route *rt)
{
	int e = grow((void **)&r->routes, r->n_routes, sizeof(*r->routes));

	if (e < 0)
		return e;
	r->routes[r->n_routes++] = *rt;
	return 0;
}

static int strv_dup0(char *const *v, char ***ret)
{
	size_t n = 0;
	char **c;

	*ret = NULL;
	if (!v)
		return 0;
	while (v[n])
		n++;
	c = calloc(n + 1, sizeof(char *));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			strv_free0(c);
			return -ENOMEM;
		}
	*ret = c;
	return 0;
}

int cnispec_result_set_dns(struct cnispec_result *r, const struct cnispec_dns *d)
{
	struct cnispec_dns c = { 0 };

	if (strv_dup0(d->nameservers, &c.nameservers) < 0 || strv_dup0(d->search, &c.search) < 0 ||
	    strv_dup0(d->options, &c.options) < 0 || dup_opt(d->domain, &c.domain) < 0) {
		cnispec_dns_clear(&c);
		return -ENOMEM;
	}
	cnispec_dns_clear(&r->dns);
	r->dns = c;
	return 0;
}

int cnispec_result_dup(const struct cnispec_result *r, struct cnispec_result **ret)
{
	struct cnispec_result *c = cnispec_result_new();
	int e = c ? 0 : -ENOMEM;

	for (size_t i = 0; e == 0 && i < r->n_interfaces; i++)
		e = cnispec_result_add_interface(c, &r->interfaces[i], NULL);
	for (size_t i = 0; e == 0 && i < r->n_ips; i++)
		e = cnispec_result_add_ip(c, &r->ips[i]);
	for (size_t i = 0; e == 0 && i < r->n_routes; i++)
		e = cnispec_result_add_route(c, &r->routes[i]);
	if (e == 0)
		e = cnispec_result_set_dns(c, &r->dns);
	if (e < 0) {
		cnispec_result_free(c);
		return e;
	}
	*ret = c;
	return 0;
}

/* ---- to JSON ---------------------------------------------------------------------------- */

static int set_str(json_t *o, const char *k, const char *v)
{
	return v ? json_object_set_new(o, k, json_string(v)) : 0;
}

static int set_addr(json_t *o, const char *k, const struct cnispec_addr *a)
{
	char buf[CNISPEC_PREFIX_STRLEN];

	return json_object_set_new(o, k, json_string(cnispec_addr_str(a, buf)));
}

static int set_prefix(json_t *o, const char *k, const struct cnispec_prefix *p)
{
	char buf[CNISPEC_PREFIX_STRLEN];

	return json_object_set_new(o, k, json_string(cnispec_prefix_str(p, buf)));
}

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && v && v[i]; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static bool dns_empty(const struct cnispec_dns *d)
{
	return !(d->nameservers && d->nameservers[0]) && !d->domain && !(d->search && d->search[0]) &&
	       !(d->options && d->options[0]);
}

static json_t *dns_json(const struct cnispec_dns *d)
{
	json_t *o = json_object();
	int e = o ? 0 : -1;

	if (e == 0 && d->nameservers && d->nameservers[0])
		e = json_object_set_new(o, "nameservers", strv_json(d->nameservers));
	if (e == 0)
		e = set_str(o, "domain", d->domain);
	if (e == 0 && d->search && d->search[0])
		e = json_object_set_new(o, "search", strv_json(d->search));
	if (e == 0 && d->options && d->options[0])
		e = json_object_set_new(o, "options", strv_json(d->options));
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *iface_json(const struct cnispec_interface *i, enum cnispec_version v)
{
	json_t *o = json_object();
	int e = o ? 0 : -1;

	if (e == 0)
		e = set_str(o, "name", i->name);
	if (e == 0)
		e = set_str(o, "mac", i->mac);
	if (e == 0 && i->mtu && v >= CNISPEC_V1_1_0)
		e = json_object_set_new(o, "mtu", json_integer(i->mtu));
	if (e == 0)
		e = set_str(o, "sandbox", i->sandbox);
	if (e == 0 && v >= CNISPEC_V1_1_0)
		e = set_str(o, "socketPath", i->socket_path);
	if (e == 0 && v >= CNISPEC_V1_1_0)
		e = set_str(o, "pciID", i->pci_id);
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *ip_json(const struct cnispec_ip *ip, enum cnispec_version v)
{
	json_t *o = json_object();
	int e = o ? 0 : -1;

	if (e == 0 && v < CNISPEC_V1_0_0)
		e = json_object_set_new(o, "version", json_string(ip->address.addr.family == AF_INET ? "4" : "6"));
	if (e == 0 && ip->interface >= 0)
		e = json_object_set_new(o, "interface", json_integer(ip->interface));
	if (e == 0)
		e = set_prefix(o, "address", &ip->address);
	if (e == 0 && ip->has_gateway)
		e = set_addr(o, "gateway", &ip->gateway);
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *route_json(const struct cnispec_route *rt, enum cnispec_version v)
{
	json_t *o = json_object();
	int e = o ? 0 : -1;

	if (e == 0)
		e = set_prefix(o, "dst", &rt->dst);
	if (e == 0 && rt->has_gw)
		e = set_addr(o, "gw", &rt->gw);
	for (size_t i = 0; e == 0 && v >= CNISPEC_V1_1_0 && i < ELEMENTSOF(route_attrs); i++)
		if (rt->set & route_attrs[i].bit)
			e = json_object_set_new(o, route_attrs[i].key,
						json_integer(*(const uint32_t *)((const char *)rt + route_attrs[i].off)));
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cnispec_result_to_json(const struct cnispec_result *r, enum cnispec_version v)
{
	json_t *o = json_object(), *a;
	int e = o ? 0 : -1;

	if (e == 0)
		e = json_object_set_new(o, "cniVersion", json_string(cnispec_version_str(v)));
	if (e == 0 && r->n_interfaces) {
		e = json_object_set_new(o, "interfaces", a = json_array());
		for (size_t i = 0; e == 0 && i < r->n_interfaces; i++)
			e = json_array_append_new(a, iface_json(&r->interfaces[i], v));
	}
	if (e == 0 && r->n_ips) {
		e = json_object_set_new(o, "ips", a = json_array());
		for (size_t i = 0; e == 0 && i < r->n_ips; i++)
			e = json_array_append_new(a, ip_json(&r->ips[i], v));
	}
	if (e == 0 && r->n_routes) {
		e = json_object_set_new(o, "routes", a = json_array());
		for (size_t i = 0; e == 0 && i < r->n_routes; i++)
			e = json_array_append_new(a, route_json(&r->routes[i], v));
	}
	if (e == 0)
		e = json_object_set_new(o, "dns", dns_empty(&r->dns) ? json_object() : dns_json(&r->dns));
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int cnispec_result_print(FILE *f, const struct cnispec_result *r, enum cnispec_version v)
{
	_cleanup_free_ char *text = NULL;
	json_t *o = cnispec_result_to_json(r, v);

	if (!o)
		return -ENOMEM;
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	if (fprintf(f, "%s\n", text) < 0 || fflush(f) != 0)
		return -EIO;
	return 0;
}

/* ---- from JSON -------------------------------------------------------------------------- */

struct rp {
	char *why;
	size_t whylen;
};

__attribute__((format(printf, 3, 4)))
static int bad(struct rp *p, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->whylen)
		return -EINVAL;
	n = snprintf(p->why, p->whylen, "%s: ", path);
	if (n < 0 || (size_t)n >= p->whylen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->why + n, p->whylen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void sub(char *dst, size_t n, const char *base, const char *key, long idx)
{
	int l = idx >= 0 ? snprintf(dst, n, "%s.%s[%ld]", base, key, idx) : snprintf(dst, n, "%s.%s", base, key);

	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
}

static int opt_string(struct rp *p, const char *path, const json_t *o, const char *key, char **ret)
{
	const json_t *v = json_object_get(o, key);
	char sp[256];

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	sub(sp, sizeof(sp), path, key, -1);
	if (!json_is_string(v))
		return bad(p, sp, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(p, sp, "contains a NUL byte");
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int opt_uint(struct rp *p, const char *path, const json_t *o, const char *key, uint32_t *ret, bool *set)
{
	const json_t *v = json_object_get(o, key);
	char sp[256];

	*set = false;
	if (!v || json_is_null(v))
		return 0;
	sub(sp, sizeof(sp), path, key, -1);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
		return bad(p, sp, "expected an integer from 0 to 4294967295");
	*ret = (uint32_t)json_integer_value(v);
	*set = true;
	return 0;
}

static int get_addr(struct rp *p, const char *sp, const json_t *v, struct cnispec_addr *ret)
{
	if (!json_is_string(v))
		return bad(p, sp, "expected an IP address string");
	if (cnispec_addr_parse(json_string_value(v), ret) < 0)
		return bad(p, sp, "\"%s\" is not an IP address", json_string_value(v));
	return 0;
}

static int get_prefix(struct rp *p, const char *sp, const json_t *v, struct cnispec_prefix *ret)
{
	if (!json_is_string(v))
		return bad(p, sp, "expected an address in CIDR notation");
	if (cnispec_prefix_parse(json_string_value(v), ret) < 0)
		return bad(p, sp, "\"%s\" is not an address in CIDR notation", json_string_value(v));
	return 0;
}

static const json_t *opt_array(struct rp *p, const char *path, const json_t *o, const char *key, int *e)
{
	const json_t *v = json_object_get(o, key);
	char sp[256];

	*e = 0;
	if (!v || json_is_null(v))
		return NULL;
	sub(sp, sizeof(sp), path, key, -1);
	if (!json_is_array(v)) {
		*e = bad(p, sp, "expected an array");
		return NULL;
	}
	if (json_array_size(v) > RESULT_MAX_ITEMS) {
		*e = bad(p, sp, "more than %d entries", RESULT_MAX_ITEMS);
		return NULL;
	}
	return v;
}

static int parse_iface(struct rp *p, const char *sp, const json_t *it, struct cnispec_result *r)
{
	struct cnispec_interface i = { 0 };
	uint32_t mtu = 0;
	bool set;
	int e;

	if (!json_is_object(it))
		return bad(p, sp, "expected an object");
	if ((e = opt_string(p, sp, it, "name", &i.name)) < 0 || (e = opt_string(p, sp, it, "mac", &i.mac)) < 0 ||
	    (e = opt_string(p, sp, it, "sandbox", &i.sandbox)) < 0 ||
	    (e = opt_string(p, sp, it, "socketPath", &i.socket_path)) < 0 ||
	    (e = opt_string(p, sp, it, "pciID", &i.pci_id)) < 0 || (e = opt_uint(p, sp, it, "mtu", &mtu, &set)) < 0)
		goto out;
	i.mtu = mtu;
	if (!i.name) {
		e = bad(p, sp, "has no \"name\"");
		goto out;
	}
	e = cnispec_result_add_interface(r, &i, NULL);
out:
	iface_clear(&i);
	return e;
}

static int parse_ip(struct rp *p, const char *sp, const json_t *it, struct cnispec_result *r)
{
	struct cnispec_ip ip = { .interface = -1 };
	const json_t *v;
	char kp[256];
	int e;

	if (!json_is_object(it))
		return bad(p, sp, "expected an object");
	sub(kp, sizeof(kp), sp, "address", -1);
	v = json_object_get(it, "address");
	if (!v)
		return bad(p, kp, "missing");
	if ((e = get_prefix(p, kp, v, &ip.address)) < 0)
		return e;
	v = json_object_get(it, "gateway");
	if (v && !json_is_null(v)) {
		sub(kp, sizeof(kp), sp, "gateway", -1);
		if ((e = get_addr(p, kp, v, &ip.gateway)) < 0)
			return e;
		if (ip.gateway.family != ip.address.addr.family)
			return bad(p, kp, "is not of the address's family");
		ip.has_gateway = true;
	}
	v = json_object_get(it, "interface");
	if (v && !json_is_null(v)) {
		sub(kp, sizeof(kp), sp, "interface", -1);
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (json_int_t)r->n_interfaces)
			return bad(p, kp, "is not the index of an entry of \"interfaces\"");
		ip.interface = (int)json_integer_value(v);
	}
	/* "version" (0.3.x/0.4.0) is derived from the address; a contradiction is an error */
	v = json_object_get(it, "version");
	if (v && !json_is_null(v)) {
		const char *want = ip.address.addr.family == AF_INET ? "4" : "6";

		sub(kp, sizeof(kp), sp, "version", -1);
		if (!json_is_string(v) || strcmp(json_string_value(v), want))
			return bad(p, kp, "does not match the address (expected \"%s\")", want);
	}
	return cnispec_result_add_ip(r, &ip);
}

/* A route's destination is a network (Go's ParseCIDR gives libcni the masked one). */
static void mask_host_bits(struct cnispec_prefix *p)
{
	unsigned bits = p->addr.family == AF_INET ? 32 : 128;

	for (unsigned b = p->len; b < bits; b++)
		p->addr.a[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
}

static int parse_route(struct rp *p, const char *sp, const json_t *it, struct cnispec_result *r)
{
	struct cnispec_route rt = { 0 };
	const json_t *v;
	char kp[256];
	int e;

	if (!json_is_object(it))
		return bad(p, sp, "expected an object");
	sub(kp, sizeof(kp), sp, "dst", -1);
	v = json_object_get(it, "dst");
	if (!v)
		return bad(p, kp, "missing");
	if ((e = get_prefix(p, kp, v, &rt.dst)) < 0)
		return e;
	mask_host_bits(&rt.dst);
	v = json_object_get(it, "gw");
	if (v && !json_is_null(v)) {
		sub(kp, sizeof(kp), sp, "gw", -1);
		if ((e = get_addr(p, kp, v, &rt.gw)) < 0)
			return e;
		if (rt.gw.family != rt.dst.addr.family)
			return bad(p, kp, "is not of the destination's family");
		rt.has_gw = true;
	}
	for (size_t i = 0; i < ELEMENTSOF(route_attrs); i++) {
		bool set;

		if ((e = opt_uint(p, sp, it, route_attrs[i].key, (uint32_t *)((char *)&rt + route_attrs[i].off), &set)) < 0)
			return e;
		if (set)
			rt.set |= route_attrs[i].bit;
	}
	return cnispec_result_add_route(r, &rt);
}

static int opt_strv(struct rp *p, const char *path, const json_t *o, const char *key, char ***ret)
{
	const json_t *a, *it;
	char **v;
	size_t i;
	int e;

	*ret = NULL;
	a = opt_array(p, path, o, key, &e);
	if (!a)
		return e;
	v = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	json_array_foreach(a, i, it) {
		char sp[256];

		sub(sp, sizeof(sp), path, key, (long)i);
		if (!json_is_string(it) || strlen(json_string_value(it)) != json_string_length(it)) {
			strv_free0(v);
			return bad(p, sp, "expected a string");
		}
		if (!(v[i] = strdup(json_string_value(it)))) {
			strv_free0(v);
			return -ENOMEM;
		}
	}
	*ret = v;
	return 0;
}

int cnispec_dns_from_json(const json_t *obj, const char *path, struct cnispec_dns *ret, char *why, size_t whylen)
{
	struct rp p = { why, whylen };
	struct cnispec_dns d = { 0 };
	int e;

	if (!json_is_object(obj))
		return bad(&p, path, "expected an object");
	if ((e = opt_strv(&p, path, obj, "nameservers", &d.nameservers)) < 0 ||
	    (e = opt_string(&p, path, obj, "domain", &d.domain)) < 0 ||
	    (e = opt_strv(&p, path, obj, "search", &d.search)) < 0 ||
	    (e = opt_strv(&p, path, obj, "options", &d.options)) < 0) {
		cnispec_dns_clear(&d);
		return e;
	}
	for (size_t i = 0; d.nameservers && d.nameservers[i]; i++) {
		struct cnispec_addr a;
		char sp[256];

		if (cnispec_addr_parse(d.nameservers[i], &a) < 0) {
			sub(sp, sizeof(sp), path, "nameservers", (long)i);
			e = bad(&p, sp, "\"%s\" is not an IP address", d.nameservers[i]);
			cnispec_dns_clear(&d);
			return e;
		}
	}
	*ret = d;
	return 0;
}

typedef int (*item_fn)(struct rp *p, const char *sp, const json_t *it, struct cnispec_result *r);

static int parse_list(struct rp *p, const char *path, const json_t *o, const char *key, item_fn fn,
		      struct cnispec_result *r)
{
	const json_t *a, *it;
	size_t i;
	int e;

	a = opt_array(p, path, o, key, &e);
	if (!a)
		return e;
	json_array_foreach(a, i, it) {
		char sp[256];

		sub(sp, sizeof(sp), path, key, (long)i);
		if ((e = fn(p, sp, it, r)) < 0)
			return e;
	}
	return 0;
}

int cnispec_result_from_json(const json_t *obj, enum cnispec_version v, const char *path, struct cnispec_result **ret,
			     char *why, size_t whylen)
{
	struct rp p = { why, whylen };
	struct cnispec_result *r;
	const json_t *dns;
	int e;

	(void)v; /* every supported version reads the same way; "version" is checked per ip */
	if (whylen)
		why[0] = '\0';
	if (!json_is_object(obj))
		return bad(&p, path, "expected an object");
	r = cnispec_result_new();
	if (!r)
		return -ENOMEM;
	/* interfaces first: ips[].interface indexes them */
	e = parse_list(&p, path, obj, "interfaces", parse_iface, r);
	if (e == 0)
		e = parse_list(&p, path, obj, "ips", parse_ip, r);
	if (e == 0)
		e = parse_list(&p, path, obj, "routes", parse_route, r);
	dns = json_object_get(obj, "dns");
	if (e == 0 && dns && !json_is_null(dns)) {
		char sp[256];

		sub(sp, sizeof(sp), path, "dns", -1);
		e = cnispec_dns_from_json(dns, sp, &r->dns, why, whylen);
	}
	if (e < 0) {
		cnispec_result_free(r);
		return e;
	}
	*ret = r;
	return 0;
}
