/* SPDX-License-Identifier: Apache-2.0 */
/* cnispec: the CNI protocol (spec 1.1.0 and the versions a runtime may still ask for:
 * 1.0.0, 0.4.0, 0.3.1, 0.3.0), shared by rdmak-cni and rdmak-ipam. Nothing else in rdmak
 * parses a CNI environment or a CNI JSON document.
 *
 * What a plugin gets from here:
 *   - the environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS with the
 *     K8S_POD_* keys, CNI_PATH), each name that may reach a path or netlink validated;
 *   - the request on stdin parsed from a buffer into the protocol's envelope (cniVersion, name,
 *     type, args, runtimeConfig, capabilities, prevResult, ipam, dns, cni.dev/valid-attachments),
 *     with every other top-level key handed to the plugin in conf->plugin, so that it can refuse
 *     what it does not know (code 2, naming the JSON path and the value);
 *   - version negotiation, the result model and its JSON in each version (0.3.x/0.4.0 carry
 *     ips[].version, 1.1.0 alone carries the route attributes and interface mtu/socketPath/pciID);
 *   - the error object {cniVersion, code, msg, details} (stdout only), the VERSION answer;
 *   - delegation: exec an IPAM plugin found on CNI_PATH with the same environment and stdin,
 *     its result parsed and its error object passed through;
 *   - log lines to stderr and, optionally, a log file;
 *   - cnispec_plugin_main(): the whole exchange (env, stdin, dispatch, output, exit code)
 *     around a table of the plugin's operations.
 *
 * Conventions (docs/STYLE): functions return >= 0 on success and -errno on failure; a failure
 * that should reach the runtime also fills a struct cnispec_error (code, msg, details), which
 * only the plugin's main prints. Out-parameters are written only on success. Nothing here
 * prints except the explicit printers and the logger.
 */
#ifndef RDMAK_CNISPEC_H
#define RDMAK_CNISPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "log/log.h"

/* ---- commands and versions ---------------------------------------------------------- */

enum cnispec_cmd {
	CNISPEC_CMD_NONE = 0,
	CNISPEC_CMD_ADD,
	CNISPEC_CMD_DEL,
	CNISPEC_CMD_CHECK,
	CNISPEC_CMD_GC,
	CNISPEC_CMD_STATUS,
	CNISPEC_CMD_VERSION,
};
const char *cnispec_cmd_name(enum cnispec_cmd cmd); /* "ADD"...; "" for NONE */
/* 0 and *ret, or -EINVAL for anything but the six names (exact, upper case). */
int cnispec_cmd_parse(const char *s, enum cnispec_cmd *ret);

/* Ordered: a later version is a larger value. */
enum cnispec_version {
	CNISPEC_V0_3_0,
	CNISPEC_V0_3_1,
	CNISPEC_V0_4_0,
	CNISPEC_V1_0_0,
	CNISPEC_V1_1_0,
	CNISPEC_V_COUNT,
};
#define CNISPEC_V_LATEST CNISPEC_V1_1_0
const char *cnispec_version_str(enum cnispec_version v);
/* 0 and *ret for a supported version string, -ENOTSUP for any other. */
int cnispec_version_parse(const char *s, enum cnispec_version *ret);
/* Whether cmd exists in version v: CHECK since 0.4.0, GC and STATUS since 1.1.0. */
bool cnispec_cmd_allowed(enum cnispec_cmd cmd, enum cnispec_version v);

/* ---- errors --------------------------------------------------------------------------- */

/* The spec's reserved codes. 100 and up are the plugin's own (documented by each plugin). */
enum cnispec_code {
	CNISPEC_E_VERSION = 1,		 /* incompatible CNI version */
	CNISPEC_E_UNSUPPORTED_FIELD = 2, /* unsupported field; msg names key and value */
	CNISPEC_E_UNKNOWN_CONTAINER = 3, /* container unknown: no cleanup needed */
	CNISPEC_E_ENV = 4,		 /* invalid environment; msg names the variables */
	CNISPEC_E_IO = 5,		 /* I/O failure */
	CNISPEC_E_DECODE = 6,		 /* failed to decode content */
	CNISPEC_E_CONFIG = 7,		 /* invalid network config */
	CNISPEC_E_TRY_AGAIN = 11,	 /* transient; the runtime may retry later */
	CNISPEC_E_UNAVAILABLE = 50,	 /* STATUS: cannot service ADD */
	CNISPEC_E_UNAVAILABLE_DEGRADED = 51,
	CNISPEC_E_INTERNAL = 999, /* libcni's code for an error that carries none */
};

