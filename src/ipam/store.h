/* SPDX-License-Identifier: Apache-2.0 */
/* Where rdmak-ipam keeps its reservations: one ops table, two stores.
 *   file  node-local, under dataDir (store-file.c; docs/ipam.md says why it looks as it does)
 *   etcd  cluster-wide, on etcd v3 (store-etcd.c, by the etcd module)
 *
 * The model is three kinds of small named values, never a whole pool rewritten:
 *
 *   claims    pool -> address -> owner.  One per handed-out address. Created only by claim(),
 *             which succeeds only if the address has no claim yet: the one primitive that keeps
 *             addresses unique (etcd: a Txn that puts the key only if its create_revision is
 *             0; file: symlinkat(), which fails with EEXIST). Removed only by release(), and
 *             only if the owner is still exactly the one the caller read (etcd: a Txn comparing
 *             the value). pool: "10.56.0.0_27" (the subnet, '/' as '_', maybe prefixed by a
 *             network_name and '_'); address: inet_ntop() text; both [0-9A-Za-z._:-].
 *   records   network -> attachment key -> the attachment's state ("pending", then the list of
 *             its claims), so that DEL, CHECK and an idempotent ADD are one read, not a scan.
 *             Written by one process at a time per key (the runtime never runs two operations
 *             on one attachment at once), so a plain put is enough. key: "<containerID>:<ifname>".
 *   cursors   pool -> the address handed out last: where the next search starts. A hint only:
 *             a lost or stale cursor costs a few extra claims, never a duplicate.
 *
 * Values are the allocator's text (compact JSON), at most IPAM_STORE_VALUE_MAX bytes; a store
 * does not interpret them except to compare them byte for byte.
 *
 * Every op returns -errno on failure; a store that cannot reach its backend returns
 * -EHOSTUNREACH, -ETIMEDOUT, -ECONNREFUSED or -ENOTCONN (ipam_store_unreachable()) and leaves
 * a message in s->error. Lookups return 0 (absent) or 1 (found, *ret malloc'd).
 * Every slot of s->ops is filled: the driver's function, or a default that returns
 * -EOPNOTSUPP ("not supported"); callers never test a pointer.
 */
#ifndef RDMAK_IPAM_STORE_H
#define RDMAK_IPAM_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "ipamconf/ipamconf.h"

/* The value of a record whose ADD has begun and not finished. */
#define IPAM_RECORD_PENDING "{\"state\":\"pending\"}"

/* Owner and record values stay below this (XFS keeps symlink targets up to 1024 bytes). */
#define IPAM_STORE_VALUE_MAX 1000

struct ipam_store;

/* Called for each entry of a listing: name (an address, a key or a pool) and value (NULL for
 * pools). A non-zero return stops the listing and is returned by it. */
typedef int (*ipam_store_each_fn)(void *ud, const char *name, const char *value);

struct ipam_store_ops {
	/* Whether the backend answers now (STATUS). 0 or -errno. */
	int (*ping)(struct ipam_store *s);

	/* Claim address in pool for value. 1: the claim is ours (made now, or already there with
	 * exactly this value, as after a retried write); 0: the address is claimed with another
	 * value; <0 error. */
	int (*claim)(struct ipam_store *s, const char *pool, const char *address,
		     const char *value);
	/* The value of a claim: 1 and *ret, or 0 when the address is free. */
	int (*get)(struct ipam_store *s, const char *pool, const char *address, char **ret);
	/* Remove the claim if its value is exactly expect. 1 removed, 0 absent or another value. */
	int (*release)(struct ipam_store *s, const char *pool, const char *address,
		       const char *expect);
	/* Every claim of a pool, in no particular order. A pool with no claims lists nothing. */
	int (*list)(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud);
	/* How many claims a pool holds (a count may be cheaper than a listing). */
	int (*count)(struct ipam_store *s, const char *pool, size_t *ret);
	/* Every pool that holds or held claims (value NULL). */
	int (*pools)(struct ipam_store *s, ipam_store_each_fn fn, void *ud);

