/* SPDX-License-Identifier: Apache-2.0 */
/* Config parser: a declarative table per object (webhook/dispatch.h), unknown keys refused. */
#include "webhook/webhookconf.h"

#include <errno.h>
#include <stdint.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "k8s/names.h"
#include "util/strv.h"
#include "dispatch/dispatch.h"
#include "doc/yaml.h"

/* ---- the model ----------------------------------------------------------------------------- */

static void group_clear(struct webhook_group *g)
{
	free(g->name);
	for (size_t i = 0; i < g->n_networks; i++) {
		free(g->networks[i].namespace);
		free(g->networks[i].name);
		free(g->networks[i].interface);
		free(g->networks[i].resource);
	}
	free(g->networks);
	for (size_t i = 0; i < g->n_resources; i++)
		free(g->resources[i].name);
	free(g->resources);
	free(g->shm_size_limit);
}

void webhook_config_free(struct webhook_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_groups; i++)
		group_clear(&cfg->groups[i]);
	free(cfg->groups);
	strv_free(cfg->gpu_resources);
	free(cfg);
}

const struct webhook_group *webhook_config_group(const struct webhook_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_groups; i++)
		if (!strcmp(cfg->groups[i].name, name))
			return &cfg->groups[i];
	return NULL;
}

bool webhook_config_is_gpu(const struct webhook_config *cfg, const char *resource)
{
	for (char **p = cfg->gpu_resources; p && *p; p++)
		if (!strcmp(*p, resource))
			return true;
	return false;
}

/* ---- field readers ------------------------------------------------------------------------- */

static int dup_string(struct dispatch_ctx *c, const char *path, json_t *v, char **ret)
{
	if (strlen(json_string_value(v)) != json_string_length(v))
		return dispatch_fail(c, path, "contains a NUL byte");
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int read_namespace(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v), *why;

	if (*s && !k8s_dns1123_label(s, &why))
		return dispatch_fail(c, path, "\"%s\" is not a namespace name: %s", s, why);
	return dup_string(c, path, v, t);
}

static int read_name(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v), *why;

	if (!k8s_dns1123_subdomain(s, &why))
		return dispatch_fail(c, path,
				     "\"%s\" is not a NetworkAttachmentDefinition "
				     "name: %s",
				     s, why);
	return dup_string(c, path, v, t);
}

static int read_interface(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v), *why;

	if (!cnispec_ifname_valid(s, &why))
		return dispatch_fail(c, path, "\"%s\" is not an interface name: %s", s, why);
	return dup_string(c, path, v, t);
}

static int read_resource_name(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *why;

	if (!k8s_extended_resource_name(json_string_value(v), &why))
		return dispatch_fail(c, path, "\"%s\": %s", json_string_value(v), why);
	return dup_string(c, path, v, t);
}

static int read_count(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	json_int_t n = json_integer_value(v);

	if (n < 1 || n > WEBHOOK_MAX_COUNT)
		return dispatch_fail(c, path, "expected 1 to %d, got %" JSON_INTEGER_FORMAT,
				     WEBHOOK_MAX_COUNT, n);
	*(unsigned *)t = (unsigned)n;
	return 0;
}

static int read_quantity(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v), *why;
	int64_t bytes;

	/* the API server parses it again; a value past int64, which it would cap at 8Ei, is a
	 * typo */
	if (k8s_quantity_parse(s, &bytes, &why) < 0)
		return dispatch_fail(c, path, "\"%s\" is not a quantity (for example 64Gi): %s", s,
				     why);
	if (*s == '-')
		return dispatch_fail(c, path, "\"%s\": a size must not be negative", s);
	return dup_string(c, path, v, t);
}

static int read_on_error(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v);

	if (!strcmp(s, "deny"))
		*(enum webhook_on_error *)t = WEBHOOK_ON_ERROR_DENY;
	else if (!strcmp(s, "allow"))
		*(enum webhook_on_error *)t = WEBHOOK_ON_ERROR_ALLOW;
	else
		return dispatch_fail(c, path, "expected \"deny\" or \"allow\", got \"%s\"", s);
	return 0;
}

