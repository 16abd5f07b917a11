/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator, over any store (store.h).
 *
 * ADD for attachment K = "<containerID>:<ifname>" of network N:
 *   1. K's record says "complete": its claims are still K's -> the same addresses (idempotent).
 *   2. No record: write "pending" first. Every claim is made after K has a record, so DEL and
 *      GC find K's claims through the record alone, and a process killed between claiming and
 *      writing "complete" leaves a pending record that the next ADD, DEL or GC of K resolves by
 *      looking for claims in K's name (only then: a scan of K's pools).
 *   3. One address per range set: the first usable address after the pool's cursor (the one
 *      handed out last) that claim() gets, wrapping at the end of the range. Freed addresses
 *      are thus reused last, not first (whereabouts #288: a peer that still holds a pod's old
 *      address must not reach the next pod at once).
 *   4. Record "complete" with the claims.
 * Claims carry the owner (network, containerID, ifname, pod), so any claim can be traced to
 * its attachment and a release compares the whole owner: nothing frees a claim it did not
 * read.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ipam/ipam.h"
#include "util/cleanup.h"

#define FAST_TRIES 64 /* claims tried after the cursor before reading the whole pool */
#define SPREAD	   16

static unsigned spread_seed;

int ipam_store_fail(struct ipam_store *s, int r, bool for_status, struct cnispec_error *err)
{
	if (ipam_store_unreachable(r))
		return cnispec_fail(err, r,
				    for_status ? CNISPEC_E_UNAVAILABLE : CNISPEC_E_TRY_AGAIN,
				    "the IPAM store cannot be reached", "%s store: %s",
				    s->driver->name, s->error[0] ? s->error : strerror(-r));
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	/* the pool's way (single addresses, or blocks of a size) is not this configuration's */
	if (r == -EXDEV)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid IPAM configuration", "%s",
				    s->error);
	return cnispec_fail(err, r, CNISPEC_E_IO, "IPAM store failure", "%s store: %s",
			    s->driver->name, s->error[0] ? s->error : strerror(-r));
}

/* ---- owners and records ------------------------------------------------------------------- */

static void make_key(char *buf, size_t n, const char *container_id, const char *ifname)
{
	snprintf(buf, n, "%s:%s", container_id, ifname);
}

static char *owner_value(const struct ipamconf *c, const struct ipam_owner *o)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	json_t *v;
	char *text;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
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
static bool owned_by(const char *value, const char *network, const char *container_id,
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

/* A record: pending, or the claims "<pool>/<address>". */
struct record {
	bool pending;
	char **claims;
	size_t n;
};

static void record_clear(struct record *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->claims[i]);
	free(r->claims);
	memset(r, 0, sizeof(*r));
}

/* 1 and *ret, 0 when there is none; a record we cannot read is treated as pending, so that its
 * claims are searched for rather than trusted or forgotten. */
