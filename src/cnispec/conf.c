/* SPDX-License-Identifier: Apache-2.0 */
/* The request on stdin: the protocol's envelope, a dispatch table checked here; the plugin's
 * own keys handed over in conf->plugin so that each plugin refuses what it does not know,
 * naming the path. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "dispatch/dispatch.h"
#include "util/cleanup.h"

#define MAX_ATTACHMENTS 1000000 /* a node's worth many times over; past this it is not a list */

/* "name" and "type" (and ipam.type): checked as they are read. */
static int read_checked(struct dispatch_ctx *d, const char *path, json_t *v, void *t,
			bool (*valid)(const char *s, const char **why))
{
	const char *s, *why;
	int r = dispatch_string(d, path, v, false, &s);

	if (r < 0)
		return r;
	if (!valid(s, &why))
		return dispatch_fail(d, path, "\"%s\" %s", s, why);
	*(const char **)t = s;
	return 0;
}

static int read_network_name(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_checked(d, path, v, t, cnispec_network_name_valid);
}

static int read_plugin_type(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_checked(d, path, v, t, cnispec_plugin_type_valid);
}

/* Of "ipam", the protocol reads only the type; the rest is the IPAM plugin's. */
static const struct dispatch_field ipam_fields[] = {
	DISPATCH_FIELD("type", JSON_STRING, read_plugin_type,
		       offsetof(struct cnispec_conf, ipam_type), 0),
	{},
};

static int read_ipam(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct cnispec_conf *c = t;
	int r = dispatch_run(d, path, v, ipam_fields, DISPATCH_UNKNOWN_ALLOW, c);

	if (r == 0)
		c->ipam = v;
	return r;
}

/* Keys the protocol defines (SPEC.md section 1 and 3), borrowed from root; the others go to
 * conf->plugin, except the runtime's "cni.dev/" ones. cniVersion is read first by
 * parse_version (its refusals are code 1 and come before any other), prevResult once the
 * version is known. */
