/* SPDX-License-Identifier: Apache-2.0 */
/* Config parser: tables over src/dispatch. The anchors decode with Go's encoding/json, which
 * matches known keys case-insensitively and ignores unknown ones. rdmak keeps the match
 * (DISPATCH_CASEFOLD on every anchor key) and decides per object what an unknown key gets:
 *
 * - the top level and each resource: accepted and named in cfg->warnings, as the anchors
 *   accept them (their own docs print "SelectorObj": null), except a near miss of one of
 *   rdmak's own keys (DISPATCH_TYPO_GUARD), which the anchors never knew: refused;
 * - a selector object: refused. Every selector narrows the pool; one that is not read leaves
 *   it wider than written, and a typo such as "ifname" silently selecting every HCA is
 *   exactly the failure an operator cannot see. */
#include "pool/config.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cnispec/cnispec.h"
#include "daemon/daemon.h"
#include "dispatch/dispatch.h"
#include "k8s/names.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

#define MAX_HCA_MAX	100000 /* ids are materialised; more than this is a typo, not a pool */
#define MAX_ENTRIES	4096
#define CONFIG_FILE_MAX (4u << 20) /* what a file can make any role that reads it hold */

/* A row whose fn reads into the whole struct (the resource, the selector, the config). */
#define WHOLE  0

#define ANCHOR (DISPATCH_CASEFOLD | DISPATCH_NULLABLE) /* Go reads null as the zero value */

/* The parse's state, reached from a row's fn through dispatch_ctx.userdata. */
struct cp {
	struct pool_config *cfg;
	char first_list[32]; /* the first resource list's key, as written */
};

static struct cp *cp_of(struct dispatch_ctx *c)
{
	return c->userdata;
}

static void warn_key(void *userdata, const char *path, const char *why)
{
	struct cp *p = userdata;
	char *line;

	/* out of memory: the warning is lost, the config is not (strv_push frees line then) */
	if (asprintf(&line, "%s: %s", path, why) >= 0)
		(void)strv_push(&p->cfg->warnings.v, &p->cfg->warnings.n, line);
}

/* ---- value checks ------------------------------------------------------------------- */

typedef int (*item_check_fn)(struct dispatch_ctx *c, const char *path, char *s);

static int check_hex_id(struct dispatch_ctx *c, const char *path, char *s)
{
	size_t l = strlen(s);

	if (l == 0 || l > 4)
		return dispatch_fail(c, path,
				     "\"%s\" is not a PCI ID (4 hex digits, e.g. \"15b3\")", s);
	for (char *ch = s; *ch; ch++) {
		if (!isxdigit((unsigned char)*ch))
			return dispatch_fail(
				c, path, "\"%s\" is not a PCI ID (4 hex digits, e.g. \"15b3\")", s);
		/* sysfs prints lowercase; the anchors compare exactly, so "15B3" never matched there */
		*ch = (char)tolower((unsigned char)*ch);
	}
	return 0;
}

static bool is_bdf(const char *s)
{
	/* dddd:bb:dd.f */
	if (strlen(s) != 12)
		return false;
	for (int i = 0; i < 12; i++) {
		char ch = s[i];

		if (i == 4 || i == 7) {
			if (ch != ':')
				return false;
		} else if (i == 10) {
			if (ch != '.')
				return false;
		} else if (i == 11) {
			if (ch < '0' || ch > '7')
				return false;
		} else if (!isxdigit((unsigned char)ch)) {
			return false;
		}
	}
	return true;
}

static void lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static int check_bdf(struct dispatch_ctx *c, const char *path, char *s)
{
	if (!is_bdf(s))
		return dispatch_fail(c, path, "\"%s\" is not a PCI address (\"0000:37:00.0\")", s);
	lowercase(s);
	return 0;
}

static int check_link_type(struct dispatch_ctx *c, const char *path, char *s)
{
	/* Both anchors compare netlink's EncapType ("ether", "infiniband"); "ethernet" is what
	 * users write (k8s-rdma-shared-dev-plugin #113) and what ibstat prints, so accept it. */
	/* rewritten in place: each name matched is at least as long as its canonical one */
	if (strcasecmp(s, "infiniband") == 0 || strcasecmp(s, "ib") == 0) {
		str_copy(s, strlen(s) + 1, "ib");
		return 0;
	}
	if (strcasecmp(s, "ether") == 0 || strcasecmp(s, "ethernet") == 0 ||
	    strcasecmp(s, "eth") == 0) {
		str_copy(s, strlen(s) + 1, "eth");
		return 0;
	}
	return dispatch_fail(
		c, path,
		"unknown link type \"%s\" (expected \"infiniband\", \"ether\" or \"ethernet\")", s);
}

