/* Config parser. The anchors decode with Go's encoding/json, which ignores unknown keys and
 * matches known ones case-insensitively; rdmak keeps the case-insensitive match (a config
 * written for them must keep working) but refuses unknown keys, because a typo such as
 * "ifname" silently selecting every HCA is exactly the failure an operator cannot see. */
#include "plugin/config.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "k8s/names.h"
#include "util/cleanup.h"

#define MAX_HCA_MAX 100000 /* ids are materialised; more than this is a typo, not a pool */
#define MAX_ENTRIES 4096

struct cp {
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct cp *p, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (p->errlen == 0)
		return -EINVAL;
	if (path && *path)
		n = snprintf(p->err, p->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A path longer than the buffer is cut short; it only ever ends up in a message. */
static void path_key(char *dst, size_t n, const char *base, const char *key)
{
	int l = base && *base ? snprintf(dst, n, "%s.%s", base, key) : snprintf(dst, n, "%s", key);

	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
}

static void path_idx(char *dst, size_t n, const char *base, size_t i)
{
	int l = snprintf(dst, n, "%s[%zu]", base, i);

	if (l < 0 || (size_t)l >= n)
		dst[n - 1] = '\0';
}

bool plugin_strv_contains(const struct plugin_strv *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return true;
	return false;
}

bool plugin_strv_contains_case(const struct plugin_strv *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcasecmp(s->v[i], x) == 0)
			return true;
	return false;
}

static void plugin_strv_clear(struct plugin_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* ---- object walking with known keys ------------------------------------------------- */

struct field {
	const char *key;
	bool anchor; /* a key an anchor knows: matched case-insensitively like Go does */
};

/* Every key of obj must be one of fields[]; out[i] gets the value for fields[i] (or NULL). */
static int object_fields(struct cp *p, const char *path, json_t *obj, const struct field *fields,
			 size_t n, json_t **out)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return fail(p, path, "expected an object");
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	json_object_foreach(obj, key, v) {
		size_t i;
		char sub[256];

		for (i = 0; i < n; i++)
			if (strcmp(key, fields[i].key) == 0 || (fields[i].anchor && strcasecmp(key, fields[i].key) == 0))
				break;
		path_key(sub, sizeof(sub), path, key);
		if (i == n)
			return fail(p, sub, "unknown key");
		if (out[i])
			return fail(p, sub, "duplicate of key \"%s\"", fields[i].key);
		out[i] = v;
	}
	return 0;
}

static int get_string(struct cp *p, const char *path, json_t *v, char **ret)
{
	char *s;

	if (!json_is_string(v))
		return fail(p, path, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fail(p, path, "contains a NUL byte");
	s = strdup(json_string_value(v));
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

typedef int (*item_check_fn)(struct cp *p, const char *path, char *s);

/* An array of strings, each passed through check (which may normalise it in place). */
static int get_strv(struct cp *p, const char *path, json_t *v, item_check_fn check, struct plugin_strv *ret)
{
	struct plugin_strv s = { 0 };
	size_t i;
	json_t *it;
	int r;

	if (!json_is_array(v))
		return fail(p, path, "expected an array of strings");
	s.v = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!s.v)
		return -ENOMEM;
	json_array_foreach(v, i, it) {
		char sub[256];

		path_idx(sub, sizeof(sub), path, i);
		if (!json_is_string(it)) {
			plugin_strv_clear(&s);
			return fail(p, path, "expected an array of strings");
		}
		r = get_string(p, sub, it, &s.v[s.n]);
		if (r < 0) {
			plugin_strv_clear(&s);
			return r;
		}
		s.n++;
		if (check) {
			r = check(p, sub, s.v[s.n - 1]);
			if (r < 0) {
				plugin_strv_clear(&s);
				return r;
			}
		}
	}
	*ret = s;
	return 0;
}

static int get_bool(struct cp *p, const char *path, json_t *v, bool *ret)
{
	if (!json_is_boolean(v))
		return fail(p, path, "expected true or false");
	*ret = json_is_true(v);
	return 0;
}

static int get_int(struct cp *p, const char *path, json_t *v, long long lo, long long hi, long long *ret)
{
	if (!json_is_integer(v))
		return fail(p, path, "expected an integer");
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return fail(p, path, "%lld is out of range [%lld, %lld]", (long long)json_integer_value(v), lo, hi);
	*ret = json_integer_value(v);
	return 0;
}

/* ---- value checks ------------------------------------------------------------------- */

static int check_hex_id(struct cp *p, const char *path, char *s)
{
	size_t l = strlen(s);

	if (l == 0 || l > 4)
		return fail(p, path, "\"%s\" is not a PCI ID (4 hex digits, e.g. \"15b3\")", s);
	for (char *c = s; *c; c++) {
		if (!isxdigit((unsigned char)*c))
			return fail(p, path, "\"%s\" is not a PCI ID (4 hex digits, e.g. \"15b3\")", s);
		/* sysfs prints lowercase; the anchors compare exactly, so "15B3" never matched there */
		*c = tolower((unsigned char)*c);
	}
	return 0;
}

static bool is_bdf(const char *s)
{
	/* dddd:bb:dd.f */
	if (strlen(s) != 12)
		return false;
	for (int i = 0; i < 12; i++) {
		char c = s[i];

		if (i == 4 || i == 7) {
			if (c != ':')
				return false;
		} else if (i == 10) {
			if (c != '.')
				return false;
		} else if (i == 11) {
			if (c < '0' || c > '7')
				return false;
		} else if (!isxdigit((unsigned char)c)) {
			return false;
		}
	}
	return true;
}

static int check_bdf(struct cp *p, const char *path, char *s)
{
	if (!is_bdf(s))
		return fail(p, path, "\"%s\" is not a PCI address (\"0000:37:00.0\")", s);
	for (char *c = s; *c; c++)
		*c = tolower((unsigned char)*c);
	return 0;
}

static int check_link_type(struct cp *p, const char *path, char *s)
{
	/* Both anchors compare netlink's EncapType ("ether", "infiniband"); "ethernet" is what
	 * users write (k8s-rdma-shared-dev-plugin #113) and what ibstat prints, so accept it. */
	if (strcasecmp(s, "infiniband") == 0 || strcasecmp(s, "ib") == 0) {
		strcpy(s, "ib");
		return 0;
	}
	if (strcasecmp(s, "ether") == 0 || strcasecmp(s, "ethernet") == 0 || strcasecmp(s, "eth") == 0) {
		strcpy(s, "eth");
		return 0;
	}
	return fail(p, path, "unknown link type \"%s\" (expected \"infiniband\", \"ether\" or \"ethernet\")", s);
}

static int check_name(struct cp *p, const char *path, char *s)
{
	if (!*s || strlen(s) >= 16 || strchr(s, '/') || strchr(s, ' ') || !strcmp(s, ".") || !strcmp(s, ".."))
		return fail(p, path, "\"%s\" is not an interface name", s);
	return 0;
}

static int check_driver(struct cp *p, const char *path, char *s)
{
	if (!*s || strlen(s) >= 32 || strchr(s, '/'))
		return fail(p, path, "\"%s\" is not a driver name", s);
	return 0;
}

/* ---- pfNames ranges ----------------------------------------------------------------- */

static int parse_uint(const char **s, unsigned *ret)
{
	unsigned long v = 0;
	const char *c = *s;

	if (!isdigit((unsigned char)*c))
		return -EINVAL;
	for (; isdigit((unsigned char)*c); c++) {
		v = v * 10 + (unsigned)(*c - '0');
		if (v > 65535)
			return -ERANGE;
	}
	*s = c;
	*ret = (unsigned)v;
	return 0;
}

int plugin_pf_sel_parse(const char *s, struct plugin_pf_sel *ret, const char **why)
{
	struct plugin_pf_sel p = { 0 };
	const char *hash = strchr(s, '#');
	const char *c;
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
	c = hash + 1;
	if (!*c) {
		*why = "no VF range after '#'";
		goto fail;
	}
	for (;;) {
		unsigned lo, hi;

		if (parse_uint(&c, &lo) < 0) {
			*why = "expected a VF index";
			goto fail;
		}
		hi = lo;
		if (*c == '-') {
			c++;
			if (parse_uint(&c, &hi) < 0) {
				*why = "expected a VF index after '-'";
				goto fail;
			}
			if (hi < lo) {
				*why = "range end is before its start";
				goto fail;
			}
		}
		if (p.n_ranges == cap) {
			unsigned (*n)[2];

			cap = cap ? cap * 2 : 4;
			n = realloc(p.ranges, cap * sizeof(*n));
			if (!n) {
				plugin_pf_sel_clear(&p);
				return -ENOMEM;
			}
			p.ranges = n;
		}
		p.ranges[p.n_ranges][0] = lo;
		p.ranges[p.n_ranges][1] = hi;
		p.n_ranges++;
		if (!*c)
			break;
		if (*c != ',') {
			*why = "unexpected character in VF range";
			goto fail;
		}
		c++;
	}
	*ret = p;
	return 0;
fail:
	plugin_pf_sel_clear(&p);
	return -EINVAL;
}

void plugin_pf_sel_clear(struct plugin_pf_sel *p)
{
	free(p->pf);
	free(p->ranges);
	*p = (struct plugin_pf_sel){ 0 };
}

bool plugin_pf_sel_has_vf(const struct plugin_pf_sel *p, int vf_index)
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

/* ---- envs ---------------------------------------------------------------------------- */

static int parse_envs(struct cp *p, const char *path, json_t *v, struct plugin_resource *r)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return fail(p, path, "expected an object of NAME: \"value\"");
	r->envs = calloc(json_object_size(v) + 1, sizeof(*r->envs));
	if (!r->envs)
		return -ENOMEM;
	json_object_foreach(v, key, val) {
		char sub[256];
		const char *c;
		int ret;

		path_key(sub, sizeof(sub), path, key);
		if (!*key || isdigit((unsigned char)key[0]))
			return fail(p, sub, "not an environment variable name");
		for (c = key; *c; c++)
			if (!(isalnum((unsigned char)*c) || *c == '_'))
				return fail(p, sub, "not an environment variable name");
		if (strncmp(key, "PCIDEVICE_", 10) == 0)
			return fail(p, sub, "PCIDEVICE_* is set by the plugin itself");
		ret = get_string(p, sub, val, &r->envs[r->n_envs].value);
		if (ret < 0)
			return ret;
		r->envs[r->n_envs].name = strdup(key);
		if (!r->envs[r->n_envs].name)
			return -ENOMEM;
		r->n_envs++;
		for (c = json_string_value(val); (c = strstr(c, "${")); c++) {
			if (strncmp(c, "${hcas}", 7) && strncmp(c, "${netdevs}", 10))
				return fail(p, sub, "unknown placeholder in \"%s\" (known: ${hcas}, ${netdevs})",
					    json_string_value(val));
		}
	}
	return 0;
}

/* ---- selectors ----------------------------------------------------------------------- */

enum { SH_VENDORS, SH_DEVICEIDS, SH_DRIVERS, SH_IFNAMES, SH_LINKTYPES, SH_N };
static const struct field shared_sel_fields[SH_N] = {
	[SH_VENDORS] = { "vendors", true },     [SH_DEVICEIDS] = { "deviceIDs", true },
	[SH_DRIVERS] = { "drivers", true },     [SH_IFNAMES] = { "ifNames", true },
	[SH_LINKTYPES] = { "linkTypes", true },
};

static int parse_shared_selectors(struct cp *p, const char *path, json_t *v, struct plugin_selector *s)
{
	json_t *f[SH_N];
	char sub[256];
	int r;

	r = object_fields(p, path, v, shared_sel_fields, SH_N, f);
	if (r < 0)
		return r;
#define SUB(i) (path_key(sub, sizeof(sub), path, shared_sel_fields[i].key), sub)
	if (f[SH_VENDORS] && (r = get_strv(p, SUB(SH_VENDORS), f[SH_VENDORS], check_hex_id, &s->vendors)) < 0)
		return r;
	if (f[SH_DEVICEIDS] && (r = get_strv(p, SUB(SH_DEVICEIDS), f[SH_DEVICEIDS], check_hex_id, &s->devices)) < 0)
		return r;
	if (f[SH_DRIVERS] && (r = get_strv(p, SUB(SH_DRIVERS), f[SH_DRIVERS], check_driver, &s->drivers)) < 0)
		return r;
	if (f[SH_IFNAMES] && (r = get_strv(p, SUB(SH_IFNAMES), f[SH_IFNAMES], check_name, &s->if_names)) < 0)
		return r;
	if (f[SH_LINKTYPES] && (r = get_strv(p, SUB(SH_LINKTYPES), f[SH_LINKTYPES], check_link_type, &s->link_types)) < 0)
		return r;
#undef SUB
	s->is_rdma = -1;
	return 0;
}

enum {
	SR_VENDORS, SR_DEVICES, SR_DRIVERS, SR_PFNAMES, SR_ROOTDEVICES, SR_PCIADDRESSES, SR_LINKTYPES,
	SR_ISRDMA, SR_NEEDVHOSTNET,
	/* anchor selectors rdmak does not implement: refused unless empty */
	SR_ACPI, SR_DDP, SR_PKEYS, SR_VDPA, SR_AUXTYPES, SR_N
};
static const struct field sriov_sel_fields[SR_N] = {
	[SR_VENDORS] = { "vendors", true },           [SR_DEVICES] = { "devices", true },
	[SR_DRIVERS] = { "drivers", true },           [SR_PFNAMES] = { "pfNames", true },
	[SR_ROOTDEVICES] = { "rootDevices", true },   [SR_PCIADDRESSES] = { "pciAddresses", true },
	[SR_LINKTYPES] = { "linkTypes", true },       [SR_ISRDMA] = { "isRdma", true },
	[SR_NEEDVHOSTNET] = { "needVhostNet", true }, [SR_ACPI] = { "acpiIndexes", true },
	[SR_DDP] = { "ddpProfiles", true },           [SR_PKEYS] = { "pKeys", true },
	[SR_VDPA] = { "vdpaType", true },             [SR_AUXTYPES] = { "auxTypes", true },
};

static int parse_pf_names(struct cp *p, const char *path, json_t *v, struct plugin_selector *s)
{
	struct plugin_strv names = { 0 };
	int r;

	r = get_strv(p, path, v, NULL, &names);
	if (r < 0)
		return r;
	s->pf_names = calloc(names.n + 1, sizeof(*s->pf_names));
	if (!s->pf_names) {
		plugin_strv_clear(&names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < names.n; i++) {
		const char *why;
		char sub[256];

		r = plugin_pf_sel_parse(names.v[i], &s->pf_names[s->n_pf_names], &why);
		if (r < 0) {
			path_idx(sub, sizeof(sub), path, i);
			if (r == -EINVAL)
				fail(p, sub, "\"%s\": %s (expected \"ens1f0\" or \"ens1f0#0-3,7\")", names.v[i], why);
			plugin_strv_clear(&names);
			return r;
		}
		s->n_pf_names++;
	}
	plugin_strv_clear(&names);
	return 0;
}

static bool json_empty(json_t *v)
{
	return json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_string(v) && json_string_length(v) == 0) || json_is_false(v);
}

static int parse_sriov_selectors(struct cp *p, const char *path, json_t *v, struct plugin_selector *s)
{
	json_t *f[SR_N];
	char sub[256];
	int r;

	r = object_fields(p, path, v, sriov_sel_fields, SR_N, f);
	if (r < 0)
		return r;
	s->is_rdma = -1;
#define SUB(i) (path_key(sub, sizeof(sub), path, sriov_sel_fields[i].key), sub)
	for (int i = SR_ACPI; i < SR_N; i++)
		if (f[i] && !json_empty(f[i]))
			return fail(p, SUB(i), "not supported by rdmak (netDevice pools of RDMA functions only)");
	if (f[SR_VENDORS] && (r = get_strv(p, SUB(SR_VENDORS), f[SR_VENDORS], check_hex_id, &s->vendors)) < 0)
		return r;
	if (f[SR_DEVICES] && (r = get_strv(p, SUB(SR_DEVICES), f[SR_DEVICES], check_hex_id, &s->devices)) < 0)
		return r;
	if (f[SR_DRIVERS] && (r = get_strv(p, SUB(SR_DRIVERS), f[SR_DRIVERS], check_driver, &s->drivers)) < 0)
		return r;
	if (f[SR_PFNAMES] && (r = parse_pf_names(p, SUB(SR_PFNAMES), f[SR_PFNAMES], s)) < 0)
		return r;
	if (f[SR_ROOTDEVICES] && (r = get_strv(p, SUB(SR_ROOTDEVICES), f[SR_ROOTDEVICES], check_bdf, &s->root_devices)) < 0)
		return r;
	if (f[SR_PCIADDRESSES] && (r = get_strv(p, SUB(SR_PCIADDRESSES), f[SR_PCIADDRESSES], check_bdf, &s->pci_addresses)) < 0)
		return r;
	if (f[SR_LINKTYPES] && (r = get_strv(p, SUB(SR_LINKTYPES), f[SR_LINKTYPES], check_link_type, &s->link_types)) < 0)
		return r;
	if (f[SR_ISRDMA]) {
		bool b = false;

		if ((r = get_bool(p, SUB(SR_ISRDMA), f[SR_ISRDMA], &b)) < 0)
			return r;
		s->is_rdma = b;
	}
	if (f[SR_NEEDVHOSTNET] && (r = get_bool(p, SUB(SR_NEEDVHOSTNET), f[SR_NEEDVHOSTNET], &s->need_vhost_net)) < 0)
		return r;
#undef SUB
	return 0;
}

/* ---- entries ------------------------------------------------------------------------- */

static int set_names(struct cp *p, struct plugin_resource *r, json_t *name, json_t *prefix, const char *def_prefix,
		     bool allow_hyphen)
{
	char sub[64];
	const char *why;

	path_key(sub, sizeof(sub), r->path, "resourceName");
	if (!name)
		return fail(p, sub, "required");
	if (get_string(p, sub, name, &r->name) < 0)
		return -EINVAL;
	/* the anchors' own patterns: ^[a-zA-Z0-9_]+$ (shared) and ^[a-zA-Z0-9_-]+$ (sriov) */
	for (const char *c = r->name; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '_' || (allow_hyphen && *c == '-')))
			return fail(p, sub, "\"%s\" may only contain letters, digits, '_'%s", r->name,
				    allow_hyphen ? " and '-'" : "");
	path_key(sub, sizeof(sub), r->path, "resourcePrefix");
	if (prefix) {
		if (get_string(p, sub, prefix, &r->prefix) < 0)
			return -EINVAL;
	} else {
		r->prefix = strdup(def_prefix);
		if (!r->prefix)
			return -ENOMEM;
	}
	if (asprintf(&r->full_name, "%s/%s", r->prefix, r->name) < 0) {
		r->full_name = NULL;
		return -ENOMEM;
	}
	/* the kubelet's device manager takes only extended resource names; the fault is the
	 * name's when the name alone is not a valid name part, else the prefix's */
	if (!k8s_extended_resource_name(r->full_name, &why)) {
		path_key(sub, sizeof(sub), r->path,
			 k8s_qualified_name(r->name, NULL) ? "resourcePrefix" : "resourceName");
		return fail(p, sub, "the kubelet would reject \"%s\": %s", r->full_name, why);
	}
	return 0;
}

