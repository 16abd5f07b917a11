/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin's configuration: k8s-rdma-shared-dev-plugin's `configList`,
 * sriov-network-device-plugin's `resourceList`, or both in one file plus rdmak's own keys
 * (docs/plugin.md). Parsed from a buffer so that the parser has a fuzz target; every
 * refusal names the JSON path of the offending field. */
#ifndef RDMAK_POOL_CONFIG_H
#define RDMAK_POOL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/strv.h"

/* One pfNames entry: "ens1f0" (every function of the PF) or "ens1f0#0-3,7" (those VFs). */
struct pool_pf_sel {
	char *pf;	       /* netdev name or PF BDF */
	bool all;	       /* no '#': the PF and all its VFs */
	unsigned (*ranges)[2]; /* inclusive [lo, hi] */
	size_t n_ranges;
};

/* Parse "ens1f0#0-3,7" into *ret. -EINVAL with a reason in why (static text). */
int pool_pf_sel_parse(const char *s, struct pool_pf_sel *ret, const char **why);
void pool_pf_sel_clear(struct pool_pf_sel *p);
bool pool_pf_sel_has_vf(const struct pool_pf_sel *p, int vf_index);

/* A pfNames or rootDevices list: the functions of any of these PFs (OR). */
struct pool_pf_list {
	struct pool_pf_sel *v;
	size_t n;
};

struct pool_selector {
	/* both formats */
	struct strv_list vendors, devices, drivers, link_types;
	/* shared-dev-plugin */
	struct strv_list if_names;
	/* sriov-network-device-plugin */
	struct pool_pf_list pf_names;	  /* by the PF's netdev name (or its address) */
	struct pool_pf_list root_devices; /* by the PF's PCI address */
	struct strv_list pci_addresses;
	int is_rdma; /* -1 unset */
	bool need_vhost_net;
};

/* Who hands a resource's devices out: the device plugin and the DRA driver keep no common
 * account, so a device is the one's or the other's, never both ("servedBy"). */
enum pool_served {
	POOL_BY_PLUGIN, /* rdmak plugin: the default */
	POOL_BY_DRA,	/* rdmak dra publishes the devices as ResourceSlices */
	POOL_BY_ANY,	/* pool_opts.served: every resource's pool */
};

enum pool_kind {
	POOL_SHARED,	/* configList: rdmaHcaMax ids share every selected HCA */
	POOL_EXCLUSIVE, /* resourceList: one id per PCI function */
};

struct pool_env {
	char *name;
	char *value; /* template: ${hcas} ${netdevs} are expanded (docs/plugin.md) */
};

struct pool_resource {
	char path[32]; /* "configList[1]", for messages */
	enum pool_kind kind;
	char *prefix;	 /* "rdma", "nvidia.com" */
	char *name;	 /* "rdma_a100" */
	char *full_name; /* "rdma/rdma_a100" */
	unsigned rdma_hca_max;
	struct pool_selector *sels; /* OR of these */
	size_t n_sels;
	struct pool_env *envs;
	size_t n_envs;
	bool exclude_topology;
	int served_by;	       /* enum pool_served: POOL_BY_PLUGIN or POOL_BY_DRA */
	char *additional_info; /* sriov-dp additionalInfo as compact JSON text, or NULL */
};

struct pool_config {
	int periodic_update_s;	/* full rescan interval; 0 disables */
	int health_interval_ms; /* rdmak: port/carrier poll period */
	int rdma_netns_mode;	/* rdmak: the RDMA netns mode the node must be in: 1 shared,
				  * 0 exclusive, -1 not said ("rdmaNetnsMode") */
	struct pool_resource *res;
	size_t n_res;
	/* "<json path>: <why>" of each key accepted and ignored, as the anchors ignore them: the
	 * plugin logs them (stderr with --dry-run) */
	struct strv_list warnings;
};

/* Defaults when the config does not say. */
#define POOL_DEFAULT_RESCAN_S	   60 /* k8s-rdma-shared-dev-plugin's default */
#define POOL_DEFAULT_HEALTH_MS	   250
#define POOL_DEFAULT_SHARED_PREFIX "rdma"
/* sriov-network-device-plugin's -resource-prefix */
#define POOL_DEFAULT_SRIOV_PREFIX "intel.com"

/* Parse buf[0..len). On failure returns -EINVAL and writes "<json path>: <reason>" to err.
 * Keys the anchors ignore are accepted and named in (*ret)->warnings. */
int pool_config_parse(const char *buf, size_t len, struct pool_config **ret, char *err,
		      size_t errlen);
void pool_config_free(struct pool_config *cfg);

/* pool_config_load() flags */
enum {
	/* Read by a command that reads the file once and exits (rdmak doctor, --dry-run, --once):
	 * a pipe or FIFO is read to its end (`--plugin-config <(kubectl get cm ...)`). Without it
	 * only a regular file (or a symbolic link to one, as a ConfigMap's) is taken, opened
	 * without waiting: a role that keeps running would block on a FIFO's open, and a pipe has
	 * nothing left to read when the role reloads. */
	POOL_CONFIG_ONCE = 1 << 0,
};

/* The config file at path, read as every role reads it (rdmak plugin, dra, doctor and
 * exporter): at most 4 MiB, of the kind flags say, through daemon_config_load (its errors, err
 * as "<path>: <why>", *ret_text for daemon_refusal_is_new). The warnings stay in
 * (*ret)->warnings for the caller to say. */
int pool_config_load(const char *path, unsigned flags, struct pool_config **ret, char **ret_text,
		     char *err, size_t errlen);

#endif