static int check_name(struct dispatch_ctx *c, const char *path, char *s)
{
	const char *why;

	if (!cnispec_ifname_valid(s, &why))
		return dispatch_fail(c, path, "\"%s\" is not an interface name: %s", s, why);
	return 0;
}

static int check_driver(struct dispatch_ctx *c, const char *path, char *s)
{
	if (!*s || strlen(s) >= 32 || strchr(s, '/'))
		return dispatch_fail(c, path, "\"%s\" is not a driver name", s);
	return 0;
}

/* ---- lists of strings ----------------------------------------------------------------- */

struct strv_read {
	item_check_fn check; /* may normalise the string in place */
	struct strv_list *out;
};

static int strv_item(struct dispatch_ctx *c, const char *path, json_t *e, size_t i, void *userdata)
{
	struct strv_read *sr = userdata;
	char **slot = &sr->out->v[sr->out->n];
	int r = dispatch_strdup(c, path, e, false, slot);

	if (r < 0)
		return r;
	sr->out->n++;
	return sr->check ? sr->check(c, path, *slot) : 0;
}

/* An array of strings into *ret (freed with the config, whatever is read before a refusal). */
static int read_strv(struct dispatch_ctx *c, const char *path, json_t *v, item_check_fn check,
		     struct strv_list *ret)
{
	struct strv_read sr = { check, ret };

	if (!json_is_array(v))
		return dispatch_fail(c, path, "expected an array of strings, got %s",
				     dispatch_type_name(v));
	ret->v = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!ret->v)
		return -ENOMEM;
	return dispatch_array(c, path, v, 0, strv_item, &sr);
}

static int read_ids(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_strv(c, path, v, check_hex_id, t);
}

static int read_drivers(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_strv(c, path, v, check_driver, t);
}

static int read_if_names(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_strv(c, path, v, check_name, t);
}

static int read_link_types(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_strv(c, path, v, check_link_type, t);
}

static int read_bdfs(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_strv(c, path, v, check_bdf, t);
}

/* ---- pfNames and rootDevices: "<PF>" or "<PF>#<VF ranges>" ----------------------------- */

static int parse_uint(const char **s, unsigned *ret)
{
	unsigned long v = 0;
	const char *ch = *s;

	if (!isdigit((unsigned char)*ch))
		return -EINVAL;
	for (; isdigit((unsigned char)*ch); ch++) {
		v = v * 10 + (unsigned)(*ch - '0');
		if (v > 65535)
			return -ERANGE;
	}
	*s = ch;
	*ret = (unsigned)v;
	return 0;
}

int pool_pf_sel_parse(const char *s, struct pool_pf_sel *ret, const char **why)
{
	struct pool_pf_sel p = { 0 };
	const char *hash = strchr(s, '#');
	const char *ch;
	size_t cap = 0;

	*why = NULL;
	if (s == hash || !*s) {
		*why = "empty PF name";
		return -EINVAL;
	}
	p.pf = hash ? strndup(s, (size_t)(hash - s)) : strdup(s);
	if (!p.pf)
		return -ENOMEM;
	if (strlen(p.pf) >= 16 && !is_bdf(p.pf)) {
		*why = "PF name too long";
		goto fail;
	}
	if (!hash) {
		p.all = true;
		*ret = p;
		return 0;
	}
	ch = hash + 1;
	if (!*ch) {
		*why = "no VF range after '#'";
		goto fail;
	}
	for (;;) {
		unsigned lo, hi;

		if (parse_uint(&ch, &lo) < 0) {
			*why = "expected a VF index";
			goto fail;
		}
		hi = lo;
		if (*ch == '-') {
			ch++;
			if (parse_uint(&ch, &hi) < 0) {
				*why = "expected a VF index after '-'";
				goto fail;
			}
			if (hi < lo) {
				*why = "range end is before its start";
				goto fail;
			}
		}
		if (p.n_ranges == cap) {
			unsigned(*n)[2];

			cap = cap ? cap * 2 : 4;
			n = realloc(p.ranges, cap * sizeof(*n));
			if (!n) {
				pool_pf_sel_clear(&p);
				return -ENOMEM;
			}
			p.ranges = n;
		}
		p.ranges[p.n_ranges][0] = lo;
		p.ranges[p.n_ranges][1] = hi;
		p.n_ranges++;
		if (!*ch)
			break;
		if (*ch != ',') {
			*why = "unexpected character in VF range";
			goto fail;
		}
		ch++;
	}
	*ret = p;
	return 0;
fail:
	pool_pf_sel_clear(&p);
	return -EINVAL;
}

