/* SPDX-License-Identifier: Apache-2.0 */
/* The "ipam" block. whereabouts' keys work unchanged (seed 003's block needs only "type" and
 * its datastore changed), host-local's "ranges" too, and every key rdmak-ipam does not act on
 * is refused by name, with what to use instead: a key silently ignored is a setting the
 * operator believes in and does not have.
 *
 * Each object is a table over src/dispatch (one row per key); what a row cannot say alone
 * (which keys go together, which store, the ranges' sets) is checked after the walk. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dispatch/dispatch.h"
#include "ipamconf/ipamconf.h"
#include "k8s/names.h"
#include "log/log.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"

/* The parse: the walker's context first, so that a row's function finds the rest. */
struct cp {
	struct dispatch_ctx d;
	char msg[CNISPEC_DETAILS_MAX];
	struct ipamconf *c;
	const char *network_name;
	unsigned flags; /* IPAMCONF_* */
};

static struct cp *CP(struct dispatch_ctx *d)
{
	return (struct cp *)d;
}

#define FAIL(p, path, ...) dispatch_fail(&(p)->d, (path), __VA_ARGS__)

static void add_warning(struct ipamconf *c, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void add_warning(struct ipamconf *c, const char *fmt, va_list ap)
{
	char **w = realloc(c->warnings, (c->n_warnings + 1) * sizeof(char *));

	if (!w)
		return;
	c->warnings = w;
	if (vasprintf(&w[c->n_warnings], fmt, ap) >= 0)
		c->n_warnings++;
}

static void warn(struct cp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct cp *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_warning(p->c, fmt, ap);
	va_end(ap);
}

static void warn_resolve(struct ipamconf *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn_resolve(struct ipamconf *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_warning(c, fmt, ap);
	va_end(ap);
}

/* ---- values -------------------------------------------------------------------------------- */

static int get_addr(struct dispatch_ctx *d, const char *path, const json_t *v,
		    struct cnispec_addr *ret)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (cnispec_addr_parse(s, ret) < 0)
		return dispatch_fail(d, path, "\"%s\" is not an IP address", s);
	return 0;
}

/* A string row copied into a char * (absolute path: a file the plugin opens). */
static int read_strdup(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_strdup(d, path, v, false, t);
}

static int read_abs_path(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	char **s = t;
	int r = dispatch_strdup(d, path, v, false, s);

	if (r == 0 && (*s)[0] != '/')
		return dispatch_fail(d, path, "\"%s\" is not an absolute path", *s);
	return r;
}

/* A key whose value another reader checks (routes and dns: the result parser). */
static int read_later(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return 0;
}

/* ---- one range ----------------------------------------------------------------------------- */

/* What a range element says, before it becomes a struct ipamconf_range. */
struct range_in {
	char path[64];
	struct cnispec_prefix subnet;
	bool has_subnet, has_start, has_end, has_gw;
	struct cnispec_addr start, end, gw;
	struct cnispec_prefix *excl;
	size_t n_excl;
	const char *k_start, *k_end; /* the key names, for messages */
};

/* A /0 "range" is the whole family: its addresses would go out as 0.0.0.1/0, a prefix that
 * puts every destination on the link. host-local refuses /31, /32, /127 and /128 as too
 * small; rdmak-ipam hands those out (RFC 3021, RFC 6164, a single address), docs/ipam.md. */
static int subnet_ok(struct dispatch_ctx *d, const char *path, const char *s,
		     const struct cnispec_prefix *p)
{
	if (p->len == 0)
		return dispatch_fail(
			d, path,
			"\"%s\" is the whole address family: give a subnet (a /0 would hand out "
			"addresses that put every destination on the link)",
			s);
	return 0;
}

/* whereabouts reads an IPv4 address's parts with leading zeros as decimal ("00192.00168.01.5"
 * is 192.168.1.5: its config tests say so); inet_pton() refuses them. The text of s (n bytes,
 * an address or ADDR/LEN) with those zeros removed, into buf; s unchanged when it is not a
 * dotted quad of digits. */
static const char *wb_unzero(const char *s, size_t n, char *buf, size_t len)
{
	size_t o = 0, digits = 0, dots = 0, i;

	for (i = 0; i < n && s[i] != '/'; i++) {
		if (s[i] == '.') {
			if (!digits)
				break;
			dots++;
			digits = 0;
		} else if (s[i] >= '0' && s[i] <= '9') {
			/* a zero that starts a part and is not its last digit goes */
			if (s[i] == '0' && !digits && i + 1 < n && s[i + 1] >= '0' &&
			    s[i + 1] <= '9')
				continue;
			digits++;
		} else {
			break;
		}
		if (o + 1 >= len)
			break;
		buf[o++] = s[i];
	}
	if (dots != 3 || !digits || (i < n && s[i] != '/') || o + (n - i) >= len) {
		snprintf(buf, len, "%.*s", (int)n, s);
		return buf;
	}
	snprintf(buf + o, len - o, "%.*s", (int)(n - i), s + i);
	return buf;
}

static int wb_addr(struct dispatch_ctx *d, const char *path, const json_t *v,
		   struct cnispec_addr *ret)
{
	char buf[CNISPEC_PREFIX_STRLEN];
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (cnispec_addr_parse(wb_unzero(s, strlen(s), buf, sizeof(buf)), ret) < 0)
		return dispatch_fail(d, path, "\"%s\" is not an IP address", s);
	return 0;
}

/* whereabouts' range: "10.56.0.0/27", or "first-last/len" (the first-IP-CIDR form). */
static int wb_range(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	char first[CNISPEC_PREFIX_STRLEN], net[CNISPEC_PREFIX_STRLEN], last[CNISPEC_PREFIX_STRLEN];
	struct range_in *in = t;
	struct ipamconf_range tmp;
	const char *s, *dash;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	dash = strchr(s, '-');
	if (dash) {
		size_t n = (size_t)(dash - s);

		if (n >= sizeof(first))
			return dispatch_fail(d, path, "\"%s\" is not FIRST-LAST/LEN", s);
		wb_unzero(s, n, first, sizeof(first));
		if (cnispec_addr_parse(first, &in->start) < 0 ||
		    cnispec_prefix_parse(wb_unzero(dash + 1, strlen(dash + 1), net, sizeof(net)),
					 &in->subnet) < 0)
			return dispatch_fail(
				d, path,
				"\"%s\" is not FIRST-LAST/LEN (like 192.168.2.225-192.168.2.230/28)",
				s);
		in->end = in->subnet.addr;
		in->has_subnet = in->has_start = in->has_end = true;
		in->k_start = in->k_end = "range";
		return subnet_ok(d, path, s, &in->subnet);
	}
	if (cnispec_prefix_parse(wb_unzero(s, strlen(s), net, sizeof(net)), &in->subnet) < 0)
		return dispatch_fail(
			d, path,
			"\"%s\" is not a subnet in CIDR notation (like 10.56.0.0/24) or FIRST-LAST/LEN",
			s);
	in->has_subnet = true;
	if ((r = subnet_ok(d, path, s, &in->subnet)) < 0)
		return r;
	/* host bits set: whereabouts uses the whole subnet; say so, and how to start there */
	if (ipamconf_range_build(&tmp, &in->subnet, NULL, NULL, NULL, NULL, 0, NULL) < 0)
		return -ENOMEM;
	if (!cnispec_addr_equal(&tmp.subnet.addr, &in->subnet.addr))
		warn(CP(d),
		     "%s: %s has host bits set; like whereabouts, rdmak-ipam uses all of %s "
		     "(write %s-%s/%u for a range that starts there)",
		     path, s, cnispec_prefix_str(&tmp.subnet, net),
		     cnispec_addr_str(&in->subnet.addr, first),
		     ipamconf_range_addr_str(
			     &tmp,
			     tmp.net | (~(ipamconf_u128)0 >> (128 - (tmp.bits - tmp.subnet.len))),
			     last),
		     tmp.subnet.len);
	ipamconf_range_clear(&tmp);
	return 0;
}

static int wb_start(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;
	int r;

	if (!in->has_subnet)
		return dispatch_fail(d, path, "only with \"range\"");
	if (in->has_start)
		return dispatch_fail(d, path,
				     "the range already gives its first address (FIRST-LAST/LEN)");
	if ((r = wb_addr(d, path, v, &in->start)) < 0)
		return r;
	in->has_start = true;
	in->k_start = "range_start";
	return 0;
}

static int wb_end(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;
	int r;

	if (!in->has_subnet)
		return dispatch_fail(d, path, "only with \"range\"");
	if (in->has_end)
		return dispatch_fail(d, path,
				     "the range already gives its last address (FIRST-LAST/LEN)");
	if ((r = wb_addr(d, path, v, &in->end)) < 0)
		return r;
	in->has_end = true;
	in->k_end = "range_end";
	return 0;
}

/* exclude: CIDRs or bare addresses (a bare address is /32 or /128, as whereabouts has it). */
static int exclude_one(struct dispatch_ctx *d, const char *path, json_t *v, size_t i,
		       void *userdata)
{
	struct range_in *in = userdata;
	struct cnispec_prefix *x = &in->excl[i];
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (strchr(s, '/') ? cnispec_prefix_parse(s, x) < 0 : cnispec_addr_parse(s, &x->addr) < 0)
		return dispatch_fail(d, path, "\"%s\" is not a CIDR or an address", s);
	if (!strchr(s, '/'))
		x->len = x->addr.family == AF_INET ? 32 : 128;
	if (x->addr.family != in->subnet.addr.family)
		return dispatch_fail(d, path, "\"%s\" is not of the range's address family", s);
	in->n_excl++;
	return 0;
}

static int wb_exclude(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;

	if (!in->has_subnet)
		return dispatch_fail(d, path, "only with \"range\"");
	in->excl = calloc(json_array_size(v) + 1, sizeof(*in->excl));
	if (!in->excl)
		return -ENOMEM;
	return dispatch_array(d, path, v, 0, exclude_one, in);
}

static int range_gateway(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;
	int r = get_addr(d, path, v, &in->gw);

	in->has_gw = r == 0;
	return r;
}

/* host-local's subnet, rangeStart, rangeEnd. */
static int hl_subnet(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	char net[CNISPEC_PREFIX_STRLEN];
	struct range_in *in = t;
	struct ipamconf_range tmp;
	bool host_bits;
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (cnispec_prefix_parse(s, &in->subnet) < 0)
		return dispatch_fail(
			d, path, "\"%s\" is not a subnet in CIDR notation (like 10.56.0.0/24)", s);
	in->has_subnet = true;
	if ((r = subnet_ok(d, path, s, &in->subnet)) < 0)
		return r;
	/* host-local refuses it (range.go's Canonicalize): its rangeStart says where to start */
	if (ipamconf_range_build(&tmp, &in->subnet, NULL, NULL, NULL, NULL, 0, NULL) < 0)
		return -ENOMEM;
	host_bits = !cnispec_addr_equal(&tmp.subnet.addr, &in->subnet.addr);
	cnispec_addr_str(&tmp.subnet.addr, net);
	ipamconf_range_clear(&tmp);
	if (host_bits)
		return dispatch_fail(
			d, path,
			"\"%s\" has host bits set: for a subnet mask of length %u the network address "
			"is %s (write %s/%u, and \"rangeStart\" for where to start)",
			s, in->subnet.len, net, net, in->subnet.len);
	return 0;
}

static int hl_start(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;
	int r = get_addr(d, path, v, &in->start);

	in->has_start = r == 0;
	return r;
}

static int hl_end(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct range_in *in = t;
	int r = get_addr(d, path, v, &in->end);

	in->has_end = r == 0;
	return r;
}

/* whereabouts' range keys, at the top of the block and in each ipRanges element */
#define WB_RANGE_ROWS(off, range_flags)                                                            \
	DISPATCH_FIELD("range", JSON_STRING, wb_range, (off), (range_flags)),                      \
		DISPATCH_FIELD("range_start", JSON_STRING, wb_start, (off), 0),                    \
		DISPATCH_FIELD("range_end", JSON_STRING, wb_end, (off), 0),                        \
		DISPATCH_FIELD("exclude", JSON_ARRAY, wb_exclude, (off), 0)

static const struct dispatch_field ip_range_fields[] = {
	WB_RANGE_ROWS(0, DISPATCH_MANDATORY),
	DISPATCH_FIELD("gateway", JSON_STRING, range_gateway, 0, 0),
	{},
};

static const struct dispatch_field hl_range_fields[] = {
	DISPATCH_FIELD("subnet", JSON_STRING, hl_subnet, 0, DISPATCH_MANDATORY),
	DISPATCH_FIELD("rangeStart", JSON_STRING, hl_start, 0, 0),
	DISPATCH_FIELD("rangeEnd", JSON_STRING, hl_end, 0, 0),
	DISPATCH_FIELD("gateway", JSON_STRING, range_gateway, 0, 0),
	/* rdmak's (whereabouts' key, in host-local's shape): what `rdmak convert` carries a
	 * Spiderpool pool's excludeIPs and its addresses in use into */
	DISPATCH_FIELD("exclude", JSON_ARRAY, wb_exclude, 0, 0),
	{},
};

/* The subnet's text with its host bits cleared, for messages. */
static const char *subnet_str(const struct cnispec_prefix *p, char *buf)
{
	unsigned bits = p->addr.family == AF_INET ? 32 : 128, host = bits - p->len;
	struct cnispec_prefix m = *p;
	ipamconf_u128 v = ipamconf_u128_from_addr(&p->addr);

	if (host)
		v &= host >= 128 ? 0 : ~((((ipamconf_u128)1) << host) - 1);
	ipamconf_addr_from_u128(p->addr.family, v, &m.addr);
	return cnispec_prefix_str(&m, buf);
}

/* The bounds and gateway lie in the subnet, start <= end. */
static int check_bounds(struct cp *p, struct range_in *in)
{
	char a[CNISPEC_PREFIX_STRLEN], b[CNISPEC_PREFIX_STRLEN], path[96];

	if (in->has_start && !ipamconf_prefix_contains(&in->subnet, &in->start)) {
		dispatch_path_key(path, sizeof(path), in->path, in->k_start);
		return FAIL(p, path, "%s is not in %s", cnispec_addr_str(&in->start, a),
			    subnet_str(&in->subnet, b));
	}
	if (in->has_end && !ipamconf_prefix_contains(&in->subnet, &in->end)) {
		dispatch_path_key(path, sizeof(path), in->path, in->k_end);
		return FAIL(p, path, "%s is not in %s", cnispec_addr_str(&in->end, a),
			    subnet_str(&in->subnet, b));
	}
	if (in->has_start && in->has_end &&
	    ipamconf_u128_from_addr(&in->start) > ipamconf_u128_from_addr(&in->end)) {
		dispatch_path_key(path, sizeof(path), in->path, in->k_start);
		return FAIL(p, path, "%s comes after the last address %s",
			    cnispec_addr_str(&in->start, a), cnispec_addr_str(&in->end, b));
	}
	if (in->has_gw && !ipamconf_prefix_contains(&in->subnet, &in->gw)) {
		dispatch_path_key(path, sizeof(path), in->path, "gateway");
		return FAIL(p, path, "%s is not in %s", cnispec_addr_str(&in->gw, a),
			    subnet_str(&in->subnet, b));
	}
	return 0;
}

/* An exclusion that holds no address of [start, end] excludes nothing: most likely a typo or a
 * range edited without its exclusions; accepted (whereabouts accepts it), and said. */
static void warn_idle_excludes(struct cp *p, const struct range_in *in,
			       const struct ipamconf_range *out)
{
	for (size_t i = 0; i < in->n_excl; i++) {
		const struct cnispec_prefix *x = &in->excl[i];
		unsigned host = out->bits - x->len;
		ipamconf_u128 m =
			host >= 128 ? ~(ipamconf_u128)0 : (((ipamconf_u128)1 << host) - 1);
		ipamconf_u128 lo = ipamconf_u128_from_addr(&x->addr) & ~m, hi = lo | m;
		char a[CNISPEC_PREFIX_STRLEN], b[CNISPEC_PREFIX_STRLEN], e[CNISPEC_PREFIX_STRLEN],
			path[96];

		if (hi >= out->start && lo <= out->end)
			continue;
		dispatch_path_key(path, sizeof(path), in->path, "exclude");
		warn(p, "%s[%zu]: %s is outside the range %s-%s: it excludes nothing", path, i,
		     cnispec_prefix_str(x, a), ipamconf_range_addr_str(out, out->start, b),
		     ipamconf_range_addr_str(out, out->end, e));
	}
}

static int range_from(struct cp *p, struct range_in *in, struct ipamconf_range *out)
{
	int r = check_bounds(p, in);

	if (r < 0)
		return r;
	r = ipamconf_range_build(out, &in->subnet, in->has_start ? &in->start : NULL,
				 in->has_end ? &in->end : NULL, in->has_gw ? &in->gw : NULL,
				 in->excl, in->n_excl, p->network_name);
	if (r < 0)
		return r;
	snprintf(out->path, sizeof(out->path), "%s", in->path);
	warn_idle_excludes(p, in, out);
	return 0;
}

static void range_in_clear(struct range_in *in)
{
	free(in->excl);
	in->excl = NULL;
}

static int add_set(struct cp *p, const char *path, size_t n)
{
	struct ipamconf_rangeset *sets;

	if (p->c->n_sets >= IPAMCONF_MAX_RANGESETS)
		return FAIL(p, path, "more than %d ranges to take an address from",
			    IPAMCONF_MAX_RANGESETS);
	sets = realloc(p->c->sets, (p->c->n_sets + 1) * sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	p->c->sets = sets;
	sets[p->c->n_sets].r = calloc(n, sizeof(struct ipamconf_range));
	sets[p->c->n_sets].n = 0;
	if (!sets[p->c->n_sets].r)
		return -ENOMEM;
	p->c->n_sets++;
	return 0;
}

/* ---- the block ------------------------------------------------------------------------------- */

/* What the ipam object's rows fill; the rest of the parse reads it. */
struct top {
	struct range_in wb; /* whereabouts' top-level range */
	struct cnispec_addr gw;
	json_t *ip_ranges, *ranges, *routes, *dns;
	json_t *etcd;	       /* IPAMCONF_LEGACY: the object of the shape before */
	const char *etcd_name; /* "etcd": "NAME" */
	const char *type, *store, *datastore, *etcd_host, *etcd_ca, *etcd_cert, *etcd_key;
	char *data_dir; /* moved into the store config when the store is the file */
	long long block_size, block_grace, lease_ttl; /* -1: not given */
	const char *node_name;
	const char *log_file, *log_file2, *log_level, *log_level2;
};

static int read_network_name(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s, *why;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!cnispec_network_name_valid(s, &why))
		return dispatch_fail(d, path, "\"%s\" %s", s, why);
	/* it prefixes pool names, which hold an IPv6 subnet too */
	if (strlen(s) > 48)
		return dispatch_fail(d, path, "\"%s\" is longer than 48 characters", s);
	CP(d)->network_name = s;
	return 0;
}

static int read_overlapping(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	if (json_is_false(v))
		return dispatch_refuse(
			d, path, v,
			"rdmak-ipam never hands out an address twice, whichever networks "
			"share its subnet; give each tenant its own \"network_name\" to keep them apart");
	return 0;
}

static int read_gateway(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return get_addr(d, path, v, t);
}

static int read_store(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r == 0 && strcmp(s, "file") && strcmp(s, "etcd"))
		return dispatch_fail(d, path, "\"%s\" is not \"file\" or \"etcd\"", s);
	if (r == 0)
		*(const char **)t = s;
	return r;
}

