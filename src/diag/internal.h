/* SPDX-License-Identifier: Apache-2.0 */
/* The checks' inside, shared by the check files (node.c, pod.c, nccl.c) and diag.c: the check
 * table, the state the checks read, the finding builder. Everyone else uses diag.h. */
#ifndef RDMAK_DIAG_INTERNAL_H
#define RDMAK_DIAG_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "diag/diag.h"
#include "diag/parse.h"
#include "hw/hw.h"

struct diag_check {
	const char *id; /* "port.state" */
	unsigned scope; /* enum diag_scope */
	void (*run)(struct diag *d);
	enum diag_cause
		cause;	     /* of its warn and fail findings, unless diag_cause() says otherwise */
	const char *summary; /* one line, for --list-checks and the docs */
};

/* What the pod's own files say, read once (pod.c). A value is "known" when its file parsed. */
struct diag_pod {
	bool memlock_known;
	uint64_t memlock_soft, memlock_hard;
	char limits_path[PATH_MAX];
	bool status_known;
	struct diag_proc_status status;
	char status_path[PATH_MAX];
	char devcg_path[PATH_MAX]; /* cgroup v1 devices.list */
};

struct diag {
	unsigned scope;			/* DIAG_NODE or DIAG_POD: which table rows run */
	const struct diag_check *check; /* the row running now: its id goes into each finding */
	const struct hw_node *node;
	struct hw_ctx
		*ctx; /* the roots (sysfs, devfs, procfs, image): every read goes through it */
	char pid[16]; /* "self", or the --pid given */
	struct diag_env env;
	const char *env_source; /* "--env FILE" path or "environment" */
	int plugin_netns; /* what --plugin-config expects: 1 shared, 0 exclusive, -1 either/unknown */
	char plugin_why[160]; /* why: "configList (k8s-rdma-shared-dev-plugin format)" */
	const char *plugin_config;
	json_t *findings;	 /* array */
	enum diag_cause *causes; /* the cause of findings[i] (not printed: for other roles) */
	size_t causes_cap;
	bool pod_files; /* procfs holds the process: diag_run_check runs DIAG_POD-only rows */
	struct diag_pod pod;
};

/* The checks, in the order they run and print. */
extern const struct diag_check diag_checks[];
extern const size_t diag_n_checks;

/* Append a finding of the running check. object names what it is about ("mlx5_0/1", "bond0",
 * NULL for the node or pod as a whole). Returns the finding (owned by d->findings) or NULL on
 * allocation failure; every setter below accepts NULL. */
json_t *diag_add(struct diag *d, enum diag_status st, const char *object, const char *title_fmt,
		 ...) __attribute__((format(printf, 4, 5)));
void diag_evidence(json_t *f, const char *path, const char *value_fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_fix(json_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the cause of finding f (one diag_add returned) where it is not its check's: an ok
 * finding that names something that can still bite, or a more precise cause. */
void diag_cause(struct diag *d, const json_t *f, enum diag_cause cause);

/* Paths as the user will read them in evidence: the root given plus the kernel's path. */
const char *diag_sys(const struct diag *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *diag_dev(const struct diag *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *diag_proc(const struct diag *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *diag_img(const struct diag *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Read a small file of a root, given as diag_sys(), diag_dev(), diag_proc() or
 * diag_img() built it, through the hardware context: resolved inside that root (a symlink
 * or a "../" in a cgroup path cannot lead out of it), without blocking, refused unless a
 * regular file (-HW_ENOTREG), recorded when of sysfs. Up to n - 1 bytes, NUL-terminated
 * (binary-safe in the count; trailing whitespace kept). The length or -errno. */
ssize_t diag_read(const struct diag *d, enum hw_root root, const char *path, char *buf, size_t n);
/* The same, allocating (up to 1 MiB). */
ssize_t diag_read_alloc(const struct diag *d, enum hw_root root, const char *path, char **ret);
/* Open that file or directory inside its root (O_PATH to test that it exists, O_DIRECTORY to
 * list it). The fd or -errno. */
int diag_open(const struct diag *d, enum hw_root root, const char *path, int flags);
/* The same: whether it exists; the names in that directory (fileio_list_dir: sorted, a strv). */
bool diag_exists(const struct diag *d, enum hw_root root, const char *path);
int diag_list(const struct diag *d, enum hw_root root, const char *path, char ***ret,
	      size_t *ret_n);
/* Shorthands for the sysfs root. */
ssize_t diag_sys_read(const struct diag *d, const char *syspath, char *buf, size_t n);
bool diag_sys_exists(const struct diag *d, const char *syspath);

/* Helpers shared by the checks. */
/* What NCCL needs pinned at least (bytes): 16 * NCCL_BUFFSIZE, see pod.c. */
uint64_t diag_nccl_pinned_min(const struct diag *d);
/* The verbs provider name for a device ("mlx5"), NULL if unknown. */
const char *diag_provider_name(const struct hw_rdma_dev *dev);

/* Helpers of the node checks (node.c), shared with port.c. */
/* A VF's RDMA device (its PCI function has a physfn). */
bool diag_dev_is_vf(const struct hw_rdma_dev *dev);
/* Node mode looks at PFs (a VF port mirrors its PF; sriov.vfs covers VFs as a whole); pod mode
 * looks at the devices this pod can open. */
bool diag_dev_in_scope(const struct diag *d, const struct hw_rdma_dev *dev);
/* "mlx5_0/1": a port as a finding's object. */
const char *diag_port_obj(const struct hw_port *p, char *buf, size_t n);
/* Evidence: a port's sysfs attribute and its value; its state and phys_state; a netdev's
 * operstate, carrier or mtu as the model read them. */
void diag_ev_port(const struct diag *d, json_t *f, const struct hw_port *p, const char *attr,
		  const char *fmt_val);
void diag_ev_state(const struct diag *d, json_t *f, const struct hw_port *p);
void diag_ev_netdev(const struct diag *d, json_t *f, const struct hw_netdev *n, const char *attr);

/* Check functions (node.c, port.c, gpudirect.c, pod.c, nccl.c). */
void diag_check_rdma_devices(struct diag *d);
void diag_check_kernel_modules(struct diag *d);
void diag_check_port_state(struct diag *d);
void diag_check_port_sm(struct diag *d);
void diag_check_port_ipoib(struct diag *d);
void diag_check_roce_gids(struct diag *d);
void diag_check_bond_lag(struct diag *d);
void diag_check_netdev_mtu(struct diag *d);
void diag_check_sriov(struct diag *d);
void diag_check_chardevs(struct diag *d);
void diag_check_gpudirect_driver(struct diag *d);
void diag_check_gpudirect_topology(struct diag *d);
void diag_check_gpudirect_acs(struct diag *d);
void diag_check_netns_mode(struct diag *d);
void diag_check_pod_devnodes(struct diag *d);
void diag_check_pod_netns(struct diag *d);
void diag_check_pod_memlock(struct diag *d);
void diag_check_pod_ipc_lock(struct diag *d);
void diag_check_pod_memory(struct diag *d);
void diag_check_pod_shm(struct diag *d);
void diag_check_pod_gids(struct diag *d);
void diag_check_pod_provider(struct diag *d);
void diag_check_nccl_ib_hca(struct diag *d);
void diag_check_nccl_socket_ifname(struct diag *d);
void diag_check_nccl_misc(struct diag *d);

#endif