void pool_pf_sel_clear(struct pool_pf_sel *p)
{
	free(p->pf);
	free(p->ranges);
	*p = (struct pool_pf_sel){ 0 };
}

bool pool_pf_sel_has_vf(const struct pool_pf_sel *p, int vf_index)
{
	if (p->all)
		return true;
	if (vf_index < 0)
		return false;
	for (size_t i = 0; i < p->n_ranges; i++)
		if ((unsigned)vf_index >= p->ranges[i][0] && (unsigned)vf_index <= p->ranges[i][1])
			return true;
	return false;
}

struct pf_read {
	struct pool_pf_list *out;
	bool by_address; /* rootDevices: the PF part is a PCI address */
	const char *example;
};

static int pf_item(struct dispatch_ctx *c, const char *path, json_t *e, size_t i, void *userdata)
{
	struct pf_read *pr = userdata;
	struct pool_pf_sel *sel = &pr->out->v[pr->out->n];
	const char *s, *why;
	int r = dispatch_string(c, path, e, false, &s);

	if (r < 0)
		return r;
	r = pool_pf_sel_parse(s, sel, &why);
	if (r == -EINVAL)
		return dispatch_fail(c, path, "\"%s\": %s (expected %s)", s, why, pr->example);
	if (r < 0)
		return r;
	pr->out->n++;
	if (pr->by_address) {
		if (!is_bdf(sel->pf))
			return sel->all
				       ? dispatch_fail(
						 c, path,
						 "\"%s\" is not a PCI address (\"0000:37:00.0\")",
						 s)
				       : dispatch_fail(
						 c, path,
						 "\"%s\": \"%s\" is not a PCI address (expected %s)",
						 s, sel->pf, pr->example);
		lowercase(sel->pf);
	}
	/* sriov-network-device-plugin's getItem() takes the first entry naming the PF and never
	 * looks at the others: rdmak selects what any of them names, and says so. */
	for (size_t j = 0; j < i; j++)
		if (!strcasecmp(pr->out->v[j].pf, sel->pf)) {
			char msg[160];

			snprintf(
				msg, sizeof(msg),
				"names the same PF as entry %zu: sriov-network-device-plugin reads only "
				"the first entry for a PF, rdmak selects what any of them names",
				j);
			dispatch_warn(c, path, msg);
			break;
		}
	return 0;
}

static int read_pf_list(struct dispatch_ctx *c, const char *path, json_t *v, struct pf_read *pr)
{
	if (!json_is_array(v))
		return dispatch_fail(c, path, "expected an array of strings, got %s",
				     dispatch_type_name(v));
	pr->out->v = calloc(json_array_size(v) + 1, sizeof(*pr->out->v));
	if (!pr->out->v)
		return -ENOMEM;
	return dispatch_array(c, path, v, 0, pf_item, pr);
}

static int read_pf_names(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct pf_read pr = { t, false, "\"ens1f0\" or \"ens1f0#0-3,7\"" };

	return read_pf_list(c, path, v, &pr);
}

static int read_root_devices(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct pf_read pr = { t, true, "\"0000:86:00.0\" or \"0000:86:00.0#0-1,3,4\"" };

	return read_pf_list(c, path, v, &pr);
}

/* ---- resource names ------------------------------------------------------------------ */