/* whereabouts' cluster-wide store is Kubernetes objects; rdmak-ipam's is etcd. */
#define KUBE_STORE                                                                                 \
	"rdmak-ipam keeps no state in Kubernetes objects: replace \"datastore\" and "              \
	"\"kubernetes\" with \"store\": \"etcd\", \"etcd\": \"NAME\" (one of the node's etcd "     \
	"stores, " NODECONF_FILE                                                                   \
	" \"etcd\") for a cluster-wide range (or \"store\": \"file\" for "                         \
	"a range of this node only)"

/* The etcd store's address, prefix and certificates are the node's (nodeconf.h): a network
 * config is a namespace user's, and rdmak-ipam runs as root with the node's client certificate.
 * A network names one of the node's stores; the keys of the shape before are refused saying so
 * (taken by DEL and GC only, to find the node's store of those endpoints). */
#define ETCD_NODE                                                                                   \
	"belongs to the node, not to a network: the node's CNI settings (" NODECONF_FILE            \
	" \"etcd\", docs/ipam.md) hold it; write \"etcd\": \"NAME\" naming one of the node's etcd " \
	"stores"
#define WB_ETCD                                                                                    \
	"whereabouts' etcd address and certificate files are the node's, not a network's: the "    \
	"node's CNI settings (" NODECONF_FILE " \"etcd\", docs/ipam.md) hold them; write "         \
	"\"store\": \"etcd\", \"etcd\": \"NAME\" naming one of the node's etcd stores"

