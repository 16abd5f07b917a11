/* The plugin's configuration keys: a declarative table of what it accepts, each value checked
 * where it is read, every refusal naming the JSON path. Nothing here touches the kernel or
 * sysfs, so the fuzzer (tests/fuzz/fuzz_cni_config.c) reaches all of it. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_link.h>

#include "cni/cni.h"
#include "log/log.h"
#include "util/strutil.h"

static int bad(struct cnispec_error *err, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(struct cnispec_error *err, const char *path, const char *fmt, ...)
{
	char why[CNISPEC_DETAILS_MAX - 64], msg[CNISPEC_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof(msg), "invalid network configuration: %s", path);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, msg, "%s: %s", path, why);
}

static const char *const link_names[] = {
	[CNI_LINK_MACVLAN] = "macvlan",
	[CNI_LINK_IPOIB] = "ipoib",
	[CNI_LINK_HOSTDEV] = "hostdev",
};

const char *cni_link_kind_name(enum cni_link_kind k)
{
	return (unsigned)k < sizeof(link_names) / sizeof(link_names[0]) ? link_names[k] : "?";
}

static const struct {
	const char *name;
	uint32_t mode;
} macvlan_modes[] = {
	{ "bridge", MACVLAN_MODE_BRIDGE },
	{ "private", MACVLAN_MODE_PRIVATE },
	{ "vepa", MACVLAN_MODE_VEPA },
	{ "passthru", MACVLAN_MODE_PASSTHRU },
};

const char *cni_macvlan_mode_name(uint32_t mode)
{
	for (size_t i = 0; i < sizeof(macvlan_modes) / sizeof(macvlan_modes[0]); i++)
		if (macvlan_modes[i].mode == mode)
			return macvlan_modes[i].name;
	return "?";
}

static int get_string(const json_t *v, const char *path, const char **ret, struct cnispec_error *err)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return bad(err, path, "expected a string");
	*ret = json_string_value(v);
	return 0;
}

static int get_bool(const json_t *v, const char *path, bool *ret, struct cnispec_error *err)
{
	if (!json_is_boolean(v))
		return bad(err, path, "expected true or false");
	*ret = json_is_true(v);
	return 0;
}

static int get_uint(const json_t *v, const char *path, unsigned long long lo, unsigned long long hi,
		    unsigned long long *ret, struct cnispec_error *err)
{
	json_int_t i;

	if (!json_is_integer(v))
		return bad(err, path, "expected an integer from %llu to %llu", lo, hi);
	i = json_integer_value(v);
	if (i < 0 || (unsigned long long)i < lo || (unsigned long long)i > hi)
		return bad(err, path, "%lld is out of range (%llu to %llu)", (long long)i, lo, hi);
	*ret = (unsigned long long)i;
	return 0;
}

static int get_ifname(const json_t *v, const char *path, char *ret, struct cnispec_error *err)
{
	const char *s, *why = NULL;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (!cnispec_ifname_valid(s, &why))
		return bad(err, path, "\"%.64s\" is not a network interface name (%s)", s, why ? why : "invalid");
	snprintf(ret, NL_IFNAMSIZ, "%s", s);
	return 0;
}

static bool has_dotdot(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

static int get_abs_path(const json_t *v, const char *path, char **ret, struct cnispec_error *err)
{
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (s[0] != '/' || strlen(s) >= 4096 || has_dotdot(s))
		return bad(err, path, "\"%.64s\" is not an absolute path without \"..\"", s);
	free(*ret);
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int get_bdf(const json_t *v, const char *path, char *ret, struct cnispec_error *err)
{
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	/* a device plugin may hand out the short form "1b:00.2"; sysfs names carry the domain */
	if (strlen(s) == 7 && !hw_is_bdf(s)) {
		char full[HW_BDF_MAX];
		snprintf(full, sizeof(full), "0000:%s", s);
		if (hw_is_bdf(full)) {
			snprintf(ret, HW_BDF_MAX, "%s", full);
			return 0;
		}
	}
	if (!hw_is_bdf(s))
		return bad(err, path, "\"%.64s\" is not a PCI address (expected domain:bus:device.function, 0000:1b:00.2)", s);
	snprintf(ret, HW_BDF_MAX, "%s", s);
	return 0;
}