#define CNISPEC_MSG_MAX	    256
#define CNISPEC_DETAILS_MAX 2048

struct cnispec_error {
	unsigned code; /* 0: not set */
	char msg[CNISPEC_MSG_MAX];
	char details[CNISPEC_DETAILS_MAX];
};

/* Fill err (may be NULL) with code, a short msg and printf-style details; returns ret (a
 * negative errno), so that `return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG, ...)` reads
 * as one step. Text longer than the buffers is cut. */
__attribute__((format(printf, 5, 6))) int cnispec_fail(struct cnispec_error *err, int ret,
						       unsigned code, const char *msg,
						       const char *fmt, ...);
/* The error object as JSON text on f, one line: {"cniVersion","code","msg"[,"details"]}.
 * version: the request's cniVersion string, or NULL for the latest. */
int cnispec_error_print(FILE *f, const char *version, const struct cnispec_error *err);
/* The VERSION answer: {"cniVersion": <version or latest>, "supportedVersions": [...]} */
int cnispec_version_print(FILE *f, const char *version);

/* ---- names from outside --------------------------------------------------------------- */

/* A container ID plus ':' plus an interface name fits one file name (NAME_MAX 255), so that
 * state keyed by attachment can be one file: IDs are at most 239 characters. Real runtimes use
 * 64 hex digits. */
#define CNISPEC_CONTAINER_ID_MAX 239
/* IFNAMSIZ - 1 */
#define CNISPEC_IFNAME_MAX 15

/* The spec's rule: [A-Za-z0-9][A-Za-z0-9_.-]*, at most CNISPEC_CONTAINER_ID_MAX. */
bool cnispec_container_id_valid(const char *s, const char **why);
/* The kernel's dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or white space;
 * rdmak also refuses '%' (the kernel would expand "net%d" into another name) and control
 * bytes. The one check of an interface name, wherever one comes from. *why: what is wrong,
 * as a phrase after the name ("contains '/'"). */
bool cnispec_ifname_valid(const char *s, const char **why);
/* The spec's network name: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 255 (it becomes a file name). */
bool cnispec_network_name_valid(const char *s, const char **why);
/* A plugin type (a file name on CNI_PATH): no '/', not "." or "..", printable, at most 255. */
bool cnispec_plugin_type_valid(const char *s, const char **why);

/* ---- environment ---------------------------------------------------------------------- */

struct cnispec_arg {
	char *key;
	char *value;
};

struct cnispec_env {
	enum cnispec_cmd cmd;
	char *container_id; /* NULL when not set (or set but empty, for optional ones) */
	char *netns;
	char *ifname;
	char *args;		 /* CNI_ARGS as given */
	char *path;		 /* CNI_PATH as given */
	struct cnispec_arg *arg; /* CNI_ARGS split "K=V;K=V" */
	size_t n_arg;
	/* From CNI_ARGS (pointers into arg[]), NULL when absent; each validated as Kubernetes
	 * does: namespace a DNS label, name a DNS subdomain, UID [A-Za-z0-9-]. */
	const char *pod_namespace;
	const char *pod_name;
	const char *pod_uid;
	const char *pod_infra_container_id;
	/* IP=: the address asked for (checked to be one), NULL when absent or empty */
	const char *ip;
	/* IgnoreUnknown=1|true: keys other than the ones above pass; without it they are refused */
	bool ignore_unknown;
};

/* Read the CNI variables from envp ("NAME=value" strings, like environ). Required per command
 * as the spec lists them (ADD, CHECK: CONTAINERID, NETNS, IFNAME; DEL: CONTAINERID, IFNAME;
 * GC: CNI_PATH; STATUS, VERSION: none). Every missing or invalid variable is named in one
 * error, code 4. On success *ret owns its strings (cnispec_env_clear). */
int cnispec_env_parse(char *const *envp, struct cnispec_env *ret, struct cnispec_error *err);
void cnispec_env_clear(struct cnispec_env *env);
/* The value of a CNI_ARGS key, or NULL. */
const char *cnispec_env_arg(const struct cnispec_env *env, const char *key);

/* ---- addresses ------------------------------------------------------------------------ */

struct cnispec_addr {
	int family;    /* AF_INET or AF_INET6 */
	uint8_t a[16]; /* network order; IPv4 in a[0..3], the rest zero */
};

struct cnispec_prefix {
	struct cnispec_addr addr; /* as written: host bits are kept ("10.1.0.5/16") */
	unsigned len;
};

