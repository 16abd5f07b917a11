/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd store: rdmak-ipam's reservations cluster-wide, on etcd v3 (src/etcd).
 *
 * Keys, under the configured prefix P (default IPAMCONF_ETCD_DEFAULT_PREFIX):
 *   P/claims/<pool>/<address>   the owner of one handed-out address
 *   P/records/<network>/<key>   one attachment's state (<containerID>:<ifname>)
 *   P/cursors/<pool>            the address handed out last in the pool
 *   P/pools/<pool>              "" once the pool has held a claim (for pools())
 * and with per-node blocks (store-blocks.c):
 *   P/blocks/<pool>/<first>     the node that owns the block [first, last]
 *   P/blocksizes/<pool>         the pool's block size, stored with its first block
 *   P/leases/<node>             the node's last renewal, bound to an etcd lease: gone once the
 *                               lease expires unrenewed (the proof `rdmak ipam reclaim` asks for)
 *   P/nodes/<node>              the node's last renewal, kept
 * One small key per address: no global lock, no pool object rewritten per allocation.
 *
 * A pool is handed out one way: single-address claims, or blocks of one size. A claim's Txn
 * holds only while P/blocksizes/<pool> is absent; a block's only while it holds the block's
 * size, stored by the pool's first block while P/claims/<pool>/ is empty and P/pools/<pool>
 * (which every claim puts again) has not moved since that was read. A configuration that
 * disagrees gets -EXDEV, s->error naming both ways.
 *
 * Uniqueness rests on one Txn per claim: "if create_revision(P/claims/<pool>/<address>) == 0
 * then put it, else read it". etcd applies Txns one at a time in its raft log, so of any
 * number of racing claims for one address exactly one finds the key absent. A claim whose
 * answer was lost (the member died after applying it) is sent again to another member: the
 * second run finds the key with our own value and reports the claim ours, so a retry neither
 * loses the address nor hands it out twice. Release is the mirror: "if value == expect then
 * delete", so a late release never removes a claim someone else made since.
 *
 * Every read is linearizable (etcd's default): a member cut off from the quorum cannot answer
 * with stale claims; it times out and the client goes on to another member.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd.h"
#include "ipam/store.h"
#include "util/cleanup.h"

#define NAME_MAX_LEN 253

struct etcd_store {
	struct etcd_client *c;
	char *prefix; /* without a trailing '/' */
};

static struct etcd_store *ES(struct ipam_store *s)
{
	return s->priv;
}

/* A failed etcd call: the client's own words, which name the endpoint(s). */
static int fail_etcd(struct ipam_store *s, int r)
{
	const char *why = etcd_client_error(ES(s)->c);

	return ipam_store_error(s, r, "etcd: %s", why[0] ? why : strerror(-r));
}

/* A name that is one key segment: not empty, no '/'. */
static bool name_ok(const char *n)
{
	return n && *n && !strchr(n, '/') && strlen(n) <= NAME_MAX_LEN;
}

static int check_name(struct ipam_store *s, const char *what, const char *n)
{
	if (!name_ok(n))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not %s", n ? n : "", what);
	return 0;
}

static int check_value(struct ipam_store *s, const char *v)
{
	if (!v || !*v || strlen(v) > IPAM_STORE_VALUE_MAX)
		return ipam_store_error(s, -EINVAL, "a value must hold 1 to %d bytes",
					IPAM_STORE_VALUE_MAX);
	return 0;
}

/* "<prefix>/<kind>/<a>[/<b>]", or with b == "" the folder "<prefix>/<kind>/<a>/". */
static char *key_of(struct ipam_store *s, const char *kind, const char *a, const char *b)
{
	char *k = NULL;
	int n;

	if (!a)
		n = asprintf(&k, "%s/%s/", ES(s)->prefix, kind);
	else if (!b)
		n = asprintf(&k, "%s/%s/%s", ES(s)->prefix, kind, a);
	else
		n = asprintf(&k, "%s/%s/%s/%s", ES(s)->prefix, kind, a, b);
	return n < 0 ? NULL : k;
}

/* --- claims ------------------------------------------------------------------------------- */

static bool kv_is(const struct etcd_kvs *kv, const char *value)
{
	return kv && kv->n == 1 && kv->kvs[0].value_len == strlen(value) &&
	       memcmp(kv->kvs[0].value, value, kv->kvs[0].value_len) == 0;
}

/* A single-address claim in a pool handed out in blocks (its size key, read in the Txn that
 * failed): -EXDEV naming both ways. */
static int block_pool(struct ipam_store *s, const char *pool, const struct etcd_kvs *size)
{
	return ipam_store_error(
		s, -EXDEV,
		"pool %s is handed out to nodes in blocks of %.*s addresses (perNodeBlockSize, "
		"stored with the pool at its first block), and this configuration claims single "
		"addresses (no perNodeBlockSize): give it \"perNodeBlockSize\": %.*s",
		pool, (int)size->kvs[0].value_len, size->kvs[0].value, (int)size->kvs[0].value_len,
		size->kvs[0].value);
}

/* "if create_revision(claim) == 0 and the pool has no block size then put it and the pool's
 * key": 1 made (or made by this very value before), 0 taken, <0. */
static int etcd_store_claim(struct ipam_store *s, const char *pool, const char *address,
			    const char *value)
{
	_cleanup_free_ char *key = NULL, *pkey = NULL, *skey = NULL;
	struct etcd_txn_result res = { 0 };
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", address)) < 0 || (r = check_value(s, value)) < 0)
		return r;
	key = key_of(s, "claims", pool, address);
	pkey = key_of(s, "pools", pool, NULL);
	skey = key_of(s, "blocksizes", pool, NULL);
	if (!key || !pkey || !skey)
		return -ENOMEM;
	/* The pool's key is put without a compare: it never makes two claims conflict. */
	r = etcd_txn(ES(s)->c,
		     (struct etcd_compare[]){ { .key = key,
						.target = ETCD_CMP_CREATE,
						.result = ETCD_CMP_EQUAL,
						.number = 0 },
					      { .key = skey,
						.target = ETCD_CMP_CREATE,
						.result = ETCD_CMP_EQUAL,
						.number = 0 } },
		     2,
		     (struct etcd_op[]){
			     { .type = ETCD_OP_PUT,
			       .key = key,
			       .value = value,
			       .value_len = strlen(value) },
			     { .type = ETCD_OP_PUT, .key = pkey, .value = "", .value_len = 0 } },
		     2,
		     (struct etcd_op[]){ { .type = ETCD_OP_RANGE, .key = key },
					 { .type = ETCD_OP_RANGE, .key = skey } },
		     2, &res);
	if (r < 0)
		return fail_etcd(s, r);
	if (r == 0 && res.n_ops == 2 && res.ops[1].range.n == 1)
		r = block_pool(s, pool, &res.ops[1].range);
	else if (r == 0)
		/* Taken: by someone else, or by this very claim sent earlier to a member that
		 * applied it and died before answering. */
		r = kv_is(res.n_ops == 2 ? &res.ops[0].range : NULL, value);
	etcd_txn_result_clear(&res);
	return r;
}

static int etcd_store_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud);

