/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's checks, a floor module: named checks over the hardware model and the pod's /proc,
 * cgroup and image files, which `rdmak doctor` prints, bench asks when perftest fails and the
 * exporter turns into series. Every check is one row of a static table (diag.c); it adds
 * findings and never prints. A finding is a JSON object built once and printed as text or JSON by the one output
 * writer:
 *   { "id", "status", "object", "title", "evidence": [ { "path", "value" } ], "fix" }
 * (docs/doctor.md documents the shape and every id).
 *
 * Another role that wants the doctor's word on a failure (bench, when perftest fails) makes a
 * doctor over the roots and hardware model it holds, runs the checks that bear on the symptom
 * by id, and reads each finding typed: its status and its cause, never its strings. */
#ifndef RDMAK_DIAG_H
#define RDMAK_DIAG_H

#include <jansson.h>
#include <stdbool.h>

#include "hw/hw.h"

enum diag_status { DIAG_SKIP = 0, DIAG_OK, DIAG_WARN, DIAG_FAIL };
const char *diag_status_name(enum diag_status s); /* "skip", "ok", "warn", "fail" */

enum diag_scope { DIAG_NODE = 1u << 0, DIAG_POD = 1u << 1, DIAG_BOTH = DIAG_NODE | DIAG_POD };

/* What a finding names as the reason RDMA fails or may fail. A warn or fail finding has its
 * check's cause (or a more precise one); an ok finding has one only where what it found can
 * still bite (a pod memory limit with room left today), else DIAG_CAUSE_NONE. */
enum diag_cause {
	DIAG_CAUSE_NONE = 0,
	DIAG_CAUSE_NO_DEVICE,	   /* no RDMA device, or its PCI function unbound */
	DIAG_CAUSE_KERNEL_MODULE,  /* ib_uverbs, rdma_ucm, the HCA's RDMA driver */
	DIAG_CAUSE_PORT_DOWN,	   /* a port not ACTIVE */
	DIAG_CAUSE_SUBNET_MANAGER, /* InfiniBand without an SM (LID 0) */
	DIAG_CAUSE_IPOIB,	   /* IPoIB carrier against the port */
	DIAG_CAUSE_GID,		   /* no usable RoCE v2 GID, or not the pod's */
	DIAG_CAUSE_BOND,	   /* bond or RoCE LAG */
	DIAG_CAUSE_MTU,
	DIAG_CAUSE_SRIOV,
	DIAG_CAUSE_DEVICE_NODE,	      /* /dev/infiniband nodes missing or not openable */
	DIAG_CAUSE_GPU_MEMORY,	      /* GPU memory cannot be registered: no peermem, no dma-buf */
	DIAG_CAUSE_GPU_TOPOLOGY,      /* GPU and HCA far apart on PCIe */
	DIAG_CAUSE_PCIE_ACS,	      /* ACS redirects GPU-HCA peer-to-peer */
	DIAG_CAUSE_RDMA_NETNS,	      /* RDMA netns mode against the plugin or the pod */
	DIAG_CAUSE_MEMLOCK,	      /* RLIMIT_MEMLOCK too small */
	DIAG_CAUSE_IPC_LOCK,	      /* CAP_IPC_LOCK not granted */
	DIAG_CAUSE_IPC_LOCK_NON_ROOT, /* CAP_IPC_LOCK added, not effective: the container is not uid 0 */
	DIAG_CAUSE_CGROUP_MEMORY, /* the pod's memory limit (pinned pages are charged to it) */
	DIAG_CAUSE_SHM,		  /* /dev/shm too small */
	DIAG_CAUSE_PROVIDER,	  /* libibverbs or the HCA's provider missing in the image */
	DIAG_CAUSE_NCCL_ENV,	  /* NCCL_* variables */
};

struct diag;