static const struct dispatch_field etcd_refused_fields[] = {
	DISPATCH_REFUSE("endpoints", "the etcd store's address " ETCD_NODE),
	DISPATCH_REFUSE("prefix", "the etcd store's prefix " ETCD_NODE),
	DISPATCH_REFUSE("tls", "the etcd store's certificate, key and CA " ETCD_NODE),
	{},
};

/* "etcd": "NAME", one of the node's stores; the object of the shape before only where
 * IPAMCONF_LEGACY takes it. */
static int read_etcd(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct top *top = t;
	const char *why = NULL;
	int r;

	if (json_is_string(v)) {
		if ((r = dispatch_string(d, path, v, true, &top->etcd_name)) < 0)
			return r;
		if (!k8s_dns1123_label(top->etcd_name, &why))
			return dispatch_fail(d, path, "\"%.64s\" is not a store's name: %s",
					     top->etcd_name, why);
		return 0;
	}
	if (!json_is_object(v))
		return dispatch_fail(d, path,
				     "expected the name of one of the node's etcd stores, got %s",
				     dispatch_type_name(v));
	if (CP(d)->flags & IPAMCONF_LEGACY) {
		top->etcd = v;
		return 0;
	}
	if ((r = dispatch_run(d, path, v, etcd_refused_fields, DISPATCH_UNKNOWN_REFUSE, t)) < 0)
		return r;
	return dispatch_fail(d, path, "expected the name of one of the node's etcd stores");
}

