/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak doctor`: named checks over the hardware model and the pod's /proc, cgroup and image
 * files. Every check is one row of a static table (doctor.c); it adds findings and never
 * prints. A finding is a JSON object built once and printed as text or JSON by the one output
 * writer:
 *   { "id", "status", "object", "title", "evidence": [ { "path", "value" } ], "fix" }
 * (docs/doctor.md documents the shape and every id).
 *
 * Another role that wants the doctor's word on a failure (bench, when perftest fails) makes a
 * doctor over the roots and hardware model it holds, runs the checks that bear on the symptom
 * by id, and reads each finding typed: its status and its cause, never its strings. */
#ifndef RDMAK_DOCTOR_H
#define RDMAK_DOCTOR_H

#include <stdbool.h>

#include "hw/hw.h"

enum doctor_status { DOCTOR_SKIP = 0, DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };
const char *doctor_status_name(enum doctor_status s); /* "skip", "ok", "warn", "fail" */

enum doctor_scope {
	DOCTOR_NODE = 1u << 0,
	DOCTOR_POD = 1u << 1,
	DOCTOR_BOTH = DOCTOR_NODE | DOCTOR_POD
};

/* What a finding names as the reason RDMA fails or may fail. A warn or fail finding has its
 * check's cause (or a more precise one); an ok finding has one only where what it found can
 * still bite (a pod memory limit with room left today), else DOCTOR_CAUSE_NONE. */
enum doctor_cause {
	DOCTOR_CAUSE_NONE = 0,
	DOCTOR_CAUSE_NO_DEVICE,	     /* no RDMA device, or its PCI function unbound */
	DOCTOR_CAUSE_KERNEL_MODULE,  /* ib_uverbs, rdma_ucm, the HCA's RDMA driver */
	DOCTOR_CAUSE_PORT_DOWN,	     /* a port not ACTIVE */
	DOCTOR_CAUSE_SUBNET_MANAGER, /* InfiniBand without an SM (LID 0) */
	DOCTOR_CAUSE_IPOIB,	     /* IPoIB carrier against the port */
	DOCTOR_CAUSE_GID,	     /* no usable RoCE v2 GID, or not the pod's */
	DOCTOR_CAUSE_BOND,	     /* bond or RoCE LAG */
	DOCTOR_CAUSE_MTU,
	DOCTOR_CAUSE_SRIOV,
	DOCTOR_CAUSE_DEVICE_NODE,  /* /dev/infiniband nodes missing or not openable */
	DOCTOR_CAUSE_GPU_MEMORY,   /* GPU memory cannot be registered: no peermem, no dma-buf */
	DOCTOR_CAUSE_GPU_TOPOLOGY, /* GPU and HCA far apart on PCIe */
	DOCTOR_CAUSE_PCIE_ACS,	   /* ACS redirects GPU-HCA peer-to-peer */
	DOCTOR_CAUSE_RDMA_NETNS,   /* RDMA netns mode against the plugin or the pod */
	DOCTOR_CAUSE_MEMLOCK,	   /* RLIMIT_MEMLOCK too small */
	DOCTOR_CAUSE_IPC_LOCK,	   /* CAP_IPC_LOCK not granted */
	DOCTOR_CAUSE_IPC_LOCK_NON_ROOT, /* CAP_IPC_LOCK added, not effective: the container is not uid 0 */
	DOCTOR_CAUSE_CGROUP_MEMORY, /* the pod's memory limit (pinned pages are charged to it) */
	DOCTOR_CAUSE_SHM,	    /* /dev/shm too small */
	DOCTOR_CAUSE_PROVIDER,	    /* libibverbs or the HCA's provider missing in the image */
	DOCTOR_CAUSE_NCCL_ENV,	    /* NCCL_* variables */
};

struct doctor;

/* A finding, typed. The strings belong to the doctor (until doctor_free). */
struct doctor_finding {
	const char *id; /* the check's id: "pod.memlock" */
	enum doctor_status status;
	enum doctor_cause cause;
	const char *object; /* what it is about ("mlx5_0/1"), NULL for the node or pod as a whole */
	const char *title;
	const char *fix; /* NULL: none */
};

/* A doctor over roots and a hardware model the caller holds (both borrowed: they must outlive
 * it), checking as `scope` says (DOCTOR_POD: from inside a container), the process "self" of
 * ctx's procfs, NCCL_* from envp. The checks of the pod alone run only when that procfs holds
 * the process (a capture judged away from its pod has none). 0 or -ENOMEM. */
int doctor_new(struct hw_ctx *ctx, const struct hw_node *node, enum doctor_scope scope,
	       char *const *envp, struct doctor **ret);
void doctor_free(struct doctor *d);

/* Run the check `id` (docs/doctor.md lists them) now. 1 and *ret: the worst finding it added
 * (about `object` when not NULL; the first of equal ones); 0: none (nothing to look at, or a
 * pod check without the pod's files); -ENOENT: no such check; -ENOMEM. */
int doctor_run_check(struct doctor *d, const char *id, const char *object,
		     struct doctor_finding *ret);

/* Every finding of the check `id`, run now, handed to fn in the order they were added (the
 * exporter's rdmak_doctor_check series). The number of findings (0: none, or a pod check
 * without the pod's files), -ENOENT: no such check, -ENOMEM. */
int doctor_run_check_each(struct doctor *d, const char *id,
			  void (*fn)(void *ud, const struct doctor_finding *f), void *ud);
/* The check table, in the order `rdmak doctor` runs it: the id of row i and the scopes it runs
 * in (DOCTOR_NODE, DOCTOR_POD or both); NULL past the last row. */
const char *doctor_check_id(size_t i, enum doctor_scope *ret_scope);

/* The device can be opened through libibverbs here: its uverbs node is present in devfs. */
bool doctor_dev_usable(const struct hw_rdma_dev *dev);
/* Comma list of the non-VF HCAs with an ACTIVE port of that link layer, for fix texts
 * ("<an ACTIVE HCA>" when none); malloc'd, NULL when out of memory. */
char *doctor_active_hcas(const struct hw_node *n, enum hw_link_layer ll);

#endif
