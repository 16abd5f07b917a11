/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak exporter`: the node's RDMA counters in the Prometheus text format.
 *
 * The topology (which devices, ports, counter files and PCI functions there are, and the
 * doctor's findings about them) comes from the hardware model (hw_load) and is cached; a scrape
 * reads only the files that change (counters, hw_counters, port state, phys_state, rate and the
 * PCIe link attributes) through directory fds opened when the topology was loaded, never a
 * process spawned. The cache is reloaded when the set of RDMA devices changes (one readdir of
 * class/infiniband per scrape says so), when a port's directory is gone, and by
 * exporter_refresh() (the daemon's periodic refresh, for the doctor's findings).
 *
 * Metric names: docs/exporter.md. Thread-safe: scrapes run concurrently (up to max_scrapes of
 * them), a reload waits for the scrapes in progress. */
#ifndef RDMAK_EXPORTER_H
#define RDMAK_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"

struct exporter;
struct pool_config;

enum exporter_format {
	EXPORTER_TEXT,	      /* text/plain; version=0.0.4 */
	EXPORTER_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* The format an Accept header asks for: OpenMetrics when it names application/openmetrics-text
 * (with a q above 0), else the text format. NULL: text. */
enum exporter_format exporter_format_from_accept(const char *accept);
const char *exporter_content_type(enum exporter_format f);

/* An exporter over ctx (borrowed: it must outlive the exporter), serving at most max_scrapes
 * at once. Loads the topology now. -errno (hw_load's failure, with its path in err). */
int exporter_new(struct hw_ctx *ctx, unsigned max_scrapes, struct exporter **ret,
		 struct hw_error *err);
void exporter_free(struct exporter *e);

/* Reload the topology and the doctor's findings (waits for the scrapes in progress). */
int exporter_refresh(struct exporter *e, struct hw_error *err);

/* One scrape: the whole answer, malloc'd, in *ret (*ret_len bytes). -EBUSY when max_scrapes
 * are in progress already; -ENOMEM. An unreadable counter file never fails it: it is left
 * out and counted in rdmak_exporter_read_errors_total{file}. */
int exporter_scrape(struct exporter *e, enum exporter_format f, char **ret, size_t *ret_len);

/* Add the counter objects of RDMA netlink (rdmak_rdma_counter_*) to every scrape. Tried once:
 * -EPROTONOSUPPORT where the kernel has no RDMA subsystem, and the scrapes then have none of
 * those series (never a failed scrape). */
int exporter_rdma_enable(struct exporter *e);
/* Where the pids of per-process counter objects are looked up (the exporter's own pid
 * namespace's procfs: /proc, or a host /proc under hostPID), so that each gets the pod that owns
 * it (rdmak_rdma_counter_pod_info). -errno when dir cannot be opened. */
int exporter_rdma_procfs(struct exporter *e, const char *dir);

/* How a scrape reads the counter files: through io_uring, a batch of files in one system call
 * (the default, where the kernel offers it: Linux 5.18 and later, refused neither by
 * kernel.io_uring_disabled nor by a seccomp profile), or with an openat, a read and a close each
 * (on false). The values are the same either way. 1: io_uring; 0: off, as asked; -errno: io_uring
 * refused (why), the files are read one at a time. */
int exporter_set_io_uring(struct exporter *e, bool on);

/* Read the devices of pods' network namespaces too (the RDMA subsystem's exclusive mode, where
 * the host's sysfs does not show them): dir is a folder of network namespace files (the
 * runtime's /var/run/netns), each entered at every scrape to mount a sysfs of its own, read and
 * closed; with sysfs_folders, dir's entries are such sysfs trees already (a capture, a test).
 * Their series get the label netns. Checks at once that this process may enter a namespace and
 * mount a sysfs there (-EPERM without CAP_SYS_ADMIN, -ENOSYS before Linux 5.2); -errno when dir
 * cannot be opened. 1: on; 0: on, but the host's RDMA netns mode is not exclusive now (every
 * device is in the host's view: nothing to add until it is). */
int exporter_netns_enable(struct exporter *e, const char *dir, bool sysfs_folders);

/* Which VFs' series a scrape has (docs/exporter.md "Series"). */
enum exporter_vf_series {
	/* PFs, and the VFs pods hold (PodResources, or a pod's network namespace), each with all
	 * its series; the other VFs' counters summed per PF port (rdmak_idle_vfs_*). The default */
	EXPORTER_VF_HELD,
	EXPORTER_VF_ALL, /* every VF's series, as node_exporter exports them */
};
/* "held", "all": 0 and *ret, or -EINVAL. */
int exporter_vf_series_parse(const char *s, enum exporter_vf_series *ret);
void exporter_set_vf_series(struct exporter *e, enum exporter_vf_series s);

/* How many times the topology was loaded (1 after exporter_new). */
unsigned long exporter_loads(struct exporter *e);

/* ---- which pod (pods.c; docs/exporter.md "Which pod") ---------------------------------------- */

#define EXPORTER_PODS_MAX_AGE_MS 5000

struct exporter_pods_config {
	const char *socket; /* the kubelet's pod-resources socket; NULL: its default path */
	/* rdmak plugin's config (shared pools; pool_config_load), or NULL: taken over by
	 * exporter_pods_enable when it succeeds */
	struct pool_config *plugin_config;
	unsigned max_age_ms; /* a scrape calls List when the cached answer is older (0: default) */
	unsigned timeout_ms; /* List's deadline (0: KUBELET_POD_RESOURCES_TIMEOUT_MS) */
};

/* Label the series of devices that pods hold, from the kubelet's PodResources API. -ENAMETOOLONG
 * (the socket's path, said in err), -ENOMEM. Nothing is called before a scrape. */
int exporter_pods_enable(struct exporter *e, const struct exporter_pods_config *c, char *err,
			 size_t errlen);
/* The attribution now: 0 not enabled or not tried yet, 1 the last List answered, -errno its
 * failure (the reason in why); *failures counts the failed calls (for logging a change once). */
int exporter_pods_status(struct exporter *e, unsigned long *failures, char *why, size_t len);

#endif