enum { SE_NAME, SE_PREFIX, SE_MAX, SE_SELECTORS, SE_DEVICES, SE_ENVS, SE_EXCLTOPO, SE_N };
static const struct field shared_fields[SE_N] = {
	[SE_NAME] = { "resourceName", true }, [SE_PREFIX] = { "resourcePrefix", true },
	[SE_MAX] = { "rdmaHcaMax", true },    [SE_SELECTORS] = { "selectors", true },
	[SE_DEVICES] = { "devices", true },   [SE_ENVS] = { "envs", false },
	[SE_EXCLTOPO] = { "excludeTopology", false },
};

static int parse_shared_entry(struct cp *p, json_t *v, struct plugin_resource *r)
{
	json_t *f[SE_N];
	char sub[256];
	long long max;
	int ret;

	r->kind = PLUGIN_SHARED;
	ret = object_fields(p, r->path, v, shared_fields, SE_N, f);
	if (ret < 0)
		return ret;
	ret = set_names(p, r, f[SE_NAME], f[SE_PREFIX], PLUGIN_DEFAULT_SHARED_PREFIX, false);
	if (ret < 0)
		return ret;
	path_key(sub, sizeof(sub), r->path, "rdmaHcaMax");
	/* Missing means 0 in the anchor, which advertises nothing: refuse instead. */
	if (!f[SE_MAX])
		return fail(p, sub, "required (how many containers may share the pool)");
	ret = get_int(p, sub, f[SE_MAX], 0, MAX_HCA_MAX, &max);
	if (ret < 0)
		return ret;
	r->rdma_hca_max = (unsigned)max;
	if (f[SE_SELECTORS] && f[SE_DEVICES]) {
		path_key(sub, sizeof(sub), r->path, "devices");
		return fail(p, sub, "give either \"selectors\" or the deprecated \"devices\", not both");
	}
	if (!f[SE_SELECTORS] && !f[SE_DEVICES]) {
		path_key(sub, sizeof(sub), r->path, "selectors");
		return fail(p, sub, "required (or the deprecated \"devices\" list)");
	}
	r->sels = calloc(1, sizeof(*r->sels));
	if (!r->sels)
		return -ENOMEM;
	r->n_sels = 1;
	if (f[SE_SELECTORS]) {
		path_key(sub, sizeof(sub), r->path, "selectors");
		ret = parse_shared_selectors(p, sub, f[SE_SELECTORS], &r->sels[0]);
	} else {
		/* the legacy list is the ifNames selector (the anchor copies it there) */
		path_key(sub, sizeof(sub), r->path, "devices");
		r->sels[0].is_rdma = -1;
		ret = get_strv(p, sub, f[SE_DEVICES], check_name, &r->sels[0].if_names);
	}
	if (ret < 0)
		return ret;
	if (f[SE_ENVS]) {
		path_key(sub, sizeof(sub), r->path, "envs");
		if ((ret = parse_envs(p, sub, f[SE_ENVS], r)) < 0)
			return ret;
	}
	if (f[SE_EXCLTOPO]) {
		path_key(sub, sizeof(sub), r->path, "excludeTopology");
		if ((ret = get_bool(p, sub, f[SE_EXCLTOPO], &r->exclude_topology)) < 0)
			return ret;
	}
	return 0;
}

