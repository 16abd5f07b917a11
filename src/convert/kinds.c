/* SPDX-License-Identifier: Apache-2.0 */
/* One converter per anchor kind. Each reads its object's spec through a dispatch table with
 * unknown keys warned about, so that every key it does not carry becomes a note naming it. */
#include "convert/convert.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cniconf/cniconf.h"
#include "cnispec/cnispec.h"
#include "dispatch/dispatch.h"
#include "doc/yaml.h"
#include "ipamconf/ipamconf.h"
#include "util/cleanup.h"

/* The chart's etcd (NOTES.txt: https://<release>-etcd.<namespace>.svc:2379) for release "rdmak"
 * in namespace "rdmak", as the node's etcd store ETCD_STORE (the chart's cni.node.etcd), whose
 * client certificate is cert-manager's Secret; the node's logDir (cni.node.logDir). */
#define ETCD_ENDPOINT "https://rdmak-etcd.rdmak.svc:2379"
#define ETCD_STORE    "cluster"
#define ETCD_SECRET   "rdmak-etcd-client"
#define LOG_DIR	      "/var/log/rdmak"

/* What one object's conversion looks up across the whole input is indexed once (conv_index), so
 * that a run costs what its objects do, not their number squared. */
struct conv {
	const json_t *inputs;
	json_t *values; /* the chart's values, built up by NicClusterPolicy and SriovNetworkNodePolicy */
	json_t *doc;	  /* the document being made: {from, notes, objects} */
	json_t *names;	  /* "kind/namespace/name" -> [index of each input so named] */
	json_t *pools;	  /* SpiderIPPool name -> the first one so named */
	json_t *pf_users; /* a rootDevices entry -> [index of each SriovNetworkNodePolicy naming it] */
	json_t *prefixes; /* a resource name -> the prefix the first network naming it gives it */
	int fixes;
	int oom;
};

static const char *str_or(const char *s)
{
	return s ? s : "";
}

__attribute__((format(printf, 4, 5))) static void note(struct conv *cv, bool fix, const char *path,
						       const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	json_t *n;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	n = json_pack("{s:s,s:b,s:s}", "path", path, "fix", fix, "text", text);
	if (!n || json_array_append_new(json_object_get(cv->doc, "notes"), n) < 0)
		cv->oom = 1;
	if (fix)
		cv->fixes++;
}

static void warn_cb(void *userdata, const char *path, const char *why)
{
	note(userdata, false, path, "not carried: %s", why ? why : "rdmak has no counterpart");
}

static json_t *values_at(struct conv *cv, const char *a, const char *b)
{
	json_t *o = json_object_get(cv->values, a);

	if (!o) {
		o = json_object();
		if (!o || json_object_set_new(cv->values, a, o) < 0) {
			cv->oom = 1;
			return NULL;
		}
	}
	if (!b)
		return o;
	json_t *x = json_object_get(o, b);

	if (!x) {
		x = json_object();
		if (!x || json_object_set_new(o, b, x) < 0) {
			cv->oom = 1;
			return NULL;
		}
	}
	return x;
}

static void values_set(struct conv *cv, const char *a, const char *key, json_t *v)
{
	json_t *o = values_at(cv, a, NULL);

	if (!o || json_object_set_new(o, key, v) < 0)
		cv->oom = 1;
}

/* Append each element of the array src[key] to plugin.config[key]. */
static void plugin_config_add(struct conv *cv, const char *key, json_t *elems)
{
	json_t *cfg = values_at(cv, "plugin", "config"), *list;

	if (!cfg)
		return;
	list = json_object_get(cfg, key);
	if (!list) {
		list = json_array();
		if (!list || json_object_set_new(cfg, key, list) < 0) {
			cv->oom = 1;
			return;
		}
	}
	if (json_array_extend(list, elems) < 0)
		cv->oom = 1;
}

/* ---- the index ---------------------------------------------------------------------------- */

static const char *kind_of(const json_t *o)
{
	return str_or(json_string_value(json_object_get(o, "kind")));
}