/* The anchors' own patterns: ^[a-zA-Z0-9_]+$ (shared) and ^[a-zA-Z0-9_-]+$ (sriov). */
static int read_name(struct dispatch_ctx *c, const char *path, json_t *v, char **ret,
		     bool allow_hyphen)
{
	int r = dispatch_strdup(c, path, v, false, ret);

	if (r < 0)
		return r;
	for (const char *ch = *ret; *ch; ch++)
		if (!(isalnum((unsigned char)*ch) || *ch == '_' || (allow_hyphen && *ch == '-')))
			return dispatch_fail(c, path,
					     "\"%s\" may only contain letters, digits, '_'%s", *ret,
					     allow_hyphen ? " and '-'" : "");
	return 0;
}

static int read_shared_name(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_name(c, path, v, t, false);
}

static int read_sriov_name(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return read_name(c, path, v, t, true);
}

static int read_prefix(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_strdup(c, path, v, false, t);
}

/* After the resource's keys: the default prefix, the kubelet's rules, the full name. */
static int set_names(struct dispatch_ctx *c, struct pool_resource *r, const char *def_prefix)
{
	char sub[64];
	const char *why;

	if (!r->prefix && !(r->prefix = strdup(def_prefix)))
		return -ENOMEM;
	if (asprintf(&r->full_name, "%s/%s", r->prefix, r->name) < 0) {
		r->full_name = NULL;
		return -ENOMEM;
	}
	/* the kubelet's device manager takes only extended resource names; the fault is the
	 * name's when the name alone is not a valid name part, else the prefix's */
	if (!k8s_extended_resource_name(r->full_name, &why)) {
		dispatch_path_key(sub, sizeof(sub), r->path,
				  k8s_qualified_name(r->name, NULL) ? "resourcePrefix"
								    : "resourceName");
		return dispatch_fail(c, sub, "the kubelet would reject \"%s\": %s", r->full_name,
				     why);
	}
	return 0;
}

/* ---- envs (rdmak) and additionalInfo (sriov-network-device-plugin): maps, not tables ---- */

static int read_envs(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct pool_resource *r = t;
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return dispatch_fail(c, path, "expected an object of NAME: \"value\", got %s",
				     dispatch_type_name(v));
	r->envs = calloc(json_object_size(v) + 1, sizeof(*r->envs));
	if (!r->envs)
		return -ENOMEM;
	json_object_foreach(v, key, val)
	{
		struct pool_env *e = &r->envs[r->n_envs];
		char sub[256];
		const char *ch;
		int ret;

		dispatch_path_key(sub, sizeof(sub), path, key);
		if (!*key || isdigit((unsigned char)key[0]))
			return dispatch_fail(c, sub, "not an environment variable name");
		for (ch = key; *ch; ch++)
			if (!(isalnum((unsigned char)*ch) || *ch == '_'))
				return dispatch_fail(c, sub, "not an environment variable name");
		if (strncmp(key, "PCIDEVICE_", 10) == 0)
			return dispatch_fail(c, sub, "PCIDEVICE_* is set by the plugin itself");
		e->name = strdup(key);
		if (!e->name)
			return -ENOMEM;
		r->n_envs++;
		ret = dispatch_strdup(c, sub, val, false, &e->value);
		if (ret < 0)
			return ret;
		for (ch = e->value; (ch = strstr(ch, "${")); ch++)
			if (strncmp(ch, "${hcas}", 7) && strncmp(ch, "${netdevs}", 10))
				return dispatch_fail(
					c, sub,
					"unknown placeholder in \"%s\" (known: ${hcas}, ${netdevs})",
					e->value);
	}
	return 0;
}

static int read_additional_info(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	char **ret = t;
	const char *key, *k2;
	json_t *val, *v2;

	if (!json_is_object(v))
		return dispatch_fail(
			c, path,
			"expected an object of \"*\" or PCI address to {key: value}, got %s",
			dispatch_type_name(v));
	json_object_foreach(v, key, val)
	{
		char sub[256];

		dispatch_path_key(sub, sizeof(sub), path, key);
		if (strcmp(key, "*") && !is_bdf(key))
			return dispatch_fail(c, sub, "expected \"*\" or a PCI address");
		if (!json_is_object(val))
			return dispatch_fail(c, sub, "expected an object of strings, got %s",
					     dispatch_type_name(val));
		json_object_foreach(val, k2, v2) if (!json_is_string(v2))
		{
			char sub2[300];

			dispatch_path_key(sub2, sizeof(sub2), sub, k2);
			return dispatch_fail(c, sub2, "expected a string, got %s",
					     dispatch_type_name(v2));
		}
	}
	*ret = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	return *ret ? 0 : -ENOMEM;
}