static int read_network(struct dispatch_ctx *c, const char *path, json_t *v,
			struct webhook_network *n)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("namespace", JSON_STRING, read_namespace,
			       offsetof(struct webhook_network, namespace), 0),
		DISPATCH_FIELD("name", JSON_STRING, read_name,
			       offsetof(struct webhook_network, name), DISPATCH_MANDATORY),
		DISPATCH_FIELD("interface", JSON_STRING, read_interface,
			       offsetof(struct webhook_network, interface), DISPATCH_NULLABLE),
		DISPATCH_FIELD("resource", JSON_STRING, read_resource_name,
			       offsetof(struct webhook_network, resource), DISPATCH_NULLABLE),
		DISPATCH_FIELD("count", JSON_INTEGER, read_count,
			       offsetof(struct webhook_network, count), 0),
		{},
	};
	int r;

	n->count = 1;
	r = dispatch_run(c, path, v, fields, DISPATCH_UNKNOWN_REFUSE, n);
	if (r < 0)
		return r;
	if (!n->namespace && !(n->namespace = strdup("")))
		return -ENOMEM;
	return 0;
}

static int read_networks(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct webhook_group *g = t;
	size_t i;
	json_t *x;

	if (json_array_size(v) > WEBHOOK_MAX_NETWORKS)
		return dispatch_fail(c, path, "more than %d networks", WEBHOOK_MAX_NETWORKS);
	g->networks = calloc(json_array_size(v) + 1, sizeof(*g->networks));
	if (!g->networks)
		return -ENOMEM;
	json_array_foreach(v, i, x)
	{
		char sub[256];
		int r;

		dispatch_path_idx(sub, sizeof(sub), path, i);
		r = read_network(c, sub, x, &g->networks[i]);
		g->n_networks = i + 1; /* freed by group_clear even when half read */
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->networks[j].namespace, g->networks[i].namespace) &&
			    !strcmp(g->networks[j].name, g->networks[i].name))
				return dispatch_fail(c, sub, "%s%s%s is listed twice in this group",
						     g->networks[i].namespace,
						     *g->networks[i].namespace ? "/" : "",
						     g->networks[i].name);
	}
	return 0;
}

static int read_resources(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct webhook_group *g = t;
	const char *key;
	json_t *x;

	g->resources = calloc(json_object_size(v) + 1, sizeof(*g->resources));
	if (!g->resources)
		return -ENOMEM;
	json_object_foreach(v, key, x)
	{
		struct webhook_resource *res = &g->resources[g->n_resources];
		char sub[256];
		const char *why;
		int r;

		dispatch_path_key(sub, sizeof(sub), path, key);
		if (!k8s_extended_resource_name(key, &why))
			return dispatch_fail(c, sub, "%s", why);
		if (!json_is_integer(x))
			return dispatch_fail(c, sub, "expected a count (an integer), got %s",
					     dispatch_type_name(x));
		if ((r = read_count(c, sub, x, &res->count)) < 0)
			return r;
		if (!(res->name = strdup(key)))
			return -ENOMEM;
		g->n_resources++;
	}
	return 0;
}

static int read_group(struct dispatch_ctx *c, const char *path, json_t *v, struct webhook_group *g)
{
	/* networks and resources fill the group itself: their offsets are 0 */
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("networks", JSON_ARRAY, read_networks, 0, 0),
		DISPATCH_FIELD("resources", JSON_OBJECT, read_resources, 0, 0),
		DISPATCH_FIELD("ipcLock", DISPATCH_BOOL, NULL,
			       offsetof(struct webhook_group, ipc_lock), 0),
		DISPATCH_FIELD("shm", DISPATCH_BOOL, NULL, offsetof(struct webhook_group, shm), 0),
		DISPATCH_FIELD("shmSizeLimit", JSON_STRING, read_quantity,
			       offsetof(struct webhook_group, shm_size_limit), DISPATCH_NULLABLE),
		DISPATCH_FIELD("memoryLimitWarning", DISPATCH_BOOL, NULL,
			       offsetof(struct webhook_group, memory_warning), 0),
		DISPATCH_FIELD("onError", JSON_STRING, read_on_error,
			       offsetof(struct webhook_group, on_error), 0),
		{},
	};
	int r;

	g->ipc_lock = g->shm = g->memory_warning = true;
	r = dispatch_run(c, path, v, fields, DISPATCH_UNKNOWN_REFUSE, g);
	if (r < 0)
		return r;
	if (g->n_networks == 0 && g->n_resources == 0)
		return dispatch_fail(c, path, "a group needs networks or resources");
	return 0;
}