static const char *name_of(const json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static void name_key(char *buf, size_t len, const char *kind, const char *ns, const char *name)
{
	/* '/' is in no kind, namespace or name */
	snprintf(buf, len, "%s/%s/%s", kind, str_or(ns), str_or(name));
}

/* Append i to the array map[key], made on first use. */
static int index_add(json_t *map, const char *key, size_t i)
{
	json_t *list = json_object_get(map, key);

	if (!list && (!(list = json_array()) || json_object_set_new(map, key, list) < 0))
		return -ENOMEM;
	return json_array_append_new(list, json_integer((json_int_t)i));
}

static int index_one(struct conv *cv, const json_t *o, size_t i)
{
	const json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
	const char *kind = kind_of(o), *name = name_of(o), *k;
	char key[768];
	size_t j;
	json_t *v;

	if (name) {
		name_key(key, sizeof(key), kind,
			 json_string_value(json_object_get(md, "namespace")), name);
		if (index_add(cv->names, key, i) < 0)
			return -ENOMEM;
	}
	if (name && !strcmp(kind, "SpiderIPPool") && !json_object_get(cv->pools, name) &&
	    json_object_set(cv->pools, name, (json_t *)o) < 0)
		return -ENOMEM;
	if (!strcmp(kind, "SriovNetworkNodePolicy"))
		json_array_foreach(
			json_object_get(json_object_get(spec, "nicSelector"), "rootDevices"), j,
			v) if (json_is_string(v) &&
			       index_add(cv->pf_users, json_string_value(v), i) < 0) return -ENOMEM;
	/* a network's resourceName ("spidernet.io/gpu1sriov") gives its resource a prefix */
	json_object_foreach((json_t *)spec, k, v)
	{
		const char *r = json_string_value(json_object_get(v, "resourceName"));
		const char *slash = r ? strchr(r, '/') : NULL;
		json_t *prefix;

		if (!slash || json_object_get(cv->prefixes, slash + 1))
			continue;
		prefix = json_stringn(r, (size_t)(slash - r));
		if (!prefix || json_object_set_new(cv->prefixes, slash + 1, prefix) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int conv_index(struct conv *cv)
{
	size_t i;
	json_t *in;

	cv->names = json_object();
	cv->pools = json_object();
	cv->pf_users = json_object();
	cv->prefixes = json_object();
	if (!cv->names || !cv->pools || !cv->pf_users || !cv->prefixes)
		return -ENOMEM;
	json_array_foreach(cv->inputs, i, in)
	{
		const json_t *o = json_object_get(in, "object");

		if (json_is_object(o) && index_one(cv, o, i) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- addresses -------------------------------------------------------------------------- */

/* "a.b.c.d/n" (or IPv6) with its host bits cleared into out; 1 when they were set, 0 when not,
 * -EINVAL when it is no prefix. */
static int prefix_network(const char *s, char *out, size_t outlen)
{
	unsigned char a[16];
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	int af, bits, n, changed = 0;
	char *end;
	long plen;

	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	af = strchr(addr, ':') ? AF_INET6 : AF_INET;
	bits = af == AF_INET ? 32 : 128;
	plen = strtol(slash + 1, &end, 10);
	if (inet_pton(af, addr, a) != 1 || !slash[1] || *end || plen < 0 || plen > bits)
		return -EINVAL;
	for (int i = (int)plen; i < bits; i++)
		if (a[i / 8] & (0x80 >> (i % 8))) {
			a[i / 8] &= (unsigned char)~(0x80 >> (i % 8));
			changed = 1;
		}
	if (!inet_ntop(af, a, addr, sizeof(addr)))
		return -EINVAL;
	n = snprintf(out, outlen, "%s/%ld", addr, plen);
	return n < 0 || (size_t)n >= outlen ? -EINVAL : changed;
}

/* ---- the NAD's config, checked by rdmak-cni's own parsers ---------------------------------- */

/* The parsers an ADD runs first (tests/helpers/cni_conf_check.c runs the same): a config they
 * refuse is a fix, with their message. */
static void check_cni_config(struct conv *cv, const char *path, const json_t *config)
{
	struct cnispec_error err = { 0 };
	struct cnispec_conf *conf = NULL;
	struct cniconf cfg = { 0 };
	struct ipamconf *ic = NULL;
	json_t *sent = json_deep_copy(config);
	char *text = NULL;
	int r;

	/* as Multus sends it: a hostdev network gets the allocated function from the device
	 * plugin (deviceID), an ib-sriov one its GUID when the pod asks for one */
	if (sent && !strcmp(str_or(json_string_value(json_object_get(sent, "link"))), "hostdev") &&
	    !json_object_get(sent, "deviceID") && !json_object_get(sent, "device"))
		json_object_set_new(sent, "deviceID", json_string("0000:00:00.0"));
	if (sent &&
	    json_is_true(json_object_get(json_object_get(sent, "capabilities"), "infinibandGUID")))
		json_object_set_new(
			sent, "runtimeConfig",
			json_pack("{s:s}", "infinibandGUID", "02:00:00:00:00:00:00:01"));
	if (sent)
		text = json_dumps(sent, JSON_COMPACT);
	json_decref(sent);
	if (!text) {
		cv->oom = 1;
		return;
	}
	r = cnispec_conf_parse(text, strlen(text), CNISPEC_CMD_ADD, &conf, &err);
	if (r >= 0) {
		r = cniconf_parse(conf, &cfg, &err);
		if (r >= 0) {
			if (conf->ipam_type && !strcmp(conf->ipam_type, "rdmak-ipam"))
				r = ipamconf_parse(conf->ipam, conf->name, &ic, &err);
			cniconf_clear(&cfg);
		}
	}
	if (r < 0)
		note(cv, true, path,
		     "rdmak-cni refuses this config (code %u: %s: %s): edit it before use",
		     err.code, err.msg, err.details);
	ipamconf_free(ic);
	cnispec_conf_free(conf);
	free(text);
}

/* A NetworkAttachmentDefinition for rdmak-cni named like the anchor's object. */
static json_t *nad_new(struct conv *cv, const char *name, const char *ns, const char *resource,
		       json_t *config)
{
	json_t *nad, *md, *text;
	char *s;

	check_cni_config(cv, "spec", config);
	s = json_dumps(config, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	text = s ? json_sprintf("%s\n", s) : NULL;
	free(s);
	md = json_pack("{s:s}", "name", name);
	if (md && ns)
		json_object_set_new(md, "namespace", json_string(ns));
	if (md && resource)
		json_object_set_new(
			md, "annotations",
			json_pack("{s:s}", "k8s.v1.cni.cncf.io/resourceName", resource));
	nad = md && text ? json_pack("{s:s,s:s,s:o,s:{s:o}}", "apiVersion", "k8s.cni.cncf.io/v1",
				     "kind", "NetworkAttachmentDefinition", "metadata", md, "spec",
				     "config", text)
			 : NULL;
	if (!nad) {
		json_decref(md);
		json_decref(text);
		cv->oom = 1;
		return NULL;
	}
	if (json_array_append_new(json_object_get(cv->doc, "objects"), nad) < 0)
		cv->oom = 1;
	return nad;
}

static json_t *cni_config_new(const char *name, const char *link)
{
	return json_pack("{s:s,s:s,s:s,s:s}", "cniVersion", "1.0.0", "name", name, "type",
			 "rdmak-cni", "link", link);
}

/* The node's etcd store `name` in the chart's values (cni.node.etcd.NAME); the network names it,
 * never an address or a file (docs/ipam.md, "What it trusts"). */
static json_t *etcd_store(struct conv *cv, const char *name, json_t *store)
{
	json_t *node = values_at(cv, "cni", "node"), *etcd;

	if (!node || !store) {
		json_decref(store);
		cv->oom = 1;
		return NULL;
	}
	etcd = json_object_get(node, "etcd");
	if (!etcd && (!(etcd = json_object()) || json_object_set_new(node, "etcd", etcd) < 0)) {
		json_decref(store);
		cv->oom = 1;
		return NULL;
	}
	if (json_object_set_new(etcd, name, store) < 0)
		cv->oom = 1;
	return json_string(name);
}

static json_t *chart_etcd_store(struct conv *cv)
{
	values_set(cv, "etcd", "enabled", json_true());
	return etcd_store(
		cv, ETCD_STORE,
		json_pack("{s:[s],s:s}", "endpoints", ETCD_ENDPOINT, "secretName", ETCD_SECRET));
}

/* whereabouts' log_file (or logFile) lies beneath the node's logDir for rdmak-ipam, which appends
 * to it as root: another folder moves there, by its file's name. */
static void log_file_to_log_dir(struct conv *cv, const char *path, json_t *ipam)
{
	static const char *const keys[] = { "log_file", "logFile" };

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const char *f = json_string_value(json_object_get(ipam, keys[i])), *base;
		char *moved = NULL;

		if (!f || (!strncmp(f, LOG_DIR "/", sizeof(LOG_DIR)) && !strstr(f, "/../")))
			continue;
		base = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
		if (asprintf(&moved, LOG_DIR "/%s", *base ? base : "rdmak-ipam.log") < 0) {
			cv->oom = 1;
			return;
		}
		note(cv, false, path,
		     "%s %s becomes %s: rdmak-ipam writes its log only beneath the node's logDir "
		     "(cni.node.logDir, " LOG_DIR ")",
		     keys[i], f, moved);
		json_object_set_new(ipam, keys[i], json_string(moved));
		free(moved);
	}
}

/* whereabouts' own etcd (datastore etcd, etcd_host and its files) becomes a node's store: its
 * address and client certificate are the node's, in the chart's values. */
static void whereabouts_etcd(struct conv *cv, const char *path, json_t *ipam)
{
	static const char *const files[] = { "etcd_ca_cert_file", "etcd_cert_file",
					     "etcd_key_file" };
	const char *h = json_string_value(json_object_get(ipam, "etcd_host"));
	_cleanup_free_ char *hosts = strdup(h ? h : ""), *copy = strdup(h ? h : "");
	json_t *eps = json_array(), *store;
	char *save = NULL;

	if (!eps || !hosts || !copy) {
		json_decref(eps);
		cv->oom = 1;
		return;
	}
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
		json_array_append_new(eps, json_string(t));
	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		json_object_del(ipam, files[i]);
	json_object_del(ipam, "etcd_host");
	json_object_del(ipam, "datastore");
	store = json_pack("{s:o,s:s}", "endpoints", eps, "secretName", "FIX");
	json_object_set_new(ipam, "store", json_string("etcd"));
	json_object_set_new(ipam, "etcd", etcd_store(cv, "whereabouts", store));
	note(cv, true, path,
	     "whereabouts' etcd (etcd_host %s) becomes the node's etcd store \"whereabouts\" "
	     "(cni.node.etcd.whereabouts in the values): its address and client certificate are the "
	     "node's, not a network's; put its Secret (ca.crt, tls.crt, tls.key) in secretName",
	     *hosts ? hosts : "none");
}

/* ---- Network Operator's ipam string ------------------------------------------------------- */

/* host-local's legacy form: its range keys at the top of the block (subnet, rangeStart,
 * rangeEnd, gateway), which host-local reads as one range set of one range; rdmak-ipam reads
 * only "ranges" (or whereabouts' "range"), so they become ranges: [[{...}]]. */
static void host_local_legacy(struct conv *cv, const char *path, json_t *ipam)
{
	static const char *const keys[] = { "subnet", "rangeStart", "rangeEnd", "gateway" };
	json_t *range;

	if (!json_object_get(ipam, "subnet") || json_object_get(ipam, "ranges"))
		return;
	range = json_object();
	if (!range) {
		cv->oom = 1;
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		json_t *v = json_object_get(ipam, keys[i]);

		if (v)
			json_object_set(range, keys[i], v);
		json_object_del(ipam, keys[i]);
	}
	if (json_object_set_new(ipam, "ranges", json_pack("[[o]]", range)) < 0)
		cv->oom = 1;
	note(cv, false, path,
	     "host-local's legacy top-level subnet (and its rangeStart, rangeEnd, gateway) "
	     "becomes ranges: [[{...}]], the one range set host-local makes of it");
}

/* The network's "ipam" (a JSON string in the CR) for rdmak-ipam; NULL when there is none. */
static json_t *ipam_convert(struct conv *cv, const char *path, const char *text)
{
	char err[256] = "not an object";
	json_t *ipam = NULL;
	const char *type;

	if (!text || !*text)
		return NULL;
	if (doc_parse(text, strlen(text), &ipam, NULL, err, sizeof(err)) < 0 ||
	    !json_is_object(ipam)) {
		note(cv, true, path, "not a JSON object (%s): no IPAM carried", err);
		json_decref(ipam);
		return NULL;
	}
	type = json_string_value(json_object_get(ipam, "type"));
	if (type && !strcmp(type, "whereabouts")) {
		const char *ds = json_string_value(json_object_get(ipam, "datastore"));

		json_object_set_new(ipam, "type", json_string("rdmak-ipam"));
		log_file_to_log_dir(cv, path, ipam);
		/* whereabouts keeps its pools in Kubernetes objects by default; rdmak-ipam's
		 * cluster-wide store is etcd, the node's by name */
		if ((ds && !strcmp(ds, "etcd")) || (!ds && json_object_get(ipam, "etcd_host"))) {
			whereabouts_etcd(cv, path, ipam);
		} else if (!ds || !strcmp(ds, "kubernetes")) {
			json_object_del(ipam, "datastore");
			if (json_object_get(ipam, "kubernetes"))
				note(cv, false, path,
				     "whereabouts' \"kubernetes\" block (its kubeconfig) is not carried: "
				     "rdmak-ipam keeps no state in Kubernetes objects");
			json_object_del(ipam, "kubernetes");
			json_object_set_new(ipam, "store", json_string("etcd"));
			json_object_set_new(ipam, "etcd", chart_etcd_store(cv));
			note(cv, false, path,
			     "whereabouts' Kubernetes datastore becomes rdmak-ipam's etcd store \"" ETCD_STORE
			     "\": the chart's etcd (etcd.enabled) for release rdmak in namespace rdmak, the "
			     "node's store of that name (cni.node.etcd." ETCD_STORE
			     ") with the client "
			     "certificate Secret " ETCD_SECRET "; change them if yours differ");
		}
	} else if (type && !strcmp(type, "host-local")) {
		json_object_set_new(ipam, "type", json_string("rdmak-ipam"));
		host_local_legacy(cv, path, ipam);
		if (json_object_get(ipam, "dataDir"))
			note(cv, false, path,
			     "host-local's dataDir is not carried: rdmak-ipam's file store keeps its own "
			     "directory (/var/lib/cni/rdmak-ipam)");
		json_object_del(ipam, "dataDir");
		note(cv, false, path,
		     "host-local becomes rdmak-ipam with its node-local file store (the same ranges)");
	} else if (type) {
		note(cv, false, path,
		     "IPAM type \"%s\" kept: rdmak-cni hands the \"ipam\" block to it unchanged",
		     type);
	}
	return ipam;
}

/* ---- HostDeviceNetwork, MacvlanNetwork, IPoIBNetwork --------------------------------------- */

struct netop_spec {
	const char *ns, *resource, *ipam, *master, *mode;
	json_int_t mtu;
};

static int netop_network(struct conv *cv, const json_t *obj, const char *name, const char *kind)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("networkNamespace", JSON_STRING, NULL,
			       offsetof(struct netop_spec, ns), 0),
		DISPATCH_FIELD("resourceName", JSON_STRING, NULL,
			       offsetof(struct netop_spec, resource), 0),
		DISPATCH_FIELD("ipam", JSON_STRING, NULL, offsetof(struct netop_spec, ipam), 0),
		DISPATCH_FIELD("master", JSON_STRING, NULL, offsetof(struct netop_spec, master), 0),
		DISPATCH_FIELD("mode", JSON_STRING, NULL, offsetof(struct netop_spec, mode), 0),
		DISPATCH_FIELD("mtu", JSON_INTEGER, NULL, offsetof(struct netop_spec, mtu), 0),
		{},
	};
	struct netop_spec s = { 0 };
	char err[512], res[256];
	struct dispatch_ctx d = {
		.err = err, .errlen = sizeof(err), .warn = warn_cb, .userdata = cv
	};
	const char *link = !strcmp(kind, "HostDeviceNetwork") ? "hostdev"
			   : !strcmp(kind, "MacvlanNetwork")  ? "macvlan"
							      : "ipoib";
	json_t *spec = json_object_get(obj, "spec"), *config, *ipam;

	if (dispatch_run(&d, "spec", spec, fields, DISPATCH_UNKNOWN_WARN, &s) < 0) {
		note(cv, true, d.path, "%s: not converted", err);
		return 0;
	}
	config = cni_config_new(name, link);
	if (!config)
		return -ENOMEM;
	if (strcmp(link, "hostdev") && s.master)
		json_object_set_new(config, "master", json_string(s.master));
	else if (!strcmp(link, "hostdev") && s.master)
		note(cv, false, "spec.master",
		     "not carried: hostdev moves the function Multus names (deviceID)");
	if (strcmp(link, "hostdev") && !s.master)
		note(cv, true, "spec.master", "missing: rdmak-cni's %s needs the parent netdev",
		     link);
	if (!strcmp(link, "macvlan") && s.mode)
		json_object_set_new(config, "mode", json_string(s.mode));
	if (s.mtu)
		json_object_set_new(config, "mtu", json_integer(s.mtu));
	ipam = ipam_convert(cv, "spec.ipam", s.ipam);
	if (ipam)
		json_object_set_new(config, "ipam", ipam);
	res[0] = '\0';
	if (s.resource) {
		/* the operator's device plugins publish under nvidia.com (its sriovDevicePlugin's
		 * resourcePrefix, and what its HostDeviceNetwork template writes) */
		snprintf(res, sizeof(res), "%s%s", strchr(s.resource, '/') ? "" : "nvidia.com/",
			 s.resource);
		if (!strchr(s.resource, '/'))
			note(cv, false, "spec.resourceName",
			     "\"%s\" read as %s, the Network Operator's prefix", s.resource, res);
	} else if (!strcmp(link, "hostdev")) {
		note(cv, true, "spec.resourceName",
		     "missing: a hostdev network needs the resource the function comes from");
	}
	if (!s.ns)
		note(cv, false, "spec.networkNamespace",
		     "absent: the NetworkAttachmentDefinition goes to \"default\", "
		     "as the operator's does");
	nad_new(cv, name, s.ns ? s.ns : "default", res[0] ? res : NULL, config);
	json_decref(config);
	return 0;
}

/* ---- NicClusterPolicy -------------------------------------------------------------------- */

struct ncp_spec {
	json_t *shared, *sriov, *secondary;
};

static void ncp_plugin(struct conv *cv, const char *path, const json_t *part, const char *key)
{
	char p[128], err[256] = "not an object";
	const char *text;
	json_t *cfg = NULL, *list;
	const char *k;
	json_t *v;

	if (!json_is_object(part))
		return;
	json_object_foreach((json_t *)part, k, v) if (strcmp(k, "config"))
	{
		snprintf(p, sizeof(p), "%s.%s", path, k);
		note(cv, false, p,
		     "not carried: the anchor's own image and its settings (the chart's image values "
		     "and plugin.* replace them)");
	}
	snprintf(p, sizeof(p), "%s.config", path);
	text = json_string_value(json_object_get(part, "config"));
	if (!text) {
		note(cv, false, p, "absent: the plugin keeps the chart's default config");
		return;
	}
	if (doc_parse(text, strlen(text), &cfg, NULL, err, sizeof(err)) < 0 ||
	    !json_is_object(cfg)) {
		note(cv, true, p, "not a JSON object (%s): not carried", err);
		json_decref(cfg);
		return;
	}
	/* unchanged: `rdmak plugin` reads both anchors' formats (docs/plugin.md) */
	list = json_object_get(cfg, key);
	if (json_is_array(list))
		plugin_config_add(cv, key, list);
	json_object_foreach(cfg, k, v) if (strcmp(k, key))
	{
		json_t *c = values_at(cv, "plugin", "config");

		if (c)
			json_object_set(c, k, v);
	}
	values_set(cv, "plugin", "enabled", json_true());
	json_decref(cfg);
}

static int nic_cluster_policy(struct conv *cv, const json_t *obj)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("rdmaSharedDevicePlugin", JSON_OBJECT, NULL,
			       offsetof(struct ncp_spec, shared), 0),
		DISPATCH_FIELD("sriovDevicePlugin", JSON_OBJECT, NULL,
			       offsetof(struct ncp_spec, sriov), 0),
		DISPATCH_FIELD("secondaryNetwork", JSON_OBJECT, NULL,
			       offsetof(struct ncp_spec, secondary), 0),
		DISPATCH_IGNORE(
			"ofedDriver",
			"rdmak never installs drivers: `rdmak doctor` checks the node's (docs/doctor.md)"),
		DISPATCH_IGNORE(
			"nvIpam",
			"rdmak-ipam replaces nv-ipam: \"perNodeBlockSize\" on its etcd store hands "
			"a pool out to nodes in blocks as nv-ipam does; nv-ipam's IPPool objects "
			"are not read here: write their ranges in the networks' ipam (docs/ipam.md)"),
		DISPATCH_IGNORE(
			"ibKubernetes",
			"rdmak-cni adds a VF's GUID to its partition itself, through the fabric "
			"manager its \"fabric\" key names (docs/cni.md), where ib-kubernetes "
			"did"),
		DISPATCH_IGNORE(
			"nvPeerDriver",
			"rdmak never installs drivers: `rdmak doctor` checks that GPUDirect's peer "
			"memory module is loaded (docs/doctor.md)"),
		{},
	};
	struct ncp_spec s = { 0 };
	char err[512];
	struct dispatch_ctx d = {
		.err = err, .errlen = sizeof(err), .warn = warn_cb, .userdata = cv
	};
	const char *k;
	json_t *v;

	if (dispatch_run(&d, "spec", json_object_get(obj, "spec"), fields, DISPATCH_UNKNOWN_WARN,
			 &s) < 0) {
		note(cv, true, d.path, "%s: not converted", err);
		return 0;
	}
	ncp_plugin(cv, "spec.rdmaSharedDevicePlugin", s.shared, "configList");
	ncp_plugin(cv, "spec.sriovDevicePlugin", s.sriov, "resourceList");
	if (s.secondary) {
		values_set(cv, "cni", "enabled", json_true());
		json_object_foreach(s.secondary, k, v)
		{
			char p[128];

			snprintf(p, sizeof(p), "spec.secondaryNetwork.%s", k);
			if (!strcmp(k, "multus"))
				note(cv, false, p,
				     "not carried: rdmak does not install Multus; keep it (rdmak-cni is a "
				     "plugin Multus calls)");
			else if (!strcmp(k, "ipamPlugin"))
				note(cv, false, p,
				     "the chart's CNI part (cni.enabled) installs rdmak-ipam in its place");
			else if (!strcmp(k, "cniPlugins"))
				note(cv, false, p,
				     "the chart's CNI part (cni.enabled) installs rdmak-cni, which does the "
				     "host-device, macvlan, ipoib and RDMA CNIs' work; the reference plugins are not needed for it");
			else
				note(cv, false, p, "not carried: rdmak has no counterpart");
		}
	}
	return 0;
}

/* ---- SriovNetworkNodePolicy -------------------------------------------------------------- */

/* The VF's PCI device ID for a PF's: the SR-IOV operator's supported-nic-ids for NVIDIA's
 * ConnectX-4 to -8 and BlueField-2/-3 (its policies name the PF's, its device plugin selects VFs
 * by theirs); tests/fixtures/convert/supported-nic-ids.yaml is that table, checked row by row. */
static const char *vf_device_id(const char *pf)
{
	static const char *const map[][2] = {
		{ "1013", "1014" }, { "1015", "1016" }, { "1017", "1018" }, { "1019", "101a" },
		{ "101b", "101c" }, { "101d", "101e" }, { "101f", "101e" }, { "1021", "101e" },
		{ "1023", "101e" }, { "a2d6", "101e" }, { "a2dc", "101e" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (pf && !strcasecmp(pf, map[i][0]))
			return map[i][1];
	return NULL;
}

/* The prefix a network in the input gives this resource ("spidernet.io/gpu1sriov"), or NULL. */
static const char *prefix_from_networks(const struct conv *cv, const char *resource)
{
	return json_string_value(json_object_get(cv->prefixes, resource));
}

static int sriov_policy(struct conv *cv, const json_t *obj, const char *name)
{
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *nic = json_object_get(spec, "nicSelector");
	const char *resource = json_string_value(json_object_get(spec, "resourceName"));
	const char *link = json_string_value(json_object_get(spec, "linkType"));
	const char *dtype = json_string_value(json_object_get(spec, "deviceType"));
	const char *k;
	const char *prefix;
	json_t *v, *sel, *entry, *one;

	if (!resource) {
		note(cv, true, "spec.resourceName", "missing: no resource to declare");
		return 0;
	}
	sel = json_object();
	if (!sel)
		return -ENOMEM;
	json_object_foreach((json_t *)nic, k, v)
	{
		char p[128];

		snprintf(p, sizeof(p), "spec.nicSelector.%s", k);
		if (!strcmp(k, "vendor") && json_is_string(v)) {
			json_object_set_new(sel, "vendors", json_pack("[O]", v));
		} else if (!strcmp(k, "deviceID") && json_is_string(v)) {
			const char *vf = vf_device_id(json_string_value(v));

			if (vf)
				json_object_set_new(sel, "devices", json_pack("[s]", vf));
			else
				note(cv, true, p,
				     "\"%s\" is a PF's device ID with no VF ID known here: give the VFs' in "
				     "selectors.devices",
				     json_string_value(v));
		} else if ((!strcmp(k, "rootDevices") || !strcmp(k, "pfNames")) &&
			   json_is_array(v)) {
			json_object_set(sel, k, v);
		} else {
			note(cv, false, p, "not carried: the plugin has no such selector");
		}
	}
	if (link && (!strcasecmp(link, "eth") || !strcasecmp(link, "ib")))
		json_object_set_new(
			sel, "linkTypes",
			json_pack("[s]", !strcasecmp(link, "eth") ? "ether" : "infiniband"));
	else if (link)
		note(cv, true, "spec.linkType",
		     "\"%s\" is neither eth nor ib (a shell variable left unexpanded?): no "
		     "linkTypes selector",
		     link);
	if (json_is_true(json_object_get(spec, "isRdma")))
		json_object_set_new(sel, "isRdma", json_true());
	else
		note(cv, false, "spec.isRdma",
		     "not true: the resource's VFs are not required to have an RDMA device, "
		     "as the anchor's policy says");
	if (dtype && strcmp(dtype, "netdevice"))
		note(cv, true, "spec.deviceType", "\"%s\": rdmak hands out netdevice VFs only",
		     dtype);
	json_object_foreach((json_t *)spec, k, v)
	{
		char p[128];

		if (!strcmp(k, "nicSelector") || !strcmp(k, "resourceName") ||
		    !strcmp(k, "linkType") || !strcmp(k, "isRdma") || !strcmp(k, "deviceType"))
			continue;
		snprintf(p, sizeof(p), "spec.%s", k);
		if (!strcmp(k, "numVfs"))
			note(cv, false, p,
			     "not carried here: `rdmak vf plan --policy` reads this policy unchanged and "
			     "makes the %" JSON_INTEGER_FORMAT " VFs (docs/vf.md)",
			     json_integer_value(v));
		else if (!strcmp(k, "nodeSelector"))
			note(cv, false, p,
			     "not carried: the plugin runs where the chart's plugin.nodeSelector says, and a "
			     "resource whose selectors match nothing on a node advertises 0 there");
		else
			note(cv, false, p, "not carried: rdmak has no counterpart");
	}
	prefix = prefix_from_networks(cv, resource);
	if (!prefix) {
		prefix = "openshift.io";
		note(cv, false, "spec.resourceName",
		     "published as openshift.io/%s, the SR-IOV operator's default prefix "
		     "(no network in the input names another)",
		     resource);
	}
	entry = json_pack("{s:s,s:s,s:o}", "resourcePrefix", prefix, "resourceName", resource,
			  "selectors", sel);
	one = entry ? json_pack("[o]", entry) : NULL;
	if (!one) {
		json_decref(sel);
		return -ENOMEM;
	}
	plugin_config_add(cv, "resourceList", one);
	values_set(cv, "plugin", "enabled", json_true());
	json_decref(one);
	(void)name;
	return 0;
}

/* Two policies on the same PF: the SR-IOV operator's priority decides which one configures it,
 * but in the plugin's resourceList both entries select the same VFs, counted in two resources
 * (a policy copied and not edited does this). */
static int index_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static void sriov_policy_overlaps(struct conv *cv, const json_t *obj, size_t self)
{
	const json_t *mine = json_object_get(
		json_object_get(json_object_get(obj, "spec"), "nicSelector"), "rootDevices");
	_cleanup_free_ size_t *other = NULL;
	size_t i, j, k, n = 0, cap = 0;
	json_t *a, *b, *x;

	/* the policies naming one of its PFs, in input order (the notes' order) */
	json_array_foreach(mine, j, a)
	{
		const json_t *users = json_object_get(cv->pf_users, str_or(json_string_value(a)));

		json_array_foreach(users, k, x)
		{
			if (n == cap) {
				size_t *v = realloc(other, (cap = cap ? 2 * cap : 8) * sizeof(*v));

				if (!v) {
					cv->oom = 1;
					return;
				}
				other = v;
			}
			other[n++] = (size_t)json_integer_value(x);
		}
	}
	if (n)
		qsort(other, n, sizeof(*other), index_cmp);
	for (size_t m = 0; m < n; m++) {
		const json_t *o = json_object_get(json_array_get(cv->inputs, other[m]), "object");
		const json_t *theirs;

		i = other[m];
		if (i == self || (m && other[m - 1] == i))
			continue;
		theirs = json_object_get(json_object_get(json_object_get(o, "spec"), "nicSelector"),
					 "rootDevices");
		json_array_foreach(mine, j, a) json_array_foreach(theirs, k,
								  b) if (json_equal(a, b))
			note(cv, true, "spec.nicSelector.rootDevices",
			     "PF %s is also selected by policy %s: "
			     "its VFs would be in two resources; give each policy its own PF",
			     json_string_value(a), str_or(name_of(o)));
	}
}

/* ---- SpiderMultusConfig and SpiderIPPool -------------------------------------------------- */

static const json_t *find_pool(const struct conv *cv, const char *name)
{
	return json_object_get(cv->pools, name);
}

/* ---- a SpiderIPPool's addresses ----------------------------------------------------------- */

/* Addresses as spans of 128-bit integers (ipamconf's arithmetic), one family. */
struct spans {
	struct ipamconf_span *v;
	size_t n, cap;
};

static int spans_add(struct spans *s, ipamconf_u128 lo, ipamconf_u128 hi)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct ipamconf_span *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct ipamconf_span){ lo, hi };
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct ipamconf_span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted, overlapping and adjacent spans joined. */
static void spans_merge(struct spans *s)
{
	size_t n = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), span_cmp);
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].lo <= s->v[n].hi || s->v[i].lo - 1 == s->v[n].hi) {
			if (s->v[i].hi > s->v[n].hi)
				s->v[n].hi = s->v[i].hi;
		} else {
			s->v[++n] = s->v[i];
		}
	}
	s->n = n + 1;
}