/* The whole of a new attachment's write, one Txn (docs/ipam.md, "etcd"): where ADD used to put
 * its record pending, claim, put the cursor and put the record again (three Puts and a Txn,
 * each a raft entry and a WAL fsync on every member), "if create_revision(claim) == 0 then put
 * the claim, the record, the cursor and the pool's key, and read the pools' folder" is one.
 * No pending record is needed: the claim and the record naming it appear together, so no kill
 * can leave one without the other. The pools' folder read in the same Txn is the overlap look
 * at the claim's own revision (claim first, look second, as ipam_claim_unique() in alloc.c). */
static int etcd_store_claim_commit(struct ipam_store *s, const char *pool, const char *address,
				   const char *value, const char *network, const char *rkey,
				   const char *record, ipam_store_each_fn look, void *ud)
{
	_cleanup_free_ char *key = NULL, *pkey = NULL, *ckey = NULL, *reckey = NULL, *folder = NULL,
			    *skey = NULL;
	struct etcd_txn_result res = { 0 };
	bool undo = false;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", address)) < 0 || (r = check_value(s, value)) < 0 ||
	    (r = check_name(s, "a network name", network)) < 0 ||
	    (r = check_name(s, "an attachment key", rkey)) < 0 || (r = check_value(s, record)) < 0)
		return r;
	key = key_of(s, "claims", pool, address);
	pkey = key_of(s, "pools", pool, NULL);
	ckey = key_of(s, "cursors", pool, NULL);
	reckey = key_of(s, "records", network, rkey);
	folder = key_of(s, "pools", NULL, NULL);
	skey = key_of(s, "blocksizes", pool, NULL);
	if (!key || !pkey || !ckey || !reckey || !folder || !skey)
		return -ENOMEM;
	r = etcd_txn(ES(s)->c,
		     (struct etcd_compare[]){ { .key = key,
						.target = ETCD_CMP_CREATE,
						.result = ETCD_CMP_EQUAL,
						.number = 0 },
					      { .key = skey,
						.target = ETCD_CMP_CREATE,
						.result = ETCD_CMP_EQUAL,
						.number = 0 } },
		     2,
		     (struct etcd_op[]){
			     { .type = ETCD_OP_PUT,
			       .key = key,
			       .value = value,
			       .value_len = strlen(value) },
			     { .type = ETCD_OP_PUT,
			       .key = reckey,
			       .value = record,
			       .value_len = strlen(record) },
			     { .type = ETCD_OP_PUT,
			       .key = ckey,
			       .value = address,
			       .value_len = strlen(address) },
			     { .type = ETCD_OP_PUT, .key = pkey, .value = "", .value_len = 0 },
			     { .type = ETCD_OP_RANGE,
			       .key = folder,
			       .prefix = true,
			       .keys_only = true } },
		     5,
		     (struct etcd_op[]){ { .type = ETCD_OP_RANGE, .key = key },
					 { .type = ETCD_OP_RANGE, .key = skey } },
		     2, &res);
	if (r < 0)
		return fail_etcd(s, r);
	if (r == 0 && res.n_ops == 2 && res.ops[1].range.n == 1) {
		r = block_pool(s, pool, &res.ops[1].range);
		etcd_txn_result_clear(&res);
		return r;
	}
	if (r == 1) {
		const struct etcd_kvs *pools = res.n_ops == 5 ? &res.ops[4].range : NULL;
		size_t skip = strlen(folder);

		for (size_t i = 0; pools && i < pools->n && !undo; i++)
			if (name_ok(pools->kvs[i].key + skip) &&
			    look(ud, pools->kvs[i].key + skip, NULL) != 0)
				undo = true;
	} else {
		/* taken, or this very Txn applied by a member that died before answering: then the
		 * record and cursor are written too, and the look is made now */
		if (kv_is(res.n_ops == 2 ? &res.ops[0].range : NULL, value)) {
			r = 1;
			undo = etcd_store_pools(s, look, ud) != 0;
		}
	}
	etcd_txn_result_clear(&res);
	if (undo) {
		/* a look found the address in another pool: give it back if it is still ours, and
		 * the record to pending in the same Txn, so that no record names a released claim */
		int u = etcd_txn(ES(s)->c,
				 &(struct etcd_compare){ .key = key,
							 .target = ETCD_CMP_VALUE,
							 .result = ETCD_CMP_EQUAL,
							 .value = value,
							 .value_len = strlen(value) },
				 1,
				 (struct etcd_op[]){ { .type = ETCD_OP_DELETE, .key = key },
						     { .type = ETCD_OP_PUT,
						       .key = reckey,
						       .value = IPAM_RECORD_PENDING,
						       .value_len = strlen(IPAM_RECORD_PENDING) } },
				 2, NULL, 0, NULL);

		if (u < 0)
			return fail_etcd(s, u);
		r = 0;
	}
	return r;
}

