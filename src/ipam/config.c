/* The "ipam" block. whereabouts' keys work unchanged (seed 003's block needs only "type" and
 * its datastore changed), host-local's "ranges" too, and every key rdmak-ipam does not act on
 * is refused by name, with what to use instead: a key silently ignored is a setting the
 * operator believes in and does not have. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "ipam/internal.h"
#include "log/log.h"
#include "util/cleanup.h"

struct cp {
	struct cnispec_error *err;
	struct ipam_config *c;
};

#define BAD(p, ...) cnispec_fail((p)->err, -EINVAL, CNISPEC_E_CONFIG, "invalid IPAM configuration", __VA_ARGS__)

/* A JSON path for messages; cut short if it ever were longer than the buffer. */
__attribute__((format(printf, 3, 4)))
static void pathf(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, n, fmt, ap);
	va_end(ap);
}

/* Keys rdmak-ipam refuses, each with what to do instead. */
static const struct {
	const char *key;
	const char *hint;
} refused[] = {
	{ "kubernetes", "rdmak-ipam keeps no state in Kubernetes objects: remove it and use \"store\": \"file\" "
			"(a node-local range) or \"store\": \"etcd\" (cluster-wide)" },
	{ "configuration_path", "rdmak-ipam reads no flat file: put its keys in this ipam block" },
	{ "leader_lease_duration", "whereabouts' leader election: rdmak-ipam takes no cluster-wide lock; remove it" },
	{ "leader_renew_deadline", "whereabouts' leader election: rdmak-ipam takes no cluster-wide lock; remove it" },
	{ "leader_retry_period", "whereabouts' leader election: rdmak-ipam takes no cluster-wide lock; remove it" },
	{ "reconciler_cron_expression", "garbage collection comes from the runtime (CNI GC) or `rdmak ipam gc`" },
	{ "sleep_for_race", "a whereabouts test knob; remove it" },
	{ "node_slice_size", "for per-node ranges give each node its own range with \"store\": \"file\"; "
			     "the etcd store needs no slicing to be fast" },
	{ "addresses", "static addresses are not allocated: use the static IPAM plugin for them" },
	{ "resolvConf", "put the resolver settings in \"dns\"" },
	{ "etcd_username", "rdmak-ipam authenticates to etcd with client certificates: \"etcd\": {\"tls\": "
			   "{\"ca\", \"cert\", \"key\"}}" },
	{ "etcd_password", "rdmak-ipam authenticates to etcd with client certificates: \"etcd\": {\"tls\": "
			   "{\"ca\", \"cert\", \"key\"}}" },
};

static const char *const known[] = {
	"type", "range", "range_start", "range_end", "exclude", "gateway", "routes", "ipRanges", "ranges", "dns",
	"store", "dataDir", "etcd", "datastore", "etcd_host", "etcd_ca_cert_file", "etcd_cert_file", "etcd_key_file",
	"network_name", "enable_overlapping_ranges", "log_file", "log_level", "logFile", "logLevel",
};

/* Every key of obj must be in keys[] (n of them); refused[] keys get their hint. */
static int check_keys(struct cp *p, const char *path, const json_t *obj, const char *const *keys, size_t n)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		char sub[160], hint[200];
		bool ok = false;

		for (size_t i = 0; i < n && !ok; i++)
			ok = strcmp(k, keys[i]) == 0;
		if (ok)
			continue;
		pathf(sub, sizeof(sub), "%s.%s", path, k);
		for (size_t i = 0; i < ELEMENTSOF(refused); i++)
			if (strcmp(k, refused[i].key) == 0)
				return cnispec_fail_unsupported(p->err, sub, v, refused[i].hint);
		/* Go's decoders match keys in any case; we do not, but say which key was meant */
		for (size_t i = 0; i < n; i++)
			if (strcasecmp(k, keys[i]) == 0) {
				snprintf(hint, sizeof(hint), "did you mean \"%s\"?", keys[i]);
				return cnispec_fail_unsupported(p->err, sub, v, hint);
			}
		return cnispec_fail_unsupported(p->err, sub, v, NULL);
	}
	return 0;
}

static int get_str(struct cp *p, const char *path, const json_t *v, const char **ret)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return BAD(p, "%s: expected a string", path);
	*ret = json_string_value(v);
	return 0;
}

