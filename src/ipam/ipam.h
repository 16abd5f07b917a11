/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-ipam: the configuration (whereabouts' and host-local's keys), the range arithmetic
 * (IPv4 and IPv6 as 128-bit integers) and the allocator over a store (store.h). The CNI
 * plugin (cni.c) and the operator CLI (cli.c) are thin layers over these. docs/ipam.md.
 */
#ifndef RDMAK_IPAM_H
#define RDMAK_IPAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cnispec/cnispec.h"
#include "ipam/store.h"
#include "log/log.h"

/* CNI error codes of rdmak-ipam beyond the spec's (docs/ipam.md). */
enum {
	IPAM_E_EXHAUSTED = 110, /* no free address in a range set */
	IPAM_E_CHECK = 111,	/* CHECK: the reservation is missing or differs */
	IPAM_E_REQUESTED = 112, /* ADD: the address IP= asked for cannot be given */
};

typedef unsigned __int128 ipam_u128;

/* ---- ranges ------------------------------------------------------------------------------ */

struct ipam_span {
	ipam_u128 lo, hi; /* inclusive */
};

/* One range: a subnet and the addresses of it that may be handed out. */
struct ipam_range {
	int family;		      /* AF_INET, AF_INET6 */
	unsigned bits;		      /* 32 or 128 */
	struct cnispec_prefix subnet; /* host bits cleared */
	ipam_u128 net;		      /* first address of the subnet */
	ipam_u128 start, end;	      /* inclusive bounds of the range */
	struct ipam_span *excl;	      /* sorted, merged, within [start, end]: exclude, gateway,
				     * network and broadcast addresses */
	size_t n_excl;
	bool has_gateway;
	ipam_u128 gateway;
	char pool[96];	/* the store's pool name */
	char text[128]; /* "10.56.0.0/27" or "10.56.0.0/27 (10.56.0.10-10.56.0.20)" */
	char path[64];	/* "ipam.ipRanges[1]", for messages */
};

/* Ranges one address is taken from, the first with room first (host-local's range set; a
 * whereabouts range is a set of one). */
struct ipam_rangeset {
	struct ipam_range *r;
	size_t n;
};

/* Addresses a range can hand out: (end - start + 1) minus the excluded ones. */
ipam_u128 ipam_range_size(const struct ipam_range *r);
bool ipam_range_usable(const struct ipam_range *r, ipam_u128 a);
/* The first usable address >= from: 1 and *ret, 0 when there is none up to end. */
int ipam_range_next(const struct ipam_range *r, ipam_u128 from, ipam_u128 *ret);
/* The usable address k usable addresses after a (a usable): 1 and *ret, 0 past the end. */
int ipam_range_advance(const struct ipam_range *r, ipam_u128 a, ipam_u128 k, ipam_u128 *ret);
/* Conversions; ipam_u128_str: decimal, buf of 40. */
ipam_u128 ipam_u128_from_addr(const struct cnispec_addr *a);
void ipam_addr_from_u128(int family, ipam_u128 v, struct cnispec_addr *ret);
const char *ipam_u128_str(ipam_u128 v, char *buf);
/* The address's text as the store names it (inet_ntop), buf of CNISPEC_PREFIX_STRLEN. */
const char *ipam_range_addr_str(const struct ipam_range *r, ipam_u128 v, char *buf);

/* ---- configuration ----------------------------------------------------------------------- */

#define IPAM_MAX_RANGESETS 8 /* one address each: dual stack and a few rails, not a pool list */

struct ipam_config {
	char *network; /* the network's name (the request's "name") */
	struct ipam_rangeset *sets;
	size_t n_sets;
	struct cnispec_result *routes_dns; /* routes and dns the result carries */
	struct ipam_store_config store;
	char *log_file;
	bool has_log_level;
	enum log_level log_level;
	/* Warnings found while parsing (a range with host bits set, ...), for the log. */
	char **warnings;
	size_t n_warnings;
};

/* Parse the "ipam" object of the network called network. Refusals: code 2 for a key rdmak-ipam
 * does not support (naming it, its value and what to use instead), code 7 for a bad value
 * (naming its JSON path, "ipam.ipRanges[1].range_start: ..."). */
