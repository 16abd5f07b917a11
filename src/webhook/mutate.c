/* SPDX-License-Identifier: Apache-2.0 */
/* The merge rules. Every step reads the pod as it is and only adds or raises, so running it on
 * its own output changes nothing (the API server's reinvocationPolicy: IfNeeded calls us again
 * after other webhooks). A pod it cannot handle correctly is refused with the field that is
 * wrong, never half-mutated: the edits go to a copy that is dropped on refusal. */
#include "webhook/mutate.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"
#include "dispatch/dispatch.h"
#include "webhook/networks.h"

#define COUNT_MAX 1000000000000ULL

struct need {
	const char *name;
	unsigned long long count;
};

struct mctx {
	const struct webhook_config *cfg;
	const char *pod_ns;
	struct webhook_mutate_result *res;
	const struct webhook_group *groups[WEBHOOK_MAX_GROUPS];
	size_t n_groups;
	enum webhook_on_error on_error;
	json_t *pod; /* the copy being edited */
	json_t *container;
	size_t ci; /* its index in spec.containers */
	struct need needs[WEBHOOK_MAX_GROUPS * 4];
	size_t n_needs;
};

static int deny(struct mctx *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int deny(struct mctx *m, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	free(m->res->denied);
	m->res->denied = s;
	return -EPERM;
}

static int push(struct mctx *m, bool warning, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int push(struct mctx *m, bool warning, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return warning ? strv_push(&m->res->warnings, &m->res->n_warnings, s)
		       : strv_push(&m->res->changes, &m->res->n_changes, s);
}

/* ---- small JSON helpers ---------------------------------------------------------------------- */

/* obj[key] as an object (or an array), created when absent or null. -EPERM (denied, naming path)
 * when it is something else. */
static int child_of(struct mctx *m, json_t *obj, const char *key, const char *path, json_type type,
		    json_t **ret)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		v = type == JSON_ARRAY ? json_array() : json_object();
		if (!v || json_object_set_new(obj, key, v) < 0)
			return -ENOMEM;
	} else if (json_typeof(v) != type) {
		return deny(m, "%s: expected %s, got %s", path,
			    type == JSON_ARRAY ? "an array" : "an object", dispatch_type_name(v));
	}
	*ret = v;
	return 0;
}

static int child_object(struct mctx *m, json_t *obj, const char *key, const char *path,
			json_t **ret)
{
	return child_of(m, obj, key, path, JSON_OBJECT, ret);
}

static int child_array(struct mctx *m, json_t *obj, const char *key, const char *path, json_t **ret)
{
	return child_of(m, obj, key, path, JSON_ARRAY, ret);
}

int webhook_mutate_quantity_count(const json_t *v, unsigned long long *ret)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = {
		{ "", 1ULL },		{ "k", 1000ULL },	   { "M", 1000000ULL },
		{ "G", 1000000000ULL }, { "T", 1000000000000ULL }, { "Ki", 1ULL << 10 },
		{ "Mi", 1ULL << 20 },	{ "Gi", 1ULL << 30 },	   { "Ti", 1ULL << 40 },
	};
	unsigned long long n = 0;
	const char *p;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 ||
		    (unsigned long long)json_integer_value(v) > COUNT_MAX)
			return -EINVAL;
		*ret = (unsigned long long)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	p = json_string_value(v);
	if (*p == '+')
		p++;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		n = n * 10 + (unsigned long long)(*p - '0');
		if (n > COUNT_MAX)
			return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].suffix)) {
			if (units[i].mult > 1 && n > COUNT_MAX / units[i].mult)
				return -EINVAL;
			*ret = n * units[i].mult;
			return 0;
		}
	return -EINVAL; /* "500m", "1.5": not a whole number of devices */
}

/* ---- which groups ---------------------------------------------------------------------------- */

static int annotation_string(struct mctx *m, const json_t *ann, const char *key, const char **ret)
{
	const json_t *v = ann ? json_object_get(ann, key) : NULL;

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return deny(m, "metadata.annotations[\"%s\"]: expected a string, got %s", key,
			    dispatch_type_name(v));
	*ret = json_string_value(v);
	return 0;
}

