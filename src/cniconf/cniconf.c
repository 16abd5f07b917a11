/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-cni's configuration keys: a declarative table of what it accepts (src/dispatch), each
 * value checked by its row's reader, every refusal naming the JSON path. The parse touches
 * neither the kernel nor sysfs, so the fuzzer (tests/fuzz/fuzz_cni_config.c) reaches all of it;
 * cniconf_resolve and cniconf_open_dirs then place what it names beneath the node's folders. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>

#include "cniconf/cniconf.h"
#include "dispatch/dispatch.h"
#include "k8s/names.h"
#include "log/log.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"

static const char *const link_names[] = {
	[CNICONF_LINK_MACVLAN] = "macvlan",
	[CNICONF_LINK_IPOIB] = "ipoib",
	[CNICONF_LINK_HOSTDEV] = "hostdev",
	[CNICONF_LINK_RDMA] = "rdma",
};

const char *cniconf_link_name(enum cniconf_link k)
{
	return (unsigned)k < ELEMENTSOF(link_names) ? link_names[k] : "?";
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

const char *cniconf_macvlan_mode_name(uint32_t mode)
{
	for (size_t i = 0; i < ELEMENTSOF(macvlan_modes); i++)
		if (macvlan_modes[i].mode == mode)
			return macvlan_modes[i].name;
	return "?";
}

/* The reader's state: the configuration, and the two keys whose zero value is a real choice
 * (link macvlan, mode bridge), kept as an index with -1 for "not given". The other "given"
 * questions the cross-check asks are answered by the config itself (a name set, has_guid...). */
struct reader {
	struct cniconf c;
	bool legacy_fabric_ok; /* DEL, GC: a "fabric" of the shape before fabrics were the node's */
	int link, mode;
	bool isolation_given;
	bool vlan_qos, vlan_proto; /* given: they need vlan */
};

/* ---- the anchors' keys ----------------------------------------------------------------------
 * sriov-cni, ib-sriov-cni and OpenShift's macvlan document keys of their own. Each is read as the
 * anchor means it: what rdmak-cni does too is applied; a value asking for what rdmak-cni does not
 * do is refused naming the key and why, since silently dropping it would give the pod another
 * network than the one configured. */

/* sriov-cni's VF settings (pkg/config LoadConf's checks, pkg/sriov ApplyVFConfig's meaning):
 * set through the VF's PF at ADD, put back at DEL (hostdev.c). */
static int read_vlan(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	long long n;
	int r = dispatch_int_range(d, path, v, 0, 4094, &n);

	if (r < 0)
		return r;
	c->vlan = (uint32_t)n;
	c->vf_keys |= CNICONF_VF_VLAN;
	return 0;
}

static int read_vlan_qos(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	long long n;
	int r = dispatch_int_range(d, path, v, 0, 7, &n);

	if (r < 0)
		return r;
	rd->c.vlan_qos = (uint32_t)n;
	rd->vlan_qos = true;
	return 0;
}

static int read_vlan_proto(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	/* sriov-cni lowercases it first: "802.1Q" and "802.1q" alike */
	if (!strcasecmp(s, "802.1q"))
		rd->c.vlan_proto = ETH_P_8021Q;
	else if (!strcasecmp(s, "802.1ad"))
		rd->c.vlan_proto = ETH_P_8021AD;
	else
		return dispatch_fail(d, path,
				     "\"%.32s\" is not a VLAN protocol (802.1Q or 802.1ad)", s);
	rd->vlan_proto = true;
	return 0;
}

/* min_tx_rate and max_tx_rate: Mb/s, 0 no limit; either one sets both (the other to 0), as
 * sriov-cni does. */
static int read_rate(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	const char *key = strrchr(path, '.') ? strrchr(path, '.') + 1 : path;
	long long n;
	int r = dispatch_int_range(d, path, v, 0, UINT32_MAX, &n);

	if (r < 0)
		return r;
	*(strcmp(key, "min_tx_rate") ? &c->max_tx_rate : &c->min_tx_rate) = (uint32_t)n;
	c->vf_keys |= CNICONF_VF_RATE;
	return 0;
}

/* spoofchk and trust: "on" or "off" */
static int read_on_off(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	const char *key = strrchr(path, '.') ? strrchr(path, '.') + 1 : path, *s;
	bool spoof = !strcmp(key, "spoofchk"), on;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (strcmp(s, "on") && strcmp(s, "off"))
		return dispatch_fail(d, path, "\"%.32s\" is neither \"on\" nor \"off\"", s);
	on = !strcmp(s, "on");
	*(spoof ? &c->spoofchk : &c->trust) = on;
	c->vf_keys |= spoof ? CNICONF_VF_SPOOFCHK : CNICONF_VF_TRUST;
	return 0;
}

static int read_link_state(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	static const char *const states[] = {
		[IFLA_VF_LINK_STATE_AUTO] = "auto",
		[IFLA_VF_LINK_STATE_ENABLE] = "enable",
		[IFLA_VF_LINK_STATE_DISABLE] = "disable",
	};
	struct cniconf *c = t;
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(states); i++)
		if (!strcmp(s, states[i])) {
			c->link_state = (uint32_t)i;
			c->vf_keys |= CNICONF_VF_LINK_STATE;
			return 0;
		}
	return dispatch_fail(d, path, "\"%.32s\" is not a link state (auto, enable or disable)", s);
}

