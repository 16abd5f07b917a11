/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's inside, shared by topo.c (the cached topology) and scrape.c (the answer). */
#ifndef RDMAK_EXPORTER_INTERNAL_H
#define RDMAK_EXPORTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <string.h>

#include "diag/diag.h"
#include "exporter/exporter.h"
#include "hw/hw.h"
#include "kubelet/cgroup.h"
#include "nl/nl.h"

/* The folders of a port a counter can live in. */
enum exp_dir { EXP_DIR_NONE = 0, EXP_DIR_COUNTERS, EXP_DIR_COUNTERS_EXT, EXP_DIR_HW, EXP_DIR_N };

enum exp_type { EXP_GAUGE, EXP_COUNTER };

/* A metric family whose samples are one file of each port (or device) that has it. */
struct exp_family {
	const char *name; /* the text format's name: counters end in _total */
	const char *help;
	const char *file; /* the kernel's file name */
	enum exp_dir dir;
	unsigned scale; /* 4 for the data counters, which count 4-byte words */
};

/* node_exporter's infiniband collector: the families read from counters/ and counters_ext/. */
extern const struct exp_family exporter_node_families[];
extern const size_t exporter_n_node_families;

/* Where one family's file is for one port or device; errors counts the reads that failed. */
struct exp_slot {
	enum exp_dir dir; /* EXP_DIR_NONE: this port has no such file */
	atomic_uint_fast64_t errors;
};

struct exp_port {
	char dev[HW_NAME_MAX];
	size_t dev_idx; /* its device in exp_topo.devs */
	unsigned num;
	char num_s[12];
	int fd[EXP_DIR_N];		   /* O_PATH folders: [EXP_DIR_NONE] is the port's own */
	bool fds_held;			   /* fd[] is open; else a scrape opens the folders */
	unsigned char dirs;		   /* the folders there are, 1 << enum exp_dir */
	struct exp_slot *slots;		   /* by family: topo->families */
	atomic_uint_fast64_t state_errors; /* state, phys_state, rate unreadable */
	char link_layer[16], netdev[HW_IFNAME_MAX], gid[40], port_guid[20];
	const char *netns; /* the pod's namespace it is in (exp_topo.ns_names); NULL: the host's */
};

struct exp_device {
	char name[HW_NAME_MAX];
	char board_id[64], fw_ver[64], hca_type[32];
	char node_guid[20];   /* as sysfs node_guid reads: the kernel's device of this name is it */
	char bdf[HW_BDF_MAX]; /* "" for a virtual device */
	bool pcie_link;	      /* a PF: its PCIe link attributes are read (VFs have none) */
	int hw_fd;	      /* O_PATH hw_counters/ of the device; -1 when none or not held */
	bool hw_held;	      /* hw_fd is open; else a scrape opens it */
	bool has_hw;	      /* the device has a hw_counters folder */
	struct exp_slot *slots; /* by family */
	const char *netns;	/* as exp_port's */
	/* a VF whose PF has an RDMA device in the host's view: that device's name, and its index in
	 * exp_topo.devs (its idle VFs are summed there); "" and SIZE_MAX otherwise */
	char pf_name[HW_NAME_MAX];
	size_t pf;
};

struct exp_finding {
	char *check, *object;	 /* object "" for the node as a whole */
	enum diag_status status; /* the worst of the check's findings about object */
};

/* A device, port or folder the topology's load could not read (HW_LOAD_PARTIAL, or a counter
 * folder that would not open or list): its path under the sysfs root, and the namespace whose
 * view it is in (NULL: the host's). */
struct exp_skipped {
	char *path;
	const char *netns;
};

/* --vf-series held: what the idle VFs did, summed per PF port (docs/exporter.md "Series"). A row
 * (a port, or n_ports + a device) of a VF with a PF has a key, the PF's port (port 0: the
 * device's own hw_counters); per row and family the last value seen, per key and family the
 * sum. Under exporter.idle_lock. */