enum { RE_NAME, RE_PREFIX, RE_TYPE, RE_SELECTORS, RE_EXCLTOPO, RE_INFO, RE_ENVS, RE_N };
static const struct field sriov_fields[RE_N] = {
	[RE_NAME] = { "resourceName", true },      [RE_PREFIX] = { "resourcePrefix", true },
	[RE_TYPE] = { "deviceType", true },        [RE_SELECTORS] = { "selectors", true },
	[RE_EXCLTOPO] = { "excludeTopology", true }, [RE_INFO] = { "additionalInfo", true },
	[RE_ENVS] = { "envs", false },
};

static int parse_additional_info(struct cp *p, const char *path, json_t *v, struct plugin_resource *r)
{
	const char *key, *k2;
	json_t *val, *v2;

	if (!json_is_object(v))
		return fail(p, path, "expected an object of \"*\" or PCI address to {key: value}");
	json_object_foreach(v, key, val) {
		char sub[256];

		path_key(sub, sizeof(sub), path, key);
		if (strcmp(key, "*") && !is_bdf(key))
			return fail(p, sub, "expected \"*\" or a PCI address");
		if (!json_is_object(val))
			return fail(p, sub, "expected an object of strings");
		json_object_foreach(val, k2, v2)
			if (!json_is_string(v2)) {
				char sub2[300];

				path_key(sub2, sizeof(sub2), sub, k2);
				return fail(p, sub2, "expected a string");
			}
	}
	r->additional_info = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	return r->additional_info ? 0 : -ENOMEM;
}