static int dup_str(struct cp *p, const char *path, const json_t *v, char **ret)
{
	const char *s;
	int r = get_str(p, path, v, &s);

	if (r < 0)
		return r;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int get_addr(struct cp *p, const char *path, const json_t *v, struct cnispec_addr *ret)
{
	const char *s;
	int r = get_str(p, path, v, &s);

	if (r < 0)
		return r;
	if (cnispec_addr_parse(s, ret) < 0)
		return BAD(p, "%s: \"%s\" is not an IP address", path, s);
	return 0;
}

static int get_cidr(struct cp *p, const char *path, const json_t *v, struct cnispec_prefix *ret)
{
	const char *s;
	int r = get_str(p, path, v, &s);

	if (r < 0)
		return r;
	if (cnispec_prefix_parse(s, ret) < 0)
		return BAD(p, "%s: \"%s\" is not a subnet in CIDR notation (like 10.56.0.0/24)", path, s);
	return 0;
}

static void warn(struct cp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct cp *p, const char *fmt, ...)
{
	char **w = realloc(p->c->warnings, (p->c->n_warnings + 1) * sizeof(char *));
	va_list ap;

	if (!w)
		return;
	p->c->warnings = w;
	va_start(ap, fmt);
	if (vasprintf(&w[p->c->n_warnings], fmt, ap) >= 0)
		p->c->n_warnings++;
	va_end(ap);
}

/* ---- one range ----------------------------------------------------------------------------- */

/* What a range element says, before it becomes a struct ipam_range. */
struct range_in {
	char path[64];
	struct cnispec_prefix subnet;
	bool has_start, has_end, has_gw;
	struct cnispec_addr start, end, gw;
	struct cnispec_prefix *excl;
	size_t n_excl;
	const char *k_start, *k_end; /* the key names, for messages */
};

/* exclude: CIDRs or bare addresses (a bare address is /32 or /128, as whereabouts has it). */
static int parse_exclude(struct cp *p, const char *path, const json_t *v, struct range_in *in)
{
	const json_t *it;
	size_t i;

	if (!json_is_array(v))
		return BAD(p, "%s: expected an array of CIDRs or addresses", path);
	in->excl = calloc(json_array_size(v) + 1, sizeof(*in->excl));
	if (!in->excl)
		return -ENOMEM;
	json_array_foreach(v, i, it) {
		char sp[96];
		const char *s;
		int r;

		pathf(sp, sizeof(sp), "%s[%zu]", path, i);
		if ((r = get_str(p, sp, it, &s)) < 0)
			return r;
		if (strchr(s, '/')) {
			if (cnispec_prefix_parse(s, &in->excl[i]) < 0)
				return BAD(p, "%s: \"%s\" is not a CIDR or an address", sp, s);
		} else {
			if (cnispec_addr_parse(s, &in->excl[i].addr) < 0)
				return BAD(p, "%s: \"%s\" is not a CIDR or an address", sp, s);
			in->excl[i].len = in->excl[i].addr.family == AF_INET ? 32 : 128;
		}
		if (in->excl[i].addr.family != in->subnet.addr.family)
			return BAD(p, "%s: \"%s\" is not of the range's address family", sp, s);
		in->n_excl++;
	}
	return 0;
}

/* whereabouts' range: "10.56.0.0/27", or "first-last/len" (the first-IP-CIDR form). */
static int parse_wb_range(struct cp *p, const char *path, const json_t *v, struct range_in *in)
{
	char first[CNISPEC_PREFIX_STRLEN], net[CNISPEC_PREFIX_STRLEN];
	const char *s, *dash;
	int r;

	if ((r = get_str(p, path, v, &s)) < 0)
		return r;
	dash = strchr(s, '-');
	if (dash) {
		size_t n = (size_t)(dash - s);

		if (n >= sizeof(first))
			return BAD(p, "%s: \"%s\" is not FIRST-LAST/LEN", path, s);
		memcpy(first, s, n);
		first[n] = '\0';
		if (cnispec_addr_parse(first, &in->start) < 0 || cnispec_prefix_parse(dash + 1, &in->subnet) < 0)
			return BAD(p, "%s: \"%s\" is not FIRST-LAST/LEN (like 192.168.2.225-192.168.2.230/28)", path, s);
		in->end = in->subnet.addr;
		in->has_start = in->has_end = true;
		in->k_start = in->k_end = "range";
		return 0;
	}
	if (cnispec_prefix_parse(s, &in->subnet) < 0)
		return BAD(p, "%s: \"%s\" is not a subnet in CIDR notation (like 10.56.0.0/24) or FIRST-LAST/LEN", path, s);
	{
		/* host bits set: whereabouts uses the whole subnet; say so, and how to start there */
		struct ipam_range tmp;

		if (ipam_range_build(&tmp, &in->subnet, NULL, NULL, NULL, NULL, 0, NULL) < 0)
			return -ENOMEM;
		if (!cnispec_addr_equal(&tmp.subnet.addr, &in->subnet.addr)) {
			char last[CNISPEC_PREFIX_STRLEN];

			cnispec_prefix_str(&tmp.subnet, net);
			warn(p, "%s: %s has host bits set; like whereabouts, rdmak-ipam uses all of %s "
				"(write %s-%s/%u for a range that starts there)",
			     path, s, net, cnispec_addr_str(&in->subnet.addr, first),
			     ipam_range_addr_str(&tmp, tmp.net | (~(ipam_u128)0 >> (128 - (tmp.bits - tmp.subnet.len))), last),
			     tmp.subnet.len);
		}
		ipam_range_clear(&tmp);
	}
	return 0;
}

/* The subnet's text with its host bits cleared, for messages. */
static const char *subnet_str(const struct cnispec_prefix *p, char *buf)
{
	unsigned bits = p->addr.family == AF_INET ? 32 : 128, host = bits - p->len;
	struct cnispec_prefix m = *p;
	ipam_u128 v = ipam_u128_from_addr(&p->addr);

	if (host)
		v &= host >= 128 ? 0 : ~((((ipam_u128)1) << host) - 1);
	ipam_addr_from_u128(p->addr.family, v, &m.addr);
	return cnispec_prefix_str(&m, buf);
}

/* The bounds and gateway lie in the subnet, start <= end. */
static int check_bounds(struct cp *p, struct range_in *in)
{
	char a[CNISPEC_PREFIX_STRLEN], b[CNISPEC_PREFIX_STRLEN];

	if (in->has_start && !ipam_prefix_contains(&in->subnet, &in->start))
		return BAD(p, "%s.%s: %s is not in %s", in->path, in->k_start, cnispec_addr_str(&in->start, a),
			   subnet_str(&in->subnet, b));
	if (in->has_end && !ipam_prefix_contains(&in->subnet, &in->end))
		return BAD(p, "%s.%s: %s is not in %s", in->path, in->k_end, cnispec_addr_str(&in->end, a),
			   subnet_str(&in->subnet, b));
	if (in->has_start && in->has_end && ipam_u128_from_addr(&in->start) > ipam_u128_from_addr(&in->end))
		return BAD(p, "%s.%s: %s comes after the last address %s", in->path, in->k_start,
			   cnispec_addr_str(&in->start, a), cnispec_addr_str(&in->end, b));
	if (in->has_gw && !ipam_prefix_contains(&in->subnet, &in->gw))
		return BAD(p, "%s.gateway: %s is not in %s", in->path, cnispec_addr_str(&in->gw, a),
			   subnet_str(&in->subnet, b));
	return 0;
}

static int range_from(struct cp *p, struct range_in *in, const char *network_name, struct ipam_range *out)
{
	int r = check_bounds(p, in);

	if (r < 0)
		return r;
	r = ipam_range_build(out, &in->subnet, in->has_start ? &in->start : NULL, in->has_end ? &in->end : NULL,
			     in->has_gw ? &in->gw : NULL, in->excl, in->n_excl, network_name);
	if (r < 0)
		return r;
	pathf(out->path, sizeof(out->path), "%s", in->path);
	return 0;
}

/* ---- whereabouts' range and ipRanges -------------------------------------------------------- */

/* One whereabouts range from obj's keys range, range_start, range_end, exclude (and, for an
 * ipRanges element, gateway). */
static int wb_range(struct cp *p, const char *path, const json_t *obj, bool top, struct range_in *in)
{
	static const char *const el_keys[] = { "range", "range_start", "range_end", "exclude", "gateway" };
	char sp[96];
	const json_t *v;
	int r;

	pathf(in->path, sizeof(in->path), "%s", path);
	if (!top) {
		if (!json_is_object(obj))
			return BAD(p, "%s: expected an object with \"range\"", path);
		if ((r = check_keys(p, path, obj, el_keys, ELEMENTSOF(el_keys))) < 0)
			return r;
	}
	pathf(sp, sizeof(sp), "%s.range", path);
	v = json_object_get(obj, "range");
	if (!v)
		return BAD(p, "%s: missing", sp);
	if ((r = parse_wb_range(p, sp, v, in)) < 0)
		return r;
	if ((v = json_object_get(obj, "range_start"))) {
		pathf(sp, sizeof(sp), "%s.range_start", path);
		if (in->has_start)
			return BAD(p, "%s: the range already gives its first address (FIRST-LAST/LEN)", sp);
		if ((r = get_addr(p, sp, v, &in->start)) < 0)
			return r;
		in->has_start = true;
		in->k_start = "range_start";
	}
	if ((v = json_object_get(obj, "range_end"))) {
		pathf(sp, sizeof(sp), "%s.range_end", path);
		if (in->has_end && in->k_end && !strcmp(in->k_end, "range"))
			return BAD(p, "%s: the range already gives its last address (FIRST-LAST/LEN)", sp);
		if ((r = get_addr(p, sp, v, &in->end)) < 0)
			return r;
		in->has_end = true;
		in->k_end = "range_end";
	}
	if ((v = json_object_get(obj, "exclude"))) {
		pathf(sp, sizeof(sp), "%s.exclude", path);
		if ((r = parse_exclude(p, sp, v, in)) < 0)
			return r;
	}
	if (!top && (v = json_object_get(obj, "gateway"))) {
		pathf(sp, sizeof(sp), "%s.gateway", path);
		if ((r = get_addr(p, sp, v, &in->gw)) < 0)
			return r;
		in->has_gw = true;
	}
	return 0;
}

static void range_in_clear(struct range_in *in)
{
	free(in->excl);
	in->excl = NULL;
}

static int add_set(struct cp *p, const char *path, size_t n)
{
	struct ipam_rangeset *sets;

	if (p->c->n_sets >= IPAM_MAX_RANGESETS)
		return BAD(p, "%s: more than %d ranges to take an address from", path, IPAM_MAX_RANGESETS);
	sets = realloc(p->c->sets, (p->c->n_sets + 1) * sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	p->c->sets = sets;
	sets[p->c->n_sets].r = calloc(n, sizeof(struct ipam_range));
	sets[p->c->n_sets].n = 0;
	if (!sets[p->c->n_sets].r)
		return -ENOMEM;
	p->c->n_sets++;
	return 0;
}

/* whereabouts: the top-level range (with the top-level gateway when its subnet holds it),
 * then each ipRanges element: a set of one range each. */
static int wb_ranges(struct cp *p, const json_t *ipam, const char *network_name)
{
	const json_t *ranges = json_object_get(ipam, "ipRanges"), *gwv = json_object_get(ipam, "gateway"), *it;
	struct cnispec_addr gw;
	bool gw_used = false;
	size_t i, total = 0;
	int r = 0;

	if (gwv && (r = get_addr(p, "ipam.gateway", gwv, &gw)) < 0)
		return r;
	if (ranges && !json_is_array(ranges))
		return BAD(p, "ipam.ipRanges: expected an array of objects");
	if (!json_object_get(ipam, "range")) {
		static const char *const only[] = { "range_start", "range_end", "exclude" };

		for (i = 0; i < ELEMENTSOF(only); i++)
			if (json_object_get(ipam, only[i]))
				return BAD(p, "ipam.%s: only with \"range\"", only[i]);
	}
	for (long e = json_object_get(ipam, "range") ? -1 : 0; ranges ? e < (long)json_array_size(ranges) : e < 0; e++) {
		struct range_in in = { .k_start = "range_start", .k_end = "range_end" };
		char path[64];

		if (e < 0)
			pathf(path, sizeof(path), "ipam");
		else
			pathf(path, sizeof(path), "ipam.ipRanges[%ld]", e);
		it = e < 0 ? ipam : json_array_get(ranges, (size_t)e);
		r = wb_range(p, path, it, e < 0, &in);
		if (r == 0 && !in.has_gw && gwv && ipam_prefix_contains(&in.subnet, &gw)) {
			in.gw = gw;
			in.has_gw = gw_used = true;
		}
		if (r == 0)
			r = add_set(p, path, 1);
		if (r == 0)
			r = range_from(p, &in, network_name, &p->c->sets[p->c->n_sets - 1].r[0]);
		if (r == 0)
			p->c->sets[p->c->n_sets - 1].n = 1;
		range_in_clear(&in);
		if (r < 0)
			return r;
		total++;
	}
	if (gwv && total && !gw_used) {
		char a[CNISPEC_PREFIX_STRLEN];

		return BAD(p, "ipam.gateway: %s is in none of the ranges' subnets", cnispec_addr_str(&gw, a));
	}
	return 0;
}

/* ---- host-local's ranges --------------------------------------------------------------------- */

static int hl_range(struct cp *p, const char *path, const json_t *obj, const char *network_name, struct ipam_range *out)
{
	static const char *const keys[] = { "subnet", "rangeStart", "rangeEnd", "gateway" };
	struct range_in in = { .k_start = "rangeStart", .k_end = "rangeEnd" };
	char sp[96];
	const json_t *v;
	int r;

	pathf(in.path, sizeof(in.path), "%s", path);
	if (!json_is_object(obj))
		return BAD(p, "%s: expected an object with \"subnet\"", path);
	if ((r = check_keys(p, path, obj, keys, ELEMENTSOF(keys))) < 0)
		return r;
	pathf(sp, sizeof(sp), "%s.subnet", path);
	if (!(v = json_object_get(obj, "subnet")))
		return BAD(p, "%s: missing", sp);
	if ((r = get_cidr(p, sp, v, &in.subnet)) < 0)
		return r;
	if ((v = json_object_get(obj, "rangeStart"))) {
		pathf(sp, sizeof(sp), "%s.rangeStart", path);
		if ((r = get_addr(p, sp, v, &in.start)) < 0)
			return r;
		in.has_start = true;
	}
	if ((v = json_object_get(obj, "rangeEnd"))) {
		pathf(sp, sizeof(sp), "%s.rangeEnd", path);
		if ((r = get_addr(p, sp, v, &in.end)) < 0)
			return r;
		in.has_end = true;
	}
	if ((v = json_object_get(obj, "gateway"))) {
		pathf(sp, sizeof(sp), "%s.gateway", path);
		if ((r = get_addr(p, sp, v, &in.gw)) < 0)
			return r;
		in.has_gw = true;
	} else if ((in.subnet.addr.family == AF_INET && in.subnet.len <= 30) ||
		   (in.subnet.addr.family == AF_INET6 && in.subnet.len <= 126)) {
		/* host-local's default gateway: the first address after the network's */
		struct ipam_range tmp;

		if (ipam_range_build(&tmp, &in.subnet, NULL, NULL, NULL, NULL, 0, NULL) < 0)
			return -ENOMEM;
		ipam_addr_from_u128(tmp.family, tmp.net + 1, &in.gw);
		in.has_gw = true;
		ipam_range_clear(&tmp);
	}
	return range_from(p, &in, network_name, out);
}

static bool overlap(const struct ipam_range *a, const struct ipam_range *b)
{
	return a->family == b->family && a->start <= b->end && b->start <= a->end;
}

static int hl_ranges(struct cp *p, const json_t *ipam, const char *network_name)
{
	const json_t *sets = json_object_get(ipam, "ranges"), *set, *it;
	size_t i, j;
	int r;

	if (!sets)
		return 0;
	if (!json_is_array(sets))
		return BAD(p, "ipam.ranges: expected an array of arrays of ranges");
	json_array_foreach(sets, i, set) {
		char path[64];
		struct ipam_rangeset *rs;

		pathf(path, sizeof(path), "ipam.ranges[%zu]", i);
		if (!json_is_array(set) || json_array_size(set) == 0)
			return BAD(p, "%s: expected a non-empty array of ranges", path);
		if (json_array_size(set) > 64)
			return BAD(p, "%s: more than 64 ranges", path);
		if ((r = add_set(p, path, json_array_size(set))) < 0)
			return r;
		rs = &p->c->sets[p->c->n_sets - 1];
		json_array_foreach(set, j, it) {
			char ep[64];

			pathf(ep, sizeof(ep), "%s[%zu]", path, j);
			if ((r = hl_range(p, ep, it, network_name, &rs->r[j])) < 0)
				return r;
			rs->n++;
			if (rs->r[j].family != rs->r[0].family)
				return BAD(p, "%s: not of the address family of %s", ep, rs->r[0].path);
			for (size_t k = 0; k < j; k++)
				if (overlap(&rs->r[k], &rs->r[j]))
					return BAD(p, "%s: overlaps %s", ep, rs->r[k].path);
		}
	}
	return 0;
}

/* ---- routes, dns ----------------------------------------------------------------------------- */

static int routes_dns(struct cp *p, const json_t *ipam)
{
	static const char *const route_keys[] = { "dst", "gw", "mtu", "advmss", "priority", "table", "scope" };
	const json_t *routes = json_object_get(ipam, "routes"), *dns = json_object_get(ipam, "dns"), *it;
	json_t *wrap;
	char why[256];
	size_t i;
	int r;

	if (routes && !json_is_array(routes))
		return BAD(p, "ipam.routes: expected an array of {\"dst\", \"gw\"}");
	json_array_foreach(routes, i, it) {
		char path[64];

		pathf(path, sizeof(path), "ipam.routes[%zu]", i);
		if (!json_is_object(it))
			return BAD(p, "%s: expected an object with \"dst\"", path);
		if ((r = check_keys(p, path, it, route_keys, ELEMENTSOF(route_keys))) < 0)
			return r;
	}
	if (dns) {
		static const char *const dns_keys[] = { "nameservers", "domain", "search", "options" };

		if (!json_is_object(dns))
			return BAD(p, "ipam.dns: expected an object");
		if ((r = check_keys(p, "ipam.dns", dns, dns_keys, ELEMENTSOF(dns_keys))) < 0)
			return r;
	}
	/* the result parser reads routes and dns exactly as a result carries them */
	wrap = json_pack("{s:O?, s:O?}", "routes", routes, "dns", dns);
	if (!wrap)
		return -ENOMEM;
	r = cnispec_result_from_json(wrap, CNISPEC_V_LATEST, "ipam", &p->c->routes_dns, why, sizeof(why));
	json_decref(wrap);
	if (r == -EINVAL)
		return BAD(p, "%s", why);
	return r;
}

/* ---- store --------------------------------------------------------------------------------- */

static int strv_from_array(struct cp *p, const char *path, const json_t *v, char ***ret, size_t *n)
{
	const json_t *it;
	size_t i;
	int r;

	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 64)
		return BAD(p, "%s: expected 1 to 64 strings", path);
	*ret = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(v, i, it) {
		char sp[96];

		pathf(sp, sizeof(sp), "%s[%zu]", path, i);
		if ((r = dup_str(p, sp, it, &(*ret)[i])) < 0)
			return r;
		(*n)++;
		if (!(*ret)[i][0])
			return BAD(p, "%s: empty", sp);
	}
	return 0;
}

static int etcd_block(struct cp *p, const json_t *v)
{
	static const char *const keys[] = { "endpoints", "prefix", "tls" };
	static const char *const tls_keys[] = { "ca", "cert", "key" };
	struct ipam_store_config *st = &p->c->store;
	const json_t *x, *tls;
	int r;

	if (!json_is_object(v))
		return BAD(p, "ipam.etcd: expected an object with \"endpoints\"");
	if ((r = check_keys(p, "ipam.etcd", v, keys, ELEMENTSOF(keys))) < 0)
		return r;
	if (!(x = json_object_get(v, "endpoints")))
		return BAD(p, "ipam.etcd.endpoints: missing");
	if ((r = strv_from_array(p, "ipam.etcd.endpoints", x, &st->endpoints, &st->n_endpoints)) < 0)
		return r;
	if ((x = json_object_get(v, "prefix"))) {
		if ((r = dup_str(p, "ipam.etcd.prefix", x, &st->prefix)) < 0)
			return r;
		if (st->prefix[0] != '/')
			return BAD(p, "ipam.etcd.prefix: \"%s\" does not start with '/'", st->prefix);
	}
	if ((tls = json_object_get(v, "tls"))) {
		if (!json_is_object(tls))
			return BAD(p, "ipam.etcd.tls: expected an object with \"ca\", \"cert\", \"key\"");
		if ((r = check_keys(p, "ipam.etcd.tls", tls, tls_keys, ELEMENTSOF(tls_keys))) < 0)
			return r;
		if ((x = json_object_get(tls, "ca")) && (r = dup_str(p, "ipam.etcd.tls.ca", x, &st->tls_ca)) < 0)
			return r;
		if ((x = json_object_get(tls, "cert")) && (r = dup_str(p, "ipam.etcd.tls.cert", x, &st->tls_cert)) < 0)
			return r;
		if ((x = json_object_get(tls, "key")) && (r = dup_str(p, "ipam.etcd.tls.key", x, &st->tls_key)) < 0)
			return r;
		if (!st->tls_cert != !st->tls_key)
			return BAD(p, "ipam.etcd.tls: \"cert\" and \"key\" go together");
	}
	return 0;
}

/* whereabouts' old etcd keys: etcd_host ("host:port" or a comma list) and the three files. */
static int etcd_legacy(struct cp *p, const json_t *ipam)
{
	struct ipam_store_config *st = &p->c->store;
	const json_t *v = json_object_get(ipam, "etcd_host");
	_cleanup_free_ char *hosts = NULL;
	char *save = NULL;
	int r;

	if (!v)
		return BAD(p, "ipam.datastore: \"etcd\" needs \"etcd_host\" (or use \"store\": \"etcd\" with "
			      "\"etcd\": {\"endpoints\": [...]})");
	if ((r = dup_str(p, "ipam.etcd_host", v, &hosts)) < 0)
		return r;
	st->endpoints = calloc(strlen(hosts) / 2 + 2, sizeof(char *));
	if (!st->endpoints)
		return -ENOMEM;
	for (char *t = strtok_r(hosts, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
		if (!(st->endpoints[st->n_endpoints++] = strdup(t)))
			return -ENOMEM;
	if (!st->n_endpoints)
		return BAD(p, "ipam.etcd_host: no endpoint in \"%s\"", json_string_value(v));
	if ((v = json_object_get(ipam, "etcd_ca_cert_file")) && (r = dup_str(p, "ipam.etcd_ca_cert_file", v, &st->tls_ca)) < 0)
		return r;
	if ((v = json_object_get(ipam, "etcd_cert_file")) && (r = dup_str(p, "ipam.etcd_cert_file", v, &st->tls_cert)) < 0)
		return r;
	if ((v = json_object_get(ipam, "etcd_key_file")) && (r = dup_str(p, "ipam.etcd_key_file", v, &st->tls_key)) < 0)
		return r;
	if (!st->tls_cert != !st->tls_key)
		return BAD(p, "ipam.etcd_cert_file: \"etcd_cert_file\" and \"etcd_key_file\" go together");
	return 0;
}

static int store(struct cp *p, const json_t *ipam)
{
	const json_t *st = json_object_get(ipam, "store"), *ds = json_object_get(ipam, "datastore");
	const json_t *etcd = json_object_get(ipam, "etcd"), *dir = json_object_get(ipam, "dataDir");
	static const char *const legacy[] = { "etcd_host", "etcd_ca_cert_file", "etcd_cert_file", "etcd_key_file" };
	const char *kind = "file", *s;
	bool legacy_used = false;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(legacy); i++)
		legacy_used |= json_object_get(ipam, legacy[i]) != NULL;
	if (st && ds)
		return BAD(p, "ipam.datastore: give \"store\" or whereabouts' \"datastore\", not both");
	if (ds) {
		if ((r = get_str(p, "ipam.datastore", ds, &s)) < 0)
			return r;
		if (!strcmp(s, "kubernetes"))
			return cnispec_fail_unsupported(p->err, "ipam.datastore", ds,
							"rdmak-ipam keeps no state in Kubernetes objects: use \"store\": \"file\" "
							"for a node-local range, or \"store\": \"etcd\" with \"etcd\": "
							"{\"endpoints\": [...]} for a cluster-wide one");
		if (strcmp(s, "etcd"))
			return BAD(p, "ipam.datastore: \"%s\" is not \"etcd\" (or use \"store\": \"file\")", s);
		if (etcd)
			return BAD(p, "ipam.etcd: with whereabouts' \"datastore\" use \"etcd_host\"; or use \"store\": \"etcd\"");
		p->c->store.kind = IPAM_STORE_ETCD;
		return etcd_legacy(p, ipam);
	}
	if (st && (r = get_str(p, "ipam.store", st, &kind)) < 0)
		return r;
	if (legacy_used)
		return BAD(p, "ipam.etcd_host: whereabouts' etcd keys go with \"datastore\": \"etcd\"; with \"store\" "
			      "use \"etcd\": {\"endpoints\", \"tls\"}");
	if (!strcmp(kind, "file")) {
		p->c->store.kind = IPAM_STORE_FILE;
		if (etcd)
			return BAD(p, "ipam.etcd: only with \"store\": \"etcd\"");
		if (dir) {
			if ((r = dup_str(p, "ipam.dataDir", dir, &p->c->store.data_dir)) < 0)
				return r;
			if (p->c->store.data_dir[0] != '/')
				return BAD(p, "ipam.dataDir: \"%s\" is not an absolute path", p->c->store.data_dir);
		}
		return 0;
	}
	if (!strcmp(kind, "etcd")) {
		p->c->store.kind = IPAM_STORE_ETCD;
		if (dir)
			return BAD(p, "ipam.dataDir: only with \"store\": \"file\"");
		if (!etcd)
			return BAD(p, "ipam.etcd: missing; \"store\": \"etcd\" needs \"etcd\": {\"endpoints\": [...]}");
		return etcd_block(p, etcd);
	}
	return BAD(p, "ipam.store: \"%s\" is not \"file\" or \"etcd\"", kind);
}

/* ---- the rest ----------------------------------------------------------------------------------- */

static int logging(struct cp *p, const json_t *ipam)
{
	const json_t *f = json_object_get(ipam, "logFile"), *f2 = json_object_get(ipam, "log_file");
	const json_t *l = json_object_get(ipam, "logLevel"), *l2 = json_object_get(ipam, "log_level");
	const char *s;
	int r;

	if (f && f2)
		return BAD(p, "ipam.log_file: give \"logFile\" or \"log_file\", not both");
	if (l && l2)
		return BAD(p, "ipam.log_level: give \"logLevel\" or \"log_level\", not both");
	if (f || f2) {
		const char *path = f ? "ipam.logFile" : "ipam.log_file";

		if ((r = dup_str(p, path, f ? f : f2, &p->c->log_file)) < 0)
			return r;
		if (p->c->log_file[0] != '/')
			return BAD(p, "%s: \"%s\" is not an absolute path", path, p->c->log_file);
	}
	if (l || l2) {
		const char *path = l ? "ipam.logLevel" : "ipam.log_level";

		if ((r = get_str(p, path, l ? l : l2, &s)) < 0)
			return r;
		if (log_level_from_string(s, &p->c->log_level) < 0)
			return BAD(p, "%s: \"%s\" is not error, warning, info or debug", path, s);
		p->c->has_log_level = true;
	}
	return 0;
}

static int parse(struct cp *p, const json_t *ipam, const char *network)
{
	const json_t *v;
	const char *network_name = NULL, *why;
	int r;

	if (!json_is_object(ipam))
		return BAD(p, "ipam: expected an object");
	if ((r = check_keys(p, "ipam", ipam, known, ELEMENTSOF(known))) < 0)
		return r;
	if ((v = json_object_get(ipam, "type")) && (r = get_str(p, "ipam.type", v, &why)) < 0)
		return r;
	if (!(p->c->network = strdup(network)))
		return -ENOMEM;
	if ((v = json_object_get(ipam, "network_name"))) {
		if ((r = get_str(p, "ipam.network_name", v, &network_name)) < 0)
			return r;
		if (!cnispec_network_name_valid(network_name, &why))
			return BAD(p, "ipam.network_name: \"%s\" %s", network_name, why);
		/* it prefixes pool names, which hold an IPv6 subnet too */
		if (strlen(network_name) > 48)
			return BAD(p, "ipam.network_name: \"%s\" is longer than 48 characters", network_name);
	}
	if ((v = json_object_get(ipam, "enable_overlapping_ranges"))) {
		if (!json_is_boolean(v))
			return BAD(p, "ipam.enable_overlapping_ranges: expected true or false");
		if (json_is_false(v))
			return cnispec_fail_unsupported(p->err, "ipam.enable_overlapping_ranges", v,
							"rdmak-ipam never hands out an address twice, whichever networks share "
							"its subnet; give each tenant its own \"network_name\" to keep them apart");
	}
	if ((r = wb_ranges(p, ipam, network_name)) < 0 || (r = hl_ranges(p, ipam, network_name)) < 0)
		return r;
	if (p->c->n_sets == 0)
		return BAD(p, "ipam: no range: give \"range\", \"ipRanges\" or \"ranges\"");
	if ((r = routes_dns(p, ipam)) < 0 || (r = store(p, ipam)) < 0)
		return r;
	return logging(p, ipam);
}

int ipam_config_parse(const json_t *ipam, const char *network, struct ipam_config **ret, struct cnispec_error *err)
{
	struct cp p = { .err = err };
	int r;

	p.c = calloc(1, sizeof(*p.c));
	if (!p.c)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = parse(&p, ipam, network);
	if (r < 0) {
		ipam_config_free(p.c);
		if (r == -ENOMEM)
			return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
		return r;
	}
	*ret = p.c;
	return 0;
}

void ipam_config_free(struct ipam_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_sets; i++) {
		for (size_t j = 0; j < c->sets[i].n; j++)
			ipam_range_clear(&c->sets[i].r[j]);
		free(c->sets[i].r);
	}
	free(c->sets);
	for (size_t i = 0; i < c->n_warnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	cnispec_result_free(c->routes_dns);
	ipam_store_config_clear(&c->store);
	free(c->network);
	free(c->log_file);
	free(c);
}

/* The plugin object of a configuration list that delegates to rdmak-ipam. */
static const json_t *find_in_list(const json_t *plugins)
{
	const json_t *it;
	size_t i;

	json_array_foreach(plugins, i, it) {
		const json_t *t = json_object_get(json_object_get(it, "ipam"), "type");

		if (json_is_string(t) && !strcmp(json_string_value(t), "rdmak-ipam"))
			return it;
	}
	return NULL;
}

int ipam_config_load(const char *buf, size_t len, struct ipam_config **ret, struct cnispec_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	const json_t *name, *plugin, *ipam;
	const char *why;
	int r;

	if (!root)
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE, "failed to decode the configuration",
				    "line %d column %d: %s", je.line, je.column, je.text);
	name = json_object_get(root, "name");
	plugin = json_is_array(json_object_get(root, "plugins")) ? find_in_list(json_object_get(root, "plugins")) : root;
	ipam = plugin ? json_object_get(plugin, "ipam") : NULL;
	if (!json_is_string(name) || !cnispec_network_name_valid(json_string_value(name), &why))
		r = cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
				 "name: %s", json_is_string(name) ? why : "missing (the network's name)");
	else if (!ipam)
		r = cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
				 "%s", plugin ? "ipam: missing" : "plugins: none has \"ipam\": {\"type\": \"rdmak-ipam\"}");
	else
		r = ipam_config_parse(ipam, json_string_value(name), ret, err);
	json_decref(root);
	return r;
}