static int record_read(struct ipam_store *s, const char *network, const char *key,
		       struct record *ret)
{
	_cleanup_free_ char *text = NULL;
	const json_t *ips, *it;
	struct record rec = { 0 };
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
static char *record_text(char *const *claims, size_t n)
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

static int record_write(struct ipam_store *s, const char *network, const char *key,
			char *const *claims, size_t n)
{
	_cleanup_free_ char *text = record_text(claims, n);

	return text ? s->ops.record_put(s, network, key, text) : -ENOMEM;
}

/* "<pool>/<address>" into its parts (pool has no '/'). */
static bool split_claim(const char *claim, char *pool, size_t pn, const char **addr)
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
static int release_if_ours(struct ipam_store *s, const char *pool, const char *addr,
			   const char *network, const char *container_id, const char *ifname)
{
	_cleanup_free_ char *v = NULL;
	int r = s->ops.get(s, pool, addr, &v);

	if (r <= 0)
		return r;
	if (!owned_by(v, network, container_id, ifname))
		return 0;
	return s->ops.release(s, pool, addr, v);
}

/* ---- scanning pools for an attachment's claims (pending records, GC) ------------------------ */

struct found {
	char pool[96];
	char addr[CNISPEC_PREFIX_STRLEN];
};

struct scan {
	const char *pool;
	const char *network, *container_id, *ifname;
	struct found *f;
	size_t n, cap;
};

static int scan_one(void *ud, const char *name, const char *value)
{
	struct scan *sc = ud;

	if (!owned_by(value, sc->network, sc->container_id, sc->ifname))
		return 0;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 8;
		struct found *f = realloc(sc->f, cap * sizeof(*f));

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

struct pool_names {
	char **v;
	size_t n, cap;
};

static int add_pool_name(void *ud, const char *name, const char *value)
{
	struct pool_names *p = ud;

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

static void pool_names_clear(struct pool_names *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

/* The config's pools, and with all_pools every pool the store knows. */
static int pools_of(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		    struct pool_names *ret)
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
static int scan_claims(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		       const char *container_id, const char *ifname, struct scan *ret)
{
	struct pool_names pools = { 0 };
	int r = pools_of(s, c, all_pools, &pools);

	ret->network = c->network;
	ret->container_id = container_id;
	ret->ifname = ifname;
	for (size_t i = 0; r == 0 && i < pools.n; i++) {
		ret->pool = pools.v[i];
		r = s->ops.list(s, pools.v[i], scan_one, ret);
	}
	pool_names_clear(&pools);
	return r;
}

/* ---- allocation in one range ------------------------------------------------------------ */

struct used {
	const struct ipamconf_range *r;
	ipamconf_u128 *v;
	size_t n, cap;
};

static int used_one(void *ud, const char *name, const char *value)
{
	struct used *u = ud;
	struct cnispec_addr a;
	ipamconf_u128 x;

	if (cnispec_addr_parse(name, &a) < 0 || a.family != u->r->family)
		return 0;
	x = ipamconf_u128_from_addr(&a);
	if (!ipamconf_range_usable(u->r, x))
		return 0; /* another range over the same subnet */
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 256;
		ipamconf_u128 *v = realloc(u->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n++] = x;
	return 0;
}

static int u128_cmp(const void *a, const void *b)
{
	ipamconf_u128 x = *(const ipamconf_u128 *)a, y = *(const ipamconf_u128 *)b;

	return x < y ? -1 : x > y;
}

static bool is_used(const struct used *u, ipamconf_u128 a)
{
	/* no claims: v is NULL, which bsearch may not be given (glibc declares it nonnull) */
	return u->n && bsearch(&a, u->v, u->n, sizeof(*u->v), u128_cmp) != NULL;
}

/* The claims of r's pool that lie in r, sorted. */
static int read_used(struct ipam_store *s, const struct ipamconf_range *r, struct used *u)
{
	int e;

	u->r = r;
	e = s->ops.list(s, r->pool, used_one, u);
	if (e < 0)
		return e;
	if (u->n)
		qsort(u->v, u->n, sizeof(*u->v), u128_cmp);
	return 0;
}

/* The next usable address after a, wrapping from end to start. */
static bool next_wrap(const struct ipamconf_range *r, ipamconf_u128 a, ipamconf_u128 *ret)
{
	if (a < r->end && ipamconf_range_next(r, a + 1, ret))
		return true;
	return ipamconf_range_next(r, r->start, ret) == 1;
}

/* Where the search starts: after the cursor when it lies in r. */
static ipamconf_u128 search_from(struct ipam_store *s, const struct ipamconf_range *r)
{
	_cleanup_free_ char *text = NULL;
	struct cnispec_addr a;
	ipamconf_u128 from = r->start, c;

	if (s->ops.cursor_get(s, r->pool, &text) == 1 && cnispec_addr_parse(text, &a) == 0 &&
	    a.family == r->family) {
		c = ipamconf_u128_from_addr(&a);
		if (c >= r->start && c <= r->end && !next_wrap(r, c, &from))
			from = r->start;
	}
	if (!ipamconf_range_next(r, from, &c))
		ipamconf_range_next(r, r->start, &c);
	return c;
}

/* ---- one address, every pool: overlapping subnets ------------------------------------------ */

/* The subnet a pool holds, from its name ("[network_name_]10.56.0.0_27"), and the length of
 * the part before the address (network_name and '_', or 0). false: not a name rdmak-ipam
 * gives a pool. */
static bool pool_subnet(const char *pool, struct cnispec_prefix *ret, size_t *ret_prefix)
{
	char text[CNISPEC_PREFIX_STRLEN];
	const char *us = strrchr(pool, '_'), *start;
	size_t n;

	if (!us || us == pool)
		return false;
	for (start = us; start > pool && start[-1] != '_'; start--)
		;
	n = (size_t)(us - start);
	if (n + 1 + strlen(us + 1) >= sizeof(text))
		return false;
	snprintf(text, sizeof(text), "%.*s/%s", (int)n, start, us + 1);
	if (cnispec_prefix_parse(text, ret) < 0)
		return false;
	*ret_prefix = (size_t)(start - pool);
	return true;
}

/* A claim of the same address in another pool. */
struct rival {
	struct ipam_store *s;
	const struct ipamconf_range *r; /* the range whose pool was just claimed in */
	size_t prefix;			/* the length of its pool name's network_name part */
	struct cnispec_addr addr;
	const char *text;
	char *owner; /* the rival claim's value, malloc'd */
	char pool[96];
};

static int rival_one(void *ud, const char *name, const char *value)
{
	struct rival *rv = ud;
	struct cnispec_prefix sub;
	size_t prefix;
	int r;

	if (!strcmp(name, rv->r->pool) || !pool_subnet(name, &sub, &prefix))
		return 0;
	/* another network_name is another tenant: its pools may hold the same addresses */
	if (prefix != rv->prefix || strncmp(name, rv->r->pool, prefix) ||
	    !ipamconf_prefix_contains(&sub, &rv->addr))
		return 0;
	r = rv->s->ops.get(rv->s, name, rv->text, &rv->owner);
	if (r == 1)
		snprintf(rv->pool, sizeof(rv->pool), "%s", name);
	return r;
}

/* Claim the address text of r for value, unique across every pool of the store whose subnet
 * holds it: whereabouts' enable_overlapping_ranges (two networks over 192.168.22.0/24 and
 * 192.168.22.0/28 both hold .1-.14, each in its own pool). The claim comes first, the look
 * at the other pools second, each a single linearizable store operation: of two claimants of
 * one address in two pools, the later one's look sees the earlier one's claim, so at worst
 * both step back to their next address, and never do both keep it. The pools are listed after
 * the claim, so that a pool created by a racing claim is seen. 1 ours, 0 taken (rv->owner
 * and rv->pool name a rival claim, if that was it), <0 error (the claim may stay: the ADD's
 * rollback releases what is in its name). */
static int claim_unique(struct ipam_store *s, const struct ipamconf_range *r, const char *text,
			const char *value, struct rival *rv)
{
	struct cnispec_prefix own;
	int e = s->ops.claim(s, r->pool, text, value);

	*rv = (struct rival){ .s = s, .r = r, .text = text };
	if (e != 1)
		return e;
	if (!pool_subnet(r->pool, &own, &rv->prefix) || cnispec_addr_parse(text, &rv->addr) < 0)
		return -EINVAL;
	e = s->ops.pools(s, rival_one, rv);
	if (e <= 0)
		return e < 0 ? e : 1;
	/* ours only if it is still exactly the value we wrote; a failure leaves a claim that GC
	 * (no record names it) or this attachment's DEL removes */
	s->ops.release(s, r->pool, text, value);
	return 0;
}

/* A new attachment of one range set on a store that commits (ipam_store_commits()): its
 * record is written with its claim, in one step, instead of pending before and complete after. */
struct commit {
	const char *network;
	const char *key;
};

static int try_commit(struct ipam_store *s, const struct ipamconf_range *r, const char *text,
		      const char *value, const struct commit *cm)
{
	struct rival rv = { .s = s, .r = r, .text = text };
	struct cnispec_prefix own;
	_cleanup_free_ char *claim = NULL, *record = NULL;
	int e;

	if (!pool_subnet(r->pool, &own, &rv.prefix) || cnispec_addr_parse(text, &rv.addr) < 0)
		return -EINVAL;
	if (asprintf(&claim, "%s/%s", r->pool, text) < 0 || !(record = record_text(&claim, 1)))
		return -ENOMEM;
	e = s->ops.claim_commit(s, r->pool, text, value, cm->network, cm->key, record, rival_one,
				&rv);
	free(rv.owner);
	return e;
}

static int try_claim(struct ipam_store *s, const struct ipamconf_range *r, ipamconf_u128 a,
		     const char *value, const struct commit *cm)
{
	char text[CNISPEC_PREFIX_STRLEN];
	struct rival rv;
	int e;

	ipamconf_range_addr_str(r, a, text);
	if (cm)
		return try_commit(s, r, text, value, cm);
	e = claim_unique(s, r, text, value, &rv);

	free(rv.owner);
	if (e == 1)
		s->ops.cursor_put(s, r->pool,
				  text); /* a hint: its failure costs a few claims later */
	return e;
}

/* 1 and *ret: claimed; 0: r is full; <0 error. *ret_used: the count when full. */
static int alloc_in_range(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			  const struct commit *cm, ipamconf_u128 *ret, ipamconf_u128 *ret_used)
{
	ipamconf_u128 size = ipamconf_range_size(r), a, first;
	struct used u = { 0 };
	size_t tries = 0;
	ipamconf_u128 step = 1;
	bool wrapped = false;
	int e;

	*ret_used = 0;
	if (size == 0)
		return 0;
	if (!spread_seed)
		spread_seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	/* fast path: the addresses after the cursor are free unless the range has wrapped */
	a = first = search_from(s, r);
	if (size <= FAST_TRIES) {
		/* a small range: try every address once, in order */
		do {
			e = try_claim(s, r, a, value, cm);
			if (e != 0) {
				*ret = a;
				return e;
			}
			if (!next_wrap(r, a, &a))
				return 0;
		} while (a != first);
		goto full;
	}
	while (tries++ < FAST_TRIES) {
		e = try_claim(s, r, a, value, cm);
		if (e != 0) {
			*ret = a;
			return e;
		}
		/* lost: a is taken. Racing ADDs all want the address after the cursor, and a cursor
		 * written late by a slow process may lie behind the others' claims; so gallop:
		 * jump 1, 2, 4, ... addresses ahead (plus a random few, so that racers spread out
		 * instead of queueing), which finds the end of the taken run in a logarithmic number
		 * of claims. The order holds but for what a jump passes, which is used when the
		 * range wraps. */
		if (!ipamconf_range_advance(r, a, step + (unsigned)rand_r(&spread_seed) % SPREAD,
					    &a)) {
			if (wrapped)
				break;
			wrapped = true;
			ipamconf_range_next(r, r->start, &a);
			step = 1;
			continue;
		}
		if (step < ((ipamconf_u128)1 << 100))
			step *= 2;
	}
	/* slow path: read the pool once and walk its free addresses in order */
	e = read_used(s, r, &u);
	if (e < 0)
		goto out;
	if ((ipamconf_u128)u.n >= size)
		goto full;
	first = a;
	do {
		if (!is_used(&u, a)) {
			e = try_claim(s, r, a, value, cm);
			if (e != 0) {
				*ret = a;
				goto out;
			}
		}
		if (!next_wrap(r, a, &a))
			break;
	} while (a != first);
full:
	*ret_used = u.n ? (ipamconf_u128)u.n : size;
	e = 0;
out:
	free(u.v);
	return e;
}

/* ---- per-node blocks (store-blocks.c) --------------------------------------------------------- */

/* A block: the grid cell [first, first + size - 1] of the subnet, clipped to a range. */
struct blocks {
	const struct ipamconf_range *r;
	ipamconf_u128 size;
	ipamconf_u128 *first; /* sorted */
	size_t n, cap;
	struct ipam_store *s;
	const char *pool;
	size_t adopted;
};

static int blocks_add(struct blocks *b, ipamconf_u128 first)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		ipamconf_u128 *v = realloc(b->first, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->first = v;
		b->cap = cap;
	}
	b->first[b->n++] = first;
	return 0;
}

/* A block's first address from its name, when it is a block of this range's grid. */
static bool block_first(const struct blocks *b, const char *name, ipamconf_u128 *ret)
{
	struct cnispec_addr a;
	ipamconf_u128 x;

	if (cnispec_addr_parse(name, &a) < 0 || a.family != b->r->family)
		return false;
	x = ipamconf_u128_from_addr(&a);
	if (x < b->r->net || (x - b->r->net) % b->size || x > b->r->end ||
	    x + (b->size - 1) < b->r->start)
		return false;
	*ret = x;
	return true;
}

static int mine_one(void *ud, const char *name, const char *value)
{
	struct blocks *b = ud;
	ipamconf_u128 x;

	return block_first(b, name, &x) ? blocks_add(b, x) : 0;
}

static bool value_is_node(const char *value, const char *node)
{
	json_t *v = json_loads(value, 0, NULL);
	const char *n = json_string_value(json_object_get(v, "node"));
	bool ok = n && !strcmp(n, node);

	json_decref(v);
	return ok;
}

/* Every block of the cluster (the taken ones); this node's that its local list lacks (an ADD
 * killed between the block's Txn and the local link) are adopted on the way. */
/* A block of the pool that is no cell of this configuration's grid: one of another size, taken
 * before the pool stored its size, by a configuration that disagreed. -EXDEV naming it. */
static int block_misfit(struct blocks *b, const char *name, const char *value)
{
	json_t *v = json_loads(value, 0, NULL);
	const char *last = json_string_value(json_object_get(v, "last"));
	const char *node = json_string_value(json_object_get(v, "node"));
	struct cnispec_addr a, l;
	ipamconf_u128 x, y;
	int r = 0;

	if (cnispec_addr_parse(name, &a) == 0 && a.family == b->r->family && last &&
	    cnispec_addr_parse(last, &l) == 0 && l.family == a.family) {
		x = ipamconf_u128_from_addr(&a);
		y = ipamconf_u128_from_addr(&l);
		if (x >= b->r->net && ((x - b->r->net) % b->size || y < x || y - x >= b->size)) {
			char sz[40];

			/* the pool's stored size says it best, when it has one */
			if ((r = ipam_blocks_size_check(b->s, b->pool)) < 0) {
				json_decref(v);
				return r;
			}

			snprintf(
				b->s->error, sizeof(b->s->error),
				"pool %s holds block %s-%s (node %s), which is no block of %s addresses: "
				"its configurations disagreed on perNodeBlockSize before the pool "
				"stored its size; give them all the size of its blocks",
				b->pool, name, last, node ? node : "?",
				ipamconf_u128_str(b->size, sz));
			r = -EXDEV;
		}
	}
	json_decref(v);
	return r;
}

static int owner_one(void *ud, const char *name, const char *value)
{
	struct blocks *b = ud;
	ipamconf_u128 x;
	int r;

	if ((r = block_misfit(b, name, value)) < 0)
		return r;
	if (!block_first(b, name, &x))
		return 0;
	if (value_is_node(value, ipam_blocks_node(b->s))) {
		r = ipam_blocks_adopt(b->s, b->pool, name, value);
		if (r < 0)
			return r;
	}
	return blocks_add(b, x);
}

static void blocks_sort(struct blocks *b)
{
	if (b->n)
		qsort(b->first, b->n, sizeof(*b->first), u128_cmp);
}

/* r clipped to [lo, hi]: its exclusions too (ipamconf_range_size() counts every one). */
static int clip_range(const struct ipamconf_range *r, ipamconf_u128 lo, ipamconf_u128 hi,
		      struct ipamconf_range *ret)
{
	*ret = *r;
	ret->start = lo > r->start ? lo : r->start;
	ret->end = hi < r->end ? hi : r->end;
	ret->excl = calloc(r->n_excl + 1, sizeof(*ret->excl));
	ret->n_excl = 0;
	if (!ret->excl)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_excl; i++) {
		struct ipamconf_span sp = r->excl[i];

		if (sp.hi < ret->start || sp.lo > ret->end)
			continue;
		sp.lo = sp.lo < ret->start ? ret->start : sp.lo;
		sp.hi = sp.hi > ret->end ? ret->end : sp.hi;
		ret->excl[ret->n_excl++] = sp;
	}
	return 0;
}

/* Allocate in one block: 1, 0 full, <0. */
static int alloc_in_block(struct ipam_store *s, const struct ipamconf_range *r, ipamconf_u128 first,
			  ipamconf_u128 size, const char *value, ipamconf_u128 *ret)
{
	struct ipamconf_range sub;
	ipamconf_u128 used;
	int e;

	if (first > r->end || first + (size - 1) < r->start)
		return 0;
	e = clip_range(r, first, first + (size - 1), &sub);
	if (e < 0)
		return e;
	e = ipamconf_range_size(&sub) ? alloc_in_range(s, &sub, value, NULL, ret, &used) : 0;
	free(sub.excl);
	return e;
}

/* Allocate in this node's blocks, starting with the one holding the cursor (so that the order
 * after the cursor holds across blocks). */
static int alloc_in_mine(struct ipam_store *s, const struct ipamconf_range *r, struct blocks *mine,
			 const char *value, ipamconf_u128 *ret)
{
	_cleanup_free_ char *text = NULL;
	struct cnispec_addr a;
	size_t start = 0;
	int e;

	mine->n = 0;
	e = ipam_blocks_mine(s, r->pool, mine_one, mine);
	if (e < 0)
		return e;
	blocks_sort(mine);
	if (s->ops.cursor_get(s, r->pool, &text) == 1 && cnispec_addr_parse(text, &a) == 0 &&
	    a.family == r->family) {
		ipamconf_u128 c = ipamconf_u128_from_addr(&a);

		while (start < mine->n && mine->first[start] + (mine->size - 1) < c)
			start++;
		if (start == mine->n)
			start = 0;
	}
	for (size_t k = 0; k < mine->n; k++) {
		e = alloc_in_block(s, r, mine->first[(start + k) % mine->n], mine->size, value,
				   ret);
		if (e != 0)
			return e;
	}
	return 0;
}

static bool blocks_has(const struct blocks *b, ipamconf_u128 first)
{
	/* a node with no block yet: first is NULL, which bsearch may not be given */
	return b->n && bsearch(&first, b->first, b->n, sizeof(*b->first), u128_cmp) != NULL;
}

/* A claim made while the lease held is only good if it still holds after it: a process stalled
 * between the two (past the lease, while a reclaim gave the block away) gives it back. */
static int lease_still_held(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			    ipamconf_u128 a)
{
	char addr[CNISPEC_PREFIX_STRLEN];

	if (ipam_blocks_lease_holds(s))
		return 1;
	ipamconf_range_addr_str(r, a, addr);
	s->ops.release(s, r->pool, addr, value);
	snprintf(s->error, sizeof(s->error),
		 "node %s's lease lapsed while this ADD claimed %s in pool %s: the claim is given "
		 "back; try again",
		 ipam_blocks_node(s), addr, r->pool);
	return -ETIMEDOUT;
}

/* ADD on a blocks store: the node's own blocks first, with no network round trip; when none has
 * room, a new block from the cluster (one compare-and-put), taken under the pool's lock held
 * exclusively, so that the node's racing ADDs take one block, not one each. 1, 0 no block with
 * room and none free (*ret_blocks: how many the pool has), <0. */
static int alloc_in_blocks(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			   ipamconf_u128 *ret, size_t *ret_blocks)
{
	struct blocks mine = { .r = r, .size = ipam_store_blocks(s) }, all = mine;
	char first[CNISPEC_PREFIX_STRLEN], last[CNISPEC_PREFIX_STRLEN];
	ipamconf_u128 k;
	int fd, e;

	/* the node hands out addresses from its blocks only while it holds its lease */
	e = ipam_blocks_lease(s, IPAM_LEASE_ADD);
	if (e < 0)
		return e;
	fd = ipam_blocks_lock(s, r->pool, false);
	if (fd < 0)
		return fd;
	e = alloc_in_mine(s, r, &mine, value, ret);
	close(fd);
	if (e != 0)
		goto out;
	fd = ipam_blocks_lock(s, r->pool, true);
	if (fd < 0) {
		e = fd;
		goto out;
	}
	/* another ADD of this node may have taken a block while we waited */
	e = alloc_in_mine(s, r, &mine, value, ret);
	if (e != 0)
		goto unlock;
	all.s = s;
	all.pool = r->pool;
	e = ipam_blocks_owners(s, r->pool, owner_one, &all);
	if (e < 0)
		goto unlock;
	blocks_sort(&all);
	/* blocks of this node that only etcd knew of, adopted just now */
	e = alloc_in_mine(s, r, &mine, value, ret);
	if (e != 0)
		goto unlock;
	/* the first free cell of the grid that holds an address of the range */
	for (k = r->net + (r->start - r->net) / mine.size * mine.size; k <= r->end;
	     k += mine.size) {
		if (blocks_has(&all, k))
			continue;
		ipamconf_range_addr_str(r, k, first);
		ipamconf_range_addr_str(r,
					k + (mine.size - 1) < k || k + (mine.size - 1) > r->end
						? r->end
						: k + (mine.size - 1),
					last);
		e = ipam_blocks_claim(s, r->pool, first, last);
		if (e < 0)
			goto unlock;
		if (e == 1) {
			e = alloc_in_block(s, r, k, mine.size, value, ret);
			if (e != 0)
				goto unlock;
		}
		if (k + mine.size < k)
			break;
	}
	e = 0;
	*ret_blocks = all.n;
unlock:
	close(fd);
out:
	free(mine.first);
	free(all.first);
	return e == 1 ? lease_still_held(s, r, value, *ret) : e;
}

static int blocks_full(struct ipam_store *s, const struct ipamconf_range *r, size_t n,
		       struct cnispec_error *err)
{
	char sz[40];

	cnispec_fail(
		err, -ENOSPC, IPAM_E_EXHAUSTED, "no free address",
		"pool %s (%s): no block of node %s has room and no free block of %u addresses is left (%s addresses, "
		"%zu blocks taken)",
		r->pool, r->text, ipam_blocks_node(s), ipam_store_blocks(s),
		ipamconf_u128_str(ipamconf_range_size(r), sz), n);
	return 0;
}

/* ---- ADD ------------------------------------------------------------------------------------ */

/* The range of set that holds addr (a usable address of it), or -1. */
static int range_of(const struct ipamconf_rangeset *set, const char *pool, const char *addr,
		    ipamconf_u128 *ret)
{
	struct cnispec_addr a;

	if (cnispec_addr_parse(addr, &a) < 0)
		return -1;
	for (size_t j = 0; j < set->n; j++)
		if (!strcmp(set->r[j].pool, pool) && a.family == set->r[j].family &&
		    ipamconf_range_usable(&set->r[j], ipamconf_u128_from_addr(&a))) {
			*ret = ipamconf_u128_from_addr(&a);
			return (int)j;
		}
	return -1;
}

struct held {
	bool have;
	int range;
	ipamconf_u128 addr;
	bool made_now;
};

/* Sort the attachment's current claims (list) into held[] per set; what fits no set (the
 * config changed) or doubles a set (an interrupted ADD) is released. */
static int adopt(struct ipam_store *s, const struct ipamconf *c, const struct ipam_owner *o,
		 const struct found *f, size_t n, struct held *held)
{
	for (size_t k = 0; k < n; k++) {
		bool placed = false;

		for (size_t i = 0; i < c->n_sets && !placed; i++) {
			ipamconf_u128 a;
			int j = held[i].have ? -1 : range_of(&c->sets[i], f[k].pool, f[k].addr, &a);

			if (j >= 0) {
				held[i] = (struct held){ .have = true, .range = j, .addr = a };
				placed = true;
			}
		}
		if (!placed) {
			int r = release_if_ours(s, f[k].pool, f[k].addr, c->network,
						o->container_id, o->ifname);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* The attachment's claims now: from its complete record (each checked to be still ours), or
 * by a scan of the pools when the record is pending. */
static int current_claims(struct ipam_store *s, const struct ipamconf *c,
			  const struct ipam_owner *o, const struct record *rec, struct scan *sc)
{
	if (rec->pending)
		return scan_claims(s, c, true, o->container_id, o->ifname, sc);
	sc->network = c->network;
	sc->container_id = o->container_id;
	sc->ifname = o->ifname;
	for (size_t k = 0; k < rec->n; k++) {
		_cleanup_free_ char *v = NULL;
		char pool[96];
		const char *addr;
		int r;

		if (!split_claim(rec->claims[k], pool, sizeof(pool), &addr))
			continue;
		r = s->ops.get(s, pool, addr, &v);
		if (r < 0)
			return r;
		/* a claim that is gone or someone else's now (an operator's release) is not ours */
		if (r == 1 && owned_by(v, c->network, o->container_id, o->ifname)) {
			sc->pool = pool;
			if ((r = scan_one(sc, addr, v)) < 0)
				return r;
		}
	}
	return 0;
}

static int full_error(const struct ipamconf_rangeset *set, const ipamconf_u128 *used,
		      struct cnispec_error *err)
{
	char details[CNISPEC_DETAILS_MAX] = "";
	size_t l = 0;

	for (size_t j = 0; j < set->n && l < sizeof(details); j++) {
		char n[40], m[40];
		ipamconf_u128 size = ipamconf_range_size(&set->r[j]);

		if (size == 0)
			l += (size_t)snprintf(details + l, sizeof(details) - l,
					      "%s%s: no address to hand out (all excluded)",
					      j ? "; " : "", set->r[j].text);
		else if (used[j] >= size)
			l += (size_t)snprintf(details + l, sizeof(details) - l,
					      "%s%s: all %s addresses in use", j ? "; " : "",
					      set->r[j].text, ipamconf_u128_str(size, n));
		else
			l += (size_t)snprintf(
				details + l, sizeof(details) - l,
				"%s%s: %s of %s addresses in use, none could be claimed",
				j ? "; " : "", set->r[j].text, ipamconf_u128_str(used[j], m),
				ipamconf_u128_str(size, n));
	}
	cnispec_fail(err, -ENOSPC, IPAM_E_EXHAUSTED, "no free address", "%s", details);
	return 0;
}

/* One address for the set: 1 (held filled), 0 when every range is full (err says so), <0. */
static int alloc_set(struct ipam_store *s, const struct ipamconf_rangeset *set, const char *value,
		     const struct commit *cm, struct held *h, struct cnispec_error *err)
{
	ipamconf_u128 used[64] = { 0 };
	size_t blocks = 0;

	for (size_t j = 0; j < set->n; j++) {
		int r = ipam_store_blocks(s)
				? alloc_in_blocks(s, &set->r[j], value, &h->addr, &blocks)
				: alloc_in_range(s, &set->r[j], value, cm, &h->addr,
						 &used[j < 64 ? j : 63]);

		if (r < 0)
			return r;
		if (r == 1) {
			h->have = h->made_now = true;
			h->range = (int)j;
			return 1;
		}
	}
	if (ipam_store_blocks(s))
		return blocks_full(s, &set->r[set->n - 1], blocks, err);
	return full_error(set, used, err);
}

/* Where o->requested comes from: the set and range that can hand it out (ipamconf_range_usable:
 * within its bounds, not excluded, not its gateway, network or broadcast address). Refused
 * before the store is touched when there is none. */
static int requested_range(const struct ipamconf *c, const struct cnispec_addr *want,
			   size_t *ret_set, int *ret_range, ipamconf_u128 *ret_addr,
			   struct cnispec_error *err)
{
	char a[CNISPEC_PREFIX_STRLEN];
	ipamconf_u128 v = ipamconf_u128_from_addr(want);
	const char *in = NULL;

	for (size_t i = 0; i < c->n_sets; i++)
		for (size_t j = 0; j < c->sets[i].n; j++) {
			const struct ipamconf_range *rg = &c->sets[i].r[j];

			if (rg->family != want->family)
				continue;
			if (ipamconf_range_usable(rg, v)) {
				*ret_set = i;
				*ret_range = (int)j;
				*ret_addr = v;
				return 0;
			}
			if (!in && ipamconf_prefix_contains(&rg->subnet, want))
				in = rg->text;
		}
	cnispec_addr_str(want, a);
	if (in)
		return cnispec_fail(
			err, -EINVAL, IPAM_E_REQUESTED, "the requested address cannot be given",
			"IP=%s in CNI_ARGS: %s does not hand it out (outside its bounds, excluded, its gateway, "
			"or its network or broadcast address)",
			a, in);
	return cnispec_fail(err, -EINVAL, IPAM_E_REQUESTED, "the requested address cannot be given",
			    "IP=%s in CNI_ARGS lies in no range of network %s", a, c->network);
}

/* With per-node blocks an address is given only from a block of this node (its claims are in
 * this node's dataDir, where no other node looks): the cell holding want is this node's, or free
 * and taken now; another node's is refused (code 112, err filled). 1 with the pool's lock held
 * shared in *ret_fd (GC gives no block back under the claim that follows), 0 refused, <0. */
static int requested_block(struct ipam_store *s, const struct ipamconf_range *r, ipamconf_u128 want,
			   int *ret_fd, struct cnispec_error *err)
{
	struct blocks mine = { .r = r, .size = ipam_store_blocks(s) }, all = mine;
	ipamconf_u128 cell = r->net + (want - r->net) / mine.size * mine.size;
	char first[CNISPEC_PREFIX_STRLEN], last[CNISPEC_PREFIX_STRLEN], a[CNISPEC_PREFIX_STRLEN];
	int fd, e = ipam_blocks_lease(s, IPAM_LEASE_ADD);

	ipamconf_range_addr_str(r, cell, first);
	ipamconf_range_addr_str(
		r, cell + (mine.size - 1) > r->end ? r->end : cell + (mine.size - 1), last);
	for (int pass = 0; e >= 0 && pass < 2; pass++) {
		fd = ipam_blocks_lock(s, r->pool, false);
		if (fd < 0) {
			e = fd;
			break;
		}
		mine.n = 0;
		e = ipam_blocks_mine(s, r->pool, mine_one, &mine);
		blocks_sort(&mine);
		if (e >= 0 && blocks_has(&mine, cell)) {
			*ret_fd = fd;
			e = 1;
			break;
		}
		close(fd);
		if (e < 0 || pass == 1)
			break;
		/* free: this node takes it, as an ADD takes its next block */
		fd = ipam_blocks_lock(s, r->pool, true);
		if (fd < 0) {
			e = fd;
			break;
		}
		all.n = 0;
		all.s = s;
		all.pool = r->pool;
		e = ipam_blocks_owners(s, r->pool, owner_one, &all);
		blocks_sort(&all);
		if (e >= 0 && !blocks_has(&all, cell))
			e = ipam_blocks_claim(s, r->pool, first, last);
		close(fd);
	}
	free(mine.first);
	free(all.first);
	if (e != 0)
		return e;
	cnispec_fail(
		err, -EADDRINUSE, IPAM_E_REQUESTED, "the requested address cannot be given",
		"IP=%s in CNI_ARGS: it lies in block %s-%s of pool %s, which is another node's "
		"than %s (`rdmak ipam list` names it)",
		ipamconf_range_addr_str(r, want, a), first, last, r->pool, ipam_blocks_node(s));
	return 0;
}

/* Claim the requested address (want in set's range j): 1 held, 0 someone else holds it (err
 * says who), <0 store error. The same claim primitive as any allocation, so the address is
 * unique whichever the store; the cursor stays where it was. */
static int claim_requested(struct ipam_store *s, const struct ipamconf_rangeset *set, int j,
			   ipamconf_u128 want, const char *value, struct held *h,
			   struct cnispec_error *err)
{
	const struct ipamconf_range *rg = &set->r[j];
	_cleanup_free_ char *owner = NULL;
	char a[CNISPEC_PREFIX_STRLEN];
	struct rival rv;
	json_t *v;
	int fd = -1, r;

	if (ipam_store_blocks(s) && (r = requested_block(s, rg, want, &fd, err)) <= 0)
		return r;
	r = claim_unique(s, rg, ipamconf_range_addr_str(rg, want, a), value, &rv);
	if (fd >= 0)
		close(fd);
	if (r == 1 && fd >= 0)
		r = lease_still_held(s, rg, value, want);
	owner = rv.owner;
	if (r != 0) {
		if (r == 1)
			*h = (struct held){
				.have = true, .range = j, .addr = want, .made_now = true
			};
		return r;
	}
	if ((owner || s->ops.get(s, rg->pool, a, &owner) == 1) &&
	    (v = json_loads(owner, 0, NULL))) {
		const char *cid = json_string_value(json_object_get(v, "containerID"));
		const char *ifn = json_string_value(json_object_get(v, "ifname"));

		cnispec_fail(
			err, -EADDRINUSE, IPAM_E_REQUESTED, "the requested address cannot be given",
			"IP=%s in CNI_ARGS: claimed by %s:%s", a, cid ? cid : "?", ifn ? ifn : "?");
		json_decref(v);
		return 0;
	}
	cnispec_fail(err, -EADDRINUSE, IPAM_E_REQUESTED, "the requested address cannot be given",
		     "IP=%s in CNI_ARGS: claimed by another attachment", a);
	return 0;
}

static int build_result(const struct ipamconf *c, const struct held *held,
			struct cnispec_result **ret)
{
	struct cnispec_result *res = NULL;
	int r = cnispec_result_dup(c->routes_dns, &res);

	for (size_t i = 0; r == 0 && i < c->n_sets; i++) {
		const struct ipamconf_range *rg = &c->sets[i].r[held[i].range];
		struct cnispec_ip ip = { .interface = -1, .has_gateway = rg->has_gateway };

		ipamconf_addr_from_u128(rg->family, held[i].addr, &ip.address.addr);
		ip.address.len = rg->subnet.len;
		if (rg->has_gateway)
			ipamconf_addr_from_u128(rg->family, rg->gateway, &ip.gateway);
		r = cnispec_result_add_ip(res, &ip);
	}
	/* the result lists ips first in the order of the sets; routes and dns as configured */
	if (r < 0) {
		cnispec_result_free(res);
		return r;
	}
	*ret = res;
	return 0;
}

static int write_complete(struct ipam_store *s, const struct ipamconf *c, const char *key,
			  const struct held *held)
{
	char *claims[IPAMCONF_MAX_RANGESETS] = { 0 };
	size_t n = 0;
	int r = 0;

	for (size_t i = 0; i < c->n_sets && r == 0; i++) {
		const struct ipamconf_range *rg = &c->sets[i].r[held[i].range];
		char a[CNISPEC_PREFIX_STRLEN];

		if (asprintf(&claims[n], "%s/%s", rg->pool,
			     ipamconf_range_addr_str(rg, held[i].addr, a)) < 0)
			r = -ENOMEM;
		else
			n++;
	}
	if (r == 0)
		r = record_write(s, c->network, key, claims, n);
	for (size_t i = 0; i < n; i++)
		free(claims[i]);
	return r;
}

/* Undo a failed ADD: every claim in K's name, then K's record. */
static void rollback(struct ipam_store *s, const struct ipamconf *c, const char *key,
		     const struct ipam_owner *o, const struct held *held)
{
	for (size_t i = 0; i < c->n_sets; i++) {
		const struct ipamconf_range *rg;
		char a[CNISPEC_PREFIX_STRLEN];

		if (!held[i].have)
			continue;
		rg = &c->sets[i].r[held[i].range];
		release_if_ours(s, rg->pool, ipamconf_range_addr_str(rg, held[i].addr, a),
				c->network, o->container_id, o->ifname);
	}
	s->ops.record_del(s, c->network, key);
}

int ipam_add(struct ipam_store *s, const struct ipamconf *c, const struct ipam_owner *o,
	     struct cnispec_result **ret, struct cnispec_error *err)
{
	_cleanup_free_ char *value = owner_value(c, o);
	struct held held[IPAMCONF_MAX_RANGESETS] = { 0 };
	struct record rec = { 0 };
	struct scan sc = { 0 };
	char key[300];
	struct commit cm = { .network = c->network, .key = key };
	bool complete = true, commit = false;
	size_t want_set = SIZE_MAX;
	int want_range = -1;
	ipamconf_u128 want = 0;
	int r;

	if (!value)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (o->requested &&
	    (r = requested_range(c, o->requested, &want_set, &want_range, &want, err)) < 0)
		return r;
	make_key(key, sizeof(key), o->container_id, o->ifname);
	r = record_read(s, c->network, key, &rec);
	if (r == 1) {
		r = current_claims(s, c, o, &rec, &sc);
		if (r == 0)
			r = adopt(s, c, o, sc.f, sc.n, held);
		complete = !rec.pending;
	} else if (r == 0) {
		complete = false;
		/* one address, none asked for: its claim and record in one write where the store can */
		commit = c->n_sets == 1 && !o->requested && ipam_store_commits(s);
		if (!commit)
			r = s->ops.record_pending(s, c->network, key);
	}
	record_clear(&rec);
	free(sc.f);
	if (r < 0)
		return ipam_store_fail(s, r, false, err);
	/* a retried ADD gets what it has; an attachment holding another address than the one now
	 * asked for keeps it (DEL gives it back): refused, nothing released */
	if (want_set < c->n_sets && held[want_set].have &&
	    (held[want_set].range != want_range || held[want_set].addr != want)) {
		const struct ipamconf_range *rg = &c->sets[want_set].r[held[want_set].range];
		char a[CNISPEC_PREFIX_STRLEN], h[CNISPEC_PREFIX_STRLEN];

		ipamconf_range_addr_str(&c->sets[want_set].r[want_range], want, a);
		return cnispec_fail(err, -EEXIST, IPAM_E_REQUESTED,
				    "the requested address cannot be given",
				    "IP=%s in CNI_ARGS: attachment %s already holds %s", a, key,
				    ipamconf_range_addr_str(rg, held[want_set].addr, h));
	}
	for (size_t i = 0; i < c->n_sets; i++) {
		if (held[i].have)
			continue;
		complete = false;
		if (i == want_set)
			r = claim_requested(s, &c->sets[i], want_range, want, value, &held[i], err);
		else
			r = alloc_set(s, &c->sets[i], value, commit ? &cm : NULL, &held[i], err);
		if (r <= 0) {
			if (r < 0)
				ipam_store_fail(s, r, false, err);
			rollback(s, c, key, o, held);
			return r < 0 ? r : i == want_set ? -EADDRINUSE : -ENOSPC;
		}
	}
	if (!complete && !commit && (r = write_complete(s, c, key, held)) < 0) {
		ipam_store_fail(s, r, false, err);
		rollback(s, c, key, o, held);
		return r;
	}
	r = build_result(c, held, ret);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	return 0;
}

/* ---- DEL, CHECK ----------------------------------------------------------------------------- */

/* Release every claim of (container_id, ifname) and its record. 1 if it had one, 0 if not. */
static int del_key(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
		   const char *ifname)
{
	struct ipam_owner o = { .container_id = container_id, .ifname = ifname };
	struct record rec = { 0 };
	struct scan sc = { 0 };
	char key[300];
	int r;

	make_key(key, sizeof(key), container_id, ifname);
	r = record_read(s, c->network, key, &rec);
	if (r <= 0)
		return r;
	r = current_claims(s, c, &o, &rec, &sc);
	for (size_t k = 0; r >= 0 && k < sc.n; k++)
		r = release_if_ours(s, sc.f[k].pool, sc.f[k].addr, c->network, container_id,
				    ifname);
	record_clear(&rec);
	free(sc.f);
	/* the record goes last: until then a retried DEL still finds what is left */
	if (r >= 0)
		r = s->ops.record_del(s, c->network, key);
	return r < 0 ? r : 1;
}

int ipam_del(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
	     const char *ifname, struct cnispec_error *err)
{
	int r = del_key(s, c, container_id, ifname);

	/* renewed when due, never needed: a DEL works with etcd down */
	if (r >= 0 && ipam_store_blocks(s))
		ipam_blocks_lease(s, IPAM_LEASE_DEL);
	return r < 0 ? ipam_store_fail(s, r, false, err) : 0;
}

static bool prev_has(const struct cnispec_result *prev, const struct ipamconf_range *rg,
		     ipamconf_u128 a)
{
	struct cnispec_addr want;

	ipamconf_addr_from_u128(rg->family, a, &want);
	for (size_t i = 0; i < prev->n_ips; i++)
		if (cnispec_addr_equal(&prev->ips[i].address.addr, &want) &&
		    prev->ips[i].address.len == rg->subnet.len)
			return true;
	return false;
}

int ipam_check(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
	       const char *ifname, const struct cnispec_result *prev, struct cnispec_error *err)
{
	struct ipam_owner o = { .container_id = container_id, .ifname = ifname };
	struct held held[IPAMCONF_MAX_RANGESETS] = { 0 };
	struct record rec = { 0 };
	struct scan sc = { 0 };
	char key[300];
	int r;

	make_key(key, sizeof(key), container_id, ifname);
	r = record_read(s, c->network, key, &rec);
	if (r == 0)
		return cnispec_fail(err, -ENOENT, IPAM_E_CHECK, "no reservation",
				    "%s: no address is reserved for container %s interface %s",
				    c->network, container_id, ifname);
	if (r == 1 && rec.pending) {
		record_clear(&rec);
		return cnispec_fail(err, -ENOENT, IPAM_E_CHECK, "no reservation",
				    "%s: the ADD of container %s interface %s did not finish",
				    c->network, container_id, ifname);
	}
	if (r == 1)
		r = current_claims(s, c, &o, &rec, &sc);
	for (size_t k = 0; r == 0 && k < sc.n; k++)
		for (size_t i = 0; i < c->n_sets; i++) {
			ipamconf_u128 a;
			int j = held[i].have
					? -1
					: range_of(&c->sets[i], sc.f[k].pool, sc.f[k].addr, &a);

			if (j >= 0) {
				held[i] = (struct held){ .have = true, .range = j, .addr = a };
				break;
			}
		}
	record_clear(&rec);
	free(sc.f);
	if (r < 0)
		return ipam_store_fail(s, r, false, err);
	for (size_t i = 0; i < c->n_sets; i++) {
		const struct ipamconf_range *rg = &c->sets[i].r[held[i].range];
		char a[CNISPEC_PREFIX_STRLEN];

		if (!held[i].have)
			return cnispec_fail(err, -ENOENT, IPAM_E_CHECK, "reservation missing",
					    "%s: container %s interface %s holds no address of %s",
					    c->network, container_id, ifname, c->sets[i].r[0].text);
		if (prev && !prev_has(prev, rg, held[i].addr))
			return cnispec_fail(
				err, -EINVAL, IPAM_E_CHECK, "reservation differs",
				"%s: %s/%u is reserved for container %s interface %s but prevResult does not hold it",
				c->network, ipamconf_range_addr_str(rg, held[i].addr, a),
				rg->subnet.len, container_id, ifname);
	}
	return 0;
}

/* ---- GC, STATUS --------------------------------------------------------------------------------- */

struct gc {
	struct ipam_store *s;
	const struct ipamconf *c;
	ipam_valid_fn valid;
	void *ud;
	struct ipam_gc_stats *st;
	const char *pool;
	int first_error;
	char why[sizeof(((struct ipam_store *)0)->error)]; /* the first error's words */
	void (*junk)(void *ud, const char *path, const char *what, int removed); /* the caller's */
	void *junk_ud;
};

static void gc_error(struct gc *g, int r)
{
	g->st->errors++;
	if (!g->first_error) {
		g->first_error = r;
		snprintf(g->why, sizeof(g->why), "%s", g->s->error[0] ? g->s->error : strerror(-r));
	}
}

/* Junk a listing skipped: counted, and (unless repaired) an error that names it, reported
 * once the passes are done; the caller's own hook still hears of it. */
static void gc_junk(void *ud, const char *path, const char *what, int removed)
{
	struct gc *g = ud;

	if (g->junk)
		g->junk(g->junk_ud, path, what, removed);
	if (removed == 1) {
		g->st->repaired++;
		return;
	}
	g->st->junk++;
	snprintf(g->s->error, sizeof(g->s->error),
		 "%s is %s, not written by rdmak-ipam: skipped; "
		 "`rdmak ipam gc --repair` removes it",
		 path, what);
	gc_error(g, -EBADMSG);
}

/* Records: an attachment that is not valid is released as DEL would. */
static int gc_record(void *ud, const char *key, const char *value)
{
	struct gc *g = ud;
	char cid[256];
	const char *colon = strrchr(key, ':');
	int r;

	if (!colon || (size_t)(colon - key) >= sizeof(cid))
		return 0;
	memcpy(cid, key, (size_t)(colon - key));
	cid[colon - key] = '\0';
	if (g->valid(g->ud, cid, colon + 1)) {
		g->st->kept++;
		return 0;
	}
	r = del_key(g->s, g->c, cid, colon + 1);
	if (r < 0)
		gc_error(g, r);
	else
		g->st->released++;
	return 0;
}

/* Claims: this network's claims that no record names: the attachment has none (its DEL or the
 * record pass removed it), or a complete one that does not list the claim (what a killed ADD
 * left before its record said so), or a pending one while the attachment is not valid. A claim
 * a record still names stays, whatever the attachment: freeing it would leave the record naming
 * an address someone else may get (the record pass releases both together, or neither). */
static int gc_claim(void *ud, const char *addr, const char *value)
{
	struct gc *g = ud;
	json_t *v = json_loads(value, 0, NULL);
	const char *n = json_string_value(json_object_get(v, "network"));
	const char *cid = json_string_value(json_object_get(v, "containerID"));
	const char *ifn = json_string_value(json_object_get(v, "ifname"));
	bool orphan = false;
	int r = 0;

	if (n && cid && ifn && !strcmp(n, g->c->network)) {
		struct record rec = { 0 };
		char key[300], claim[200];

		make_key(key, sizeof(key), cid, ifn);
		snprintf(claim, sizeof(claim), "%s/%s", g->pool, addr);
		r = record_read(g->s, g->c->network, key, &rec);
		if (r == 0) {
			orphan = true;
		} else if (r == 1 && rec.pending) {
			orphan = !g->valid(g->ud, cid, ifn);
		} else if (r == 1) {
			orphan = true;
			for (size_t k = 0; k < rec.n && orphan; k++)
				orphan = strcmp(rec.claims[k], claim) != 0;
		}
		record_clear(&rec);
	}
	if (r >= 0 && orphan) {
		r = g->s->ops.release(g->s, g->pool, addr, value);
		if (r == 1)
			g->st->orphans++;
	}
	if (r < 0)
		gc_error(g, r);
	json_decref(v);
	return 0;
}

static int gc_blocks(struct ipam_store *s, const struct ipamconf_range *r,
		     struct ipam_gc_stats *st);

int ipam_gc(struct ipam_store *s, const struct ipamconf *c, ipam_valid_fn valid, void *ud,
	    struct ipam_gc_stats *stats, struct cnispec_error *err)
{
	struct ipam_gc_stats st = { 0 };
	struct gc g = { .s = s,
			.c = c,
			.valid = valid,
			.ud = ud,
			.st = &st,
			.junk = s->junk,
			.junk_ud = s->junk_ud };
	struct pool_names pools = { 0 };
	int r;

	s->junk = gc_junk;
	s->junk_ud = &g;
	/* the spec: remove as much as possible, continue past errors, report them */
	r = s->ops.record_list(s, c->network, gc_record, &g);
	if (r < 0)
		gc_error(&g, r);
	r = pools_of(s, c, true, &pools);
	if (r < 0)
		gc_error(&g, r);
	for (size_t i = 0; i < pools.n; i++) {
		g.pool = pools.v[i];
		r = s->ops.list(s, pools.v[i], gc_claim, &g);
		if (r < 0)
			gc_error(&g, r);
	}
	pool_names_clear(&pools);
	for (size_t i = 0; ipam_store_blocks(s) && i < c->n_sets; i++)
		for (size_t j = 0; j < c->sets[i].n; j++) {
			r = gc_blocks(s, &c->sets[i].r[j], &st);
			if (r < 0)
				gc_error(&g, r);
		}
	r = s->ops.tidy(s, &st.tidied);
	if (r < 0)
		gc_error(&g, r);
	/* the node's lease, with the claims GC left */
	if (ipam_store_blocks(s) && (r = ipam_blocks_lease(s, IPAM_LEASE_GC)) < 0)
		gc_error(&g, r);
	s->junk = g.junk;
	s->junk_ud = g.junk_ud;
	if (stats)
		*stats = st;
	if (!g.first_error)
		return 0;
	snprintf(s->error, sizeof(s->error), "%s", g.why);
	return ipam_store_fail(s, g.first_error, false, err);
}

/* Whether set has a free address: a count first (cheap), the precise listing only when the
 * count says the pool may be full. */
static int set_has_room(struct ipam_store *s, const struct ipamconf_rangeset *set)
{
	for (size_t j = 0; j < set->n; j++) {
		ipamconf_u128 size = ipamconf_range_size(&set->r[j]);
		struct used u = { 0 };
		size_t n = 0;
		int r;

		if (size == 0)
			continue;
		r = s->ops.count(s, set->r[j].pool, &n);
		if (r < 0)
			return r;
		if ((ipamconf_u128)n < size)
			return 1;
		r = read_used(s, &set->r[j], &u);
		free(u.v);
		if (r < 0)
			return r;
		if ((ipamconf_u128)u.n < size)
			return 1;
	}
	return 0;
}

int ipam_status(struct ipam_store *s, const struct ipamconf *c, struct cnispec_error *err)
{
	int r = s->ops.ping(s);

	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_UNAVAILABLE,
				    "the IPAM store cannot be reached", "%s store: %s",
				    s->driver->name, s->error[0] ? s->error : strerror(-r));
	for (size_t i = 0; i < c->n_sets; i++) {
		r = set_has_room(s, &c->sets[i]);
		if (r < 0)
			return ipam_store_fail(s, r, true, err);
		if (r == 0)
			return cnispec_fail(err, -ENOSPC, CNISPEC_E_UNAVAILABLE, "no free address",
					    "%s: every address of %s is in use", c->network,
					    c->sets[i].r[0].text);
	}
	return 0;
}

/* ---- per-node blocks: GC, reclaim ---------------------------------------------------------------- */

struct block_gc {
	struct blocks owned; /* the cluster's blocks of this node (values kept for the release) */
	char **values;
	struct ipam_gc_stats *st;
	const char *node;
};

static int owned_one(void *ud, const char *name, const char *value)
{
	struct block_gc *g = ud;
	ipamconf_u128 x;
	char **v;

	if (!block_first(&g->owned, name, &x) || !value_is_node(value, g->node))
		return 0;
	v = realloc(g->values, (g->owned.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	g->values = v;
	if (!(g->values[g->owned.n] = strdup(value)))
		return -ENOMEM;
	return blocks_add(&g->owned, x);
}

/* The value etcd holds for this node's block first (NULL: not this node's). */
static const char *owned_value(const struct block_gc *g, ipamconf_u128 first)
{
	for (size_t i = 0; i < g->owned.n; i++)
		if (g->owned.first[i] == first)
			return g->values[i];
	return NULL;
}

static size_t used_in(const struct used *u, ipamconf_u128 lo, ipamconf_u128 hi)
{
	size_t n = 0;

	for (size_t i = 0; i < u->n; i++)
		n += u->v[i] >= lo && u->v[i] <= hi;
	return n;
}

/* GC of one pool's blocks, under the pool's lock held exclusively (no ADD of this node
 * allocates meanwhile): the local list made to agree with etcd, and each block with no claim,
 * found empty for the grace period, given back: the local link first (from then on no ADD
 * here uses it), the etcd key second (a kill between leaves a block etcd says is ours, adopted
 * again by the next GC or block claim). */
static int gc_blocks(struct ipam_store *s, const struct ipamconf_range *r, struct ipam_gc_stats *st)
{
	struct block_gc g = { .owned = { .r = r, .size = ipam_store_blocks(s) },
			      .st = st,
			      .node = ipam_blocks_node(s) };
	struct blocks mine = g.owned;
	struct used u = { 0 };
	int fd, e;

	e = ipam_blocks_size_check(s, r->pool);
	if (e < 0)
		return e;
	fd = ipam_blocks_lock(s, r->pool, true);
	if (fd < 0)
		return fd;
	e = ipam_blocks_owners(s, r->pool, owned_one, &g);
	if (e >= 0)
		e = ipam_blocks_mine(s, r->pool, mine_one, &mine);
	blocks_sort(&mine);
	if (e >= 0)
		e = read_used(s, r, &u);
	for (size_t i = 0; e >= 0 && i < g.owned.n; i++) {
		char first[CNISPEC_PREFIX_STRLEN];

		if (blocks_has(&mine, g.owned.first[i]))
			continue;
		e = ipam_blocks_adopt(s, r->pool,
				      ipamconf_range_addr_str(r, g.owned.first[i], first),
				      g.values[i]);
		st->blocks_adopted += e >= 0;
	}
	for (size_t i = 0; e >= 0 && i < mine.n; i++) {
		ipamconf_u128 lo = mine.first[i], hi = lo + (mine.size - 1);
		const char *value = owned_value(&g, lo);
		char first[CNISPEC_PREFIX_STRLEN];
		long long age = 0;
		size_t n = used_in(&u, lo, hi);

		ipamconf_range_addr_str(r, lo, first);
		if (!value) {
			/* etcd does not say this node owns it (reclaimed by force): stop using it */
			e = ipam_blocks_forget(s, r->pool, first);
			st->blocks_dropped += e == 1;
			continue;
		}
		e = ipam_blocks_empty_for(s, r->pool, first, n == 0, &age);
		if (e < 0 || n > 0 || age < (long long)ipam_blocks_grace(s)) {
			st->blocks_kept++;
			continue;
		}
		e = ipam_blocks_forget(s, r->pool, first);
		if (e >= 0)
			e = ipam_blocks_release(s, r->pool, first, value, NULL);
		st->blocks_freed += e == 1;
	}
	close(fd);
	for (size_t i = 0; i < g.owned.n; i++)
		free(g.values[i]);
	free(g.values);
	free(g.owned.first);
	free(mine.first);
	free(u.v);
	return e < 0 ? e : 0;
}

struct reclaim {
	struct blocks b;
	char **values;
	const char *node;
	json_t *blocks, *overridden;
	const struct ipamconf_range *r;
	size_t nv;
};

static int reclaim_block(void *ud, const char *name, const char *value)
{
	struct reclaim *rc = ud;
	ipamconf_u128 x;
	char **v;

	if (!block_first(&rc->b, name, &x) || !value_is_node(value, rc->node))
		return 0;
	v = realloc(rc->values, (rc->nv + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc->values = v;
	if (!(rc->values[rc->nv++] = strdup(value)))
		return -ENOMEM;
	return blocks_add(&rc->b, x);
}

/* A claim of this store that lies in one of the node's blocks. */
static int reclaim_claim(void *ud, const char *addr, const char *value)
{
	struct reclaim *rc = ud;
	struct cnispec_addr a;
	ipamconf_u128 x;
	json_t *v, *row;

	if (cnispec_addr_parse(addr, &a) < 0 || a.family != rc->r->family)
		return 0;
	x = ipamconf_u128_from_addr(&a);
	for (size_t i = 0; i < rc->b.n; i++) {
		if (x < rc->b.first[i] || x > rc->b.first[i] + (rc->b.size - 1))
			continue;
		v = json_loads(value, 0, NULL);
		row = json_pack("{s:s, s:s, s:s, s:s}", "pool", rc->r->pool, "address", addr,
				"containerID",
				json_string_value(json_object_get(v, "containerID")) ?: "?",
				"ifname", json_string_value(json_object_get(v, "ifname")) ?: "?");
		json_decref(v);
		return row ? json_array_append_new(rc->overridden, row) : -ENOMEM;
	}
	return 0;
}

static const char *const node_states[] = {
	[IPAM_NODE_LIVE] = "live",
	[IPAM_NODE_EXPIRED] = "expired",
	[IPAM_NODE_NEVER] = "never",
};

/* What reclaim asks before it gives anything back: that the node's lease is gone. A live lease
 * is refused whatever --force says (the node renewed it by an ADD, DEL or GC within its TTL);
 * a node that never held one, or whose last renewal said it held claims, only with --force. */
static int reclaim_lease(struct ipam_store *s, const char *node, bool force, json_t *checked,
			 struct cnispec_error *err)
{
	struct ipam_node_lease nl;
	json_t *l;
	int r = ipam_blocks_node_lease(s, node, &nl);

	if (r < 0)
		return ipam_store_fail(s, r, false, err);
	l = json_pack("{s:s, s:s}", "key", nl.key, "state", node_states[nl.state]);
	if (!l || json_object_set_new(checked, "lease", l) < 0)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (nl.state != IPAM_NODE_NEVER) {
		json_object_set_new(l, "renewed", json_string(nl.renewed));
		json_object_set_new(l, "ttl", json_integer(nl.ttl));
		json_object_set_new(l, "claims", json_integer(nl.claims));
	}
	if (nl.state == IPAM_NODE_LIVE) {
		json_object_set_new(l, "expiresIn", json_integer(nl.left));
		return cnispec_fail(
			err, -EBUSY, CNISPEC_E_CONFIG, "the node is alive",
			"node %s renewed its lease %s at %s (its ADD, DEL or GC do), and it expires in "
			"%lld s unless renewed again: reclaim gives back only the blocks of a node whose "
			"lease has expired, --force or not",
			node, nl.key, nl.renewed, nl.left);
	}
	if (force)
		return 0;
	if (nl.state == IPAM_NODE_NEVER)
		return cnispec_fail(
			err, -EBUSY, CNISPEC_E_CONFIG, "nothing proves the node is gone",
			"node %s never renewed a lease in this store (%s: its rdmak-ipam predates "
			"leases, or it never took a block here); --force gives its blocks back on your "
			"word",
			node, nl.key);
	if (nl.claims > 0)
		return cnispec_fail(
			err, -EBUSY, CNISPEC_E_CONFIG, "the node's pods may hold addresses",
			"node %s's lease %s expired; its last renewal, at %s, said it held %lld claims, "
			"and nothing shows its pods are gone; --force gives its blocks back anyway",
			node, nl.key, nl.renewed, nl.claims);
	return 0;
}

int ipam_reclaim(struct ipam_store *s, const struct ipamconf *c, const char *node, bool force,
		 json_t **ret_report, struct cnispec_error *err)
{
	json_t *report = json_pack("{s:s, s:{}, s:[], s:[]}", "node", node, "checked", "blocks",
				   "overridden");
	json_t *checked = json_object_get(report, "checked");
	bool self = !strcmp(node, ipam_blocks_node(s));
	size_t kept = 0;
	int e = 0;

	if (!report)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	e = reclaim_lease(s, node, force, checked, err);
	if (e < 0) {
		*ret_report = report;
		return e;
	}
	/* then what this store (its dataDir) shows in the node's blocks, in every pool: refuse
	 * before anything is given back */
	for (int pass = 0; pass < 2 && e >= 0; pass++)
		for (size_t i = 0; e >= 0 && i < c->n_sets; i++)
			for (size_t j = 0; e >= 0 && j < c->sets[i].n; j++) {
				const struct ipamconf_range *r = &c->sets[i].r[j];
				struct reclaim rc = { .b = { .r = r, .size = ipam_store_blocks(s) },
						      .node = node,
						      .r = r,
						      .blocks = json_object_get(report, "blocks"),
						      .overridden = json_object_get(report,
										    "overridden") };

				e = pass == 0 ? ipam_blocks_size_check(s, r->pool) : 0;
				if (e >= 0)
					e = ipam_blocks_owners(s, r->pool, reclaim_block, &rc);
				if (e >= 0 && pass == 0)
					e = s->ops.list(s, r->pool, reclaim_claim, &rc);
				for (size_t k = 0; e >= 0 && pass == 1 && k < rc.b.n; k++) {
					char first[CNISPEC_PREFIX_STRLEN],
						last[CNISPEC_PREFIX_STRLEN];

					ipamconf_range_addr_str(r, rc.b.first[k], first);
					ipamconf_range_addr_str(r, rc.b.first[k] + (rc.b.size - 1),
								last);
					if (self)
						ipam_blocks_forget(s, r->pool, first);
					/* only while the node still holds no lease */
					e = ipam_blocks_release(s, r->pool, first, rc.values[k],
								node);
					kept += e == 0;
					if (e == 1)
						json_array_append_new(rc.blocks,
								      json_pack("{s:s, s:s, s:s}",
										"pool", r->pool,
										"first", first,
										"last", last));
				}
				for (size_t k = 0; k < rc.nv; k++)
					free(rc.values[k]);
				free(rc.values);
				free(rc.b.first);
				if (e >= 0 && pass == 0 && !force &&
				    json_array_size(rc.overridden)) {
					json_t *o = json_array_get(rc.overridden, 0);

					e = cnispec_fail(
						err, -EBUSY, CNISPEC_E_CONFIG,
						"the node still holds addresses",
						"node %s holds %zu claims in its blocks that this store shows (%s %s of "
						"%s:%s first); --force gives its blocks back anyway",
						node, json_array_size(rc.overridden),
						json_string_value(json_object_get(o, "pool")),
						json_string_value(json_object_get(o, "address")),
						json_string_value(
							json_object_get(o, "containerID")),
						json_string_value(json_object_get(o, "ifname")));
					*ret_report = report;
					return e;
				}
			}
	if (e < 0) {
		json_decref(report);
		return ipam_store_fail(s, e, false, err);
	}
	json_object_set_new(
		checked, "localClaims",
		json_pack("{s:s, s:b, s:I}", "dataDir",
			  c->store.data_dir ? c->store.data_dir : IPAMCONF_FILE_DEFAULT_DIR,
			  "thisNode", self, "found",
			  (json_int_t)json_array_size(json_object_get(report, "overridden"))));
	/* a block left: the node came back (renewed its lease) while reclaim ran, or another
	 * reclaim took it first */
	if (kept) {
		struct ipam_node_lease nl;

		if (ipam_blocks_node_lease(s, node, &nl) == 0 && nl.state == IPAM_NODE_LIVE) {
			*ret_report = report;
			return cnispec_fail(
				err, -EBUSY, CNISPEC_E_CONFIG, "the node is alive",
				"node %s renewed its lease %s while reclaim ran: %zu of its "
				"blocks stay its",
				node, nl.key, kept);
		}
	}
	*ret_report = report;
	return 0;
}

/* ---- the operator's views ------------------------------------------------------------------- */

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
	struct blocks b;
	json_t *rows;
};

static int block_row(void *ud, const char *name, const char *value)
{
	struct block_rows *br = ud;
	ipamconf_u128 x;
	json_t *v;

	if (!block_first(&br->b, name, &x))
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
	struct scan sc = { 0 };
	size_t released = 0;
	int r = s->ops.record_list(s, c->network, rel_match, &rl);

	for (size_t i = 0; r >= 0 && i < rl.n; i++) {
		char *colon = strrchr(rl.keys[i], ':');

		*colon = '\0';
		r = del_key(s, c, rl.keys[i], colon + 1);
		released += r == 1;
	}
	free(rl.keys);
	/* and what an interrupted ADD may have claimed without a record saying so */
	if (r >= 0)
		r = scan_claims(s, c, true, container_id, ifname, &sc);
	for (size_t k = 0; r >= 0 && k < sc.n; k++) {
		r = release_if_ours(s, sc.f[k].pool, sc.f[k].addr, c->network, container_id,
				    ifname);
		released += r == 1;
	}
	free(sc.f);
	if (r < 0)
		return ipam_store_fail(s, r, false, err);
	*ret_released = released;
	return 0;
}