static int parse_sriov_entry(struct cp *p, json_t *v, struct plugin_resource *r)
{
	json_t *f[RE_N];
	char sub[256];
	int ret;

	r->kind = PLUGIN_EXCLUSIVE;
	ret = object_fields(p, r->path, v, sriov_fields, RE_N, f);
	if (ret < 0)
		return ret;
	ret = set_names(p, r, f[RE_NAME], f[RE_PREFIX], PLUGIN_DEFAULT_SRIOV_PREFIX, true);
	if (ret < 0)
		return ret;
	if (f[RE_TYPE]) {
		_cleanup_free_ char *t = NULL;

		path_key(sub, sizeof(sub), r->path, "deviceType");
		if ((ret = get_string(p, sub, f[RE_TYPE], &t)) < 0)
			return ret;
		if (strcmp(t, "netDevice"))
			return fail(p, sub, "\"%s\" is not supported by rdmak (only \"netDevice\")", t);
	}
	path_key(sub, sizeof(sub), r->path, "selectors");
	if (!f[RE_SELECTORS])
		return fail(p, sub, "required");
	if (json_is_array(f[RE_SELECTORS])) {
		size_t i;
		json_t *it;

		if (json_array_size(f[RE_SELECTORS]) == 0)
			return fail(p, sub, "expected at least one selector object");
		r->sels = calloc(json_array_size(f[RE_SELECTORS]), sizeof(*r->sels));
		if (!r->sels)
			return -ENOMEM;
		json_array_foreach(f[RE_SELECTORS], i, it) {
			char sub2[280];

			path_idx(sub2, sizeof(sub2), sub, i);
			r->n_sels++;
			if ((ret = parse_sriov_selectors(p, sub2, it, &r->sels[i])) < 0)
				return ret;
		}
	} else {
		r->sels = calloc(1, sizeof(*r->sels));
		if (!r->sels)
			return -ENOMEM;
		r->n_sels = 1;
		if ((ret = parse_sriov_selectors(p, sub, f[RE_SELECTORS], &r->sels[0])) < 0)
			return ret;
	}
	if (f[RE_EXCLTOPO]) {
		path_key(sub, sizeof(sub), r->path, "excludeTopology");
		if ((ret = get_bool(p, sub, f[RE_EXCLTOPO], &r->exclude_topology)) < 0)
			return ret;
	}
	if (f[RE_INFO]) {
		path_key(sub, sizeof(sub), r->path, "additionalInfo");
		if ((ret = parse_additional_info(p, sub, f[RE_INFO], r)) < 0)
			return ret;
	}
	if (f[RE_ENVS]) {
		path_key(sub, sizeof(sub), r->path, "envs");
		if ((ret = parse_envs(p, sub, f[RE_ENVS], r)) < 0)
			return ret;
	}
	return 0;
}