/* etcd_host, etcd_ca_cert_file, etcd_cert_file, etcd_key_file */
static int read_wb_etcd(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	if (!(CP(d)->flags & IPAMCONF_LEGACY))
		return dispatch_refuse(d, path, v, WB_ETCD);
	return dispatch_string(d, path, v, false, t);
}

static int read_datastore(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!strcmp(s, "kubernetes"))
		return dispatch_refuse(d, path, v, KUBE_STORE);
	if (strcmp(s, "etcd"))
		return dispatch_fail(d, path, "\"%s\" is not \"etcd\" (or use \"store\": \"file\")",
				     s);
	*(const char **)t = s;
	return 0;
}

#define LEADER "whereabouts' leader election: rdmak-ipam takes no cluster-wide lock; remove it"
/* nv-ipam's perNodeBlockSize: a node takes this many addresses of the pool at a time. */
static int read_block_size(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_int_range(d, path, v, 1, 1 << 20, t);
}

static int read_block_grace(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_int_range(d, path, v, 0, 7 * 24 * 3600, t);
}

/* etcd raises a TTL below its minimum (1.5 election timeouts, 1.5 s by default) to it */
static int read_lease_ttl(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_int_range(d, path, v, 2, 7 * 24 * 3600, t);
}

/* A Kubernetes node name (a DNS subdomain): it becomes part of etcd keys' values and of paths. */
static int read_node_name(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char **ret = t;
	int r = dispatch_string(d, path, v, true, ret);

	if (r == 0 && !ipamconf_node_name_valid(*ret))
		return dispatch_fail(
			d, path,
			"\"%s\" is not a node name (lower-case letters, digits, '-' and '.', "
			"at most 253)",
			*ret);
	return r;
}

#define ETCD_AUTH                                                                                  \
	"rdmak-ipam authenticates to etcd with the node's client certificate: the node's etcd "    \
	"store (" NODECONF_FILE " \"etcd\") names it"
#define TOP(m) offsetof(struct top, m)
#define HL_LEGACY                                                                                  \
	"host-local's legacy top-level range: write it as \"ranges\": [[{\"subnet\", "             \
	"\"rangeStart\", \"rangeEnd\", \"gateway\"}]] (whereabouts' \"range\" also works)"

static const struct dispatch_field ipam_fields[] = {
	DISPATCH_FIELD("type", JSON_STRING, NULL, TOP(type), 0),
	DISPATCH_FIELD("network_name", JSON_STRING, read_network_name, 0, 0),
	DISPATCH_FIELD("enable_overlapping_ranges", DISPATCH_BOOL, read_overlapping, 0, 0),
	WB_RANGE_ROWS(TOP(wb), 0),
	DISPATCH_FIELD("gateway", JSON_STRING, read_gateway, TOP(gw), 0),
	DISPATCH_FIELD("ipRanges", JSON_ARRAY, NULL, TOP(ip_ranges), 0),
	DISPATCH_FIELD("ranges", JSON_ARRAY, NULL, TOP(ranges), 0),
	DISPATCH_FIELD("routes", JSON_ARRAY, NULL, TOP(routes), 0),
	DISPATCH_FIELD("dns", JSON_OBJECT, NULL, TOP(dns), 0),
	DISPATCH_FIELD("store", JSON_STRING, read_store, TOP(store), 0),
	DISPATCH_FIELD("datastore", JSON_STRING, read_datastore, TOP(datastore), 0),
	DISPATCH_FIELD("dataDir", JSON_STRING, read_abs_path, TOP(data_dir), 0),
	DISPATCH_FIELD("perNodeBlockSize", JSON_INTEGER, read_block_size, TOP(block_size), 0),
	DISPATCH_FIELD("blockReleaseAfter", JSON_INTEGER, read_block_grace, TOP(block_grace), 0),
	DISPATCH_FIELD("nodeLeaseTTL", JSON_INTEGER, read_lease_ttl, TOP(lease_ttl), 0),
	DISPATCH_FIELD("nodeName", JSON_STRING, read_node_name, TOP(node_name), 0),
	DISPATCH_FIELD("etcd", DISPATCH_ANY, read_etcd, 0, 0),
	DISPATCH_FIELD("logFile", JSON_STRING, NULL, TOP(log_file), 0),
	DISPATCH_FIELD("log_file", JSON_STRING, NULL, TOP(log_file2), 0),
	DISPATCH_FIELD("logLevel", JSON_STRING, NULL, TOP(log_level), 0),
	DISPATCH_FIELD("log_level", JSON_STRING, NULL, TOP(log_level2), 0),
	/* whereabouts' keys rdmak-ipam does not act on, each with what to do instead */
	DISPATCH_REFUSE(
		"kubernetes",
		"rdmak-ipam keeps no state in Kubernetes objects: remove it and use \"store\": "
		"\"file\" (a node-local range) or \"store\": \"etcd\", \"etcd\": \"NAME\" "
		"(cluster-wide, one of the node's etcd stores)"),
	DISPATCH_REFUSE("configuration_path",
			"rdmak-ipam reads no flat file: put its keys in this ipam block"),
	DISPATCH_REFUSE("leader_lease_duration", LEADER),
	DISPATCH_REFUSE("leader_renew_deadline", LEADER),
	DISPATCH_REFUSE("leader_retry_period", LEADER),
	DISPATCH_REFUSE("reconciler_cron_expression",
			"garbage collection comes from the runtime (CNI GC) or "
			"`rdmak ipam gc`"),
	DISPATCH_REFUSE("sleep_for_race", "a whereabouts test knob; remove it"),
	DISPATCH_REFUSE(
		"node_slice_size",
		"for per-node ranges give each node its own range with \"store\": \"file\"; "
		"the etcd store needs no slicing to be fast"),
	DISPATCH_REFUSE("addresses",
			"static addresses are not allocated: use the static IPAM plugin for them"),
	DISPATCH_REFUSE("resolvConf", "put the resolver settings in \"dns\""),
	/* host-local's legacy form (its range keys at the top of the block) */
	DISPATCH_REFUSE("subnet", HL_LEGACY),
	DISPATCH_REFUSE("rangeStart", HL_LEGACY),
	DISPATCH_REFUSE("rangeEnd", HL_LEGACY),
	DISPATCH_REFUSE("etcd_username", ETCD_AUTH),
	DISPATCH_REFUSE("etcd_password", ETCD_AUTH),
	/* whereabouts' etcd keys: refused but where IPAMCONF_LEGACY takes them (after the keys
	 * refused whatever the command, so that a config has one refusal whichever it is) */
	DISPATCH_FIELD("etcd_host", DISPATCH_ANY, read_wb_etcd, TOP(etcd_host), 0),
	DISPATCH_FIELD("etcd_ca_cert_file", DISPATCH_ANY, read_wb_etcd, TOP(etcd_ca), 0),
	DISPATCH_FIELD("etcd_cert_file", DISPATCH_ANY, read_wb_etcd, TOP(etcd_cert), 0),
	DISPATCH_FIELD("etcd_key_file", DISPATCH_ANY, read_wb_etcd, TOP(etcd_key), 0),
	{},
};

