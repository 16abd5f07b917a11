/* SPDX-License-Identifier: Apache-2.0 */
/* The inventory as ResourceSlice objects (resource.k8s.io/v1): one pool per PF (its VFs with
 * it), at most 128 devices per slice. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dra/dra.h"
#include "k8s/names.h"
#include "util/cleanup.h"

/* FNV-1a, for a slice name that would be too long: stable across runs and machines. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int slice_name(const struct dra_slice_meta *m, const char *pool, size_t k, char *out,
		      size_t n, char *err, size_t errlen)
{
	const char *why = NULL;
	int l = snprintf(out, n, "%s-%s-%s-%zu", m->node_name, m->driver, pool, k);

	if (l < 0 || (size_t)l >= n || l > K8S_DNS1123_SUBDOMAIN_MAX) {
		char whole[600];

		snprintf(whole, sizeof(whole), "%s-%s-%s", m->node_name, m->driver, pool);
		/* the node's name cut short, then what tells this node's pools apart */
		l = snprintf(out, n, "%.200s-%016" PRIx64 "-%zu", m->node_name, fnv1a(whole), k);
		if (l < 0 || (size_t)l >= n)
			return -ENAMETOOLONG;
	}
	if (!k8s_dns1123_subdomain(out, &why)) {
		snprintf(err, errlen, "slice name %s: %s", out, why);
		return -EINVAL;
	}
	return 0;
}

static json_t *slice_new(const struct dra_slice_meta *m, const char *name, const char *pool,
			 int64_t gen, size_t count, json_t *devices)
{
	json_t *s = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:I, s:I}, s:o}}",
			      "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice",
			      "metadata", "name", name, "spec", "driver", m->driver, "nodeName",
			      m->node_name, "pool", "name", pool, "generation", (json_int_t)gen,
			      "resourceSliceCount", (json_int_t)count, "devices", devices);

	/* owned by the Node: deleting the Node deletes them (the kubelet's plugin helper does
	 * the same) */
	if (s && m->node_uid &&
	    json_object_set_new(json_object_get(s, "metadata"), "ownerReferences",
				json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "v1", "kind",
					  "Node", "name", m->node_name, "uid", m->node_uid,
					  "controller", 1)) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* A device whose port does not pass traffic is tainted NoSchedule (KEP-5055, the API server's
 * DRADeviceTaints gate): no new claim gets it, claims that hold it keep it. A cluster without the
 * gate drops the field; its portState attribute says the same to a DeviceClass's selector. */
static json_t *device_json(const struct dra_device *d)
{
	json_t *j = json_pack("{s:s, s:O}", "name", d->name, "attributes", d->attrs);
	const char *state = json_string_value(
		json_object_get(json_object_get(d->attrs, "portState"), "string"));

	if (j && !d->healthy &&
	    json_object_set_new(j, "taints",
				json_pack("[{s:s, s:s, s:s}]", "key", DRA_TAINT_PORT_DOWN, "value",
					  state ? state : "UNKNOWN", "effect", "NoSchedule")) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The slices of the pool inv->v[first..first+n). */
static int pool_slices(const struct dra_inventory *inv, size_t first, size_t n,
		       const struct dra_slice_meta *m, const char *pool, int64_t gen, json_t *out,
		       char *err, size_t errlen)
{
	size_t count = (n + DRA_SLICE_DEVICES_MAX - 1) / DRA_SLICE_DEVICES_MAX;

	for (size_t k = 0; k < count; k++) {
		json_t *devs = json_array(), *s;
		char name[300];
		int r;

		if (!devs)
			return -ENOMEM;
		for (size_t i = k * DRA_SLICE_DEVICES_MAX;
		     i < n && i < (k + 1) * DRA_SLICE_DEVICES_MAX; i++)
			if (json_array_append_new(devs, device_json(&inv->v[first + i])) < 0) {
				json_decref(devs);
				return -ENOMEM;
			}
		r = slice_name(m, inv->v[first].pool, k, name, sizeof(name), err, errlen);
		if (r < 0) {
			json_decref(devs);
			return r;
		}
		s = slice_new(m, name, pool, gen, count, devs);
		if (!s || json_array_append_new(out, s) < 0)
			return -ENOMEM;
	}
	return 0;
}

int dra_slices_build(const struct dra_inventory *inv, const struct dra_slice_meta *m,
		     int64_t (*generation)(void *ud, const char *pool), void *ud, json_t **ret,
		     char *err, size_t errlen)
{
	json_t *pools = json_array();
	const char *why = NULL;
	int r = 0;

	if (!pools)
		return -ENOMEM;
	if (!k8s_dns1123_subdomain(m->node_name, &why)) {
		snprintf(err, errlen, "node name %s: %s", m->node_name, why);
		r = -EINVAL;
	} else if (!k8s_dns1123_subdomain(m->driver, &why) ||
		   strlen(m->driver) > K8S_DNS1123_LABEL_MAX) {
		/* the API takes a driver name of at most 63 characters, a DNS subdomain */
		snprintf(err, errlen, "driver name %s: %s", m->driver,
			 why ? why : "must be no more than 63 characters");
		r = -EINVAL;
	}
	for (size_t first = 0, n; r >= 0 && first < inv->n; first += n) {
		json_t *slices = json_array(), *entry;
		char pool[DRA_POOL_NAME_MAX + 2];
		int l;

		for (n = 1;
		     first + n < inv->n && !strcmp(inv->v[first + n].pool, inv->v[first].pool); n++)
			;
		l = snprintf(pool, sizeof(pool), "%s/%s", m->node_name, inv->v[first].pool);
		if (l < 0 || (size_t)l > DRA_POOL_NAME_MAX) {
			json_decref(slices);
			snprintf(err, errlen, "pool name %s/%s: longer than %d characters",
				 m->node_name, inv->v[first].pool, DRA_POOL_NAME_MAX);
			r = -EINVAL;
			break;
		}
		entry = json_pack("{s:s, s:o}", "pool", pool, "slices", slices);
		if (!entry || json_array_append_new(pools, entry) < 0) {
			r = -ENOMEM;
			break;
		}
		r = pool_slices(inv, first, n, m, pool, generation ? generation(ud, pool) : 1,
				slices, err, errlen);
	}
	if (r < 0) {
		json_decref(pools);
		return r;
	}
	*ret = pools;
	return 0;
}