static int read_groups(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct webhook_config *cfg = t;
	const char *key;
	json_t *x;

	if (json_object_size(v) == 0)
		return dispatch_fail(c, path, "no groups");
	if (json_object_size(v) > WEBHOOK_MAX_GROUPS)
		return dispatch_fail(c, path, "more than %d groups", WEBHOOK_MAX_GROUPS);
	cfg->groups = calloc(json_object_size(v), sizeof(*cfg->groups));
	if (!cfg->groups)
		return -ENOMEM;
	json_object_foreach(v, key, x)
	{
		struct webhook_group *g = &cfg->groups[cfg->n_groups];
		char sub[256];
		int r;

		dispatch_path_key(sub, sizeof(sub), path, key);
		/* the value of an annotation, and one element of a comma list of them */
		if (!*key || strlen(key) > 63 || strpbrk(key, ", \t\n\r"))
			return dispatch_fail(
				c, sub,
				"a group name is 1 to 63 characters without commas or blanks");
		if (!(g->name = strdup(key)))
			return -ENOMEM;
		cfg->n_groups++;
		r = read_group(c, sub, x, g);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_gpu_resources(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	struct webhook_config *cfg = t;
	size_t n = strv_length(cfg->gpu_resources), i;
	json_t *x;

	json_array_foreach(v, i, x)
	{
		char sub[256];
		const char *why;

		dispatch_path_idx(sub, sizeof(sub), path, i);
		if (!json_is_string(x))
			return dispatch_fail(c, sub, "expected a string, got %s",
					     dispatch_type_name(x));
		if (!k8s_extended_resource_name(json_string_value(x), &why))
			return dispatch_fail(c, sub, "\"%s\": %s", json_string_value(x), why);
		if (webhook_config_is_gpu(cfg, json_string_value(x)))
			continue;
		if (strv_extend(&cfg->gpu_resources, &n, json_string_value(x)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A resource that marks the GPU container must not also be one the webhook adds: it would pick
 * the container it just changed on the next pass, and not the one the user meant. */
static int check_cross(struct dispatch_ctx *c, const struct webhook_config *cfg)
{
	for (size_t i = 0; i < cfg->n_groups; i++) {
		const struct webhook_group *g = &cfg->groups[i];
		char path[256];

		for (size_t j = 0; j < g->n_networks; j++)
			if (g->networks[j].resource &&
			    webhook_config_is_gpu(cfg, g->networks[j].resource)) {
				dispatch_path_key(path, sizeof(path), "groups", g->name);
				return dispatch_fail(
					c, path,
					"network %s uses %s, which gpuResources names as a GPU",
					g->networks[j].name, g->networks[j].resource);
			}
		for (size_t j = 0; j < g->n_resources; j++)
			if (webhook_config_is_gpu(cfg, g->resources[j].name)) {
				dispatch_path_key(path, sizeof(path), "groups", g->name);
				return dispatch_fail(
					c, path, "resources: %s is named in gpuResources as a GPU",
					g->resources[j].name);
			}
	}
	return 0;
}

int webhook_config_parse(const char *buf, size_t len, struct webhook_config **ret, char *err,
			 size_t errlen)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("groups", JSON_OBJECT, read_groups, 0, DISPATCH_MANDATORY),
		DISPATCH_FIELD("gpuResources", JSON_ARRAY, read_gpu_resources, 0, 0),
		DISPATCH_FIELD("onError", JSON_STRING, read_on_error,
			       offsetof(struct webhook_config, on_error), 0),
		{},
	};
	struct dispatch_ctx c = { .err = err, .errlen = errlen };
	struct webhook_config *cfg;
	json_t *doc = NULL;
	size_t n = 0;
	int r;

	r = doc_parse(buf, len, &doc, NULL, err, errlen);
	if (r < 0)
		return r;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || strv_extend(&cfg->gpu_resources, &n, "nvidia.com/gpu") < 0) {
		json_decref(doc);
		webhook_config_free(cfg);
		return -ENOMEM;
	}
	cfg->on_error = WEBHOOK_ON_ERROR_DENY;
	r = dispatch_run(&c, "", doc, fields, DISPATCH_UNKNOWN_REFUSE, cfg);
	if (r == 0)
		r = check_cross(&c, cfg);
	json_decref(doc);
	if (r < 0) {
		webhook_config_free(cfg);
		return r;
	}
	*ret = cfg;
	return 0;
}