/* ---- ranges ---------------------------------------------------------------------------------- */

/* One range from a parsed element into a new set of one (whereabouts) with the block's
 * gateway when the element has none and its subnet holds it. */
static int wb_set(struct cp *p, struct range_in *in, const struct cnispec_addr *gw, bool *gw_used)
{
	int r;

	if (!in->has_gw && gw->family && ipamconf_prefix_contains(&in->subnet, gw)) {
		in->gw = *gw;
		in->has_gw = *gw_used = true;
	}
	if ((r = add_set(p, in->path, 1)) < 0 ||
	    (r = range_from(p, in, &p->c->sets[p->c->n_sets - 1].r[0])) < 0)
		return r;
	p->c->sets[p->c->n_sets - 1].n = 1;
	return 0;
}

/* whereabouts: the top-level range, then each ipRanges element: a set of one range each. */
static int wb_ranges(struct cp *p, struct top *t)
{
	bool gw_used = false;
	size_t i, total = 0;
	json_t *it;
	int r;

	snprintf(t->wb.path, sizeof(t->wb.path), "ipam");
	if (t->wb.has_subnet) {
		if ((r = wb_set(p, &t->wb, &t->gw, &gw_used)) < 0)
			return r;
		total++;
	}
	json_array_foreach(t->ip_ranges, i, it)
	{
		struct range_in in = { .k_start = "range_start", .k_end = "range_end" };

		dispatch_path_idx(in.path, sizeof(in.path), "ipam.ipRanges", i);
		r = dispatch_run(&p->d, in.path, it, ip_range_fields, DISPATCH_UNKNOWN_REFUSE, &in);
		if (r == 0)
			r = wb_set(p, &in, &t->gw, &gw_used);
		range_in_clear(&in);
		if (r < 0)
			return r;
		total++;
	}
	if (t->gw.family && total && !gw_used) {
		char a[CNISPEC_PREFIX_STRLEN];

		return FAIL(p, "ipam.gateway", "%s is in none of the ranges' subnets",
			    cnispec_addr_str(&t->gw, a));
	}
	return 0;
}

static int hl_range(struct cp *p, const char *path, json_t *obj, struct ipamconf_range *out)
{
	struct range_in in = { .k_start = "rangeStart", .k_end = "rangeEnd" };
	int r;

	snprintf(in.path, sizeof(in.path), "%s", path);
	r = dispatch_run(&p->d, path, obj, hl_range_fields, DISPATCH_UNKNOWN_REFUSE, &in);
	if (r == 0 && !in.has_gw &&
	    ((in.subnet.addr.family == AF_INET && in.subnet.len <= 30) ||
	     (in.subnet.addr.family == AF_INET6 && in.subnet.len <= 126))) {
		/* host-local's default gateway: the first address after the network's */
		struct ipamconf_range tmp;

		r = ipamconf_range_build(&tmp, &in.subnet, NULL, NULL, NULL, NULL, 0, NULL);
		if (r == 0) {
			ipamconf_addr_from_u128(tmp.family, tmp.net + 1, &in.gw);
			in.has_gw = true;
		}
		ipamconf_range_clear(&tmp);
	}
	if (r == 0)
		r = range_from(p, &in, out);
	/* exclude (rdmak's, in a host-local range) is allocated like whereabouts' */
	range_in_clear(&in);
	return r;
}

static bool overlap(const struct ipamconf_range *a, const struct ipamconf_range *b)
{
	return a->family == b->family && a->start <= b->end && b->start <= a->end;
}

/* host-local: each element of ranges is a set of ranges. */
static int hl_ranges(struct cp *p, const json_t *sets)
{
	const json_t *set;
	json_t *it;
	size_t i, j;
	int r;

	json_array_foreach(sets, i, set)
	{
		char path[64];
		struct ipamconf_rangeset *rs;

		dispatch_path_idx(path, sizeof(path), "ipam.ranges", i);
		if (!json_is_array(set) || json_array_size(set) == 0)
			return FAIL(p, path, "expected a non-empty array of ranges");
		if (json_array_size(set) > 64)
			return FAIL(p, path, "more than 64 ranges");
		if ((r = add_set(p, path, json_array_size(set))) < 0)
			return r;
		rs = &p->c->sets[p->c->n_sets - 1];
		json_array_foreach(set, j, it)
		{
			char ep[64];

			dispatch_path_idx(ep, sizeof(ep), path, j);
			if ((r = hl_range(p, ep, it, &rs->r[j])) < 0)
				return r;
			rs->n++;
			if (rs->r[j].family != rs->r[0].family)
				return FAIL(p, ep, "not of the address family of %s",
					    rs->r[0].path);
			for (size_t k = 0; k < j; k++)
				if (overlap(&rs->r[k], &rs->r[j]))
					return FAIL(p, ep, "overlaps %s", rs->r[k].path);
		}
	}
	return 0;
}

static bool sets_overlap(const struct ipamconf_rangeset *a, const struct ipamconf_rangeset *b,
			 size_t *ra, size_t *rb)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (overlap(&a->r[i], &b->r[j])) {
				*ra = i;
				*rb = j;
				return true;
			}
	return false;
}

/* Two range sets that share addresses. host-local refuses them in "ranges" ("range set 0
 * overlaps with 1", config.go); whereabouts' ipRanges may overlap across subnets (the
 * allocator keeps one attachment's addresses apart, as it keeps networks apart), but two sets
 * in one subnet share one pool, where one attachment would claim one address twice. hl: the
 * index of the first set from "ranges". */
static int check_sets(struct cp *p, size_t hl)
{
	for (size_t j = 1; j < p->c->n_sets; j++)
		for (size_t i = 0; i < j; i++) {
			const struct ipamconf_rangeset *a = &p->c->sets[i], *b = &p->c->sets[j];
			size_t x, y;

			if (!sets_overlap(a, b, &x, &y))
				continue;
			if (i >= hl)
				return FAIL(p, "ipam.ranges",
					    "range set %zu overlaps with %zu (%s %s and %s %s)",
					    i - hl, j - hl, a->r[x].path, a->r[x].text,
					    b->r[y].path, b->r[y].text);
			if (!strcmp(a->r[x].pool, b->r[y].pool))
				return FAIL(
					p, b->r[y].path,
					"%s overlaps %s %s in the same subnet: one attachment would get "
					"one address twice",
					b->r[y].text, a->r[x].path, a->r[x].text);
		}
	return 0;
}

/* ---- routes, dns ----------------------------------------------------------------------------- */

