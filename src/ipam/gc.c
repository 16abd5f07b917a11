/* SPDX-License-Identifier: Apache-2.0 */
/* GC and STATUS, and the per-node blocks' housekeeping: a GC's pass over the blocks and
 * `rdmak ipam reclaim` of a node that is gone.
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
	r = ipam_del_key(g->s, g->c, cid, colon + 1);
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
		struct ipam_record rec = { 0 };
		char key[300], claim[200];

		ipam_make_key(key, sizeof(key), cid, ifn);
		snprintf(claim, sizeof(claim), "%s/%s", g->pool, addr);
		r = ipam_record_read(g->s, g->c->network, key, &rec);
		if (r == 0) {
			orphan = true;
		} else if (r == 1 && rec.pending) {
			orphan = !g->valid(g->ud, cid, ifn);
		} else if (r == 1) {
			orphan = true;
			for (size_t k = 0; k < rec.n && orphan; k++)
				orphan = strcmp(rec.claims[k], claim) != 0;
		}
		ipam_record_clear(&rec);
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
	struct ipam_pool_names pools = { 0 };
	int r;

	s->junk = gc_junk;
	s->junk_ud = &g;
	/* the spec: remove as much as possible, continue past errors, report them */
	r = s->ops.record_list(s, c->network, gc_record, &g);
	if (r < 0)
		gc_error(&g, r);
	r = ipam_pools_of(s, c, true, &pools);
	if (r < 0)
		gc_error(&g, r);
	for (size_t i = 0; i < pools.n; i++) {
		g.pool = pools.v[i];
		r = s->ops.list(s, pools.v[i], gc_claim, &g);
		if (r < 0)
			gc_error(&g, r);
	}
	ipam_pool_names_clear(&pools);
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
		struct ipam_used u = { 0 };
		size_t n = 0;
		int r;

		if (size == 0)
			continue;
		r = s->ops.count(s, set->r[j].pool, &n);
		if (r < 0)
			return r;
		if ((ipamconf_u128)n < size)
			return 1;
		r = ipam_read_used(s, &set->r[j], &u);
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
	struct ipam_block_set
		owned; /* the cluster's blocks of this node (values kept for the release) */
	char **values;
	struct ipam_gc_stats *st;
	const char *node;
};

static int owned_one(void *ud, const char *name, const char *value)
{
	struct block_gc *g = ud;
	ipamconf_u128 x;
	char **v;

	if (!ipam_block_first(&g->owned, name, &x) || !ipam_block_value_is_node(value, g->node))
		return 0;
	v = realloc(g->values, (g->owned.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	g->values = v;
	if (!(g->values[g->owned.n] = strdup(value)))
		return -ENOMEM;
	return ipam_block_set_add(&g->owned, x);
}

/* The value etcd holds for this node's block first (NULL: not this node's). */
static const char *owned_value(const struct block_gc *g, ipamconf_u128 first)
{
	for (size_t i = 0; i < g->owned.n; i++)
		if (g->owned.first[i] == first)
			return g->values[i];
	return NULL;
}

static size_t used_in(const struct ipam_used *u, ipamconf_u128 lo, ipamconf_u128 hi)
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
	struct ipam_block_set mine = g.owned;
	struct ipam_used u = { 0 };
	int fd, e;

	e = ipam_blocks_size_check(s, r->pool);
	if (e < 0)
		return e;
	fd = ipam_blocks_lock(s, r->pool, true);
	if (fd < 0)
		return fd;
	e = ipam_blocks_owners(s, r->pool, owned_one, &g);
	if (e >= 0)
		e = ipam_blocks_mine(s, r->pool, ipam_block_mine_one, &mine);
	ipam_block_set_sort(&mine);
	if (e >= 0)
		e = ipam_read_used(s, r, &u);
	for (size_t i = 0; e >= 0 && i < g.owned.n; i++) {
		char first[CNISPEC_PREFIX_STRLEN];

		if (ipam_block_set_has(&mine, g.owned.first[i]))
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
	struct ipam_block_set b;
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

	if (!ipam_block_first(&rc->b, name, &x) || !ipam_block_value_is_node(value, rc->node))
		return 0;
	v = realloc(rc->values, (rc->nv + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc->values = v;
	if (!(rc->values[rc->nv++] = strdup(value)))
		return -ENOMEM;
	return ipam_block_set_add(&rc->b, x);
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