/* Longest text of a prefix, NUL included. */
#define CNISPEC_PREFIX_STRLEN (46 + 4)

/* inet_pton(): dotted quad (no leading zeros) or IPv6 text; -EINVAL otherwise. */
int cnispec_addr_parse(const char *s, struct cnispec_addr *ret);
/* "addr/len" with len within the family; -EINVAL otherwise. */
int cnispec_prefix_parse(const char *s, struct cnispec_prefix *ret);
/* buf of at least CNISPEC_PREFIX_STRLEN; returns buf. */
const char *cnispec_addr_str(const struct cnispec_addr *a, char *buf);
const char *cnispec_prefix_str(const struct cnispec_prefix *p, char *buf);
bool cnispec_addr_equal(const struct cnispec_addr *a, const struct cnispec_addr *b);

/* ---- results -------------------------------------------------------------------------- */

struct cnispec_interface {
	char *name;
	char *mac;	   /* NULL: none */
	unsigned mtu;	   /* 0: not set (1.1.0) */
	char *sandbox;	   /* NULL or "": on the host */
	char *socket_path; /* 1.1.0 */
	char *pci_id;	   /* 1.1.0 */
};

struct cnispec_ip {
	struct cnispec_prefix address;
	bool has_gateway;
	struct cnispec_addr gateway;
	int interface; /* index into interfaces; -1: none (an IPAM result) */
};

/* Which optional route attributes are set (1.1.0). */
enum {
	CNISPEC_ROUTE_MTU = 1 << 0,
	CNISPEC_ROUTE_ADVMSS = 1 << 1,
	CNISPEC_ROUTE_PRIORITY = 1 << 2,
	CNISPEC_ROUTE_TABLE = 1 << 3,
	CNISPEC_ROUTE_SCOPE = 1 << 4,
};

struct cnispec_route {
	struct cnispec_prefix dst; /* canonical: host bits cleared when parsed */
	bool has_gw;
	struct cnispec_addr gw;
	unsigned set; /* CNISPEC_ROUTE_* */
	uint32_t mtu, advmss, priority, table, scope;
};

struct cnispec_dns {
	char **nameservers; /* NULL-terminated or NULL */
	char *domain;
	char **search;
	char **options;
};

struct cnispec_result {
	struct cnispec_interface *interfaces;
	size_t n_interfaces;
	struct cnispec_ip *ips;
	size_t n_ips;
	struct cnispec_route *routes;
	size_t n_routes;
	struct cnispec_dns dns;
};

struct cnispec_result *cnispec_result_new(void);
void cnispec_result_free(struct cnispec_result *r);
/* Append copies (strings duplicated). *ret_index (may be NULL): the new interface's index. */
int cnispec_result_add_interface(struct cnispec_result *r, const struct cnispec_interface *i,
				 size_t *ret_index);
int cnispec_result_add_ip(struct cnispec_result *r, const struct cnispec_ip *ip);
int cnispec_result_add_route(struct cnispec_result *r, const struct cnispec_route *rt);
/* Replace r's DNS with a copy of d. */
int cnispec_result_set_dns(struct cnispec_result *r, const struct cnispec_dns *d);
/* A deep copy. */
int cnispec_result_dup(const struct cnispec_result *r, struct cnispec_result **ret);

/* Parse a result object in version v (a prevResult, or what a delegated plugin printed).
 * Unknown keys are ignored (results come from other plugins and newer versions). On
 * failure -EINVAL with "<path>.<key>: reason" in why (path: "prevResult", say). */
int cnispec_result_from_json(const json_t *obj, enum cnispec_version v, const char *path,
			     struct cnispec_result **ret, char *why, size_t whylen);
/* The result as version v says (with "cniVersion"); NULL on ENOMEM. */
json_t *cnispec_result_to_json(const struct cnispec_result *r, enum cnispec_version v);
/* The result on f as one JSON document with a trailing newline. */
int cnispec_result_print(FILE *f, const struct cnispec_result *r, enum cnispec_version v);
/* Parse a DNS object ({nameservers, domain, search, options}) as a config's "dns" holds it. */
int cnispec_dns_from_json(const json_t *obj, const char *path, struct cnispec_dns *ret, char *why,
			  size_t whylen);
void cnispec_dns_clear(struct cnispec_dns *d);

/* ---- the request on stdin ------------------------------------------------------------- */

struct cnispec_attachment {
	char *container_id;
	char *ifname;
};

