/* SPDX-License-Identifier: Apache-2.0 */
/* ADD, DEL and CHECK, over any store (store.h).
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

#include "ipam/alloc.h"
#include "ipam/ipam.h"
#include "util/cleanup.h"

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
		 const struct ipam_found *f, size_t n, struct held *held)
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
			int r = ipam_release_if_ours(s, f[k].pool, f[k].addr, c->network,
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
			  const struct ipam_owner *o, const struct ipam_record *rec,
			  struct ipam_scan *sc)
{
	if (rec->pending)
		return ipam_scan_claims(s, c, true, o->container_id, o->ifname, sc);
	sc->network = c->network;
	sc->container_id = o->container_id;
	sc->ifname = o->ifname;
	for (size_t k = 0; k < rec->n; k++) {
		_cleanup_free_ char *v = NULL;
		char pool[96];
		const char *addr;
		int r;

		if (!ipam_split_claim(rec->claims[k], pool, sizeof(pool), &addr))
			continue;
		r = s->ops.get(s, pool, addr, &v);
		if (r < 0)
			return r;
		/* a claim that is gone or someone else's now (an operator's release) is not ours */
		if (r == 1 && ipam_owned_by(v, c->network, o->container_id, o->ifname)) {
			sc->pool = pool;
			if ((r = ipam_scan_one(sc, addr, v)) < 0)
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
		     const struct ipam_commit *cm, struct held *h, struct cnispec_error *err)
{
	ipamconf_u128 used[64] = { 0 };
	size_t blocks = 0;

	for (size_t j = 0; j < set->n; j++) {
		int r = ipam_store_blocks(s)
				? ipam_alloc_in_blocks(s, &set->r[j], value, &h->addr, &blocks)
				: ipam_alloc_in_range(s, &set->r[j], value, cm, &h->addr,
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
		return ipam_block_set_full(s, &set->r[set->n - 1], blocks, err);
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
	struct ipam_block_set mine = { .r = r, .size = ipam_store_blocks(s) }, all = mine;
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
		e = ipam_blocks_mine(s, r->pool, ipam_block_mine_one, &mine);
		ipam_block_set_sort(&mine);
		if (e >= 0 && ipam_block_set_has(&mine, cell)) {
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
		e = ipam_blocks_owners(s, r->pool, ipam_block_owner_one, &all);
		ipam_block_set_sort(&all);
		if (e >= 0 && !ipam_block_set_has(&all, cell))
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
	struct ipam_rival rv;
	json_t *v;
	int fd = -1, r;

	if (ipam_store_blocks(s) && (r = requested_block(s, rg, want, &fd, err)) <= 0)
		return r;
	r = ipam_claim_unique(s, rg, ipamconf_range_addr_str(rg, want, a), value, &rv);
	if (fd >= 0)
		close(fd);
	if (r == 1 && fd >= 0)
		r = ipam_lease_still_held(s, rg, value, want);
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
		r = ipam_record_write(s, c->network, key, claims, n);
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
		ipam_release_if_ours(s, rg->pool, ipamconf_range_addr_str(rg, held[i].addr, a),
				     c->network, o->container_id, o->ifname);
	}
	s->ops.record_del(s, c->network, key);
}

int ipam_add(struct ipam_store *s, const struct ipamconf *c, const struct ipam_owner *o,
	     struct cnispec_result **ret, struct cnispec_error *err)
{
	_cleanup_free_ char *value = ipam_owner_value(c, o);
	struct held held[IPAMCONF_MAX_RANGESETS] = { 0 };
	struct ipam_record rec = { 0 };
	struct ipam_scan sc = { 0 };
	char key[300];
	struct ipam_commit cm = { .network = c->network, .key = key };
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
	ipam_make_key(key, sizeof(key), o->container_id, o->ifname);
	r = ipam_record_read(s, c->network, key, &rec);
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
	ipam_record_clear(&rec);
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
int ipam_del_key(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
		 const char *ifname)
{
	struct ipam_owner o = { .container_id = container_id, .ifname = ifname };
	struct ipam_record rec = { 0 };
	struct ipam_scan sc = { 0 };
	char key[300];
	int r;

	ipam_make_key(key, sizeof(key), container_id, ifname);
	r = ipam_record_read(s, c->network, key, &rec);
	if (r <= 0)
		return r;
	r = current_claims(s, c, &o, &rec, &sc);
	for (size_t k = 0; r >= 0 && k < sc.n; k++)
		r = ipam_release_if_ours(s, sc.f[k].pool, sc.f[k].addr, c->network, container_id,
					 ifname);
	ipam_record_clear(&rec);
	free(sc.f);
	/* the record goes last: until then a retried DEL still finds what is left */
	if (r >= 0)
		r = s->ops.record_del(s, c->network, key);
	return r < 0 ? r : 1;
}

int ipam_del(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
	     const char *ifname, struct cnispec_error *err)
{
	int r = ipam_del_key(s, c, container_id, ifname);

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
	struct ipam_record rec = { 0 };
	struct ipam_scan sc = { 0 };
	char key[300];
	int r;

	ipam_make_key(key, sizeof(key), container_id, ifname);
	r = ipam_record_read(s, c->network, key, &rec);
	if (r == 0)
		return cnispec_fail(err, -ENOENT, IPAM_E_CHECK, "no reservation",
				    "%s: no address is reserved for container %s interface %s",
				    c->network, container_id, ifname);
	if (r == 1 && rec.pending) {
		ipam_record_clear(&rec);
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
	ipam_record_clear(&rec);
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