/* Spiderpool's address or range text ("10.0.0.5", "10.0.0.5-10.0.0.9"): 0 and its bounds, or
 * -EINVAL. */
static int addr_span(const char *s, int *family, ipamconf_u128 *lo, ipamconf_u128 *hi)
{
	const char *dash = strchr(s, '-');
	char first[CNISPEC_PREFIX_STRLEN];
	struct cnispec_addr a, b;

	if (dash && (size_t)(dash - s) >= sizeof(first))
		return -EINVAL;
	snprintf(first, sizeof(first), "%.*s", dash ? (int)(dash - s) : (int)strlen(s), s);
	if (cnispec_addr_parse(first, &a) < 0 || cnispec_addr_parse(dash ? dash + 1 : s, &b) < 0 ||
	    a.family != b.family || ipamconf_u128_from_addr(&a) > ipamconf_u128_from_addr(&b))
		return -EINVAL;
	*family = a.family;
	*lo = ipamconf_u128_from_addr(&a);
	*hi = ipamconf_u128_from_addr(&b);
	return 0;
}

/* The excluded addresses of s that lie in [lo, hi], as rdmak-ipam's exclude writes them: the
 * fewest CIDRs that cover them exactly, a single address bare. */
static int exclude_in(const struct spans *s, int family, ipamconf_u128 lo, ipamconf_u128 hi,
		      json_t *out)
{
	unsigned bits = family == AF_INET ? 32 : 128;

	for (size_t i = 0; i < s->n; i++) {
		ipamconf_u128 a = s->v[i].lo > lo ? s->v[i].lo : lo;
		ipamconf_u128 b = s->v[i].hi < hi ? s->v[i].hi : hi;

		while (a <= b) {
			char text[CNISPEC_PREFIX_STRLEN], cidr[CNISPEC_PREFIX_STRLEN + 8];
			struct cnispec_addr x;
			unsigned k = 0;

			/* the largest aligned block at a that ends by b */
			while (k < bits) {
				ipamconf_u128 m = k + 1 >= 128 ? ~(ipamconf_u128)0
							       : ((ipamconf_u128)1 << (k + 1)) - 1;

				if ((a & m) || b - a < m)
					break;
				k++;
			}
			ipamconf_addr_from_u128(family, a, &x);
			cnispec_addr_str(&x, text);
			if (k)
				snprintf(cidr, sizeof(cidr), "%s/%u", text, bits - k);
			if (json_array_append_new(out, json_string(k ? cidr : text)) < 0)
				return -ENOMEM;
			if (k >= 128 || b - a < ((ipamconf_u128)1 << k))
				break;
			a += (ipamconf_u128)1 << k;
		}
	}
	return 0;
}

