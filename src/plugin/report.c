/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "pool/allocate.h"
#include "util/strv.h"

static const char *const kind_names[] = {
	[POOL_SHARED] = "shared", [POOL_EXCLUSIVE] = "exclusive"
};

json_t *plugin_report_container_response(const struct kubelet_container_alloc *a)
{
	json_t *envs = json_object(), *devs = json_array(), *mounts = json_array(),
	       *ann = json_object(), *cdi = json_array();

	for (size_t i = 0; i < a->n_envs; i++)
		json_object_set_new(envs, a->envs[i].key, doc_string(a->envs[i].value));
	for (size_t i = 0; i < a->n_devices; i++)
		if (doc_append(devs, json_pack("{s:o, s:o, s:s}", "container_path",
					       doc_string(a->devices[i].container_path),
					       "host_path", doc_string(a->devices[i].host_path),
					       "permissions", a->devices[i].permissions)) < 0)
			goto fail;
	for (size_t i = 0; i < a->n_mounts; i++)
		if (doc_append(mounts, json_pack("{s:o, s:o, s:b}", "container_path",
						 doc_string(a->mounts[i].container_path),
						 "host_path", doc_string(a->mounts[i].host_path),
						 "read_only", a->mounts[i].read_only)) < 0)
			goto fail;
	for (size_t i = 0; i < a->n_annotations; i++)
		json_object_set_new(ann, a->annotations[i].key,
				    doc_string(a->annotations[i].value));
	for (size_t i = 0; i < a->n_cdi_devices; i++)
		if (doc_append(cdi, json_pack("{s:o}", "name", doc_string(a->cdi_devices[i]))) < 0)
			goto fail;
	return json_pack("{s:o, s:o, s:o, s:o, s:o}", "envs", envs, "mounts", mounts, "devices",
			 devs, "annotations", ann, "cdi_devices", cdi);
fail:
	json_decref(envs);
	json_decref(devs);
	json_decref(mounts);
	json_decref(ann);
	json_decref(cdi);
	return NULL;
}

static json_t *member_json(const struct pool_set *ps, const struct pool_member *m,
			   enum pool_kind kind)
{
	/* ids, device and netdev names come from sysfs: escaped when not UTF-8, never dropped */
	json_t *o = json_pack("{s:o, s:o, s:o, s:b}", "id", doc_string(m->id), "rdma",
			      doc_string(m->rdma), "netdevs", doc_string(m->netdevs), "healthy",
			      m->healthy);
	char reason[160];

	if (!o)
		return NULL;
	pool_health_member_reason(ps, m, reason, sizeof(reason));
	json_object_set_new(o, "numa", m->numa >= 0 ? json_integer(m->numa) : json_null());
	json_object_set_new(o, "reason", reason[0] ? doc_string(reason) : json_null());
	if (kind == POOL_EXCLUSIVE) {
		json_object_set_new(o, "pf", doc_string(m->pf));
		json_object_set_new(o, "vf",
				    m->vf_index >= 0 ? json_integer(m->vf_index) : json_null());
		json_object_set_new(o, "in_pod", json_boolean(m->in_pod));
	}
	return o;
}

static json_t *allocate_json(const struct pool *p)
{
	struct kubelet_container_alloc a = { 0 };
	json_t *req = json_array(), *o;
	char **ids = NULL, *msg = NULL;
	size_t n_ids = 0;
	const char **avail = calloc(p->n_devs + 1, sizeof(char *));
	int r;

	if (!req || !avail) {
		free(avail);
		json_decref(req);
		return NULL;
	}
	/* one device, chosen the way GetPreferredAllocation would among the healthy ones */
	for (size_t i = 0, n = 0; i < p->n_devs; i++)
		if (p->devs[i].healthy)
			avail[n++] = p->devs[i].id, n_ids = n;
	r = n_ids ? pool_allocate_preferred(p, avail, n_ids, NULL, 0, 1, &ids, &n_ids) : 0;
	free(avail);
	if (r < 0) {
		json_decref(req);
		return NULL;
	}
	if (!n_ids && p->n_devs) {
		/* nothing healthy: show the refusal the kubelet would get */
		ids = calloc(2, sizeof(char *));
		ids[0] = strdup(p->devs[0].id);
		n_ids = 1;
	}
	for (size_t i = 0; i < n_ids; i++)
		json_array_append_new(req, doc_string(ids[i]));
	o = json_pack("{s:{s:[{s:o}]}}", "request", "container_requests", "devices_ids", req);
	if (n_ids) {
		r = pool_allocate_container(p, (const char *const *)ids, n_ids, &a, &msg);
		if (r < 0)
			json_object_set_new(o, "error", doc_string(msg ? msg : strerror(-r)));
		else
			json_object_set_new(o, "response",
					    json_pack("{s:[o]}", "container_responses",
						      plugin_report_container_response(&a)));
	} else {
		json_object_set_new(o, "error", json_string("no devices advertised"));
	}
	kubelet_container_alloc_clear(&a);
	free(msg);
	strv_free(ids);
	return o;
}

