/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ResourceSlices at the API server: written only where a pool changed.
 *
 * What is published is learnt by listing this node's and driver's slices (at start, and again
 * whenever a write finds the server's copy other than ours: 409, or a slice missing); a pool
 * whose devices differ from what the node has now gets generation + 1 in each of its slices,
 * written with the resourceVersion last seen (an update that lost a race is a 409, never an
 * overwrite); slices of pools the node no longer has are deleted. A watch on the same slices
 * (watch.c... here: dra_publisher_watch) tells when someone else changed or deleted one. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/dra.h"
#include "k8s/client.h"
#include "util/cleanup.h"

#define SLICES_PATH "/apis/resource.k8s.io/v1/resourceslices"

/* One pool as published. */
struct pub_pool {
	char *name;
	int64_t generation;
	json_t *devices; /* every slice's spec.devices, concatenated in slice order */
	json_t *slices;	 /* [{name, resourceVersion}] */
};

struct dra_publisher {
	struct k8s_client *api;
	char *driver, *node_name, *node_uid;
	struct pub_pool *pools;
	size_t n_pools;
	bool listed; /* pools hold what the server has */
	char list_rv[64];
	struct dra_publish_stats stats;
};

static void pools_clear(struct dra_publisher *p)
{
	for (size_t i = 0; i < p->n_pools; i++) {
		free(p->pools[i].name);
		json_decref(p->pools[i].devices);
		json_decref(p->pools[i].slices);
	}
	free(p->pools);
	p->pools = NULL;
	p->n_pools = 0;
	p->listed = false;
}

static struct pub_pool *pool_find(struct dra_publisher *p, const char *name, bool add)
{
	struct pub_pool *v;

	for (size_t i = 0; i < p->n_pools; i++)
		if (!strcmp(p->pools[i].name, name))
			return &p->pools[i];
	if (!add)
		return NULL;
	v = realloc(p->pools, (p->n_pools + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->pools = v;
	v = &p->pools[p->n_pools];
	*v = (struct pub_pool){ .name = strdup(name),
				.devices = json_array(),
				.slices = json_array() };
	if (!v->name || !v->devices || !v->slices) {
		free(v->name);
		json_decref(v->devices);
		json_decref(v->slices);
		return NULL;
	}
	p->n_pools++;
	return v;
}

int dra_publisher_new(struct k8s_client *api, const char *driver, const char *node_name,
		      struct dra_publisher **ret)
{
	struct dra_publisher *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->api = api;
	p->driver = strdup(driver);
	p->node_name = strdup(node_name);
	if (!p->driver || !p->node_name) {
		dra_publisher_free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

void dra_publisher_free(struct dra_publisher *p)
{
	if (!p)
		return;
	pools_clear(p);
	free(p->driver);
	free(p->node_name);
	free(p->node_uid);
	free(p);
}

const struct dra_publish_stats *dra_publisher_stats(const struct dra_publisher *p)
{
	return &p->stats;
}

const char *dra_publisher_list_rv(const struct dra_publisher *p)
{
	return p->list_rv;
}

void dra_publisher_invalidate(struct dra_publisher *p)
{
	p->listed = false;
}

/* An API call; its status in *status, an answer kept in *ret (may be NULL). */
static int call(struct dra_publisher *p, const char *method, const char *path, const json_t *body,
		int *status, json_t **ret, char *err, size_t errlen)
{
	json_t *a = NULL;
	int r = k8s_client_call(p->api, method, path, body, status, &a, err, errlen);

	if (r < 0)
		return r;
	p->stats.requests++;
	if (body) {
		char *t = json_dumps(body, JSON_COMPACT);

		p->stats.bytes_sent += t ? strlen(t) : 0;
		free(t);
	}
	if (*status >= 300) {
		snprintf(err, errlen, "%s %s: HTTP %d: %s", method, path, *status,
			 k8s_status_message(a));
		json_decref(a);
		return *status == 409			  ? -ESTALE
		       : *status == 404			  ? -ENOENT
		       : *status == 403 || *status == 401 ? -EACCES
							  : -EIO;
	}
	if (ret)
		*ret = a;
	else
		json_decref(a);
	return 0;
}

static int node_uid(struct dra_publisher *p, char *err, size_t errlen)
{
	_cleanup_free_ char *path = NULL;
	json_t *a = NULL;
	const char *uid;
	int status, r;

	if (p->node_uid)
		return 0;
	if (asprintf(&path, "/api/v1/nodes/%s", p->node_name) < 0)
		return -ENOMEM;
	if ((r = call(p, "GET", path, NULL, &status, &a, err, errlen)) < 0)
		return r;
	uid = json_string_value(json_object_get(json_object_get(a, "metadata"), "uid"));
	p->node_uid = uid ? strdup(uid) : NULL;
	json_decref(a);
	if (!p->node_uid) {
		snprintf(err, errlen, "Node %s has no uid", p->node_name);
		return -EPROTO;
	}
	return 0;
}

static int slices_path(struct dra_publisher *p, char **ret)
{
	return asprintf(ret, SLICES_PATH "?fieldSelector=spec.nodeName%%3D%s%%2Cspec.driver%%3D%s",
			p->node_name, p->driver) < 0
		       ? -ENOMEM
		       : 0;
}

/* What the server has: this node's and driver's slices, by pool. */
static int list(struct dra_publisher *p, char *err, size_t errlen)
{
	_cleanup_free_ char *path = NULL;
	json_t *a = NULL, *s;
	size_t i;
	int status, r;

	pools_clear(p);
	if ((r = slices_path(p, &path)) < 0)
		return r;
	if ((r = call(p, "GET", path, NULL, &status, &a, err, errlen)) < 0)
		return r;
	snprintf(p->list_rv, sizeof(p->list_rv), "%s",
		 json_string_value(
			 json_object_get(json_object_get(a, "metadata"), "resourceVersion"))
			 ?: "");
	json_array_foreach(json_object_get(a, "items"), i, s)
	{
		json_t *meta = json_object_get(s, "metadata"), *spec = json_object_get(s, "spec");
		const char *pool =
			json_string_value(json_object_get(json_object_get(spec, "pool"), "name"));
		json_int_t gen = json_integer_value(
			json_object_get(json_object_get(spec, "pool"), "generation"));
		struct pub_pool *pp = pool ? pool_find(p, pool, true) : NULL;

		if (!pool)
			continue;
		if (!pp) {
			json_decref(a);
			return -ENOMEM;
		}
		/* devices of a pool's older generation are not what consumers see: a pool that
		 * mixes generations is written again */
		if (gen > pp->generation)
			pp->generation = gen;
		json_array_extend(pp->devices, json_object_get(spec, "devices"));
		json_array_append_new(pp->slices,
				      json_pack("{s:O, s:O, s:I}", "name",
						json_object_get(meta, "name"), "resourceVersion",
						json_object_get(meta, "resourceVersion"),
						"generation", gen));
	}
	json_decref(a);
	p->listed = true;
	return 0;
}

static int64_t gen_of(void *ud, const char *pool)
{
	struct dra_publisher *p = ud;
	struct pub_pool *pp = pool_find(p, pool, false);

	return pp ? pp->generation : 0;
}

/* Whether the server's pool is what we want: the same devices in the same slices, and every
 * slice at the pool's generation. */
static bool pool_same(const struct pub_pool *pp, const json_t *want)
{
	json_t *devs = json_array(), *s, *k;
	size_t i, j;
	bool same;

	json_array_foreach(want, i, s)
		json_array_extend(devs, json_object_get(json_object_get(s, "spec"), "devices"));
	same = json_equal(devs, pp->devices) &&
	       json_array_size(pp->slices) == json_array_size(want);
	json_array_foreach(pp->slices, j, k)
	{
		const char *name = json_string_value(json_object_get(k, "name"));
		bool found = false;

		same &= json_integer_value(json_object_get(k, "generation")) == pp->generation;
		json_array_foreach(want, i, s) found |= !strcmp(
			name,
			json_string_value(json_object_get(json_object_get(s, "metadata"), "name")));
		same &= found;
	}
	json_decref(devs);
	return same;
}

static const char *rv_of(const struct pub_pool *pp, const char *name)
{
	json_t *k;
	size_t i;

	json_array_foreach(
		pp->slices, i,
		k) if (!strcmp(json_string_value(json_object_get(k, "name")),
			       name)) return json_string_value(json_object_get(k,
									       "resourceVersion"));
	return NULL;
}

/* Write a pool's slices at generation gen, then delete its slices that are not wanted. */
static int write_pool(struct dra_publisher *p, struct pub_pool *pp, json_t *want, int64_t gen,
		      char *err, size_t errlen)
{
	json_t *written = json_array(), *s, *k;
	size_t i;
	int r = 0;

	if (!written)
		return -ENOMEM;
	json_array_foreach(want, i, s)
	{
		json_t *meta = json_object_get(s, "metadata"), *a = NULL;
		const char *name = json_string_value(json_object_get(meta, "name"));
		const char *rv = rv_of(pp, name);
		_cleanup_free_ char *path = NULL;
		int status;

		json_object_set_new(json_object_get(json_object_get(s, "spec"), "pool"),
				    "generation", json_integer(gen));
		if (rv) {
			json_object_set_new(meta, "resourceVersion", json_string(rv));
			if (asprintf(&path, SLICES_PATH "/%s", name) < 0)
				r = -ENOMEM;
			else
				r = call(p, "PUT", path, s, &status, &a, err, errlen);
			p->stats.updates += r >= 0;
		} else {
			r = call(p, "POST", SLICES_PATH, s, &status, &a, err, errlen);
			p->stats.creates += r >= 0;
		}
		if (r < 0)
			break;
		json_array_append_new(written,
				      json_pack("{s:s, s:O, s:I}", "name", name, "resourceVersion",
						json_object_get(json_object_get(a, "metadata"),
								"resourceVersion"),
						"generation", gen));
		json_decref(a);
	}
	/* the pool's slices that are not wanted any more (it shrank) */
	json_array_foreach(pp->slices, i, k)
	{
		const char *name = json_string_value(json_object_get(k, "name"));
		_cleanup_free_ char *path = NULL;
		bool keep = false;
		json_t *w;
		size_t j;
		int status;

		json_array_foreach(want, j, w) keep |= !strcmp(
			name,
			json_string_value(json_object_get(json_object_get(w, "metadata"), "name")));
		if (keep || r < 0)
			continue;
		if (asprintf(&path, SLICES_PATH "/%s", name) < 0)
			r = -ENOMEM;
		else if ((r = call(p, "DELETE", path, NULL, &status, NULL, err, errlen)) == -ENOENT)
			r = 0;
		p->stats.deletes += r >= 0;
	}
	if (r < 0) {
		json_decref(written);
		return r;
	}
	json_decref(pp->slices);
	pp->slices = written;
	json_decref(pp->devices);
	pp->devices = json_array();
	json_array_foreach(want, i, s) json_array_extend(
		pp->devices, json_object_get(json_object_get(s, "spec"), "devices"));
	pp->generation = gen;
	return 0;
}

static int delete_pool(struct dra_publisher *p, struct pub_pool *pp, char *err, size_t errlen)
{
	json_t *k;
	size_t i;
	int r = 0;

	json_array_foreach(pp->slices, i, k)
	{
		_cleanup_free_ char *path = NULL;
		int status;

		if (asprintf(&path, SLICES_PATH "/%s",
			     json_string_value(json_object_get(k, "name"))) < 0)
			return -ENOMEM;
		r = call(p, "DELETE", path, NULL, &status, NULL, err, errlen);
		if (r == -ENOENT)
			r = 0;
		if (r < 0)
			return r;
		p->stats.deletes++;
	}
	json_array_clear(pp->slices);
	json_array_clear(pp->devices);
	return 0;
}

int dra_publisher_sync(struct dra_publisher *p, const struct dra_inventory *inv, char *err,
		       size_t errlen)
{
	struct dra_slice_meta m = { .driver = p->driver, .node_name = p->node_name };
	json_t *want = NULL, *e;
	size_t i;
	int r, written = 0;

	if ((r = node_uid(p, err, errlen)) < 0)
		return r;
	m.node_uid = p->node_uid;
	if (!p->listed && (r = list(p, err, errlen)) < 0)
		return r;
	if ((r = dra_slices_build(inv, &m, gen_of, p, &want, err, errlen)) < 0)
		return r;
	json_array_foreach(want, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "pool"));
		json_t *slices = json_object_get(e, "slices");
		struct pub_pool *pp = pool_find(p, name, true);

		if (!pp) {
			r = -ENOMEM;
			break;
		}
		if (json_array_size(pp->slices) && pool_same(pp, slices))
			continue;
		r = write_pool(p, pp, slices, pp->generation + 1, err, errlen);
		if (r < 0)
			break;
		written++;
	}
	/* pools the node no longer has */
	for (size_t k = 0; r >= 0 && k < p->n_pools; k++) {
		bool keep = false;

		json_array_foreach(want, i, e) keep |=
			!strcmp(p->pools[k].name, json_string_value(json_object_get(e, "pool")));
		if (!keep && json_array_size(p->pools[k].slices)) {
			r = delete_pool(p, &p->pools[k], err, errlen);
			written += r >= 0;
		}
	}
	json_decref(want);
	/* what the server has is not known after a refused write: list again next time */
	if (r == -ESTALE || r == -ENOENT)
		p->listed = false;
	if (r >= 0)
		p->stats.syncs++;
	return r < 0 ? r : written;
}

int dra_publisher_delete_all(struct dra_publisher *p, char *err, size_t errlen)
{
	int r;

	if ((r = list(p, err, errlen)) < 0)
		return r;
	for (size_t k = 0; k < p->n_pools; k++)
		if ((r = delete_pool(p, &p->pools[k], err, errlen)) < 0)
			return r;
	return 0;
}

bool dra_publisher_owns(struct dra_publisher *p, const json_t *slice)
{
	const char *name =
		json_string_value(json_object_get(json_object_get(slice, "metadata"), "name"));
	const char *rv = json_string_value(
		json_object_get(json_object_get(slice, "metadata"), "resourceVersion"));

	for (size_t k = 0; name && k < p->n_pools; k++) {
		const char *mine = rv_of(&p->pools[k], name);

		if (mine)
			return rv && !strcmp(mine, rv);
	}
	return false;
}