/* What a SpiderIPPool keeps from its ranges: spec.excludeIPs, and status.allocatedIPs (the
 * addresses its running pods hold: Spiderpool's JSON map, address -> {interface, pod, podUid}).
 * Both are excluded from every range they fall in, so that rdmak-ipam never hands out an
 * address a pod migrating from Spiderpool still has; each held one is named. */
static int pool_excluded(struct conv *cv, const char *path, const json_t *pool, int family,
			 struct spans *ret)
{
	const json_t *spec = json_object_get(pool, "spec");
	const char *pname = str_or(name_of(pool)), *k;
	const char *held =
		json_string_value(json_object_get(json_object_get(pool, "status"), "allocatedIPs"));
	json_t *map = NULL, *v;
	size_t i;
	int f;

	json_array_foreach(json_object_get(spec, "excludeIPs"), i, v)
	{
		ipamconf_u128 lo, hi;

		if (!json_is_string(v) || addr_span(json_string_value(v), &f, &lo, &hi) < 0) {
			note(cv, true, path,
			     "SpiderIPPool %s: spec.excludeIPs[%zu] is not an address or a range "
			     "(FIRST-LAST): not excluded; exclude it by hand",
			     pname, i);
			continue;
		}
		if (f == family && spans_add(ret, lo, hi) < 0)
			return -ENOMEM;
	}
	if (json_array_size(json_object_get(spec, "excludeIPs")))
		note(cv, false, path, "SpiderIPPool %s: spec.excludeIPs carried into exclude",
		     pname);
	if (!held)
		return 0;
	map = json_loads(held, 0, NULL);
	if (!json_is_object(map)) {
		note(cv, true, path,
		     "SpiderIPPool %s: status.allocatedIPs is not Spiderpool's map of the addresses "
		     "in use: none is excluded; exclude the addresses its pods hold by hand",
		     pname);
		json_decref(map);
		return 0;
	}
	json_object_foreach(map, k, v)
	{
		ipamconf_u128 lo, hi;

		if (addr_span(k, &f, &lo, &hi) < 0 || lo != hi) {
			note(cv, true, path,
			     "SpiderIPPool %s: status.allocatedIPs names \"%s\", not an address: "
			     "exclude what it means by hand",
			     pname, k);
			continue;
		}
		if (f != family)
			continue;
		if (spans_add(ret, lo, hi) < 0) {
			json_decref(map);
			return -ENOMEM;
		}
		note(cv, false, path,
		     "SpiderIPPool %s: %s is held by pod %s (interface %s) under Spiderpool: "
		     "excluded, so that rdmak-ipam never hands it out; remove it from exclude once "
		     "that pod is gone",
		     pname, k, str_or(json_string_value(json_object_get(v, "pod"))),
		     str_or(json_string_value(json_object_get(v, "interface"))));
	}
	json_decref(map);
	return 0;
}