struct exp_idle_key {
	size_t pf;     /* in exp_topo.devs */
	unsigned port; /* 0: the device's hw_counters */
	char port_s[12];
};
struct exp_idle {
	size_t *key; /* per row: its key; SIZE_MAX none (not a VF with a PF) */
	struct exp_idle_key *keys;
	size_t n_keys;
	uint64_t *last;		 /* per row x family */
	unsigned char *seen;	 /* per row x family: last holds a value */
	unsigned char *was_idle; /* per row: idle when last seen */
	uint64_t *sum;		 /* per key x family */
	unsigned char *has;	 /* per key x family: one of its rows has the file */
	char **names;		 /* per family: its sum's metric name */
};

struct exp_topo {
	char **devset; /* class/infiniband's names, sorted: the set whose change reloads */
	size_t n_devset;
	struct exp_family *
		families; /* exporter_node_families, then the port hw_counters, then the device's */
	char **owned;	  /* the names and files of the dynamic families */
	size_t n_families, n_port_families, n_owned;
	struct exp_device *devs;
	size_t n_devs;
	/* the folder descriptors the topology may hold, and holds: rows past them are opened by
	 * each scrape, as those of pods' namespaces are */
	size_t fd_budget, n_fds;
	struct exp_port *ports;
	size_t n_ports;
	struct exp_finding *findings;
	size_t n_findings;
	struct exp_skipped *skipped; /* what the load left out, unreadable */
	size_t n_skipped;
	/* the devices in pods' namespaces (netns.c): "<namespace>/<device>", sorted as listed; the
	 * namespaces' names. Their rows' folder fds are -1 here: a scrape opens them in its own
	 * views, so that no namespace is held between scrapes. */
	char **ns_devset, **ns_names;
	size_t n_ns_devset, n_ns;
	struct exp_idle idle;
	/* rdma.c, read with the topology where RDMA netlink is on: the host's kernel devices sorted
	 * by name, and per device of devs its kernel index (UINT32_MAX: not this kernel's, by name
	 * and node GUID). kdevs_read false: not read (a scrape asks the kernel itself). */
	struct nl_rdma_dev *kdevs;
	size_t n_kdevs;
	uint32_t *kidx;
	bool kdevs_read;
};

/* netns.c: one pod namespace's sysfs as the namespace sees it (nl_netns_sysfs, or a folder of
 * --netns-sysfs), when it holds RDMA devices. */
struct exp_view {
	char *name;	    /* the namespace file's name under the folder */
	int netns_fd;	    /* the namespace, for RDMA netlink there; -1: a --netns-sysfs folder */
	struct hw_ctx *ctx; /* over its sysfs */
	char **devset;	    /* its class/infiniband, sorted */
	size_t n_devset;
};
struct exp_views {
	struct exp_view *v;
	size_t n, scanned; /* scanned: the namespaces looked at (with devices or not) */
};
/* The namespaces that hold RDMA devices now: none unless enabled, nor where the host's RDMA
 * netns mode is not exclusive. A namespace that cannot be entered is counted in
 * e->netns_errors and left out (gone meanwhile: not counted). -ENOMEM only. */
int exporter_views_open(struct exporter *e, struct exp_views *ret);
void exporter_views_close(struct exp_views *v);
const struct exp_view *exporter_views_find(const struct exp_views *v, const char *name);
/* Whether views' devices are those of topology t. */
bool exporter_views_match(const struct exp_views *v, const struct exp_topo *t);