json_t *plugin_report_build(const struct pool_set *ps)
{
	json_t *res = json_array();

	for (size_t i = 0; i < ps->n; i++) {
		const struct pool *p = &ps->pools[i];
		json_t *members = json_array(), *o;
		size_t healthy = 0;

		for (size_t j = 0; j < p->n_m; j++)
			if (doc_append(members, member_json(ps, &p->m[j], p->res->kind)) < 0) {
				json_decref(members);
				json_decref(res);
				return NULL;
			}
		for (size_t j = 0; j < p->n_devs; j++)
			healthy += p->devs[j].healthy;
		o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o}", "resource", p->res->full_name,
			      "kind", kind_names[p->res->kind], "config", p->res->path, "socket",
			      p->socket_name, "advertised", (json_int_t)p->n_devs, "healthy",
			      (json_int_t)healthy, "members", members);
		if (p->res->kind == POOL_EXCLUSIVE && o)
			json_object_set_new(o, "env", json_string(p->env_key));
		/* a resource that cannot be shown fails the report; it is never left out quietly */
		if (!o || json_object_set_new(o, "allocate", allocate_json(p)) < 0) {
			json_decref(o);
			json_decref(res);
			return NULL;
		}
		if (doc_append(res, o) < 0) {
			json_decref(res);
			return NULL;
		}
	}
	return json_pack("{s:o}", "resources", res);
}

static const struct doc_column member_cols[] = {
	{ "DEVICE", "id" }, { "RDMA", "rdma" },	      { "NETDEVS", "netdevs" },
	{ "NUMA", "numa" }, { "HEALTHY", "healthy" }, { "REASON", "reason" },
};

int plugin_report_print_text(FILE *f, const json_t *doc)
{
	const json_t *res = json_object_get(doc, "resources"), *r;
	size_t i;

	json_array_foreach(res, i, r)
	{
		const json_t *alloc = json_object_get(r, "allocate"), *resp, *c;
		size_t j;

		fprintf(f, "%s%s: %s, %lld advertised, %lld healthy (%s, socket %s)\n",
			i ? "\n" : "", json_string_value(json_object_get(r, "resource")),
			json_string_value(json_object_get(r, "kind")),
			(long long)json_integer_value(json_object_get(r, "advertised")),
			(long long)json_integer_value(json_object_get(r, "healthy")),
			json_string_value(json_object_get(r, "config")),
			json_string_value(json_object_get(r, "socket")));
		if (json_array_size(json_object_get(r, "members")) == 0)
			fprintf(f, "  no device matches the selectors\n");
		else
			doc_table(f, json_object_get(r, "members"), member_cols,
				  sizeof(member_cols) / sizeof(member_cols[0]));
		if (!alloc)
			continue;
		fprintf(f, "Allocate(");
		json_array_foreach(doc_get(alloc, "request.container_requests.0.devices_ids"), j, c)
			fprintf(f, "%s\"%s\"", j ? ", " : "", json_string_value(c));
		if (json_object_get(alloc, "error")) {
			fprintf(f, ") refused: %s\n",
				json_string_value(json_object_get(alloc, "error")));
			continue;
		}
		fprintf(f, "):\n");
		resp = doc_get(alloc, "response.container_responses.0");
		json_array_foreach(json_object_get(resp, "devices"), j, c)
			fprintf(f, "  device  %s (%s)\n",
				json_string_value(json_object_get(c, "host_path")),
				json_string_value(json_object_get(c, "permissions")));
		{
			const char *k;
			json_t *v;

			json_object_foreach((json_t *)json_object_get(resp, "envs"), k, v)
				fprintf(f, "  env     %s=%s\n", k, json_string_value(v));
		}
		json_array_foreach(json_object_get(resp, "cdi_devices"), j, c)
			fprintf(f, "  cdi     %s\n", json_string_value(json_object_get(c, "name")));
	}
	return ferror(f) ? -EIO : 0;
}