static int get_value(struct ipam_store *s, const char *key, char **ret)
{
	struct etcd_kv kv = { 0 };
	int r = etcd_get(ES(s)->c, key, &kv);

	if (r < 0)
		return fail_etcd(s, r);
	if (r == 1) {
		*ret = TAKE_PTR(kv.value);
		etcd_kv_clear(&kv);
	}
	return r;
}

static int etcd_store_get(struct ipam_store *s, const char *pool, const char *address, char **ret)
{
	_cleanup_free_ char *key = NULL;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", address)) < 0)
		return r;
	key = key_of(s, "claims", pool, address);
	return key ? get_value(s, key, ret) : -ENOMEM;
}

/* "if key's value is expect (and unless_key does not exist) then delete key": 1 deleted, 0 not.
 * etcd fails a value compare on an absent key, so "absent" and "another owner" both leave the
 * store as it was and answer 0: a late release never removes what someone else made since. */
static int delete_if(struct ipam_store *s, const char *key, const char *expect,
		     const char *unless_key)
{
	int r = etcd_txn(ES(s)->c,
			 (struct etcd_compare[]){ { .key = key,
						    .target = ETCD_CMP_VALUE,
						    .result = ETCD_CMP_EQUAL,
						    .value = expect,
						    .value_len = strlen(expect) },
						  { .key = unless_key,
						    .target = ETCD_CMP_CREATE,
						    .result = ETCD_CMP_EQUAL,
						    .number = 0 } },
			 unless_key ? 2 : 1,
			 &(struct etcd_op){ .type = ETCD_OP_DELETE, .key = key }, 1, NULL, 0, NULL);

	return r < 0 ? fail_etcd(s, r) : r;
}

