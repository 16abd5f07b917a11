/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-cni: secondary RDMA interfaces for pods (macvlan, IPoIB, a whole netdev such as an
 * SR-IOV VF), RDMA netns isolation and per-interface policy routing, as one CNI plugin.
 *
 * The CNI exchange (environment, stdin, versions, result and error JSON, IPAM delegation) is
 * cnispec's; the plugin's own keys, validated, are src/cniconf's; netlink is src/nl's; sysfs is
 * read through hw's root context; the record a hostdev attachment leaves, so DEL and GC can give
 * the device back, is src/attach's; the fabric manager's client is src/ufm's. What lives here:
 *   link*.c    the link kinds behind one ops table (macvlan, ipoib, hostdev)
 *   rdma.c     the RDMA subsystem's netns mode and moving a function's RDMA device
 *   routing.c  addresses, the per-interface table, its rule and the multi-rail sysctls
 *   chain.c    the rdma link: rdma-cni's role after another plugin, the RDMA device only
 *   cni.c      the commands (ADD with rollback, DEL, CHECK, GC, STATUS) and cni_main
 */
#ifndef RDMAK_CNI_H
#define RDMAK_CNI_H

#include <stdbool.h>
#include <stdint.h>

#include "attach/attach.h"
#include "cniconf/cniconf.h"
#include "cnispec/cnispec.h"
#include "hw/hw.h"
#include "log/log.h"
#include "nl/nl.h"
#include "ufm/ufm.h"

/* Plugin error codes (the spec leaves 100 and up to plugins; docs/cni.md lists them). */
enum {
	CNI_E_KERNEL = 100, /* the kernel refused a change (its reason in details) */
	CNI_E_DEVICE = 101, /* a device the configuration names is absent or unusable */
	CNI_E_RDMA =
		102, /* RDMA isolation impossible here (no subsystem, shared mode, no device) */
	CNI_E_IFNAME_TAKEN = 103, /* CNI_IFNAME already exists in the pod */
	CNI_E_TABLE = 104,	  /* the interface's routing table is used by another interface */
	CNI_E_STATE = 105,	  /* the attachment record could not be read or written */
	CNI_E_FABRIC = 106, /* the fabric manager did not put the VF's GUID into the partition */
	CNI_E_CHECK = 110,  /* CHECK: the live state differs from prevResult */
};

/* With link_by_master: the kind by the master's link type in rt's namespace (InfiniBand:
 * ipoib, else macvlan). A master not found leaves macvlan, for ADD to name it missing. */
int cni_config_resolve_link(struct cniconf *c, struct nl_rt *rt);

/* The policy routing table of interface `ifname`: table_base + the number its name ends with
 * ("net1" -> 101), or for a name without one, table_base + 65536 + a hash of the name (in
 * 0..65535). 0 when that lands on a reserved table (0, 253..255) or past 2^31. The same answer
 * for ADD, CHECK, DEL and GC, with nothing stored. */
uint32_t cni_route_table(uint32_t table_base, const char *ifname);

/* What one command works with. */
struct cni_ctx {
	const struct cnispec_request *req;
	const struct cniconf *cfg;
	const char *ifname;
	int host_ns, pod_ns;	  /* fds; pod_ns -1 without a (live) pod namespace */
	struct nl_rt *host, *pod; /* pod NULL without one */
	struct hw_ctx *hw;	  /* the sysfs root */
	uint32_t table;		  /* policy routing table; 0 without policy routing */
	int master_ifindex;	  /* macvlan, ipoib: master in the host's namespace */
	struct attach_record *st; /* hostdev's record */
	/* ADD's call to the fabric manager went unanswered (timed out, reset): its rollback
	 * journals the removal instead of waiting as long again */
	bool fabric_unanswered;
};

/* Open what a command works with: the plugin's own namespace and rtnetlink there, the sysfs
 * root (hostdev, rdma), the policy routing table. 0 or <0 with err. cni_ctx_close() undoes
 * it, also after a failure. */