struct exporter {
	struct hw_ctx *ctx;
	unsigned max_scrapes;
	atomic_uint inflight;
	pthread_rwlock_t lock; /* topo: scrapes read, reloads write */
	struct exp_topo *topo;
	atomic_bool stale; /* a port's folder vanished: reload at the next scrape */
	atomic_ulong loads, load_errors;
	atomic_size_t last_len;	  /* the previous answer's length: the next one's first buffer */
	atomic_bool io_uring;	  /* read the counter files through io_uring (reader.c) */
	struct exp_pods *pods;	  /* NULL: no pod attribution */
	atomic_bool rdma_netlink; /* exporter_rdma_enable() found RDMA netlink (rdma.c) */
	bool rdma_procfs;	  /* rdma_procfs_fd is open (exporter_rdma_procfs) */
	int rdma_procfs_fd;
	atomic_ulong rdma_errors;
	/* an idle RDMA netlink socket of the host's namespace: a scrape takes it (or opens its
	 * own while another holds it) and gives it back when its requests left it clean */
	struct nl_rdma *_Atomic rdma_sock;
	enum exporter_vf_series vf_series;
	pthread_mutex_t idle_lock; /* the topology's idle sums (exp_idle) */
	bool idle_started;	   /* a scrape took the idle VFs' values (under idle_lock) */
	char *netns_dir;	   /* exporter_netns_enable(); NULL: off */
	bool netns_sysfs;	   /* netns_dir's entries are sysfs folders, not namespaces */
	atomic_ulong netns_errors, netns_scanned;
};

/* reader.c: small files read in batches, through io_uring where the kernel offers it, else one
 * openat, read and close each (the same results). */
#define EXPORTER_READER_BATCH 128
struct exporter_file {
	int dirfd;	  /* in: the folder (O_PATH is enough); < 0: -EBADF */
	const char *name; /* in: one path component, never followed if a link */
	ssize_t n;	  /* out: the bytes read (trailing newlines and spaces cut), or -errno */
	char buf[64];	  /* out: NUL-terminated */
};
struct exporter_reader;
/* A reader, through io_uring when ring is true and the kernel offers it (5.18 and later, not
 * refused). *ring_status (may be NULL): 1 through io_uring, 0 one file at a time as asked, -errno
 * io_uring refused (why), one file at a time. NULL: no memory. */
struct exporter_reader *exporter_reader_new(bool ring, int *ring_status);
void exporter_reader_free(struct exporter_reader *r);
/* The reader's EXPORTER_READER_BATCH files: fill dirfd and name of the first n, then read. */
struct exporter_file *exporter_reader_files(struct exporter_reader *r);
void exporter_reader_read(struct exporter_reader *r, size_t n);
/* The files a reader read, through the ring and one at a time (where the ring is refused or off,
 * where the kernel would have handed the file to a worker thread, and every file after a batch
 * where most did). */
struct exporter_reader_stats {
	size_t ring, plain;
};
void exporter_reader_stats(const struct exporter_reader *r, struct exporter_reader_stats *ret);

/* A counter file's text, its trailing newline gone: 1 a value (decimal digits, one '+' before
 * them allowed as strtoull allows it, nothing after), 0 "N/A..." (a port without a performance
 * management agent: no value and no error), -EINVAL not a number, -ERANGE past 2^64-1. */
int exporter_counter_parse(const char *s, uint64_t *ret);

/* The host's devices (ctx) and those of views (may be NULL). */
int exporter_topo_load(struct hw_ctx *ctx, const struct exp_views *views, struct exp_topo **ret,
		       struct hw_error *err);
/* The idle sums of topology old carried into t, which replaces it (by device, port and family
 * names: a reload keeps every sum going). */
void exporter_idle_carry(const struct exp_topo *old, struct exp_topo *t);
void exporter_topo_free(struct exp_topo *t);
/* A row's folder, O_PATH: port d's (port >= 1), or the device's hw_counters (port 0). -errno. */
int exporter_row_open(struct hw_ctx *ctx, const char *dev, unsigned port, enum exp_dir d);
/* class/infiniband's names now, sorted (an absent folder: none). -errno. */
int exporter_devset_read(struct hw_ctx *ctx, char ***ret, size_t *ret_n);
/* The same of the sysfs whose root is the fd sysfs_fd (O_PATH is enough). */
int exporter_devset_read_at(int sysfs_fd, char ***ret, size_t *ret_n);
bool exporter_devset_equal(char **a, size_t na, char **b, size_t nb);
void exporter_devset_free(char **v, size_t n);