	/* Attachment records of a network. put creates or replaces, del returns 1 or 0. */
	int (*record_get)(struct ipam_store *s, const char *network, const char *key, char **ret);
	int (*record_put)(struct ipam_store *s, const char *network, const char *key,
			  const char *value);
	int (*record_del)(struct ipam_store *s, const char *network, const char *key);
	int (*record_list)(struct ipam_store *s, const char *network, ipam_store_each_fn fn,
			   void *ud);
	/* Create or replace the record with IPAM_RECORD_PENDING (an ADD has begun; claims may
	 * follow). The default is record_put(IPAM_RECORD_PENDING); a store may do it cheaper. */
	int (*record_pending)(struct ipam_store *s, const char *network, const char *key);

	/* A new attachment's one claim in one write (a store that can: etcd's Txn). If address
	 * is free in pool: claim it for value and, in the same step, set network's record key to
	 * record, the pool's cursor to address and the pool's key; then call look(ud, pool, NULL)
	 * for every pool the store knew at that instant (the overlap look, store.h's pools());
	 * a look that returns 1 (another pool holds the address) undoes it: the claim released
	 * and the record put back to pending. 1 made (or already ours, as after a retried
	 * write), 0 taken or undone, <0 error. The default says -EOPNOTSUPP, and
	 * ipam_store_commits() tells the allocator to write pending, claim, cursor and record one
	 * by one instead. */
	int (*claim_commit)(struct ipam_store *s, const char *pool, const char *address,
			    const char *value, const char *network, const char *key,
			    const char *record, ipam_store_each_fn look, void *ud);

	/* Per-node blocks in the cluster (etcd; store-blocks.c): <prefix>/blocks/<pool>/<first>
	 * -> its owner, and the pool's block size, stored with its first block. list: every block
	 * of pool, fn(ud, first, value); claim: create the key with value only if absent and the
	 * pool's block size is size (stored now if the pool has none and no single-address
	 * claim): 1 ours, also when it already holds exactly value; 0 another owner's; -EXDEV the
	 * pool is handed out another way (s->error names both). release: delete it only if its
	 * value is still expect and, with unless_alive, that node holds no lease (1, 0). size: the
	 * pool's stored block size (1 and *ret, 0 none stored). A single-address claim in a pool
	 * with a block size is -EXDEV too (claim, claim_commit). */
	int (*block_list)(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud);
	int (*block_claim)(struct ipam_store *s, const char *pool, const char *first,
			   const char *value, unsigned size);
	int (*block_release)(struct ipam_store *s, const char *pool, const char *first,
			     const char *expect, const char *unless_alive);
	int (*block_size)(struct ipam_store *s, const char *pool, unsigned *ret);
	/* Per-node leases (etcd; store-blocks.c): renew puts <prefix>/leases/<node> -> value, bound
	 * to a new lease of ttl seconds (*ret_ttl: what etcd granted), and <prefix>/nodes/<node>
	 * -> value, kept. read: the live value (*ret_live NULL once the lease expired) with the
	 * seconds left, and the kept one (*ret_last NULL if the node never renewed one). */
	int (*lease_renew)(struct ipam_store *s, const char *node, const char *value, unsigned ttl,
			   long long *ret_ttl);
	int (*lease_read)(struct ipam_store *s, const char *node, char **ret_live,
			  long long *ret_left, char **ret_last);

	/* The pool's cursor (an address). get: 1/0; put replaces. */
	int (*cursor_get)(struct ipam_store *s, const char *pool, char **ret);
	int (*cursor_put)(struct ipam_store *s, const char *pool, const char *address);

	/* Remove what an interrupted writer may have left behind (file: temporary names older
	 * than ten minutes). Run by GC. 0 or -errno; *ret_removed (may be NULL) counts them. */
	int (*tidy)(struct ipam_store *s, size_t *ret_removed);

	/* Free the store's state (not the struct ipam_store itself). */
	void (*close)(struct ipam_store *s);
};