/* "aa:bb:cc:dd:ee:ff" (n = 6) or an 8-byte GUID "00:02:c9:03:00:21:6e:70" (n = 8). */
static bool parse_hex_bytes(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]))
			return false;
		char hex[3] = { s[0], s[1], 0 };
		out[i] = (uint8_t)strtoul(hex, NULL, 16);
		s += 2;
		if (i + 1 < n && *s++ != ':')
			return false;
	}
	return *s == '\0';
}

static int get_mac(const json_t *v, const char *path, struct cni_config *c, struct cnispec_error *err)
{
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (!parse_hex_bytes(s, c->mac, 6))
		return bad(err, path, "\"%.64s\" is not a MAC address (aa:bb:cc:dd:ee:ff)", s);
	if (c->mac[0] & 1)
		return bad(err, path, "%s is a multicast address", s);
	if (!(c->mac[0] | c->mac[1] | c->mac[2] | c->mac[3] | c->mac[4] | c->mac[5]))
		return bad(err, path, "00:00:00:00:00:00 is not a usable address");
	c->has_mac = true;
	return 0;
}

static int get_guid(const json_t *v, const char *path, struct cni_config *c, struct cnispec_error *err)
{
	const char *s;
	uint8_t b[8];
	uint64_t g = 0;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (!parse_hex_bytes(s, b, 8))
		return bad(err, path, "\"%.64s\" is not a GUID (eight bytes: 00:02:c9:03:00:21:6e:70)", s);
	for (int i = 0; i < 8; i++)
		g = g << 8 | b[i];
	/* ib-sriov-cni#66: a zero GUID is what an unconfigured VF has, and all ones is the
	 * "unset" value; neither makes a VF usable on the fabric */
	if (g == 0 || g == UINT64_MAX)
		return bad(err, path, "%s cannot be a port's GUID", s);
	c->guid = g;
	c->has_guid = true;
	return 0;
}

static int get_pkey(const json_t *v, const char *path, struct cni_config *c, struct cnispec_error *err)
{
	unsigned long long k;

	if (json_is_string(v)) {
		if (str_to_u64(json_string_value(v), 0, &k) < 0 || k > 0xffff)
			return bad(err, path, "\"%.32s\" is not a partition key (0x0001 to 0xffff)", json_string_value(v));
	} else if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) > 0xffff)
			return bad(err, path, "%lld is not a partition key (0x0001 to 0xffff)", (long long)json_integer_value(v));
		k = (unsigned long long)json_integer_value(v);
	} else {
		return bad(err, path, "expected a number or a string such as \"0x8001\"");
	}
	/* the low 15 bits are the partition; 0x0000 and 0x8000 are no partition at all */
	if ((k & 0x7fff) == 0)
		return bad(err, path, "0x%04llx names no partition", k);
	c->pkey = (uint16_t)k;
	c->has_pkey = true;
	return 0;
}

struct seen {
	bool link, mode, master, pkey, device, device_id, guid;
};

