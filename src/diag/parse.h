/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of the files `rdmak doctor` reads besides the hardware model: /proc/<pid>/limits,
 * /proc/<pid>/status, /proc/<pid>/mountinfo (or /proc/mounts), cgroup v1/v2 memory files,
 * /proc/<pid>/cgroup, NCCL's interface/HCA list syntax, environment files and the NVIDIA
 * driver version. Each takes a buffer (not a file) so that it has a fuzz target; none prints.
 * Lookups return 1 found, 0 absent, -errno on malformed input. */
#ifndef RDMAK_DIAG_PARSE_H
#define RDMAK_DIAG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIAG_UNLIMITED UINT64_MAX

/* One row of /proc/<pid>/limits, e.g. "Max locked memory  8388608  8388608  bytes": the soft
 * and hard values, "unlimited" as DIAG_UNLIMITED. name is the row's first column. */
int diag_limits_parse(const char *buf, size_t len, const char *name, uint64_t *soft,
		      uint64_t *hard);

/* The lines of /proc/<pid>/status the doctor needs. */
struct diag_proc_status {
	bool has_uid, has_caps;
	uint32_t uid[4]; /* real, effective, saved, filesystem */
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
};
int diag_proc_status_parse(const char *buf, size_t len, struct diag_proc_status *ret);

#define CAP_IPC_LOCK_BIT 14 /* linux/capability.h */

struct diag_mount_entry {
	char mountpoint[256];
	char fstype[32];
	char source[256];
	char options[512]; /* mountinfo: per-mount options then super options, comma-joined */
};
/* The last entry (the one on top) mounted at mountpoint; octal escapes (\040) are decoded. */
int diag_mountinfo_find(const char *buf, size_t len, const char *mountpoint,
			struct diag_mount_entry *ret);
/* Same for the /proc/mounts (fstab) format. */
int diag_mounts_find(const char *buf, size_t len, const char *mountpoint,
		     struct diag_mount_entry *ret);
/* "size=65536k" among comma-separated options -> bytes. 0 when no absolute size is given
 * (tmpfs then defaults to half of RAM; "size=50%" is relative). */
int diag_mount_option_size(const char *options, uint64_t *bytes);

/* cgroup v2 memory.max ("max" or bytes) or v1 memory.limit_in_bytes (bytes; the kernel's
 * "no limit" is PAGE_COUNTER_MAX pages, 9223372036854771712 on 4 KiB pages) -> bytes or
 * DIAG_UNLIMITED. Also parses memory.current / memory.usage_in_bytes. */
int diag_cgroup_value_parse(const char *buf, size_t len, uint64_t *bytes);
/* The cgroup path of this process from /proc/<pid>/cgroup: the v2 line "0::/path" (v2 true) or
 * the v1 line naming the memory controller ("4:memory:/path"). */
int diag_cgroup_path_parse(const char *buf, size_t len, bool v2, char *path, size_t n);

/* cgroup v1 devices.list ("c 231:192 rwm", "c *:* m", "a *:* rwm"): whether a character
 * device may be opened for reading and writing. 1 allowed, 0 denied. (cgroup v2 enforces the
 * same rules with an eBPF program that no file shows.) */
int diag_devices_list_allows(const char *buf, size_t len, unsigned major, unsigned minor);

/* NCCL_IB_HCA / NCCL_SOCKET_IFNAME syntax (NCCL parseStringList + matchIfList): an optional
 * leading '^' (exclude), then an optional '=' (exact names; otherwise each name is a prefix,
 * so "mlx5_1" also selects mlx5_10..mlx5_19), then a comma-separated list of
 * name[:port[:...]] (newer NCCL allows rail and plane after the port; ignored here). */
#define NCCL_LIST_MAX 32 /* MAX_IB_DEVS */
struct diag_nccl_entry {
	char name[64];
	int port; /* -1: any port */
};
struct diag_nccl_list {
	bool exclude, exact;
	size_t n;
	struct diag_nccl_entry e[NCCL_LIST_MAX];
};
/* -EINVAL for an empty name, a bad port or more than NCCL_LIST_MAX entries. */
int diag_nccl_list_parse(const char *s, struct diag_nccl_list *ret);
/* Whether the entry matches name (and port when the entry names one; port < 0: any). */
bool diag_nccl_entry_match(const struct diag_nccl_list *l, const struct diag_nccl_entry *e,
			   const char *name, int port);
/* What NCCL decides for one device port: selected or not (the '^' applied). */
bool diag_nccl_list_selects(const struct diag_nccl_list *l, const char *name, int port);

/* KEY=VALUE environment. With environ_fmt, the NUL-terminated records of /proc/<pid>/environ.
 * Otherwise the lines of a file as `set -a; . FILE` reads the simple cases: blank lines and
 * '#' comments, an optional "export ", KEY a shell name, VALUE unquoted (no shell
 * metacharacters), 'single-quoted' or "double-quoted" (no $ ` \), then only a comment. Anything
 * else, and any NUL byte, is -EINVAL with "line N: why" in err (docs/doctor.md). */
struct diag_env {
	char **kv; /* "KEY=VALUE" */
	size_t n;
};
int diag_env_parse(const char *buf, size_t len, bool environ_fmt, struct diag_env *ret, char *err,
		   size_t errlen);
/* From a NULL-terminated environ array. */
int diag_env_from_environ(char *const *environ, struct diag_env *ret);
const char *diag_env_get(const struct diag_env *env, const char *key);
void diag_env_clear(struct diag_env *env);

/* /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64
 * 535.104.05 ...") or /sys/module/nvidia/version ("535.104.05"): the major number and whether
 * it is the open kernel module (dma-buf for GPU memory needs the open module, >= 515). */
int diag_nvidia_version_parse(const char *buf, size_t len, unsigned *major, bool *open_module);
/* /proc/sys/kernel/osrelease "5.15.0-91-generic" -> 5, 15. */
int diag_kernel_release_parse(const char *buf, size_t len, unsigned *major, unsigned *minor);

/* "64 MiB", "8 MiB", "512 KiB", "2 GiB", "unlimited" (buf of size n). */
const char *diag_bytes(uint64_t v, char *buf, size_t n);

#endif