int cni_ctx_open(struct cni_ctx *c, const struct cniconf *cfg, const struct cnispec_request *req,
		 const char *ifname, struct cnispec_error *err);
void cni_ctx_close(struct cni_ctx *c);
/* The pod's namespace at netns (NULL or ""): 0 with c->pod when it is there, 0 without when
 * it is gone, <0 with err for anything else. */
int cni_ctx_open_pod(struct cni_ctx *c, const char *netns, struct cnispec_error *err);
/* ADD's and CHECK's error for a pod namespace that cni_ctx_open_pod() did not find. */
int cni_pod_missing(const char *netns, struct cnispec_error *err);

/* ---- link kinds ------------------------------------------------------------------------ */

/* Every slot filled (docs/STYLE habit 6). Each returns 0 or -errno with err filled. */
struct cni_link_ops {
	enum cniconf_link kind;
	/* attach makes the interface under CNI_IFNAME in the pod's namespace in one request, which
	 * the kernel refuses with EEXIST (attach: -EEXIST, code 104, nothing made) when the name is
	 * taken there: ADD asks no GETLINK first (hostdev moves and renames a device: it asks). */
	bool creates_by_name;
	/* Find what the link needs on the host, change nothing; record it in c->st. */
	int (*prepare)(struct cni_ctx *c, struct cnispec_error *err);
	/* Create or move the interface into the pod, named CNI_IFNAME, with the configured MTU
	 * and MAC, up. *ret: the link as the pod's namespace shows it then (ADD reads it back from
	 * here, not from the kernel). */
	int (*attach)(struct cni_ctx *c, struct nl_link *ret, struct cnispec_error *err);
	/* Undo attach with the pod namespace at hand (ADD's rollback, DEL). Idempotent: an
	 * interface already gone is success. 1 when a device could not be found to give back
	 * (its record is then kept for GC). */
	int (*detach)(struct cni_ctx *c, struct cnispec_error *err);
	/* DEL and GC without the pod namespace: give back what the kernel returned to the host.
	 * 1 when the device is not on the host (yet): the record is kept for a later GC. */
	int (*reclaim)(struct cni_ctx *c, struct cnispec_error *err);
	/* CHECK: the pod's interface is the one this configuration makes. */
	int (*check)(struct cni_ctx *c, const struct nl_link *l, struct cnispec_error *err);
	/* STATUS: whether ADD could work now (code 50 when not). */
	int (*status)(struct cni_ctx *c, struct cnispec_error *err);
	/* The result's pciID (hostdev), or NULL. */
	const char *(*pci_id)(const struct cni_ctx *c);
};

extern const struct cni_link_ops cni_link_macvlan, cni_link_ipoib, cni_link_hostdev;
const struct cni_link_ops *cni_link_ops_get(enum cniconf_link k);

