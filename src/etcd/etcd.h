/* SPDX-License-Identifier: Apache-2.0 */
/* A small etcd v3 client: KV (Range, Put, DeleteRange, Txn) and Maintenance.Status over etcd's
 * gRPC API, spoken through the gRPC C core with protobuf-c (src/etcd/etcd.proto). Callers deal
 * in the plain structs below and never see gRPC or protobuf-c types.
 *
 * Leases (LeaseGrant, LeaseTimeToLive) too.
 *
 * Endpoints and failover. A client holds one gRPC channel per endpoint and sends each call to
 * the endpoint that answered last. When that endpoint cannot answer (connection refused or
 * reset, no leader, the per-attempt deadline passed) the call is sent again to the next
 * endpoint, and so on once around the list; the endpoint that answers becomes the current one.
 * When none answers the call fails with -EHOSTUNREACH and etcd_client_error() names every
 * endpoint with its reason. Errors etcd itself returns (a bad request, a compacted revision,
 * a full database) are not retried.
 *
 * A retried write may have been applied by the endpoint that timed out: write only what is
 * safe to apply twice (a Put of the same value, a Txn whose compares make the second run a
 * no-op or tell the caller what the first one did).
 *
 * Keys are NUL-terminated strings (etcd allows any bytes; everything rdmak stores is text);
 * values are bytes with a length. Results are copies owned by the caller, freed with the
 * matching _clear(). A client is used by one thread at a time.
 */
#ifndef RDMAK_ETCD_H
#define RDMAK_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_DEFAULT_TIMEOUT_MS 3000

struct etcd_client;

struct etcd_config {
	/* "host:port", "http://host:port" or "https://host:port"; at least one. A bare host:port
	 * uses TLS when a CA, certificate or key is given, plaintext otherwise. */
	const char *const *endpoints;
	size_t n_endpoints;
	/* PEM files: the CA that signed the members' certificates (NULL: the system's roots), and
	 * the client certificate and key, both or neither. Any of them means TLS. */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	unsigned timeout_ms; /* per attempt on one endpoint; 0: ETCD_DEFAULT_TIMEOUT_MS */
};

/* -EINVAL for a bad endpoint or TLS setting, -errno reading a PEM file; *ret_error (may be
 * NULL) then gets a malloc'd message naming the bad item. No connection is made here. */
int etcd_client_new(const struct etcd_config *cfg, struct etcd_client **ret, char **ret_error);
void etcd_client_free(struct etcd_client *c);

/* What the last failed call met, naming the endpoint(s); "" after a success. Valid until the
 * next call on this client. */
const char *etcd_client_error(const struct etcd_client *c);
size_t etcd_client_n_endpoints(const struct etcd_client *c);
/* The endpoint as given (i < n_endpoints), and the index of the one calls go to now. */
const char *etcd_client_endpoint(const struct etcd_client *c, size_t i);
size_t etcd_client_current(const struct etcd_client *c);
/* The requests the client made so far, by method (a failed-over call counts once): what one
 * attachment costs etcd (the test build's seam, tests/seams/etcd_calls.c, writes them out). */
struct etcd_calls {
	unsigned long range, put, delete_range, txn;
	unsigned long lease; /* LeaseGrant and LeaseTimeToLive */
};
void etcd_client_calls(const struct etcd_client *c, struct etcd_calls *ret);

struct etcd_kv {
	char *key; /* NUL-terminated */
	size_t key_len;
	char *value; /* NUL-terminated too, for text values; may hold NULs itself */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};
void etcd_kv_clear(struct etcd_kv *kv);

struct etcd_kvs {
	struct etcd_kv *kvs;
	size_t n;
	bool more;	  /* Range stopped at `limit` with keys left */
	int64_t count;	  /* keys in the range (all of them, not only the returned ones) */
	int64_t revision; /* the store revision the answer was read at */
};
void etcd_kvs_clear(struct etcd_kvs *r);

struct etcd_range_opts {
	bool prefix;	       /* every key that starts with `key` */
	const char *range_end; /* [key, range_end); ignored with prefix; NULL: the key only */
	int64_t limit;	       /* 0: no limit */
	int64_t revision;      /* 0: the newest */
	bool keys_only;
	bool count_only;
	bool serializable; /* a member-local read, no quorum round (may be stale) */
};