static const struct dispatch_field route_fields[] = {
	DISPATCH_FIELD("dst", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("gw", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("mtu", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("advmss", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("priority", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("table", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("scope", DISPATCH_ANY, read_later, 0, 0),
	{},
};

static const struct dispatch_field dns_fields[] = {
	DISPATCH_FIELD("nameservers", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("domain", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("search", DISPATCH_ANY, read_later, 0, 0),
	DISPATCH_FIELD("options", DISPATCH_ANY, read_later, 0, 0),
	{},
};

static int route_keys(struct dispatch_ctx *d, const char *path, json_t *v, size_t i, void *userdata)
{
	return dispatch_run(d, path, v, route_fields, DISPATCH_UNKNOWN_REFUSE, userdata);
}

static int routes_dns(struct cp *p, const struct top *t)
{
	char why[256];
	json_t *wrap;
	int r;

	if (t->routes &&
	    (r = dispatch_array(&p->d, "ipam.routes", t->routes, 0, route_keys, p)) < 0)
		return r;
	if (t->dns && (r = dispatch_run(&p->d, "ipam.dns", t->dns, dns_fields,
					DISPATCH_UNKNOWN_REFUSE, p)) < 0)
		return r;
	/* the result parser reads routes and dns exactly as a result carries them */
	wrap = json_pack("{s:O?, s:O?}", "routes", t->routes, "dns", t->dns);
	if (!wrap)
		return -ENOMEM;
	r = cnispec_result_from_json(wrap, CNISPEC_V_LATEST, "ipam", &p->c->routes_dns, why,
				     sizeof(why));
	json_decref(wrap);
	if (r == -EINVAL)
		return FAIL(p, NULL, "%s", why);
	if (r < 0)
		return r;
	/* ... but a destination goes out as given, host bits and all: whereabouts and host-local
	 * read it with CNI's types.ParseCIDR, which keeps the address it was given
	 * ("3ffe:ffff:0:01ff::1/64" comes back as 3ffe:ffff:0:1ff::1/64) */
	for (size_t i = 0; i < p->c->routes_dns->n_routes; i++)
		cnispec_prefix_parse(
			json_string_value(json_object_get(json_array_get(t->routes, i), "dst")),
			&p->c->routes_dns->routes[i].dst);
	return 0;
}

/* ---- store --------------------------------------------------------------------------------- */

bool ipamconf_node_name_valid(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	if (len == 0 || len > 253 || n[0] == '.' || n[0] == '-' || n[len - 1] == '.' ||
	    n[len - 1] == '-')
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '.'))
			return false;
	return true;
}

void ipamconf_store_clear(struct ipamconf_store *c)
{
	for (size_t i = 0; i < c->n_endpoints; i++)
		free(c->endpoints[i]);
	free(c->endpoints);
	free(c->data_dir);
	free(c->data_base);
	free(c->etcd_name);
	free(c->prefix);
	free(c->tls_ca);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->node_name);
	memset(c, 0, sizeof(*c));
}

static int endpoint_one(struct dispatch_ctx *d, const char *path, json_t *v, size_t i,
			void *userdata)
{
	struct ipamconf_store *st = userdata;
	int r = dispatch_strdup(d, path, v, true, &st->endpoints[i]);

	st->n_endpoints += r == 0;
	return r;
}

static int read_endpoints(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct ipamconf_store *st = t;

	if (json_array_size(v) == 0 || json_array_size(v) > 64)
		return dispatch_fail(d, path, "expected 1 to 64 strings");
	st->endpoints = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!st->endpoints)
		return -ENOMEM;
	return dispatch_array(d, path, v, 64, endpoint_one, st);
}

static int read_prefix(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	char **s = t;
	int r = dispatch_strdup(d, path, v, false, s);

	if (r == 0 && (*s)[0] != '/')
		return dispatch_fail(d, path, "\"%s\" does not start with '/'", *s);
	return r;
}

#define STORE(m) offsetof(struct ipamconf_store, m)

static const struct dispatch_field tls_fields[] = {
	DISPATCH_FIELD("ca", JSON_STRING, read_strdup, STORE(tls_ca), 0),
	DISPATCH_FIELD("cert", JSON_STRING, read_strdup, STORE(tls_cert), 0),
	DISPATCH_FIELD("key", JSON_STRING, read_strdup, STORE(tls_key), 0),
	{},
};

static int read_tls(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	int r = dispatch_run(d, path, v, tls_fields, DISPATCH_UNKNOWN_REFUSE, t);
	struct ipamconf_store *st = t;

	if (r == 0 && !st->tls_cert != !st->tls_key)
		return dispatch_fail(d, path, "\"cert\" and \"key\" go together");
	return r;
}

static const struct dispatch_field etcd_fields[] = {
	DISPATCH_FIELD("endpoints", JSON_ARRAY, read_endpoints, 0, DISPATCH_MANDATORY),
	DISPATCH_FIELD("prefix", JSON_STRING, read_prefix, STORE(prefix), 0),
	DISPATCH_FIELD("tls", JSON_OBJECT, read_tls, 0, 0),
	{},
};

/* whereabouts' old etcd keys (IPAMCONF_LEGACY): etcd_host ("host:port" or a comma list); its
 * three files are never read (the node's store's are). */
static int etcd_legacy(struct cp *p, const struct top *t)
{
	struct ipamconf_store *st = &p->c->store;
	_cleanup_free_ char *hosts = NULL;
	char *save = NULL;

	if (!t->etcd_host)
		return FAIL(p, "ipam.etcd_host",
			    "missing: whereabouts' etcd files go with its \"etcd_host\"");
	st->legacy = true;
	hosts = strdup(t->etcd_host);
	st->endpoints = calloc(strlen(t->etcd_host) / 2 + 2, sizeof(char *));
	if (!hosts || !st->endpoints)
		return -ENOMEM;
	for (char *tok = strtok_r(hosts, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
		if (!(st->endpoints[st->n_endpoints++] = strdup(tok)))
			return -ENOMEM;
	if (!st->n_endpoints)
		return FAIL(p, "ipam.etcd_host", "no endpoint in \"%s\"", t->etcd_host);
	return 0;
}

/* "etcd": {"endpoints", "prefix", "tls"} (IPAMCONF_LEGACY): endpoints and prefix kept to find
 * the node's store of them; the TLS files checked as before and dropped, never read. */
static int etcd_legacy_object(struct cp *p, const struct top *t)
{
	struct ipamconf_store *st = &p->c->store;
	int r = dispatch_run(&p->d, "ipam.etcd", t->etcd, etcd_fields, DISPATCH_UNKNOWN_REFUSE, st);

	free(st->tls_ca);
	free(st->tls_cert);
	free(st->tls_key);
	st->tls_ca = st->tls_cert = st->tls_key = NULL;
	st->legacy = true;
	return r;
}

static int store(struct cp *p, struct top *t)
{
	bool wb = t->etcd_host || t->etcd_ca || t->etcd_cert || t->etcd_key, etcd;

	if (t->store && t->datastore)
		return FAIL(p, "ipam.datastore",
			    "give \"store\" or whereabouts' \"datastore\", not both");
	if (wb && t->store)
		return FAIL(
			p, "ipam.etcd_host",
			"whereabouts' etcd keys go with \"datastore\": \"etcd\" (or alone); with \"store\" "
			"use \"etcd\": \"NAME\"");
	/* whereabouts' datastore defaults to etcd: its etcd keys alone name the etcd store */
	etcd = t->datastore || wb || (t->store && !strcmp(t->store, "etcd"));
	if (!etcd) {
		p->c->store.kind = IPAMCONF_STORE_FILE;
		if (t->etcd || t->etcd_name)
			return FAIL(p, "ipam.etcd", "only with \"store\": \"etcd\"");
		if (t->block_size >= 0 || t->node_name || t->block_grace >= 0 || t->lease_ttl >= 0)
			return FAIL(
				p,
				t->block_size >= 0    ? "ipam.perNodeBlockSize"
				: t->node_name	      ? "ipam.nodeName"
				: t->block_grace >= 0 ? "ipam.blockReleaseAfter"
						      : "ipam.nodeLeaseTTL",
				"only with \"store\": \"etcd\" (the file store is one node's already)");
		p->c->store.data_dir = TAKE_PTR(t->data_dir);
		return 0;
	}
	p->c->store.kind = IPAMCONF_STORE_ETCD;
	/* per-node blocks (docs/ipam.md): perNodeBlockSize or nodeName turns them on */
	if (t->block_size >= 0 || t->node_name) {
		p->c->store.block_size =
			t->block_size >= 0 ? (unsigned)t->block_size : IPAMCONF_BLOCK_DEFAULT_SIZE;
		p->c->store.block_grace_s = t->block_grace >= 0 ? (unsigned)t->block_grace
								: IPAMCONF_BLOCK_DEFAULT_GRACE;
		p->c->store.lease_ttl_s =
			t->lease_ttl >= 0 ? (unsigned)t->lease_ttl : IPAMCONF_LEASE_DEFAULT_TTL;
		if (t->node_name && !(p->c->store.node_name = strdup(t->node_name)))
			return -ENOMEM;
		p->c->store.data_dir = TAKE_PTR(t->data_dir);
	} else if (t->block_grace >= 0 || t->lease_ttl >= 0) {
		return FAIL(p, t->block_grace >= 0 ? "ipam.blockReleaseAfter" : "ipam.nodeLeaseTTL",
			    "only with \"perNodeBlockSize\"");
	}
	if (t->data_dir)
		return FAIL(p, "ipam.dataDir",
			    "only with \"store\": \"file\" or with \"perNodeBlockSize\"");
	if (wb) {
		if (t->etcd || t->etcd_name)
			return FAIL(p, "ipam.etcd",
				    "with whereabouts' \"etcd_host\" give no \"etcd\"; or write "
				    "\"store\": \"etcd\", \"etcd\": \"NAME\" alone");
		return etcd_legacy(p, t);
	}
	if (t->etcd)
		return etcd_legacy_object(p, t);
	if (!t->etcd_name)
		return FAIL(
			p, "ipam.etcd",
			"missing; \"store\": \"etcd\" needs \"etcd\": \"NAME\", one of the node's "
			"etcd stores (" NODECONF_FILE " \"etcd\")");
	return (p->c->store.etcd_name = strdup(t->etcd_name)) ? 0 : -ENOMEM;
}

/* ---- the rest ----------------------------------------------------------------------------------- */

/* logFile or log_file, logLevel or log_level (rdmak-cni's and whereabouts' spellings). */
static int logging(struct cp *p, const struct top *t)
{
	const char *file = t->log_file ? t->log_file : t->log_file2,
		   *level = t->log_level ? t->log_level : t->log_level2;

	if (t->log_file && t->log_file2)
		return FAIL(p, "ipam.log_file", "give \"logFile\" or \"log_file\", not both");
	if (t->log_level && t->log_level2)
		return FAIL(p, "ipam.log_level", "give \"logLevel\" or \"log_level\", not both");
	if (file && file[0] != '/')
		return FAIL(p, t->log_file ? "ipam.logFile" : "ipam.log_file",
			    "\"%s\" is not an absolute path", file);
	if (file && !(p->c->log_file = strdup(file)))
		return -ENOMEM;
	p->c->log_key = t->log_file ? "ipam.logFile" : "ipam.log_file";
	if (level && log_level_from_string(level, &p->c->log_level) < 0)
		return FAIL(p, t->log_level ? "ipam.logLevel" : "ipam.log_level",
			    "\"%s\" is not error, warning, info or debug", level);
	p->c->has_log_level = level != NULL;
	return 0;
}

static int parse(struct cp *p, json_t *ipam, const char *network)
{
	struct top t = { .wb = { .k_start = "range_start", .k_end = "range_end" },
			 .block_size = -1,
			 .block_grace = -1,
			 .lease_ttl = -1 };
	const json_t *ds;
	size_t hl;
	int r;

	if (!(p->c->network = strdup(network)))
		return -ENOMEM;
	/* whereabouts' Kubernetes store, whatever else the block says (its "kubernetes" key, the
	 * leader election keys...): one refusal, of the key to change */
	ds = json_object_get(ipam, "datastore");
	if (json_is_string(ds) && !strcmp(json_string_value(ds), "kubernetes"))
		return dispatch_refuse(&p->d, "ipam.datastore", ds, KUBE_STORE);
	r = dispatch_run(&p->d, "ipam", ipam, ipam_fields, DISPATCH_UNKNOWN_REFUSE, &t);
	if (r == 0)
		r = wb_ranges(p, &t);
	hl = p->c->n_sets;
	if (r == 0 && t.ranges)
		r = hl_ranges(p, t.ranges);
	if (r == 0)
		r = check_sets(p, hl);
	if (r == 0 && p->c->n_sets == 0)
		r = FAIL(p, "ipam", "no range: give \"range\", \"ipRanges\" or \"ranges\"");
	if (r == 0)
		r = routes_dns(p, &t);
	if (r == 0)
		r = store(p, &t);
	if (r == 0)
		r = logging(p, &t);
	range_in_clear(&t.wb);
	free(t.data_dir);
	return r;
}

/* The walker's refusal as rdmak-ipam's CNI error: code 2 naming an unsupported key with its
 * value and what to use instead, code 7 naming a bad value's path. */
static int refusal(const struct cp *p, struct cnispec_error *err)
{
	char hint[128];

	if (p->d.error != DISPATCH_ERR_UNKNOWN)
		return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid IPAM configuration",
				    "%s", p->msg);
	if (!p->d.why && p->d.suggest)
		snprintf(hint, sizeof(hint), "did you mean \"%s\"?", p->d.suggest);
	return cnispec_fail_unsupported(err, p->d.path, p->d.value,
					p->d.why       ? p->d.why
					: p->d.suggest ? hint
						       : NULL);
}

int ipamconf_parse(const json_t *ipam, const char *network, struct ipamconf **ret,
		   struct cnispec_error *err)
{
	return ipamconf_parse_flags(ipam, network, 0, ret, err);
}

int ipamconf_parse_flags(const json_t *ipam, const char *network, unsigned flags,
			 struct ipamconf **ret, struct cnispec_error *err)
{
	struct cp p = { .flags = flags };
	int r;

	p.d.err = p.msg;
	p.d.errlen = sizeof(p.msg);
	p.c = calloc(1, sizeof(*p.c));
	if (!p.c)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = parse(&p, (json_t *)ipam, network);
	if (r < 0) {
		ipamconf_free(p.c);
		if (r == -ENOMEM)
			return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
		return refusal(&p, err);
	}
	*ret = p.c;
	return 0;
}

void ipamconf_free(struct ipamconf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_sets; i++) {
		for (size_t j = 0; j < c->sets[i].n; j++)
			ipamconf_range_clear(&c->sets[i].r[j]);
		free(c->sets[i].r);
	}
	free(c->sets);
	for (size_t i = 0; i < c->n_warnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	cnispec_result_free(c->routes_dns);
	ipamconf_store_clear(&c->store);
	free(c->network);
	free(c->log_file);
	free(c->log_dir);
	free(c);
}

/* The plugin object of a configuration list that delegates to rdmak-ipam. */
static const json_t *find_in_list(const json_t *plugins)
{
	const json_t *it;
	size_t i;

	json_array_foreach(plugins, i, it)
	{
		const json_t *t = json_object_get(json_object_get(it, "ipam"), "type");

		if (json_is_string(t) && !strcmp(json_string_value(t), "rdmak-ipam"))
			return it;
	}
	return NULL;
}

int ipamconf_load(const char *buf, size_t len, unsigned flags, struct ipamconf **ret,
		  struct cnispec_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	const json_t *name, *plugin, *ipam;
	const char *why;
	int r;

	if (!root)
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE,
				    "failed to decode the configuration", "line %d column %d: %s",
				    je.line, je.column, je.text);
	name = json_object_get(root, "name");
	plugin = json_is_array(json_object_get(root, "plugins"))
			 ? find_in_list(json_object_get(root, "plugins"))
			 : root;
	ipam = plugin ? json_object_get(plugin, "ipam") : NULL;
	if (!json_is_string(name) || !cnispec_network_name_valid(json_string_value(name), &why))
		r = cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
				 "name: %s",
				 json_is_string(name) ? why : "missing (the network's name)");
	else if (!ipam)
		r = cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
				 "%s",
				 plugin ? "ipam: missing"
					: "plugins: none has \"ipam\": {\"type\": \"rdmak-ipam\"}");
	else
		r = ipamconf_parse_flags(ipam, json_string_value(name), flags, ret, err);
	json_decref(root);
	return r;
}

/* ---- the node's side ------------------------------------------------------------------------ */

static int resolve_fail(struct cnispec_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int resolve_fail(struct cnispec_error *err, const char *fmt, ...)
{
	char msg[CNISPEC_DETAILS_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid IPAM configuration", "%s",
			    msg);
}

static int copy_strv(char **v, size_t n, char ***ret, size_t *ret_n)
{
	char **c = calloc(n + 1, sizeof(char *));

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			while (i--)
				free(c[i]);
			free(c);
			return -ENOMEM;
		}
	*ret = c;
	*ret_n = n;
	return 0;
}

static int dup_or_null(const char *s, char **ret)
{
	free(*ret);
	*ret = NULL;
	return !s || (*ret = strdup(s)) ? 0 : -ENOMEM;
}

/* The etcd store the network names, or of the shape before the node's store with its
 * endpoints and prefix. */
static int resolve_etcd(struct ipamconf_store *st, const struct nodeconf *n,
			struct cnispec_error *err)
{
	const struct nodeconf_etcd *e;
	char names[256], eps[512] = "";
	int r;

	if (st->legacy) {
		e = nodeconf_etcd_find_endpoints(n, (const char *const *)st->endpoints,
						 st->n_endpoints, st->prefix);
		for (size_t i = 0, o = 0; i < st->n_endpoints && o < sizeof(eps); i++)
			o += (size_t)snprintf(eps + o, sizeof(eps) - o, "%s%s", i ? ", " : "",
					      st->endpoints[i]);
		if (!e)
			return resolve_fail(
				err,
				"ipam.etcd: this configuration names etcd by its endpoints (%s) and "
				"prefix %s, the shape before etcd stores were the node's, and no etcd "
				"store of this node (%s \"etcd\") has them: the node's owner adds one, "
				"and the network writes \"etcd\": \"NAME\"",
				eps, st->prefix ? st->prefix : IPAMCONF_ETCD_DEFAULT_PREFIX,
				n->path);
	} else if (!(e = nodeconf_etcd_find(n, st->etcd_name))) {
		nodeconf_etcd_names(n, names, sizeof(names));
		return resolve_fail(
			err, "ipam.etcd: \"%s\" is not an etcd store of this node (%s names: %s)",
			st->etcd_name, n->path, names);
	}
	for (size_t i = 0; i < st->n_endpoints; i++)
		free(st->endpoints[i]);
	free(st->endpoints);
	st->endpoints = NULL;
	st->n_endpoints = 0;
	if ((r = copy_strv(e->endpoints, e->n_endpoints, &st->endpoints, &st->n_endpoints)) < 0 ||
	    (r = dup_or_null(e->prefix, &st->prefix)) < 0 ||
	    (r = dup_or_null(e->tls_ca, &st->tls_ca)) < 0 ||
	    (r = dup_or_null(e->tls_cert, &st->tls_cert)) < 0 ||
	    (r = dup_or_null(e->tls_key, &st->tls_key)) < 0 ||
	    (r = dup_or_null(e->name, &st->etcd_name)) < 0)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	return 0;
}

/* A store's own folders: a dataDir inside another store's would mix two stores' claims. */
static bool inside_a_store(const char *base, const char *path)
{
	static const char *const own[] = { "pools", "networks", "blocks" };
	const char *rel = path + strlen(base);

	for (const char *c = rel; *c;) {
		size_t k;

		while (*c == '/')
			c++;
		k = strcspn(c, "/");
		if (k && c[0] == '.')
			return true;
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			if (k == strlen(own[i]) && !strncmp(c, own[i], k))
				return true;
		c += k;
	}
	return false;
}

static int resolve_data_dir(struct ipamconf_store *st, const struct nodeconf *n,
			    struct cnispec_error *err)
{
	char list[1024];
	size_t o = 0;

	if (!st->data_dir) {
		if (!(st->data_dir = strdup(n->data_dirs[0])) ||
		    !(st->data_base = strdup(n->data_dirs[0])))
			return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory",
					    NULL);
		return 0;
	}
	for (size_t i = 0; i < n->n_data_dirs; i++)
		if (fileio_path_beneath(n->data_dirs[i], st->data_dir)) {
			if (inside_a_store(n->data_dirs[i], st->data_dir))
				return resolve_fail(
					err,
					"ipam.dataDir: %s lies inside the folders of the store at %s "
					"(pools, networks, blocks or a name starting with '.'): name "
					"%s itself, or another folder beneath it",
					st->data_dir, n->data_dirs[i], n->data_dirs[i]);
			free(st->data_base);
			return (st->data_base = strdup(n->data_dirs[i]))
				       ? 0
				       : cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL,
						      "out of memory", NULL);
		}
	for (size_t i = 0; i < n->n_data_dirs && o < sizeof(list); i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
				      n->data_dirs[i]);
	return resolve_fail(
		err,
		"ipam.dataDir: %s is none of the node's dataDirs nor beneath one (%s \"dataDirs\": "
		"%s): rdmak-ipam writes its store there as root, so only where the node's owner "
		"allows: leave dataDir out (%s), or name one of them or a folder beneath one",
		st->data_dir, n->path, list, n->data_dirs[0]);
}