int ipam_config_parse(const json_t *ipam, const char *network, struct ipam_config **ret,
		      struct cnispec_error *err);
/* The same from a file's text: a network configuration with an "ipam" object, or a
 * configuration list whose plugins hold one whose ipam.type is "rdmak-ipam" (the first). */
int ipam_config_load(const char *buf, size_t len, struct ipam_config **ret,
		     struct cnispec_error *err);
void ipam_config_free(struct ipam_config *c);

/* ---- the allocator ----------------------------------------------------------------------- */

/* Who an attachment belongs to. container_id and ifname are the key; the pod is recorded. */
struct ipam_owner {
	const char *container_id;
	const char *ifname;
	const char *pod_namespace; /* NULL when the runtime gave none */
	const char *pod_name;
	const char *pod_uid;
	/* IP= in CNI_ARGS: exactly this address, from the range set that hands it out, or a
	 * refusal (code 112); NULL: any address. */
	const struct cnispec_addr *requested;
};

/* ADD: the attachment's addresses, one per range set; the same ones again when it already
 * has them (an idempotent ADD). *ret: ips (no interface index), routes and dns. */
int ipam_add(struct ipam_store *s, const struct ipam_config *c, const struct ipam_owner *o,
	     struct cnispec_result **ret, struct cnispec_error *err);
/* DEL: release the attachment's addresses; nothing to release is success. */
int ipam_del(struct ipam_store *s, const struct ipam_config *c, const char *container_id,
	     const char *ifname, struct cnispec_error *err);
/* CHECK: the attachment holds one address per range set, each claimed in its name, and
 * prev (may be NULL) shows the same ones. Code 111 naming what differs. */
int ipam_check(struct ipam_store *s, const struct ipam_config *c, const char *container_id,
	       const char *ifname, const struct cnispec_result *prev, struct cnispec_error *err);

/* GC: release every reservation of the network whose (containerID, ifname) is not valid, and
 * every claim of it that no record names. Junk in the store (store.h) is skipped and counted,
 * an error naming the first one unless s->repair removed it; the passes go on past it. */
struct ipam_gc_stats {
	size_t kept, released, orphans, tidied, errors;
	size_t junk, repaired; /* junk skipped, junk removed (s->repair) */
	/* per-node blocks: this node's kept, given back (empty past the grace period), adopted
	 * (etcd said ours, the local list did not), dropped (the local list said ours, etcd not) */
	size_t blocks_kept, blocks_freed, blocks_adopted, blocks_dropped;
};
typedef bool (*ipam_valid_fn)(void *ud, const char *container_id, const char *ifname);
int ipam_gc(struct ipam_store *s, const struct ipam_config *c, ipam_valid_fn valid, void *ud,
	    struct ipam_gc_stats *stats, struct cnispec_error *err);
/* STATUS: the store answers (else code 50) and every range set has a free address (else 50). */
int ipam_status(struct ipam_store *s, const struct ipam_config *c, struct cnispec_error *err);

/* `rdmak ipam list`: the pools and reservations of c as JSON (docs/ipam.md's shape). */
int ipam_list_json(struct ipam_store *s, const struct ipam_config *c, json_t **ret,
		   struct cnispec_error *err);
/* `rdmak ipam release`: every attachment of container_id (ifname NULL: all of its
 * interfaces) in the network; *ret_released counts the attachments. */
int ipam_release(struct ipam_store *s, const struct ipam_config *c, const char *container_id,
		 const char *ifname, size_t *ret_released, struct cnispec_error *err);

/* `rdmak ipam reclaim --node N`: give back every block of the config's pools that node owns.
 * Refused (-EBUSY, code 2... the CLI's exit 4) while this store shows claims of that node in
 * them, unless force; *ret_report: {"node", "blocks": [{"pool","first","last"}],
 * "overridden": [{"address","containerID","ifname"}]}. */
int ipam_reclaim(struct ipam_store *s, const struct ipam_config *c, const char *node, bool force,
		 json_t **ret_report, struct cnispec_error *err);

/* Translate a store failure into the CNI error (11 or 50 when unreachable, 5 otherwise). */
int ipam_store_fail(struct ipam_store *s, int r, bool for_status, struct cnispec_error *err);

#endif
