/* The request on stdin: the protocol's envelope, checked here; the plugin's own keys handed
 * over in conf->plugin so that each plugin refuses what it does not know, naming the path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "util/cleanup.h"

#define MAX_ATTACHMENTS 1000000 /* a node's worth many times over; past this it is not a list */

/* Keys the protocol defines (SPEC.md section 1 and 3). "cni.dev/" keys are the runtime's. */
static const char *const envelope_keys[] = {
	"cniVersion", "cniVersions", "name", "type", "args", "runtimeConfig", "capabilities",
	"prevResult", "ipam", "dns", "disableCheck", "disableGC",
};

static bool is_envelope_key(const char *k)
{
	if (strncmp(k, "cni.dev/", 8) == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(envelope_keys); i++)
		if (strcmp(k, envelope_keys[i]) == 0)
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

#define CONFIG_ERR(err, ...) cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration", __VA_ARGS__)

/* A string member, or NULL when absent; -EINVAL (code 7) when present but not a string. */
static int opt_str(const json_t *o, const char *key, const char *path, const char **ret, struct cnispec_error *err)
{
	const json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
				    "%s%s: expected a string", path, key);
	*ret = json_string_value(v);
	return 0;
}

static int opt_object(json_t *o, const char *key, json_t **ret, struct cnispec_error *err)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return CONFIG_ERR(err, "%s: expected an object", key);
	*ret = v;
	return 0;
}

static int parse_version(struct cnispec_conf *c, struct cnispec_error *err)
{
	int r = opt_str(c->root, "cniVersion", "", &c->cni_version, err);

	if (r < 0)
		return r;
	if (!c->cni_version)
		return cnispec_fail(err, -ENOTSUP, CNISPEC_E_VERSION, "incompatible CNI version",
				    "cniVersion: missing; this plugin supports 1.1.0, 1.0.0, 0.4.0, 0.3.1 and 0.3.0");
	if (cnispec_version_parse(c->cni_version, &c->version) < 0)
		return cnispec_fail(err, -ENOTSUP, CNISPEC_E_VERSION, "incompatible CNI version",
				    "cniVersion: \"%s\" is not supported; this plugin supports 1.1.0, 1.0.0, 0.4.0, "
				    "0.3.1 and 0.3.0",
				    c->cni_version);
	return 0;
}

static int parse_names(struct cnispec_conf *c, struct cnispec_error *err)
{
	const char *why;
	int r;

	if ((r = opt_str(c->root, "name", "", &c->name, err)) < 0 || (r = opt_str(c->root, "type", "", &c->type, err)) < 0)
		return r;
	if (!c->name)
		return CONFIG_ERR(err, "name: missing");
	if (!cnispec_network_name_valid(c->name, &why))
		return CONFIG_ERR(err, "name: \"%s\" %s", c->name, why);
	if (!c->type)
		return CONFIG_ERR(err, "type: missing");
	if (!cnispec_plugin_type_valid(c->type, &why))
		return CONFIG_ERR(err, "type: \"%s\" %s", c->type, why);
	return 0;
}

static int parse_ipam(struct cnispec_conf *c, struct cnispec_error *err)
{
	const char *why;
	int r;

	if ((r = opt_object(c->root, "ipam", &c->ipam, err)) < 0 || !c->ipam)
		return r;
	if ((r = opt_str(c->ipam, "type", "ipam.", &c->ipam_type, err)) < 0)
		return r;
	if (c->ipam_type && !cnispec_plugin_type_valid(c->ipam_type, &why))
		return CONFIG_ERR(err, "ipam.type: \"%s\" %s", c->ipam_type, why);
	return 0;
}

static int parse_prev_result(struct cnispec_conf *c, struct cnispec_error *err)
{
	char why[512];
	json_t *v = json_object_get(c->root, "prevResult");
	int r;

	if (!v || json_is_null(v))
		return 0;
	c->prev_result_json = v;
	r = cnispec_result_from_json(v, c->version, "prevResult", &c->prev_result, why, sizeof(why));
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid prevResult", "%s", why);
	return 0;
}