const char *cniconf_vf_key_name(unsigned bit)
{
	switch (bit) {
	case CNICONF_VF_VLAN: return "vlan";
	case CNICONF_VF_MAC: return "mac";
	case CNICONF_VF_RATE: return "min_tx_rate/max_tx_rate";
	case CNICONF_VF_SPOOFCHK: return "spoofchk";
	case CNICONF_VF_TRUST: return "trust";
	case CNICONF_VF_LINK_STATE: return "link_state";
	}
	return "?";
}

/* OpenShift's macvlan: linkInContainer true makes the child on a master inside the pod. */
static int read_link_in_container(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	bool b;
	int r = dispatch_bool(d, path, v, &b);

	(void)t;
	if (r < 0)
		return r;
	if (b)
		return dispatch_refuse(
			d, path, v,
			"rdmak-cni makes the child on a master in the host's network "
			"namespace, not on one inside the pod");
	dispatch_warn(d, path,
		      "accepted: false is what rdmak-cni always does (the master is the host's)");
	return 0;
}

/* ib-sriov-cni's ibKubernetesEnabled true: wait for ib-kubernetes to have written the pod's GUID
 * and pkey into the subnet manager. */
static int read_ib_kubernetes(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	bool b;
	int r = dispatch_bool(d, path, v, &b);

	(void)t;
	if (r < 0)
		return r;
	if (b)
		return dispatch_refuse(
			d, path, v,
			"rdmak-cni does not wait for ib-kubernetes: pass the GUID as "
			"runtimeConfig.infinibandGUID (capability infinibandGUID) or guid");
	dispatch_warn(d, path,
		      "accepted: false is what rdmak-cni always does (no ib-kubernetes handshake)");
	return 0;
}

static int read_link(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(link_names); i++)
		if (!strcmp(s, link_names[i])) {
			*(int *)t = (int)i;
			return 0;
		}
	return dispatch_fail(d, path,
			     "\"%.32s\" is not a link kind (macvlan, ipoib, hostdev or rdma)", s);
}

static int read_mode(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(macvlan_modes); i++)
		if (!strcmp(s, macvlan_modes[i].name)) {
			*(int *)t = (int)i;
			return 0;
		}
	return dispatch_fail(
		d, path, "\"%.32s\" is not a macvlan mode (bridge, private, vepa or passthru)", s);
}

static int read_ifname(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s, *why = NULL;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!cnispec_ifname_valid(s, &why))
		return dispatch_fail(d, path, "\"%.64s\" is not a network interface name (%s)", s,
				     why ? why : "invalid");
	snprintf(t, NL_IFNAMSIZ, "%s", s);
	return 0;
}

static bool has_dotdot(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

static int read_abs_path(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (s[0] != '/' || strlen(s) >= 4096 || has_dotdot(s))
		return dispatch_fail(d, path, "\"%.64s\" is not an absolute path without \"..\"",
				     s);
	return dispatch_strdup(d, path, v, false, t);
}

/* runtimeConfig.deviceID: the device plugin's allocation is the truth for this pod, it
 * replaces the configuration's deviceID. */
static int read_bdf(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	/* a device plugin may hand out the short form "1b:00.2"; sysfs names carry the domain */
	if (strlen(s) == 7 && !hw_is_bdf(s)) {
		char full[HW_BDF_MAX];
		snprintf(full, sizeof(full), "0000:%s", s);
		if (hw_is_bdf(full)) {
			snprintf(t, HW_BDF_MAX, "%s", full);
			return 0;
		}
	}
	if (!hw_is_bdf(s))
		return dispatch_fail(
			d, path,
			"\"%.64s\" is not a PCI address (expected domain:bus:device.function, 0000:1b:00.2)",
			s);
	snprintf(t, HW_BDF_MAX, "%s", s);
	return 0;
}

/* deviceID and pciBusID: Multus writes both keys with the same address. */
static int read_device_id(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	char bdf[HW_BDF_MAX], *device_id = t;
	int r = read_bdf(d, path, v, bdf);

	if (r < 0)
		return r;
	if (device_id[0] && strcmp(bdf, device_id))
		return dispatch_fail(d, path, "%s differs from the other PCI address given (%s)",
				     bdf, device_id);
	memcpy(device_id, bdf, sizeof(bdf));
	return 0;
}

/* "aa:bb:cc:dd:ee:ff" (n = 6) or an 8-byte GUID "00:02:c9:03:00:21:6e:70" (n = 8). */
static bool parse_hex_bytes(const char *s, uint8_t *out, size_t n)
{
	return str_parse_hwaddr(s, out, n) == (int)n;
}

/* The readers of a value and its has_ flag take the whole config (offset of c). */
static int read_mac(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!parse_hex_bytes(s, c->mac, 6))
		return dispatch_fail(d, path, "\"%.64s\" is not a MAC address (aa:bb:cc:dd:ee:ff)",
				     s);
	if (c->mac[0] & 1)
		return dispatch_fail(d, path, "%s is a multicast address", s);
	if (!(c->mac[0] | c->mac[1] | c->mac[2] | c->mac[3] | c->mac[4] | c->mac[5]))
		return dispatch_fail(d, path, "00:00:00:00:00:00 is not a usable address");
	c->has_mac = true;
	return 0;
}