static int resolve_groups(struct mctx *m, const char *value, const char *key)
{
	const char *p = value;
	_cleanup_free_ char *known = NULL;

	while (*p) {
		const char *end = strchr(p, ',');
		_cleanup_free_ char *name = NULL;
		const struct webhook_group *g;
		size_t len;
		bool dup = false;

		if (!end)
			end = p + strlen(p);
		while (p < end && isspace((unsigned char)*p))
			p++;
		len = (size_t)(end - p);
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		name = strndup(p, len);
		if (!name)
			return -ENOMEM;
		p = *end ? end + 1 : end;
		if (!*name)
			continue;
		g = webhook_config_group(m->cfg, name);
		if (!g) {
			for (size_t i = 0; i < m->cfg->n_groups; i++)
				if (str_append_sep(&known, ", ", "%s", m->cfg->groups[i].name) < 0)
					return -ENOMEM;
			return deny(
				m,
				"annotation %s: no group \"%.64s\" in the webhook's config (it has: %s)",
				key, name, known ? known : "none");
		}
		for (size_t i = 0; i < m->n_groups; i++)
			dup |= m->groups[i] == g;
		if (!dup && m->n_groups < WEBHOOK_MAX_GROUPS)
			m->groups[m->n_groups++] = g;
	}
	if (m->n_groups == 0)
		return deny(m, "annotation %s: no group named", key);
	/* the first group that says what to do on error decides */
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->on_error != WEBHOOK_ON_ERROR_UNSET) {
			m->on_error = m->groups[i]->on_error;
			break;
		}
	return 0;
}

static bool any_group(const struct mctx *m, size_t offset)
{
	for (size_t i = 0; i < m->n_groups; i++)
		if (*(const bool *)((const char *)m->groups[i] + offset))
			return true;
	return false;
}

/* ---- which container ------------------------------------------------------------------------ */

static bool container_has_gpu(const struct mctx *m, const json_t *c)
{
	const json_t *res = json_object_get(c, "resources");
	static const char *const kinds[] = { "limits", "requests" };

	for (size_t k = 0; k < 2; k++) {
		const json_t *o = json_object_get(res, kinds[k]);
		const char *key;
		json_t *v;

		if (!json_is_object(o))
			continue;
		json_object_foreach((json_t *)o, key,
				    v) if (webhook_config_is_gpu(m->cfg, key)) return true;
	}
	return false;
}

static const char *container_name(const json_t *c)
{
	const char *s = json_string_value(json_object_get(c, "name"));

	return s ? s : "?";
}

static int pick_container(struct mctx *m, const json_t *ann)
{
	json_t *spec = json_object_get(m->pod, "spec"), *cs, *c;
	const char *want = NULL;
	_cleanup_free_ char *names = NULL, *gpus = NULL;
	size_t i, n_gpu = 0;
	bool found = false;
	int r;

	if (!json_is_object(spec))
		return deny(m, "spec: %s", spec ? "expected an object" : "missing");
	cs = json_object_get(spec, "containers");
	if (!json_is_array(cs) || json_array_size(cs) == 0)
		return deny(m, "spec.containers: %s",
			    cs ? "expected a non-empty array" : "missing");
	json_array_foreach(cs, i, c) if (!json_is_object(c)) return deny(
		m, "spec.containers[%zu]: expected an object, got %s", i, dispatch_type_name(c));
	r = annotation_string(m, ann, ANNOTATION_CONTAINER, &want);
	if (r < 0)
		return r;
	json_array_foreach(cs, i, c)
	{
		if (want) {
			if (str_append_sep(&names, ", ", "%s", container_name(c)) < 0)
				return -ENOMEM;
			if (!found && !strcmp(container_name(c), want)) {
				m->ci = i;
				found = true;
			}
			continue;
		}
		if (container_has_gpu(m, c)) {
			if (n_gpu++ == 0)
				m->ci = i;
			if (str_append_sep(&gpus, ", ", "%s", container_name(c)) < 0)
				return -ENOMEM;
		}
	}
	if (want && !found)
		return deny(m, "annotation %s: no container named \"%.64s\" (the pod has: %s)",
			    ANNOTATION_CONTAINER, want, names);
	if (!want && n_gpu == 0)
		m->ci = 0;
	m->container = json_array_get(cs, m->ci);
	if (n_gpu > 1)
		r = push(m, true,
			 "containers %s all ask for GPUs; RDMA went to \"%s\" (set %s to choose)",
			 gpus, container_name(m->container), ANNOTATION_CONTAINER);
	if (r < 0)
		return r;
	m->res->container = strdup(container_name(m->container));
	return m->res->container ? 0 : -ENOMEM;
}

/* ---- networks ----------------------------------------------------------------------------- */