static int parse_attachments(struct cnispec_conf *c, struct cnispec_error *err)
{
	const json_t *a = json_object_get(c->root, "cni.dev/valid-attachments"), *it;
	const char *K = "cni.dev/valid-attachments";
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return CONFIG_ERR(err, "%s: expected an array", K);
	if (json_array_size(a) > MAX_ATTACHMENTS)
		return CONFIG_ERR(err, "%s: more than a million entries", K);
	c->valid_attachments = calloc(json_array_size(a) + 1, sizeof(*c->valid_attachments));
	if (!c->valid_attachments)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	c->has_valid_attachments = true;
	json_array_foreach(a, i, it) {
		const json_t *id = json_object_get(it, "containerID"), *ifn = json_object_get(it, "ifname");
		struct cnispec_attachment *at = &c->valid_attachments[c->n_valid_attachments];
		const char *why;

		if (!json_is_object(it) || !json_is_string(id) || !json_is_string(ifn))
			return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
					    "%s[%zu]: expected {\"containerID\": string, \"ifname\": string}", K, i);
		if (!cnispec_container_id_valid(json_string_value(id), &why))
			return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
					    "%s[%zu].containerID: \"%s\" %s", K, i, json_string_value(id), why);
		if (!cnispec_ifname_valid(json_string_value(ifn), &why))
			return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
					    "%s[%zu].ifname: \"%s\" %s", K, i, json_string_value(ifn), why);
		at->container_id = strdup(json_string_value(id));
		at->ifname = strdup(json_string_value(ifn));
		c->n_valid_attachments++;
		if (!at->container_id || !at->ifname)
			return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	}
	return 0;
}

static int split_plugin_keys(struct cnispec_conf *c, struct cnispec_error *err)
{
	const char *k;
	json_t *v;

	c->plugin = json_object();
	if (!c->plugin)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	json_object_foreach(c->root, k, v)
		if (!is_envelope_key(k) && json_object_set(c->plugin, k, v) < 0)
			return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	return 0;
}

static int parse_envelope(struct cnispec_conf *c, struct cnispec_error *err)
{
	int r;

	if ((r = parse_names(c, err)) < 0 || (r = opt_object(c->root, "args", &c->args, err)) < 0 ||
	    (r = opt_object(c->root, "runtimeConfig", &c->runtime_config, err)) < 0 ||
	    (r = opt_object(c->root, "capabilities", &c->capabilities, err)) < 0 ||
	    (r = opt_object(c->root, "dns", &c->dns, err)) < 0 || (r = parse_ipam(c, err)) < 0 ||
	    (r = parse_prev_result(c, err)) < 0 || (r = parse_attachments(c, err)) < 0)
		return r;
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
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE, "failed to decode the network configuration",
				    "line %d column %d: %s", je.line, je.column, je.text);
	}
	if (!json_is_object(c->root)) {
		cnispec_conf_free(c);
		return cnispec_fail(err, -EINVAL, CNISPEC_E_DECODE, "failed to decode the network configuration",
				    "expected a JSON object");
	}
	if (cmd == CNISPEC_CMD_VERSION) {
		/* VERSION reads only cniVersion, and answers even when it is not one we know */
		r = opt_str(c->root, "cniVersion", "", &c->cni_version, err);
		if (r == 0 && c->cni_version && cnispec_version_parse(c->cni_version, &c->version) < 0)
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

bool cnispec_conf_attachment_valid(const struct cnispec_conf *c, const char *container_id, const char *ifname)
{
	for (size_t i = 0; i < c->n_valid_attachments; i++)
		if (!strcmp(c->valid_attachments[i].container_id, container_id) &&
		    !strcmp(c->valid_attachments[i].ifname, ifname))
			return true;
	return false;
}

int cnispec_fail_unsupported(struct cnispec_error *err, const char *path, const json_t *value, const char *hint)
{
	_cleanup_free_ char *text = value ? json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char msg[CNISPEC_MSG_MAX];

	if (text && strlen(text) > 200)
		strcpy(text + 197, "...");
	/* the spec: "The error message must contain the key and value of the unsupported field" */
	snprintf(msg, sizeof(msg), "unsupported field %s", path);
	return cnispec_fail(err, -EINVAL, CNISPEC_E_UNSUPPORTED_FIELD, msg, "%s: unsupported key (value: %s)%s%s", path,
			    text ? text : "null", hint ? "; " : "", hint ? hint : "");
}