/* CHECK's failure: code 110, what differs in details. Returns -EINVAL. */
int cni_check_fail(struct cnispec_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Set MTU and MAC as configured and the link up, in one request (the kernel applies the address
 * and the MTU before the flags, so a refused MTU leaves the link down); *l then says what was
 * set. For a device moved into the pod; a child made there gets them in its creation. */
int cni_link_settings(struct cni_ctx *c, struct nl_link *l, struct cnispec_error *err);

/* Write c->st (hostdev) to the attachment's record. */
int cni_ctx_save_state(struct cni_ctx *c, struct cnispec_error *err);

/* Turn a failed netlink request into the error the runtime reads: code 100, what was tried,
 * strerror and the kernel's own words. Returns r. */
int cni_fail_nl(struct cnispec_error *err, int r, const char *kernel_msg, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- RDMA isolation ------------------------------------------------------------------- */

/* Whether isolation can work: an RDMA subsystem in exclusive mode (code 102 and the fix when
 * not). */
int cni_rdma_check_mode(struct cnispec_error *err);
/* Move the RDMA device `name` from the namespace from_ns to to_ns. -ENODEV when from_ns does
 * not see it. */
int cni_rdma_move(const char *name, int from_ns, int to_ns, struct cnispec_error *err);
/* 1 when the namespace sees the device, 0 when not. */
int cni_rdma_visible(const char *name, int ns, struct cnispec_error *err);

/* ---- the rdma link (chain.c) -------------------------------------------------------------- */

/* With link_by_chain: rdma when the command shows that another plugin made the interface (ADD:
 * a prevResult; DEL, CHECK: a record of the rdma link for this attachment), else hostdev. */
int cni_config_resolve_chain(struct cniconf *c, const struct cnispec_request *req);
/* The commands of the rdma link, for cni.c's ops (the link ops table is for links that make
 * an interface). ADD's result is prevResult's. */
int cni_chain_add(const struct cniconf *cfg, const struct cnispec_request *req,
		  struct cnispec_result **ret, struct cnispec_error *err);
int cni_chain_del(const struct cniconf *cfg, const struct cnispec_request *req,
		  struct cnispec_error *err);
int cni_chain_check(const struct cniconf *cfg, const struct cnispec_request *req,
		    struct cnispec_error *err);
int cni_chain_gc(const struct cniconf *cfg, const struct cnispec_request *req,
		 struct cnispec_error *err);
int cni_chain_status(const struct cniconf *cfg, struct cnispec_error *err);

/* ---- routing --------------------------------------------------------------------------- */

/* Addresses from IPAM on the pod's interface; with policy routing its table (subnet routes,
 * default via each gateway, IPAM's routes), a rule per address and the multi-rail sysctls,
 * else IPAM's routes in main. What was installed goes into res (ips for interface index
 * `iface`, routes; with a table only for cniVersion 1.1.0, the first that can say so). */
int cni_routing_setup(struct cni_ctx *c, int ifindex, const struct cnispec_result *ipam,
		      struct cnispec_result *res, size_t iface, struct cnispec_error *err);
/* Remove this interface's rules (by table and priority: no prevResult needed) and, unless
 * link_gone (the link was deleted or left the pod, and its routes with it), its table's routes.
 * Best effort, idempotent. */
int cni_routing_teardown(struct cni_ctx *c, bool link_gone, struct cnispec_error *err);
/* CHECK: prevResult's addresses of this interface, its routes, the rules and sysctls. */
int cni_routing_check(struct cni_ctx *c, int ifindex, const struct cnispec_result *prev,
		      struct cnispec_error *err);

/* ---- InfiniBand partitions at the fabric manager (partition.c) ------------------------ */

/* hostdev, a pkey and a fabric configured. */
bool cni_partition_wanted(const struct cniconf *cfg);
/* At setup, for a network with a fabric: the node's fabrics file into cfg->fabrics (or why not
 * into cfg->fabrics_err: only ADD needs it, DEL journals without), and without a stateDir of its
 * own the network's records go to the node's. <0 only without memory. */
int cni_partition_setup(struct cniconf *cfg);
/* Whether this program can speak to cfg's fabric manager: false in one that cannot load GnuTLS
 * (the per-pod binary, linked statically: http_dl_possible), which then hands the request to
 * the full rdmak. True for a network without a fabric, or whose fabrics file is unreadable (that
 * error is this program's to give). */
bool cni_partition_here(const struct cniconf *cfg);
/* ADD: the VF's GUID into the pkey. Writes the attachment's record, the GUID in it, before the
 * fabric manager hears of it: ADD's first write of the record when a partition is wanted (nothing
 * is changed before it). Code 106 when the fabric manager does not take it. */
int cni_partition_join(struct cni_ctx *c, struct cnispec_error *err);
/* DEL, GC, ADD's rollback: the GUID out of the pkey if this node added it and no other
 * attachment holds it; a fabric manager that does not answer (or a fabric the node's file does
 * not name now) gets the removal journaled under its fabric (then 0 too). <0 only when the
 * journal cannot be written. */
int cni_partition_leave(struct cni_ctx *c, const char *network, const char *id, const char *ifname,
			struct cnispec_error *err);
/* GC: retry the journaled removals. */
int cni_partition_gc(const struct cniconf *cfg);

#endif