static int merge_networks(struct mctx *m)
{
	json_t *meta = json_object_get(m->pod, "metadata"), *ann, *list = NULL;
	const char *cur = NULL;
	char err[256];
	size_t added = 0;
	int r;

	r = child_object(m, m->pod, "metadata", "metadata", &meta);
	if (r < 0)
		return r;
	r = child_object(m, meta, "annotations", "metadata.annotations", &ann);
	if (r < 0)
		return r;
	r = annotation_string(m, ann, NETWORKS_ANNOTATION, &cur);
	if (r < 0)
		return r;
	if (cur) {
		r = webhook_networks_parse(cur, &list, err, sizeof(err));
		if (r == -EINVAL)
			return deny(m, "annotation %s: %s", NETWORKS_ANNOTATION, err);
	} else {
		list = json_array();
		r = list ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r;
	for (size_t g = 0; g < m->n_groups && r >= 0; g++)
		for (size_t i = 0; i < m->groups[g]->n_networks && r >= 0; i++) {
			const struct webhook_network *n = &m->groups[g]->networks[i];

			if (webhook_networks_contains(list, m->pod_ns, n->namespace, n->name))
				continue;
			if (json_array_size(list) >= NETWORKS_MAX) {
				r = deny(m, "annotation %s: more than %d networks",
					 NETWORKS_ANNOTATION, NETWORKS_MAX);
				break;
			}
			r = webhook_networks_append(list, n->namespace, n->name, n->interface);
			if (r >= 0)
				r = push(m, false, "network %s%s%s%s%s", n->namespace,
					 *n->namespace ? "/" : "", n->name, n->interface ? "@" : "",
					 n->interface ? n->interface : "");
			added++;
		}
	if (r >= 0 && added) {
		char *text = webhook_networks_format(list);

		r = text && json_object_set_new(ann, NETWORKS_ANNOTATION, json_string(text)) == 0
			    ? 0
			    : -ENOMEM;
		free(text);
	}
	json_decref(list);
	return r;
}

/* ---- resources ---------------------------------------------------------------------------- */

static struct need *need_find(struct mctx *m, const char *name)
{
	for (size_t i = 0; i < m->n_needs; i++)
		if (!strcmp(m->needs[i].name, name))
			return &m->needs[i];
	if (m->n_needs == ELEMENTSOF(m->needs))
		return NULL;
	m->needs[m->n_needs] = (struct need){ .name = name };
	return &m->needs[m->n_needs++];
}

/* A network needs `count` of its resource, and networks on one resource add up (one VF per
 * attachment); a group's own `resources` are needed as given, the largest when groups repeat
 * one. A network listed by two groups counts once. */
static int collect_needs(struct mctx *m)
{
	for (size_t g = 0; g < m->n_groups; g++) {
		const struct webhook_group *gr = m->groups[g];

		for (size_t i = 0; i < gr->n_networks; i++) {
			const struct webhook_network *n = &gr->networks[i];
			bool seen = false;
			struct need *nd;

			for (size_t h = 0; h < g && !seen; h++)
				for (size_t j = 0; j < m->groups[h]->n_networks && !seen; j++)
					seen = !strcmp(m->groups[h]->networks[j].name, n->name) &&
					       !strcmp(m->groups[h]->networks[j].namespace,
						       n->namespace);
			if (!n->resource || seen)
				continue;
			if (!(nd = need_find(m, n->resource)))
				return deny(m, "too many distinct resources");
			nd->count += n->count;
		}
	}
	for (size_t g = 0; g < m->n_groups; g++)
		for (size_t i = 0; i < m->groups[g]->n_resources; i++) {
			const struct webhook_resource *res = &m->groups[g]->resources[i];
			struct need *nd = need_find(m, res->name);

			if (!nd)
				return deny(m, "too many distinct resources");
			if (nd->count < res->count)
				nd->count = res->count;
		}
	return 0;
}

/* Whether a container other than the chosen one already asks for the resource: the user put it
 * there on purpose (a sidecar that does the RDMA), and a second copy would take a second device. */
static bool elsewhere(const struct mctx *m, const char *name)
{
	const json_t *cs = json_object_get(json_object_get(m->pod, "spec"), "containers"), *c;
	size_t i;

	json_array_foreach(cs, i, c)
	{
		const json_t *res = json_object_get(c, "resources");

		if (i == m->ci)
			continue;
		if (json_object_get(json_object_get(res, "limits"), name) ||
		    json_object_get(json_object_get(res, "requests"), name))
			return true;
	}
	return false;
}

static int read_count(struct mctx *m, const json_t *obj, const char *kind, const char *name,
		      unsigned long long *ret)
{
	const json_t *v = json_object_get(obj, name);

	*ret = 0;
	if (!v)
		return 0;
	if (webhook_mutate_quantity_count(v, ret) < 0)
		return deny(
			m,
			"spec.containers[%zu].resources.%s[\"%s\"]: not a whole number of devices",
			m->ci, kind, name);
	return 0;
}

static int set_count(json_t *obj, const char *name, unsigned long long v, bool *changed)
{
	const json_t *cur = json_object_get(obj, name);
	unsigned long long have;
	char buf[32];

	if (cur && webhook_mutate_quantity_count(cur, &have) == 0 && have == v)
		return 0;
	snprintf(buf, sizeof(buf), "%llu", v);
	*changed = true;
	return json_object_set_new(obj, name, json_string(buf)) < 0 ? -ENOMEM : 0;
}

static int merge_resources(struct mctx *m)
{
	char path[64];
	json_t *res, *lim, *req;
	int r;

	r = collect_needs(m);
	if (r < 0 || m->n_needs == 0)
		return r;
	snprintf(path, sizeof(path), "spec.containers[%zu].resources", m->ci);
	if ((r = child_object(m, m->container, "resources", path, &res)) < 0)
		return r;
	snprintf(path, sizeof(path), "spec.containers[%zu].resources.limits", m->ci);
	if ((r = child_object(m, res, "limits", path, &lim)) < 0)
		return r;
	snprintf(path, sizeof(path), "spec.containers[%zu].resources.requests", m->ci);
	if ((r = child_object(m, res, "requests", path, &req)) < 0)
		return r;
	for (size_t i = 0; i < m->n_needs; i++) {
		const struct need *nd = &m->needs[i];
		unsigned long long l, q, v;
		bool changed = false;

		if (elsewhere(m, nd->name))
			continue;
		if ((r = read_count(m, lim, "limits", nd->name, &l)) < 0 ||
		    (r = read_count(m, req, "requests", nd->name, &q)) < 0)
			return r;
		/* never lower what the user set; requests equal limits, as Kubernetes requires of
		 * extended resources */
		v = nd->count;
		if (l > v)
			v = l;
		if (q > v)
			v = q;
		if ((r = set_count(lim, nd->name, v, &changed)) < 0 ||
		    (r = set_count(req, nd->name, v, &changed)) < 0)
			return r;
		if (changed && (r = push(m, false, "resource %s: %llu", nd->name, v)) < 0)
			return r;
	}
	/* an empty requests/limits we created for nothing would be a change: drop it */
	if (json_object_size(req) == 0)
		json_object_del(res, "requests");
	if (json_object_size(lim) == 0)
		json_object_del(res, "limits");
	if (json_object_size(res) == 0)
		json_object_del(m->container, "resources");
	return 0;
}

/* ---- IPC_LOCK ------------------------------------------------------------------------------- */

static bool is_ipc_lock(const json_t *v)
{
	const char *s = json_string_value(v);

	if (!s)
		return false;
	if (!strncasecmp(s, "CAP_", 4))
		s += 4;
	return !strcasecmp(s, "IPC_LOCK");
}

static bool array_has_ipc_lock(const json_t *a)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) if (is_ipc_lock(v)) return true;
	return false;
}

