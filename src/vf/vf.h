/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf: sriov-network-operator's SriovNetworkNodePolicy objects, read unchanged, turned into
 * what this node needs, step by step, each step live (sysfs, rtnetlink) or reboot (firmware).
 *
 * The policy → PF resolution is the operator's (api/v1/helper.go): policies whose nodeSelector
 * matches the node's labels, sorted by priority (a higher number is a lower priority; ties by
 * name), applied in that order so that the last (highest priority) wins a PF; a PF that an
 * earlier policy already configured keeps that policy's VF groups that do not overlap the new
 * one (pfNames' `#first-last` ranges) and, on equal priority or such a merge, the larger numVfs
 * and MTU. Nothing here prints. */
#ifndef RDMAK_VF_H
#define RDMAK_VF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"

enum vf_link_type { VF_LINK_UNSET = 0, VF_LINK_ETH, VF_LINK_IB };

/* The most VFs sriov-network-operator's webhook allows on a Mellanox/NVIDIA PF (MlxMaxVFs). */
#define VF_MLX_MAX_VFS 128

struct vf_policy {
	const char *name;      /* metadata.name (borrowed from the document) */
	long long priority;    /* 0..99, 0 the highest; absent: 0, as the CRD's Go zero value */
	json_t *node_selector; /* object of strings, borrowed; NULL: none */
	const char *resource_name;
	long long num_vfs, mtu; /* mtu 0: unset */
	enum vf_link_type link_type;
	bool is_rdma;
	const char *vendor, *device_id;	 /* nicSelector, 4 lower-case hex digits; NULL: any */
	char **root_devices, **pf_names; /* NULL-terminated; NULL: any */
};

struct vf_policies {
	json_t **docs; /* the documents the policies borrow from */
	size_t n_docs;
	struct vf_policy *p;
	size_t n;
};

/* Read every SriovNetworkNodePolicy of buf[0..len): one YAML or JSON document, or YAML
 * documents separated by `---` lines, each a policy or a List of them (`items`). Appends to
 * *set. -EINVAL with "<source>: <path>: <reason>" in err for a policy rdmak cannot honour
 * (deviceType vfio-pci, eSwitchMode switchdev, ... are refused by name) or that the operator's
 * admission webhook refuses (its static checks: resourceName's characters, an empty nicSelector,
 * a vendor or device ID it does not know in that form, a pfNames range past numVfs, numVfs 0,
 * linkType ib without isRdma). */
int vf_policies_parse(struct vf_policies *set, const char *source, const char *buf, size_t len,
		      char *err, size_t errlen);
void vf_policies_clear(struct vf_policies *set);

/* "k=v,k2=v2" into an object of strings (*ret); -EINVAL for an entry without '='. */
int vf_labels_parse(const char *s, json_t **ret);

/* What one PF ends up with after every policy (the operator's Interface of its node state). */
struct vf_group {
	const char *policy, *resource_name;
	int first, last; /* VF index range */
	bool is_rdma;
	long long mtu; /* the policy's, set on each VF netdev of the group; 0: unset */
};

struct nl_vf_guid;

struct vf_target {
	const struct hw_pci *pf;
	const char *pf_name; /* the PF's netdev ("" when none) */
	const char *policy;  /* the policy that won it */
	long long num_vfs, mtu;
	enum vf_link_type link_type;
	struct vf_group groups[16];
	size_t n_groups;
	/* policies that selected this PF and lost it to a later one (the same resource, or VF
	 * ranges that overlap): the operator drops them without a word */
	const char *overridden[16];
	size_t n_overridden;
	/* what vf_observe() read, beside the node's model: */
	int autoprobe;		     /* the PF's sriov_drivers_autoprobe: 1, 0; -1 unread */
	struct nl_vf_guid *reported; /* the VFs' GUIDs as the PF reports them; NULL: unknown */
	size_t n_reported;
};

struct vf_resolved {
	struct vf_target *t; /* by PF, in the order the policies won them */
	size_t n;
	/* the policies whose nodeSelector takes this node and whose nicSelector selects none of
	 * its PFs (borrowed names) */
	const char **unselected;
	size_t n_unselected;
};

/* The targets of this node: the operator's Apply over the policies, sorted as it sorts them.
 * -EINVAL with "policy NAME: <path>: <reason>" in err for what the operator's webhook refuses
 * only once it knows the PF (numVfs above 128 on a Mellanox PF). */
int vf_resolve(const struct hw_node *node, const struct vf_policies *set, const json_t *labels,
	       struct vf_resolved *ret, char *err, size_t errlen);
void vf_resolved_clear(struct vf_resolved *r);

/* What the plan needs that the node's model does not hold, per target: the PF's
 * sriov_drivers_autoprobe, and for an InfiniBand PF the GUIDs it reports for its VFs (RTM_GETLINK
 * with RTEXT_FILTER_VF on its netdev in this network namespace), which say whether a VF the host
 * shows no RDMA device of (unbound, or moved into a pod's namespace) already has its GUIDs. Best
 * effort: what cannot be read stays unknown (-1, NULL). 0 or -ENOMEM. */
int vf_observe(struct hw_ctx *ctx, struct vf_resolved *r);
/* The PF's link layer now: from its RDMA ports, else its netdev's type. */
enum vf_link_type vf_pf_link(const struct hw_pci *pf);

/* Who holds which device, from the kubelet's PodResources API (namespace and pod, no UID) or its
 * device-manager checkpoint (var/lib/kubelet/device-plugins/kubelet_internal_checkpoint: the UID,
 * no name): one entry per device ID; the fields a source lacks are NULL. */
struct vf_holder {
	char *pod_uid, *ns, *pod, *container, *resource, *device;
};
struct vf_holders {
	struct vf_holder *h;
	size_t n;
};
/* Parse a checkpoint's JSON (DeviceIDs as a list, kubelet < 1.20, or by NUMA node). */
int vf_holders_parse(const char *buf, size_t len, struct vf_holders *ret, char *err, size_t errlen);
void vf_holders_clear(struct vf_holders *h);
/* The rows of a PodResources List answer (kubelet/kubelet.h). */
struct kubelet_pod_devices;
int vf_holders_from_pod_resources(const struct kubelet_pod_devices *d, struct vf_holders *ret);

/* The plan as JSON (docs/vf.md describes it): {"pfs":[{...,"steps":[...],"holders":[...]}],
 * "unselected":[...],"live":N,"reboot":N}. holders may be NULL (no checkpoint). A step that
 * touches single VFs (vf-guids, vf-bind, vf-mtu) lists their indices ("vf_indices"): only the
 * VFs whose GUIDs, driver or MTU differ from what the policy wants. */
int vf_plan_build(const struct hw_node *node, const struct vf_resolved *r,
		  const struct vf_holders *holders, json_t **ret);

/* An InfiniBand VF's node and port GUID: 0x02 in the top byte (EUI-64's locally administered
 * bit, which no vendor-assigned GUID has), the VF index + 1 in the next 16 bits, and the PF GUID's
 * low 40 bits (the part a vendor numbers its devices with under its 24-bit OUI). Never 0, stable,
 * and unique across the fabric as long as the PFs' low 40 bits are (they are within one vendor's
 * OUI). */
#include <stdint.h>
uint64_t vf_guid(uint64_t pf_guid, unsigned index);
/* "xxxx:xxxx:xxxx:xxxx" (sysfs' node_guid) to a number; -EINVAL otherwise. */
int vf_guid_parse(const char *s, uint64_t *ret);

/* The mlxconfig command that sets the firmware for a target ("" when none is needed), from the
 * PF's function number (LINK_TYPE_P1 for function 0, P2 for function 1 of a dual-port card). */
int vf_mlxconfig_command(const struct vf_target *t, bool need_vfs, bool need_link, char *buf,
			 size_t len);

/* ---- apply ---------------------------------------------------------------------------------- */

struct vf_apply_opts {
	bool force;	/* remove or change VFs that pods hold */
	int timeout_ms; /* for each VF's virtfn link and netdev to appear */
};

enum vf_apply_result { VF_APPLY_NOTHING, VF_APPLY_DONE, VF_APPLY_REFUSED };

struct vf_apply_report {
	enum vf_apply_result result;
	bool reboot;  /* a reboot step remains (its PF's later steps were not done) */
	char **lines; /* what was done, refused or undone, one line each */
	size_t n_lines;
};

/* Do a plan's (vf_plan_build) live steps: per PF in the plan's order, sriov_numvfs (0, then N,
 * then waiting for each VF's virtfnN link and, with sriov_drivers_autoprobe, its netdev), link
 * up, MTU, the listed InfiniBand VFs' GUIDs (vf_guid) over rtnetlink (the old ones read first,
 * for undo), then the listed VFs' driver (vf-bind: a VF without one is bound, a VF bound before
 * its GUIDs changed is bound again, so that the driver reads them at probe), then the listed VF
 * netdevs' MTU. Refuses everything (VF_APPLY_REFUSED) when a step would remove or change a VF a
 * pod holds (sriov_numvfs removes every VF of its PF; the others touch the VFs they list), unless
 * opts->force. Steps after a reboot step are skipped. When a step fails, the ones done are undone
 * in reverse and its -errno is returned; the report says what happened either way. The caller
 * holds the node's lock (vf_lock) from reading the node until this returns. */
int vf_apply(struct hw_ctx *ctx, const json_t *plan, const struct vf_apply_opts *opts,
	     struct vf_apply_report *rep);
void vf_apply_report_clear(struct vf_apply_report *rep);

/* The lock every `rdmak vf apply` of a node holds from reading the node to its last write or
 * undo: flock on the sysfs root's bus/pci/devices directory, the directory of what apply writes,
 * so that the DaemonSet's /host/sys, the host's /sys and a test's --root each meet the lock of
 * the node they change, and nothing is written to take it. Returns the fd (close() releases)
 * or -errno: -EWOULDBLOCK, without wait, while another apply holds it (the caller says so, then
 * waits). */
int vf_lock(struct hw_ctx *ctx, bool wait);

#endif
