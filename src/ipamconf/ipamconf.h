/* SPDX-License-Identifier: Apache-2.0 */
/* The "ipam" object of a network configuration as rdmak-ipam reads it: its keys (whereabouts'
 * and host-local's), the ranges they make (IPv4 and IPv6 as 128-bit integers, and their
 * arithmetic) and the store they name. A floor module: the ipam role allocates over it,
 * rdmak-cni reads it to decide where its IPAM runs, and `rdmak convert` checks what it writes
 * with it (docs/ipam.md "Configuration"). Nothing here opens a store or touches the network.
 */
#ifndef RDMAK_IPAMCONF_H
#define RDMAK_IPAMCONF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cnispec/cnispec.h"
#include "log/log.h"

/* ---- the store a configuration names --------------------------------------------------------- */

enum ipamconf_store_kind {
	IPAMCONF_STORE_FILE,
	IPAMCONF_STORE_ETCD,
};

struct ipamconf_store {
	enum ipamconf_store_kind kind;
	/* file, and etcd with blocks: the network's dataDir; ipamconf_resolve() sets it (the
	 * node's first dataDir when the network gives none) and data_base, the node's dataDir it
	 * lies beneath, which the store opens it from (fileio_open_dir_beneath). Without a base
	 * (a caller's own path, never a network's) data_dir is its own; without either,
	 * IPAMCONF_FILE_DEFAULT_DIR. */
	char *data_dir;
	char *data_base;
	/* etcd: the node's store the network names ("etcd": "NAME"), whose endpoints, prefix and
	 * TLS files ipamconf_resolve() copies below */
	char *etcd_name;
	/* etcd: endpoints and prefix came from a network config of the shape before stores were
	 * the node's (IPAMCONF_LEGACY only): ipamconf_resolve() takes the node's store that has
	 * them, or refuses; the config's TLS files are never read */
	bool legacy;
	char **endpoints; /* etcd: "host:port", "http(s)://host:port"; n_endpoints >= 1 */
	size_t n_endpoints;
	char *prefix; /* etcd: key prefix, default IPAMCONF_ETCD_DEFAULT_PREFIX */
	char *tls_ca; /* etcd: PEM files, NULL when not given */
	char *tls_cert;
	char *tls_key;
	/* etcd with per-node blocks (store-blocks.c): block_size > 0. The node's own blocks and
	 * claims live in data_dir (a file store); node_name: the network's nodeName, which the
	 * owner's RDMAK_NODE_NAME or installer's file overrules (ipam_node_name()). */
	unsigned block_size;
	unsigned block_grace_s; /* an empty block is given back after this long */
	unsigned lease_ttl_s;	/* the node's lease, which its ADD, DEL and GC renew */
	char *node_name;
};

#define IPAMCONF_BLOCK_DEFAULT_SIZE  32	 /* nv-ipam's perNodeBlockSize default */
#define IPAMCONF_BLOCK_DEFAULT_GRACE 600 /* seconds */
#define IPAMCONF_LEASE_DEFAULT_TTL   600 /* seconds */

#define IPAMCONF_FILE_DEFAULT_DIR    "/var/lib/cni/rdmak-ipam"
#define IPAMCONF_ETCD_DEFAULT_PREFIX "/rdmak/ipam"

/* Whether n is a node name (a DNS subdomain: lower-case letters, digits, '-' and '.'). */
bool ipamconf_node_name_valid(const char *n);
void ipamconf_store_clear(struct ipamconf_store *c);

/* ---- ranges ---------------------------------------------------------------------------------- */

typedef unsigned __int128 ipamconf_u128;

struct ipamconf_span {
	ipamconf_u128 lo, hi; /* inclusive */
};

/* One range: a subnet and the addresses of it that may be handed out. */
struct ipamconf_range {
	int family;		      /* AF_INET, AF_INET6 */
	unsigned bits;		      /* 32 or 128 */
	struct cnispec_prefix subnet; /* host bits cleared */
	ipamconf_u128 net;	      /* first address of the subnet */
	ipamconf_u128 start, end;     /* inclusive bounds of the range */
	struct ipamconf_span *excl;   /* sorted, merged, within [start, end]: exclude, gateway,
				     * network and broadcast addresses */
	size_t n_excl;
	bool has_gateway;
	ipamconf_u128 gateway;
	char pool[96];	/* the store's pool name */
	char text[128]; /* "10.56.0.0/27" or "10.56.0.0/27 (10.56.0.10-10.56.0.20)" */
	char path[64];	/* "ipam.ipRanges[1]", for messages */
};

/* Ranges one address is taken from, the first with room first (host-local's range set; a
 * whereabouts range is a set of one). */
struct ipamconf_rangeset {
	struct ipamconf_range *r;
	size_t n;
};