/* ---- selectors ----------------------------------------------------------------------- */

static int read_is_rdma(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	bool b;
	int r = dispatch_bool(c, path, v, &b);

	if (r < 0)
		return r;
	*(int *)t = b;
	return 0;
}

static bool json_empty(const json_t *v)
{
	return json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_string(v) && json_string_length(v) == 0) || json_is_false(v);
}

/* Anchor selectors rdmak does not implement: accepted when empty (published configs list
 * them so), refused otherwise, since ignoring one would widen the pool. */
static int read_unsupported(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	(void)t;
	if (!json_empty(v))
		return dispatch_fail(
			c, path, "not supported by rdmak (netDevice pools of RDMA functions only)");
	return 0;
}

#define SEL(name, fn, member)                                                                      \
	DISPATCH_FIELD(name, DISPATCH_ANY, fn, offsetof(struct pool_selector, member), ANCHOR)

#define UNSUPPORTED(name) DISPATCH_FIELD(name, DISPATCH_ANY, read_unsupported, WHOLE, ANCHOR)

/* k8s-rdma-shared-dev-plugin's selectors */
static const struct dispatch_field shared_sel_fields[] = {
	SEL("vendors", read_ids, vendors),
	SEL("deviceIDs", read_ids, devices),
	SEL("drivers", read_drivers, drivers),
	SEL("ifNames", read_if_names, if_names),
	SEL("linkTypes", read_link_types, link_types),
	{},
};

/* sriov-network-device-plugin's netDevice selectors */
static const struct dispatch_field sriov_sel_fields[] = {
	SEL("vendors", read_ids, vendors),
	SEL("devices", read_ids, devices),
	SEL("drivers", read_drivers, drivers),
	SEL("pfNames", read_pf_names, pf_names),
	SEL("rootDevices", read_root_devices, root_devices),
	SEL("pciAddresses", read_bdfs, pci_addresses),
	SEL("linkTypes", read_link_types, link_types),
	SEL("isRdma", read_is_rdma, is_rdma),
	DISPATCH_FIELD("needVhostNet", DISPATCH_BOOL, NULL,
		       offsetof(struct pool_selector, need_vhost_net), ANCHOR),
	UNSUPPORTED("acpiIndexes"),
	UNSUPPORTED("ddpProfiles"),
	UNSUPPORTED("pKeys"),
	UNSUPPORTED("vdpaType"),
	UNSUPPORTED("auxTypes"),
	{},
};

static struct pool_selector *add_selector(struct pool_resource *r)
{
	struct pool_selector *n = realloc(r->sels, (r->n_sels + 1) * sizeof(*n));

	if (!n)
		return NULL;
	r->sels = n;
	n = &r->sels[r->n_sels++];
	*n = (struct pool_selector){ .is_rdma = -1 };
	return n;
}

static int read_shared_selectors(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct pool_selector *s = add_selector(t);

	if (!s)
		return -ENOMEM;
	return dispatch_run(c, path, v, shared_sel_fields, DISPATCH_UNKNOWN_REFUSE, s);
}

/* The legacy "devices" list is the ifNames selector (the anchor copies it there). */
static int read_legacy_devices(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct pool_resource *r = t;
	struct pool_selector *s;

	if (r->n_sels)
		return dispatch_fail(
			c, path,
			"give either \"selectors\" or the deprecated \"devices\", not both");
	s = add_selector(r);
	if (!s)
		return -ENOMEM;
	return read_strv(c, path, v, check_name, &s->if_names);
}

static int sriov_selector(struct dispatch_ctx *c, const char *path, json_t *e, size_t i,
			  void *userdata)
{
	struct pool_selector *s = add_selector(userdata);

	(void)i;
	if (!s)
		return -ENOMEM;
	return dispatch_run(c, path, e, sriov_sel_fields, DISPATCH_UNKNOWN_REFUSE, s);
}

/* One selector object, or an array of them (any of them selects). */
static int read_sriov_selectors(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	if (!json_is_array(v))
		return sriov_selector(c, path, v, 0, t);
	if (json_array_size(v) == 0)
		return dispatch_fail(c, path, "expected at least one selector object");
	return dispatch_array(c, path, v, 0, sriov_selector, t);
}