static int etcd_store_release(struct ipam_store *s, const char *pool, const char *address,
			      const char *expect)
{
	_cleanup_free_ char *key = NULL;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", address)) < 0 || (r = check_value(s, expect)) < 0)
		return r;
	key = key_of(s, "claims", pool, address);
	return key ? delete_if(s, key, expect, NULL) : -ENOMEM;
}

/* Calls fn(name, value) for every key under folder, name being the key less the folder. */
static int list_folder(struct ipam_store *s, const char *folder, ipam_store_each_fn fn, void *ud)
{
	struct etcd_kvs all = { 0 };
	size_t skip = strlen(folder);
	int r = etcd_range_prefix_all(ES(s)->c, folder, false, &all);

	if (r < 0)
		return fail_etcd(s, r);
	for (size_t i = 0; i < all.n && r == 0; i++) {
		const char *name = all.kvs[i].key + skip;

		/* Only our own keys are one segment below the folder; skip anything else. */
		if (name_ok(name))
			r = fn(ud, name, all.kvs[i].value);
	}
	etcd_kvs_clear(&all);
	return r;
}

static int etcd_store_list(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud)
{
	_cleanup_free_ char *folder = NULL;
	int r = check_name(s, "a pool name", pool);

	if (r < 0)
		return r;
	folder = key_of(s, "claims", pool, "");
	return folder ? list_folder(s, folder, fn, ud) : -ENOMEM;
}

static int etcd_store_count(struct ipam_store *s, const char *pool, size_t *ret)
{
	_cleanup_free_ char *folder = NULL;
	struct etcd_kvs res = { 0 };
	int r = check_name(s, "a pool name", pool);

	if (r < 0)
		return r;
	folder = key_of(s, "claims", pool, "");
	if (!folder)
		return -ENOMEM;
	r = etcd_range(ES(s)->c, folder,
		       &(struct etcd_range_opts){ .prefix = true, .count_only = true }, &res);
	if (r < 0)
		return fail_etcd(s, r);
	*ret = (size_t)res.count;
	etcd_kvs_clear(&res);
	return 0;
}

/* --- pools ---------------------------------------------------------------------------------- */

struct names {
	char **v;
	size_t n;
};