/* A store implementation. open() fills s->priv (and s->error on failure); ops may leave
 * slots NULL, which ipam_store_open() fills with the defaults. */
struct ipam_store_driver {
	const char *name; /* "file", "etcd" */
	int (*open)(struct ipam_store *s, const struct ipamconf_store *cfg);
	const struct ipam_store_ops *ops;
};

extern const struct ipam_store_driver ipam_store_file_driver;
extern const struct ipam_store_driver ipam_store_etcd_driver;
extern const struct ipam_store_driver ipam_store_blocks_driver;

/* Whether this program holds the etcd store: the full rdmak does, the per-pod binary
 * (rdmak-cni, rdmak-ipam: src/pod.c) does not, and ipam_store_open() of an etcd config there
 * fails with -ENOPKG; its rdmak-ipam then hands the request to the full rdmak (docs/cni.md). */
bool ipam_store_etcd_linked(void);

struct ipam_store {
	struct ipam_store_ops ops; /* every slot filled */
	const struct ipam_store_driver *driver;
	void *priv;
	char error
		[512]; /* the last failure, in words ("etcd: 10.0.0.1:2379: connection refused") */
	/* Junk: an entry a listing meets where a claim or record should be that rdmak-ipam did
	 * not write (file store: a regular file or a directory in pools/<pool>/ or
	 * networks/<network>/). A listing skips it, so that one stray file never stops a pass,
	 * and names it here: its path, what it is ("a regular file") and removed (1 removed,
	 * because repair is set; 0 left; -errno the removal failed). A lookup of the one name
	 * still fails (-EBADMSG) naming its path. NULL: skipped silently. */
	void (*junk)(void *ud, const char *path, const char *what, int removed);
	void *junk_ud;
	bool repair; /* listings remove the junk they meet (a non-empty directory stays) */
};

/* Open the store cfg names. On failure -errno with the reason in why. */
int ipam_store_open(const struct ipamconf_store *cfg, struct ipam_store **ret, char *why,
		    size_t whylen);
/* The same with a given driver (tests: a store that fails on demand). */
int ipam_store_open_driver(const struct ipam_store_driver *drv, const struct ipamconf_store *cfg,
			   struct ipam_store **ret, char *why, size_t whylen);
void ipam_store_close(struct ipam_store *s);
/* Whether the store's driver has its own claim_commit (one write per new attachment). */
bool ipam_store_commits(const struct ipam_store *s);
/* Whether r means "the backend did not answer" (CNI code 11 for ADD/DEL, 50 for STATUS). */
bool ipam_store_unreachable(int r);
/* For drivers: s->error from fmt, and r returned, so that a failure is one statement
 * (`return ipam_store_error(s, -errno, "%s: %s", path, strerror(errno));`). */
__attribute__((format(printf, 3, 4))) int ipam_store_error(struct ipam_store *s, int r,
							   const char *fmt, ...);

/* ---- per-node blocks (store-blocks.c) ------------------------------------------------------ */

/* Where the CNI installer (`rdmak cni install`, src/cni/install.c) writes the node's name; RDMAK_NODE_NAME_FILE
 * overrides it. */
#define IPAM_NODE_NAME_FILE "/opt/rdmak/node-name"
/* The node's name: the owner's (RDMAK_NODE_NAME, else the installer's file), else given
 * (nodeName), else the host name; *ret_source says which. -EINVAL when what it found is not a
 * node name, -EPERM when given names another node than the owner's (buf: the owner's). */
int ipam_node_name(const char *given, char *buf, size_t n, const char **ret_source);
/* The block size of a blocks store, 0 for any other store. */
unsigned ipam_store_blocks(const struct ipam_store *s);
const char *ipam_blocks_node(const struct ipam_store *s);
unsigned ipam_blocks_grace(const struct ipam_store *s);
/* flock() of the pool's blocks: every allocation shared, a block claim or give-back exclusive.
 * An fd to close(), or -errno. */