struct cnispec_conf {
	enum cnispec_version version;
	const char *cni_version; /* the text, in root */
	const char *name;	 /* validated network name */
	const char *type;	 /* validated plugin type */
	json_t *root;		 /* owned: the whole document */
	/* Borrowed from root; NULL when absent. */
	json_t *args;		  /* "args" */
	json_t *runtime_config;	  /* "runtimeConfig" */
	json_t *capabilities;	  /* "capabilities" (runtimes should not pass it; tolerated) */
	json_t *dns;		  /* "dns" */
	json_t *prev_result_json; /* "prevResult" */
	json_t *ipam;		  /* "ipam" */
	const char *ipam_type;	  /* ipam.type, validated, or NULL */
	struct cnispec_result *prev_result; /* parsed prevResult, or NULL */
	/* "cni.dev/valid-attachments" (GC), each name validated. */
	bool has_valid_attachments;
	struct cnispec_attachment *valid_attachments;
	size_t n_valid_attachments;
	/* Owned: the top-level keys the protocol does not define (the plugin's own, and the
	 * well-known ipMasq), for the plugin to take or refuse. Always an object. */
	json_t *plugin;
};

/* Parse the request for cmd from buf[0..len). Codes: 6 not JSON or not an object; 1 missing
 * or unsupported cniVersion; 7 a protocol key of the wrong type or an invalid name, type,
 * prevResult or attachment. For VERSION only cniVersion is read (and may be absent). */
int cnispec_conf_parse(const char *buf, size_t len, enum cnispec_cmd cmd, struct cnispec_conf **ret,
		       struct cnispec_error *err);
void cnispec_conf_free(struct cnispec_conf *c);
/* Whether (container_id, ifname) is in cni.dev/valid-attachments. */
bool cnispec_conf_attachment_valid(const struct cnispec_conf *c, const char *container_id,
				   const char *ifname);

/* Code 2 for a key the plugin does not support: msg "unsupported field", details
 * "<path>: unsupported key (value: <compact JSON, cut at 200 bytes>)[; hint]". */
int cnispec_fail_unsupported(struct cnispec_error *err, const char *path, const json_t *value,
			     const char *hint);

/* ---- delegation ----------------------------------------------------------------------- */

/* Find `type` on the ':'-separated CNI_PATH: the first directory holding an executable
 * regular file of that name. 1 found (*ret malloc'd), 0 not found, <0 error. */
int cnispec_find_plugin(const char *cni_path, const char *type, char **ret);
/* 1 when the plugin `type` that cnispec_find_plugin finds is the running program itself (the
 * same file as /proc/self/exe, through any link), else 0 (not found included: cnispec_delegate
 * then says so). */
int cnispec_plugin_is_self(const char *cni_path, const char *type);

/* Exec the delegated plugin `type` found on cni_path, with envp (CNI_COMMAND replaced by cmd,
 * everything else passed through), buf as its stdin and its stderr ours. On success: 0, and
 * for ADD *ret gets its result parsed in version v (ret may be NULL otherwise). Failure:
 *   -ENOENT   not on CNI_PATH (code 7, naming the type and the path);
 *   -EPROTO   it failed: err holds its error object (code, msg, details) as it printed it,
 *             or code 999 naming its exit status when it printed none;
 *   -EBADMSG  ADD succeeded but printed no valid result (code 6);
 *   other     -errno of the exec machinery (code 5). */
int cnispec_delegate(const char *type, enum cnispec_cmd cmd, const char *cni_path,
		     char *const *envp, const char *buf, size_t len, enum cnispec_version v,
		     struct cnispec_result **ret, struct cnispec_error *err);

/* ---- logging -------------------------------------------------------------------------- */

/* A CNI plugin logs through log/log.h: stdout belongs to the protocol, so lines go to stderr
 * (the runtime keeps it in its own log) and, when the config names one, to its logFile,
 * because containerd and CRI-O drop a successful plugin's stderr. cnispec_plugin_main names
 * the lines "<plugin> <CMD> <id>/<ifname>"; cnispec_delegate_in_process swaps the logger's
 * name, file and level for the plugin it runs (log_push) and puts them back (log_pop). */

/* ---- the plugin's main ---------------------------------------------------------------- */

struct cnispec_request {
	const struct cnispec_env *env;
	const struct cnispec_conf *conf;
	const char *buf; /* stdin as received, for delegation */
	size_t len;
	char *const *envp;
};