/* Range: sorted by key (etcd's order). opts may be NULL (the one key, linearizable). */
int etcd_range(struct etcd_client *c, const char *key, const struct etcd_range_opts *opts,
	       struct etcd_kvs *ret);
/* Every key under prefix, read in pages at one revision so that the listing is a consistent
 * snapshot however large it is. */
int etcd_range_prefix_all(struct etcd_client *c, const char *prefix, bool keys_only,
			  struct etcd_kvs *ret);
/* One key: <0 error, 0 absent, 1 found (*ret filled). */
int etcd_get(struct etcd_client *c, const char *key, struct etcd_kv *ret);
/* ret_revision may be NULL. */
int etcd_put(struct etcd_client *c, const char *key, const void *value, size_t value_len,
	     int64_t *ret_revision);
/* Deletes the key, or every key under it with prefix; ret_deleted (may be NULL) gets the count. */
int etcd_delete(struct etcd_client *c, const char *key, bool prefix, int64_t *ret_deleted);

/* Txn. The enums carry etcd's own values. */
enum etcd_cmp_target {
	ETCD_CMP_VERSION = 0,
	ETCD_CMP_CREATE = 1,
	ETCD_CMP_MOD = 2,
	ETCD_CMP_VALUE = 3
};
enum etcd_cmp_result {
	ETCD_CMP_EQUAL = 0,
	ETCD_CMP_GREATER = 1,
	ETCD_CMP_LESS = 2,
	ETCD_CMP_NOT_EQUAL = 3
};

struct etcd_compare {
	const char *key;
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	int64_t number;	   /* VERSION, CREATE (a revision; 0: the key does not exist), MOD */
	const void *value; /* VALUE */
	size_t value_len;
};

enum etcd_op_type { ETCD_OP_RANGE, ETCD_OP_PUT, ETCD_OP_DELETE };

struct etcd_op {
	enum etcd_op_type type;
	const char *key;
	const void *value; /* PUT */
	size_t value_len;
	int64_t lease;	/* PUT: the lease the key goes with (0: none; the key stays) */
	bool prefix;	/* RANGE, DELETE */
	int64_t limit;	/* RANGE */
	bool keys_only; /* RANGE */
};

struct etcd_op_result {
	enum etcd_op_type type;
	struct etcd_kvs range; /* RANGE */
	int64_t deleted;       /* DELETE */
};

struct etcd_txn_result {
	bool succeeded;
	int64_t revision;
	struct etcd_op_result *ops; /* one per op of the branch that ran */
	size_t n_ops;
};
void etcd_txn_result_clear(struct etcd_txn_result *r);

/* If every compare holds, run `then`, else `otherwise`, atomically. <0 error, 1 the compares
 * held, 0 they did not (the `otherwise` branch ran). ret may be NULL. */
int etcd_txn(struct etcd_client *c, const struct etcd_compare *cmp, size_t n_cmp,
	     const struct etcd_op *then, size_t n_then, const struct etcd_op *otherwise,
	     size_t n_otherwise, struct etcd_txn_result *ret);

/* Leases: a key put with a lease is deleted by etcd when the lease expires, timed by the
 * cluster's leader (no member's clock against another's). Grant a lease of ttl seconds:
 * *ret_id, and *ret_ttl the TTL granted (etcd raises one below its minimum). A retried grant
 * may leave a second lease that nothing uses: it expires by itself. */
int etcd_lease_grant(struct etcd_client *c, int64_t ttl, int64_t *ret_id, int64_t *ret_ttl);
/* The seconds left to lease id: 1 and *ret_left (and *ret_granted, may be NULL), 0 when it
 * has expired or never was. */
int etcd_lease_ttl(struct etcd_client *c, int64_t id, int64_t *ret_left, int64_t *ret_granted);

struct etcd_member_status {
	char version[32];
	uint64_t cluster_id;
	uint64_t member_id;
	uint64_t leader; /* 0: the member knows no leader */
	uint64_t raft_term;
	int64_t revision;
	int64_t db_size;
	bool is_learner;
};

/* Maintenance.Status of one endpoint, without failover (a member answers it without a quorum). */
int etcd_member_status(struct etcd_client *c, size_t endpoint, struct etcd_member_status *ret);

#endif