int ipam_blocks_lock(struct ipam_store *s, const char *pool, bool exclusive);
/* This node's blocks of pool, from its local list: fn(ud, first, value). */
int ipam_blocks_mine(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud);
/* Every block of pool in the cluster: fn(ud, first, value {"node","last","created"}). */
int ipam_blocks_owners(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud);
/* Take the block [first, last] for this node (one compare-and-put) and list it locally: 1, 0
 * another node has it, <0 (unreachable: -EHOSTUNREACH..., s->error names the endpoints). */
int ipam_blocks_claim(struct ipam_store *s, const char *pool, const char *first, const char *last);
/* List locally a block etcd says is this node's (value: its value there). */
int ipam_blocks_adopt(struct ipam_store *s, const char *pool, const char *first, const char *value);
/* Remove a block from the local list (1 removed, 0 none). */
int ipam_blocks_forget(struct ipam_store *s, const char *pool, const char *first);
/* Give a block back in the cluster if its value is still expect and, with unless_alive, that
 * node holds no lease: 1, 0, <0. */
int ipam_blocks_release(struct ipam_store *s, const char *pool, const char *first,
			const char *expect, const char *unless_alive);
/* The pool's block size as the cluster stores it: 0 when it agrees with this configuration's or
 * none is stored yet, -EXDEV (s->error naming both sizes) when it does not. */
int ipam_blocks_size_check(struct ipam_store *s, const char *pool);

/* ---- the node's lease (store-blocks.c) ----------------------------------------------------------
 * A node proves it is alive by renewing <prefix>/leases/<node>, a key etcd deletes when its lease
 * expires (etcd's leader times it, so no two machines' clocks are compared). Its ADD, DEL and
 * GC renew it, with the claims the node holds; `rdmak ipam reclaim` gives a node's blocks back
 * only once that key is gone (docs/ipam.md, "Per-node blocks"). The node keeps when it sent its
 * last renewal (CLOCK_BOOTTIME, with the boot's id) in dataDir/blocks/.lease.<prefix>, and hands
 * out addresses from its blocks only while that renewal is younger than 9/10 of the TTL etcd
 * granted: etcd's lease outlives it, so no reclaim can take a block the node still uses. */
enum ipam_lease_for {
	IPAM_LEASE_ADD, /* renewed when a third of the TTL is gone; must be when the lease lapsed or
			 * the last renewal said no claims (the ADD is about to make one) */
	IPAM_LEASE_DEL, /* renewed when due, never must: a DEL works with etcd down */
	IPAM_LEASE_GC,	/* renewed every time, with the claims left after GC */
};
/* 0: the lease holds (fresh, or renewed now); <0: it had to be renewed and could not
 * (-EHOSTUNREACH...: s->error says why; -ENOPKG in the per-pod binary: the full rdmak must). */
int ipam_blocks_lease(struct ipam_store *s, enum ipam_lease_for why);
/* Whether the lease ipam_blocks_lease() found or made still holds now (an ADD asks again after
 * its claim, so that a process stalled past the lease gives its claim back). */
bool ipam_blocks_lease_holds(struct ipam_store *s);

/* What `rdmak ipam reclaim` reads of a node's lease. */
enum ipam_node_state { IPAM_NODE_LIVE, IPAM_NODE_EXPIRED, IPAM_NODE_NEVER };
struct ipam_node_lease {
	enum ipam_node_state state;
	char key[300];	  /* <prefix>/leases/<node> */
	char renewed[32]; /* the last renewal's time (UTC), "" for NEVER */
	long long ttl;	  /* the TTL of the last renewal */
	long long left;	  /* LIVE: seconds until it expires unrenewed */
	long long claims; /* the claims the node held (or was about to make) at its last renewal */
};
int ipam_blocks_node_lease(struct ipam_store *s, const char *node, struct ipam_node_lease *ret);
/* How long the block has been found empty (a marker made the first time); empty false clears. */
int ipam_blocks_empty_for(struct ipam_store *s, const char *pool, const char *first, bool empty,
			  long long *ret);

#endif
