/* SPDX-License-Identifier: Apache-2.0 */
/* The result model and its JSON in each version. What changes between versions (spec
 * history, SPEC.md "Released versions" and the 1.1.0 result type):
 *   0.3.0, 0.3.1, 0.4.0: ips[] carry "version" ("4" or "6");
 *   1.0.0: "version" removed;
 *   1.1.0: interfaces gain mtu, socketPath, pciID; routes gain mtu, advmss, priority, table,
 *          scope.
 * Older versions get what they can hold; the attributes they cannot are left out. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cnispec/cnispec.h"
#include "dispatch/dispatch.h"
#include "doc/doc.h"
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

int cnispec_result_add_interface(struct cnispec_result *r, const struct cnispec_interface *i,
				 size_t *ret_index)
{
	struct cnispec_interface c = { .mtu = i->mtu };
	int e;

	if (!i->name)
		return -EINVAL;
	if ((e = grow((void **)&r->interfaces, r->n_interfaces, sizeof(*r->interfaces))) < 0)
		return e;
	if (dup_opt(i->name, &c.name) < 0 || dup_opt(i->mac, &c.mac) < 0 ||
	    dup_opt(i->sandbox, &c.sandbox) < 0 || dup_opt(i->socket_path, &c.socket_path) < 0 ||
	    dup_opt(i->pci_id, &c.pci_id) < 0) {
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
	return !(d->nameservers && d->nameservers[0]) && !d->domain &&
	       !(d->search && d->search[0]) && !(d->options && d->options[0]);
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
		e = json_object_set_new(
			o, "version", json_string(ip->address.addr.family == AF_INET ? "4" : "6"));
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
			e = json_object_set_new(
				o, route_attrs[i].key,
				json_integer(*(const uint32_t *)((const char *)rt +
								 route_attrs[i].off)));
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
		e = json_object_set_new(o, "dns",
					dns_empty(&r->dns) ? json_object() : dns_json(&r->dns));
	if (e < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int cnispec_result_print(FILE *f, const struct cnispec_result *r, enum cnispec_version v)
{
	json_t *o = cnispec_result_to_json(r, v);
	int ret;

	if (!o)
		return -ENOMEM;
	ret = doc_json(f, o);
	json_decref(o);
	if (ret < 0)
		return ret;
	return fflush(f) != 0 ? -EIO : 0;
}

/* ---- from JSON -------------------------------------------------------------------------- */

/* Tables over src/dispatch, one per object. Unknown keys are allowed (results come from other
 * plugins and newer versions), and null reads as absent. */

static int read_str(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_strdup(c, path, v, false, t);
}

static int read_u32(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	long long u;
	int e = dispatch_int_range(c, path, v, 0, UINT32_MAX, &u);

	if (e == 0)
		*(uint32_t *)t = (uint32_t)u;
	return e;
}

static int read_addr(struct dispatch_ctx *c, const char *path, const json_t *v,
		     struct cnispec_addr *ret)
{
	if (!json_is_string(v))
		return dispatch_fail(c, path, "expected an IP address string");
	if (cnispec_addr_parse(json_string_value(v), ret) < 0)
		return dispatch_fail(c, path, "\"%s\" is not an IP address", json_string_value(v));
	return 0;
}

static int read_prefix(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	if (!json_is_string(v))
		return dispatch_fail(c, path, "expected an address in CIDR notation");
	if (cnispec_prefix_parse(json_string_value(v), t) < 0)
		return dispatch_fail(c, path, "\"%s\" is not an address in CIDR notation",
				     json_string_value(v));
	return 0;
}

