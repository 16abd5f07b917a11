/* SPDX-License-Identifier: Apache-2.0 */
/* ufm: the fabric manager's client, under the roles that change InfiniBand partition membership
 * (rdmak-cni's partition.c, `rdmak fabric`): node-side and synchronous, through the fabric
 * manager (UFM first) -- no cluster controller, no GUID pool in memory. What lives here:
 *   config.c   the CNI network config's "fabric" object (a dispatch table) and its Secret
 *   https.c    one HTTPS request with a deadline (GnuTLS through src/http/dl.c; verification on)
 *   client.c   UFM's PKey GUIDs REST API: version, add, remove, get one pkey's GUIDs
 *   journal.c  the node's ledger in the state dir: removals UFM could not take yet, the lock
 * docs/fabric.md says what was tested against what. */
#ifndef RDMAK_UFM_H
#define RDMAK_UFM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch/dispatch.h"

#define UFM_DEFAULT_TIMEOUT_MS 5000
#define UFM_ERR_MAX	       512

struct ufm_config {
	bool set;	   /* a "fabric" object was given */
	char *ufm;	   /* "https://host[:port][/prefix]" */
	char *credentials; /* a mounted Secret's directory: username + password, or token */
	char *ca_file;	   /* PEM bundle the UFM's certificate must chain to; NULL: the system's */
	unsigned timeout_ms; /* each call's deadline, connect to last byte */
	bool limited;	     /* membership "limited" (default full) */
	bool index0;	     /* UFM's index0 (default false) */
	bool ip_over_ib;     /* UFM's ip_over_ib (default true) */
};

/* A dispatch fn for the "fabric" row of a config table: target is a struct ufm_config. */
int ufm_config_dispatch(struct dispatch_ctx *d, const char *path, json_t *v, void *target);
void ufm_config_clear(struct ufm_config *c);

/* ---- UFM ----------------------------------------------------------------------------------- */

struct ufm_client;

/* Reads the credentials (the Secret's files) and checks the URL; connects nothing yet.
 * -EINVAL / -errno with a sentence in err. */
int ufm_client_new(const struct ufm_config *cfg, struct ufm_client **ret, char *err, size_t errlen);
void ufm_client_free(struct ufm_client *c);
/* The last failure's sentence ("UFM https://...: connection refused"). */
const char *ufm_client_error(const struct ufm_client *c);

/* Each call is one request within cfg->timeout_ms. Errors: -ETIMEDOUT, -ECONNREFUSED,
 * -EHOSTUNREACH and other connect errors, -EACCES (401/403), -EPROTO (TLS, including a
 * certificate that does not verify, or an answer that is not HTTP/JSON), -EIO (5xx), -EINVAL
 * (4xx other than 401/403/404). */
int ufm_version(struct ufm_client *c, char *out, size_t n);
/* POST /resources/pkeys: the GUIDs join pkey (0x0001-0x7ffe) with cfg's membership. */
int ufm_add(struct ufm_client *c, uint16_t pkey, const uint64_t *guids, size_t n);
/* DELETE /resources/pkeys/<pkey>/guids/<g>,<g>: a pkey UFM does not know (404) is success. */
int ufm_remove(struct ufm_client *c, uint16_t pkey, const uint64_t *guids, size_t n);

struct ufm_member {
	uint64_t guid;
	bool limited;
	bool index0;
};
/* GET /resources/pkeys/<pkey>?guids_data=true: 1 and the members (malloc'd), 0 when UFM has no
 * such pkey. */
int ufm_members(struct ufm_client *c, uint16_t pkey, struct ufm_member **ret, size_t *ret_n);

/* ---- the node's ledger ------------------------------------------------------------------------ */

/* The lock every membership change of this node takes (ADD's add, DEL's and GC's remove), so
 * that "does a live attachment still hold this GUID?" and the UFM call that follows are one
 * step: <state_dir>/fabric.lock, flock. Returns the fd (close() releases) or -errno. */
int ufm_lock(const char *state_dir);

/* Removals UFM could not take (down, timed out): <state_dir>/fabric-journal/<pkey>-<guid>,
 * written before the attachment's record goes, so nothing is forgotten. */
int ufm_journal_add(const char *state_dir, uint16_t pkey, uint64_t guid);
int ufm_journal_remove(const char *state_dir, uint16_t pkey, uint64_t guid);
struct ufm_journal_entry {
	uint16_t pkey;
	uint64_t guid;
};
int ufm_journal_list(const char *state_dir, struct ufm_journal_entry **ret, size_t *ret_n);

/* "0002c90300216e70" into out (17 bytes), and back: accepts that, "0x..." and the colon form. */
void ufm_guid_format(uint64_t guid, char out[17]);
int ufm_guid_parse(const char *s, uint64_t *ret);

#endif