static const struct dispatch_field envelope_fields[] = {
	DISPATCH_FIELD("cniVersion", JSON_STRING, NULL, offsetof(struct cnispec_conf, cni_version),
		       0),
	DISPATCH_FIELD("name", JSON_STRING, read_network_name, offsetof(struct cnispec_conf, name),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("type", JSON_STRING, read_plugin_type, offsetof(struct cnispec_conf, type),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("args", JSON_OBJECT, NULL, offsetof(struct cnispec_conf, args),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("runtimeConfig", JSON_OBJECT, NULL,
		       offsetof(struct cnispec_conf, runtime_config), DISPATCH_NULLABLE),
	DISPATCH_FIELD("capabilities", JSON_OBJECT, NULL,
		       offsetof(struct cnispec_conf, capabilities), DISPATCH_NULLABLE),
	DISPATCH_FIELD("dns", JSON_OBJECT, NULL, offsetof(struct cnispec_conf, dns),
		       DISPATCH_NULLABLE),
	DISPATCH_FIELD("ipam", JSON_OBJECT, read_ipam, 0, DISPATCH_NULLABLE),
	DISPATCH_FIELD("prevResult", DISPATCH_ANY, NULL,
		       offsetof(struct cnispec_conf, prev_result_json), DISPATCH_NULLABLE),
	/* the runtime's, not a plugin's */
	DISPATCH_IGNORE("cniVersions", NULL),
	DISPATCH_IGNORE("disableCheck", NULL),
	DISPATCH_IGNORE("disableGC", NULL),
	{},
};

static bool is_envelope_key(const char *k)
{
	if (strncmp(k, "cni.dev/", 8) == 0)
		return true;
	for (const struct dispatch_field *f = envelope_fields; f->name; f++)
		if (strcmp(k, f->name) == 0)
			return true;
	return false;
}

void cnispec_conf_free(struct cnispec_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_valid_attachments; i++) {
		free(c->valid_attachments[i].container_id);
		free(c->valid_attachments[i].ifname);
	}
	free(c->valid_attachments);
	cnispec_result_free(c->prev_result);
	json_decref(c->plugin);
	json_decref(c->root);
	free(c);
}

/* The one place a refusal of the envelope becomes the protocol's error (code 7). */
static int config_error(const struct dispatch_ctx *d, int r, struct cnispec_error *err)
{
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid network configuration", "%s",
			    d->err);
}

/* cniVersion as text, NULL when absent; code 7 when it is not a string. */
static int read_version_text(struct cnispec_conf *c, struct cnispec_error *err)
{
	char why[CNISPEC_DETAILS_MAX];
	struct dispatch_ctx d = { .err = why, .errlen = sizeof(why) };
	json_t *v = json_object_get(c->root, "cniVersion");
	int r = v ? dispatch_string(&d, "cniVersion", v, false, &c->cni_version) : 0;

	return r < 0 ? config_error(&d, r, err) : 0;
}

static int parse_version(struct cnispec_conf *c, struct cnispec_error *err)
{
	int r = read_version_text(c, err);

	if (r < 0)
		return r;
	if (!c->cni_version)
		return cnispec_fail(
			err, -ENOTSUP, CNISPEC_E_VERSION, "incompatible CNI version",
			"cniVersion: missing, which libcni reads as 0.1.0, older than this plugin supports "
			"(1.1.0, 1.0.0, 0.4.0, 0.3.1 and 0.3.0): add \"cniVersion\": \"1.0.0\" (or the newest "
			"your runtime takes)");
	if (cnispec_version_parse(c->cni_version, &c->version) < 0)
		return cnispec_fail(
			err, -ENOTSUP, CNISPEC_E_VERSION, "incompatible CNI version",
			"cniVersion: \"%s\" is not supported; this plugin supports 1.1.0, 1.0.0, 0.4.0, "
			"0.3.1 and 0.3.0",
			c->cni_version);
	return 0;
}

static int parse_prev_result(struct cnispec_conf *c, struct cnispec_error *err)
{
	char why[512];
	int r;

	if (!c->prev_result_json)
		return 0;
	r = cnispec_result_from_json(c->prev_result_json, c->version, "prevResult", &c->prev_result,
				     why, sizeof(why));
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid prevResult", "%s", why);
	return 0;
}

static int read_container_id(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = read_checked(d, path, v, &s, cnispec_container_id_valid);

	return r < 0 ? r : dispatch_strdup(d, path, v, false, t);
}

static int read_ifname(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	const char *s;
	int r = read_checked(d, path, v, &s, cnispec_ifname_valid);

	return r < 0 ? r : dispatch_strdup(d, path, v, false, t);
}

static const struct dispatch_field attachment_fields[] = {
	DISPATCH_FIELD("containerID", JSON_STRING, read_container_id,
		       offsetof(struct cnispec_attachment, container_id), DISPATCH_MANDATORY),
	DISPATCH_FIELD("ifname", JSON_STRING, read_ifname,
		       offsetof(struct cnispec_attachment, ifname), DISPATCH_MANDATORY),
	{},
};

static int read_attachment(struct dispatch_ctx *d, const char *path, json_t *it, size_t i,
			   void *userdata)
{
	struct cnispec_conf *c = userdata;

	(void)i;
	/* counted before it is read, so that cnispec_conf_free frees what a refused one holds */
	return dispatch_run(d, path, it, attachment_fields, DISPATCH_UNKNOWN_ALLOW,
			    &c->valid_attachments[c->n_valid_attachments++]);
}

/* "cni.dev/valid-attachments" (GC): a "cni.dev/" key, the runtime's namespace, read by name
 * with its path as the spec writes it (a row's path would quote it). */
static int parse_attachments(struct cnispec_conf *c, struct dispatch_ctx *d)
{
	static const char K[] = "cni.dev/valid-attachments";
	json_t *a = json_object_get(c->root, K);

	if (!a)
		return 0;
	if (!json_is_array(a))
		return dispatch_fail(d, K, "expected an array, got %s", dispatch_type_name(a));
	if (json_array_size(a) > MAX_ATTACHMENTS)
		return dispatch_fail(d, K, "more than a million entries");
	c->valid_attachments = calloc(json_array_size(a) + 1, sizeof(*c->valid_attachments));
	if (!c->valid_attachments)
		return -ENOMEM;
	c->has_valid_attachments = true;
	return dispatch_array(d, K, a, 0, read_attachment, c);
}

static int split_plugin_keys(struct cnispec_conf *c, struct cnispec_error *err)
{
	const char *k;
	json_t *v;

	c->plugin = json_object();
	if (!c->plugin)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	json_object_foreach(c->root, k,
			    v) if (!is_envelope_key(k) &&
				   json_object_set(c->plugin, k, v) <
					   0) return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL,
								  "out of memory", NULL);
	return 0;
}