/* The pool keys that say who may take its addresses: rdmak-ipam's ranges serve every pod that
 * attaches the network, so a pool meant for some nodes or pods only needs the user's hand. */
static void pool_keys(struct conv *cv, const char *path, const json_t *pool)
{
	const json_t *spec = json_object_get(pool, "spec");
	const char *pname = str_or(name_of(pool)), *k;
	json_t *v;

	json_object_foreach((json_t *)spec, k, v)
	{
		if (!strcmp(k, "subnet") || !strcmp(k, "gateway") || !strcmp(k, "ips") ||
		    !strcmp(k, "routes") || !strcmp(k, "ipVersion") || !strcmp(k, "excludeIPs"))
			continue;
		if (!strcmp(k, "nodeName") || !strcmp(k, "nodeAffinity"))
			note(cv, true, path,
			     "SpiderIPPool %s: spec.%s: the pool serves only some nodes, and rdmak-ipam "
			     "has no per-node pools: every node that attaches this network takes "
			     "addresses from it; give those nodes a network of their own",
			     pname, k);
		else if (!strcmp(k, "podAffinity"))
			note(cv, true, path,
			     "SpiderIPPool %s: spec.podAffinity: the pool serves only the pods it "
			     "selects, and rdmak-ipam selects no pool per pod: every pod that attaches "
			     "this network takes addresses from it; give those pods a network of their "
			     "own",
			     pname);
		else if (!strcmp(k, "namespaceAffinity") || !strcmp(k, "namespaceName"))
			note(cv, true, path,
			     "SpiderIPPool %s: spec.%s: the pool serves only some namespaces; a "
			     "NetworkAttachmentDefinition serves the pods of its own namespace: put "
			     "this network in the namespace the pool is for",
			     pname, k);
		else if (!strcmp(k, "disable") && json_is_true(v))
			note(cv, true, path,
			     "SpiderIPPool %s: spec.disable: the pool hands out nothing new under "
			     "Spiderpool, and its ranges here would: remove them if it is to stay "
			     "closed",
			     pname);
		else if (!strcmp(k, "multusName"))
			note(cv, false, path,
			     "SpiderIPPool %s: spec.multusName: the pool is in the ipam of the networks "
			     "that name it, and of no other",
			     pname);
		else if (!strcmp(k, "default") || !strcmp(k, "disable"))
			note(cv, false, path,
			     "SpiderIPPool %s: spec.%s not carried: rdmak-ipam has no default pool, "
			     "the ranges serve the networks that name the pool",
			     pname, k);
		else
			note(cv, false, path,
			     "SpiderIPPool %s: spec.%s not carried: rdmak-ipam has no counterpart",
			     pname, k);
	}
}