static int add_ipc_lock(struct mctx *m)
{
	json_t *sc = json_object_get(m->container, "securityContext"), *caps, *add;
	char path[96];
	int r;

	if (json_is_object(sc) && json_is_true(json_object_get(sc, "privileged")))
		return 0; /* every capability already */
	caps = json_is_object(sc) ? json_object_get(sc, "capabilities") : NULL;
	if (json_is_object(caps) && array_has_ipc_lock(json_object_get(caps, "add")))
		return 0;
	if (json_is_object(caps) && array_has_ipc_lock(json_object_get(caps, "drop")))
		return push(
			m, true,
			"container \"%s\" drops IPC_LOCK; left as is, but RDMA memory registration "
			"(NCCL, perftest) needs it",
			container_name(m->container));
	snprintf(path, sizeof(path), "spec.containers[%zu].securityContext", m->ci);
	if ((r = child_object(m, m->container, "securityContext", path, &sc)) < 0)
		return r;
	snprintf(path, sizeof(path), "spec.containers[%zu].securityContext.capabilities", m->ci);
	if ((r = child_object(m, sc, "capabilities", path, &caps)) < 0)
		return r;
	snprintf(path, sizeof(path), "spec.containers[%zu].securityContext.capabilities.add",
		 m->ci);
	if ((r = child_array(m, caps, "add", path, &add)) < 0)
		return r;
	if (json_array_append_new(add, json_string("IPC_LOCK")) < 0)
		return -ENOMEM;
	return push(m, false, "capability IPC_LOCK");
}

