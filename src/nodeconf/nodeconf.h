/* SPDX-License-Identifier: Apache-2.0 */
/* nodeconf: the node owner's settings of the CNI plugins, rdmak-cni and rdmak-ipam, in one file
 * (/etc/rdmak/cni.json; the chart's cni part installs it). Both run as root for every pod, and a
 * network config is a namespace user's: the host paths they write in, the sysfs root they act
 * through and the etcd clusters they talk to (with the node's client certificate) are the node's,
 * here; a network may only name a store of this file, or a folder beneath one it lists
 * (docs/cni.md and docs/ipam.md, "What it trusts"). The fabric managers have their own file
 * (src/ufm, /etc/rdmak/fabrics.json).
 *
 *   {"sysfs": "/sys",
 *    "stateDir": "/var/lib/cni/rdmak-cni",
 *    "logDir": "/var/log/rdmak",
 *    "dataDirs": ["/var/lib/cni/rdmak-ipam", "/var/lib/cni/networks"],
 *    "etcd": {"cluster": {"endpoints": ["https://10.0.0.1:2379"], "prefix": "/rdmak/ipam",
 *                         "tls": {"ca": "/etc/rdmak/etcd/cluster/ca.crt",
 *                                 "cert": "/etc/rdmak/etcd/cluster/tls.crt",
 *                                 "key": "/etc/rdmak/etcd/cluster/tls.key"}}}}
 *
 * Every key has the default shown (etcd: none); a node without the file has those. */
#ifndef RDMAK_NODECONF_H
#define RDMAK_NODECONF_H

#include <stdbool.h>
#include <stddef.h>

#define NODECONF_FILE "/etc/rdmak/cni.json"
/* The file's path from the plugins' environment (the runtime's: the node owner's); `rdmak ipam`
 * takes --cni-config. */
#define NODECONF_ENV	    "RDMAK_CNI_CONFIG"

#define NODECONF_SYSFS	    "/sys"
#define NODECONF_STATE_DIR  "/var/lib/cni/rdmak-cni"
#define NODECONF_LOG_DIR    "/var/log/rdmak"
#define NODECONF_DATA_DIR   "/var/lib/cni/rdmak-ipam" /* rdmak-ipam's own default */
#define NODECONF_HL_DIR	    "/var/lib/cni/networks"   /* host-local's default dataDir */
#define NODECONF_PREFIX	    "/rdmak/ipam"
#define NODECONF_NAME_MAX   63 /* a store's name: a DNS-1123 label */
#define NODECONF_DIRS_MAX   16
#define NODECONF_STORES_MAX 64
#define NODECONF_ERR_MAX    512

struct nodeconf_etcd {
	char name[NODECONF_NAME_MAX + 1];
	char **endpoints; /* "host:port", "http(s)://host:port"; n_endpoints >= 1 */
	size_t n_endpoints;
	char *prefix;
	char *tls_ca; /* PEM files, each read as fileio_read_owned() reads; NULL when not given */
	char *tls_cert;
	char *tls_key;
};

struct nodeconf {
	char *path;	 /* the file it came from, or would have (messages name it) */
	bool found;	 /* false: there is none, these are the defaults */
	char *sysfs;	 /* rdmak-cni's sysfs root */
	char *state_dir; /* rdmak-cni's records, and beneath it a network's stateDir */
	char *log_dir;	 /* a network's logFile lies beneath it */
	/* rdmak-ipam's file stores: a network's dataDir is one of them or beneath one; the
	 * first is where a network without dataDir keeps its store */
	char **data_dirs;
	size_t n_data_dirs;
	struct nodeconf_etcd *etcd; /* the etcd stores a network may name */
	size_t n_etcd;
};

/* The file's text, checked: every key known, names DNS-1123 labels, paths absolute without
 * "..". 0, or -EINVAL with "<json path>: <reason>" in err. */
int nodeconf_parse(const char *buf, size_t len, struct nodeconf *ret, char *err, size_t errlen);
/* The defaults, as a node without the file has them. */
int nodeconf_defaults(struct nodeconf *ret);
/* $RDMAK_CNI_CONFIG when set and not empty, else NODECONF_FILE. */
const char *nodeconf_default_path(void);
/* path (NULL: nodeconf_default_path()) read as fileio_read_owned() reads, then parsed. The
 * default file missing gives the defaults; a path the owner named (the variable, a flag) must
 * be there: -ENOENT. err says what is wrong with it, naming it. */
int nodeconf_load(const char *path, struct nodeconf *ret, char *err, size_t errlen);
void nodeconf_clear(struct nodeconf *n);
/* The etcd store named name, or NULL. */
const struct nodeconf_etcd *nodeconf_etcd_find(const struct nodeconf *n, const char *name);
/* The etcd store with exactly these endpoints (in any order) and prefix (NULL: the default),
 * or NULL: for a network config of the shape before stores were the node's. */
const struct nodeconf_etcd *nodeconf_etcd_find_endpoints(const struct nodeconf *n,
							 const char *const *endpoints, size_t n_ep,
							 const char *prefix);
/* The folder of log_file (beneath log_dir, the node's logDir), made when missing, reached
 * without a symbolic link or a folder anyone but root may write (fileio_open_dir_beneath): a
 * root process then appends to a file of root's folder. 0, or -errno with why in err. */
int nodeconf_log_folder(const char *log_dir, const char *log_file, char *err, size_t errlen);
/* "cluster, rail0" (at most n bytes), "none" without any: for messages naming the choices. */
void nodeconf_etcd_names(const struct nodeconf *n, char *out, size_t len);

#endif