static int name_add(void *ud, const char *name, const char *value)
{
	struct names *n = ud;
	char **v = realloc(n->v, (n->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	n->v = v;
	if (!(n->v[n->n] = strdup(name)))
		return -ENOMEM;
	n->n++;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every pool that holds or held claims: each successful claim also puts the pool's key under
 * P/pools/ in its Txn, so this is a prefix read however many claims there are; pools with a
 * cursor (an allocator searched them), as the file store lists them, are added. */
static int etcd_store_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud)
{
	_cleanup_free_ char *pools = key_of(s, "pools", NULL, NULL),
			    *cursors = key_of(s, "cursors", NULL, NULL);
	struct names n = { 0 };
	int r;

	if (!pools || !cursors)
		return -ENOMEM;
	r = list_folder(s, pools, name_add, &n);
	if (r >= 0)
		r = list_folder(s, cursors, name_add, &n);
	if (r >= 0 && n.n)
		qsort(n.v, n.n, sizeof(*n.v), cmp_name);
	for (size_t i = 0; r == 0 && i < n.n; i++)
		if (i == 0 || strcmp(n.v[i], n.v[i - 1]) != 0)
			r = fn(ud, n.v[i], NULL);
	for (size_t i = 0; i < n.n; i++)
		free(n.v[i]);
	free(n.v);
	return r;
}

/* --- records ------------------------------------------------------------------------------ */

static int record_key(struct ipam_store *s, const char *network, const char *key, char **ret)
{
	int r;

	if ((r = check_name(s, "a network name", network)) < 0 ||
	    (r = check_name(s, "an attachment key", key)) < 0)
		return r;
	*ret = key_of(s, "records", network, key);
	return *ret ? 0 : -ENOMEM;
}

static int etcd_store_record_get(struct ipam_store *s, const char *network, const char *key,
				 char **ret)
{
	_cleanup_free_ char *k = NULL;
	int r = record_key(s, network, key, &k);

	return r < 0 ? r : get_value(s, k, ret);
}

static int etcd_store_record_put(struct ipam_store *s, const char *network, const char *key,
				 const char *value)
{
	_cleanup_free_ char *k = NULL;
	int r = record_key(s, network, key, &k);

	if (r < 0 || (r = check_value(s, value)) < 0)
		return r;
	r = etcd_put(ES(s)->c, k, value, strlen(value), NULL);
	return r < 0 ? fail_etcd(s, r) : 0;
}

static int etcd_store_record_del(struct ipam_store *s, const char *network, const char *key)
{
	_cleanup_free_ char *k = NULL;
	int64_t n = 0;
	int r = record_key(s, network, key, &k);

	if (r < 0)
		return r;
	r = etcd_delete(ES(s)->c, k, false, &n);
	return r < 0 ? fail_etcd(s, r) : n > 0;
}

static int etcd_store_record_list(struct ipam_store *s, const char *network, ipam_store_each_fn fn,
				  void *ud)
{
	_cleanup_free_ char *folder = NULL;
	int r = check_name(s, "a network name", network);

	if (r < 0)
		return r;
	folder = key_of(s, "records", network, "");
	return folder ? list_folder(s, folder, fn, ud) : -ENOMEM;
}

/* --- cursors ------------------------------------------------------------------------------ */

static int etcd_store_cursor_get(struct ipam_store *s, const char *pool, char **ret)
{
	_cleanup_free_ char *key = NULL;
	int r = check_name(s, "a pool name", pool);

	if (r < 0)
		return r;
	key = key_of(s, "cursors", pool, NULL);
	return key ? get_value(s, key, ret) : -ENOMEM;
}

/* A plain put: racing allocators may move the cursor back a little (the last writer wins),
 * which only makes the next search start a few taken addresses early. */
static int etcd_store_cursor_put(struct ipam_store *s, const char *pool, const char *address)
{
	_cleanup_free_ char *key = NULL;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", address)) < 0)
		return r;
	key = key_of(s, "cursors", pool, NULL);
	if (!key)
		return -ENOMEM;
	r = etcd_put(ES(s)->c, key, address, strlen(address), NULL);
	return r < 0 ? fail_etcd(s, r) : 0;
}

/* --- per-node blocks (store-blocks.c) ---------------------------------------------------------- */

static int etcd_store_block_list(struct ipam_store *s, const char *pool, ipam_store_each_fn fn,
				 void *ud)
{
	_cleanup_free_ char *folder = NULL;
	int r = check_name(s, "a pool name", pool);

	if (r < 0)
		return r;
	folder = key_of(s, "blocks", pool, "");
	return folder ? list_folder(s, folder, fn, ud) : -ENOMEM;
}

/* One owner per block, one size per pool: "if create_revision(block) == 0 and the pool's size is
 * ours then put the block, else read the block, the size, the pool's key and whether the pool
 * holds a single-address claim". A pool with no size yet gets ours with its first block: "if
 * the size key is absent, the pool's key is as read (absent, or at the revision read with no
 * claim under P/claims/<pool>/) and the block is free, then put both" (every single-address
 * claim puts the pool's key again, so one made in between fails it, and the first Txn is read
 * again). */
static int etcd_store_block_claim(struct ipam_store *s, const char *pool, const char *first,
				  const char *value, unsigned size)
{
	_cleanup_free_ char *key = NULL, *skey = NULL, *pkey = NULL, *claims = NULL;
	char sz[16];
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", first)) < 0 || (r = check_value(s, value)) < 0)
		return r;
	key = key_of(s, "blocks", pool, first);
	skey = key_of(s, "blocksizes", pool, NULL);
	pkey = key_of(s, "pools", pool, NULL);
	claims = key_of(s, "claims", pool, "");
	if (!key || !skey || !pkey || !claims)
		return -ENOMEM;
	snprintf(sz, sizeof(sz), "%u", size);
	for (int tries = 0; tries < 8; tries++) {
		struct etcd_compare first_block[3] = {
			{ .key = skey, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL },
			{ .key = pkey, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL },
			{ .key = key, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL },
		};
		struct etcd_txn_result res = { 0 };
		const struct etcd_kvs *have, *pk, *cl;

		r = etcd_txn(ES(s)->c,
			     (struct etcd_compare[]){ { .key = key,
							.target = ETCD_CMP_CREATE,
							.result = ETCD_CMP_EQUAL,
							.number = 0 },
						      { .key = skey,
							.target = ETCD_CMP_VALUE,
							.result = ETCD_CMP_EQUAL,
							.value = sz,
							.value_len = strlen(sz) } },
			     2,
			     &(struct etcd_op){ .type = ETCD_OP_PUT,
						.key = key,
						.value = value,
						.value_len = strlen(value) },
			     1,
			     (struct etcd_op[]){ { .type = ETCD_OP_RANGE, .key = key },
						 { .type = ETCD_OP_RANGE, .key = skey },
						 { .type = ETCD_OP_RANGE, .key = pkey },
						 { .type = ETCD_OP_RANGE,
						   .key = claims,
						   .prefix = true,
						   .limit = 1,
						   .keys_only = true } },
			     4, &res);
		if (r < 0)
			return fail_etcd(s, r);
		if (r == 1 || res.n_ops != 4) {
			etcd_txn_result_clear(&res);
			return r == 1 ? 1
				      : ipam_store_error(s, -EPROTO,
							 "etcd: a Txn answered without its reads");
		}
		have = &res.ops[1].range;
		pk = &res.ops[2].range;
		cl = &res.ops[3].range;
		if (have->n == 1 && !kv_is(have, sz))
			r = ipam_store_error(
				s, -EXDEV,
				"pool %s is handed out to nodes in blocks of %.*s addresses "
				"(perNodeBlockSize, stored with the pool at its first block), and this "
				"configuration says %s: write \"perNodeBlockSize\": %.*s",
				pool, (int)have->kvs[0].value_len, have->kvs[0].value, sz,
				(int)have->kvs[0].value_len, have->kvs[0].value);
		else if (have->n == 1)
			/* taken: by another node, or by this very claim retried */
			r = kv_is(&res.ops[0].range, value);
		else if (cl->n)
			r = ipam_store_error(
				s, -EXDEV,
				"pool %s holds single-address claims (of a configuration without "
				"perNodeBlockSize), and this configuration hands it out in blocks of %s: "
				"remove \"perNodeBlockSize\" (or give this network a pool of its own)",
				pool, sz);
		else if (res.ops[0].range.n == 1)
			/* a block from before the pool stored its size, taken */
			r = kv_is(&res.ops[0].range, value);
		else
			r = -EAGAIN;
		if (r == -EAGAIN && pk->n == 1)
			first_block[1] = (struct etcd_compare){ .key = pkey,
								.target = ETCD_CMP_MOD,
								.result = ETCD_CMP_EQUAL,
								.number = pk->kvs[0].mod_revision };
		etcd_txn_result_clear(&res);
		if (r != -EAGAIN)
			return r;
		r = etcd_txn(ES(s)->c, first_block, 3,
			     (struct etcd_op[]){ { .type = ETCD_OP_PUT,
						   .key = skey,
						   .value = sz,
						   .value_len = strlen(sz) },
						 { .type = ETCD_OP_PUT,
						   .key = key,
						   .value = value,
						   .value_len = strlen(value) } },
			     2, NULL, 0, NULL);
		if (r != 0)
			return r < 0 ? fail_etcd(s, r) : 1;
	}
	return ipam_store_error(
		s, -EBUSY, "pool %s: its block size could not be stored (the pool kept changing)",
		pool);
}

static int etcd_store_block_size(struct ipam_store *s, const char *pool, unsigned *ret)
{
	_cleanup_free_ char *skey = NULL, *v = NULL;
	char *end;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0)
		return r;
	if (!(skey = key_of(s, "blocksizes", pool, NULL)))
		return -ENOMEM;
	r = get_value(s, skey, &v);
	if (r == 1) {
		unsigned long n = strtoul(v, &end, 10);

		if (*end || !n || n > UINT32_MAX)
			return ipam_store_error(s, -EBADMSG, "%s: \"%s\" is not a block size", skey,
						v);
		*ret = (unsigned)n;
	}
	return r;
}

/* A release that must not race the node coming back: with unless_alive, the Txn also asks that
 * the node's lease key be absent, so a node that renewed since its lease was read keeps its
 * blocks. */
static int etcd_store_block_release(struct ipam_store *s, const char *pool, const char *first,
				    const char *expect, const char *unless_alive)
{
	_cleanup_free_ char *key = NULL, *lkey = NULL;
	int r;

	if ((r = check_name(s, "a pool name", pool)) < 0 ||
	    (r = check_name(s, "an address", first)) < 0 || (r = check_value(s, expect)) < 0 ||
	    (unless_alive && (r = check_name(s, "a node name", unless_alive)) < 0))
		return r;
	key = key_of(s, "blocks", pool, first);
	lkey = unless_alive ? key_of(s, "leases", unless_alive, NULL) : NULL;
	if (!key || (unless_alive && !lkey))
		return -ENOMEM;
	return delete_if(s, key, expect, lkey);
}

/* --- per-node leases -------------------------------------------------------------------------- */

static int etcd_store_lease_renew(struct ipam_store *s, const char *node, const char *value,
				  unsigned ttl, long long *ret_ttl)
{
	_cleanup_free_ char *lkey = NULL, *nkey = NULL;
	int64_t id, granted;
	int r;

	if ((r = check_name(s, "a node name", node)) < 0 || (r = check_value(s, value)) < 0)
		return r;
	lkey = key_of(s, "leases", node, NULL);
	nkey = key_of(s, "nodes", node, NULL);
	if (!lkey || !nkey)
		return -ENOMEM;
	r = etcd_lease_grant(ES(s)->c, ttl, &id, &granted);
	if (r < 0)
		return fail_etcd(s, r);
	/* both in one step: the kept key never says more than the live one did */
	r = etcd_txn(ES(s)->c, NULL, 0,
		     (struct etcd_op[]){ { .type = ETCD_OP_PUT,
					   .key = lkey,
					   .value = value,
					   .value_len = strlen(value),
					   .lease = id },
					 { .type = ETCD_OP_PUT,
					   .key = nkey,
					   .value = value,
					   .value_len = strlen(value) } },
		     2, NULL, 0, NULL);
	if (r < 0)
		return fail_etcd(s, r);
	*ret_ttl = granted;
	return 0;
}

static int etcd_store_lease_read(struct ipam_store *s, const char *node, char **ret_live,
				 long long *ret_left, char **ret_last)
{
	_cleanup_free_ char *lkey = NULL, *nkey = NULL;
	struct etcd_txn_result res = { 0 };
	int64_t left = 0;
	int r;

	if ((r = check_name(s, "a node name", node)) < 0)
		return r;
	lkey = key_of(s, "leases", node, NULL);
	nkey = key_of(s, "nodes", node, NULL);
	if (!lkey || !nkey)
		return -ENOMEM;
	/* one read of both, at one revision */
	r = etcd_txn(ES(s)->c, NULL, 0,
		     (struct etcd_op[]){ { .type = ETCD_OP_RANGE, .key = lkey },
					 { .type = ETCD_OP_RANGE, .key = nkey } },
		     2, NULL, 0, &res);
	if (r < 0)
		return fail_etcd(s, r);
	*ret_live = *ret_last = NULL;
	*ret_left = 0;
	if (res.n_ops == 2 && res.ops[0].range.n == 1) {
		const struct etcd_kv *kv = &res.ops[0].range.kvs[0];

		/* the time left is the lease's: 0 when it expired between the two reads */
		r = kv->lease ? etcd_lease_ttl(ES(s)->c, kv->lease, &left, NULL) : 0;
		if (r < 0) {
			etcd_txn_result_clear(&res);
			return fail_etcd(s, r);
		}
		*ret_live = TAKE_PTR(res.ops[0].range.kvs[0].value);
		*ret_left = left;
	}
	if (res.n_ops == 2 && res.ops[1].range.n == 1)
		*ret_last = TAKE_PTR(res.ops[1].range.kvs[0].value);
	etcd_txn_result_clear(&res);
	return 0;
}

/* --- the store ---------------------------------------------------------------------------- */

/* STATUS: a linearizable read, which a member answers only with a quorum behind it, so "up"
 * means what ADD needs (a reachable member that lost its quorum counts as down). */
static int etcd_store_ping(struct ipam_store *s)
{
	struct etcd_kvs res = { 0 };
	int r = etcd_range(ES(s)->c, ES(s)->prefix, &(struct etcd_range_opts){ .count_only = true },
			   &res);

	if (r < 0)
		return fail_etcd(s, r);
	etcd_kvs_clear(&res);
	return 0;
}

static void etcd_store_close(struct ipam_store *s)
{
	struct etcd_store *es = ES(s);

	if (!es)
		return;
	etcd_client_free(es->c);
	free(es->prefix);
	free(es);
	s->priv = NULL;
}

static int etcd_store_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	struct etcd_config ec = {
		.endpoints = (const char *const *)cfg->endpoints,
		.n_endpoints = cfg->n_endpoints,
		.ca_file = cfg->tls_ca,
		.cert_file = cfg->tls_cert,
		.key_file = cfg->tls_key,
	};
	const char *prefix =
		cfg->prefix && cfg->prefix[0] ? cfg->prefix : IPAMCONF_ETCD_DEFAULT_PREFIX;
	_cleanup_free_ char *why = NULL;
	struct etcd_store *es;
	size_t len = strlen(prefix);
	int r;

	while (len > 1 && prefix[len - 1] == '/')
		len--;
	if (len == 0 || (len == 1 && prefix[0] == '/'))
		return ipam_store_error(s, -EINVAL,
					"etcd prefix \"%s\" is empty: give a folder such as %s",
					prefix, IPAMCONF_ETCD_DEFAULT_PREFIX);
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	es->prefix = strndup(prefix, len);
	if (!es->prefix) {
		free(es);
		return -ENOMEM;
	}
	r = etcd_client_new(&ec, &es->c, &why);
	if (r < 0) {
		free(es->prefix);
		free(es);
		return ipam_store_error(s, r, "%s", why ? why : strerror(-r));
	}
	s->priv = es;
	return 0;
}

static const struct ipam_store_ops etcd_store_ops = {
	.ping = etcd_store_ping,
	.claim = etcd_store_claim,
	.get = etcd_store_get,
	.release = etcd_store_release,
	.list = etcd_store_list,
	.count = etcd_store_count,
	.pools = etcd_store_pools,
	.record_get = etcd_store_record_get,
	.record_put = etcd_store_record_put,
	.record_del = etcd_store_record_del,
	.record_list = etcd_store_record_list,
	.claim_commit = etcd_store_claim_commit,
	.block_list = etcd_store_block_list,
	.block_claim = etcd_store_block_claim,
	.block_release = etcd_store_block_release,
	.block_size = etcd_store_block_size,
	.lease_renew = etcd_store_lease_renew,
	.lease_read = etcd_store_lease_read,
	.cursor_get = etcd_store_cursor_get,
	.cursor_put = etcd_store_cursor_put,
	.close = etcd_store_close,
};

const struct ipam_store_driver ipam_store_etcd_driver = {
	.name = "etcd",
	.open = etcd_store_open,
	.ops = &etcd_store_ops,
};