/* ---- /dev/shm -------------------------------------------------------------------------------- */

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static bool is_shm_path(const char *p)
{
	return p && (!strcmp(p, "/dev/shm") || !strcmp(p, "/dev/shm/"));
}

static const json_t *volume_named(const json_t *vols, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(
		vols, i, v) if (json_is_object(v) && name &&
				!strcmp(str_or_empty(json_string_value(json_object_get(v, "name"))),
					name)) return v;
	return NULL;
}

static bool memory_empty_dir(const json_t *vol)
{
	const json_t *ed = json_object_get(vol, "emptyDir");

	return json_is_object(ed) &&
	       !strcmp(str_or_empty(json_string_value(json_object_get(ed, "medium"))), "Memory");
}

static int add_shm(struct mctx *m)
{
	json_t *spec = json_object_get(m->pod, "spec"), *vols, *mounts, *vol, *mount;
	const json_t *mine = NULL;
	char path[80], name[32];
	size_t i;
	json_t *x;
	int r;

	mounts = json_object_get(m->container, "volumeMounts");
	if (mounts && !json_is_array(mounts) && !json_is_null(mounts))
		return deny(m, "spec.containers[%zu].volumeMounts: expected an array", m->ci);
	json_array_foreach(mounts, i,
			   x) if (json_is_object(x) &&
				  is_shm_path(json_string_value(json_object_get(x, "mountPath"))))
	{
		const json_t *v = volume_named(json_object_get(spec, "volumes"),
					       json_string_value(json_object_get(x, "name")));

		if (v && json_object_get(v, "emptyDir") && !memory_empty_dir(v))
			return push(m, true,
				    "container \"%s\": /dev/shm is a disk-backed emptyDir; NCCL "
				    "is faster with medium: Memory",
				    container_name(m->container));
		return 0; /* the user's own /dev/shm */
	}
	if ((r = child_array(m, spec, "volumes", "spec.volumes", &vols)) < 0)
		return r;
	/* our volume from an earlier pass (another container's), or a free name */
	snprintf(name, sizeof(name), "%s", SHM_VOLUME);
	for (unsigned k = 1;
	     (mine = volume_named(vols, name)) && !memory_empty_dir(mine) && k < 100; k++)
		snprintf(name, sizeof(name), "%s-%u", SHM_VOLUME, k);
	if (!mine) {
		json_t *ed = json_object();

		vol = json_object();
		if (!vol || !ed || json_object_set_new(vol, "name", json_string(name)) < 0 ||
		    json_object_set_new(ed, "medium", json_string("Memory")) < 0) {
			json_decref(vol);
			json_decref(ed);
			return -ENOMEM;
		}
		for (size_t g = 0; g < m->n_groups; g++)
			if (m->groups[g]->shm && m->groups[g]->shm_size_limit) {
				if (json_object_set_new(ed, "sizeLimit",
							json_string(m->groups[g]->shm_size_limit)) <
				    0) {
					json_decref(vol);
					json_decref(ed);
					return -ENOMEM;
				}
				break;
			}
		if (json_object_set_new(vol, "emptyDir", ed) < 0 ||
		    json_array_append_new(vols, vol) < 0)
			return -ENOMEM;
	}
	snprintf(path, sizeof(path), "spec.containers[%zu].volumeMounts", m->ci);
	if ((r = child_array(m, m->container, "volumeMounts", path, &mounts)) < 0)
		return r;
	mount = json_pack("{s:s, s:s}", "name", name, "mountPath", "/dev/shm");
	if (!mount || json_array_append_new(mounts, mount) < 0)
		return -ENOMEM;
	return push(m, false, "/dev/shm: emptyDir medium Memory (volume %s)", name);
}

/* ---- memory limit ------------------------------------------------------------------------------ */