static int read_guid(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	const char *s;
	uint8_t b[8];
	uint64_t g = 0;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!parse_hex_bytes(s, b, 8))
		return dispatch_fail(
			d, path, "\"%.64s\" is not a GUID (eight bytes: 00:02:c9:03:00:21:6e:70)",
			s);
	for (int i = 0; i < 8; i++)
		g = g << 8 | b[i];
	/* ib-sriov-cni#66: a zero GUID is what an unconfigured VF has, and all ones is the
	 * "unset" value; neither makes a VF usable on the fabric */
	if (g == 0 || g == UINT64_MAX)
		return dispatch_fail(d, path, "%s cannot be a port's GUID", s);
	c->guid = g;
	c->has_guid = true;
	c->guid_key = strncmp(path, "runtimeConfig", 13) ? "guid" : "runtimeConfig.infinibandGUID";
	return 0;
}

/* ---- "fabric": a fabric of the node's fabrics file, by name (docs/fabric.md) ------------------
 * Its address, credentials, CA and timeout are the node's: a network config is a namespace
 * user's, and a root process on every node must not send the node's credentials where such a
 * user says, nor read a file such a user names as credentials. The keys that did, before fabrics
 * were the node's, are refused naming what to write instead; DEL and GC of an attachment made
 * then still take them (a runtime keeps the config of ADD for DEL), the URL only to find the
 * node's fabric of that address. */
#define FABRIC_NODE_KEY                                                                            \
	"belongs to the node, not to a network: the node's fabrics file (" UFM_FABRICS_FILE        \
	", docs/fabric.md) holds it; write \"fabric\": \"NAME\" naming one of the node's fabrics"

static int read_fabric_name(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf_fabric *f = &((struct reader *)t)->c.fabric;
	const char *s, *why = NULL;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	if (!k8s_dns1123_label(s, &why))
		return dispatch_fail(d, path, "\"%.64s\" is not a fabric name: %s", s, why);
	snprintf(f->name, sizeof(f->name), "%s", s);
	return 0;
}

static int read_membership(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	static const char *const names[] = { "full", "limited", NULL };
	int i, r = dispatch_enum(d, path, v, names, &i);

	if (r == 0)
		((struct reader *)t)->c.fabric.join.limited = i == 1;
	return r;
}

static int read_index0(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_bool(d, path, v, &((struct reader *)t)->c.fabric.join.index0);
}

static int read_ipoib(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_bool(d, path, v, &((struct reader *)t)->c.fabric.join.ip_over_ib);
}

static int read_legacy_url(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return dispatch_strdup(d, path, v, true, &((struct reader *)t)->c.fabric.legacy_url);
}

#define FABRIC_JOIN_FIELDS                                                                         \
	DISPATCH_FIELD("membership", JSON_STRING, read_membership, 0, 0),                          \
		DISPATCH_FIELD("index0", DISPATCH_BOOL, read_index0, 0, 0),                        \
		DISPATCH_FIELD("ipOverIb", DISPATCH_BOOL, read_ipoib, 0, 0)

static const struct dispatch_field fabric_fields[] = {
	DISPATCH_FIELD_WHY("name", JSON_STRING, read_fabric_name, 0, DISPATCH_MANDATORY,
			   "one of the node's fabrics"),
	FABRIC_JOIN_FIELDS,
	DISPATCH_REFUSE("ufm", "the fabric manager's address " FABRIC_NODE_KEY),
	DISPATCH_REFUSE("credentials", "the fabric manager's credentials " FABRIC_NODE_KEY),
	DISPATCH_REFUSE("ca", "the fabric manager's CA " FABRIC_NODE_KEY),
	DISPATCH_REFUSE("timeoutSeconds", "the fabric manager's timeout " FABRIC_NODE_KEY),
	{},
};

/* DEL and GC: the same, and the old keys taken (the URL kept, the rest ignored) */
static const struct dispatch_field fabric_legacy_fields[] = {
	DISPATCH_FIELD("name", JSON_STRING, read_fabric_name, 0, 0),
	FABRIC_JOIN_FIELDS,
	DISPATCH_FIELD("ufm", JSON_STRING, read_legacy_url, 0, 0),
	DISPATCH_IGNORE("credentials", "the node's fabrics file names the credentials"),
	DISPATCH_IGNORE("ca", "the node's fabrics file names the CA"),
	DISPATCH_IGNORE("timeoutSeconds", "the node's fabrics file sets the timeout"),
	{},
};

