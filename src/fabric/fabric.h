/* SPDX-License-Identifier: Apache-2.0 */
/* fabric: InfiniBand partition membership for the VFs rdmak-cni gives pods, node-side and
 * synchronous, through the fabric manager (UFM first) -- no cluster controller, no GUID pool in
 * memory. What lives here:
 *   config.c   the CNI network config's "fabric" object (a dispatch table) and its Secret
 *   https.c    one HTTPS request with a deadline (GnuTLS, loaded on first use; verification on)
 *   ufm.c      UFM's PKey GUIDs REST API: version, add, remove, get one pkey's GUIDs
 *   journal.c  the node's ledger in the state dir: removals UFM could not take yet, the lock
 *   cli.c      `rdmak fabric gc|list|check`
 * docs/fabric.md says what was tested against what. */
#ifndef RDMAK_FABRIC_H
#define RDMAK_FABRIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch/dispatch.h"

#define FABRIC_DEFAULT_TIMEOUT_MS 5000
#define FABRIC_ERR_MAX		  512

struct fabric_config {
	bool set;	   /* a "fabric" object was given */
	char *ufm;	   /* "https://host[:port][/prefix]" */
	char *credentials; /* a mounted Secret's directory: username + password, or token */
	char *ca_file;	   /* PEM bundle the UFM's certificate must chain to; NULL: the system's */
	unsigned timeout_ms; /* each call's deadline, connect to last byte */
	bool limited;	     /* membership "limited" (default full) */
	bool index0;	     /* UFM's index0 (default false) */
	bool ip_over_ib;     /* UFM's ip_over_ib (default true) */
};

/* A dispatch fn for the "fabric" row of a config table: target is a struct fabric_config. */
int fabric_config_dispatch(struct dispatch_ctx *d, const char *path, json_t *v, void *target);
void fabric_config_clear(struct fabric_config *c);

/* ---- UFM ----------------------------------------------------------------------------------- */

struct fabric_client;

/* Reads the credentials (the Secret's files) and checks the URL; connects nothing yet.
 * -EINVAL / -errno with a sentence in err. */
int fabric_client_new(const struct fabric_config *cfg, struct fabric_client **ret, char *err,
		      size_t errlen);
void fabric_client_free(struct fabric_client *c);
/* The last failure's sentence ("UFM https://...: connection refused"). */
const char *fabric_client_error(const struct fabric_client *c);

/* Each call is one request within cfg->timeout_ms. Errors: -ETIMEDOUT, -ECONNREFUSED,
 * -EHOSTUNREACH and other connect errors, -EACCES (401/403), -EPROTO (TLS, including a
 * certificate that does not verify, or an answer that is not HTTP/JSON), -EIO (5xx), -EINVAL
 * (4xx other than 401/403/404). */
int fabric_ufm_version(struct fabric_client *c, char *out, size_t n);
/* POST /resources/pkeys: the GUIDs join pkey (0x0001-0x7ffe) with cfg's membership. */
int fabric_ufm_add(struct fabric_client *c, uint16_t pkey, const uint64_t *guids, size_t n);
/* DELETE /resources/pkeys/<pkey>/guids/<g>,<g>: a pkey UFM does not know (404) is success. */
int fabric_ufm_remove(struct fabric_client *c, uint16_t pkey, const uint64_t *guids, size_t n);

struct fabric_member {
	uint64_t guid;
	bool limited;
	bool index0;
};
/* GET /resources/pkeys/<pkey>?guids_data=true: 1 and the members (malloc'd), 0 when UFM has no
 * such pkey. */
int fabric_ufm_members(struct fabric_client *c, uint16_t pkey, struct fabric_member **ret,
		       size_t *ret_n);

/* ---- the node's ledger ------------------------------------------------------------------------ */

/* The lock every membership change of this node takes (ADD's add, DEL's and GC's remove), so
 * that "does a live attachment still hold this GUID?" and the UFM call that follows are one
 * step: <state_dir>/fabric.lock, flock. Returns the fd (close() releases) or -errno. */
int fabric_lock(const char *state_dir);

/* Removals UFM could not take (down, timed out): <state_dir>/fabric-journal/<pkey>-<guid>,
 * written before the attachment's record goes, so nothing is forgotten. */
int fabric_journal_add(const char *state_dir, uint16_t pkey, uint64_t guid);
int fabric_journal_remove(const char *state_dir, uint16_t pkey, uint64_t guid);
struct fabric_entry {
	uint16_t pkey;
	uint64_t guid;
};
int fabric_journal_list(const char *state_dir, struct fabric_entry **ret, size_t *ret_n);

/* "0002c90300216e70" into out (17 bytes), and back: accepts that, "0x..." and the colon form. */
void fabric_guid_format(uint64_t guid, char out[17]);
int fabric_guid_parse(const char *s, uint64_t *ret);

#endif
