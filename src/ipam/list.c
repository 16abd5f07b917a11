/* SPDX-License-Identifier: Apache-2.0 */
/* The operator's views: `rdmak ipam list` (JSON) and `rdmak ipam release`.
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

static json_t *u128_json(ipamconf_u128 v)
{
	char buf[40];

	/* past 2^53 a JSON number loses digits in most readers: a string then */
	return v <= ((ipamconf_u128)1 << 53) ? json_integer((json_int_t)v)
					     : json_string(ipamconf_u128_str(v, buf));
}

struct listing {
	const struct ipamconf_range *r;
	json_t *rows;
	size_t used;
};

static int list_one(void *ud, const char *addr, const char *value)
{
	struct listing *l = ud;
	struct cnispec_addr a;
	json_t *row, *v;

	if (cnispec_addr_parse(addr, &a) < 0 || a.family != l->r->family ||
	    !ipamconf_range_usable(l->r, ipamconf_u128_from_addr(&a)))
		return 0;
	v = json_loads(value, 0, NULL);
	row = json_is_object(v) ? v : json_object();
	if (row != v)
		json_decref(v);
	json_object_set_new(row, "address", json_string(addr));
	l->used++;
	return json_array_append_new(l->rows, row);
}

static int addr_order(const void *a, const void *b)
{
	struct cnispec_addr x, y;
	const char *sx = json_string_value(json_object_get(*(json_t *const *)a, "address"));
	const char *sy = json_string_value(json_object_get(*(json_t *const *)b, "address"));
	ipamconf_u128 ux, uy;

	cnispec_addr_parse(sx, &x);
	cnispec_addr_parse(sy, &y);
	ux = ipamconf_u128_from_addr(&x);
	uy = ipamconf_u128_from_addr(&y);
	return ux < uy ? -1 : ux > uy;
}

/* Sort a JSON array of reservation rows by address. */
static json_t *sorted_rows(json_t *rows)
{
	size_t n = json_array_size(rows);
	json_t **v = calloc(n + 1, sizeof(*v)), *out = json_array();

	for (size_t i = 0; v && i < n; i++)
		v[i] = json_array_get(rows, i);
	if (v && n)
		qsort(v, n, sizeof(*v), addr_order);
	for (size_t i = 0; v && out && i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(rows);
	return out;
}

struct block_rows {
	struct ipam_block_set b;
	json_t *rows;
};

static int block_row(void *ud, const char *name, const char *value)
{
	struct block_rows *br = ud;
	ipamconf_u128 x;
	json_t *v;

	if (!ipam_block_first(&br->b, name, &x))
		return 0;
	v = json_loads(value, 0, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		v = json_object();
	}
	json_object_set_new(v, "first", json_string(name));
	return json_array_append_new(br->rows, v);
}

/* A blocks store: every block of the range's pool in the cluster, with its owner. */
static int list_blocks(struct ipam_store *s, const struct ipamconf_range *rg, json_t *o)
{
	struct block_rows br = { .b = { .r = rg, .size = ipam_store_blocks(s) },
				 .rows = json_array() };
	int r = br.rows ? ipam_blocks_owners(s, rg->pool, block_row, &br) : -ENOMEM;

	free(br.b.first);
	if (r < 0) {
		json_decref(br.rows);
		return r;
	}
	return json_object_set_new(o, "blocks", br.rows);
}

int ipam_list_json(struct ipam_store *s, const struct ipamconf *c, json_t **ret,
		   struct cnispec_error *err)
{
	json_t *doc = json_pack("{s:s, s:s, s:[]}", "network", c->network, "store", s->driver->name,
				"ranges");
	json_t *ranges = json_object_get(doc, "ranges");
	int r = 0;

	if (!doc)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (ipam_store_blocks(s)) {
		json_object_set_new(doc, "node", json_string(ipam_blocks_node(s)));
		json_object_set_new(doc, "perNodeBlockSize", json_integer(ipam_store_blocks(s)));
	}
	for (size_t i = 0; r == 0 && i < c->n_sets; i++)
		for (size_t j = 0; r == 0 && j < c->sets[i].n; j++) {
			const struct ipamconf_range *rg = &c->sets[i].r[j];
			struct listing l = { .r = rg, .rows = json_array() };
			ipamconf_u128 size = ipamconf_range_size(rg);
			char gw[CNISPEC_PREFIX_STRLEN];
			json_t *o;

			r = s->ops.list(s, rg->pool, list_one, &l);
			if (r < 0) {
				json_decref(l.rows);
				break;
			}
			o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "range", rg->text, "config",
				      rg->path, "pool", rg->pool, "size", u128_json(size), "used",
				      json_integer((json_int_t)l.used), "free",
				      u128_json(size - (ipamconf_u128)l.used));
			if (o && rg->has_gateway)
				json_object_set_new(
					o, "gateway",
					json_string(ipamconf_range_addr_str(rg, rg->gateway, gw)));
			if (o)
				json_object_set_new(o, "reservations", sorted_rows(l.rows));
			else
				json_decref(l.rows);
			if (o && ipam_store_blocks(s) && (r = list_blocks(s, rg, o)) < 0) {
				json_decref(o);
				break;
			}
			r = o ? json_array_append_new(ranges, o) : -ENOMEM;
		}
	if (r < 0) {
		json_decref(doc);
		return ipam_store_fail(s, r, false, err);
	}
	*ret = doc;
	return 0;
}

struct rel {
	const char *container_id, *ifname;
	char (*keys)[300];
	size_t n, cap;
};

static int rel_match(void *ud, const char *key, const char *value)
{
	struct rel *rl = ud;
	const char *colon = strrchr(key, ':');

	if (!colon || strlen(rl->container_id) != (size_t)(colon - key) ||
	    strncmp(key, rl->container_id, (size_t)(colon - key)) != 0 ||
	    (rl->ifname && strcmp(colon + 1, rl->ifname)))
		return 0;
	if (rl->n == rl->cap) {
		size_t cap = rl->cap ? rl->cap * 2 : 8;
		void *k = realloc(rl->keys, cap * sizeof(*rl->keys));

		if (!k)
			return -ENOMEM;
		rl->keys = k;
		rl->cap = cap;
	}
	snprintf(rl->keys[rl->n++], sizeof(rl->keys[0]), "%s", key);
	return 0;
}

int ipam_release(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
		 const char *ifname, size_t *ret_released, struct cnispec_error *err)
{
	struct rel rl = { .container_id = container_id, .ifname = ifname };
	struct ipam_scan sc = { 0 };
	size_t released = 0;
	int r = s->ops.record_list(s, c->network, rel_match, &rl);

	for (size_t i = 0; r >= 0 && i < rl.n; i++) {
		char *colon = strrchr(rl.keys[i], ':');

		*colon = '\0';
		r = ipam_del_key(s, c, rl.keys[i], colon + 1);
		released += r == 1;
	}
	free(rl.keys);
	/* and what an interrupted ADD may have claimed without a record saying so */
	if (r >= 0)
		r = ipam_scan_claims(s, c, true, container_id, ifname, &sc);
	for (size_t k = 0; r >= 0 && k < sc.n; k++) {
		r = ipam_release_if_ours(s, sc.f[k].pool, sc.f[k].addr, c->network, container_id,
					 ifname);
		released += r == 1;
	}
	free(sc.f);
	if (r < 0)
		return ipam_store_fail(s, r, false, err);
	*ret_released = released;
	return 0;
}
