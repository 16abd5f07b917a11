/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-cni's network configuration: the plugin's own keys (conf->plugin, runtimeConfig) read
 * and checked, with the JSON path of a bad one in the error, and what a network names of the
 * node's resolved beneath the node's folders (src/nodeconf). A floor module: the cni role runs
 * it at every command, `rdmak convert` checks what it writes with it, the fuzzer reaches it. */
#ifndef RDMAK_CNICONF_H
#define RDMAK_CNICONF_H

#include <stdbool.h>
#include <stdint.h>

#include "attach/attach.h"
#include "cnispec/cnispec.h"
#include "hw/hw.h"
#include "log/log.h"
#include "nl/nl.h"
#include "ufm/ufm.h"

/* CNICONF_LINK_RDMA makes no interface: after another plugin in a chain (rdma-cni's role) it moves
 * the RDMA device of the interface that plugin made into the pod (chain.c). */
enum cniconf_link {
	CNICONF_LINK_MACVLAN,
	CNICONF_LINK_IPOIB,
	CNICONF_LINK_HOSTDEV,
	CNICONF_LINK_RDMA
};

/* A VF's settings set through its PF, in the order ADD applies them (sriov-cni's
 * ApplyVFConfig: vlan, mac, rates, spoofchk, trust, link state); undone in reverse. */
enum {
	CNICONF_VF_VLAN = 1 << 0,
	CNICONF_VF_MAC = 1 << 1,
	CNICONF_VF_RATE = 1 << 2,
	CNICONF_VF_SPOOFCHK = 1 << 3,
	CNICONF_VF_TRUST = 1 << 4,
	CNICONF_VF_LINK_STATE = 1 << 5,
	CNICONF_VF_ALL = (1 << 6) - 1,
};
_Static_assert(CNICONF_VF_ALL == ATTACH_VF_BITS,
	       "the attachment record stores every CNICONF_VF_* bit");
/* The configuration key of one CNICONF_VF_* bit, for messages ("vlan", "mac", "min_tx_rate/max_tx_rate"). */
const char *cniconf_vf_key_name(unsigned bit);

#define CNICONF_DEFAULT_TABLE_BASE    100
#define CNICONF_DEFAULT_RULE_PRIORITY 30000
#define CNICONF_DEFAULT_STATE_DIR     ATTACH_DEFAULT_DIR

/* A network's "fabric": one of the node's fabrics by name (its address, credentials, CA and
 * timeout are the node's: ufm.h) and how the VF's GUID joins the partition. */
struct cniconf_fabric {
	bool set;
	char name[UFM_NAME_MAX + 1];
	struct ufm_join join;
	/* DEL and GC of an attachment made before fabrics were the node's: the config's old "ufm",
	 * only to find the node's fabric of that address by (never contacted as given) */
	char *legacy_url;
};