/* ---- resources ------------------------------------------------------------------------- */

static int read_hca_max(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	long long max;
	int r = dispatch_int_range(c, path, v, 0, MAX_HCA_MAX, &max);

	if (r < 0)
		return r;
	*(unsigned *)t = (unsigned)max;
	return 0;
}

static int read_device_type(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(c, path, v, false, &s);

	(void)t;
	if (r < 0)
		return r;
	if (strcmp(s, "netDevice"))
		return dispatch_fail(c, path,
				     "\"%s\" is not supported by rdmak (only \"netDevice\")", s);
	return 0;
}

static int read_served_by(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	static const char *const who[] = {
		[POOL_BY_PLUGIN] = "plugin", [POOL_BY_DRA] = "dra", NULL
	};

	return dispatch_enum(c, path, v, who, t);
}

#define RES(name, type, fn, member, flags)                                                         \
	DISPATCH_FIELD(name, type, fn, offsetof(struct pool_resource, member), flags)

/* configList[]: k8s-rdma-shared-dev-plugin's keys, and rdmak's (exact, typos refused) */
static const struct dispatch_field shared_fields[] = {
	RES("resourceName", JSON_STRING, read_shared_name, name, ANCHOR | DISPATCH_MANDATORY),
	RES("resourcePrefix", JSON_STRING, read_prefix, prefix, ANCHOR),
	/* the anchor reads a missing one as 0 and advertises nothing: refused instead */
	DISPATCH_FIELD_WHY("rdmaHcaMax", DISPATCH_ANY, read_hca_max,
			   offsetof(struct pool_resource, rdma_hca_max),
			   ANCHOR | DISPATCH_MANDATORY, "how many containers may share the pool"),
	DISPATCH_FIELD("selectors", JSON_OBJECT, read_shared_selectors, WHOLE, ANCHOR),
	DISPATCH_FIELD("devices", DISPATCH_ANY, read_legacy_devices, WHOLE, ANCHOR),
	DISPATCH_FIELD("envs", DISPATCH_ANY, read_envs, WHOLE, DISPATCH_TYPO_GUARD),
	RES("excludeTopology", DISPATCH_BOOL, NULL, exclude_topology, DISPATCH_TYPO_GUARD),
	RES("servedBy", DISPATCH_ANY, read_served_by, served_by, DISPATCH_TYPO_GUARD),
	{},
};

#define SELECTOR_OBJ_WHY                                                                           \
	"sriov-network-device-plugin's own field (its docs print it as null); ignored, as it is there"

/* resourceList[]: sriov-network-device-plugin's keys, and rdmak's */
static const struct dispatch_field sriov_fields[] = {
	RES("resourceName", JSON_STRING, read_sriov_name, name, ANCHOR | DISPATCH_MANDATORY),
	RES("resourcePrefix", JSON_STRING, read_prefix, prefix, ANCHOR),
	DISPATCH_FIELD("deviceType", DISPATCH_ANY, read_device_type, WHOLE, ANCHOR),
	DISPATCH_FIELD("selectors", DISPATCH_ANY, read_sriov_selectors, WHOLE,
		       ANCHOR | DISPATCH_MANDATORY),
	RES("excludeTopology", DISPATCH_BOOL, NULL, exclude_topology, ANCHOR),
	RES("additionalInfo", DISPATCH_ANY, read_additional_info, additional_info, ANCHOR),
	DISPATCH_FIELD("envs", DISPATCH_ANY, read_envs, WHOLE, DISPATCH_TYPO_GUARD),
	RES("servedBy", DISPATCH_ANY, read_served_by, served_by, DISPATCH_TYPO_GUARD),
	{ .name = "SelectorObj",
	  .type = DISPATCH_ANY,
	  .flags = DISPATCH_IGNORED | DISPATCH_CASEFOLD,
	  .why = SELECTOR_OBJ_WHY },
	{ .name = "SelectorObjs",
	  .type = DISPATCH_ANY,
	  .flags = DISPATCH_IGNORED | DISPATCH_CASEFOLD,
	  .why = SELECTOR_OBJ_WHY },
	{},
};