/* pods.c: which pod holds which device. Its labels are OpenTelemetry's names for Kubernetes'
 * attributes (k8s.namespace.name, k8s.pod.name, k8s.container.name, as its Prometheus exporter
 * writes them): namespace, pod and container are the target labels the Prometheus Operator
 * gives every series for the exporter's own pod, and through a PodMonitor ours came out as
 * exported_namespace, exported_pod, exported_container (docs/exporter.md "Which pod"). */
#define EXPORTER_LABEL_NAMESPACE "k8s_namespace_name"
#define EXPORTER_LABEL_POD	 "k8s_pod_name"
#define EXPORTER_LABEL_CONTAINER "k8s_container_name"
struct exp_pods;
struct exp_podmap;
void exporter_pods_free(struct exp_pods *p);
/* Call List if the cached answer is too old (and no other scrape is calling it); before the
 * topology lock. */
void exporter_pods_refresh(struct exporter *e);
/* The map for topology t (held under e->lock), a reference; NULL: no attribution now. */
struct exp_podmap *exporter_podmap_get(struct exporter *e, const struct exp_topo *t);
void exporter_podmap_unref(struct exporter *e, struct exp_podmap *m);
/* Append the pod's labels (above) to the label list l[0..n) when one container holds dev alone;
 * l must have room for 7 more. Returns the new n; l[n] is NULL. m may be NULL. */
size_t exporter_podmap_labels(const struct exp_podmap *m, const char *dev, const char **l,
			      size_t n);
/* Whether a container holds dev (alone or shared). m may be NULL: no. */
bool exporter_podmap_held(const struct exp_podmap *m, const char *dev);
/* The i-th holder of dev as rdmak_device_pod_info's labels in l[0..11) (NULL-ended); returns how
 * many holders dev has (0: none, l untouched). */
size_t exporter_podmap_holders(const struct exp_podmap *m, const char *dev, size_t i,
			       const char **l);
/* text.c: a scrape's answer being written, in one malloc'd buffer. A growth that fails sets oom
 * and drops what follows (the scrape then answers -ENOMEM), so that writers never check. */
struct exporter_buf {
	char *p;
	size_t len, cap;
	bool oom;
};
/* An empty buffer of cap bytes (at least 4096). -ENOMEM (oom set). */
int exporter_buf_init(struct exporter_buf *b, size_t cap);
void exporter_buf_free(struct exporter_buf *b);
/* Room for n more bytes: false (oom set) when there is no memory for them. */
bool exporter_buf_grow(struct exporter_buf *b, size_t n);