/* "fabric": "NAME", or {"name": "NAME", "membership", "index0", "ipOverIb"} */
static int read_fabric(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	struct cniconf_fabric *f = &rd->c.fabric;
	int r;

	f->join = (struct ufm_join){ .ip_over_ib = true };
	if (json_is_string(v))
		r = read_fabric_name(d, path, v, t);
	else if (json_is_object(v))
		r = dispatch_run(d, path, v,
				 rd->legacy_fabric_ok ? fabric_legacy_fields : fabric_fields,
				 DISPATCH_UNKNOWN_REFUSE, rd);
	else
		return dispatch_fail(d, path,
				     "expected the name of one of the node's fabrics, or an object "
				     "with it as \"name\", got %s",
				     dispatch_type_name(v));
	if (r < 0)
		return r;
	if (!f->name[0] && !f->legacy_url)
		return dispatch_fail_kind(d, DISPATCH_ERR_MISSING, path,
					  "missing name (one of the node's fabrics)");
	f->set = true;
	return 0;
}

/* A number, or a string such as "0x8001". */
static int read_pkey(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	unsigned long long k;

	if (json_is_string(v)) {
		if (str_to_u64(json_string_value(v), 0, &k) < 0 || k > 0xffff)
			return dispatch_fail(d, path,
					     "\"%.32s\" is not a partition key (0x0001 to 0xffff)",
					     json_string_value(v));
	} else if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) > 0xffff)
			return dispatch_fail(d, path,
					     "%lld is not a partition key (0x0001 to 0xffff)",
					     (long long)json_integer_value(v));
		k = (unsigned long long)json_integer_value(v);
	} else {
		return dispatch_fail(d, path, "expected a number or a string such as \"0x8001\"");
	}
	/* the low 15 bits are the partition; 0x0000 and 0x8000 are no partition at all */
	if ((k & 0x7fff) == 0)
		return dispatch_fail(d, path, "0x%04llx names no partition", k);
	c->pkey = (uint16_t)k;
	c->has_pkey = true;
	return 0;
}

static int read_log_level(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cniconf *c = t;
	const char *s;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (log_level_from_string(s, &c->log_level) < 0)
		return dispatch_fail(d, path,
				     "\"%.32s\" is not a level (error, warning, info or debug)", s);
	c->has_log_level = true;
	return 0;
}

static int read_u32(struct dispatch_ctx *d, const char *path, json_t *v, long long lo, long long hi,
		    uint32_t *ret)
{
	long long u;
	int r = dispatch_int_range(d, path, v, lo, hi, &u);

	if (r == 0)
		*ret = (uint32_t)u;
	return r;
}

/* 68: the IPv4 minimum every netdev accepts; 65535: IP_MAX_MTU */
static int read_mtu(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_u32(d, path, v, 68, 65535, t);
}

static int read_table_base(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_u32(d, path, v, 1, 0x7fff0000, t);
}

/* below 32766 (main) and above 0 (local): between the kernel's own rules */
static int read_rule_priority(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_u32(d, path, v, 1, 32765, t);
}