static int resource(struct dispatch_ctx *c, const char *path, json_t *e, bool shared)
{
	struct pool_config *cfg = cp_of(c)->cfg;
	struct pool_resource *r = &cfg->res[cfg->n_res++];
	int ret;

	snprintf(r->path, sizeof(r->path), "%s", path);
	r->kind = shared ? POOL_SHARED : POOL_EXCLUSIVE;
	ret = dispatch_run(c, path, e, shared ? shared_fields : sriov_fields, DISPATCH_UNKNOWN_WARN,
			   r);
	if (ret < 0)
		return ret;
	if (shared && !r->n_sels) {
		char sub[64];

		dispatch_path_key(sub, sizeof(sub), path, "selectors");
		return dispatch_fail_kind(c, DISPATCH_ERR_MISSING, sub,
					  "missing (or the deprecated \"devices\" list)");
	}
	ret = set_names(c, r, shared ? POOL_DEFAULT_SHARED_PREFIX : POOL_DEFAULT_SRIOV_PREFIX);
	if (ret < 0)
		return ret;
	for (size_t j = 0; j + 1 < cfg->n_res; j++) {
		char sub[64];

		if (strcmp(cfg->res[j].full_name, r->full_name))
			continue;
		dispatch_path_key(sub, sizeof(sub), r->path, "resourceName");
		return dispatch_fail(c, sub, "duplicate resource \"%s\" (also %s)", r->full_name,
				     cfg->res[j].path);
	}
	return 0;
}

static int shared_resource(struct dispatch_ctx *c, const char *path, json_t *e, size_t i,
			   void *userdata)
{
	(void)i, (void)userdata;
	return resource(c, path, e, true);
}

static int sriov_resource(struct dispatch_ctx *c, const char *path, json_t *e, size_t i,
			  void *userdata)
{
	(void)i, (void)userdata;
	return resource(c, path, e, false);
}