static inline void exporter_buf_put(struct exporter_buf *b, const char *s, size_t n)
{
	if (b->cap - b->len < n && !exporter_buf_grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void exporter_buf_puts(struct exporter_buf *b, const char *s)
{
	exporter_buf_put(b, s, strlen(s));
}

static inline void exporter_buf_putc(struct exporter_buf *b, char c)
{
	exporter_buf_put(b, &c, 1);
}

/* v in decimal, exactly (a 64-bit counter is no float) */
void exporter_buf_u64(struct exporter_buf *b, uint64_t v);
/* {k="v",...} for labels, a NULL-ended list of key, value pairs (nothing for an empty list), the
 * values escaped as both formats want (backslash, double quote, newline). */
void exporter_buf_labels(struct exporter_buf *b, const char *const *labels);

/* A family's # HELP and # TYPE lines (OpenMetrics names a counter's family without _total). */
void exporter_out_family(struct exporter_buf *b, enum exporter_format fmt, const char *name,
			 enum exp_type type, const char *help);
/* name{labels} v */
void exporter_out_sample(struct exporter_buf *b, const char *name, const char *const *labels,
			 uint64_t v);
/* The same with the label set already rendered by exporter_buf_labels (labels_len bytes, "" for
 * none): the many samples of one port or device share it. */
void exporter_out_sample_pre(struct exporter_buf *b, const char *name, size_t name_len,
			     const char *labels, size_t labels_len, uint64_t v);

/* rdma.c: the counter objects of RDMA netlink, per device that has any. */
/* The pod a per-process counter object counts for (its pid's cgroup, kubelet/cgroup.h). */
struct exp_rdma_owner {
	char pod_uid[KUBELET_UID_LEN], container_id[KUBELET_CONTAINER_LEN]; /* "": none seen */
};
struct exp_rdma_dev {
	char name[NL_RDMA_NAMSIZ];
	const char *netns; /* the pod namespace it is in (a view's name); NULL: the host's */
	struct nl_rdma_counter *v;
	size_t n;
	struct exp_rdma_owner *owner; /* by counter, as v; NULL: none looked up */
};
/* A scrape's view of one namespace's RDMA devices: for the host's, the topology's list until the
 * kernel says it is out of date; then (or where the topology has none, or in a pod's
 * namespace) the list this scrape asked for, once. A scrape's host view is opened by its first
 * use (exporter_rdma_port_hw or _scrape) and closed with exporter_rdma_view_close(); zeroed
 * before the first. */
struct exp_kview {
	struct exporter *e;
	const struct exp_topo *t; /* NULL: a pod's namespace */
	int netns_fd;
	struct nl_rdma *r;
	const struct nl_rdma_dev *v;
	size_t n;
	const uint32_t *idx; /* by t->devs */
	struct nl_rdma_dev *own;
	uint32_t *own_idx;
	bool asked;
};
void exporter_rdma_view_close(struct exp_kview *k);
/* Each counter's owner, for the counters bound per process: <procfs>/<pid>/cgroup read (the
 * pid as the exporter's pid namespace sees it). No procfs set (exporter_rdma_procfs): none.
 * -ENOMEM; a pid gone or unreadable leaves that owner "". */
int exporter_rdma_owners(struct exporter *e, struct exp_rdma_dev *d, size_t n);
/* Every device's counter objects now: host's view for the host's devices (t's list), one in each pod
 * namespace of views (may be NULL) that holds devices. -errno when netlink fails before any
 * device was read; a device or namespace that fails is counted in rdma_errors and left out. */
int exporter_rdma_read(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
		       const struct exp_views *views, struct exp_rdma_dev **ret, size_t *ret_n);
void exporter_rdma_devs_free(struct exp_rdma_dev *d, size_t n);
/* The rdmak_rdma_counter_* families of d (docs/exporter.md). -ENOMEM. */
int exporter_rdma_write(struct exporter_buf *b, enum exporter_format fmt,
			const struct exp_rdma_dev *d, size_t n);
/* The hw_counters of the host's ports through RDMA netlink, one request per port (what `rdma
 * statistic show link` reads: the values of the port's hw_counters files), for each port whose
 * device the kernel names with the topology's node GUID. A port answered has v[row * stride + f]
 * and ok[...] set for each of its hw_counters families f that the answer names (the others are
 * left to the files). Returns how many ports answered; -errno when RDMA netlink could not be
 * asked (the files are read). */
int exporter_rdma_port_hw(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
			  uint64_t *v, unsigned char *ok, size_t stride);
/* The host's kernel devices into t (kdevs, kidx), when RDMA netlink is on: at each load of the
 * topology, before it is published. A failure leaves kdevs_read false (the scrapes ask). */
void exporter_rdma_resolve(struct exporter *e, struct exp_topo *t);
/* The idle socket closed (exporter_free). */
void exporter_rdma_close(struct exporter *e);
/* Both, into a scrape, when exporter_rdma_enable() found RDMA netlink; else nothing. */
void exporter_rdma_scrape(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
			  const struct exp_views *views, struct exporter_buf *b,
			  enum exporter_format fmt);

/* netns="<the namespace file's name>" on the series of a device in a pod's namespace: appended
 * to the label list l[0..n) (room for 3 more), the new n returned; l[n] is NULL. */
static inline size_t exporter_labels_netns(const char *netns, const char **l, size_t n)
{
	if (netns) {
		l[n++] = "netns";
		l[n++] = netns;
	}
	l[n] = NULL;
	return n;
}

#endif