static const struct dispatch_field iface_fields[] = {
	DISPATCH_FIELD("name", JSON_STRING, read_str, offsetof(struct cnispec_interface, name),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("mac", JSON_STRING, read_str, offsetof(struct cnispec_interface, mac),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("sandbox", JSON_STRING, read_str,
		       offsetof(struct cnispec_interface, sandbox), DISPATCH_NULLABLE),
	DISPATCH_FIELD("socketPath", JSON_STRING, read_str,
		       offsetof(struct cnispec_interface, socket_path), DISPATCH_NULLABLE),
	DISPATCH_FIELD("pciID", JSON_STRING, read_str, offsetof(struct cnispec_interface, pci_id),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("mtu", DISPATCH_ANY, read_u32, offsetof(struct cnispec_interface, mtu),
		       DISPATCH_NULLABLE),
	{},
};

static int read_iface(struct dispatch_ctx *c, const char *path, json_t *it, size_t idx,
		      void *userdata)
{
	struct cnispec_interface i = { 0 };
	int e = dispatch_run(c, path, it, iface_fields, DISPATCH_UNKNOWN_ALLOW, &i);

	(void)idx;
	if (e == 0 && !i.name)
		e = dispatch_fail(c, path, "has no \"name\"");
	if (e == 0)
		e = cnispec_result_add_interface(userdata, &i, NULL);
	iface_clear(&i);
	return e;
}

/* An ip entry, with what its checks need from the result read so far. */
struct ip_item {
	struct cnispec_ip ip;
	size_t n_interfaces;
};

static int read_ip_gateway(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct cnispec_ip *ip = &((struct ip_item *)t)->ip;
	int e = read_addr(c, path, v, &ip->gateway);

	if (e < 0)
		return e;
	if (ip->gateway.family != ip->address.addr.family)
		return dispatch_fail(c, path, "is not of the address's family");
	ip->has_gateway = true;
	return 0;
}

static int read_ip_interface(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct ip_item *it = t;

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) >= (json_int_t)it->n_interfaces)
		return dispatch_fail(c, path, "is not the index of an entry of \"interfaces\"");
	it->ip.interface = (int)json_integer_value(v);
	return 0;
}

/* "version" (0.3.x/0.4.0) is derived from the address; a contradiction is an error */
static int read_ip_version(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *want = ((struct ip_item *)t)->ip.address.addr.family == AF_INET ? "4" : "6";

	if (!json_is_string(v) || strcmp(json_string_value(v), want))
		return dispatch_fail(c, path, "does not match the address (expected \"%s\")", want);
	return 0;
}

/* address first: the rows below it check against it */
static const struct dispatch_field ip_fields[] = {
	DISPATCH_FIELD("address", DISPATCH_ANY, read_prefix, offsetof(struct ip_item, ip.address),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("gateway", DISPATCH_ANY, read_ip_gateway, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("interface", DISPATCH_ANY, read_ip_interface, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("version", DISPATCH_ANY, read_ip_version, 0, DISPATCH_NULLABLE),
	{},
};

static int read_ip(struct dispatch_ctx *c, const char *path, json_t *it, size_t idx, void *userdata)
{
	struct cnispec_result *r = userdata;
	struct ip_item item = { .ip = { .interface = -1 }, .n_interfaces = r->n_interfaces };
	int e = dispatch_run(c, path, it, ip_fields, DISPATCH_UNKNOWN_ALLOW, &item);

	(void)idx;
	return e < 0 ? e : cnispec_result_add_ip(r, &item.ip);
}

/* A route's destination is a network (Go's ParseCIDR gives libcni the masked one). */
static int read_route_dst(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct cnispec_prefix *p = t;
	unsigned bits;
	int e = read_prefix(c, path, v, p);

	if (e < 0)
		return e;
	bits = p->addr.family == AF_INET ? 32 : 128;
	for (unsigned b = p->len; b < bits; b++)
		p->addr.a[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
	return 0;
}

static int read_route_gw(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct cnispec_route *rt = t;
	int e = read_addr(c, path, v, &rt->gw);

	if (e < 0)
		return e;
	if (rt->gw.family != rt->dst.addr.family)
		return dispatch_fail(c, path, "is not of the destination's family");
	rt->has_gw = true;
	return 0;
}

/* 1.1.0's route attributes: a uint32 each, and its bit in rt->set. */
#define ROUTE_ATTR(member, bit)                                                                    \
	static int read_route_##member(struct dispatch_ctx *c, const char *path, json_t *v,        \
				       void *t)                                                    \
	{                                                                                          \
		struct cnispec_route *rt = t;                                                      \
                                                                                                   \
		rt->set |= (bit);                                                                  \
		return read_u32(c, path, v, &rt->member);                                          \
	}
ROUTE_ATTR(mtu, CNISPEC_ROUTE_MTU)
ROUTE_ATTR(advmss, CNISPEC_ROUTE_ADVMSS)
ROUTE_ATTR(priority, CNISPEC_ROUTE_PRIORITY)
ROUTE_ATTR(table, CNISPEC_ROUTE_TABLE)
ROUTE_ATTR(scope, CNISPEC_ROUTE_SCOPE)

/* dst first: gw checks against it */
static const struct dispatch_field route_fields[] = {
	DISPATCH_FIELD("dst", DISPATCH_ANY, read_route_dst, offsetof(struct cnispec_route, dst),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("gw", DISPATCH_ANY, read_route_gw, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("mtu", DISPATCH_ANY, read_route_mtu, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("advmss", DISPATCH_ANY, read_route_advmss, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("priority", DISPATCH_ANY, read_route_priority, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("table", DISPATCH_ANY, read_route_table, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("scope", DISPATCH_ANY, read_route_scope, 0, DISPATCH_NULLABLE),
	{},
};

static int read_route(struct dispatch_ctx *c, const char *path, json_t *it, size_t idx,
		      void *userdata)
{
	struct cnispec_route rt = { 0 };
	int e = dispatch_run(c, path, it, route_fields, DISPATCH_UNKNOWN_ALLOW, &rt);

	(void)idx;
	return e < 0 ? e : cnispec_result_add_route(userdata, &rt);
}

static int read_strv(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_strv(c, path, v, RESULT_MAX_ITEMS, false, t);
}

static int read_nameservers(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	char **ns = NULL;
	int e = read_strv(c, path, v, &ns);

	for (size_t i = 0; e == 0 && ns[i]; i++) {
		struct cnispec_addr a;
		char sp[DISPATCH_PATH_MAX];

		if (cnispec_addr_parse(ns[i], &a) < 0) {
			dispatch_path_idx(sp, sizeof(sp), path, i);
			e = dispatch_fail(c, sp, "\"%s\" is not an IP address", ns[i]);
		}
	}
	if (e < 0) {
		strv_free0(ns);
		return e;
	}
	*(char ***)t = ns;
	return 0;
}

static const struct dispatch_field dns_fields[] = {
	DISPATCH_FIELD("nameservers", JSON_ARRAY, read_nameservers,
		       offsetof(struct cnispec_dns, nameservers), DISPATCH_NULLABLE),
	DISPATCH_FIELD("domain", JSON_STRING, read_str, offsetof(struct cnispec_dns, domain),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("search", JSON_ARRAY, read_strv, offsetof(struct cnispec_dns, search),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("options", JSON_ARRAY, read_strv, offsetof(struct cnispec_dns, options),
		       DISPATCH_NULLABLE),
	{},
};

static int read_dns(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct cnispec_dns d = { 0 };
	int e = dispatch_run(c, path, v, dns_fields, DISPATCH_UNKNOWN_ALLOW, &d);

	if (e < 0) {
		cnispec_dns_clear(&d);
		return e;
	}
	*(struct cnispec_dns *)t = d;
	return 0;
}

int cnispec_dns_from_json(const json_t *obj, const char *path, struct cnispec_dns *ret, char *why,
			  size_t whylen)
{
	struct dispatch_ctx c = { .err = why, .errlen = whylen };

	/* the walker only reads the object: its json_t * is not const for the fn's sake */
	return read_dns(&c, path, (json_t *)obj, ret);
}

static int read_interfaces(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_array(c, path, v, RESULT_MAX_ITEMS, read_iface, t);
}

static int read_ips(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_array(c, path, v, RESULT_MAX_ITEMS, read_ip, t);
}

static int read_routes(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_array(c, path, v, RESULT_MAX_ITEMS, read_route, t);
}

/* interfaces first: ips[].interface indexes them */
static const struct dispatch_field result_fields[] = {
	DISPATCH_FIELD("interfaces", JSON_ARRAY, read_interfaces, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("ips", JSON_ARRAY, read_ips, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("routes", JSON_ARRAY, read_routes, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("dns", JSON_OBJECT, read_dns, offsetof(struct cnispec_result, dns),
		       DISPATCH_NULLABLE),
	{},
};

int cnispec_result_from_json(const json_t *obj, enum cnispec_version v, const char *path,
			     struct cnispec_result **ret, char *why, size_t whylen)
{
	struct dispatch_ctx c = { .err = why, .errlen = whylen };
	struct cnispec_result *r;
	int e;

	(void)v; /* every supported version reads the same way; "version" is checked per ip */
	if (whylen)
		why[0] = '\0';
	if (!json_is_object(obj))
		return dispatch_fail(&c, path, "expected an object, got %s",
				     dispatch_type_name(obj));
	r = cnispec_result_new();
	if (!r)
		return -ENOMEM;
	e = dispatch_run(&c, path, (json_t *)obj, result_fields, DISPATCH_UNKNOWN_ALLOW, r);
	if (e < 0) {
		cnispec_result_free(r);
		return e;
	}
	*ret = r;
	return 0;
}