/* configList or resourceList: the resources join cfg->res, in the file's order. */
static int read_list(struct dispatch_ctx *c, const char *path, json_t *v, bool shared)
{
	struct cp *p = cp_of(c);
	struct pool_config *cfg = p->cfg;
	struct pool_resource *n;

	if (!json_is_array(v))
		return dispatch_fail(c, path, "expected an array of objects, got %s",
				     dispatch_type_name(v));
	if (!p->first_list[0])
		snprintf(p->first_list, sizeof(p->first_list), "%s", path);
	if (cfg->n_res + json_array_size(v) > MAX_ENTRIES)
		return dispatch_fail(c, NULL, "more than %d resources", MAX_ENTRIES);
	n = realloc(cfg->res, (cfg->n_res + json_array_size(v) + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	cfg->res = n;
	memset(&n[cfg->n_res], 0, (json_array_size(v) + 1) * sizeof(*n));
	return dispatch_array(c, path, v, 0, shared ? shared_resource : sriov_resource, NULL);
}

static int read_config_list(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	(void)t;
	return read_list(c, path, v, true);
}

static int read_resource_list(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	(void)t;
	return read_list(c, path, v, false);
}

/* ---- top level ----------------------------------------------------------------------- */

static int read_interval(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	long long s;
	int r = dispatch_int_range(c, path, v, 0, 86400 * 365, &s);

	if (r < 0)
		return r;
	*(int *)t = (int)s;
	return 0;
}

static int read_health_ms(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	long long ms;
	int r = dispatch_int_range(c, path, v, 10, 60000, &ms);

	if (r < 0)
		return r;
	*(int *)t = (int)ms;
	return 0;
}

static int read_netns_mode(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	static const char *const modes[] = { "exclusive", "shared", NULL };

	return dispatch_enum(c, path, v, modes, t); /* 1 shared, 0 exclusive */
}

#define TOP(name, type, fn, member, flags)                                                         \
	DISPATCH_FIELD(name, type, fn, offsetof(struct pool_config, member), flags)

/* The numbers first, so that their refusal comes before the resources'. */
static const struct dispatch_field top_fields[] = {
	TOP("periodicUpdateInterval", DISPATCH_ANY, read_interval, periodic_update_s, ANCHOR),
	TOP("healthIntervalMs", DISPATCH_ANY, read_health_ms, health_interval_ms,
	    DISPATCH_TYPO_GUARD),
	TOP("rdmaNetnsMode", DISPATCH_ANY, read_netns_mode, rdma_netns_mode, DISPATCH_TYPO_GUARD),
	DISPATCH_FIELD("configList", DISPATCH_ANY, read_config_list, WHOLE, ANCHOR),
	DISPATCH_FIELD("resourceList", DISPATCH_ANY, read_resource_list, WHOLE, ANCHOR),
	{},
};

static void selector_clear(struct pool_selector *s)
{
	strv_list_clear(&s->vendors);
	strv_list_clear(&s->devices);
	strv_list_clear(&s->drivers);
	strv_list_clear(&s->link_types);
	strv_list_clear(&s->if_names);
	strv_list_clear(&s->pci_addresses);
	for (size_t i = 0; i < s->pf_names.n; i++)
		pool_pf_sel_clear(&s->pf_names.v[i]);
	free(s->pf_names.v);
	for (size_t i = 0; i < s->root_devices.n; i++)
		pool_pf_sel_clear(&s->root_devices.v[i]);
	free(s->root_devices.v);
}

void pool_config_free(struct pool_config *cfg)
{
	if (!cfg)
		return;
	/* a refused parse leaves the resource it stopped in half read: clear it too */
	for (size_t i = 0; i < cfg->n_res; i++) {
		struct pool_resource *r = &cfg->res[i];

		free(r->prefix);
		free(r->name);
		free(r->full_name);
		for (size_t j = 0; j < r->n_sels; j++)
			selector_clear(&r->sels[j]);
		free(r->sels);
		for (size_t j = 0; j < r->n_envs; j++) {
			free(r->envs[j].name);
			free(r->envs[j].value);
		}
		free(r->envs);
		free(r->additional_info);
	}
	free(cfg->res);
	strv_list_clear(&cfg->warnings);
	free(cfg);
}

int pool_config_parse(const char *buf, size_t len, struct pool_config **ret, char *err,
		      size_t errlen)
{
	struct pool_config *cfg = NULL;
	struct cp p = { 0 };
	struct dispatch_ctx c = { .err = err, .errlen = errlen, .warn = warn_key, .userdata = &p };
	json_error_t jerr;
	json_t *root;
	int r;

	if (errlen)
		err[0] = '\0';
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return dispatch_fail(&c, NULL, "line %d column %d: %s", jerr.line, jerr.column,
				     jerr.text);
	if (!json_is_object(root)) {
		r = dispatch_fail(&c, NULL,
				  "expected a JSON object with \"configList\" or \"resourceList\"");
		goto out;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		r = -ENOMEM;
		goto out;
	}
	*cfg = (struct pool_config){
		.periodic_update_s = POOL_DEFAULT_RESCAN_S,
		.health_interval_ms = POOL_DEFAULT_HEALTH_MS,
		.rdma_netns_mode = -1,
	};
	p.cfg = cfg;
	r = dispatch_run(&c, "", root, top_fields, DISPATCH_UNKNOWN_WARN, cfg);
	if (r < 0)
		goto out;
	if (!p.first_list[0]) {
		r = dispatch_fail_kind(
			&c, DISPATCH_ERR_MISSING, NULL,
			"expected \"configList\" (shared HCAs) or \"resourceList\" (VFs/PFs)");
		goto out;
	}
	if (cfg->n_res == 0) {
		r = dispatch_fail(&c, p.first_list, "expected at least one resource");
		goto out;
	}
	*ret = TAKE_PTR(cfg);
	r = 0;
out:
	if (r == -ENOMEM && errlen)
		snprintf(err, errlen, "out of memory");
	pool_config_free(cfg);
	json_decref(root);
	return r;
}

/* daemon_config_load's parser takes its result as a void * */
static int parse_file(const char *buf, size_t len, void *ret, char *err, size_t errlen)
{
	return pool_config_parse(buf, len, ret, err, errlen);
}

int pool_config_load(const char *path, unsigned flags, struct pool_config **ret, char **ret_text,
		     char *err, size_t errlen)
{
	/* rdmak plugin and dra once read such a file to its end: the refusal says which still do */
	return daemon_config_load(
		path, CONFIG_FILE_MAX, flags & POOL_CONFIG_ONCE ? 0 : DAEMON_CONFIG_REGULAR,
		"--dry-run, --once, rdmak doctor", parse_file, ret, ret_text, err, errlen);
}