/* A SpiderIPPool's ips ("a-b" or "a") as host-local ranges in set, each with the pool's
 * excluded and held addresses that fall in it; its routes into routes. */
static int pool_ranges(struct conv *cv, const char *path, const json_t *pool, json_t *set,
		       json_t *routes)
{
	const json_t *spec = json_object_get(pool, "spec");
	const char *subnet = json_string_value(json_object_get(spec, "subnet"));
	const char *gw = json_string_value(json_object_get(spec, "gateway"));
	const char *pname = str_or(name_of(pool));
	struct spans excl = { 0 };
	struct cnispec_prefix sp;
	char net[64];
	size_t i;
	json_t *v;
	int r;

	if (!subnet || (r = prefix_network(subnet, net, sizeof(net))) < 0 ||
	    cnispec_prefix_parse(net, &sp) < 0) {
		note(cv, true, path, "SpiderIPPool %s: subnet %s is not a prefix: not carried",
		     pname, subnet ? subnet : "(none)");
		return 0;
	}
	if (r > 0)
		note(cv, false, path,
		     "SpiderIPPool %s: subnet %s has host bits set; its network %s is used", pname,
		     subnet, net);
	if ((r = pool_excluded(cv, path, pool, sp.addr.family, &excl)) < 0)
		goto out;
	spans_merge(&excl);
	json_array_foreach(json_object_get(spec, "ips"), i, v)
	{
		const char *s = json_string_value(v);
		const char *dash = s ? strchr(s, '-') : NULL;
		char first[64];
		ipamconf_u128 lo, hi;
		json_t *range, *x;
		int f;

		if (!s || (dash && (size_t)(dash - s) >= sizeof(first)))
			continue;
		snprintf(first, sizeof(first), "%.*s", dash ? (int)(dash - s) : (int)strlen(s), s);
		range = json_pack("{s:s,s:s,s:s}", "subnet", net, "rangeStart", first, "rangeEnd",
				  dash ? dash + 1 : s);
		x = json_array();
		if (!range || !x) {
			json_decref(range);
			json_decref(x);
			r = -ENOMEM;
			goto out;
		}
		if (gw)
			json_object_set_new(range, "gateway", json_string(gw));
		if (addr_span(s, &f, &lo, &hi) == 0 && f == sp.addr.family &&
		    (r = exclude_in(&excl, f, lo, hi, x)) < 0) {
			json_decref(range);
			json_decref(x);
			goto out;
		}
		if (json_array_size(x))
			json_object_set(range, "exclude", x);
		json_decref(x);
		json_array_append_new(set, range);
	}
	json_array_foreach(json_object_get(spec, "routes"), i, v) json_array_append(routes, v);
	pool_keys(cv, path, pool);
	r = 0;
out:
	free(excl.v);
	return r;
}