int ipamconf_resolve(struct ipamconf *c, const struct nodeconf *n, unsigned flags,
		     struct cnispec_error *err)
{
	struct ipamconf_store *st = &c->store;
	int r;

	if (st->kind == IPAMCONF_STORE_ETCD && (r = resolve_etcd(st, n, err)) < 0)
		return r;
	if ((st->kind == IPAMCONF_STORE_FILE || st->block_size) &&
	    (r = resolve_data_dir(st, n, err)) < 0)
		return r;
	if (c->log_file && !fileio_path_beneath(n->log_dir, c->log_file)) {
		const char *base = strrchr(c->log_file, '/') + 1;

		/* a root process appends to it: one that names /etc/ld.so.preload or a cron file
		 * must not get lines written there */
		if (!(flags & IPAMCONF_LEGACY))
			return resolve_fail(
				err,
				"%s: %s is not beneath the node's logDir (%s, %s \"logDir\"): "
				"rdmak-ipam appends to it as root, so only there: write \"%s/%s\", or "
				"leave the key out (stderr has every line)",
				c->log_key, c->log_file, n->log_dir, n->path, n->log_dir,
				*base ? base : "rdmak-ipam.log");
		warn_resolve(c,
			     "%s: %s is not beneath the node's logDir (%s): not written, lines "
			     "go to stderr only",
			     c->log_key, c->log_file, n->log_dir);
		free(c->log_file);
		c->log_file = NULL;
	}
	free(c->log_dir);
	if (!(c->log_dir = strdup(n->log_dir)))
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	return 0;
}