/* ---- top level ----------------------------------------------------------------------- */

enum { TOP_INTERVAL, TOP_CONFIGLIST, TOP_RESOURCELIST, TOP_HEALTH, TOP_NETNS, TOP_N };
static const struct field top_fields[TOP_N] = {
	[TOP_INTERVAL] = { "periodicUpdateInterval", true },
	[TOP_CONFIGLIST] = { "configList", true },
	[TOP_RESOURCELIST] = { "resourceList", true },
	[TOP_HEALTH] = { "healthIntervalMs", false },
	[TOP_NETNS] = { "rdmaNetnsMode", false },
};

static void selector_clear(struct plugin_selector *s)
{
	plugin_strv_clear(&s->vendors);
	plugin_strv_clear(&s->devices);
	plugin_strv_clear(&s->drivers);
	plugin_strv_clear(&s->link_types);
	plugin_strv_clear(&s->if_names);
	plugin_strv_clear(&s->root_devices);
	plugin_strv_clear(&s->pci_addresses);
	for (size_t i = 0; i < s->n_pf_names; i++)
		plugin_pf_sel_clear(&s->pf_names[i]);
	free(s->pf_names);
}

void plugin_config_free(struct plugin_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_res; i++) {
		struct plugin_resource *r = &cfg->res[i];

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
	free(cfg);
}