/* A plugin's operations, after rdma-core's verbs_context_ops: every slot filled (docs/STYLE
 * habit 6; cnispec_plugin_done_none for a plugin with nothing to release), and every operation
 * takes the request's context, the plugin's own state that setup made: nothing per request lives
 * in a plugin's globals, so that two plugins can run in one process (rdmak-cni runs rdmak-ipam
 * in its own, cnispec_delegate_in_process) and one plugin twice.
 *
 * setup runs after the request is parsed and before the operation (parse the plugin's keys,
 * open a log file or a store): 0 and *ret_ctx (NULL is a valid context), or -errno with err
 * filled and nothing left to release; an error there is printed like the operation's. Each
 * operation returns 0, or -errno with err filled (an unfilled err becomes code 999 with
 * strerror); add's result is printed in the request's version. done(ctx) follows every operation
 * whose setup succeeded, whatever the operation returned, and releases the context. */
struct cnispec_plugin_ops {
	const char *name; /* "rdmak-ipam" */
	int (*setup)(const struct cnispec_request *req, void **ret_ctx, struct cnispec_error *err);
	int (*add)(void *ctx, const struct cnispec_request *req, struct cnispec_result **ret,
		   struct cnispec_error *err);
	int (*del)(void *ctx, const struct cnispec_request *req, struct cnispec_error *err);
	int (*check)(void *ctx, const struct cnispec_request *req, struct cnispec_error *err);
	int (*gc)(void *ctx, const struct cnispec_request *req, struct cnispec_error *err);
	int (*status)(void *ctx, const struct cnispec_request *req, struct cnispec_error *err);
	void (*done)(void *ctx);
};

/* done for a plugin whose context owns nothing: does nothing. */
void cnispec_plugin_done_none(void *ctx);

/* The whole exchange: environment, stdin (at most 4 MiB), VERSION, the request, the
 * version check for the command (CHECK needs 0.4.0, GC and STATUS 1.1.0: code 1), the
 * operation, and the result or the error object on out. Returns the exit code: 0 or 1. */
int cnispec_plugin_main(const struct cnispec_plugin_ops *ops, char *const *envp, int in_fd,
			FILE *out);

/* Delegation without an exec, for a delegated plugin that is this very program (rdmak-cni's
 * ipam.type rdmak-ipam when CNI_PATH's rdmak-ipam is a link to the running binary): ops run on
 * req as the plugin's own process would run them, for cmd: the version check, setup, the
 * operation, done. The plugin's log lines carry its name and go where its own config says
 * (logFile, logLevel), the caller's logger is back afterwards; ADD's result goes through its
 * JSON form in req's version, as if printed and read back. Returns as cnispec_delegate: 0, or
 * -EPROTO with err the plugin's error (-EBADMSG for an ADD without a valid result). */
int cnispec_delegate_in_process(const struct cnispec_plugin_ops *ops,
				const struct cnispec_request *req, enum cnispec_cmd cmd,
				struct cnispec_result **ret, struct cnispec_error *err);

/* Hand req to the full rdmak, for what the per-pod binary (src/pod.c) does not hold (the etcd
 * store, the fabric manager's HTTPS client): exec it as argv0 ("rdmak-ipam", "rdmak-cni") with
 * req's environment and req's bytes as its stdin (a memory file), after flushing stdout and
 * closing the log file. Where the full rdmak is, in order: beside the build tree's build/cni/
 * (build/rdmak), the DaemonSet's bundle on the host (/opt/rdmak/bin/rdmak, `rdmak cni
 * install`), `make install`'s ($(PREFIX)/bin/rdmak). Returns only on failure: -ENOPKG with code
 * 7, msg what ("the etcd store needs the full rdmak") and details naming the three places. */
int cnispec_exec_full(const struct cnispec_request *req, const char *argv0, const char *what,
		      struct cnispec_error *err);

/* The plugins this program holds, which a main plugin runs in its own process instead of
 * exec'ing them: the program's main() registers them before it dispatches (src/main.c,
 * src/pod.c), so that no role names another (rdmak-cni never includes rdmak-ipam's header).
 * here(req) says whether this process can serve req itself (NULL: always). Process-wide, set
 * before any thread starts, as the logger is. -ENOSPC past 4. */
int cnispec_plugin_register(const struct cnispec_plugin_ops *ops,
			    bool (*here)(const struct cnispec_request *req));
/* The registered plugin to run in process for delegated plugin `type` of req: registered under
 * that name, CNI_PATH's `type` is this very program (cnispec_plugin_is_self) and it can serve
 * req here; NULL: exec it (cnispec_delegate). */
const struct cnispec_plugin_ops *cnispec_plugin_in_process(const struct cnispec_request *req,
							   const char *type);

#endif