#define CFG(field) offsetof(struct reader, c.field)
/* Integer rows are DISPATCH_ANY so that a wrong type is told the range too. */
static const struct dispatch_field plugin_fields[] = {
	DISPATCH_FIELD("link", JSON_STRING, read_link, offsetof(struct reader, link), 0),
	DISPATCH_FIELD("mode", JSON_STRING, read_mode, offsetof(struct reader, mode), 0),
	DISPATCH_FIELD("master", JSON_STRING, read_ifname, CFG(master), 0),
	DISPATCH_FIELD("device", JSON_STRING, read_ifname, CFG(device), 0),
	DISPATCH_FIELD("deviceID", JSON_STRING, read_device_id, CFG(device_id), 0),
	DISPATCH_FIELD("pciBusID", JSON_STRING, read_device_id, CFG(device_id), 0),
	DISPATCH_FIELD("guid", JSON_STRING, read_guid, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("pkey", DISPATCH_ANY, read_pkey, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("fabric", DISPATCH_ANY, read_fabric, 0, 0),
	DISPATCH_FIELD("sysfs", JSON_STRING, read_abs_path, CFG(sysfs), 0),
	DISPATCH_FIELD("stateDir", JSON_STRING, read_abs_path, CFG(state_dir), 0),
	DISPATCH_FIELD("logFile", JSON_STRING, read_abs_path, CFG(log_file), 0),
	DISPATCH_FIELD("logLevel", JSON_STRING, read_log_level, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("mtu", DISPATCH_ANY, read_mtu, CFG(mtu), 0),
	DISPATCH_FIELD("mac", JSON_STRING, read_mac, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("rdmaIsolation", DISPATCH_BOOL, NULL, CFG(rdma_isolation), 0),
	DISPATCH_FIELD("policyRouting", DISPATCH_BOOL, NULL, CFG(policy_routing), 0),
	DISPATCH_FIELD("tableBase", DISPATCH_ANY, read_table_base, CFG(table_base), 0),
	DISPATCH_FIELD("rulePriority", DISPATCH_ANY, read_rule_priority, CFG(rule_priority), 0),
	DISPATCH_REFUSE("ipMasq", "rdmak-cni sets up no masquerading: RDMA traffic is not NATed"),
	/* the anchors' keys (docs/cni.md, "Migrating from ...") */
	DISPATCH_FIELD("vlan", DISPATCH_ANY, read_vlan, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("vlanQoS", DISPATCH_ANY, read_vlan_qos, 0, 0),
	DISPATCH_FIELD("vlanProto", DISPATCH_ANY, read_vlan_proto, 0, 0),
	DISPATCH_FIELD("spoofchk", DISPATCH_ANY, read_on_off, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("trust", DISPATCH_ANY, read_on_off, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("min_tx_rate", DISPATCH_ANY, read_rate, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("max_tx_rate", DISPATCH_ANY, read_rate, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("link_state", DISPATCH_ANY, read_link_state, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("linkInContainer", DISPATCH_ANY, read_link_in_container, 0, 0),
	DISPATCH_FIELD("ibKubernetesEnabled", DISPATCH_ANY, read_ib_kubernetes, 0, 0),
	DISPATCH_REFUSE("hwaddr",
			"rdmak-cni finds the device by device (its name) or deviceID/pciBusID "
			"(its PCI address), not by MAC address"),
	DISPATCH_REFUSE("kernelpath",
			"rdmak-cni finds the device by device (its name) or deviceID/pciBusID "
			"(its PCI address), not by sysfs path"),
	{},
};

/* runtimeConfig: what the runtime derived from the capabilities we declare. Keys for
 * capabilities we do not use are ignored: the runtime passes what the whole chain asked for. */
static const struct dispatch_field runtime_fields[] = {
	DISPATCH_FIELD("deviceID", JSON_STRING, read_bdf, CFG(device_id), 0),
	DISPATCH_FIELD("infinibandGUID", JSON_STRING, read_guid, offsetof(struct reader, c), 0),
	DISPATCH_FIELD("mac", JSON_STRING, read_mac, offsetof(struct reader, c), 0),
	{},
};

/* Without `link`, the kind the anchor's config shape names (docs/cni.md, "The link kind from the
 * configuration's shape"): the anchors' `type` named it, and rdmak-cni never sees that type.
 *   master + mode or mac           macvlan (the reference plugin's keys)
 *   master + pkey                  ipoib (ipoib-cni's child on a partition)
 *   master alone                   macvlan or ipoib by the master's link type, found at ADD
 *   device, guid                   hostdev (host-device, ib-sriov-cni)
 *   deviceID or pciBusID alone     hostdev (sriov-cni, host-device), or rdma after another
 *                                  plugin: Multus writes deviceID into every plugin of a chain,
 *                                  rdma-cni's included, so the command decides (link_by_chain)
 *   nothing that names a netdev    rdma (rdma-cni's {"type": "rdma"} in a conflist)
 * deviceID beside master is Multus' (it writes it into every plugin of a resource's network):
 * master wins. Signs of two kinds are refused naming the keys and the choices. */
static int infer_link(struct dispatch_ctx *d, struct reader *rd, const struct cnispec_conf *conf)
{
	struct cniconf *c = &rd->c;
	bool master = c->master[0], mac_sign = rd->mode >= 0 || c->has_mac;

	if (master && c->device[0])
		return dispatch_fail(
			d, "link",
			"missing, and master (macvlan or ipoib) and device (hostdev) name "
			"different kinds: set link to macvlan, ipoib or hostdev");
	if (master && rd->mode >= 0 && c->has_pkey)
		return dispatch_fail(
			d, "link",
			"missing, and mode (macvlan) and pkey (ipoib) name different kinds: "
			"set link to macvlan or ipoib");
	if (master && c->has_guid)
		return dispatch_fail(
			d, "link",
			"missing, and master (macvlan or ipoib) and guid (hostdev) name "
			"different kinds: set link to macvlan, ipoib or hostdev");
	if (master) {
		if (mac_sign)
			rd->link = CNICONF_LINK_MACVLAN;
		else if (c->has_pkey)
			rd->link = CNICONF_LINK_IPOIB;
		else {
			/* either, by the master's link type: checked as both until ADD decides */
			rd->link = CNICONF_LINK_MACVLAN;
			c->link_by_master = true;
		}
	} else if (c->device[0] || c->has_guid) {
		rd->link = CNICONF_LINK_HOSTDEV;
	} else if (c->device_id[0]) {
		rd->link = CNICONF_LINK_HOSTDEV;
		/* with nothing else of hostdev's, checked as hostdev until the command decides */
		c->link_by_chain = !c->has_pkey && !mac_sign && !c->mtu && !conf->ipam &&
				   !(rd->isolation_given && !c->rdma_isolation);
	} else if (!mac_sign && !c->has_pkey && !c->mtu) {
		rd->link = CNICONF_LINK_RDMA;
	} else {
		return dispatch_fail(
			d, "link",
			"missing, and nothing names one: set link (macvlan, ipoib, hostdev or "
			"rdma), or give master (macvlan, ipoib) or deviceID or device (hostdev)");
	}
	return 0;
}

/* The rdma link (rdma-cni's role after another plugin) makes no interface: the keys that
 * shape one are refused naming what to do instead. */
static int check_rdma(struct dispatch_ctx *d, struct reader *rd, const struct cnispec_conf *conf)
{
	static const char *const other =
		"a key of a link that makes an interface: the rdma link moves the "
		"RDMA device of the interface the plugin before it made, and changes nothing else";
	const struct cniconf *c = &rd->c;

	if (c->master[0])
		return dispatch_fail(d, "master", "%s", other);
	if (c->device[0])
		return dispatch_fail(d, "device", "%s", other);
	if (rd->mode >= 0)
		return dispatch_fail(d, "mode", "%s", other);
	if (c->has_mac)
		return dispatch_fail(d, "mac", "%s", other);
	if (c->has_guid)
		return dispatch_fail(d, "guid", "%s", other);
	if (c->has_pkey)
		return dispatch_fail(d, "pkey", "%s", other);
	if (c->mtu)
		return dispatch_fail(d, "mtu", "%s", other);
	if (conf->ipam)
		return dispatch_fail(
			d, "ipam",
			"the rdma link adds no interface to address: give ipam to the plugin "
			"before it in the chain");
	if (rd->isolation_given && !c->rdma_isolation)
		return dispatch_fail(d, "rdmaIsolation",
				     "false leaves the rdma link nothing to do: remove the plugin "
				     "from the chain instead");
	return 0;
}

/* sriov-cni's rules for the VLAN keys (LoadConf), and the VF keys only where a VF moves. */
static int vf_check(struct dispatch_ctx *d, struct reader *rd)
{
	struct cniconf *c = &rd->c;

	if (!(c->vf_keys & CNICONF_VF_VLAN)) {
		if (rd->vlan_qos)
			return dispatch_fail(d, "vlanQoS", "needs vlan: the priority is of a VLAN");
		if (rd->vlan_proto)
			return dispatch_fail(d, "vlanProto",
					     "needs vlan: the protocol is of a VLAN");
	} else {
		if (!rd->vlan_proto)
			c->vlan_proto = ETH_P_8021Q;
		if (c->vlan_qos && !c->vlan)
			return dispatch_fail(d, "vlanQoS", "%u needs a VLAN other than 0",
					     c->vlan_qos);
		if (c->vlan_proto == ETH_P_8021AD && !c->vlan)
			return dispatch_fail(d, "vlanProto", "802.1ad needs a VLAN other than 0");
	}
	if (c->vf_keys && rd->link != CNICONF_LINK_HOSTDEV) {
		for (unsigned bit = 1; bit & CNICONF_VF_ALL; bit <<= 1)
			if (c->vf_keys & bit)
				return dispatch_fail(
					d,
					bit == CNICONF_VF_RATE
						? (c->min_tx_rate ? "min_tx_rate" : "max_tx_rate")
						: cniconf_vf_key_name(bit),
					"only for link hostdev: a setting of an SR-IOV VF, set through its PF");
	}
	return 0;
}

static int cross_check(struct dispatch_ctx *d, struct reader *rd, const struct cnispec_conf *conf)
{
	const struct cniconf *c = &rd->c;
	bool master = c->master[0], device = c->device[0], device_id = c->device_id[0],
	     mode = rd->mode >= 0;
	const char *kind;
	int r;

	rd->isolation_given = json_object_get(conf->plugin, "rdmaIsolation") != NULL;
	if (rd->link < 0 && (r = infer_link(d, rd, conf)) < 0)
		return r;
	if ((r = vf_check(d, rd)) < 0)
		return r;
	kind = c->link_by_master ? "macvlan or ipoib"
				 : cniconf_link_name((enum cniconf_link)rd->link);
	switch ((enum cniconf_link)rd->link) {
	case CNICONF_LINK_MACVLAN:
	case CNICONF_LINK_IPOIB:
		if (!master)
			return dispatch_fail(d, "master",
					     "missing: the %s link needs the netdev it is made on",
					     kind);
		if (device)
			return dispatch_fail(d, "device",
					     "only for link hostdev (a %s link is made on master)",
					     kind);
		if (c->has_guid)
			return dispatch_fail(d, "guid", "only for link hostdev (an InfiniBand VF)");
		if (c->fabric.set)
			return dispatch_fail(
				d, "fabric",
				"only for link hostdev: the fabric manager adds a VF's GUID to the "
				"partition (an IPoIB child's partition is its master port's)");
		/* deviceID is tolerated: Multus writes it into every plugin of a network whose
		 * resource has device IDs, shared ones included */
		if (c->rdma_isolation)
			return dispatch_fail(
				d, "rdmaIsolation",
				"only for link hostdev: a %s child shares its master's "
				"RDMA device, which cannot move into one pod",
				kind);
		if (rd->link == CNICONF_LINK_IPOIB) {
			if (mode)
				return dispatch_fail(d, "mode", "only for link macvlan");
			if (c->has_mac)
				return dispatch_fail(
					d, "mac",
					"an IPoIB address is the port's GID, not something to set");
		} else if (c->has_pkey) {
			return dispatch_fail(d, "pkey", "only for links ipoib and hostdev");
		}
		break;
	case CNICONF_LINK_HOSTDEV:
		if (master)
			return dispatch_fail(
				d, "master",
				"only for links macvlan and ipoib (hostdev moves device or deviceID)");
		if (mode)
			return dispatch_fail(d, "mode", "only for link macvlan");
		if (device && device_id)
			return dispatch_fail(
				d, "device",
				"give device or deviceID, not both (deviceID %s is also set)",
				c->device_id);
		if (!device && !device_id)
			return dispatch_fail(
				d, "deviceID",
				"missing: hostdev needs deviceID (or runtimeConfig.deviceID, as "
				"Multus passes the device plugin's allocation) or device");
		if (c->has_guid && !device_id)
			return dispatch_fail(d, "guid",
					     "needs deviceID: the GUID is set through the VF's PF");
		if (c->fabric.set && !c->has_pkey)
			return dispatch_fail(d, "fabric",
					     "needs pkey: the partition the VF's GUID joins");
		break;
	case CNICONF_LINK_RDMA: return check_rdma(d, rd, conf);
	}
	return 0;
}

/* The one place a refusal becomes the protocol's error: a key rdmak-cni does not take is code
 * 2, naming it and its value (SPEC.md); a bad or missing value is code 7, naming its path. */
static int cni_error(const struct dispatch_ctx *d, int r, struct cnispec_error *err)
{
	char msg[CNISPEC_MSG_MAX];

	if (r != -EINVAL)
		return r;
	if (d->error == DISPATCH_ERR_UNKNOWN)
		return cnispec_fail_unsupported(
			err, d->path, d->value,
			d->why ? d->why : "docs/cni.md lists the keys rdmak-cni accepts");
	snprintf(msg, sizeof(msg), "invalid network configuration: %.200s", d->path);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, msg, "%s", d->err);
}

int cniconf_parse(const struct cnispec_conf *conf, struct cniconf *ret, struct cnispec_error *err)
{
	return cniconf_parse_warn(conf, ret, NULL, NULL, err);
}

int cniconf_parse_warn(const struct cnispec_conf *conf, struct cniconf *ret,
		       void (*warn)(void *userdata, const char *path, const char *why),
		       void *userdata, struct cnispec_error *err)
{
	return cniconf_parse_cmd(conf, CNISPEC_CMD_ADD, ret, warn, userdata, err);
}

int cniconf_parse_cmd(const struct cnispec_conf *conf, enum cnispec_cmd cmd, struct cniconf *ret,
		      void (*warn)(void *userdata, const char *path, const char *why),
		      void *userdata, struct cnispec_error *err)
{
	struct reader rd = {
		.c = {
			.macvlan_mode = MACVLAN_MODE_BRIDGE,
			.policy_routing = true,
			.table_base = CNICONF_DEFAULT_TABLE_BASE,
			.rule_priority = CNICONF_DEFAULT_RULE_PRIORITY,
		},
		.legacy_fabric_ok = cmd == CNISPEC_CMD_DEL || cmd == CNISPEC_CMD_GC,
		.link = -1,
		.mode = -1,
	};
	char why[CNISPEC_DETAILS_MAX];
	struct dispatch_ctx d = {
		.err = why, .errlen = sizeof(why), .warn = warn, .userdata = userdata
	};
	int r;

	r = dispatch_run(&d, "", conf->plugin, plugin_fields, DISPATCH_UNKNOWN_REFUSE, &rd);
	if (r == 0 && conf->runtime_config)
		r = dispatch_run(&d, "runtimeConfig", conf->runtime_config, runtime_fields,
				 DISPATCH_UNKNOWN_ALLOW, &rd);
	if (r == 0)
		r = cross_check(&d, &rd, conf);
	rd.c.state_dir_set = rd.c.state_dir != NULL;
	if (r == 0 && !rd.c.state_dir && !(rd.c.state_dir = strdup(CNICONF_DEFAULT_STATE_DIR)))
		r = -ENOMEM;
	if (r < 0) {
		cniconf_clear(&rd.c);
		return cni_error(&d, r, err);
	}
	rd.c.link = (enum cniconf_link)rd.link;
	if (rd.mode >= 0)
		rd.c.macvlan_mode = macvlan_modes[rd.mode].mode;
	*ret = rd.c;
	return 0;
}

void cniconf_clear(struct cniconf *c)
{
	free(c->sysfs);
	free(c->state_dir);
	free(c->log_file);
	free(c->state_base);
	free(c->log_dir);
	c->sysfs = c->state_dir = c->log_file = c->state_base = c->log_dir = NULL;
	free(c->fabric.legacy_url);
	c->fabric.legacy_url = NULL;
	if (c->fabrics)
		ufm_fabrics_clear(c->fabrics);
	free(c->fabrics);
	free(c->fabrics_err);
	c->fabrics = NULL;
	c->fabrics_err = NULL;
}

/* ---- what the network names of the node's (nodeconf.h) -------------------------------------- */

static bool same_path(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	while (na > 1 && a[na - 1] == '/')
		na--;
	while (nb > 1 && b[nb - 1] == '/')
		nb--;
	return na == nb && !strncmp(a, b, na);
}

/* A state dir beneath the node's, none of its folders a dot's (.fabric, the ledger's). */
static bool state_dir_ok(const char *base, const char *dir)
{
	if (!fileio_path_beneath(base, dir))
		return false;
	for (const char *c = dir + strlen(base); *c; c++)
		if (c[0] == '/' && c[1] == '.')
			return false;
	return true;
}

static int config_fail(struct cnispec_error *err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int config_fail(struct cnispec_error *err, const char *key, const char *fmt, ...)
{
	char msg[CNISPEC_MSG_MAX], details[CNISPEC_DETAILS_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof(msg), "invalid network configuration: %s", key);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, msg, "%s: %s", key, details);
}

int cniconf_resolve(struct cniconf *c, const struct nodeconf *n, enum cnispec_cmd cmd,
		    void (*warn)(void *userdata, const char *path, const char *why), void *userdata,
		    struct cnispec_error *err)
{
	bool later = cmd == CNISPEC_CMD_DEL || cmd == CNISPEC_CMD_GC;
	char why[CNISPEC_DETAILS_MAX];

	/* the devices rdmak-cni moves, renames and rebinds are the ones the sysfs root lists:
	 * a tree of a user's would name the host's own interface as a pod's VF */
	if (c->sysfs && !same_path(c->sysfs, n->sysfs)) {
		if (!later)
			return config_fail(
				err, "sysfs",
				"%s is not the node's sysfs root (%s, %s \"sysfs\"): rdmak-cni moves, "
				"renames and rebinds the devices it finds there, so the root is the "
				"node's owner's: remove the key",
				c->sysfs, n->sysfs, n->path);
		snprintf(why, sizeof(why), "%s is not the node's sysfs root: %s is used", c->sysfs,
			 n->sysfs);
		if (warn)
			warn(userdata, "sysfs", why);
	}
	free(c->sysfs);
	if (!(c->sysfs = strdup(n->sysfs)))
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	/* DEL and GC give back what a record names: a record in a user's folder would name
	 * another pod's device */
	if (c->state_dir_set && !state_dir_ok(n->state_dir, c->state_dir))
		return config_fail(
			err, "stateDir",
			"%s is not the node's stateDir nor a folder beneath it (%s, %s \"stateDir\"; "
			"no folder starting with '.'): rdmak-cni writes its records there as root and "
			"DEL acts on what they say: remove the key, or name a folder beneath %s",
			c->state_dir, n->state_dir, n->path, n->state_dir);
	if (!c->state_dir_set) {
		free(c->state_dir);
		if (!(c->state_dir = strdup(n->state_dir)))
			return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory",
					    NULL);
	}
	free(c->state_base);
	free(c->log_dir);
	if (!(c->state_base = strdup(n->state_dir)) || !(c->log_dir = strdup(n->log_dir)))
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	/* root appends to it: /etc/ld.so.preload or a cron file must not get lines */
	if (c->log_file && !fileio_path_beneath(n->log_dir, c->log_file)) {
		const char *base = strrchr(c->log_file, '/') + 1;

		if (!later)
			return config_fail(
				err, "logFile",
				"%s is not beneath the node's logDir (%s, %s \"logDir\"): rdmak-cni "
				"appends to it as root, so only there: write \"%s/%s\", or leave the "
				"key out (stderr has every line)",
				c->log_file, n->log_dir, n->path, n->log_dir,
				*base ? base : "rdmak-cni.log");
		snprintf(why, sizeof(why),
			 "%s is not beneath the node's logDir (%s): not written, lines go to "
			 "stderr only",
			 c->log_file, n->log_dir);
		if (warn)
			warn(userdata, "logFile", why);
		free(c->log_file);
		c->log_file = NULL;
	}
	return 0;
}

int cniconf_open_dirs(const struct cniconf *c, bool state, struct cnispec_error *err)
{
	char why[CNISPEC_DETAILS_MAX];
	int fd;

	if (state && c->state_dir) {
		fd = fileio_open_dir_beneath(c->state_base ? c->state_base : c->state_dir,
					     c->state_dir, true, 0700, why, sizeof(why));
		if (fd < 0)
			return config_fail(err, "stateDir", "%s", why);
		close(fd);
	}
	if (c->log_file && c->log_dir &&
	    nodeconf_log_folder(c->log_dir, c->log_file, why, sizeof(why)) < 0)
		return config_fail(err, "logFile", "%s", why);
	return 0;
}