/* Addresses a range can hand out: (end - start + 1) minus the excluded ones. */
ipamconf_u128 ipamconf_range_size(const struct ipamconf_range *r);
bool ipamconf_range_usable(const struct ipamconf_range *r, ipamconf_u128 a);
/* The first usable address >= from: 1 and *ret, 0 when there is none up to end. */
int ipamconf_range_next(const struct ipamconf_range *r, ipamconf_u128 from, ipamconf_u128 *ret);
/* The usable address k usable addresses after a (a usable): 1 and *ret, 0 past the end. */
int ipamconf_range_advance(const struct ipamconf_range *r, ipamconf_u128 a, ipamconf_u128 k,
			   ipamconf_u128 *ret);
/* Conversions; ipamconf_u128_str: decimal, buf of 40. */
ipamconf_u128 ipamconf_u128_from_addr(const struct cnispec_addr *a);
void ipamconf_addr_from_u128(int family, ipamconf_u128 v, struct cnispec_addr *ret);
const char *ipamconf_u128_str(ipamconf_u128 v, char *buf);
/* The address's text as the store names it (inet_ntop), buf of CNISPEC_PREFIX_STRLEN. */
const char *ipamconf_range_addr_str(const struct ipamconf_range *r, ipamconf_u128 v, char *buf);

/* ---- configuration ----------------------------------------------------------------------- */

#define IPAMCONF_MAX_RANGESETS 8 /* one address each: dual stack and a few rails, not a pool list */

struct ipamconf {
	char *network;	     /* the network's name (the request's "name") */
	const char *log_key; /* "ipam.logFile" or "ipam.log_file": the key log_file came from */
	char *log_dir; /* ipamconf_resolve(): the node's logDir, which log_file lies beneath */
	struct ipamconf_rangeset *sets;
	size_t n_sets;
	struct cnispec_result *routes_dns; /* routes and dns the result carries */
	struct ipamconf_store store;
	char *log_file;
	bool has_log_level;
	enum log_level log_level;
	/* Warnings found while parsing (a range with host bits set, ...), for the log. */
	char **warnings;
	size_t n_warnings;
};

enum {
	/* DEL, GC and `rdmak ipam`: a runtime deletes an attachment with the config of its ADD,
	 * which may be of the shape before the etcd stores were the node's ("etcd": {"endpoints",
	 * "prefix", "tls"}, whereabouts' etcd_host and etcd_*_file): taken, the endpoints and
	 * prefix only to find the node's store that has them, the files never read; and a log file
	 * outside the node's logDir is left out with a warning, not refused. ADD, CHECK and STATUS
	 * refuse them, saying what to write instead. */
	IPAMCONF_LEGACY = 1 << 0,
};

/* Parse the "ipam" object of the network called network (flags: IPAMCONF_*). Refusals: code 2
 * for a key rdmak-ipam does not support (naming it, its value and what to use instead), code 7
 * for a bad value (naming its JSON path, "ipam.ipRanges[1].range_start: ..."). Nothing of the
 * node is read: ipamconf_resolve() does that. */
int ipamconf_parse(const json_t *ipam, const char *network, struct ipamconf **ret,
		   struct cnispec_error *err);
int ipamconf_parse_flags(const json_t *ipam, const char *network, unsigned flags,
			 struct ipamconf **ret, struct cnispec_error *err);
/* The same from a file's text: a network configuration with an "ipam" object, or a
 * configuration list whose plugins hold one whose ipam.type is "rdmak-ipam" (the first). */
int ipamconf_load(const char *buf, size_t len, unsigned flags, struct ipamconf **ret,
		  struct cnispec_error *err);
void ipamconf_free(struct ipamconf *c);

struct nodeconf;
/* What the network names of the node's, from the node's CNI settings (src/nodeconf): the etcd
 * store by its name (or, IPAMCONF_LEGACY, by its endpoints), the dataDir beneath one of the
 * node's dataDirs (the first when none is given), the log file beneath its logDir. A network
 * config is a namespace user's; the addresses a root process contacts with the node's client
 * certificate and the folders it writes in are the node owner's. Code 7 naming the key, what
 * the node has and what to write instead. */
int ipamconf_resolve(struct ipamconf *c, const struct nodeconf *n, unsigned flags,
		     struct cnispec_error *err);

/* Fill r from a subnet (host bits are cleared here), optional bounds and gateway (NULL:
 * the defaults, docs/ipam.md "Which addresses") and exclusions. The caller has checked that
 * start, end and gateway lie in the subnet and start <= end. network_name (may be NULL)
 * prefixes the pool name. -ENOMEM only. */
int ipamconf_range_build(struct ipamconf_range *r, const struct cnispec_prefix *subnet,
			 const struct cnispec_addr *start, const struct cnispec_addr *end,
			 const struct cnispec_addr *gateway, const struct cnispec_prefix *excl,
			 size_t n_excl, const char *network_name);
void ipamconf_range_clear(struct ipamconf_range *r);
/* Whether a lies in p's subnet (same family, same leading p->len bits). */
bool ipamconf_prefix_contains(const struct cnispec_prefix *p, const struct cnispec_addr *a);

#endif