static int take_key(struct cni_config *c, struct seen *s, const char *key, const json_t *v, struct cnispec_error *err)
{
	unsigned long long u;
	const char *str;
	int r;

	if (!strcmp(key, "link")) {
		if ((r = get_string(v, key, &str, err)) < 0)
			return r;
		for (size_t i = 0; i < sizeof(link_names) / sizeof(link_names[0]); i++)
			if (!strcmp(str, link_names[i])) {
				c->link = (enum cni_link_kind)i;
				s->link = true;
				return 0;
			}
		return bad(err, key, "\"%.32s\" is not a link kind (macvlan, ipoib or hostdev)", str);
	}
	if (!strcmp(key, "mode")) {
		if ((r = get_string(v, key, &str, err)) < 0)
			return r;
		for (size_t i = 0; i < sizeof(macvlan_modes) / sizeof(macvlan_modes[0]); i++)
			if (!strcmp(str, macvlan_modes[i].name)) {
				c->macvlan_mode = macvlan_modes[i].mode;
				s->mode = true;
				return 0;
			}
		return bad(err, key, "\"%.32s\" is not a macvlan mode (bridge, private, vepa or passthru)", str);
	}
	if (!strcmp(key, "master")) {
		s->master = true;
		return get_ifname(v, key, c->master, err);
	}
	if (!strcmp(key, "device")) {
		s->device = true;
		return get_ifname(v, key, c->device, err);
	}
	if (!strcmp(key, "deviceID") || !strcmp(key, "pciBusID")) {
		char bdf[HW_BDF_MAX];
		/* Multus writes both keys with the same address */
		if ((r = get_bdf(v, key, bdf, err)) < 0)
			return r;
		if (s->device_id && strcmp(bdf, c->device_id))
			return bad(err, key, "%s differs from the other PCI address given (%s)", bdf, c->device_id);
		memcpy(c->device_id, bdf, sizeof(bdf));
		s->device_id = true;
		return 0;
	}
	if (!strcmp(key, "guid")) {
		s->guid = true;
		return get_guid(v, key, c, err);
	}
	if (!strcmp(key, "pkey")) {
		s->pkey = true;
		return get_pkey(v, key, c, err);
	}
	if (!strcmp(key, "sysfs"))
		return get_abs_path(v, key, &c->sysfs, err);
	if (!strcmp(key, "stateDir"))
		return get_abs_path(v, key, &c->state_dir, err);
	if (!strcmp(key, "logFile"))
		return get_abs_path(v, key, &c->log_file, err);
	if (!strcmp(key, "logLevel")) {
		if ((r = get_string(v, key, &str, err)) < 0)
			return r;
		if (log_level_from_string(str, &c->log_level) < 0)
			return bad(err, key, "\"%.32s\" is not a level (error, warning, info or debug)", str);
		c->has_log_level = true;
		return 0;
	}
	if (!strcmp(key, "mtu")) {
		/* 68: the IPv4 minimum every netdev accepts; 65535: IP_MAX_MTU */
		if ((r = get_uint(v, key, 68, 65535, &u, err)) < 0)
			return r;
		c->mtu = (unsigned)u;
		return 0;
	}
	if (!strcmp(key, "mac"))
		return get_mac(v, key, c, err);
	if (!strcmp(key, "rdmaIsolation"))
		return get_bool(v, key, &c->rdma_isolation, err);
	if (!strcmp(key, "policyRouting"))
		return get_bool(v, key, &c->policy_routing, err);
	if (!strcmp(key, "tableBase")) {
		if ((r = get_uint(v, key, 1, 0x7fff0000, &u, err)) < 0)
			return r;
		c->table_base = (uint32_t)u;
		return 0;
	}
	if (!strcmp(key, "rulePriority")) {
		/* below 32766 (main) and above 0 (local): between the kernel's own rules */
		if ((r = get_uint(v, key, 1, 32765, &u, err)) < 0)
			return r;
		c->rule_priority = (uint32_t)u;
		return 0;
	}
	if (!strcmp(key, "ipMasq"))
		return cnispec_fail_unsupported(err, key, v, "rdmak-cni sets up no masquerading: RDMA traffic is not NATed");
	return cnispec_fail_unsupported(err, key, v, "docs/cni.md lists the keys rdmak-cni accepts");
}

/* runtimeConfig: what the runtime derived from the capabilities we declare. Keys for
 * capabilities we do not use are ignored: the runtime passes what the whole chain asked for. */
static int take_runtime(struct cni_config *c, struct seen *s, const json_t *rc, struct cnispec_error *err)
{
	const json_t *v;
	int r;

	if ((v = json_object_get(rc, "deviceID"))) {
		char bdf[HW_BDF_MAX];
		if ((r = get_bdf(v, "runtimeConfig.deviceID", bdf, err)) < 0)
			return r;
		/* the device plugin's allocation is the truth for this pod */
		memcpy(c->device_id, bdf, sizeof(bdf));
		s->device_id = true;
	}
	if ((v = json_object_get(rc, "infinibandGUID"))) {
		s->guid = true;
		if ((r = get_guid(v, "runtimeConfig.infinibandGUID", c, err)) < 0)
			return r;
	}
	if ((v = json_object_get(rc, "mac")) && (r = get_mac(v, "runtimeConfig.mac", c, err)) < 0)
		return r;
	return 0;
}

