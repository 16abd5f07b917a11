/* SPDX-License-Identifier: Apache-2.0 */
/* The attachment's record and its claims: owners, records, and the scan of pools for
 * the claims in an attachment's name (a pending record, GC).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ipam/alloc.h"
#include "ipam/ipam.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* ---- owners and records ------------------------------------------------------------------- */

void ipam_make_key(char *buf, size_t n, const char *container_id, const char *ifname)
{
	snprintf(buf, n, "%s:%s", container_id, ifname);
}

char *ipam_owner_value(const struct ipamconf *c, const struct ipam_owner *o)
{
	char stamp[STR_UTC_LEN];
	json_t *v;
	char *text;

	str_utc(time(NULL), stamp);
	v = json_pack("{s:s, s:s, s:s}", "network", c->network, "containerID", o->container_id,
		      "ifname", o->ifname);
	if (!v)
		return NULL;
	if (o->pod_namespace)
		json_object_set_new(v, "podNamespace", json_string(o->pod_namespace));
	if (o->pod_name)
		json_object_set_new(v, "podName", json_string(o->pod_name));
	if (o->pod_uid)
		json_object_set_new(v, "podUID", json_string(o->pod_uid));
	json_object_set_new(v, "created", json_string(stamp));
	text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text && strlen(text) > IPAM_STORE_VALUE_MAX) {
		/* the pod is informational; the key is what must fit */
		free(text);
		json_object_del(v, "podUID");
		json_object_del(v, "podName");
		json_object_del(v, "podNamespace");
		text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	}
	json_decref(v);
	return text;
}

/* Whether a claim's value names (network, containerID, ifname); ifname NULL: any. */
bool ipam_owned_by(const char *value, const char *network, const char *container_id,
		   const char *ifname)
{
	json_t *v = json_loads(value, 0, NULL);
	const char *n = json_string_value(json_object_get(v, "network"));
	const char *c = json_string_value(json_object_get(v, "containerID"));
	const char *i = json_string_value(json_object_get(v, "ifname"));
	bool ok = n && c && i && !strcmp(n, network) && !strcmp(c, container_id) &&
		  (!ifname || !strcmp(i, ifname));

	json_decref(v);
	return ok;
}

void ipam_record_clear(struct ipam_record *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->claims[i]);
	free(r->claims);
	memset(r, 0, sizeof(*r));
}

/* 1 and *ret, 0 when there is none; a record we cannot read is treated as pending, so that its
 * claims are searched for rather than trusted or forgotten. */
int ipam_record_read(struct ipam_store *s, const char *network, const char *key,
		     struct ipam_record *ret)
{
	_cleanup_free_ char *text = NULL;
	const json_t *ips, *it;
	struct ipam_record rec = { 0 };
	json_t *v;
	size_t i;
	int r = s->ops.record_get(s, network, key, &text);

	if (r <= 0)
		return r;
	v = json_loads(text, 0, NULL);
	ips = json_object_get(v, "ips");
	if (!json_is_array(ips)) {
		rec.pending = true;
	} else {
		rec.claims = calloc(json_array_size(ips) + 1, sizeof(char *));
		if (!rec.claims) {
			json_decref(v);
			return -ENOMEM;
		}
		json_array_foreach(ips, i,
				   it) if (json_is_string(it) && strchr(json_string_value(it), '/'))
			rec.claims[rec.n++] = strdup(json_string_value(it));
	}
	json_decref(v);
	*ret = rec;
	return 1;
}

/* A complete record's value: {"ips":["<pool>/<address>", ...]}, malloc'd, NULL without memory. */
char *ipam_record_text(char *const *claims, size_t n)
{
	json_t *v, *a = json_array();
	char *text;

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(claims[i]));
	v = json_pack("{s:o}", "ips", a);
	if (!v)
		return NULL;
	text = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	return text;
}

int ipam_record_write(struct ipam_store *s, const char *network, const char *key,
		      char *const *claims, size_t n)
{
	_cleanup_free_ char *text = ipam_record_text(claims, n);

	return text ? s->ops.record_put(s, network, key, text) : -ENOMEM;
}

/* "<pool>/<address>" into its parts (pool has no '/'). */
bool ipam_split_claim(const char *claim, char *pool, size_t pn, const char **addr)
{
	const char *slash = strchr(claim, '/');

	if (!slash || (size_t)(slash - claim) >= pn)
		return false;
	memcpy(pool, claim, (size_t)(slash - claim));
	pool[slash - claim] = '\0';
	*addr = slash + 1;
	return true;
}

/* Release pool/addr if its claim is (network, container_id, ifname)'s. 1 released, 0 not ours. */
int ipam_release_if_ours(struct ipam_store *s, const char *pool, const char *addr,
			 const char *network, const char *container_id, const char *ifname)
{
	_cleanup_free_ char *v = NULL;
	int r = s->ops.get(s, pool, addr, &v);

	if (r <= 0)
		return r;
	if (!ipam_owned_by(v, network, container_id, ifname))
		return 0;
	return s->ops.release(s, pool, addr, v);
}

/* ---- scanning pools for an attachment's claims (pending records, GC) ------------------------ */

int ipam_scan_one(void *ud, const char *name, const char *value)
{
	struct ipam_scan *sc = ud;

	if (!ipam_owned_by(value, sc->network, sc->container_id, sc->ifname))
		return 0;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 8;
		struct ipam_found *f = realloc(sc->f, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		sc->f = f;
		sc->cap = cap;
	}
	snprintf(sc->f[sc->n].pool, sizeof(sc->f[0].pool), "%s", sc->pool);
	snprintf(sc->f[sc->n].addr, sizeof(sc->f[0].addr), "%s", name);
	sc->n++;
	return 0;
}

static int add_pool_name(void *ud, const char *name, const char *value)
{
	struct ipam_pool_names *p = ud;

	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], name))
			return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		char **v = realloc(p->v, cap * sizeof(char *));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n] = strdup(name);
	return p->v[p->n] ? (p->n++, 0) : -ENOMEM;
}

void ipam_pool_names_clear(struct ipam_pool_names *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

/* The config's pools, and with all_pools every pool the store knows. */
int ipam_pools_of(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		  struct ipam_pool_names *ret)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < c->n_sets; i++)
		for (size_t j = 0; r == 0 && j < c->sets[i].n; j++)
			r = add_pool_name(ret, c->sets[i].r[j].pool, NULL);
	if (r == 0 && all_pools)
		r = s->ops.pools(s, add_pool_name, ret);
	return r;
}

/* Every claim in (network, container_id, ifname)'s name in the config's pools (all pools:
 * every pool in the store). */
int ipam_scan_claims(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		     const char *container_id, const char *ifname, struct ipam_scan *ret)
{
	struct ipam_pool_names pools = { 0 };
	int r = ipam_pools_of(s, c, all_pools, &pools);

	ret->network = c->network;
	ret->container_id = container_id;
	ret->ifname = ifname;
	for (size_t i = 0; r == 0 && i < pools.n; i++) {
		ret->pool = pools.v[i];
		r = s->ops.list(s, pools.v[i], ipam_scan_one, ret);
	}
	ipam_pool_names_clear(&pools);
	return r;
}