/* A finding, typed. The strings belong to the doctor (until diag_free). */
struct diag_finding {
	const char *id; /* the check's id: "pod.memlock" */
	enum diag_status status;
	enum diag_cause cause;
	const char *object; /* what it is about ("mlx5_0/1"), NULL for the node or pod as a whole */
	const char *title;
	const char *fix; /* NULL: none */
};

/* A doctor over roots and a hardware model the caller holds (both borrowed: they must outlive
 * it), checking as `scope` says (DIAG_POD: from inside a container), the process "self" of
 * ctx's procfs, NCCL_* from envp. The checks of the pod alone run only when that procfs holds
 * the process (a capture judged away from its pod has none). 0 or -ENOMEM. */
int diag_new(struct hw_ctx *ctx, const struct hw_node *node, enum diag_scope scope,
	     char *const *envp, struct diag **ret);
void diag_free(struct diag *d);

/* Run the check `id` (docs/doctor.md lists them) now. 1 and *ret: the worst finding it added
 * (about `object` when not NULL; the first of equal ones); 0: none (nothing to look at, or a
 * pod check without the pod's files); -ENOENT: no such check; -ENOMEM. */
int diag_run_check(struct diag *d, const char *id, const char *object, struct diag_finding *ret);

/* Every finding of the check `id`, run now, handed to fn in the order they were added (the
 * exporter's rdmak_doctor_check series). The number of findings (0: none, or a pod check
 * without the pod's files), -ENOENT: no such check, -ENOMEM. */
int diag_run_check_each(struct diag *d, const char *id,
			void (*fn)(void *ud, const struct diag_finding *f), void *ud);
/* The check table, in the order `rdmak doctor` runs it: the id of row i and the scopes it runs
 * in (DIAG_NODE, DIAG_POD or both); NULL past the last row. */
const char *diag_check_id(size_t i, enum diag_scope *ret_scope);
/* Row i's one-line summary (--list-checks, docs/doctor.md); NULL past the last row. */
const char *diag_check_summary(size_t i);

/* What `rdmak doctor`'s command line sets before the checks run. */
/* Check the process `pid` (digits) of ctx's procfs instead of "self": -EINVAL not a process id,
 * else what opening its folder returned (-ENOENT: no such process); where: that folder's path
 * as the user reads it. */
int diag_set_pid(struct diag *d, const char *pid, char *where, size_t wherelen);
/* NCCL_* from a file's text (KEY=VALUE lines, or /proc/PID/environ's NUL-separated records when
 * environ_fmt) instead of envp; source names it in evidence and must outlive d. -EINVAL with the
 * line refused in why. */
int diag_set_env(struct diag *d, const char *buf, size_t len, bool environ_fmt, const char *source,
		 char *why, size_t whylen);
/* The RDMA netns mode the device plugin's config at `source` expects (1 shared, 0 exclusive,
 * -1 either) and why, for netns.mode; source must outlive d. */
void diag_set_plugin_netns(struct diag *d, const char *source, int mode, const char *why);

/* Run every check of d's scope whose id starts with one of only[] (every one when n_only is
 * 0) over node (borrowed until the next run or diag_reset); a check that found nothing to look
 * at adds a "skip" finding saying so. 0 and the worst status, or -ENOMEM. */
int diag_run_all(struct diag *d, const struct hw_node *node, char *const *only, size_t n_only,
		 enum diag_status *ret_worst);
/* The findings so far, as a JSON array of the shape above (owned by d). */
const json_t *diag_findings(const struct diag *d);
/* A finding's status from its JSON object. */
enum diag_status diag_status_of(const json_t *finding);
/* Drop the findings: the next round starts empty. */
void diag_reset(struct diag *d);

/* The device can be opened through libibverbs here: its uverbs node is present in devfs. */
bool diag_dev_usable(const struct hw_rdma_dev *dev);
/* Comma list of the non-VF HCAs with an ACTIVE port of that link layer, for fix texts
 * ("<an ACTIVE HCA>" when none); malloc'd, NULL when out of memory. */
char *diag_active_hcas(const struct hw_node *n, enum hw_link_layer ll);

#endif
