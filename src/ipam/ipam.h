/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-ipam: the allocator over a store (store.h), for the configuration the floor's
 * ipamconf reads (its ranges and their arithmetic too). The CNI plugin (cni.c) and the
 * operator CLI (cli.c) are thin layers over these. docs/ipam.md.
 */
#ifndef RDMAK_IPAM_H
#define RDMAK_IPAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cnispec/cnispec.h"
#include "ipam/store.h"
#include "ipamconf/ipamconf.h"
#include "log/log.h"

/* CNI error codes of rdmak-ipam beyond the spec's (docs/ipam.md). */
enum {
	IPAM_E_EXHAUSTED = 110, /* no free address in a range set */
	IPAM_E_CHECK = 111,	/* CHECK: the reservation is missing or differs */
	IPAM_E_REQUESTED = 112, /* ADD: the address IP= asked for cannot be given */
};

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
int ipam_add(struct ipam_store *s, const struct ipamconf *c, const struct ipam_owner *o,
	     struct cnispec_result **ret, struct cnispec_error *err);
/* DEL: release the attachment's addresses; nothing to release is success. */
int ipam_del(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
	     const char *ifname, struct cnispec_error *err);
/* CHECK: the attachment holds one address per range set, each claimed in its name, and
 * prev (may be NULL) shows the same ones. Code 111 naming what differs. */
int ipam_check(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
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
int ipam_gc(struct ipam_store *s, const struct ipamconf *c, ipam_valid_fn valid, void *ud,
	    struct ipam_gc_stats *stats, struct cnispec_error *err);
/* STATUS: the store answers (else code 50) and every range set has a free address (else 50). */
int ipam_status(struct ipam_store *s, const struct ipamconf *c, struct cnispec_error *err);

/* `rdmak ipam list`: the pools and reservations of c as JSON (docs/ipam.md's shape). */
int ipam_list_json(struct ipam_store *s, const struct ipamconf *c, json_t **ret,
		   struct cnispec_error *err);
/* `rdmak ipam release`: every attachment of container_id (ifname NULL: all of its
 * interfaces) in the network; *ret_released counts the attachments. */
int ipam_release(struct ipam_store *s, const struct ipamconf *c, const char *container_id,
		 const char *ifname, size_t *ret_released, struct cnispec_error *err);

/* `rdmak ipam reclaim --node N`: give back every block of the config's pools that node owns.
 * Refused (-EBUSY, code 2... the CLI's exit 4) while this store shows claims of that node in
 * them, unless force; *ret_report: {"node", "blocks": [{"pool","first","last"}],
 * "overridden": [{"address","containerID","ifname"}]}. */
int ipam_reclaim(struct ipam_store *s, const struct ipamconf *c, const char *node, bool force,
		 json_t **ret_report, struct cnispec_error *err);

/* Translate a store failure into the CNI error (11 or 50 when unreachable, 5 otherwise). */
int ipam_store_fail(struct ipam_store *s, int r, bool for_status, struct cnispec_error *err);

#endif
