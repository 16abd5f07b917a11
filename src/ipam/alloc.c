/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator: one address of a range after the pool's cursor, unique across the pools
 * whose subnets overlap, and per-node blocks (store-blocks.c) of a cluster-wide pool.
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

#define FAST_TRIES 64 /* claims tried after the cursor before reading the whole pool */
#define SPREAD	   16

static unsigned spread_seed;

/* ---- allocation in one range ------------------------------------------------------------ */

static int used_one(void *ud, const char *name, const char *value)
{
	struct ipam_used *u = ud;
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

static bool is_used(const struct ipam_used *u, ipamconf_u128 a)
{
	/* no claims: v is NULL, which bsearch may not be given (glibc declares it nonnull) */
	return u->n && bsearch(&a, u->v, u->n, sizeof(*u->v), u128_cmp) != NULL;
}

/* The claims of r's pool that lie in r, sorted. */
int ipam_read_used(struct ipam_store *s, const struct ipamconf_range *r, struct ipam_used *u)
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

static int rival_one(void *ud, const char *name, const char *value)
{
	struct ipam_rival *rv = ud;
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
int ipam_claim_unique(struct ipam_store *s, const struct ipamconf_range *r, const char *text,
		      const char *value, struct ipam_rival *rv)
{
	struct cnispec_prefix own;
	int e = s->ops.claim(s, r->pool, text, value);

	*rv = (struct ipam_rival){ .s = s, .r = r, .text = text };
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

static int try_commit(struct ipam_store *s, const struct ipamconf_range *r, const char *text,
		      const char *value, const struct ipam_commit *cm)
{
	struct ipam_rival rv = { .s = s, .r = r, .text = text };
	struct cnispec_prefix own;
	_cleanup_free_ char *claim = NULL, *record = NULL;
	int e;

	if (!pool_subnet(r->pool, &own, &rv.prefix) || cnispec_addr_parse(text, &rv.addr) < 0)
		return -EINVAL;
	if (asprintf(&claim, "%s/%s", r->pool, text) < 0 || !(record = ipam_record_text(&claim, 1)))
		return -ENOMEM;
	e = s->ops.claim_commit(s, r->pool, text, value, cm->network, cm->key, record, rival_one,
				&rv);
	free(rv.owner);
	return e;
}

static int try_claim(struct ipam_store *s, const struct ipamconf_range *r, ipamconf_u128 a,
		     const char *value, const struct ipam_commit *cm)
{
	char text[CNISPEC_PREFIX_STRLEN];
	struct ipam_rival rv;
	int e;

	ipamconf_range_addr_str(r, a, text);
	if (cm)
		return try_commit(s, r, text, value, cm);
	e = ipam_claim_unique(s, r, text, value, &rv);

	free(rv.owner);
	if (e == 1)
		s->ops.cursor_put(s, r->pool,
				  text); /* a hint: its failure costs a few claims later */
	return e;
}

/* 1 and *ret: claimed; 0: r is full; <0 error. *ret_used: the count when full. */
int ipam_alloc_in_range(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			const struct ipam_commit *cm, ipamconf_u128 *ret, ipamconf_u128 *ret_used)
{
	ipamconf_u128 size = ipamconf_range_size(r), a, first;
	struct ipam_used u = { 0 };
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
	e = ipam_read_used(s, r, &u);
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

int ipam_block_set_add(struct ipam_block_set *b, ipamconf_u128 first)
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
bool ipam_block_first(const struct ipam_block_set *b, const char *name, ipamconf_u128 *ret)
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

int ipam_block_mine_one(void *ud, const char *name, const char *value)
{
	struct ipam_block_set *b = ud;
	ipamconf_u128 x;

	return ipam_block_first(b, name, &x) ? ipam_block_set_add(b, x) : 0;
}

bool ipam_block_value_is_node(const char *value, const char *node)
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
static int block_misfit(struct ipam_block_set *b, const char *name, const char *value)
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

int ipam_block_owner_one(void *ud, const char *name, const char *value)
{
	struct ipam_block_set *b = ud;
	ipamconf_u128 x;
	int r;

	if ((r = block_misfit(b, name, value)) < 0)
		return r;
	if (!ipam_block_first(b, name, &x))
		return 0;
	if (ipam_block_value_is_node(value, ipam_blocks_node(b->s))) {
		r = ipam_blocks_adopt(b->s, b->pool, name, value);
		if (r < 0)
			return r;
	}
	return ipam_block_set_add(b, x);
}

void ipam_block_set_sort(struct ipam_block_set *b)
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
	e = ipamconf_range_size(&sub) ? ipam_alloc_in_range(s, &sub, value, NULL, ret, &used) : 0;
	free(sub.excl);
	return e;
}

/* Allocate in this node's blocks, starting with the one holding the cursor (so that the order
 * after the cursor holds across blocks). */
static int alloc_in_mine(struct ipam_store *s, const struct ipamconf_range *r,
			 struct ipam_block_set *mine, const char *value, ipamconf_u128 *ret)
{
	_cleanup_free_ char *text = NULL;
	struct cnispec_addr a;
	size_t start = 0;
	int e;

	mine->n = 0;
	e = ipam_blocks_mine(s, r->pool, ipam_block_mine_one, mine);
	if (e < 0)
		return e;
	ipam_block_set_sort(mine);
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

bool ipam_block_set_has(const struct ipam_block_set *b, ipamconf_u128 first)
{
	/* a node with no block yet: first is NULL, which bsearch may not be given */
	return b->n && bsearch(&first, b->first, b->n, sizeof(*b->first), u128_cmp) != NULL;
}

/* A claim made while the lease held is only good if it still holds after it: a process stalled
 * between the two (past the lease, while a reclaim gave the block away) gives it back. */
int ipam_lease_still_held(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
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
int ipam_alloc_in_blocks(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			 ipamconf_u128 *ret, size_t *ret_blocks)
{
	struct ipam_block_set mine = { .r = r, .size = ipam_store_blocks(s) }, all = mine;
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
	e = ipam_blocks_owners(s, r->pool, ipam_block_owner_one, &all);
	if (e < 0)
		goto unlock;
	ipam_block_set_sort(&all);
	/* blocks of this node that only etcd knew of, adopted just now */
	e = alloc_in_mine(s, r, &mine, value, ret);
	if (e != 0)
		goto unlock;
	/* the first free cell of the grid that holds an address of the range */
	for (k = r->net + (r->start - r->net) / mine.size * mine.size; k <= r->end;
	     k += mine.size) {
		if (ipam_block_set_has(&all, k))
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
	return e == 1 ? ipam_lease_still_held(s, r, value, *ret) : e;
}

int ipam_block_set_full(struct ipam_store *s, const struct ipamconf_range *r, size_t n,
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