static int parse_envelope(struct cnispec_conf *c, struct cnispec_error *err)
{
	char why[CNISPEC_DETAILS_MAX];
	struct dispatch_ctx d = { .err = why, .errlen = sizeof(why) };
	int r;

	r = dispatch_run(&d, "", c->root, envelope_fields, DISPATCH_UNKNOWN_ALLOW, c);
	if (r < 0)
		return config_error(&d, r, err);
	if ((r = parse_prev_result(c, err)) < 0)
		return r;
	if ((r = parse_attachments(c, &d)) < 0)
		return config_error(&d, r, err);
	return split_plugin_keys(c, err);
}

int cnispec_conf_parse(const char *buf, size_t len, enum cnispec_cmd cmd, struct cnispec_conf **ret,
		       struct cnispec_error *err)
{
	struct cnispec_conf *c;
	json_error_t je;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	/* duplicate keys are refused: two "ipam" blocks mean one of them is ignored by someone */
	c->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!c->root) {
		cnispec_conf_free(c);
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE,
				    "failed to decode the network configuration",
				    "line %d column %d: %s", je.line, je.column, je.text);
	}
	if (!json_is_object(c->root)) {
		cnispec_conf_free(c);
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE,
				    "failed to decode the network configuration",
				    "expected a JSON object");
	}
	if (cmd == CNISPEC_CMD_VERSION) {
		/* VERSION reads only cniVersion, and answers even when it is not one we know */
		r = read_version_text(c, err);
		if (r == 0 && c->cni_version &&
		    cnispec_version_parse(c->cni_version, &c->version) < 0)
			c->version = CNISPEC_V_LATEST;
		else if (r == 0 && !c->cni_version)
			c->version = CNISPEC_V_LATEST;
	} else {
		r = parse_version(c, err);
		if (r == 0)
			r = parse_envelope(c, err);
	}
	if (r < 0) {
		cnispec_conf_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

bool cnispec_conf_attachment_valid(const struct cnispec_conf *c, const char *container_id,
				   const char *ifname)
{
	for (size_t i = 0; i < c->n_valid_attachments; i++)
		if (!strcmp(c->valid_attachments[i].container_id, container_id) &&
		    !strcmp(c->valid_attachments[i].ifname, ifname))
			return true;
	return false;
}

int cnispec_fail_unsupported(struct cnispec_error *err, const char *path, const json_t *value,
			     const char *hint)
{
	_cleanup_free_ char *text =
		value ? json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char msg[CNISPEC_MSG_MAX];

	if (text && strlen(text) > 200)
		memcpy(text + 197, "...", sizeof("..."));
	/* the spec: "The error message must contain the key and value of the unsupported field" */
	snprintf(msg, sizeof(msg), "unsupported field %s", path);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_UNSUPPORTED_FIELD, msg,
			    "%s: unsupported key (value: %s)%s%s", path, text ? text : "null",
			    hint ? "; " : "", hint ? hint : "");
}