static int cross_check(struct cni_config *c, const struct seen *s, struct cnispec_error *err)
{
	if (!s->link)
		return bad(err, "link", "missing: macvlan, ipoib or hostdev");
	switch (c->link) {
	case CNI_LINK_MACVLAN:
	case CNI_LINK_IPOIB:
		if (!s->master)
			return bad(err, "master", "missing: the %s link needs the netdev it is made on",
				   cni_link_kind_name(c->link));
		if (s->device)
			return bad(err, "device", "only for link hostdev (a %s link is made on master)", cni_link_kind_name(c->link));
		if (s->guid)
			return bad(err, "guid", "only for link hostdev (an InfiniBand VF)");
		/* deviceID is tolerated: Multus writes it into every plugin of a network whose
		 * resource has device IDs, shared ones included */
		if (c->rdma_isolation)
			return bad(err, "rdmaIsolation", "only for link hostdev: a %s child shares its master's RDMA device, "
				   "which cannot move into one pod", cni_link_kind_name(c->link));
		if (c->link == CNI_LINK_IPOIB) {
			if (s->mode)
				return bad(err, "mode", "only for link macvlan");
			if (c->has_mac)
				return bad(err, "mac", "an IPoIB address is the port's GID, not something to set");
		} else if (s->pkey) {
			return bad(err, "pkey", "only for links ipoib and hostdev");
		}
		break;
	case CNI_LINK_HOSTDEV:
		if (s->master)
			return bad(err, "master", "only for links macvlan and ipoib (hostdev moves device or deviceID)");
		if (s->mode)
			return bad(err, "mode", "only for link macvlan");
		if (s->device && s->device_id)
			return bad(err, "device", "give device or deviceID, not both (deviceID %s is also set)", c->device_id);
		if (!s->device && !s->device_id)
			return bad(err, "deviceID", "missing: hostdev needs deviceID (or runtimeConfig.deviceID, as Multus "
				   "passes the device plugin's allocation) or device");
		if (s->guid && !s->device_id)
			return bad(err, "guid", "needs deviceID: the GUID is set through the VF's PF");
		break;
	}
	return 0;
}

int cni_config_parse(const struct cnispec_conf *conf, struct cni_config *ret, struct cnispec_error *err)
{
	struct cni_config c = {
		.macvlan_mode = MACVLAN_MODE_BRIDGE,
		.policy_routing = true,
		.table_base = CNI_DEFAULT_TABLE_BASE,
		.rule_priority = CNI_DEFAULT_RULE_PRIORITY,
	};
	struct seen s = { 0 };
	const char *key;
	json_t *v;
	int r = 0;

	json_object_foreach(conf->plugin, key, v) {
		if ((r = take_key(&c, &s, key, v, err)) < 0)
			goto fail;
	}
	if (conf->runtime_config && (r = take_runtime(&c, &s, conf->runtime_config, err)) < 0)
		goto fail;
	if ((r = cross_check(&c, &s, err)) < 0)
		goto fail;
	if (!c.state_dir && !(c.state_dir = strdup(CNI_DEFAULT_STATE_DIR))) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	cni_config_clear(&c);
	return r;
}

void cni_config_clear(struct cni_config *c)
{
	free(c->sysfs);
	free(c->state_dir);
	free(c->log_file);
	c->sysfs = c->state_dir = c->log_file = NULL;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t cni_route_table(uint32_t table_base, const char *ifname)
{
	size_t len = strlen(ifname), i = len;
	uint64_t t;

	while (i > 0 && isdigit((unsigned char)ifname[i - 1]))
		i--;
	/* net1 -> base + 1: the numbers Multus gives (net1..net8) make the tables of seed 004's
	 * eight rails readable. A name with no number (or one too long to be an index) gets a
	 * hashed slot above every numbered one. */
	if (i < len && len - i <= 5 && strtoul(ifname + i, NULL, 10) <= 65535)
		t = (uint64_t)table_base + strtoul(ifname + i, NULL, 10);
	else
		t = (uint64_t)table_base + 65536 + (fnv1a(ifname) & 0xffff);
	if (t == 0 || (t >= 253 && t <= 255) || t > 0x7fffffff)
		return 0;
	return (uint32_t)t;
}