struct cniconf {
	enum cniconf_link link;
	/* link was absent and only master named the kind: macvlan or ipoib by the master's link
	 * type, which cni_config_resolve_link reads (link says macvlan until then) */
	bool link_by_master;
	/* link was absent and deviceID (or pciBusID) was all: hostdev, or rdma when the command
	 * shows a chain (cni_config_resolve_chain). Multus writes deviceID into every plugin of a
	 * chain, so rdma-cni's {"type": "rdma"} reaches the plugin with it */
	bool link_by_chain;
	char master[NL_IFNAMSIZ]; /* macvlan, ipoib */
	uint32_t macvlan_mode;	  /* MACVLAN_MODE_* */
	bool has_pkey;
	uint16_t pkey;		    /* ipoib: the child's partition; hostdev: recorded */
	char device[NL_IFNAMSIZ];   /* hostdev by name */
	char device_id[HW_BDF_MAX]; /* hostdev by PCI function */
	bool has_guid;
	uint64_t guid; /* hostdev IB VF: node and port GUID */
	char *sysfs;   /* NULL: /sys */
	unsigned mtu;  /* 0: leave */
	bool has_mac;
	uint8_t mac[6];
	/* sriov-cni's VF settings, applied through the PF (CNICONF_VF_* bits of the keys given; mac is
	 * applied through the PF too when the device is a VF, decided at ADD) */
	unsigned vf_keys;
	uint32_t vlan, vlan_qos;
	uint16_t vlan_proto; /* ETH_P_8021Q, ETH_P_8021AD */
	uint32_t min_tx_rate, max_tx_rate;
	bool spoofchk, trust;
	uint32_t link_state; /* IFLA_VF_LINK_STATE_* */
	bool rdma_isolation;
	bool policy_routing;
	uint32_t table_base;
	uint32_t rule_priority;
	char *state_dir;
	char *log_file;
	bool has_log_level;
	enum log_level log_level;
	bool state_dir_set; /* given: else the default, or for a fabric the node's (partition.c) */
	/* the node's folder state_dir lies beneath (cniconf_resolve; partition.c: the fabrics
	 * file's ledger), from which cniconf_open_dirs() reaches it */
	char *state_base;
	char *log_dir;	      /* the node's logDir, which log_file lies beneath */
	const char *guid_key; /* the key guid came from: "guid" or "runtimeConfig.infinibandGUID" */
	struct cniconf_fabric fabric; /* hostdev with pkey: the partition's fabric */
	/* the node's fabrics file, read at setup for a network with a fabric (cni_partition_setup):
	 * NULL with fabrics_err saying why when it cannot be read */
	struct ufm_fabrics *fabrics;
	char *fabrics_err;
};

/* The plugin's keys of a parsed request (conf->plugin, runtimeConfig), checked: a key it does
 * not know is code 2 (naming it and its value), a bad value code 7 naming the JSON path.
 * Lookups in the kernel or sysfs come later: this is the part a fuzzer can reach. */
int cniconf_parse(const struct cnispec_conf *conf, struct cniconf *ret, struct cnispec_error *err);
/* The same with each key accepted but not applied (an anchor's key, docs/cni.md) named through
 * warn(userdata, path, why). */
int cniconf_parse_warn(const struct cnispec_conf *conf, struct cniconf *ret,
		       void (*warn)(void *userdata, const char *path, const char *why),
		       void *userdata, struct cnispec_error *err);
/* The same for one command: DEL and GC also take a "fabric" of the shape before fabrics were the
 * node's (an attachment made then is deleted with the config of its ADD); the others refuse it
 * naming what to write instead. */
int cniconf_parse_cmd(const struct cnispec_conf *conf, enum cnispec_cmd cmd, struct cniconf *ret,
		      void (*warn)(void *userdata, const char *path, const char *why),
		      void *userdata, struct cnispec_error *err);
void cniconf_clear(struct cniconf *c);
struct nodeconf;
/* What a network names of the node's, from its CNI settings (src/nodeconf): the sysfs root is the
 * node's (another is refused, code 7; DEL and GC warn and take the node's), stateDir lies beneath
 * the node's (code 7 naming it, whatever the command: DEL acts on what the records say), logFile
 * beneath its logDir (code 7; DEL and GC warn and log to stderr only). A network config is a
 * namespace user's, and rdmak-cni acts as root through the sysfs root, on the records and in the
 * log file. warn as for cniconf_parse_warn. */
int cniconf_resolve(struct cniconf *c, const struct nodeconf *n, enum cnispec_cmd cmd,
		    void (*warn)(void *userdata, const char *path, const char *why), void *userdata,
		    struct cnispec_error *err);
/* The state dir (created) and the log file's folder, reached beneath the node's folders without
 * a symbolic link or a folder anyone but root may write (fileio_open_dir_beneath): after it,
 * their paths name what root made. Code 7 naming the key and what is wrong. */
int cniconf_open_dirs(const struct cniconf *c, bool state, struct cnispec_error *err);
const char *cniconf_link_name(enum cniconf_link k);
const char *cniconf_macvlan_mode_name(uint32_t mode);

#endif