static json_t *spider_ipam(struct conv *cv, const char *path, const json_t *ippools)
{
	static const char *const families[] = { "ipv4", "ipv6" };
	json_t *ranges = json_array(), *routes = json_array(), *ipam = NULL;

	if (!ranges || !routes)
		goto out;
	for (size_t f = 0; f < 2; f++) {
		char p[160];
		json_t *set = json_array(), *v;
		size_t i;

		if (!set)
			goto out;
		snprintf(p, sizeof(p), "%s.%s", path, families[f]);
		json_array_foreach(json_object_get(ippools, families[f]), i, v)
		{
			const json_t *pool =
				json_is_string(v) ? find_pool(cv, json_string_value(v)) : NULL;

			if (!pool)
				note(cv, true, p,
				     "names SpiderIPPool %s, which no input defines: no addresses from it",
				     json_string_value(v) ? json_string_value(v) : "?");
			else if (pool_ranges(cv, p, pool, set, routes) < 0)
				cv->oom = 1;
		}
		if (json_array_size(set))
			json_array_append_new(ranges, set);
		else
			json_decref(set);
	}
	if (!json_array_size(ranges)) {
		note(cv, true, path,
		     "no address range left: the network is written without \"ipam\"");
		goto out;
	}
	ipam = json_pack("{s:s,s:O,s:s,s:o}", "type", "rdmak-ipam", "ranges", ranges, "store",
			 "etcd", "etcd", chart_etcd_store(cv));
	if (ipam && json_array_size(routes))
		json_object_set(ipam, "routes", routes);
	note(cv, false, path,
	     "the SpiderIPPools' ranges go to rdmak-ipam's etcd store \"" ETCD_STORE
	     "\": the chart's etcd (etcd.enabled) for release rdmak in namespace rdmak, the node's "
	     "store of that name (cni.node.etcd." ETCD_STORE
	     ") with the client certificate Secret " ETCD_SECRET);
out:
	json_decref(ranges);
	json_decref(routes);
	return ipam;
}

/* What one SpiderMultusConfig gives its network, read key by key. */
struct smc {
	const char *link;
	const char *resource;
	const json_t *ippools;
	json_int_t vlan;
	bool has_vlan, shared_rdma, no_ipam;
};

/* The keys beside cniType and the CNI's block. */
static void smc_spec_key(struct conv *cv, struct smc *m, const char *block, const char *k,
			 const json_t *v)
{
	char p[128];

	snprintf(p, sizeof(p), "spec.%s", k);
	if (!strcmp(k, "enableCoordinator") || !strcmp(k, "coordinator")) {
		note(cv, false, p,
		     "not carried: rdmak-cni does the coordinator's policy routing itself "
		     "(policyRouting)");
	} else if (!strcmp(k, "rdmaResourceName") && json_is_string(v)) {
		/* where Spiderpool's RoCE guide writes it (its CRD has it in the macvlan block) */
		if (!m->resource)
			m->resource = json_string_value(v);
		note(cv, false, p, "the network's resource (k8s.v1.cni.cncf.io/resourceName)");
	} else if (!strcmp(k, "disableIPAM") && json_is_true(v)) {
		m->no_ipam = true;
		note(cv, false, p, "true: the network is written without \"ipam\"");
	} else if (!strcmp(k, "disableIPAM")) {
		return;
	} else if (!strcmp(k, "ippools")) {
		note(cv, true, p,
		     "Spiderpool reads ippools in spec.%s, not here (its API drops this one, and "
		     "the network took the cluster's default pools): move it there, or give the "
		     "network an \"ipam\"",
		     block);
	} else {
		note(cv, false, p, "not carried: rdmak has no counterpart");
	}
}

/* ib-sriov-cni's pkey is a hex string; Spiderpool's examples write it bare. */
static void smc_pkey(struct conv *cv, json_t *config, const char *p, const json_t *v)
{
	char hex[32];

	if (json_is_integer(v))
		snprintf(hex, sizeof(hex), "0x%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(hex, sizeof(hex), "%s%s",
			 strncmp(str_or(json_string_value(v)), "0x", 2) ? "0x" : "",
			 str_or(json_string_value(v)));
	json_object_set_new(config, "pkey", json_string(hex));
	if (json_is_integer(v))
		note(cv, false, p,
		     "the number %" JSON_INTEGER_FORMAT " read as hex %s, as ib-sriov-cni reads "
		     "its string",
		     json_integer_value(v), hex);
}

/* One key of the CNI's block (spec.macvlan, spec.sriov, ...) into rdmak-cni's config. */
static void smc_block_key(struct conv *cv, struct smc *m, json_t *config, const char *p,
			  const char *k, json_t *v)
{
	bool hostdev = !strcmp(m->link, "hostdev"), macvlan = !strcmp(m->link, "macvlan");

	if (!strcmp(k, "ippools")) {
		m->ippools = v;
	} else if (!strcmp(k, "resourceName") || !strcmp(k, "rdmaResourceName")) {
		m->resource = json_string_value(v);
	} else if (!strcmp(k, "master") && json_is_array(v) && json_array_size(v) >= 1) {
		json_object_set(config, "master", json_array_get(v, 0));
		if (json_array_size(v) > 1)
			note(cv, true, p,
			     "several masters (a bond the anchor makes): rdmak-cni takes one; make the "
			     "bond on the node and name it");
	} else if (!strcmp(k, "master") && json_is_string(v)) {
		json_object_set(config, "master", v);
	} else if (!strcmp(k, "enableRdma") && macvlan && json_is_boolean(v)) {
		/* macvlan's RDMA is the master's device, shared (Spiderpool's RoCE guide: the
		 * shared device plugin's resource in rdmaResourceName) */
		m->shared_rdma = json_is_true(v);
		if (m->shared_rdma)
			note(cv, false, p,
			     "true: the pods use the master's RDMA device, shared (the RDMA subsystem in "
			     "shared mode), through the resource in rdmaResourceName; nothing to isolate");
	} else if ((!strcmp(k, "rdmaIsolation") || !strcmp(k, "enableRdma")) &&
		   json_is_boolean(v)) {
		/* sriov's enableRdma (before rdmaIsolation) chained rdma-cni: the VF's RDMA
		 * device moves into the pod */
		json_object_set(config, "rdmaIsolation", v);
	} else if (!strcmp(k, "mtu") && json_is_integer(v)) {
		json_object_set(config, "mtu", v);
	} else if (!strcmp(k, "vlanID") && json_is_integer(v)) {
		m->vlan = json_integer_value(v);
		m->has_vlan = true;
	} else if (hostdev && !strcmp(k, "minTxRateMbps") && json_is_integer(v)) {
		json_object_set(config, "min_tx_rate", v); /* sriov-cni's key, Mb/s both */
	} else if (hostdev && !strcmp(k, "maxTxRateMbps") && json_is_integer(v)) {
		json_object_set(config, "max_tx_rate", v);
	} else if (hostdev && !strcmp(k, "linkState") && json_is_string(v)) {
		json_object_set(config, "link_state", v);
	} else if (!strcmp(k, "enableIbKubernetes") || !strcmp(k, "ibKubernetesEnabled")) {
		if (json_is_true(v))
			note(cv, true, p,
			     "true: rdmak-cni does not wait for ib-kubernetes; it sets the VF's GUID "
			     "from the pod's (capability infinibandGUID) and adds it to the partition "
			     "through the fabric manager when \"fabric\" is given (docs/cni.md)");
	} else if (!strcmp(k, "pkey")) {
		smc_pkey(cv, config, p, v);
	} else {
		note(cv, false, p, "not carried: rdmak-cni has no counterpart");
	}
}

/* vlanID: sriov-cni's vlan on a VF; on macvlan the VLAN interface Spiderpool's ifacer makes on
 * the master, which rdmak-cni does not make. */