static int warn_memory_limit(struct mctx *m)
{
	const json_t *mem = json_object_get(
		json_object_get(json_object_get(m->container, "resources"), "limits"), "memory");
	char val[32];

	if (!mem)
		return 0;
	if (json_is_string(mem))
		snprintf(val, sizeof(val), "%.24s", json_string_value(mem));
	else if (json_is_integer(mem))
		snprintf(val, sizeof(val), "%" JSON_INTEGER_FORMAT, json_integer_value(mem));
	else
		snprintf(val, sizeof(val), "?");
	/* pinned pages are charged to the limit: registration fails with "Couldn't allocate MR"
	 * long before the application's own memory reaches it */
	return push(
		m, true,
		"container \"%.40s\" has memory limit %s: RDMA-pinned memory and /dev/shm count "
		"against it (\"Couldn't allocate MR\")",
		container_name(m->container), val);
}

/* ---- the whole ------------------------------------------------------------------------------- */

static int run(struct mctx *m, const json_t *pod)
{
	const json_t *meta, *ann = NULL;
	const char *mine = NULL, *theirs = NULL, *value;
	int r;

	if (!json_is_object(pod))
		return deny(m, "the object is %s, not a pod", dispatch_type_name(pod));
	meta = json_object_get(pod, "metadata");
	if (meta && !json_is_object(meta) && !json_is_null(meta))
		return deny(m, "metadata: expected an object, got %s", dispatch_type_name(meta));
	ann = meta ? json_object_get(meta, "annotations") : NULL;
	if (ann && !json_is_object(ann) && !json_is_null(ann))
		return deny(m, "metadata.annotations: expected an object, got %s",
			    dispatch_type_name(ann));
	if ((r = annotation_string(m, ann, ANNOTATION_GROUPS, &mine)) < 0 ||
	    (r = annotation_string(m, ann, ANNOTATION_GROUPS_SPIDERPOOL, &theirs)) < 0)
		return r;
	if (!mine && !theirs)
		return 0; /* not ours */
	if (mine && theirs && strcmp(mine, theirs))
		return deny(
			m,
			"annotations %s (\"%.64s\") and %s (\"%.64s\") name different groups; keep one",
			ANNOTATION_GROUPS, mine, ANNOTATION_GROUPS_SPIDERPOOL, theirs);
	value = mine ? mine : theirs;
	if (!(m->res->groups = strdup(value)))
		return -ENOMEM;
	if ((r = resolve_groups(m, value,
				mine ? ANNOTATION_GROUPS : ANNOTATION_GROUPS_SPIDERPOOL)) < 0)
		return r;
	if ((r = pick_container(m, ann)) < 0 || (r = merge_networks(m)) < 0 ||
	    (r = merge_resources(m)) < 0)
		return r;
	if (any_group(m, offsetof(struct webhook_group, ipc_lock)) && (r = add_ipc_lock(m)) < 0)
		return r;
	if (any_group(m, offsetof(struct webhook_group, shm)) && (r = add_shm(m)) < 0)
		return r;
	if (any_group(m, offsetof(struct webhook_group, memory_warning)) &&
	    (r = warn_memory_limit(m)) < 0)
		return r;
	return 0;
}

int webhook_mutate_pod(const struct webhook_config *cfg, const json_t *pod, const char *pod_ns,
		       struct webhook_mutate_result *ret)
{
	struct mctx *m;
	int r;

	*ret = (struct webhook_mutate_result){ 0 };
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->cfg = cfg;
	m->pod_ns = pod_ns && *pod_ns ? pod_ns : "default";
	m->res = ret;
	m->on_error = cfg->on_error;
	m->pod = json_deep_copy(pod);
	if (!m->pod) {
		free(m);
		return -ENOMEM;
	}
	r = run(m, pod);
	if (r == -EPERM) {
		/* refused: nothing of the half-done edit survives */
		json_decref(m->pod);
		m->pod = json_incref((json_t *)pod);
		ret->allow_anyway = m->on_error == WEBHOOK_ON_ERROR_ALLOW;
		strv_free(ret->changes);
		ret->changes = NULL;
		ret->n_changes = 0;
		r = 0;
	}
	ret->pod = m->pod;
	free(m);
	if (r < 0) {
		webhook_mutate_result_clear(ret);
		return r;
	}
	return 0;
}

void webhook_mutate_result_clear(struct webhook_mutate_result *r)
{
	json_decref(r->pod);
	strv_free(r->changes);
	strv_free(r->warnings);
	free(r->denied);
	free(r->groups);
	free(r->container);
	*r = (struct webhook_mutate_result){ 0 };
}