static int parse_list(struct cp *p, struct plugin_config *cfg, const char *key, json_t *list, bool shared)
{
	size_t i;
	json_t *it;

	if (!json_is_array(list))
		return fail(p, key, "expected an array of objects");
	json_array_foreach(list, i, it) {
		struct plugin_resource *r = &cfg->res[cfg->n_res++];
		int ret;

		path_idx(r->path, sizeof(r->path), key, i);
		ret = shared ? parse_shared_entry(p, it, r) : parse_sriov_entry(p, it, r);
		if (ret < 0)
			return ret;
		for (size_t j = 0; j + 1 < cfg->n_res; j++) {
			char sub[64];

			if (strcmp(cfg->res[j].full_name, r->full_name))
				continue;
			path_key(sub, sizeof(sub), r->path, "resourceName");
			return fail(p, sub, "duplicate resource \"%s\" (also %s)", r->full_name, cfg->res[j].path);
		}
	}
	return 0;
}

int plugin_config_parse(const char *buf, size_t len, struct plugin_config **ret, char *err, size_t errlen)
{
	struct cp p = { err, errlen };
	struct plugin_config *cfg = NULL;
	json_error_t jerr;
	json_t *root, *f[TOP_N];
	size_t n = 0;
	int r;

	if (errlen)
		err[0] = '\0';
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fail(&p, NULL, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	r = object_fields(&p, "", root, top_fields, TOP_N, f);
	if (r < 0) {
		if (!json_is_object(root))
			fail(&p, NULL, "expected a JSON object with \"configList\" or \"resourceList\"");
		goto out;
	}
	if (!f[TOP_CONFIGLIST] && !f[TOP_RESOURCELIST]) {
		r = fail(&p, NULL, "expected \"configList\" (shared HCAs) or \"resourceList\" (VFs/PFs)");
		goto out;
	}
	for (int i = TOP_CONFIGLIST; i <= TOP_RESOURCELIST; i++) {
		if (f[i] && !json_is_array(f[i])) {
			r = fail(&p, top_fields[i].key, "expected an array of objects");
			goto out;
		}
		if (f[i])
			n += json_array_size(f[i]);
	}
	if (n == 0) {
		r = fail(&p, f[TOP_CONFIGLIST] ? "configList" : "resourceList", "expected at least one resource");
		goto out;
	}
	if (n > MAX_ENTRIES) {
		r = fail(&p, NULL, "more than %d resources", MAX_ENTRIES);
		goto out;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || !(cfg->res = calloc(n, sizeof(*cfg->res)))) {
		r = -ENOMEM;
		goto out;
	}
	cfg->periodic_update_s = PLUGIN_DEFAULT_RESCAN_S;
	cfg->health_interval_ms = PLUGIN_DEFAULT_HEALTH_MS;
	cfg->rdma_netns_mode = -1;
	if (f[TOP_INTERVAL]) {
		long long v;

		if ((r = get_int(&p, "periodicUpdateInterval", f[TOP_INTERVAL], 0, 86400 * 365, &v)) < 0)
			goto out;
		cfg->periodic_update_s = (int)v;
	}
	if (f[TOP_HEALTH]) {
		long long v;

		if ((r = get_int(&p, "healthIntervalMs", f[TOP_HEALTH], 10, 60000, &v)) < 0)
			goto out;
		cfg->health_interval_ms = (int)v;
	}
	if (f[TOP_NETNS]) {
		const char *m = json_string_value(f[TOP_NETNS]);

		if (!m || (strcmp(m, "shared") != 0 && strcmp(m, "exclusive") != 0)) {
			r = fail(&p, "rdmaNetnsMode", "expected \"shared\" or \"exclusive\"");
			goto out;
		}
		cfg->rdma_netns_mode = strcmp(m, "shared") == 0;
	}
	if (f[TOP_CONFIGLIST] && (r = parse_list(&p, cfg, "configList", f[TOP_CONFIGLIST], true)) < 0)
		goto out;
	if (f[TOP_RESOURCELIST] && (r = parse_list(&p, cfg, "resourceList", f[TOP_RESOURCELIST], false)) < 0)
		goto out;
	*ret = TAKE_PTR(cfg);
	r = 0;
out:
	if (r == -ENOMEM && errlen)
		snprintf(err, errlen, "out of memory");
	plugin_config_free(cfg);
	json_decref(root);
	return r;
}