static void smc_vlan(struct conv *cv, struct smc *m, json_t *config, const char *bpath)
{
	const char *master = json_string_value(json_object_get(config, "master"));
	char p[96], sub[64];

	snprintf(p, sizeof(p), "%s.vlanID", bpath);
	if (!m->has_vlan)
		return;
	if (!strcmp(m->link, "hostdev")) {
		json_object_set_new(config, "vlan", json_integer(m->vlan));
		return;
	}
	if (m->vlan == 0)
		return;
	if (!master || snprintf(sub, sizeof(sub), "%s.%" JSON_INTEGER_FORMAT, master, m->vlan) >=
			       16 /* IFNAMSIZ */) {
		note(cv, true, p,
		     "%" JSON_INTEGER_FORMAT
		     ": rdmak-cni makes no VLAN interface; make one for VLAN "
		     "%" JSON_INTEGER_FORMAT " on each node and name it as master",
		     m->vlan, m->vlan);
		return;
	}
	json_object_set_new(config, "master", json_string(sub));
	note(cv, true, p,
	     "%" JSON_INTEGER_FORMAT ": master is the VLAN interface %s, which Spiderpool's ifacer "
	     "made and rdmak-cni does not: create it on each node (ip link add link %s name %s "
	     "type vlan id %" JSON_INTEGER_FORMAT ")",
	     m->vlan, sub, master, sub, m->vlan);
}

static int spider_multus_config(struct conv *cv, const json_t *obj, const char *name,
				const char *ns)
{
	static const char *const blocks[][3] = {
		/* cniType, its block, rdmak-cni's link */
		{ "macvlan", "macvlan", "macvlan" },
		{ "sriov", "sriov", "hostdev" },
		{ "ib-sriov", "ibsriov", "hostdev" },
		{ "ipoib", "ipoib", "ipoib" },
	};
	const json_t *spec = json_object_get(obj, "spec");
	const char *type = json_string_value(json_object_get(spec, "cniType"));
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	const char *block = NULL, *k;
	struct smc m = { 0 };
	char bpath[64];
	json_t *blk, *config, *ipam, *v, *nad;

	for (size_t i = 0; type && i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (!strcmp(type, blocks[i][0]))
			block = blocks[i][1], m.link = blocks[i][2];
	if (!block) {
		note(cv, true, "spec.cniType",
		     "\"%s\": rdmak-cni has no such link (macvlan, sriov, ib-sriov, ipoib are "
		     "converted): not converted",
		     type ? type : "(none)");
		return 0;
	}
	blk = json_object_get(spec, block);
	snprintf(bpath, sizeof(bpath), "spec.%s", block);
	config = cni_config_new(name, m.link);
	if (!config)
		return -ENOMEM;
	json_object_foreach(blk, k, v)
	{
		char p[128];

		snprintf(p, sizeof(p), "%s.%s", bpath, k);
		smc_block_key(cv, &m, config, p, k, v);
	}
	json_object_foreach((json_t *)spec, k, v) if (strcmp(k, "cniType") && strcmp(k, block))
		smc_spec_key(cv, &m, block, k, v);
	smc_vlan(cv, &m, config, bpath);
	if (!strcmp(type, "ib-sriov"))
		json_object_set_new(config, "capabilities",
				    json_pack("{s:b}", "infinibandGUID", 1));
	if (!strcmp(m.link, "hostdev") && !m.resource)
		note(cv, true, bpath,
		     "no resourceName: a hostdev network needs the resource its VF comes from");
	if (m.shared_rdma && !m.resource)
		note(cv, true, bpath,
		     "enableRdma without rdmaResourceName: name the shared device plugin's resource, "
		     "or the pods get no RDMA device");
	ipam = m.no_ipam ? NULL : spider_ipam(cv, "spec.ippools", m.ippools);
	if (ipam)
		json_object_set_new(config, "ipam", ipam);
	nad = nad_new(cv, name, ns, m.resource, config);
	json_decref(config);
	if (nad && labels) {
		json_object_set(json_object_get(nad, "metadata"), "labels", (json_t *)labels);
		if (json_object_get(labels, "cni.spidernet.io/rdma-resource-inject"))
			note(cv, false, "metadata.labels",
			     "kept: `rdmak webhook` reads Spiderpool's rdma-resource-inject "
			     "label (docs/webhook.md)");
	}
	return 0;
}

/* The same kind, namespace and name given again with another content: kubectl apply would keep
 * the last, and a network reads whichever pool comes first, so neither is what the user meant.
 * The same object given twice with the same content is no conflict. */
static void same_name_elsewhere(struct conv *cv, const json_t *obj, const char *kind,
				const char *name, const char *ns, size_t self)
{
	char key[768];
	size_t j;
	json_t *x;

	name_key(key, sizeof(key), kind, ns, name);
	json_array_foreach(json_object_get(cv->names, key), j, x)
	{
		size_t i = (size_t)json_integer_value(x);
		const json_t *in = json_array_get(cv->inputs, i);

		if (i == self || json_equal(json_object_get(in, "object"), obj))
			continue;
		note(cv, true, "metadata.name",
		     "%s %s is also defined, differently, in %s (object %zu of the input): "
		     "give each its own name",
		     kind, name, str_or(json_string_value(json_object_get(in, "file"))), i + 1);
	}
}

/* ---- one object --------------------------------------------------------------------------- */

static int convert_one(struct conv *cv, const json_t *in, size_t idx)
{
	const json_t *obj = json_object_get(in, "object");
	const json_t *md = json_object_get(obj, "metadata");
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	cv->doc =
		json_pack("{s:{s:s?,s:s?,s:s?,s:O?},s:[],s:[]}", "from", "kind", kind, "name", name,
			  "namespace", ns, "file", json_object_get(in, "file"), "notes", "objects");
	if (!cv->doc)
		return -ENOMEM;
	if (!json_is_object(obj) || !kind) {
		note(cv, false, "", "not a Kubernetes object (no kind): left out");
		return 0;
	}
	if (!name) {
		note(cv, true, "metadata.name", "missing: not converted");
		return 0;
	}
	same_name_elsewhere(cv, obj, kind, name, ns, idx);
	if (!strcmp(kind, "NicClusterPolicy"))
		return nic_cluster_policy(cv, obj);
	if (!strcmp(kind, "HostDeviceNetwork") || !strcmp(kind, "MacvlanNetwork") ||
	    !strcmp(kind, "IPoIBNetwork"))
		return netop_network(cv, obj, name, kind);
	if (!strcmp(kind, "SpiderMultusConfig"))
		return spider_multus_config(cv, obj, name, ns ? ns : "default");
	if (!strcmp(kind, "SriovNetworkNodePolicy")) {
		sriov_policy_overlaps(cv, obj, idx);
		return sriov_policy(cv, obj, name);
	}
	if (!strcmp(kind, "SpiderIPPool")) {
		note(cv, false, "",
		     "read through the SpiderMultusConfigs that name it (its ranges are in their "
		     "networks' ipam)");
		return 0;
	}
	note(cv, false, "", "kind %s is not one rdmak convert reads: left out", kind);
	return 0;
}

static void conv_clear(struct conv *cv)
{
	json_decref(cv->values);
	json_decref(cv->names);
	json_decref(cv->pools);
	json_decref(cv->pf_users);
	json_decref(cv->prefixes);
}

int convert_run(const json_t *inputs, json_t **ret)
{
	struct conv cv = { .inputs = inputs };
	json_t *docs = json_array(), *out;
	size_t i;
	json_t *in;
	int r = 0;

	cv.values = json_object();
	if (!docs || !cv.values || conv_index(&cv) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	json_array_foreach(inputs, i, in)
	{
		r = convert_one(&cv, in, i);
		if (cv.doc && json_array_append_new(docs, cv.doc) < 0)
			r = -ENOMEM;
		cv.doc = NULL;
		if (r < 0 || cv.oom) {
			r = -ENOMEM;
			goto fail;
		}
	}
	out = json_pack("{s:o,s:i}", "documents", docs, "fixes", cv.fixes);
	docs = NULL;
	if (!out ||
	    (json_object_size(cv.values) && json_object_set(out, "values", cv.values) < 0)) {
		json_decref(out);
		r = -ENOMEM;
		goto fail;
	}
	conv_clear(&cv);
	*ret = out;
	return 0;
fail:
	json_decref(docs);
	conv_clear(&cv);
	return r;
}
