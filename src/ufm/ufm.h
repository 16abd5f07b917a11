/* SPDX-License-Identifier: Apache-2.0 */
/* ufm: the fabric manager's client, under the roles that change InfiniBand partition membership
 * (rdmak-cni's partition.c, `rdmak fabric`): node-side and synchronous, through the fabric
 * manager (UFM first) -- no cluster controller, no GUID pool in memory. What lives here:
 *   node.c     the node's fabrics file (the fabric managers by name) and the one reader of a
 *              file that holds a secret or the node's settings
 *   https.c    one HTTPS request with a deadline (GnuTLS through src/http/dl.c; verification on)
 *              and the parser of its answer
 *   client.c   UFM's PKey GUIDs REST API: version, add, remove, get one pkey's GUIDs
 *   journal.c  the node's ledger in the state dir: each fabric's lock and the removals its
 *              fabric manager could not take yet
 * docs/fabric.md says what was tested against what. */
#ifndef RDMAK_UFM_H
#define RDMAK_UFM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UFM_DEFAULT_TIMEOUT_MS 5000
#define UFM_ERR_MAX	       512
/* A fabric's name: a DNS-1123 label, so that it is a file name in the ledger too. */
#define UFM_NAME_MAX 63
#define UFM_URL_MAX  1024

/* ---- the node's fabrics (node.c) -------------------------------------------------------------
 * The fabric managers a node talks to belong to the node's owner, in one file (the chart's fabric
 * part installs it): a network config only names one of them, so that no namespace user can send
 * the node's credentials elsewhere or read a host file as credentials (docs/fabric.md, "What it
 * trusts"):
 *   {"stateDir": "/var/lib/cni/rdmak-cni",
 *    "fabrics": {"rail0": {"ufm": "https://ufm-a.example.com", "credentials": "/etc/rdmak/fabric/rail0",
 *                          "ca": "/etc/rdmak/fabric/rail0/ca.crt", "timeoutSeconds": 5}}} */
#define UFM_FABRICS_FILE "/etc/rdmak/fabrics.json"
/* The file's path for rdmak-cni, from the runtime's environment (the node owner's); unset: the
 * default above. `rdmak fabric` takes --fabrics. */
#define UFM_FABRICS_ENV "RDMAK_FABRICS"

struct ufm_fabric {
	char name[UFM_NAME_MAX + 1];
	char *ufm;	   /* "https://host[:port][/prefix]" */
	char *credentials; /* a directory: username + password, or token (fileio_read_owned) */
	char *ca_file;	   /* PEM bundle the UFM's certificate must chain to; NULL: the system's */
	unsigned timeout_ms; /* each call's deadline, connect to last byte */
};

struct ufm_fabrics {
	char *path;	 /* the file it came from */
	char *state_dir; /* the node's ledger: the records of networks with a fabric, journal, locks */
	struct ufm_fabric *v;
	size_t n;
};

/* The file's text, checked: every key known, each value in range, names DNS-1123 labels, paths
 * absolute. 0, or -EINVAL with "<json path>: <reason>" in err. */
int ufm_fabrics_parse(const char *buf, size_t len, struct ufm_fabrics *ret, char *err,
		      size_t errlen);
/* $RDMAK_FABRICS when set and not empty, else UFM_FABRICS_FILE. */
const char *ufm_fabrics_default_path(void);
/* path (NULL: ufm_fabrics_default_path()) read as fileio_read_owned() reads, then
 * parsed. -ENOENT when there is none; err says what is wrong with it. */
int ufm_fabrics_load(const char *path, struct ufm_fabrics *ret, char *err, size_t errlen);
void ufm_fabrics_clear(struct ufm_fabrics *f);
/* The fabric named name, or NULL. */
const struct ufm_fabric *ufm_fabrics_find(const struct ufm_fabrics *f, const char *name);
/* The fabric whose ufm is url, or NULL (an attachment made before fabrics were named). */
const struct ufm_fabric *ufm_fabrics_find_url(const struct ufm_fabrics *f, const char *url);
/* "rail0, rail1" (at most errlen bytes): for messages that say which names there are. */
void ufm_fabrics_names(const struct ufm_fabrics *f, char *out, size_t n);

