/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's inside, shared by its check files (node.c, pod.c, nccl.c, nfd.c) and its main:
 * the check table, the state the checks read, the finding builder. Other roles use doctor.h. */
#ifndef RDMAK_DOCTOR_INTERNAL_H
#define RDMAK_DOCTOR_INTERNAL_H

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "doctor/doctor.h"
#include "doctor/parse.h"
#include "hw/hw.h"

struct doctor_check {
	const char *id; /* "port.state" */
	unsigned scope; /* enum doctor_scope */
	void (*run)(struct doctor *d);
	enum doctor_cause
		cause; /* of its warn and fail findings, unless doctor_cause() says otherwise */
	const char *summary; /* one line, for --list-checks and the docs */
};

/* What the pod's own files say, read once (pod.c). A value is "known" when its file parsed. */
struct doctor_pod {
	bool memlock_known;
	uint64_t memlock_soft, memlock_hard;
	char limits_path[PATH_MAX];
	bool status_known;
	struct proc_status status;
	char status_path[PATH_MAX];
	char devcg_path[PATH_MAX]; /* cgroup v1 devices.list */
};

struct doctor {
	unsigned scope;			  /* DOCTOR_NODE or DOCTOR_POD: which table rows run */
	const struct doctor_check *check; /* the row running now: its id goes into each finding */
	const struct hw_node *node;
	struct hw_ctx
		*ctx; /* the roots (sysfs, devfs, procfs, image): every read goes through it */
	char pid[16]; /* "self", or the --pid given */
	struct doctor_env env;
	const char *env_source; /* "--env FILE" path or "environment" */
	int plugin_netns; /* what --plugin-config expects: 1 shared, 0 exclusive, -1 either/unknown */
	char plugin_why[160]; /* why: "configList (k8s-rdma-shared-dev-plugin format)" */
	const char *plugin_config;
	json_t *findings;	   /* array */
	enum doctor_cause *causes; /* the cause of findings[i] (not printed: for other roles) */
	size_t causes_cap;
	bool pod_files; /* procfs holds the process: doctor_run_check runs DOCTOR_POD-only rows */
	struct doctor_pod pod;
};

/* The checks, in the order they run and print. */
extern const struct doctor_check doctor_checks[];
extern const size_t doctor_n_checks;

/* Append a finding of the running check. object names what it is about ("mlx5_0/1", "bond0",
 * NULL for the node or pod as a whole). Returns the finding (owned by d->findings) or NULL on
 * allocation failure; every setter below accepts NULL. */
json_t *doctor_add(struct doctor *d, enum doctor_status st, const char *object,
		   const char *title_fmt, ...) __attribute__((format(printf, 4, 5)));
void doctor_evidence(json_t *f, const char *path, const char *value_fmt, ...)
	__attribute__((format(printf, 3, 4)));
void doctor_fix(json_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the cause of finding f (one doctor_add returned) where it is not its check's: an ok
 * finding that names something that can still bite, or a more precise cause. */
void doctor_cause(struct doctor *d, const json_t *f, enum doctor_cause cause);

/* Paths as the user will read them in evidence: the root given plus the kernel's path. */
const char *doctor_sys(const struct doctor *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *doctor_dev(const struct doctor *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *doctor_proc(const struct doctor *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *doctor_img(const struct doctor *d, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Read a small file of a root, given as doctor_sys(), doctor_dev(), doctor_proc() or
 * doctor_img() built it, through the hardware context: resolved inside that root (a symlink
 * or a "../" in a cgroup path cannot lead out of it), without blocking, refused unless a
 * regular file (-HW_ENOTREG), recorded when of sysfs. Up to n - 1 bytes, NUL-terminated
 * (binary-safe in the count; trailing whitespace kept). The length or -errno. */
ssize_t doctor_read(const struct doctor *d, enum hw_root root, const char *path, char *buf,
		    size_t n);
/* The same, allocating (up to 1 MiB). */
ssize_t doctor_read_alloc(const struct doctor *d, enum hw_root root, const char *path, char **ret);
/* Open that file or directory inside its root (O_PATH to test that it exists, O_DIRECTORY to
 * list it). The fd or -errno. */
int doctor_open(const struct doctor *d, enum hw_root root, const char *path, int flags);
/* The same: whether it exists; the directory opened for readdir() (NULL and errno). */
bool doctor_exists(const struct doctor *d, enum hw_root root, const char *path);
DIR *doctor_opendir(const struct doctor *d, enum hw_root root, const char *path);
/* Shorthands for the sysfs root. */
ssize_t doctor_sys_read(const struct doctor *d, const char *syspath, char *buf, size_t n);
bool doctor_sys_exists(const struct doctor *d, const char *syspath);

/* Helpers shared by the checks. */
/* What NCCL needs pinned at least (bytes): 16 * NCCL_BUFFSIZE, see pod.c. */
uint64_t doctor_nccl_pinned_min(const struct doctor *d);
/* The verbs provider name for a device ("mlx5"), NULL if unknown. */
const char *doctor_provider_name(const struct hw_rdma_dev *dev);

/* Check functions (node.c, pod.c, nccl.c). */
void doctor_check_rdma_devices(struct doctor *d);
void doctor_check_kernel_modules(struct doctor *d);
void doctor_check_port_state(struct doctor *d);
void doctor_check_port_sm(struct doctor *d);
void doctor_check_port_ipoib(struct doctor *d);
void doctor_check_roce_gids(struct doctor *d);
void doctor_check_bond_lag(struct doctor *d);
void doctor_check_netdev_mtu(struct doctor *d);
void doctor_check_sriov(struct doctor *d);
void doctor_check_chardevs(struct doctor *d);
void doctor_check_gpudirect_driver(struct doctor *d);
void doctor_check_gpudirect_topology(struct doctor *d);
void doctor_check_gpudirect_acs(struct doctor *d);
void doctor_check_netns_mode(struct doctor *d);
void doctor_check_pod_devnodes(struct doctor *d);
void doctor_check_pod_netns(struct doctor *d);
void doctor_check_pod_memlock(struct doctor *d);
void doctor_check_pod_ipc_lock(struct doctor *d);
void doctor_check_pod_memory(struct doctor *d);
void doctor_check_pod_shm(struct doctor *d);
void doctor_check_pod_gids(struct doctor *d);
void doctor_check_pod_provider(struct doctor *d);
void doctor_check_nccl_ib_hca(struct doctor *d);
void doctor_check_nccl_socket_ifname(struct doctor *d);
void doctor_check_nccl_misc(struct doctor *d);

/* Node Feature Discovery local feature file (nfd.c): written atomically. */
int doctor_write_nfd(const struct doctor *d, const char *path);

#endif
