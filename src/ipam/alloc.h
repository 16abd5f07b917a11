/* SPDX-License-Identifier: Apache-2.0 */
/* What the allocator's files (record.c, alloc.c, add.c, gc.c, list.c) share; no other module
 * includes it: their API is ipam.h. */
#ifndef RDMAK_IPAM_ALLOC_H
#define RDMAK_IPAM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "cnispec/cnispec.h"
#include "ipam/ipam.h"
#include "ipamconf/ipamconf.h"

/* A record: pending, or the claims "<pool>/<address>". */
struct ipam_record {
	bool pending;
	char **claims;
	size_t n;
};

struct ipam_found {
	char pool[96];
	char addr[CNISPEC_PREFIX_STRLEN];
};

struct ipam_scan {
	const char *pool;
	const char *network, *container_id, *ifname;
	struct ipam_found *f;
	size_t n, cap;
};

struct ipam_pool_names {
	char **v;
	size_t n, cap;
};

struct ipam_used {
	const struct ipamconf_range *r;
	ipamconf_u128 *v;
	size_t n, cap;
};

/* A claim of the same address in another pool. */
struct ipam_rival {
	struct ipam_store *s;
	const struct ipamconf_range *r; /* the range whose pool was just claimed in */
	size_t prefix;			/* the length of its pool name's network_name part */
	struct cnispec_addr addr;
	const char *text;
	char *owner; /* the rival claim's value, malloc'd */
	char pool[96];
};

/* A new attachment of one range set on a store that commits (ipam_store_commits()): its
 * record is written with its claim, in one step, instead of pending before and complete after. */
struct ipam_commit {
	const char *network;
	const char *key;
};

/* A block: the grid cell [first, first + size - 1] of the subnet, clipped to a range. */
struct ipam_block_set {
	const struct ipamconf_range *r;
	ipamconf_u128 size;
	ipamconf_u128 *first; /* sorted */
	size_t n, cap;
	struct ipam_store *s;
	const char *pool;
	size_t adopted;
};

/* record.c */
void ipam_make_key(char *buf, size_t n, const char *container_id, const char *ifname);
char *ipam_owner_value(const struct ipamconf *c, const struct ipam_owner *o);
bool ipam_owned_by(const char *value, const char *network, const char *container_id,
		   const char *ifname);
void ipam_record_clear(struct ipam_record *r);
int ipam_record_read(struct ipam_store *s, const char *network, const char *key,
		     struct ipam_record *ret);
char *ipam_record_text(char *const *claims, size_t n);
int ipam_record_write(struct ipam_store *s, const char *network, const char *key,
		      char *const *claims, size_t n);
bool ipam_split_claim(const char *claim, char *pool, size_t pn, const char **addr);
int ipam_release_if_ours(struct ipam_store *s, const char *pool, const char *addr,
			 const char *network, const char *container_id, const char *ifname);
int ipam_scan_one(void *ud, const char *name, const char *value);
void ipam_pool_names_clear(struct ipam_pool_names *p);
int ipam_pools_of(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		  struct ipam_pool_names *ret);
int ipam_scan_claims(struct ipam_store *s, const struct ipamconf *c, bool all_pools,
		     const char *container_id, const char *ifname, struct ipam_scan *ret);

/* alloc.c */
int ipam_read_used(struct ipam_store *s, const struct ipamconf_range *r, struct ipam_used *u);
int ipam_claim_unique(struct ipam_store *s, const struct ipamconf_range *r, const char *text,
		      const char *value, struct ipam_rival *rv);
int ipam_alloc_in_range(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			const struct ipam_commit *cm, ipamconf_u128 *ret, ipamconf_u128 *ret_used);
int ipam_block_set_add(struct ipam_block_set *b, ipamconf_u128 first);
bool ipam_block_first(const struct ipam_block_set *b, const char *name, ipamconf_u128 *ret);
int ipam_block_mine_one(void *ud, const char *name, const char *value);
bool ipam_block_value_is_node(const char *value, const char *node);
int ipam_block_owner_one(void *ud, const char *name, const char *value);
void ipam_block_set_sort(struct ipam_block_set *b);
bool ipam_block_set_has(const struct ipam_block_set *b, ipamconf_u128 first);
int ipam_lease_still_held(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			  ipamconf_u128 a);
int ipam_alloc_in_blocks(struct ipam_store *s, const struct ipamconf_range *r, const char *value,
			 ipamconf_u128 *ret, size_t *ret_blocks);
int ipam_block_set_full(struct ipam_store *s, const struct ipamconf_range *r, size_t n,
			struct cnispec_error *err);

/* add.c */
int ipam_del_key(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
		 const char *ifname);

#endif