/* ---- UFM ----------------------------------------------------------------------------------- */

struct ufm_client;

/* Reads the fabric's credentials and CA (fileio_read_owned) and checks the URL; connects nothing
 * yet. -EINVAL / -errno with a sentence in err. */
int ufm_client_new(const struct ufm_fabric *f, struct ufm_client **ret, char *err, size_t errlen);
void ufm_client_free(struct ufm_client *c);
/* The last failure's sentence ("UFM https://...: connection refused"). */
const char *ufm_client_error(const struct ufm_client *c);

/* Each call is one request within the fabric's timeout. Errors: -ETIMEDOUT, -ECONNREFUSED,
 * -EHOSTUNREACH and other connect errors, -EACCES (401/403), -EPROTO (TLS, including a
 * certificate that does not verify, or an answer that is not HTTP/JSON), -EIO (5xx), -EINVAL
 * (4xx other than 401/403/404). */
int ufm_version(struct ufm_client *c, char *out, size_t n);
/* How a GUID joins a partition: UFM's membership, index0 and ip_over_ib (a network's choice). */
struct ufm_join {
	bool limited; /* membership "limited" (default full) */
	bool index0;
	bool ip_over_ib;
};
/* POST /resources/pkeys: the GUIDs join pkey (0x0001-0x7ffe) as j says. */
int ufm_add(struct ufm_client *c, uint16_t pkey, const uint64_t *guids, size_t n,
	    const struct ufm_join *j);
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

/* Whether err (a call's -errno) says the fabric manager may not have heard the request at all
 * or may have taken it without answering (connect errors, a reset, the deadline), as opposed to
 * an answer that refused it. */
bool ufm_error_unanswered(int err);

/* ---- the node's ledger (journal.c) ---------------------------------------------------------
 * Under the node's state dir, one folder per fabric: <state_dir>/.fabric/<name>/ (a network's
 * folder never starts with a dot), holding the fabric's lock and its journal. */

/* The lock every membership change of one fabric on this node takes (ADD's add, DEL's and GC's
 * remove), so that "does an attachment of this node still hold this GUID?" and the call that
 * follows are one step; another fabric's calls never wait on it. flock: a holder killed with -9
 * releases it. Returns the fd (close() releases) or -errno. */
int ufm_lock(const char *state_dir, const char *fabric);

/* Removals a fabric manager could not take (down, timed out), keyed by the fabric they belong to
 * and retried only against it: <state_dir>/.fabric/<name>/journal/<pkey>-<guid>, holding the URL
 * it was journaled for. Written before the attachment's record goes, so nothing is forgotten. */
struct ufm_journal_entry {
	char fabric[UFM_NAME_MAX + 1]; /* "": journaled before fabrics were named (legacy) */
	char url[UFM_URL_MAX + 1];     /* the fabric's URL then ("" for a legacy entry) */
	uint16_t pkey;
	uint64_t guid;
};
/* f with name "": a removal of no fabric the node knows, into the legacy folder
 * (<state_dir>/fabric-journal/<pkey>-<guid>), which nothing retries: `rdmak fabric list` shows
 * it for its owner to make by hand. */
int ufm_journal_add(const char *state_dir, const struct ufm_fabric *f, uint16_t pkey,
		    uint64_t guid);
/* fabric "" removes a legacy entry. */
int ufm_journal_remove(const char *state_dir, const char *fabric, uint16_t pkey, uint64_t guid);
/* The entries of fabric ("": the legacy ones; NULL: every fabric's, then the legacy ones). */
int ufm_journal_list(const char *state_dir, const char *fabric, struct ufm_journal_entry **ret,
		     size_t *ret_n);

/* "0002c90300216e70" into out (17 bytes), and back: accepts that, "0x..." and the colon form. */
void ufm_guid_format(uint64_t guid, char out[17]);
int ufm_guid_parse(const char *s, uint64_t *ret);

#endif
